"""The Haney et al. §10 experiments on a tiny grid and parametric data."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from eree.engine.polars.engine import PolarsEngine
from eree.errors import SpecError
from eree.evaluate.datasets import load_dataset
from eree.evaluate.haney import (
    CSV_COLUMNS,
    EXPERIMENTS,
    HaneyGrid,
    Point,
    count_points,
    omission_reason,
    per_cell_epsilon,
    run_haney,
)
from eree.evaluate.report import reading, value, write_outputs
from tests.stats import assert_detects, assert_mean, mean_matches

GRID = HaneyGrid(epsilons=(0.25, 1.0, 4.0), alphas=(0.01, 0.1, 0.2), thetas=(2, 50), trials=4)


@pytest.fixture(scope="module")
def ds():
    return load_dataset(seed=2, jobs=20_000)


@pytest.fixture(scope="module")
def all_result(ds):
    return run_haney("haney-all", ds, grid=GRID, seed=7)


def test_tidy_csv_and_experiments(all_result, tmp_path):
    r = all_result.results
    assert tuple(r.columns) == CSV_COLUMNS
    assert set(r["experiment"]) == set(EXPERIMENTS) - {"haney-all"}
    assert r["mu"].null_count() == r.height
    assert (r["trials"] == 4).all()
    metrics = set(r["metric"])
    assert {"l1", "l1_ratio", "spearman_sdl", "spearman_truth", "cells"} <= metrics
    paths = write_outputs(all_result, tmp_path)
    df = pl.read_csv(paths["results"])
    assert tuple(df.columns) == CSV_COLUMNS and df.height == r.height
    html = paths["report"].read_text()
    assert html.count("<img") >= 5 and "Figure 4" in html
    assert (tmp_path / "figures" / "haney-workload1.png").stat().st_size > 10_000
    assert all_result.meta["seed"] == 7


def test_omitted_points_follow_the_paper(all_result):
    om = all_result.omitted
    # Log-Laplace lambda >= 1 (alpha=0.2, eps=0.25: lambda = 1.46)
    assert (
        om.filter(
            pl.col("experiment") == "haney-workload1",
            pl.col("mechanism") == "log_laplace",
            pl.col("alpha") == 0.2,
            pl.col("epsilon") == 0.25,
        ).height
        == 1
    )
    r = all_result.results
    for row in om.iter_rows(named=True):
        hit = r.filter(
            pl.col("experiment") == row["experiment"],
            pl.col("mechanism") == row["mechanism"],
            pl.col("alpha") == row["alpha"],
            pl.col("epsilon") == row["epsilon"],
        )
        assert hit.is_empty()
    # every (mechanism, alpha, eps) is either plotted or omitted, per experiment
    for exp in ("haney-workload1", "haney-workload3"):
        d = 8 if exp == "haney-workload3" else 1
        for mech in ("log_laplace", "smooth_gamma", "smooth_laplace"):
            for a in GRID.alphas:
                for e in GRID.epsilons:
                    p = Point(mech, e, a)
                    reason = omission_reason(p, d, d > 1, 0.05)
                    plotted = not r.filter(
                        pl.col("experiment") == exp,
                        pl.col("mechanism") == mech,
                        pl.col("alpha") == a,
                        pl.col("epsilon") == e,
                    ).is_empty()
                    assert plotted == (reason is None), (exp, mech, a, e)


def test_omission_rules():
    assert omission_reason(Point("log_laplace", 0.25, 0.2), 1, False, 0.05) is not None
    assert omission_reason(Point("log_laplace", 4.0, 0.2), 1, False, 0.05) is None
    # Smooth Gamma: alpha + 1 < e^(eps/5)
    assert omission_reason(Point("smooth_gamma", 0.5, 0.1), 1, False, 0.05) is None  # 1.1 < 1.105
    assert omission_reason(Point("smooth_gamma", 0.25, 0.1), 1, False, 0.05) is not None
    # Smooth Laplace at delta = 0.05: eps >= 2 ln(1+alpha) ln 20
    need = 2 * math.log(1.1) * math.log(20)
    assert omission_reason(Point("smooth_laplace", need * 1.001, 0.1), 1, False, 0.05) is None
    assert omission_reason(Point("smooth_laplace", need * 0.99, 0.1), 1, False, 0.05)
    # workload 3 splits eps over d cells for ER-EE mechanisms only
    assert per_cell_epsilon(Point("smooth_laplace", 4.0, 0.1), 8, True) == 0.5
    assert per_cell_epsilon(Point("laplace", 4.0), 8, True) == 4.0
    assert per_cell_epsilon(Point("truncated_laplace", 4.0, None, 20), 8, True) == 4.0


def test_single_experiment_reproduces_its_rows_in_all(ds, all_result):
    one = run_haney("haney-ranking2", ds, grid=GRID, seed=7)
    a = all_result.results.filter(pl.col("experiment") == "haney-ranking2")
    assert one.results.sort(pl.all()).equals(a.sort(pl.all()))


def test_noise_infusion_shared_by_workloads_2_and_3(all_result):
    r = all_result.results
    ni = r.filter(pl.col("mechanism") == "noise_infusion", pl.col("metric") == "l1")
    w2 = ni.filter(pl.col("experiment") == "haney-workload2").sort("stratum")["value"]
    w3 = ni.filter(pl.col("experiment") == "haney-workload3").sort("stratum")["value"]
    assert w2.to_list() == w3.to_list()
    # a mechanism's ratio is its L1 over the SDL's
    l1 = value(r, "haney-workload1", "smooth_laplace", "l1", alpha=0.1, epsilon=4.0)
    ratio = value(r, "haney-workload1", "smooth_laplace", "l1_ratio", alpha=0.1, epsilon=4.0)
    base = value(r, "haney-workload1", "noise_infusion", "l1")
    assert ratio == pytest.approx(l1 / base)


def test_cell_statistics_once_per_marginal(ds, monkeypatch):
    calls = {"cell_statistics": 0, "establishment_cells": 0}
    eng = PolarsEngine()
    for name in calls:
        orig = getattr(eng, name)

        def wrapped(*a, _orig=orig, _name=name, **k):
            calls[_name] += 1
            return _orig(*a, **k)

        monkeypatch.setattr(eng, name, wrapped)
    run_haney("haney-all", ds, grid=GRID, seed=1, engine=eng)
    # place populations + the two marginals (workloads 2, 3 and ranking 2 share one)
    assert calls == {"cell_statistics": 3, "establishment_cells": 2}


def test_laplace_l1_matches_theory(ds):
    """E|Lap(1/eps)| = 1/eps, sd 1/eps: the pipeline's L1 for edge-DP Laplace."""
    grid = HaneyGrid(epsilons=(0.5,), alphas=(0.1,), thetas=(20,), trials=30)
    res = run_haney("haney-workload2", ds, grid=grid, seed=3)
    l1 = value(res.results, "haney-workload2", "laplace", "l1", epsilon=0.5)
    cells = value(res.results, "haney-workload2", "noise_infusion", "cells")
    n = int(cells) * 30
    # the mean of n i.i.d. |Lap(2)| has mean 2 and sd 2/sqrt(n)
    assert_mean(np.array([l1]), 2.0, 2.0 / math.sqrt(n))
    assert_detects(lambda x: mean_matches(x, 2.0, 2.0 / math.sqrt(n)), np.array([l1 * 1.3]))


def test_rankings_are_correlations(all_result):
    r = all_result.results.filter(pl.col("metric").is_in(["spearman_sdl", "spearman_truth"]))
    v = r["value"].drop_nans()
    assert ((v >= -1) & (v <= 1)).all()
    # noise infusion ranks the truth almost perfectly; truncation at theta = 2 does not
    ni = value(all_result.results, "haney-ranking1", "noise_infusion", "spearman_truth")
    assert ni > 0.95
    t2 = value(all_result.results, "haney-ranking1", "truncated_laplace(theta=2)",
               "spearman_sdl", epsilon=4.0)  # fmt: skip
    assert t2 < 0.7


def test_reading_mentions_the_baseline(all_result):
    lines = reading(all_result.results, "haney-workload1")
    assert lines and "ε = 4" in lines[0]  # 2 is not in the tiny grid: the largest ε
    assert any("Truncated Laplace" in s for s in lines)


def test_unknown_experiment(ds):
    with pytest.raises(SpecError):
        run_haney("haney-figure9", ds, grid=GRID)
    assert count_points("haney-all", GRID) == 3 * (3 * 3 * 3 + 3 * 2 + 3)


def test_results_do_not_depend_on_threads(ds):
    a = run_haney("haney-workload3", ds, grid=GRID, seed=5, workers=1)
    b = run_haney("haney-workload3", ds, grid=GRID, seed=5, workers=3)
    assert a.results.equals(b.results)
    assert a.omitted.equals(b.omitted)
    assert set(a.omitted["rule"]) <= {
        "unbounded expectation, lambda >= 1 (Lemma 8.2)",
        "disallowed: alpha + 1 >= e^(eps/5) (Algorithm 2)",
        "disallowed at delta = 0.05 (Algorithm 3)",
    }


def test_headline_point_is_in_the_grid():
    from eree.evaluate.haney import HaneyResult
    from eree.evaluate.report import headline_point

    def point(eps, alphas):
        grid = {"epsilons": eps, "alphas": alphas}
        return headline_point(HaneyResult(pl.DataFrame(), pl.DataFrame(), {"grid": grid}))

    # the paper's grid has the baseline α = 0.1, ε = 2
    assert point((0.25, 0.5, 1.0, 2.0, 4.0), (0.01, 0.05, 0.1, 0.2)) == (0.1, 2.0)
    # --small-grid: |log(1/2)| = |log(4/2)|, the tie goes to the larger ε
    assert point((1.0, 4.0), (0.05, 0.1)) == (0.1, 4.0)
    assert point((0.25, 1.0), (0.01, 0.05)) == (0.05, 1.0)


class _StopAfter:
    """A progress callback that presses Ctrl-C after ``n`` finished parameter points."""

    def __init__(self, n: int) -> None:
        self.n, self.seen = n, 0

    def __call__(self, msg: str) -> None:
        if "(omitted)" in msg:
            return
        self.seen += 1
        if self.seen == self.n:
            raise KeyboardInterrupt


def test_ctrl_c_keeps_the_finished_points(ds):
    full = run_haney("haney-workload1", ds, grid=GRID, seed=3, workers=1)
    part = run_haney("haney-workload1", ds, grid=GRID, seed=3, workers=1, progress=_StopAfter(3))
    assert "interrupted" in part.meta and "interrupted" not in full.meta
    assert "3 of" in part.meta["interrupted"]
    assert 0 < part.results.height < full.results.height
    # what was kept is exactly what the full run computed first (rows in grid order)
    from polars.testing import assert_frame_equal

    assert_frame_equal(part.results, full.results.head(part.results.height))
