"""Side by side: one job dataset, each method, the same attacker (through protect for the
noisy methods)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from eree.evaluate.reconstruct import ReconstructConfig, from_frame, job_truth
from eree.evaluate.reconstruct.frontier import (
    ATTRIBUTES,
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


def test_small_cell_suppression_leaves_no_lone_withheld_cell() -> None:
    cells = pl.DataFrame(
        {
            "table": ["wac_c000", "wac_cs", "wac_cs", "wac_ca", "wac_ca", "wac_ca"],
            "block": ["b"] * 6,
            "sex": [None, "F", "M", None, None, None],
            "age": [None, None, None, "A1", "A2", "A3"],
            "status": ["exact"] * 6,
            "value": [9.0, 2.0, 7.0, 1.0, 0.0, 8.0],
        }
    )
    out = suppress_small(cells)
    sup = dict(
        zip(
            zip(out["table"], out["sex"], out["age"], strict=True),
            out["status"] == "suppressed",
            strict=True,
        )
    )
    assert sup[("wac_cs", "F", None)] and sup[("wac_cs", "M", None)]  # complement
    assert sup[("wac_ca", None, "A1")] and sup[("wac_ca", None, "A3")]
    assert not sup[("wac_ca", None, "A2")] and not sup[("wac_c000", None, None)]
    assert from_frame(out).status_counts() == {"exact": 2, "suppressed": 4}


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
