"""Spark results reach the driver whole, or the release fails (docs/spark-cluster.md).

:func:`eree.engine.spark.io.to_polars` brings results through Spark's result channel a
group of partitions at a time and checks every group, and the total, against Spark's
own count. Through the release path: groups of a few rows give the Polars engine's
tables; a transfer that loses a row fails the release and writes nothing.
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from polars.testing import assert_frame_equal

pytest.importorskip("pyspark")

from eree.engine.spark import io
from eree.engine.spark.io import partition_groups
from eree.errors import EngineError
from tests.release.conftest import SPEC, write_small_job_tables


def _release(tmp_path, name: str, kind: str):
    import tomllib

    from eree.mechanisms.noise import SeededNoise
    from eree.release.protect import protect
    from eree.release.spec import parse_spec

    raw = tomllib.loads(SPEC)
    raw["engine"] = {"kind": kind}
    return protect(parse_spec(raw, tmp_path), tmp_path / name, SeededNoise(7))


def test_partition_groups_cover_every_partition_once_within_the_limit():
    counts = {0: 3, 2: 4, 3: 1, 5: 9, 6: 2, 9: 2}
    groups = partition_groups(counts, 5)
    # consecutive, disjoint, in order; a partition over the limit alone
    assert groups == [(0, 0, 3), (2, 3, 5), (5, 5, 9), (6, 9, 4)]
    assert sum(n for *_, n in groups) == sum(counts.values())
    assert partition_groups({}, 5) == []


def test_results_in_small_groups_equal_polars_and_the_manifest_names_the_engine(
    spark, tmp_path, monkeypatch
):
    write_small_job_tables(tmp_path / "data")
    expected = _release(tmp_path, "p", "polars")
    monkeypatch.setattr(io, "CHUNK_ROWS", 3)  # many Spark jobs per result
    got = _release(tmp_path, "s", "spark")
    for a, b in zip(got.tables, expected.tables, strict=True):
        assert_frame_equal(a.table, b.table)
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert manifest["engine"] == {"kind": "spark", "master": spark.sparkContext.master,
                                  "spark": spark.version}  # fmt: skip
    assert json.loads((tmp_path / "p" / "manifest.json").read_text())["engine"] == {
        "kind": "polars", "polars": pl.__version__
    }  # fmt: skip


def test_a_result_that_loses_a_row_on_the_way_fails_the_release(spark, tmp_path, monkeypatch):
    write_small_job_tables(tmp_path / "data")
    frame_type = type(spark.range(1))
    to_arrow = frame_type.toArrow

    def lossy(self):  # a transfer that drops the last row of every non-empty batch
        table = to_arrow(self)
        return table.slice(0, max(0, table.num_rows - 1))

    monkeypatch.setattr(frame_type, "toArrow", lossy)
    with pytest.raises(EngineError, match="did not reach the driver whole"):
        _release(tmp_path, "s", "spark")
    assert not (tmp_path / "s").exists()
