"""Polars and Spark keep the same jobs under the same order key; Spark caches nothing.

docs/privacy.md#several-jobs-per-worker: the keyed order is one SHA-256 word per job, which
both engines compute (Polars with :mod:`hashlib`, Spark with ``sha2``); every job type and a
k > 1 are compared on workers holding three jobs each. After the selection no Spark frame
stays persisted (the window's rows used to stay cached for the life of the session).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

pytest.importorskip("pyspark")

from eree.data.job_tables import load_job_tables
from eree.engine.spark.data import SparkJobTables
from eree.mechanisms.noise import SeededNoise
from tests.data.test_job_order import _files


def _persisted(spark) -> int:
    return int(spark.sparkContext._jsc.getPersistentRDDs().size())


@pytest.mark.parametrize(
    "kw",
    [
        {"job_type": "JT03", "job_earnings": "pay"},
        pytest.param({"max_jobs_per_worker": 2}, marks=pytest.mark.slow),
        pytest.param({"job_type": "JT01", "job_earnings": "pay"}, marks=pytest.mark.slow),
        pytest.param({"job_type": "JT02", "max_jobs_per_worker": 1}, marks=pytest.mark.slow),
    ],
)
def test_polars_and_spark_keep_the_same_jobs(spark, tmp_path: Path, kw: dict) -> None:
    base = _files(tmp_path, n_workers=300)
    # ownership: a third of the workplaces public, so JT02 and JT03 drop some
    wp = pl.read_csv(base.workplace)  # type: ignore[arg-type]
    wp = wp.with_columns(
        pl.when(pl.int_range(pl.len()) % 3 == 0).then(pl.lit("A00")).otherwise(pl.lit("A05"))
        .alias("ownership")
    )  # fmt: skip
    wp.write_csv(base.workplace)  # type: ignore[arg-type]
    # earnings with ties: 1000 or 2000, so both the earnings and the key decide
    job = pl.read_csv(base.job)  # type: ignore[arg-type]
    job = job.with_columns((1000.0 * (1 + pl.int_range(pl.len()) % 2)).alias("pay"))
    job.write_csv(base.job)  # type: ignore[arg-type]
    cfg = replace(base, workplace_attributes=("block", "ownership"),
                  order_key=SeededNoise(9).order_key(), **kw)  # fmt: skip
    want = sorted(load_job_tables(cfg).jobs["workplace_id"].cast(pl.Utf8).to_list())
    before = _persisted(spark)
    data = SparkJobTables.from_config(spark, cfg)
    got = sorted(r[0] for r in data.jobs.select("workplace_id").collect())
    assert got == want
    assert 0 < len(want) < job.height  # the rule dropped some jobs and kept some
    sel = load_job_tables(cfg).selection
    assert data.selection == sel
    assert _persisted(spark) == before  # nothing left cached by the selection
    # another key keeps other jobs (the key is used), identically on both engines
    other = replace(cfg, order_key=SeededNoise(10).order_key())
    want2 = sorted(load_job_tables(other).jobs["workplace_id"].cast(pl.Utf8).to_list())
    got2 = sorted(r[0] for r in SparkJobTables.from_config(spark, other).jobs.select("workplace_id")
                  .collect())  # fmt: skip
    assert got2 == want2 != want
