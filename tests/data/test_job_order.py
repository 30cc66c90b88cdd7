"""The keyed job order favours no small workplace ids (docs/privacy.md#several-jobs-per-worker).

Black-box through the loader: workers hold three jobs at random workplaces and the release
keeps one (k = 1, or the primary job when all three earn the same). Under the documented
rule — a uniformly random order per worker from a key drawn independently of the data —
the kept job's rank among the worker's workplace ids is uniform on {0, 1, 2}. A Pearson
chi-square test (2 degrees of freedom, critical value 13.82 at the 0.001 level) accepts
that, and rejects a selector whose preference for the smallest id is 30% above uniform
(the power check, on a draw from that biased law of the same size). The rule this one
replaced (smallest workplace id first) gives rank 0 every time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from eree.data.config import JobTablesConfig
from eree.data.job_tables import load_job_tables
from eree.mechanisms.noise import SecureNoise, SeededNoise

N_WORKERS = 2000
JOBS_EACH = 3
#: chi-square with 2 degrees of freedom, upper 0.001 quantile
CRITICAL = 13.816


def _files(root: Path, seed: int = 3, n_workers: int = N_WORKERS) -> JobTablesConfig:
    """Each worker holds 3 jobs at workplaces of its own (random ids, so a kept workplace
    id names its job), all paying the same."""
    rng = np.random.default_rng(seed)
    wps = [f"w{i:05d}" for i in rng.permutation(n_workers * JOBS_EACH)]
    workers = [f"p{p:05d}" for p in range(n_workers) for _ in range(JOBS_EACH)]
    job = pl.DataFrame({"worker_id": workers, "workplace_id": wps, "pay": 1000.0})
    pl.DataFrame({"workplace_id": sorted(wps), "block": "b"}).write_csv(root / "wp.csv")
    pl.DataFrame({"worker_id": job["worker_id"].unique(), "sex": "M"}).write_csv(root / "wk.csv")
    job.write_csv(root / "job.csv")
    return JobTablesConfig(
        workplace=root / "wp.csv", worker=root / "wk.csv", job=root / "job.csv",
        workplace_attributes=("block",), worker_attributes=("sex",),
        domains={"sex": ("M", "F")},
    )  # fmt: skip


def _chi2(counts: np.ndarray) -> float:
    expected = counts.sum() / counts.size
    return float(((counts - expected) ** 2 / expected).sum())


def _kept_ranks(cfg: JobTablesConfig) -> np.ndarray:
    """How often the kept job is the worker's 1st, 2nd or 3rd smallest workplace id."""
    kept = load_job_tables(cfg).jobs.select(pl.col("workplace_id").cast(pl.Utf8))
    job = pl.read_csv(cfg.job)  # type: ignore[arg-type]
    ranked = job.with_columns(
        (pl.col("workplace_id").rank("ordinal").over("worker_id") - 1).alias("r")
    )
    mine = kept.join(ranked, on="workplace_id")
    assert mine.height == N_WORKERS and mine["worker_id"].n_unique() == N_WORKERS
    return np.bincount(mine.get_column("r").to_numpy(), minlength=JOBS_EACH)


@pytest.mark.parametrize(
    "kw", [{"max_jobs_per_worker": 1}, {"job_type": "JT01", "job_earnings": "pay"}]
)
@pytest.mark.parametrize("source", [SeededNoise(5), SeededNoise(6), SecureNoise()])
def test_kept_jobs_are_not_biased_toward_small_workplace_ids(
    tmp_path: Path, kw: dict, source: object
) -> None:
    from dataclasses import replace

    cfg = replace(_files(tmp_path), order_key=source.order_key(), **kw)  # type: ignore[attr-defined]
    counts = _kept_ranks(cfg)
    assert _chi2(counts) < CRITICAL, counts
    # power: a selector preferring the smallest id 30% above uniform is rejected
    p0 = 1.3 / JOBS_EACH
    biased = np.random.default_rng(1).multinomial(
        N_WORKERS, [p0, *([(1 - p0) / (JOBS_EACH - 1)] * (JOBS_EACH - 1))]
    )
    assert _chi2(biased) > CRITICAL, biased


def test_the_seeded_key_is_the_seeds_and_the_secure_key_is_fresh() -> None:
    assert SeededNoise(5).order_key() == SeededNoise(5).order_key()
    assert SeededNoise(5).order_key() != SeededNoise(6).order_key()
    assert SecureNoise().order_key() != SecureNoise().order_key()
    assert len(SecureNoise().order_key()) == 32
