"""ER-EE mechanisms over thousands of independent cells, against the paper's formulas.

Each statistical test also proves its power: the same check fails when the noise scale
is off by 30%.

Published values are the mechanisms' outputs rounded to a public grid (docs/privacy.md):
1 for Smooth Laplace's and Smooth Gamma's counts, 2⁻²⁰ in Log-Laplace's log space. The
tests state the papers' unrounded laws, so the smooth mechanisms run on the fine grid 2⁻³⁰
(:data:`FINE_GRID`; on the grid 1 the rounding is not negligible where the scale is
near 1), and each Log-Laplace test says why the log-space rounding is negligible.
"""

import math

import numpy as np
import pytest

from eree.errors import PrivacyParameterError
from eree.mechanisms.er_ee import (
    log_laplace,
    log_laplace_expectation,
    smooth_gamma,
    smooth_laplace,
)
from eree.mechanisms.noise import SeededNoise
from eree.privacy.er_ee_conditions import (
    check_log_laplace,
    check_smooth_laplace,
    smooth_gamma_epsilons,
    smooth_laplace_delta_min,
)
from tests.stats import assert_detects, assert_mean, mean_matches

N = 20_000
#: a grid fine enough for the unrounded laws: |rounding| ≤ 2⁻³¹ ≈ 4.7e-10, i.e. < 1e-9 of
#: the smallest noise scale here (2/ε = 0.5), far below every tolerance
FINE_GRID = 2.0**-30


@pytest.fixture(scope="module")
def cells():
    rng = np.random.default_rng(2017)
    n = rng.integers(0, 5000, size=N).astype(float)
    # x_v: largest single-establishment contribution, between min(n,1) and n
    x_v = np.floor(n * rng.uniform(0.0, 1.0, size=N))
    x_v = np.maximum(x_v, np.minimum(n, 1))
    return n, x_v


# ------------------------------------------------------------------ Smooth Laplace


@pytest.mark.parametrize("alpha,eps", [(0.1, 1.0), (0.01, 0.25), (0.2, 4.0)])
def test_smooth_laplace_mean_abs_error_is_2s_over_eps(cells, alpha, eps):
    n, x_v = cells
    out = smooth_laplace(n, x_v, alpha, eps, SeededNoise(1), delta=0.05 if alpha != 0.2 else None,
                         grid=FINE_GRID)  # fmt: skip
    scale = 2 * np.maximum(alpha * x_v, 1.0) / eps  # E|err| = 2S/ε (Lemma 9.3)
    r = np.abs(out.noisy - n) / scale  # |Lap(1)| ~ Exp(1): mean 1, sd 1

    def check(s):
        return mean_matches(s, 1.0, 1.0)

    assert check(r)
    assert_detects(check, 1.3 * r)
    assert_detects(check, 0.7 * r)
    assert_mean(out.noisy - n, 0.0, math.sqrt(2) * 1.0 * scale.mean())  # unbiased (loose sd)
    assert out.std is None and out.ci_low is None and out.ci_high is None


def test_smooth_laplace_unbiased(cells):
    n, x_v = cells
    out = smooth_laplace(n, x_v, 0.1, 1.0, SeededNoise(2), grid=FINE_GRID)
    z = (out.noisy - n) / (2 * np.maximum(0.1 * x_v, 1.0) / 1.0)
    assert_mean(z, 0.0, math.sqrt(2))


# ------------------------------------------------------------------ Smooth Gamma


@pytest.mark.parametrize("alpha,eps", [(0.1, 1.0), (0.05, 0.67), (0.2, 2.0)])
def test_smooth_gamma_scale_variance_and_mean_abs(cells, alpha, eps):
    n, x_v = cells
    eps1 = eps - 5 * math.log(1 + alpha)  # Alg 2: ε₁ = ε − 5 ln(1+α)
    out = smooth_gamma(n, x_v, alpha, eps, SeededNoise(3), grid=FINE_GRID)
    scale = 5 * np.maximum(alpha * x_v, 1.0) / eps1  # sd = 5S/ε₁
    z = (out.noisy - n) / scale

    # E|err| = 5S/(ε₁√2): |Z| has mean 1/√2, sd 1/√2
    def check(s):
        return mean_matches(np.abs(s), 1 / math.sqrt(2), 1 / math.sqrt(2))

    assert check(z)
    assert_detects(check, 1.3 * z)
    assert_detects(check, 0.7 * z)
    assert_mean(z, 0.0, 1.0)  # unbiased, Var Z = 1
    assert out.std is None


def test_smooth_gamma_variance_is_scale_squared(cells):
    # Var = (5S/ε₁)²: the truncated second moment (finite variance) against its exact value
    from scipy import integrate

    from eree.mechanisms.samplers import smooth_gamma_density

    n, x_v = cells
    alpha, eps = 0.1, 1.0
    eps1 = eps - 5 * math.log(1 + alpha)  # Alg 2: ε₁ = ε − 5 ln(1+α)
    scale = 5 * np.maximum(alpha * x_v, 1.0) / eps1
    z = (smooth_gamma(n, x_v, alpha, eps, SeededNoise(4), grid=FINE_GRID).noisy - n) / scale
    c = 30.0
    m2 = integrate.quad(lambda t: t * t * smooth_gamma_density(t), -c, c)[0]
    m4 = integrate.quad(lambda t: t**4 * smooth_gamma_density(t), -c, c)[0]
    sd = math.sqrt(m4 - m2 * m2)

    def check(s):
        return mean_matches(np.where(np.abs(s) <= c, s * s, 0.0), m2, sd)

    assert check(z)
    assert_detects(check, 1.3 * z)
    assert_detects(check, 0.7 * z)


# ------------------------------------------------------------------ Log-Laplace


@pytest.mark.parametrize("alpha,eps", [(0.1, 1.0), (0.2, 2.0), (0.05, 0.5)])
def test_log_laplace_expectation_lemma_8_2(cells, alpha, eps):
    n, _ = cells
    gamma = 1 / alpha
    lam = 2 * math.log1p(alpha) / eps
    assert lam < 0.25  # the ratio e^η then has a finite fourth moment
    out = log_laplace(n, alpha, eps, SeededNoise(5))
    # (ñ+γ)/(n+γ) = e^η: E = 1/(1-λ²), Var = 1/(1-4λ²) - 1/(1-λ²)²; the log-space grid
    # 2⁻²⁰ moves each ratio by a factor within e^{±2⁻²¹}, the mean by < 5e-7 against a
    # standard error > 1e-3
    ratio = (out.noisy + gamma) / (n + gamma)
    mean = 1 / (1 - lam**2)
    sd = math.sqrt(1 / (1 - 4 * lam**2) - mean**2)
    assert np.allclose(log_laplace_expectation(n, alpha, eps), (n + gamma) * mean - gamma)

    def check(s):
        return mean_matches(s, mean, sd)

    assert check(ratio)
    # a 30% error in λ: e^{1.3η} (and e^{0.7η}) have other means
    log_r = np.log(ratio)
    assert_detects(check, np.exp(1.3 * log_r))
    assert_detects(check, np.exp(0.7 * log_r))
    # the published estimate is the bias-corrected n̂, unbiased for n
    assert_mean((out.estimate - n) / (n + gamma), 0.0, sd * (1 - lam**2))


def test_log_laplace_ci_coverage_and_std(cells):
    n, _ = cells
    alpha, eps = 0.1, 1.0
    out = log_laplace(n, alpha, eps, SeededNoise(6), confidence=0.9)
    covered = (out.ci_low <= n) & (n <= out.ci_high)
    # coverage is 0.9 by construction: the pivot's interval, widened by half the log-space
    # grid r = 2⁻²⁰, covers when |η + δ| ≤ q + r/2 (|δ| ≤ r/2 the rounding), probability in
    # [0.9, 0.9 + 2f(q)r] with f(q) = 0.1/(2λ): within 6e-7 of 0.9; binomial sd sqrt(.09/N)
    assert_mean(covered.astype(float), 0.9, math.sqrt(0.9 * 0.1))
    lam = 2 * math.log1p(alpha) / eps
    true_sd = (n + 1 / alpha) * math.sqrt((1 - lam**2) ** 2 / (1 - 4 * lam**2) - 1)
    # the plug-in std is close to the true sd on average (it uses n̂ in place of n)
    assert abs(np.median(out.std / true_sd) - 1) < 0.05


def test_log_laplace_refuses_lambda_at_least_one_unless_forced():
    with pytest.raises(PrivacyParameterError, match="lambda"):
        check_log_laplace(0.2, 0.3)
    assert check_log_laplace(0.2, 0.3, force=True) > 1
    out = log_laplace(np.array([10.0]), 0.2, 0.3, SeededNoise(1), force=True)
    assert out.std is None  # infinite variance: nothing published


# ------------------------------------------------------------------ parameter matrix


@pytest.mark.parametrize(
    "alpha,eps,delta,match",
    [
        (0.1, 0.4, None, r"alpha \+ 1 < e\^\(epsilon/5\)"),  # 5 ln 1.1 = 0.477 > 0.4
        (0.2, 0.9, None, r"alpha \+ 1 < e\^\(epsilon/5\)"),  # 5 ln 1.2 = 0.912
        (0.0, 1.0, None, "alpha must be"),
        (-0.1, 1.0, None, "alpha must be"),
        (0.1, 0.0, None, "epsilon must be"),
        (0.1, float("inf"), None, "epsilon must be"),
    ],
)
def test_smooth_gamma_invalid_parameters(alpha, eps, delta, match):
    with pytest.raises(PrivacyParameterError, match=match):
        smooth_gamma_epsilons(alpha, eps)


@pytest.mark.parametrize(
    "alpha,eps,delta,match",
    [
        (0.1, 1.0, 1e-6, "delta >= delta_min"),  # δ_min = e^{-1/(2 ln 1.1)} ≈ 5.3e-3
        (0.2, 0.25, 0.5, "delta >= delta_min"),  # δ_min ≈ 0.504
        (0.1, 1.0, 0.0, r"delta must lie in \(0, 1\)"),
        (0.1, 1.0, 1.0, r"delta must lie in \(0, 1\)"),
        (0.1, -1.0, 0.1, "epsilon must be"),
    ],
)
def test_smooth_laplace_invalid_parameters(alpha, eps, delta, match):
    with pytest.raises(PrivacyParameterError, match=match):
        check_smooth_laplace(alpha, eps, delta)


def test_smooth_laplace_delta_min_is_default_and_boundary_is_allowed():
    dmin = smooth_laplace_delta_min(0.1, 1.0)
    assert math.isclose(dmin, math.exp(-1.0 / (2 * math.log(1.1))))
    assert math.isclose(dmin, 0.005268, rel_tol=1e-3)
    assert check_smooth_laplace(0.1, 1.0, None) == dmin
    assert check_smooth_laplace(0.1, 1.0, dmin) == dmin
    # the condition ln(1+α) ≤ ε/(2 ln(1/δ)) holds with equality at δ_min
    assert math.isclose(math.log(1.1), 1.0 / (2 * math.log(1 / dmin)))


def test_smooth_gamma_boundary_is_refused():
    # α+1 < e^{ε/5} is strict: ε = 5 ln(1+α) exactly is refused
    with pytest.raises(PrivacyParameterError):
        smooth_gamma_epsilons(0.1, 5 * math.log(1.1))


def test_variance_floors_are_the_noise_variance_at_the_smallest_sensitivity():
    # a public post-processing weight: Var at S = max(α·x_v, 1) = 1 (Algs 2, 3)
    from eree.mechanisms.er_ee import SmoothGamma, SmoothLaplace

    a, eps = 0.1, 2.0
    sl = SmoothLaplace(query="q", alpha=a, epsilon=eps)
    assert sl.variance_floor() == pytest.approx(2 * (2 / eps) ** 2)  # Var Lap(b) = 2b²
    sg = SmoothGamma(query="q", alpha=a, epsilon=eps)
    assert sg.variance_floor() == pytest.approx((5 / (eps - 5 * math.log(1 + a))) ** 2)
