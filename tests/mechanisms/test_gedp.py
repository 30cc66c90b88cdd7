"""GEDP mechanisms (Webb et al. §6): Estab-Gaussian, ψ-mechanism, pnc.

Statistical checks use fixed seeds and tolerances from the sample size; each proves its
power on a 30% error in the noise scale. Privacy checks pin the noise: when the mechanism's
noisy answers are the same, everything published must be the same whatever the
confidential values (DESIGN.md §4.4).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from numpy.typing import ArrayLike
from scipy.special import log_ndtr, ndtr, ndtri
from scipy.stats import norm

from eree.errors import PrivacyParameterError
from eree.mechanisms.base import Measurement
from eree.mechanisms.estimators import sqrt_true_variance, sqrt_variance_estimate
from eree.mechanisms.gedp import (
    estab_gaussian,
    pnc_mechanism,
    pnc_sensitivity,
    pnc_tau_hat,
    pnc_upper_bounds,
    psi_mechanism,
)
from eree.mechanisms.noise import FloatArray, NoiseSource, SeededNoise
from eree.privacy.neighbors import DPNeighbor, LogShift, SqrtShift, combine
from tests.stats import Z_CRIT, assert_detects, assert_ks, ks_matches


class PinnedNoise(NoiseSource):
    """Returns fixed noisy answers whatever the true values and scale.

    Whatever a mechanism publishes must then be the same for two datasets that differ
    only in their confidential values.
    """

    mode = "seeded"

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.seed = seed
        self.calls = 0

    def uniform(self, size: int) -> FloatArray:  # pragma: no cover - never used
        raise AssertionError("mechanisms must draw Gaussian noise through add_gaussian")

    def add_gaussian(self, values: ArrayLike, scale: ArrayLike) -> FloatArray:
        self.calls += 1
        shape = np.shape(values)
        return np.random.default_rng([self.seed, self.calls]).normal(5.0, 3.0, size=shape)


@pytest.fixture(scope="module")
def sums() -> np.ndarray:
    return np.random.default_rng(6).integers(0, 5_000, size=20_000).astype(float)


# --------------------------------------------------------------------------------------
# ψ-mechanism
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("f", [SqrtShift(), LogShift(1.0), DPNeighbor()], ids=lambda f: f.kind)
def test_psi_mechanism_noise_is_gaussian_with_sigma_gamma_over_mu(
    f: SqrtShift, sums: np.ndarray
) -> None:
    gamma, mu = 0.5, 0.7
    out = psi_mechanism(sums, f, gamma, mu, SeededNoise(1))
    sigma = gamma / mu  # Def 6.4
    z = (out.noisy - f.psi(sums)) / sigma
    assert_ks(z, norm.cdf)
    wrong = psi_mechanism(sums, f, gamma, mu / 1.3, SeededNoise(2))
    assert_detects(lambda s: ks_matches(s, norm.cdf), (wrong.noisy - f.psi(sums)) / sigma)


def test_psi_mechanism_publishes_only_estimates(sums: np.ndarray) -> None:
    gamma, mu = 0.5, 0.7
    out = psi_mechanism(sums, SqrtShift(), gamma, mu, SeededNoise(3))
    names = {f.name for f in dataclasses.fields(Measurement)}
    assert names == {
        "noisy",
        "estimate",
        "std",
        "ci_low",
        "ci_high",
        "uncertainty_method",
        "variance_kind",
        "mechanism",
        "query",
        "statistic",
        "extra",
    }
    assert set(out.extra) == {"sigma"}  # public
    assert out.variance_kind == "estimated"
    sigma = gamma / mu
    # the published std is a function of the published estimate and σ only …
    assert out.std is not None and out.variance is not None
    np.testing.assert_allclose(out.std**2, sqrt_variance_estimate(out.estimate, sigma))
    # … and is not the (data-dependent) true standard deviation
    true_sd = np.sqrt(sqrt_true_variance(sums, sigma))
    assert not np.allclose(out.std, true_sd)
    assert "true variance" in out.uncertainty_method


@pytest.mark.parametrize(
    "f",
    [SqrtShift(), LogShift(1.0), DPNeighbor(), combine((SqrtShift(), 0.5), (DPNeighbor(), 1.0))],
    ids=lambda f: f.kind,
)
def test_psi_mechanism_output_depends_on_data_only_through_omega(f: SqrtShift) -> None:
    x1 = np.array([0.0, 1.0, 10.0, 500.0, 36_000.0])
    x2 = np.array([7.0, 0.0, 90_000.0, 3.0, 12.0])
    a = psi_mechanism(x1, f, 0.5, 0.7, PinnedNoise(9))
    b = psi_mechanism(x2, f, 0.5, 0.7, PinnedNoise(9))
    for field in ("noisy", "estimate", "std", "ci_low", "ci_high", "variance"):
        va, vb = getattr(a, field), getattr(b, field)
        if va is None:
            assert vb is None
        else:
            np.testing.assert_array_equal(va, vb)


def test_psi_mechanism_rejects_bad_parameters() -> None:
    with pytest.raises(PrivacyParameterError):
        psi_mechanism([1.0], SqrtShift(), 0.5, 0.0, SeededNoise(1))
    with pytest.raises(PrivacyParameterError):
        psi_mechanism([1.0], SqrtShift(), -1.0, 1.0, SeededNoise(1))


# --------------------------------------------------------------------------------------
# Estab-Gaussian
# --------------------------------------------------------------------------------------


def test_estab_gaussian(sums: np.ndarray) -> None:
    delta, mu = DPNeighbor().sensitivity(2.0), 0.5
    out = estab_gaussian(sums, delta, mu, SeededNoise(4))
    sd = delta / mu
    np.testing.assert_array_equal(out.variance, np.full(sums.shape, sd * sd))
    assert out.std is not None
    np.testing.assert_array_equal(out.std, np.full(sums.shape, sd))
    assert_ks((out.noisy - sums) / sd, norm.cdf)
    wrong = estab_gaussian(sums, 1.3 * delta, mu, SeededNoise(5))
    assert_detects(lambda s: ks_matches(s, norm.cdf), (wrong.noisy - sums) / sd)
    with pytest.raises(PrivacyParameterError, match="sensitivity"):
        estab_gaussian(sums, SqrtShift().sensitivity(0.5), mu, SeededNoise(4))


# --------------------------------------------------------------------------------------
# pnc: τ̂, bounds, Δ_ℓ
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "k"), [(1, 1), (20, 2), (25_420, 4), (10_000_000, 4)])
@pytest.mark.parametrize("zeta", [0.01, 0.1])
def test_pnc_tau_hat(n: int, k: int, zeta: float) -> None:
    tau = pnc_tau_hat(zeta, n, k)
    # P(no clipping) = Φ(τ̂)^(k n) = 1 − ζ, computed stably
    assert math.exp(k * n * log_ndtr(tau)) == pytest.approx(1 - zeta, rel=1e-9)
    if k * n < 1000:
        assert tau == pytest.approx(float(ndtri((1 - zeta) ** (1 / (k * n)))), rel=1e-9)
    assert pnc_tau_hat(zeta, n + 1, k) > tau


def test_pnc_tau_hat_errors() -> None:
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(PrivacyParameterError):
            pnc_tau_hat(bad, 10, 1)
    with pytest.raises(PrivacyParameterError):
        pnc_tau_hat(0.01, 0, 1)


def test_pnc_upper_bounds_and_sensitivity() -> None:
    f, gamma, mu, tau = SqrtShift(), 0.5, 0.7, 3.0
    w = np.array([-5.0, -1.0, 0.0, 2.0, 10.0])
    u = pnc_upper_bounds(w, f, gamma, mu, tau)
    arg = w + gamma * tau / mu
    np.testing.assert_allclose(u, np.where(arg < 0, 0.0, arg**2))
    assert u[0] == 0.0  # argument below ψ(0) = 0
    # Δ = u − (√u − γ)² when √u ≥ γ, else u
    us = np.array([0.0, 0.1, 0.25, 1.0, 100.0, 36_000.0])
    expected = np.where(np.sqrt(us) >= gamma, us - (np.sqrt(us) - gamma) ** 2, us)
    np.testing.assert_allclose(pnc_sensitivity(us, f, gamma), expected)
    np.testing.assert_allclose(pnc_sensitivity(us, DPNeighbor(), 2.0), np.minimum(us, 2.0))
    lg = LogShift(1.0)
    np.testing.assert_allclose(
        pnc_sensitivity(us, lg, 0.1), us - np.maximum((us + 1) * math.exp(-0.1) - 1, 0.0)
    )


# --------------------------------------------------------------------------------------
# pnc: the released variance
# --------------------------------------------------------------------------------------


def variance_matches(samples: np.ndarray, var: np.ndarray) -> bool:
    """Per-group sample variance vs the published one: |z| < Z_CRIT with sd σ²√(2/(R−1))."""
    r = samples.shape[0]
    s2 = samples.var(axis=0, ddof=1)
    z = (s2 - var) / (var * math.sqrt(2 / (r - 1)))
    return bool(np.all(np.abs(z) < Z_CRIT))


def test_pnc_published_variance_is_delta_over_mu_squared_and_matches_empirical() -> None:
    f, gamma, mu = SqrtShift(), 0.5, 0.6
    u_star = np.array([0.0, 3.0, 40.0, 900.0, 36_000.0])
    t = np.array([0.0, 5.0, 100.0, 2_000.0, 40_000.0])
    delta = pnc_sensitivity(u_star, f, gamma)
    reps = 20_000
    out = pnc_mechanism(np.tile(t, (reps, 1)), np.tile(delta, (reps, 1)), mu, SeededNoise(12))
    published = out.variance[0]
    np.testing.assert_array_equal(published, (delta / mu) ** 2)
    assert out.std is not None
    np.testing.assert_array_equal(out.std[0], delta / mu)
    assert np.all(out.variance == published)  # the same for every release
    live = delta > 0
    assert variance_matches(out.noisy[:, live], published[live])
    assert np.all(out.noisy[:, ~live] == t[~live])  # Δ = 0: nothing to hide, no noise
    wrong = pnc_mechanism(
        np.tile(t, (reps, 1)), 1.3 * np.tile(delta, (reps, 1)), mu, SeededNoise(13)
    )
    assert not variance_matches(wrong.noisy[:, live], published[live])
    ok = np.abs(out.noisy.mean(axis=0)[live] - t[live]) < Z_CRIT * np.sqrt(published[live] / reps)
    assert np.all(ok)


# --------------------------------------------------------------------------------------
# pnc: clipping probability ≤ ζ on small data
# --------------------------------------------------------------------------------------


def clipping_frequencies(
    zeta: float, k_for_tau: int, reps: int, seed: int
) -> tuple[float, float, float]:
    """Run identity ψ-mechanism + bounds `reps` times on 20 establishments × 2 attributes.

    Returns (frequency of any r_{j,i} > u_{j,i}, frequency of any group's clipped sum
    below its true sum, the exact probability of the first event). A zero value is never
    exceeded (u ≥ 0), so the exact probability is 1 − Φ(τ̂)^m, m = number of non-zero
    values, ≤ 1 − Φ(τ̂)^{k n} = ζ.
    """
    f, gamma, mu_a = SqrtShift(), 0.5, 0.7
    rng = np.random.default_rng(seed)
    n, k = 20, 2
    values = np.vstack([rng.integers(0, 60, size=n), rng.integers(0, 5000, size=n)]).astype(float)
    values[:, :3] = 0.0  # zeros exercise the u = 0 branch
    groups = np.repeat(np.arange(5), 4)
    tau = pnc_tau_hat(zeta, n, k_for_tau)
    source = SeededNoise(seed + 1)
    any_exceed = np.zeros(reps, dtype=bool)
    any_clip = np.zeros(reps, dtype=bool)
    for i in range(k):
        x = np.tile(values[i], (reps, 1))
        out = psi_mechanism(x, f, gamma, mu_a, source)
        u = pnc_upper_bounds(out.noisy, f, gamma, mu_a, tau)
        any_exceed |= np.any(x > u, axis=1)
        for g in range(5):
            m = groups == g
            u_star = u[:, m].max(axis=1, keepdims=True)
            clipped = np.minimum(x[:, m], u_star).sum(axis=1)
            any_clip |= clipped < x[:, m].sum(axis=1)
    exact = 1.0 - float(ndtr(tau)) ** int(np.count_nonzero(values))
    return float(any_exceed.mean()), float(any_clip.mean()), exact


@pytest.mark.parametrize("zeta", [0.1, 0.01])
def test_pnc_clipping_frequency_at_most_zeta(zeta: float) -> None:
    reps = 8_000
    se = math.sqrt(zeta * (1 - zeta) / reps)
    exceed, clip, exact = clipping_frequencies(zeta, 2, reps, seed=int(1 / zeta))
    # Thm 6.7: P(some r_{j,i} > u_{j,i}) = 1 − Φ(τ̂)^m ≤ 1 − Φ(τ̂)^{k n} = ζ
    assert exact <= zeta
    assert abs(exceed - exact) < Z_CRIT * math.sqrt(exact * (1 - exact) / reps)
    # clipping in a released group needs an exceedance: at most ζ
    assert clip <= exceed
    assert clip <= zeta + Z_CRIT * se


def test_pnc_clipping_power_check() -> None:
    """A τ̂ computed for one attribute instead of k_c = 2 is caught."""
    zeta, reps = 0.1, 8_000
    se = math.sqrt(zeta * (1 - zeta) / reps)
    exceed, _, _ = clipping_frequencies(zeta, 1, reps, seed=10)
    assert exceed > zeta + Z_CRIT * se


# --------------------------------------------------------------------------------------
# pnc: nothing published depends on per-establishment values except through ω
# --------------------------------------------------------------------------------------


def test_pnc_publishes_bounds_and_variances_from_noisy_identity_only() -> None:
    f, gamma, mu_a, mu = SqrtShift(), 0.5, 0.7, 0.6
    groups = np.array([0, 0, 1, 1, 1])
    tau = pnc_tau_hat(0.01, 5, 1)

    def release(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ident = psi_mechanism(values, f, gamma, mu_a, PinnedNoise(3))
        u = pnc_upper_bounds(ident.noisy, f, gamma, mu_a, tau)
        u_star = np.array([u[groups == g].max() for g in (0, 1)])
        t = np.array([np.minimum(values[groups == g], u_star[g]).sum() for g in (0, 1)])
        out = pnc_mechanism(t, pnc_sensitivity(u_star, f, gamma), mu, PinnedNoise(4))
        assert out.std is not None
        return out.variance, out.std

    var1, std1 = release(np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    var2, std2 = release(np.array([50.0, 0.0, 7.0, 0.0, 900.0]))
    np.testing.assert_array_equal(var1, var2)
    np.testing.assert_array_equal(std1, std2)
