"""WLS microdata (docs/design.md#post-processing; Webb et al. §7 Eq. 1, Appendix H)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eree.data.qcew import QCEW_AGGREGATION_LEVELS
from eree.postprocess.wls import (
    GroupSumObservation,
    group_ids,
    level_summary,
    reconstruct_microdata,
    solve_wls,
    tabulate,
)


def _closed_form(n: int, ms: list[GroupSumObservation]) -> np.ndarray:
    """Dense normal equations (GᵀWG) x = GᵀWa (identity present: non-singular)."""
    M = np.zeros((n, n))
    b = np.zeros(n)
    for m in ms:
        G = np.eye(n) if m.groups is None else np.eye(m.n_groups)[m.groups].T
        w = np.where(np.isfinite(m.variances), 1.0 / m.variances, 0.0)
        M += G.T @ (w[:, None] * G)
        b += G.T @ (w * np.where(w > 0, m.values, 0.0))
    return np.linalg.solve(M, b)


def _problem(
    rng: np.random.Generator, n: int, *, nested: bool, identity: bool = True
) -> tuple[np.ndarray, list[GroupSumObservation]]:
    x = rng.gamma(2.0, 5.0, n)
    county = np.unique(rng.integers(0, 6, n), return_inverse=True)[1]
    ms = []
    if identity:
        v = rng.uniform(0.5, 20.0, n)
        ms.append(GroupSumObservation.identity(x + rng.normal(0, np.sqrt(v)), v))

    def add(name: str, g: np.ndarray) -> None:
        m = int(g.max()) + 1
        v = rng.uniform(1.0, 50.0, m)
        ms.append(GroupSumObservation(name, g, np.bincount(g, x, m) + rng.normal(0, np.sqrt(v)), v))

    add("county", county)
    add("total", np.zeros(n, dtype=np.intp))
    if not nested:
        ind = np.unique(rng.integers(0, 4, n), return_inverse=True)[1]
        add("industry", ind)
        add("county_industry", np.unique(county * 10 + ind, return_inverse=True)[1])
    return x, ms


@pytest.mark.parametrize("nested", [True, False])
def test_wls_equals_dense_closed_form(nested: bool) -> None:
    rng = np.random.default_rng(0)
    for n in (1, 7, 120):
        _, ms = _problem(rng, n, nested=nested)
        ref = _closed_form(n, ms)
        for method in ("auto", "pcg", "lsqr", "dense"):
            r = solve_wls(n, ms, method=method, rtol=1e-13, maxiter=10_000)  # type: ignore[arg-type]
            np.testing.assert_allclose(r.x, ref, rtol=1e-6, atol=1e-8 * np.abs(ref).max())
            assert r.converged
        used = solve_wls(n, ms).method
        assert used == "tree" if nested or n == 1 else used == "pcg"


def test_tree_method_refuses_crossed_groupings() -> None:
    _, ms = _problem(np.random.default_rng(1), 50, nested=False)
    with pytest.raises(ValueError, match="nested"):
        solve_wls(50, ms, method="tree")
    _, ms = _problem(np.random.default_rng(1), 50, nested=True, identity=False)
    with pytest.raises(ValueError, match="identity"):
        solve_wls(50, ms, method="pcg")


def test_without_identity_lsqr_gives_minimum_norm() -> None:
    rng = np.random.default_rng(2)
    _, ms = _problem(rng, 40, nested=False, identity=False)
    r = solve_wls(40, ms, rtol=1e-14, maxiter=10_000)
    d = solve_wls(40, ms, method="dense")
    assert r.method == "lsqr"
    np.testing.assert_allclose(r.x, d.x, rtol=1e-6, atol=1e-8)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 25),
    k=st.integers(0, 3),
    seed=st.integers(0, 2**32 - 1),
    spread=st.floats(0.0, 6.0),
)
def test_wls_matches_dense_property(n: int, k: int, seed: int, spread: float) -> None:
    """Any identity + up to 3 random groupings, variances over `spread` decades."""
    rng = np.random.default_rng(seed)
    ms = [
        GroupSumObservation.identity(
            rng.normal(0, 10, n), 10 ** rng.uniform(-spread / 2, spread / 2, n)
        )
    ]
    for i in range(k):
        g = np.unique(rng.integers(0, 1 + rng.integers(1, 6), n), return_inverse=True)[1]
        m = int(g.max()) + 1
        ms.append(
            GroupSumObservation(
                f"q{i}", g, rng.normal(0, 30, m), 10 ** rng.uniform(-spread / 2, spread / 2, m)
            )
        )
    ref = _closed_form(n, ms)
    r = solve_wls(n, ms, rtol=1e-13, maxiter=10_000)
    scale = max(1.0, float(np.abs(ref).max()))
    np.testing.assert_allclose(r.x, ref, rtol=1e-6, atol=1e-7 * scale)


def test_identity_only_returns_identity_answers() -> None:
    a = np.array([3.0, -1.0, 7.5])
    r = solve_wls(3, [GroupSumObservation.identity(a, [1.0, 2.0, 3.0])])
    np.testing.assert_array_equal(r.x, a)
    assert r.objective == 0.0


def test_inverse_variance_weights_matter() -> None:
    # one establishment, identity answer 10 (variance 1), total answer 20 (variance 4):
    # x̂ = (10/1 + 20/4) / (1/1 + 1/4) = 12
    one = np.zeros(1, dtype=np.intp)
    ms = [
        GroupSumObservation.identity([10.0], [1.0]),
        GroupSumObservation("total", one, [20.0], [4.0]),
    ]
    assert solve_wls(1, ms).x[0] == pytest.approx(12.0)
    ms2 = [
        GroupSumObservation.identity([10.0], [4.0]),
        GroupSumObservation("total", one, [20.0], [1.0]),
    ]
    assert solve_wls(1, ms2).x[0] == pytest.approx(18.0)
    # scaling every variance by the same factor changes nothing
    ms3 = [
        GroupSumObservation.identity([10.0], [7.0]),
        GroupSumObservation("total", one, [20.0], [28.0]),
    ]
    assert solve_wls(1, ms3).x[0] == pytest.approx(12.0)
    # two establishments in one group: the discrepancy goes to the noisier one
    g = np.zeros(2, dtype=np.intp)
    r = solve_wls(2, [GroupSumObservation.identity([5.0, 5.0], [1.0, 9.0]),
                      GroupSumObservation("total", g, [20.0], [1e-12])])  # fmt: skip
    np.testing.assert_allclose(r.x, [6.0, 14.0], rtol=1e-6)


def test_repeated_measurements_merge_and_infinite_variance_is_unmeasured() -> None:
    a = GroupSumObservation.identity([2.0, 4.0], [1.0, 1.0], name="a")
    b = GroupSumObservation.identity([4.0, 8.0], [1.0, np.inf], name="b")
    r = solve_wls(2, [a, b])
    np.testing.assert_allclose(r.x, [3.0, 4.0])


def test_measurement_validation() -> None:
    with pytest.raises(ValueError, match="variances"):
        GroupSumObservation.identity([1.0], [0.0])
    with pytest.raises(ValueError, match="variances"):
        GroupSumObservation.identity([1.0], [-1.0])
    with pytest.raises(ValueError, match="length"):
        GroupSumObservation.identity([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="group ids"):
        GroupSumObservation("q", np.array([0, 2]), [1.0, 2.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="NaN"):
        GroupSumObservation.identity([np.nan], [1.0])
    with pytest.raises(ValueError, match="n = 3"):
        solve_wls(3, [GroupSumObservation.identity([1.0], [1.0])])
    with pytest.raises(ValueError, match="one id per"):
        solve_wls(3, [GroupSumObservation.identity([1.0] * 3, [1.0] * 3),
                      GroupSumObservation("q", np.zeros(2, dtype=int), [1.0], [1.0])])  # fmt: skip


@pytest.mark.parametrize("nested", [True, False])
def test_nonnegative_exact_and_active_set(nested: bool) -> None:
    rng = np.random.default_rng(3)
    x, ms = _problem(rng, 300, nested=nested)
    ms[0] = GroupSumObservation.identity(ms[0].values - 8.0, ms[0].variances)  # push some below 0
    free = solve_wls(300, ms)
    assert (free.x < 0).sum() > 10
    exact = solve_wls(300, ms, nonnegative=True, nonnegative_method="exact")
    heur = solve_wls(300, ms, nonnegative=True, nonnegative_method="active_set", rtol=1e-13)
    for r in (exact, heur):
        assert (r.x >= 0).all()
        assert r.objective >= free.objective - 1e-9
        assert r.kkt_violation < 1e-6
    assert heur.converged and heur.nonnegative_rounds >= 2
    assert heur.objective == pytest.approx(exact.objective, rel=1e-8)
    np.testing.assert_allclose(heur.x, exact.x, atol=1e-6 * x.max())
    # "auto" picks exact for small problems
    assert solve_wls(300, ms, nonnegative=True).method == "exact"


def test_reconstruct_microdata_by_attribute() -> None:
    g = np.array([0, 0, 1])
    ms = [
        GroupSumObservation.identity([1.0, 2.0, 3.0], [1.0] * 3, attribute="m3emp"),
        GroupSumObservation("county", g, [6.0, 3.0], [1.0, 1.0], attribute="m3emp"),
        GroupSumObservation.identity([10.0, 20.0, 30.0], [1.0] * 3, attribute="wage"),
    ]
    out = reconstruct_microdata(3, ms)
    assert list(out) == ["m3emp", "wage"]
    np.testing.assert_allclose(out["m3emp"].x, [2.0, 3.0, 3.0])
    np.testing.assert_allclose(out["wage"].x, [10.0, 20.0, 30.0])


def test_group_ids_and_tabulate() -> None:
    df = pl.DataFrame(
        {
            "state": [44, 44, 44, 44],
            "cnty": [3, 1, 3, 1],
            "own": [5, 5, 5, 5],
            "naics": [236115, 311111, 236118, 541110],
            "naics_sector": [23, 31, 23, 54],
            "super_sector": [1012, 1013, 1012, 1024],
            "m3emp": [1, 2, 3, 4],
            "wage": [10, 20, 30, 40],
        }
    )
    ids, keys = group_ids(df, ["cnty", "naics_sector"])
    assert ids.tolist() == [2, 0, 2, 1]
    assert keys.rows() == [(1, 31), (1, 54), (3, 23)]
    ids0, keys0 = group_ids(df, [])
    assert ids0.tolist() == [0, 0, 0, 0] and keys0.height == 0
    dom = tabulate(df, 52, ["m3emp"])
    assert dom.rows() == [(44, 5, 101, 3, 6), (44, 5, 102, 1, 4)]
    cty = tabulate(df, ["cnty"], ["wage"], count=None)
    assert cty.rows() == [(1, 60), (3, 40)]
    assert QCEW_AGGREGATION_LEVELS[75] == ("state", "cnty", "own", "naics3")
    assert QCEW_AGGREGATION_LEVELS[10] == ()
    s = level_summary(df, levels=(71,))
    assert s.filter(pl.col("variable") == "n")["max"].item() == 2.0


def test_wls_solution_tabulates_back_to_exact_answers() -> None:
    """Exact (near-zero variance) group answers are met by the reconstructed microdata."""
    rng = np.random.default_rng(4)
    n = 500
    g = rng.integers(0, 20, n)
    truth = rng.gamma(2.0, 3.0, n)
    sums = np.bincount(g, truth, 20)
    ms = [
        GroupSumObservation.identity(truth + rng.normal(0, 2, n), np.full(n, 4.0)),
        GroupSumObservation("county", g, sums, np.full(20, 1e-9)),
    ]
    x = solve_wls(n, ms).x
    np.testing.assert_allclose(np.bincount(g, x, 20), sums, rtol=1e-6)


# --------------------------------------------------------------------------------------
# Appendix H / Table 11
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("psi", ["sqrt", "log"])
def test_appendix_h_ablation_matches_table11(psi: str) -> None:
    """50 counties × 2 establishments of 10, μ = 1, γ = 0.5 (docs/errata.md).

    Tolerance from theory: 4 Monte Carlo standard errors of our estimate and of the
    paper's (1,000,000 trials), plus the paper's rounding to 0.05.
    """
    from eree.evaluate.webb.ablation import PAPER_TABLE11, webb_table11

    trials = 10_000
    r = webb_table11(psi, trials=trials, seed=2024)  # type: ignore[arg-type]
    for strategy, queries in PAPER_TABLE11[psi].items():
        for q, paper in queries.items():
            se = r.se[strategy][q] * math.sqrt(1.0 + trials / 1_000_000)
            assert abs(r.mse[strategy][q] - paper) <= 4 * se + 0.05, (strategy, q)
    # the qualitative findings: estimated variances hurt the total most
    assert r.mse["Est"]["Total"] > 1.5 * r.mse["Act"]["Total"]
    assert r.mse["Act"]["Total"] < r.mse["Hybrid"]["Total"] < r.mse["Est"]["Total"]


def test_appendix_h_power_100_counties_fails() -> None:
    """The paper's text (100 counties) doubles the Total MSE: the check would catch it."""
    from eree.evaluate.webb.ablation import PAPER_TABLE11, webb_table11

    r = webb_table11("sqrt", trials=4_000, seed=7, n_counties=100)
    paper = PAPER_TABLE11["sqrt"]["Act"]["Total"]
    assert abs(r.mse["Act"]["Total"] - paper) > 8 * r.se["Act"]["Total"]
