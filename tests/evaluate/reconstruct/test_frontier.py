"""Side by side: one job dataset, each method, the same attacker (through protect for the
noisy methods)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from eree.data.schema import WORKER_DOMAINS
from eree.evaluate.reconstruct import ReconstructConfig, from_frame, interval_audit, job_truth
from eree.evaluate.reconstruct.frontier import (
    ATTRIBUTES,
    exact_tables,
    frontier_jobs,
    plot_frontier,
    shuffled,
    suppress_small,
)
from eree.synth.lodes import synth_parametric


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("jobs")
    s = synth_parametric(3, 120, n_counties=1, tracts_per_county=2, blocks_per_tract=6)
    s.workplace.write_parquet(d / "workplace.parquet")
    s.worker.write_parquet(d / "worker.parquet")
    s.job.write_parquet(d / "job.parquet")
    return d


def test_exact_and_suppressed_releases_certain_records_are_right(jobs: Path, tmp_path: Path):
    small = ReconstructConfig(unit="block", max_candidates=2000)  # skip large blocks: fast
    res = frontier_jobs(jobs, tmp_path, methods=("exact", "suppressed"), cfg=small)
    r = {row["method"]: row for row in res.to_dicts()}
    assert r["exact"]["mean_abs_error"] == 0.0 and r["exact"]["share_withheld"] == 0.0
    # hard constraints that the truth satisfies: what every solution shares is true
    assert r["exact"]["share_certain_correct"] == 1.0
    assert r["suppressed"]["share_certain_correct"] == 1.0
    assert r["suppressed"]["share_withheld"] > 0 and r["suppressed"]["mean_abs_error"] > 0
    png = plot_frontier(res, tmp_path / "f.png")
    assert png.stat().st_size > 1000


def test_shuffling_keeps_block_sizes_and_composition(jobs: Path) -> None:
    t = job_truth(jobs, "block", ATTRIBUTES)
    s = shuffled(t, 1)
    size = lambda f: f.group_by("unit").agg(pl.col("true").sum()).sort("unit")  # noqa: E731
    assert size(s).equals(size(t))
    for a in ATTRIBUTES:
        comp = lambda f, a=a: f.group_by(a).agg(pl.col("true").sum()).sort(a)  # noqa: E731
        assert comp(s).equals(comp(t))
    assert not s.sort(["unit", *ATTRIBUTES]).equals(t.sort(["unit", *ATTRIBUTES]))


def test_small_cell_suppression_protects_every_withheld_cell_over_every_relation(
    jobs: Path,
) -> None:
    """Every cell with 1 or 2 jobs is withheld, and the LP attacker over all the linked
    families (derived here from the keys, not by the suppression package) can narrow none
    of them below ±1 job (the protection: [a − min(1, a), a + 1] inside its interval)."""
    truth = job_truth(jobs, "block", ATTRIBUTES)
    domains = {a: WORKER_DOMAINS[a] for a in ATTRIBUTES if a in WORKER_DOMAINS}
    domains["naics_sector"] = sorted(
        pl.read_parquet(jobs / "workplace.parquet").get_column("naics_sector").unique()
    )
    exact = exact_tables(truth, domains)
    out = suppress_small(truth, exact)
    keys = ["table", "block", *ATTRIBUTES]
    j = exact.drop("status").join(out.select(*keys, "status"), on=keys, nulls_equal=True)
    assert j.height == exact.height
    a = j.get_column("value").to_numpy()
    withheld = j.get_column("status").to_numpy() == "suppressed"
    primary = (a > 0) & (a < 3)
    assert primary.sum() > 30 and np.all(withheld[primary])
    assert withheld.sum() > primary.sum()  # complements
    published = from_frame(
        j.with_columns(
            pl.when(pl.Series(withheld)).then(None).otherwise(pl.col("value")).alias("value")
        )
    )
    ia = interval_audit(published)
    assert ia.pinned.sum() == 0
    p = np.flatnonzero(primary)
    assert np.all(ia.lower[p] <= a[p] - np.minimum(1.0, a[p]))
    assert np.all(ia.upper[p] >= a[p] + 1.0)


@pytest.mark.slow
def test_noisy_releases_through_protect(jobs: Path, tmp_path: Path) -> None:
    res = frontier_jobs(
        jobs, tmp_path, epsilons=(0.5, 4.0), methods=("baseline", "noise_infusion", "er_ee")
    )
    r = res.to_dicts()
    assert [x["method"] for x in r] == ["baseline", "noise_infusion", "er_ee", "er_ee"]
    err = [x["mean_abs_error"] for x in r]
    assert err[0] > 0 and err[2] > err[3] > 0  # more budget, less error
    assert np.isfinite([x["share_rebuilt_exactly"] for x in r]).all()
