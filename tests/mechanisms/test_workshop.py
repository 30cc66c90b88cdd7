"""Workshop variants (papers/002_*, Algs 1–3) over thousands of cells, against their laws.

Each statistical check also proves its power: it fails when the noise scale is off by 30%.

Published values are the mechanisms' outputs rounded to a public grid (docs/privacy.md):
2⁻²⁰ in Log-Laplace's log space, 1 for the smooth mechanisms' counts. Where a test states
the papers' unrounded law (the PITs, the sum laws), the smooth mechanisms are run on the
fine grid 2⁻³⁰ (:data:`FINE_GRID`); each test says why the rounding it sees is negligible.

The smooth variants release eree's correction S = max(αx_V, 1) (docs/errata.md); their
laws are checked with it and as printed (S* = αx_V, ``as_printed``, for Figure 1 only).
"""

import functools
import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.interpolate import PchipInterpolator

from eree.errors import PrivacyParameterError
from eree.mechanisms.er_ee import log_laplace, smooth_gamma, smooth_laplace
from eree.mechanisms.noise import SeededNoise
from eree.mechanisms.samplers import smooth_gamma_cdf, smooth_gamma_density
from eree.mechanisms.workshop import (
    workshop_log_laplace,
    workshop_log_laplace_expectation,
    workshop_smooth_gamma,
    workshop_smooth_gamma_scale,
    workshop_smooth_laplace,
)
from eree.privacy.blowfish import (
    check_workshop_log_laplace,
    check_workshop_smooth_gamma,
    check_workshop_smooth_laplace,
    workshop_smooth_laplace_delta_min,
)
from eree.privacy.er_ee_conditions import smooth_gamma_epsilons
from tests.stats import assert_detects, assert_ks, assert_mean, ks_matches, mean_matches

N = 20_000
#: a grid fine enough for the unrounded laws: |rounding| ≤ 2⁻³¹ ≈ 4.7e-10
FINE_GRID = 2.0**-30


def rounded_cdf(cdf):
    """CDF of round(X) + U on the grid 1, U ~ U(−½, ½) independent, X of CDF ``cdf``.

    For y in [k − ½, k + ½): P(R + U ≤ y) = P(R ≤ k − 1) + P(R = k)·(y − k + ½)
    = F(k − ½) + (F(k + ½) − F(k − ½))·(y − k + ½): continuous, so the KS test applies.
    """

    def g(y):
        y = np.asarray(y, dtype=float)
        k = np.floor(y + 0.5)
        lo, hi = cdf(k - 0.5), cdf(k + 0.5)
        return lo + (hi - lo) * (y - (k - 0.5))

    return g


def jittered(err, seed):
    """err + U(−½, ½), for integer errors on the grid 1 (CDF :func:`rounded_cdf`)."""
    # a stream of its own: default_rng(seed) would repeat SeededNoise(seed)'s words
    return err + np.random.default_rng([seed, 0x5EED]).uniform(-0.5, 0.5, size=np.shape(err))


def test_rounded_cdf_helper_against_direct_sums():
    cdf = stats.laplace(scale=0.8).cdf
    k = np.arange(-50, 51, dtype=float)
    p = cdf(k + 0.5) - cdf(k - 0.5)  # P(round(X) = k)
    # at the cell centres: P(R < k) + P(R = k)/2
    np.testing.assert_allclose(rounded_cdf(cdf)(k), np.cumsum(p) - p / 2, atol=1e-12)


@pytest.fixture(scope="module")
def cells():
    rng = np.random.default_rng(2016)
    n = rng.integers(0, 5000, size=N).astype(float)
    x_v = np.floor(n * rng.uniform(0.0, 1.0, size=N))
    x_v = np.maximum(x_v, np.minimum(n, 1))
    x_v[: N // 10] = 0.0  # cells with no matching worker in any establishment
    n[: N // 10] = 0.0
    return n, x_v


# ------------------------------------------------------------------ Log-Laplace (Alg 1)


@pytest.mark.parametrize("alpha,eps,additive", [(0.1, 1.0, 1.0), (0.2, 2.0, 3.0), (0.05, 0.5, 2.0)])
def test_log_laplace_law_is_laplace_on_log_scale_with_gamma_delta_over_alpha(alpha, eps, additive):
    rng = np.random.default_rng(7)
    n = rng.integers(0, 60, size=N).astype(float)  # small counts: γ matters
    out = workshop_log_laplace(n, alpha, eps, SeededNoise(11), additive=additive)
    gamma, lam = additive / alpha, 2 * math.log1p(alpha) / eps
    # ~ Lap(λ) rounded on the log-space grid 2⁻²⁰: the rounding moves η by ≤ 2⁻²¹ and each
    # CDF value by ≤ 2⁻²¹/(2λ) < 1.4e-6 (λ ≥ 0.18), against a KS critical value ≈ 0.016
    eta = np.log(out.noisy + gamma) - np.log(n + gamma)

    def check(s):
        return ks_matches(s, stats.laplace(scale=lam).cdf)

    assert check(eta)
    assert_detects(check, 1.3 * eta)
    assert_detects(check, 0.7 * eta)
    # γ = Δ/α, not 1/α: the pivot with the SIGMOD γ is not Laplace
    if additive != 1:
        g1 = 1 / alpha
        ok = out.noisy + g1 > 0
        assert not check(np.log(out.noisy[ok] + g1) - np.log(n[ok] + g1))


@pytest.mark.parametrize("alpha,eps,additive", [(0.1, 1.0, 1.0), (0.2, 2.0, 3.0)])
def test_log_laplace_expectation_lemma_5_2_and_unbiased_estimate(cells, alpha, eps, additive):
    n, _ = cells
    gamma, lam = additive / alpha, 2 * math.log1p(alpha) / eps
    assert lam < 0.25
    out = workshop_log_laplace(n, alpha, eps, SeededNoise(5), additive=additive)
    # e^η: mean 1/(1−λ²); the log-space grid 2⁻²⁰ moves each ratio by a factor within
    # e^{±2⁻²¹}, its mean by < 5e-7 against a standard error > 1e-3
    ratio = (out.noisy + gamma) / (n + gamma)
    mean = 1 / (1 - lam**2)
    sd = math.sqrt(1 / (1 - 4 * lam**2) - mean**2)
    assert np.allclose(
        workshop_log_laplace_expectation(n, alpha, eps, additive), (n + gamma) * mean - gamma
    )

    def check(s):
        return mean_matches(s, mean, sd)

    assert check(ratio)
    log_r = np.log(ratio)
    assert_detects(check, np.exp(1.3 * log_r))
    assert_detects(check, np.exp(0.7 * log_r))
    assert_mean((out.estimate - n) / (n + gamma), 0.0, sd * (1 - lam**2))


def test_log_laplace_with_delta_one_is_the_sigmod_mechanism(cells):
    n, _ = cells
    a = workshop_log_laplace(n, 0.1, 1.0, SeededNoise(3))
    b = log_laplace(n, 0.1, 1.0, SeededNoise(3))
    assert np.array_equal(a.noisy, b.noisy) and np.array_equal(a.estimate, b.estimate)
    assert np.allclose(a.ci_low, b.ci_low) and np.allclose(a.std, b.std)


def test_log_laplace_ci_coverage(cells):
    n, _ = cells
    out = workshop_log_laplace(n, 0.1, 1.0, SeededNoise(6), additive=2.0, confidence=0.9)
    # the pivot's interval widened by half the log-space grid covers when |η + δ| ≤ q + r/2
    # (δ the rounding, |δ| ≤ r/2): probability in [0.9, 0.9 + 2f(q)r], f(q) = 0.1/(2λ),
    # i.e. 0.9 to within 6e-7 (r = 2⁻²⁰, λ = 2 ln 1.1)
    covered = (out.ci_low <= n) & (n <= out.ci_high)
    assert_mean(covered.astype(float), 0.9, math.sqrt(0.09))


def test_log_laplace_refuses_unbounded_expectation_unless_forced():
    with pytest.raises(PrivacyParameterError, match=r"Lemma 5\.2"):
        workshop_log_laplace(np.array([1.0]), 0.2, 0.3, SeededNoise(1))
    out = workshop_log_laplace(np.array([10.0]), 0.2, 0.3, SeededNoise(1), force=True)
    assert out.std is None
    assert np.isinf(workshop_log_laplace_expectation(np.array([1.0]), 0.2, 0.3)).all()


# ------------------------------------------------------------------ Smooth Laplace (Alg 2)


def _lap_sum_cdf(z, b1, b2):
    """CDF of Lap(b1) + Lap(b2) (b1, b2 >= 0), elementwise."""
    z, b1, b2 = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (z, b1, b2)))
    a = np.abs(z)
    out = np.empty_like(a)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tail_distinct = (b1**2 * np.exp(-a / b1) - b2**2 * np.exp(-a / b2)) / (2 * (b1**2 - b2**2))
        b = np.maximum(b1, b2)
        tail_equal = np.exp(-a / b) * (2 * b + a) / (4 * b)
    close = np.abs(b1 - b2) <= 1e-9 * np.maximum(b1, b2)
    zero1, zero2 = b1 == 0, b2 == 0
    tail = np.where(close, tail_equal, tail_distinct)
    tail = np.where(zero1, 0.5 * np.exp(-a / np.where(zero1, b2, 1.0)), tail)
    tail = np.where(zero2 & ~zero1, 0.5 * np.exp(-a / np.where(zero2, b1, 1.0)), tail)
    out = np.where(z >= 0, 1 - tail, tail)
    return out


def _lap_pdf(t, b):
    return math.exp(-abs(t) / b) / (2 * b)


def _lap_cdf(t, b):
    return 0.5 * math.exp(t / b) if t < 0 else 1 - 0.5 * math.exp(-t / b)


def test_lap_sum_cdf_helper_matches_numerical_convolution():
    for b1, b2, z in [(1.0, 2.0, 0.7), (3.0, 3.0, -2.0), (0.0, 1.5, 1.0), (0.5, 4.0, -6.0)]:
        if b1 == 0:
            num = _lap_cdf(z, b2)
        else:
            num = integrate.quad(
                lambda t, b1=b1, b2=b2, z=z: _lap_pdf(t, b2) * _lap_cdf(z - t, b1),
                -np.inf, np.inf, points=None, limit=400,
            )[0]  # fmt: skip
        assert math.isclose(float(_lap_sum_cdf(z, b1, b2)), num, abs_tol=1e-7)


def _smooth_sensitivity(alpha, x_v, as_printed):
    """S = max(αx_V, 1) (eree's correction, docs/errata.md); as printed S* = αx_V."""
    return alpha * x_v if as_printed else np.maximum(alpha * x_v, 1.0)


@pytest.mark.parametrize("as_printed", [False, True], ids=["corrected", "printed"])
@pytest.mark.parametrize("alpha,eps", [(0.1, 1.0), (0.01, 0.25), (0.2, 4.0)])
def test_smooth_laplace_law_pit(cells, alpha, eps, as_printed):
    """ñ − n = (S/(ε/2))·η + η′: the probability-integral transform is uniform."""
    n, x_v = cells
    # the unrounded law: on FINE_GRID each PIT value moves by ≤ 2⁻³¹ times the density,
    # ≤ ε/2 ≤ 2 (η′ alone), i.e. < 1e-9, against a KS critical value ≈ 0.016
    out = workshop_smooth_laplace(n, x_v, alpha, eps, SeededNoise(21), grid=FINE_GRID,
                                  as_printed=as_printed)  # fmt: skip
    err = out.noisy - n
    b1 = 2 * _smooth_sensitivity(alpha, x_v, as_printed) / eps  # Alg 2: S/(ε/2)
    b2 = 1 / eps

    def check(s, b1=b1, b2=b2):
        return ks_matches(_lap_sum_cdf(s, b1, b2), stats.uniform.cdf)

    assert check(err)
    assert_detects(check, 1.3 * err)
    assert_detects(check, 0.7 * err)
    # a 30% error in the smooth term alone is detected too
    assert not check(err, 1.3 * b1, b2) and not check(err, 0.7 * b1, b2)
    if as_printed:  # the SIGMOD scale 2·max(αx_V, 1)/ε (and no η′) is a different law
        # (with the correction the two differ by η′ alone, at most 1/5 of the variance, too
        # little for the KS test on these cells)
        assert not check(err, 2 * np.maximum(alpha * x_v, 1) / eps, 0.0)
    # the other reading of S is a different law (they differ where αx_V < 1)
    assert not check(err, 2 * _smooth_sensitivity(alpha, x_v, not as_printed) / eps, b2)
    assert_mean(err / np.sqrt(2 * b1**2 + 2 * b2**2), 0.0, 1.0)  # unbiased
    assert out.std is None and out.ci_low is None


@pytest.mark.parametrize("as_printed", [False, True], ids=["corrected", "printed"])
def test_smooth_laplace_cells_with_no_worker(cells, as_printed):
    """As published (grid 1, n = 0 there) at x_V = 0: as printed S* = 0, so round(η′) with
    η′ ~ Lap(1/ε) alone; with eree's correction S = 1, so round((2/ε)η + η′)."""
    n, x_v = cells
    none = x_v == 0
    eps = 1.0
    b1 = 0.0 if as_printed else 2.0 / eps
    cdf = rounded_cdf(lambda y: _lap_sum_cdf(y, b1, 1 / eps))
    out = workshop_smooth_laplace(n, x_v, 0.1, eps, SeededNoise(4), as_printed=as_printed)
    z = out.noisy[none] - n[none]
    assert z.size >= 1000
    assert np.all(z == np.round(z))
    assert_ks(jittered(z, 1), cdf)
    # power: the noise with a 30% larger scale (ε/1.3) is rejected
    wrong = workshop_smooth_laplace(n, x_v, 0.1, eps / 1.3, SeededNoise(5), as_printed=as_printed)
    assert_detects(lambda s: ks_matches(s, cdf), jittered(wrong.noisy[none] - n[none], 2))
    # the other reading of S is a different law
    other = rounded_cdf(lambda y: _lap_sum_cdf(y, 2.0 / eps - b1, 1 / eps))
    assert not ks_matches(jittered(z, 1), other)


# ------------------------------------------------------------------ Smooth Gamma (Alg 3)


@functools.lru_cache(maxsize=32)
def _gamma_sum_cdf(b, eps):
    """CDF of b·Z + Lap(1/ε), Z ~ (√2/π)/(1+z⁴), by numerical convolution (interpolated).

    F(z) = ½ ∫₀^∞ ε e^{−εu} [F_Z((z−u)/b) + F_Z((z+u)/b)] du (Simpson's rule on a fine grid).
    """
    if b == 0:
        return stats.laplace(scale=1 / eps).cdf
    hi = 60 * (b + 1 / eps)
    grid = np.concatenate([-np.geomspace(hi, 1e-3, 250), [0.0], np.geomspace(1e-3, hi, 250)])
    u = np.linspace(0.0, 50 / eps, 4_001)
    w = eps * np.exp(-eps * u)
    zz = grid[:, None]
    g = 0.5 * (smooth_gamma_cdf((zz - u) / b) + smooth_gamma_cdf((zz + u) / b))
    spline = PchipInterpolator(grid, integrate.simpson(g * w, x=u, axis=1))

    def cdf(x):
        x = np.asarray(x, dtype=float)
        # beyond the grid the Z tail dominates: F ≈ F_Z(x/b)
        return np.where(np.abs(x) > hi, smooth_gamma_cdf(x / b), spline(np.clip(x, -hi, hi)))

    return cdf


def test_gamma_sum_cdf_helper_matches_quadrature():
    for b, eps, z in [(1.6, 1.0, 0.5), (16.0, 1.0, -20.0)]:

        def f(t, b=b, z=z, eps=eps):
            return _lap_pdf(t, 1 / eps) * float(smooth_gamma_cdf(np.array((z - t) / b)))

        num = integrate.quad(f, -40 / eps, 40 / eps, points=[0.0, z], limit=400)[0]
        assert math.isclose(float(_gamma_sum_cdf(b, eps)(z)), num, abs_tol=1e-5)


@pytest.mark.parametrize("as_printed", [False, True], ids=["corrected", "printed"])
@pytest.mark.parametrize("alpha,eps", [(0.1, 1.0), (0.2, 2.0)])
def test_smooth_gamma_law_per_sensitivity_group(alpha, eps, as_printed):
    """ñ − n = (S/(ε/16))·η + η′ with η of density ∝ 1/(1+|z|⁴), for several x_V."""
    groups = (0, 1, 4, 40)
    m = 4000
    x_v = np.repeat(np.array(groups, dtype=float), m)
    n = x_v * 3
    # the unrounded law: on FINE_GRID each CDF value moves by ≤ 2⁻³¹ times the density
    # (≤ ε/2 ≤ 1), < 1e-9, against a KS critical value ≈ 0.035 (m = 4000)
    out = workshop_smooth_gamma(n, x_v, alpha, eps, SeededNoise(31), grid=FINE_GRID,
                                as_printed=as_printed)  # fmt: skip
    err = out.noisy - n
    # the printed scale helper: S*/(ε/16), S* = αx_V
    assert np.allclose(workshop_smooth_gamma_scale(x_v, alpha, eps), 16 * alpha * x_v / eps)
    for i, g in enumerate(groups):
        e = err[i * m : (i + 1) * m]
        b = 16 * float(_smooth_sensitivity(alpha, g, as_printed)) / eps
        cdf = _gamma_sum_cdf(b, eps)

        def check(s, cdf=cdf):
            return ks_matches(s, cdf)

        assert check(e), f"x_V = {g}"
        assert_detects(check, 1.3 * e)
        assert_detects(check, 0.7 * e)
        if g == 40:  # a 30% error in the smooth term alone
            assert not ks_matches(e, _gamma_sum_cdf(1.3 * b, eps))
        if g == 0:  # the other reading of S: b = 0 (printed) against 16/ε (corrected)
            assert not ks_matches(e, _gamma_sum_cdf(16 / eps - b, eps))
    assert out.std is None


def test_smooth_gamma_noise_is_the_normalised_1_over_1_plus_z4(cells):
    """Large-x_V cells: the smooth term dominates; |ñ−n|/scale has mean ≈ E|Z| = 1/√2."""
    # (Lemma G of the workshop quotes the unnormalised integral π/√2 ≈ 2.2 as the variance)
    mass = integrate.quad(smooth_gamma_density, -np.inf, np.inf)[0]
    assert math.isclose(mass, 1.0, rel_tol=1e-9)
    n, x_v = cells
    big = x_v >= 1000
    alpha, eps = 0.1, 1.0
    out = workshop_smooth_gamma(n, x_v, alpha, eps, SeededNoise(8), grid=FINE_GRID)
    scale = 16 * alpha * x_v[big] / eps  # Alg 3: αx/(ε/16)
    # = Z + Lap(1/ε)/scale, scale >= 1600 (+ the rounding on FINE_GRID, < 3e-13 here)
    z = (out.noisy[big] - n[big]) / scale
    assert_mean(z, 0.0, 1.0)  # unbiased, Var Z = 1

    def check(s):
        return ks_matches(s, smooth_gamma_cdf)

    assert check(z)
    assert_detects(check, 1.3 * z)
    assert_detects(check, 0.7 * z)


def test_workshop_and_sigmod_smooth_gamma_differ_in_scale(cells):
    n, x_v = cells
    alpha, eps = 0.1, 1.0
    eps1 = eps - 5 * math.log(1 + alpha)  # SIGMOD Alg 2
    big = x_v >= 1000
    # the papers' unrounded laws (FINE_GRID: |rounding| ≤ 2⁻³¹)
    w = workshop_smooth_gamma(n, x_v, alpha, eps, SeededNoise(9), grid=FINE_GRID).noisy - n
    s = smooth_gamma(n, x_v, alpha, eps, SeededNoise(9), grid=FINE_GRID).noisy - n
    w, s = w[big], s[big]
    # E|err| ≈ scale/√2: workshop 16αx/ε vs SIGMOD 5αx/ε₁
    mw = np.mean(np.abs(w) / (16 * alpha * x_v[big] / eps))
    ms = np.mean(np.abs(s) / (5 * alpha * x_v[big] / eps1))
    for m in (mw, ms):
        assert abs(m - 1 / math.sqrt(2)) < 4 * math.sqrt(0.5 / big.sum()) + 1e-3
    sl_w = workshop_smooth_laplace(n, x_v, alpha, eps, SeededNoise(2)).noisy - n
    sl_s = smooth_laplace(n, x_v, alpha, eps, SeededNoise(2)).noisy - n
    assert not np.allclose(sl_w, sl_s)


# ------------------------------------------------------------------ parameter conditions


@pytest.mark.parametrize(
    "alpha,eps,ok",
    [
        (0.1, 0.38, False),  # 4 ln 1.1 = 0.3812
        (0.1, 0.39, True),  # refused by SIGMOD's α+1 < e^{ε/5} (needs 0.477)
        (0.2, 0.72, False),  # 4 ln 1.2 = 0.7293
        (0.2, 0.73, True),
        (0.01, 0.25, True),
        (0.15, 0.5, False),
        (0.15, 0.67, True),
    ],
)
def test_smooth_gamma_condition_matrix(alpha, eps, ok):
    if ok:
        assert check_workshop_smooth_gamma(alpha, eps) == pytest.approx(eps / 4)
        workshop_smooth_gamma(np.array([5.0]), np.array([5.0]), alpha, eps, SeededNoise(1))
    else:
        with pytest.raises(PrivacyParameterError, match=r"alpha \+ 1 <= e\^\(epsilon/4\)"):
            workshop_smooth_gamma(np.array([5.0]), np.array([5.0]), alpha, eps, SeededNoise(1))
    assert ok == (alpha + 1 <= math.exp(eps / 4))


def test_smooth_gamma_boundary_is_allowed():
    # α+1 <= e^{ε/4} is not strict (Lemma 5.5 needs e^β >= 1+α)
    assert check_workshop_smooth_gamma(0.1, 4 * math.log(1.1)) == pytest.approx(math.log(1.1))
    with pytest.raises(PrivacyParameterError):
        smooth_gamma_epsilons(0.1, 5 * math.log(1.1))  # SIGMOD's is strict


@pytest.mark.parametrize(
    "alpha,eps,delta,ok",
    [
        (0.1, 1.0, None, True),  # δ_min = e^{-1/(2 ln 1.1)} ≈ 5.27e-3
        (0.1, 1.0, 1e-6, False),
        (0.1, 1.0, 0.01, True),
        (0.2, 0.25, 0.5, False),  # δ_min ≈ 0.504
        (0.2, 0.25, 0.51, True),
        (0.01, 0.25, 1e-6, False),  # δ_min = e^{-0.25/(2 ln 1.01)} ≈ 3.5e-6
        (0.01, 0.25, 1e-5, True),
    ],
)
def test_smooth_laplace_condition_matrix(alpha, eps, delta, ok):
    dmin = workshop_smooth_laplace_delta_min(alpha, eps)
    d = dmin if delta is None else delta
    assert ok == (alpha + 1 <= math.exp(eps / (2 * math.log(1 / d))) * (1 + 1e-12))
    if ok:
        assert check_workshop_smooth_laplace(alpha, eps, delta) == d
    else:
        with pytest.raises(PrivacyParameterError, match=r"e\^\(epsilon/\(2 ln\(1/delta\)\)\)"):
            workshop_smooth_laplace(np.array([1.0]), np.array([1.0]), alpha, eps, SeededNoise(1),
                                    delta=delta)  # fmt: skip


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: check_workshop_smooth_laplace(0.1, 1.0, 0.0), r"delta must lie in \(0, 1\)"),
        (lambda: check_workshop_smooth_laplace(0.1, 1.0, 1.0), r"delta must lie in \(0, 1\)"),
        (lambda: check_workshop_smooth_gamma(0.0, 1.0), "alpha must be"),
        (lambda: check_workshop_smooth_gamma(0.1, -1.0), "epsilon must be"),
        (lambda: check_workshop_log_laplace(0.1, 1.0, 0.5), "Delta >= 1"),
        (lambda: check_workshop_log_laplace(0.1, 1.0, float("nan")), "Delta >= 1"),
        (lambda: check_workshop_log_laplace(0.2, 0.3), "lambda"),
        (lambda: check_workshop_log_laplace(float("inf"), 1.0), "alpha must be"),
    ],
)
def test_invalid_parameters(call, match):
    with pytest.raises(PrivacyParameterError, match=match):
        call()


def test_log_laplace_returns_gamma_and_lambda():
    gamma, lam = check_workshop_log_laplace(0.1, 1.0, 2.0)
    assert gamma == pytest.approx(20.0) and lam == pytest.approx(2 * math.log(1.1))
    # just below λ = 1 is allowed
    eps = 2 * math.log(1.2) * 1.0001
    assert check_workshop_log_laplace(0.2, eps)[1] < 1
