"""The √-space microdata fit with an anchored total (eree.postprocess.sqrt_space).

Expectations from the mathematics: the fit's fixed point is the minimiser of the stated
objective (computed here by a general-purpose optimiser, not by the code's helpers); the
anchor is the inverse-variance combination of the queries' totals with variances from
Thm 6.6 (solved here by root finding on its defining equation); a simulation checks that
the anchor is unbiased and its reported variance right (with a power check).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq, minimize

from eree.postprocess.sqrt_space import (
    anchored_cells,
    anchored_observations,
    anchored_total,
    solve_sqrt_space,
)
from eree.postprocess.wls import GroupSumObservation, SqrtAnswers, solve_wls


def _sqrt_query(
    name: str, groups: np.ndarray | None, omega: np.ndarray, sigma: float, a: float = 0.0
) -> GroupSumObservation:
    """A ψ = √(x + a) query published the way Thm 6.6 says: x̃ = ω² − σ² − a, v̂."""
    est = omega**2 - sigma**2 - a
    var = 2 * sigma**2 * (2 * (np.maximum(est, 0) + a) + sigma**2)
    return GroupSumObservation(name, groups, est, var, "x", SqrtAnswers(omega, sigma, a))


def test_anchor_of_agreeing_totals_and_its_variance() -> None:
    """Two queries whose totals agree: T̂ is that total; Var T̂ = 1/(1/V₁ + 1/V₂(T̂))."""
    groups = np.array([0, 0, 1, 1, 1, 2])
    sigma = 3.0
    omega = np.array([4.0, 5.0, 6.0])
    psi = _sqrt_query("g", groups, omega, sigma)
    s = float(psi.values.sum())  # 16 + 25 + 36 − 27 = 50
    assert s == pytest.approx(50.0)
    other = GroupSumObservation("t", np.zeros(6, dtype=np.intp), np.array([s]), np.array([40.0]))
    t, v = anchored_total(6, [psi, other])
    assert t == pytest.approx(50.0)
    v_psi = 2 * 9 * (2 * 50 + 3 * 9)  # Thm 6.6 summed over 3 groups: 2σ²(2X + Kσ²)
    assert v == pytest.approx(1 / (1 / 40 + 1 / v_psi))


def test_anchor_solves_its_fixed_point_equation() -> None:
    """T = (S₁/V₁ + S₂/V₂(T)) / (1/V₁ + 1/V₂(T)), V₂(T) = 2σ²(2(T − S_pnc + Ka) + Kσ²)
    for a query mixing √-answered groups (shift a) and public-variance groups."""
    sigma, a = 2.0, 1.5
    groups = np.array([0, 1, 1, 2, 3, 3])
    omega = np.array([3.0, np.nan, 7.0, np.nan])  # groups 1 and 3: pnc-like answers
    est = np.array([3.0**2 - 4 - a, 20.0, 7.0**2 - 4 - a, 11.0])
    var = np.array([1.0, 9.0, 1.0, 16.0])  # the √ groups' v̂ play no role in the anchor
    mixed = GroupSumObservation("m", groups, est, var, "x", SqrtAnswers(omega, sigma, a))
    s1, v1 = 80.0, 300.0
    total = GroupSumObservation("t", np.zeros(6, dtype=np.intp), np.array([s1]), np.array([v1]))
    s2, s_pnc, k = float(est.sum()), 31.0, 2

    def v2(t: float) -> float:
        return 2 * sigma**2 * (2 * (max(t - s_pnc, 0) + k * a) + k * sigma**2) + 25.0

    def eq(t: float) -> float:
        return t - (s1 / v1 + s2 / v2(t)) / (1 / v1 + 1 / v2(t))

    expected = brentq(eq, 0.0, 200.0)
    t, v = anchored_total(6, [mixed, total])
    assert t == pytest.approx(expected, rel=1e-9)
    assert v == pytest.approx(1 / (1 / v1 + 1 / v2(expected)), rel=1e-9)


def test_no_anchor_without_a_query_covering_everything() -> None:
    """A query with an unmeasured group (variance ∞) says nothing about the total."""
    obs = GroupSumObservation("g", np.array([0, 1]), np.array([1.0, 2.0]), np.array([1.0, np.inf]))
    assert anchored_total(2, [obs]) is None


def test_fit_is_the_minimiser_of_the_sqrt_space_objective() -> None:
    r"""The fixed point is the stationary point of Σ_j (x_j − x̃_j)²/v_j (identity, Eq. 1)
    + Σ_g (ω_g − √(Σ_{j∈g} x_j + a))²/σ² (√-answered groups) under Σx = T̂ (the anchor
    replaces the one-group query; its variance 10⁻⁶·Var T̂ makes it a constraint up to
    rounding), every τ above the floor: the objective's gradient is the same for every
    establishment (the Lagrange multiplier), and a constrained optimiser finds the same x."""
    rng = np.random.default_rng(7)
    n = 7
    truth = np.array([30.0, 12.0, 50.0, 8.0, 25.0, 40.0, 15.0])
    groups = np.array([0, 0, 1, 1, 1, 2, 2])
    sig_id, sig_g, sig_t, a = 2.0, 1.5, 4.0, 0.5
    om_id = np.sqrt(truth + a) + rng.normal(0, sig_id, n)
    identity = _sqrt_query("identity", None, om_id, sig_id, a)
    gsum = np.bincount(groups, truth)
    om_g = np.sqrt(gsum + a) + rng.normal(0, sig_g, 3)
    grp = _sqrt_query("g", groups, om_g, sig_g, a)
    om_t = np.sqrt(truth.sum() + a) + rng.normal(0, sig_t, 1)
    tot = _sqrt_query("total", np.zeros(n, dtype=np.intp), om_t, sig_t, a)
    obs = [identity, grp, tot]
    t_hat, v_hat = anchored_total(n, obs)
    fit = solve_sqrt_space(
        n, obs, iterations=100, tol=1e-12, bias_kappa=None, identity_at_fit=False
    )
    assert fit.converged
    assert np.all(np.bincount(groups, fit.x, 3) + a > 0.01 * sig_g**2)  # above the floor

    def objective(x: np.ndarray) -> float:
        f = float(((x - identity.values) ** 2 / identity.variances).sum())
        g = np.bincount(groups, x, 3)
        return f + float(((om_g - np.sqrt(np.maximum(g + a, 1e-12))) ** 2).sum() / sig_g**2)

    def gradient(x: np.ndarray) -> np.ndarray:
        g = np.bincount(groups, x, 3) + a
        d = -(om_g - np.sqrt(g)) / (sig_g**2 * np.sqrt(g))
        return 2 * (x - identity.values) / identity.variances + d[groups]

    assert fit.x.sum() == pytest.approx(t_hat, abs=1e-2 * np.sqrt(v_hat))
    grad = gradient(fit.x)
    np.testing.assert_allclose(grad, grad.mean(), rtol=1e-6, atol=1e-9)
    res = minimize(
        objective, solve_wls(n, obs).x, jac=gradient, method="SLSQP",
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - t_hat}],
        options={"ftol": 1e-14, "maxiter": 1_000},
    )  # fmt: skip
    assert res.success
    np.testing.assert_allclose(fit.x, res.x, rtol=1e-4, atol=1e-4 * np.abs(res.x).max())


def test_without_sqrt_answers_it_is_eq1() -> None:
    obs = [
        GroupSumObservation("identity", None, np.array([1.0, 2.0, 3.0]), np.ones(3)),
        GroupSumObservation("t", np.zeros(3, dtype=np.intp), np.array([7.0]), np.array([2.0])),
    ]
    np.testing.assert_array_equal(solve_sqrt_space(3, obs).x, solve_wls(3, obs).x)


def test_bad_arguments() -> None:
    obs = [GroupSumObservation("identity", None, np.array([1.0]), np.ones(1))]
    with pytest.raises(ValueError, match="floor"):
        solve_sqrt_space(1, obs, floor=0.0)
    with pytest.raises(ValueError, match="iterations"):
        solve_sqrt_space(1, obs, iterations=0)
    with pytest.raises(ValueError, match="one ψ-space answer per group"):
        GroupSumObservation(
            "g", np.array([0, 1]), np.ones(2), np.ones(2), "x", SqrtAnswers(np.ones(3), 1.0)
        )
    with pytest.raises(ValueError, match="sigma"):
        SqrtAnswers(np.ones(1), 0.0)


def _anchor_draws(reps: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    """Anchors of a √-answered 40-group query and a public-variance 10-group query."""
    sigma = 10.0
    x = np.concatenate([np.full(20, 0.5), np.linspace(50, 4_000, 20)])  # σ² = 100
    g2 = np.repeat(np.arange(10), 4)
    x2 = np.bincount(g2, x, 10)
    v2 = np.full(10, 3_000.0)
    t = np.empty(reps)
    v = np.empty(reps)
    for r in range(reps):
        om = np.sqrt(x) + rng.normal(0, sigma, x.size)
        q1 = _sqrt_query("a", np.arange(40), om, sigma)
        q2 = GroupSumObservation("b", g2, x2 + rng.normal(0, np.sqrt(v2)), v2)
        t[r], v[r] = anchored_total(40, [q1, q2])
    return t, v, float(x.sum())


def test_anchor_is_unbiased_and_its_variance_right() -> None:
    """Over 4,000 draws: mean T̂ within 4 standard errors of the true total; empirical
    variance / mean reported variance within 4·√(2/(R−1)) of 1 — and a reported variance
    30% off would fail (power)."""
    reps = 4_000
    t, v, truth = _anchor_draws(reps, np.random.default_rng(11))
    se = t.std(ddof=1) / np.sqrt(reps)
    assert abs(t.mean() - truth) < 4 * se
    tol = 4 * np.sqrt(2 / (reps - 1))
    ratio = t.var(ddof=1) / v.mean()
    assert abs(ratio - 1) < tol
    assert abs(t.var(ddof=1) / (1.3 * v.mean()) - 1) > tol  # power: 30% too large
    assert abs(t.var(ddof=1) / (0.7 * v.mean()) - 1) > tol  # power: 30% too small


def test_default_fit_solves_its_estimating_equations() -> None:
    r"""With the identity's variances at the fit, v_j = 2σ²(2(x_j + a) + σ²) (Thm 6.6), and
    the bias-corrected √-terms, the fixed point solves, under Σx = T̂,
    2(x_j − x̃_j)/v_j(x) + Σ_g∋j [(√τ_g − ω_g)/(√τ_g σ²) + 1/(2(τ_g + κσ²))] = λ for every j
    (τ_g = Σ_{i∈g} x_i + a): the derivative of the Gauss–Newton term (t − a_g)²/(4τσ²)
    with a_g = 2√τ ω − τ − a − σ²τ/(τ + κσ²), at t = τ − a."""
    rng = np.random.default_rng(7)
    n = 7
    truth = np.array([30.0, 22.0, 50.0, 28.0, 25.0, 40.0, 35.0])
    groups = np.array([0, 0, 1, 1, 1, 2, 2])
    sig_id, sig_g, sig_t, a, kappa = 2.0, 1.5, 4.0, 0.5, 1.0
    identity = _sqrt_query(
        "identity", None, np.sqrt(truth + a) + rng.normal(0, sig_id, n), sig_id, a
    )
    om_g = np.sqrt(np.bincount(groups, truth) + a) + rng.normal(0, sig_g, 3)
    grp = _sqrt_query("g", groups, om_g, sig_g, a)
    om_t = np.sqrt(truth.sum() + a) + rng.normal(0, sig_t, 1)
    tot = _sqrt_query("total", np.zeros(n, dtype=np.intp), om_t, sig_t, a)
    fit = solve_sqrt_space(n, [identity, grp, tot], iterations=200, tol=1e-13, bias_kappa=kappa)
    assert fit.converged
    x = fit.x
    tau = np.bincount(groups, x, 3) + a
    assert np.all(tau > 0.01 * sig_g**2)
    v_id = 2 * sig_id**2 * (2 * (x + a) + sig_id**2)
    d = (np.sqrt(tau) - om_g) / (np.sqrt(tau) * sig_g**2) + 1 / (2 * (tau + kappa * sig_g**2))
    grad = 2 * (x - identity.values) / v_id + d[groups]
    assert np.all(x > 0)  # no nonnegativity constraint active
    np.testing.assert_allclose(grad, grad.mean(), rtol=1e-6, atol=1e-9)


def _cell_fixed_point(s: list[float], v_fixed: list[float], psi: list[tuple[float, int]]) -> float:
    """Root of T = Σ S_q/V_q(T) / Σ 1/V_q(T): fixed V, or 2σ²(2T + Kσ²) (a = 0, Thm 6.6)."""

    def v_of(t: float) -> list[float]:
        return v_fixed + [2 * s2 * (2 * max(t, 0) + k * s2) for s2, k in psi]

    def eq(t: float) -> float:
        v = v_of(t)
        return t - sum(si / vi for si, vi in zip(s, v, strict=True)) / sum(1 / vi for vi in v)

    return float(brentq(eq, -1e4, 1e5))


def test_cell_anchors_solve_their_fixed_point_equations() -> None:
    """Per cell of a partition, the queries nested in it are combined as for the total:
    a coarse query with public variance and a finer √-answered one (K groups per cell)."""
    sigma = 3.0
    cells = np.array([0, 0, 0, 1, 1, 1])
    fine = _sqrt_query("fine", np.array([0, 0, 1, 2, 2, 3]), np.array([4.0, 5.0, 9.0, 2.0]), sigma)
    coarse = GroupSumObservation("coarse", cells, np.array([30.0, 80.0]), np.array([50.0, 70.0]))
    across = GroupSumObservation("across", np.array([0, 1, 0, 1, 0, 1]), np.ones(2), np.ones(2))
    t, v = anchored_cells(6, [fine, coarse, across], cells, 2)  # "across" does not nest
    s_fine = np.array([16 + 25 - 18.0, 81 + 4 - 18.0])  # Σ (ω² − σ²) per cell
    for c in range(2):
        expected = _cell_fixed_point(
            [float(coarse.values[c]), float(s_fine[c])], [float(coarse.variances[c])], [(9.0, 2)]
        )
        assert t[c] == pytest.approx(expected, rel=1e-9)
        v_psi = 2 * 9.0 * (2 * max(expected, 0) + 2 * 9.0)
        assert v[c] == pytest.approx(1 / (1 / coarse.variances[c] + 1 / v_psi), rel=1e-9)


def _cell_anchor_draws(
    reps: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cell anchors: 10 cells of 4 √-answered groups each and a public-variance query."""
    sigma = 10.0
    x = np.concatenate([np.full(20, 0.5), np.linspace(50, 4_000, 20)])
    g2 = np.repeat(np.arange(10), 4)
    x2 = np.bincount(g2, x, 10)
    v2 = np.full(10, 3_000.0)
    t = np.empty((reps, 10))
    v = np.empty((reps, 10))
    for r in range(reps):
        q1 = _sqrt_query("a", np.arange(40), np.sqrt(x) + rng.normal(0, sigma, x.size), sigma)
        q2 = GroupSumObservation("b", g2, x2 + rng.normal(0, np.sqrt(v2)), v2)
        t[r], v[r] = anchored_cells(40, [q1, q2], g2, 10)
    return t, v, x2


def test_cell_anchors_are_unbiased_and_their_variances_right() -> None:
    """Over 3,000 draws, per cell: mean T̂_c within 4 standard errors of the cell's sum;
    pooled over the 10 cells, empirical variance / mean reported variance within
    4·√(2/(R−1))/√10 of 1 — and reported variances 30% off fail (power)."""
    reps = 3_000
    t, v, truth = _cell_anchor_draws(reps, np.random.default_rng(5))
    se = t.std(axis=0, ddof=1) / np.sqrt(reps)
    assert np.all(np.abs(t.mean(axis=0) - truth) < 4 * se)
    tol = 4 * np.sqrt(2 / (reps - 1)) / np.sqrt(10)
    emp = t.var(axis=0, ddof=1)
    for f, ok in ((1.0, True), (1.3, False), (0.7, False)):
        ratio = float(np.mean(emp / (f * v.mean(axis=0))))
        assert bool(abs(ratio - 1) < tol) is ok, (f, ratio)


def test_cells_with_a_large_excess_are_fixed_to_their_anchors() -> None:
    """A cell is fixed to its anchor where the finer ψ-answered groups in it could add
    K·σ²/2 ≥ λ·sd(T̂_c) and sd(T̂_c) ≤ ρ·T̂_c: the measurement's cell is dropped and
    the anchor (variance 10⁻²·Var T̂_c) takes its place; the other cells keep the
    measurement."""
    sigma = 10.0
    n = 60
    cells = np.repeat([0, 1], [50, 10])  # cell 0: 50 one-establishment groups, cell 1: 10
    fine = _sqrt_query("fine", np.arange(n), np.full(n, 3.0), sigma)
    coarse = GroupSumObservation("coarse", cells, np.array([400.0, 300.0]), np.array([4e4, 4e4]))
    obs = [fine, coarse]
    t, v = anchored_cells(n, obs, cells, 2)
    excess = np.array([50, 10]) * sigma**2 / 2  # 2 500, 500
    ratio = 3.0
    expected = excess >= ratio * np.sqrt(v)
    assert expected.tolist() == [True, False]  # sd(T̂_c) ≈ 185–195 here: one of each
    out = anchored_observations(n, obs, ratio, math.inf)
    kept = next(o for o in out if o.name == "coarse")
    np.testing.assert_array_equal(np.isinf(kept.variances), expected)
    anchor = next(o for o in out if o.name == "coarse (anchored)")
    assert anchor.values[0] == pytest.approx(t[0])
    assert anchor.variances[0] == pytest.approx(1e-2 * v[0])
    assert np.isinf(anchor.variances[1])
    assert not any(
        o.name == "coarse (anchored)" for o in anchored_observations(n, obs, 1e9, math.inf)
    )
    # …and only where sd(T̂_c) ≤ ρ·T̂_c
    sd = np.sqrt(v)
    rho = float(sd[0] / t[0]) * 1.01
    fixed = anchored_observations(n, obs, ratio, rho)
    assert np.isinf(next(o for o in fixed if o.name == "coarse").variances[0])
    kept = anchored_observations(n, obs, ratio, rho / 1.02)
    assert not any(o.name == "coarse (anchored)" for o in kept)
