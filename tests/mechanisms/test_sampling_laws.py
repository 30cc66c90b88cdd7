"""The published values of every sampler follow the exact rounded law (χ² tests).

For an integer centre x, a public grid r and a scale b, the sampling layer publishes
round_r(x + bW), whose law is exactly

    P(output = x + kr) = F((k+½)r/b) − F((k−½)r/b),

F the standard law's CDF, written here from the mathematics (not from eree's helpers).
Each case draws N = 200,000 values with a fixed seed, pools adjacent bins until every
expected count is ≥ 20 and compares the χ² statistic with the chi-square quantile at
p = 1e-6, so a correct sampler fails with negligible probability. Power: the same draws
must be rejected against the law with the scale off by 30%.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import integrate
from scipy.special import ndtr
from scipy.stats import chi2

from eree.mechanisms.noise import SeededNoise
from eree.mechanisms.noise_laws import RampLaw
from eree.mechanisms.sampling import Term, additive, exact_centre, rounded_noisy, rounded_variance

N = 200_000
P_FALSE_ALARM = 1e-6
MIN_EXPECTED = 20.0
#: (scale b, grid r): scale comparable to the grid, scale ≫ grid, a fine grid
CASES = [(0.5, 1.0), (37.3, 1.0), (1.0, 2.0**-6)]
LAW_NAMES = ("laplace", "gaussian", "smooth_gamma", "ramp")
#: noise infusion's default distortion bounds: |W| ∈ [s, t]/(t − s) = [0.5, 1.5]
RAMP_S, RAMP_T = 0.05, 0.15
#: the bins span |k| ≤ Z_MAX·b/r (the two end bins hold the tails)
Z_MAX = {"laplace": 16.0, "gaussian": 7.0, "smooth_gamma": 60.0, "ramp": 1.6}
SQRT2 = math.sqrt(2.0)

# --------------------------------------------------------------------------- exact laws
# Survival functions S(z) = P(W > z) for z ≥ 0 (every law is symmetric), written to keep
# their relative accuracy in the tails (no 1 − F cancellation).


def laplace_sf(z: np.ndarray) -> np.ndarray:
    """Density ½e^{−|w|}: S(z) = ½e^{−z}."""
    return 0.5 * np.exp(-np.asarray(z, dtype=float))


def gaussian_sf(z: np.ndarray) -> np.ndarray:
    return np.asarray(ndtr(-np.asarray(z, dtype=float)))


def smooth_gamma_sf(z: np.ndarray) -> np.ndarray:
    r"""Density (√2/π)/(1+z⁴): S = ½ − F0(z)/(π/√2), F0(z) = ∫₀^z dt/(1+t⁴) in closed form.

    For z > 8 the closed form cancels; there S = (√2/π)∫_z^∞ t⁻⁴(1+t⁻⁴)⁻¹ dt is the
    alternating series (√2/π)Σ_j (−1)^j/((4j+3)z^{4j+3}) (six terms: relative error < 1e-20).
    """
    z = np.asarray(z, dtype=float)
    out = np.empty(z.shape)
    small = z <= 8.0
    x = z[small]
    f0 = np.log((x * x + SQRT2 * x + 1) / (x * x - SQRT2 * x + 1)) / (4 * SQRT2) + (
        np.arctan(SQRT2 * x + 1) + np.arctan(SQRT2 * x - 1)
    ) / (2 * SQRT2)
    out[small] = 0.5 - f0 / (math.pi / SQRT2)
    x = z[~small]
    u = x**-4.0
    series = sum((-1) ** j * u**j / (4 * j + 3) for j in range(6))
    out[~small] = (SQRT2 / math.pi) * series / x**3
    return out


def ramp_sf(z: np.ndarray) -> np.ndarray:
    """W = ±(c − √V): δ = (t−s)|W| has P(δ ≥ d) = ((t−d)/(t−s))² on [s, t], per side ½."""
    d = (RAMP_T - RAMP_S) * np.asarray(z, dtype=float)
    return 0.5 * np.clip((RAMP_T - d) / (RAMP_T - RAMP_S), 0.0, 1.0) ** 2


SF: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "laplace": laplace_sf,
    "gaussian": gaussian_sf,
    "smooth_gamma": smooth_gamma_sf,
    "ramp": ramp_sf,
}
DENSITY: dict[str, Callable[[float], float]] = {
    "laplace": lambda w: 0.5 * math.exp(-abs(w)),
    "gaussian": lambda w: math.exp(-w * w / 2) / math.sqrt(2 * math.pi),
    "smooth_gamma": lambda w: (SQRT2 / math.pi) / (1 + w**4),
}


def rounded_pmf(law: str, b: float, r: float) -> tuple[np.ndarray, np.ndarray]:
    """(k, P(round_r(x + bW) = x + kr)) for |k| ≤ K; the end bins also hold the tails."""
    K = math.ceil(Z_MAX[law] * b / r) + 1
    k = np.arange(-K, K + 1)
    lo = (k - 0.5) * r / b
    hi = (k + 0.5) * r / b
    lo[0], hi[-1] = -np.inf, np.inf
    sf = SF[law]
    s_lo, s_hi = sf(np.abs(lo)), sf(np.abs(hi))
    # P(lo < W ≤ hi) by symmetry; edges are half-integers·r/b, never 0
    p = np.where(lo > 0, s_lo - s_hi, np.where(hi < 0, s_hi - s_lo, 1.0 - s_lo - s_hi))
    assert abs(p.sum() - 1.0) < 1e-12 and p.min() >= 0.0
    return k, p


def pooled_chi2(k_obs: np.ndarray, law: str, b: float, r: float) -> tuple[float, float]:
    """(χ² statistic, critical value at P_FALSE_ALARM) with bins pooled to E ≥ MIN_EXPECTED."""
    k, p = rounded_pmf(law, b, r)
    K = int(k[-1])
    observed = np.bincount(np.clip(k_obs, -K, K) + K, minlength=k.size)
    expected = p * k_obs.size
    groups_o: list[float] = []
    groups_e: list[float] = []
    acc_o = acc_e = 0.0
    for o, e in zip(observed.tolist(), expected.tolist(), strict=True):
        acc_o += o
        acc_e += e
        if acc_e >= MIN_EXPECTED:
            groups_o.append(acc_o)
            groups_e.append(acc_e)
            acc_o = acc_e = 0.0
    groups_o[-1] += acc_o  # the leftover tail joins the last group
    groups_e[-1] += acc_e
    o_arr, e_arr = np.array(groups_o), np.array(groups_e)
    stat = float(np.sum((o_arr - e_arr) ** 2 / e_arr))
    return stat, float(chi2.isf(P_FALSE_ALARM, o_arr.size - 1))


def centres(n: int) -> np.ndarray:
    """Integer centres up to ±5·10⁷ (multiples of every grid used here)."""
    return ((np.arange(n) % 101) - 50) * 1_000_003.0


def draw(law: str, source: SeededNoise, x: np.ndarray, b: float, r: float) -> np.ndarray:
    """The published values round_r(x + bW)."""
    if law == "ramp":
        term = Term(RampLaw(RAMP_S, RAMP_T), np.full(x.shape, b))
        return rounded_noisy(source, exact_centre(x), [term], r)
    return additive(source, x, law, b, r)


@functools.cache
def published_k(law: str, b: float, r: float) -> np.ndarray:
    """k = (output − x)/r of N published values (fixed seed per case); checks they are integers."""
    seed = 1_000 + 10 * LAW_NAMES.index(law) + CASES.index((b, r))
    x = centres(N)
    out = draw(law, SeededNoise(seed), x, b, r)
    k = (out - x) / r
    assert np.array_equal(k, np.rint(k)), "published values are not on the grid"
    return k.astype(np.int64)


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("law", ["laplace", "gaussian", "smooth_gamma"])
def test_the_exact_survival_functions_integrate_their_densities(law):
    # the test's own laws, checked against numerical integration (incl. both sides of z = 8)
    for z in (0.0, 0.3, 1.0, 2.5, 7.9, 8.1, 15.0, 60.0):
        num = integrate.quad(DENSITY[law], z, np.inf, epsabs=0, epsrel=1e-12, limit=200)[0]
        assert float(SF[law](np.array(z))) == pytest.approx(num, rel=1e-9, abs=1e-300)


def test_the_ramp_survival_function_is_noise_infusions_ramp():
    # density of δ = |f − 1| on [s, t] is 2(t − δ)/(t − s)²; P(δ ≥ d) = ((t − d)/(t − s))²
    c = RAMP_T / (RAMP_T - RAMP_S)
    w = np.array([0.0, c - 1 - 1e-9, c - 1, 0.8, 1.2, c, c + 1.0])
    expected = 0.5 * np.clip(c - w, 0.0, 1.0) ** 2
    np.testing.assert_allclose(ramp_sf(w), expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(("b", "r"), CASES)
@pytest.mark.parametrize("law", LAW_NAMES)
def test_published_values_follow_the_exact_rounded_law(law, b, r):
    k = published_k(law, b, r)
    stat, crit = pooled_chi2(k, law, b, r)
    assert stat < crit, f"{law} b={b} r={r}: χ² = {stat:.1f} ≥ {crit:.1f} (p < {P_FALSE_ALARM})"
    for factor in (0.7, 1.3):  # power: a 30% scale error is detected by the same test
        wrong, crit_w = pooled_chi2(k, law, factor * b, r)
        assert wrong > crit_w, f"{law} b={b} r={r}: the χ² test misses a ×{factor} scale"


@pytest.mark.parametrize("grid", [1.0, 2.0**-40])
@pytest.mark.parametrize("law", LAW_NAMES)
def test_seeded_draws_are_reproducible(law, grid):
    # the fine grid sends every draw through the slow path (extension bits are seeded too)
    x = centres(2_000)
    a = draw(law, SeededNoise(11), x, 3.0, grid)
    again = draw(law, SeededNoise(11), x, 3.0, grid)
    other = draw(law, SeededNoise(12), x, 3.0, grid)
    assert np.array_equal(a, again)
    assert not np.array_equal(a, other)


def exact_moments(law: str, b: float, r: float) -> tuple[float, float]:
    r"""E[D²], E[D⁴] of D = round_r(x + bW) − x (x on the grid), from the exact pmf.

    E[D^j] = 2Σ_{k≥1}(k^j − (k−1)^j) r^j S((k−½)r/b): no differences of S. For the Smooth
    Gamma (tail S(z) ≈ (√2/π)/(3z³)) the second moment's sum beyond K is added in closed
    form, (4√2/(3π))·b³/(rK); its fourth moment is infinite.
    """
    heavy = law == "smooth_gamma"
    K = math.ceil((2_000.0 if heavy else 2.5 * Z_MAX[law]) * b / r)
    k = np.arange(1, K + 1, dtype=float)
    s = SF[law]((k - 0.5) * r / b)
    m2 = 2.0 * np.sum((k**2 - (k - 1) ** 2) * s) * r**2
    m4 = 2.0 * np.sum((k**4 - (k - 1) ** 4) * s) * r**4
    if heavy:
        m2 += 4 * SQRT2 / (3 * math.pi) * b**3 / (r * K)
        m4 = math.inf
    return float(m2), float(m4)


@pytest.mark.parametrize(("b", "r"), CASES)
@pytest.mark.parametrize("law", ["laplace", "gaussian", "smooth_gamma"])
def test_rounded_variance_is_the_exact_variance_of_the_rounded_noise(law, b, r):
    # the Smooth Gamma's z⁻⁴ tail carries ≈ (2√2/π)/Z of b² beyond |W| = Z: it must be
    # counted (a sum cut at |k| ≤ 60b/r misses 1.5%); its closed form is exact to O(r²·tail)
    m2, _ = exact_moments(law, b, r)
    rel = 1e-5 if law == "smooth_gamma" else 1e-8
    assert rounded_variance(law, b, r, on_grid=True) == pytest.approx(m2, rel=rel)


@pytest.mark.parametrize(("b", "r"), CASES)
@pytest.mark.parametrize("law", ["laplace", "gaussian"])
def test_rounded_variance_matches_the_sample_variance(law, b, r):
    # the mean of D is exactly 0 (symmetric law, x on the grid): mean(D²) estimates Var D,
    # with standard error √((E D⁴ − (E D²)²)/N) (CLT). Smooth Gamma: E D⁴ = ∞, see above.
    d = published_k(law, b, r) * r
    m2, m4 = exact_moments(law, b, r)
    se = math.sqrt((m4 - m2 * m2) / d.size)
    sample = float(np.mean(d * d))
    z = (sample - rounded_variance(law, b, r, on_grid=True)) / se
    assert abs(z) < 5.0, f"{law} b={b} r={r}: sample variance off by {z:.1f} standard errors"
    for factor in (0.7, 1.3):  # power: the variance of a 30%-off scale is rejected
        wrong = (sample - rounded_variance(law, factor * b, r, on_grid=True)) / se
        assert abs(wrong) > 5.0


@pytest.mark.parametrize(("b", "r"), CASES)
def test_smooth_gamma_truncated_second_moment_matches_the_exact_law(b, r):
    # D² has infinite variance for the Smooth Gamma: test E[D² 1{|D| ≤ 20b}] instead
    d = published_k("smooth_gamma", b, r) * r
    k, p = rounded_pmf("smooth_gamma", b, r)
    inside = np.abs(k * r) <= 20 * b
    dk = (k * r)[inside]
    m2 = float(np.sum(dk**2 * p[inside]))
    m4 = float(np.sum(dk**4 * p[inside]))
    w = np.where(np.abs(d) <= 20 * b, d * d, 0.0)
    z = (float(np.mean(w)) - m2) / math.sqrt((m4 - m2 * m2) / d.size)
    assert abs(z) < 5.0, f"b={b} r={r}: truncated second moment off by {z:.1f} standard errors"
