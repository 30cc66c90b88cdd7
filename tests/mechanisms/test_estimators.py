"""Thm 6.6 (Webb et al.): unbiased estimators, variances, v̂/v, and the §6.1 CIs.

Statistical checks use fixed seeds and z-scores from the sample size (|z| < 4); each also
proves its power: the same check fails when the noise scale is off by 30%.

The answers ω are drawn by the ψ-mechanism itself on the fine ψ-space grid 2⁻³⁰ (not its
default 2⁻²⁰), so that Thm 6.6's unrounded mathematics is what is tested: the rounding
moves ω by at most 2⁻³¹ ≈ 4.7e-10, so x̃ = ω² − σ² by at most 2|ω|·2⁻³¹ ≤ 1e-6 (|ω| ≤ 10³
here; standard error of x̃ ≥ 2σ|ω|/√N, and 1.6e-3 at x = 0) and the log estimate x̃ + a
by a factor within e^{±2⁻³¹} (standard error ≥ (x + a)·0.14/√N): every z-score below
moves by < 1e-5, and an interval end crosses x with probability < 1e-8 per draw.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from eree.mechanisms.estimators import (
    log_shift_estimate,
    log_shift_true_variance,
    log_shift_variance_estimate,
    psi_confidence_interval,
    psi_estimates,
    psi_std_at,
    psi_variance_at,
    sqrt_estimate,
    sqrt_true_variance,
    sqrt_variance_estimate,
    z_value,
)
from eree.mechanisms.gedp import psi_mechanism
from eree.mechanisms.noise import SeededNoise
from eree.privacy.neighbors import (
    DPNeighbor,
    LogShift,
    NeighborFunction,
    SqrtShift,
    combine,
    heterogeneous,
)
from tests.stats import Z_CRIT, assert_detects, z_score

N = 200_000
SIGMA_SQRT = 0.5 / 0.7  # γ_emp = 0.5, μ = 0.7 (Table 7 identity query)
SIGMA_LOG = 0.5  # γ = 0.5, μ = 1 (Appendix H, docs/errata.md)


#: the ψ-space grid of the draws: fine enough for the rounding to be negligible (above)
FINE_GRID = 2.0**-30


def omegas(f: NeighborFunction, x: float, sigma: float, seed: int, n: int = N) -> np.ndarray:
    """n draws of the ψ-mechanism answer ω = round(ψ(x) + N(0, σ²)) on FINE_GRID (γ = σ, μ = 1)."""
    out = psi_mechanism(np.full(n, x), f, sigma, 1.0, SeededNoise(seed), grid=FINE_GRID)
    return out.noisy


def unbiased(est: np.ndarray, x: float, v: float) -> bool:
    """Mean of x̃ within Z_CRIT standard errors of x (standard error √(v/N))."""
    return abs(z_score(est, x, math.sqrt(v))) < Z_CRIT


def variance_matches(est: np.ndarray, x: float, v: float) -> bool:
    """E[(x̃ − x)²] = v, z-score with the sample standard deviation of (x̃ − x)²."""
    d2 = (est - x) ** 2
    z = (d2.mean() - v) / (d2.std(ddof=1) / math.sqrt(d2.size))
    return abs(z) < Z_CRIT


# --------------------------------------------------------------------------------------
# sqrt
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("x", [0.0, 5.0, 100.0, 10_000.0])
@pytest.mark.parametrize("sigma", [SIGMA_SQRT, 2.0])
def test_sqrt_unbiased_and_variance(x: float, sigma: float) -> None:
    w = omegas(SqrtShift(), x, sigma, seed=int(x) + 7)
    est = sqrt_estimate(w, sigma)
    v = float(sqrt_true_variance(x, sigma))
    assert v == pytest.approx(2 * sigma**2 * (2 * x + sigma**2))
    assert unbiased(est, x, v)
    assert variance_matches(est, x, v)
    # power: answers drawn with 1.3σ, estimator told σ
    wrong = sqrt_estimate(omegas(SqrtShift(), x, 1.3 * sigma, seed=int(x) + 8), sigma)
    assert_detects(lambda s: unbiased(s, x, v) and variance_matches(s, x, v), wrong)
    wrong = sqrt_estimate(omegas(SqrtShift(), x, sigma / 1.3, seed=int(x) + 9), sigma)
    assert_detects(lambda s: unbiased(s, x, v) and variance_matches(s, x, v), wrong)


def test_sqrt_shift_unbiased() -> None:
    f, sigma, x = SqrtShift(2.0), 1.0, 30.0
    est = sqrt_estimate(omegas(f, x, sigma, seed=3), sigma, 2.0)
    v = float(sqrt_true_variance(x, sigma, 2.0))
    assert unbiased(est, x, v) and variance_matches(est, x, v)
    pub = psi_estimates(omegas(f, x, sigma, seed=3, n=10), f, sigma)
    assert pub.variance is not None
    np.testing.assert_allclose(pub.variance, sqrt_variance_estimate(pub.estimate, sigma, 2.0))


def test_sqrt_variance_estimate_converges() -> None:
    """v̂/v → 1 in probability: rms(v̂/v − 1) = 4σ²/√v exactly while x̃ > 0."""
    sigma = SIGMA_SQRT
    rms = []
    for i, x in enumerate([1e2, 1e4, 1e6]):
        est = sqrt_estimate(omegas(SqrtShift(), x, sigma, seed=40 + i, n=100_000), sigma)
        v = float(sqrt_true_variance(x, sigma))
        r = sqrt_variance_estimate(est, sigma) / v
        got = float(np.sqrt(np.mean((r - 1) ** 2)))
        theory = 4 * sigma**2 / math.sqrt(v)
        assert got == pytest.approx(theory, rel=Z_CRIT / math.sqrt(2 * r.size))
        rms.append(got)
    assert rms[0] > 9 * rms[1] > 81 * rms[2]  # shrinks like 1/√x
    assert rms[2] < 0.002
    # at x = 10⁶ essentially every v̂ is within 1% of v
    assert np.mean(np.abs(r - 1) > 0.01) < 1e-3


# --------------------------------------------------------------------------------------
# log(x + a)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("x", [0.0, 10.0, 1_000.0])
@pytest.mark.parametrize("sigma", [0.1 / 0.7, SIGMA_LOG])
def test_log_shift_unbiased_and_variance(x: float, sigma: float) -> None:
    a = 1.0
    f = LogShift(a)
    est = log_shift_estimate(omegas(f, x, sigma, seed=int(x) + 11), sigma, a)
    v = float(log_shift_true_variance(x, sigma, a))
    assert v == pytest.approx((x + a) ** 2 * (math.exp(sigma**2) - 1))
    assert unbiased(est, x, v)
    assert variance_matches(est, x, v)
    wrong = log_shift_estimate(omegas(f, x, 1.3 * sigma, seed=int(x) + 12), sigma, a)
    assert_detects(lambda s: unbiased(s, x, v) and variance_matches(s, x, v), wrong)
    wrong = log_shift_estimate(omegas(f, x, sigma / 1.3, seed=int(x) + 13), sigma, a)
    assert_detects(lambda s: unbiased(s, x, v) and variance_matches(s, x, v), wrong)


def test_log_variance_estimate_does_not_converge() -> None:
    """v̂/v = exp(2σZ − σ²) whatever x (Thm 6.6): P(|v̂/v − 1| > 0.1) stays put."""
    sigma, a = 0.1 / 0.7, 1.0
    r_exact = 1.0 - norm.cdf((math.log(1.1) + sigma**2) / (2 * sigma))
    r_exact += norm.cdf((math.log(0.9) + sigma**2) / (2 * sigma))
    n = 100_000
    se = math.sqrt(r_exact * (1 - r_exact) / n)
    for i, x in enumerate([10.0, 1e6]):
        est = log_shift_estimate(omegas(LogShift(a), x, sigma, seed=60 + i, n=n), sigma, a)
        r = log_shift_variance_estimate(est, sigma, a) / log_shift_true_variance(x, sigma, a)
        freq = float(np.mean(np.abs(r - 1) > 0.1))
        assert abs(freq - r_exact) < Z_CRIT * se
    assert r_exact > 0.5


def test_log_shift_estimates_past_the_float_range_of_e_to_the_sigma_squared() -> None:
    """A large σ (γ = 50, μ = 0.6: σ² ≈ 6944 > 709, e^{σ²} past the float range): the
    plug-in v̂ = (x̃+a)²(e^{σ²}−1) with x̃ + a = e^{ω−σ²/2} is e^{2ω}(1 − e^{−σ²}), which
    is e^{2ω} to double precision here (was OverflowError); for a moderate σ the same
    value as the direct product. The variance at a public x, (x+a)²(e^{σ²}−1), really is
    past the float range (inf); its square root stays finite while it is below 1.8e308."""
    a, sigma = 1.0, 50.0 / 0.6
    omega = np.array([-30.0, 0.0, 3.5, 120.0, 300.0])
    e = psi_estimates(omega, LogShift(a), sigma)
    assert e.variance is not None
    np.testing.assert_allclose(e.variance, np.exp(2.0 * omega), rtol=1e-12)
    np.testing.assert_array_equal(e.estimate, -a)  # e^{ω−σ²/2} < 1e-1300: 0 in a double
    for s in (0.1 / 0.7, SIGMA_LOG, 3.0):  # identical to the direct formula
        w = np.array([-2.0, 0.0, 1.0, 7.5])
        direct = (np.exp(w - s * s / 2) - a + a) ** 2 * math.expm1(s * s)
        np.testing.assert_allclose(psi_estimates(w, LogShift(a), s).variance, direct, rtol=1e-12)
        x = np.array([0.0, 4.0, 1e4])
        v = psi_variance_at(LogShift(a), x, s)
        np.testing.assert_allclose(v, (x + a) ** 2 * math.expm1(s * s), rtol=1e-12)
        np.testing.assert_allclose(psi_std_at(LogShift(a), x, s), np.sqrt(v), rtol=1e-12)
    x = np.array([0.0, 10.0])
    assert np.all(np.isinf(psi_variance_at(LogShift(a), x, sigma)))  # type: ignore[arg-type]
    s = math.sqrt(800.0)  # variance e^{800}(x+a)² > 1.8e308, std e^{400}(x+a) is not
    assert np.all(np.isinf(psi_variance_at(LogShift(a), x, s)))  # type: ignore[arg-type]
    np.testing.assert_allclose(psi_std_at(LogShift(a), x, s), (x + a) * math.exp(400.0),
                               rtol=1e-12)  # fmt: skip


# --------------------------------------------------------------------------------------
# CIs and the publishable output
# --------------------------------------------------------------------------------------

CI_CASES: list[tuple[NeighborFunction, float]] = [
    (SqrtShift(), SIGMA_SQRT),
    (LogShift(1.0), 0.1 / 0.7),
    (DPNeighbor(), 1.5),
    (combine((SqrtShift(), 0.5), (DPNeighbor(), 1.0)), 1.0 / 0.7),
    (heterogeneous((SqrtShift(), 0.5), (LogShift(1.0), 0.1)), 1.0),
]


def coverage(f: NeighborFunction, x: float, draw_sigma: float, sigma: float, seed: int) -> float:
    lo, hi = psi_confidence_interval(omegas(f, x, draw_sigma, seed, n=50_000), f, sigma, 0.95)
    return float(np.mean((lo <= x) & (x <= hi)))


@pytest.mark.parametrize(("f", "sigma"), CI_CASES, ids=lambda v: getattr(v, "kind", str(v)))
def test_ci_coverage(f: NeighborFunction, sigma: float) -> None:
    se = math.sqrt(0.95 * 0.05 / 50_000)

    def ok(c: float) -> bool:
        return abs(c - 0.95) < Z_CRIT * se

    assert ok(coverage(f, 50.0, sigma, sigma, seed=5))
    assert not ok(coverage(f, 50.0, 1.3 * sigma, sigma, seed=6))  # power
    assert coverage(f, 0.0, sigma, sigma, seed=7) >= 0.95 - Z_CRIT * se  # clamped at ψ(0)


def test_z_value() -> None:
    assert z_value(0.95) == pytest.approx(1.959964, abs=1e-6)
    with pytest.raises(Exception, match="confidence"):
        z_value(1.0)


def test_sqrt_published_formulas() -> None:
    """x̃ = ω² − σ² and v̂ = 2σ²(2·max(x̃, 0) + σ²): functions of ω and σ only."""
    w = np.array([-1.0, 0.0, 0.3, 4.0, 30.0])
    pub = psi_estimates(w, SqrtShift(), 1.0)
    assert pub.variance is not None
    np.testing.assert_allclose(pub.estimate, w**2 - 1.0)
    np.testing.assert_allclose(pub.variance, 2 * (2 * np.maximum(w**2 - 1, 0) + 1))
    assert "estimated from the noisy answer" in pub.method


def test_estimates_by_kind() -> None:
    w = np.array([0.5, 2.0, 10.0])
    dp = psi_estimates(w, DPNeighbor(), 2.0)
    np.testing.assert_array_equal(dp.estimate, w)
    np.testing.assert_array_equal(dp.variance, np.full(3, 4.0))
    lg = psi_estimates(w, LogShift(1.0), 0.2)
    assert lg.variance is not None
    np.testing.assert_allclose(lg.estimate, np.exp(w - 0.02) - 1)
    np.testing.assert_allclose(lg.variance, np.exp(2 * (w - 0.02)) * math.expm1(0.04))
    c = combine((SqrtShift(), 0.5), (DPNeighbor(), 1.0))
    gen = psi_estimates(w, c, 1.0)
    assert gen.variance is None and "no standard error" in gen.method
    np.testing.assert_allclose(gen.estimate, c.inverse(w))
    lo, hi = gen.ci_low, gen.ci_high
    assert np.all(lo <= gen.estimate) and np.all(gen.estimate <= hi)
