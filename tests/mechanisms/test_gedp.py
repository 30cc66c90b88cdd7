"""GEDP mechanisms (Webb et al. §6): Estab-Gaussian, ψ-mechanism, pnc.

Statistical checks use fixed seeds and tolerances from the sample size; each proves its
power on a 30% error in the noise scale. Privacy checks pin the noise: when the mechanism's
noisy answers are the same, everything published must be the same whatever the
confidential values (docs/design.md#what-may-be-published).

Published values are the mechanisms' outputs rounded to a public grid (docs/privacy.md):
1 where the noise is added to the values (Estab-Gaussian, pnc, ψ = x), 2⁻²⁰ in a
transformed ψ space. For an integer true value on the grid 1 the published error is
R = round(sd·Z), an integer; its law is checked through R + U, U ~ U(−½, ½) drawn here,
whose CDF is Φ(·/sd) interpolated linearly between the half-integers
(:func:`rounded_normal_cdf`), so the KS test applies exactly.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy.special import log_ndtr, ndtr, ndtri
from scipy.stats import norm

import eree.mechanisms.gedp as gedp
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
from eree.mechanisms.noise import NoiseSource, SeededNoise
from eree.privacy.neighbors import DPNeighbor, LogShift, SqrtShift, combine
from tests.stats import Z_CRIT, assert_detects, assert_ks, ks_matches


class PinnedNoise(NoiseSource):
    """Fixed noisy answers whatever the true values and scale (with the ``pinned`` fixture).

    Whatever a mechanism publishes must then be the same for two datasets that differ
    only in their confidential values. With the sampling layer pinned, a mechanism has no
    other way to draw randomness: its random words are never asked for.
    """

    mode = "seeded"

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.seed = seed
        self.calls = 0

    def bits(self, size: int) -> np.ndarray:  # pragma: no cover - never used
        raise AssertionError("GEDP mechanisms must draw their noise through the sampling layer")

    def answers(self, shape: tuple[int, ...], grid: object) -> np.ndarray:
        """The next fixed noisy answers, on the public grid (as published)."""
        self.calls += 1
        w = np.random.default_rng([self.seed, self.calls]).normal(5.0, 3.0, size=shape)
        g = np.asarray(grid, dtype=float)
        return np.round(w / g) * g


@pytest.fixture
def pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin the sampling layer the GEDP mechanisms draw through: a draw from a PinnedNoise
    returns its fixed answers, whatever the centre (the confidential values) and scale."""

    def rounded_noisy(source, centre, terms, grid):  # type: ignore[no-untyped-def]
        assert isinstance(source, PinnedNoise)
        return source.answers(np.shape(centre.value), grid)

    def additive(source, values, law, scale, grid, **kw):  # type: ignore[no-untyped-def]
        assert isinstance(source, PinnedNoise)
        return source.answers(np.shape(values), grid)

    monkeypatch.setattr(gedp, "rounded_noisy", rounded_noisy)
    monkeypatch.setattr(gedp, "additive", additive)


class RecordingNoise(SeededNoise):
    """A seeded source that counts the random words the mechanisms ask it for."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.words = 0

    def bits(self, size: int) -> np.ndarray:
        self.words += size
        return super().bits(size)


def rounded_normal_cdf(sd: float):  # type: ignore[no-untyped-def]
    """CDF of round(sd·Z) + U, U ~ U(−½, ½) independent, Z ~ N(0, 1).

    For y in [k − ½, k + ½): P(R + U ≤ y) = P(R ≤ k − 1) + P(R = k)·(y − k + ½)
    = F(k − ½) + (F(k + ½) − F(k − ½))·(y − k + ½), F = Φ(·/sd).
    """

    def cdf(y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        k = np.floor(y + 0.5)
        lo, hi = ndtr((k - 0.5) / sd), ndtr((k + 0.5) / sd)
        return lo + (hi - lo) * (y - (k - 0.5))

    return cdf


def rounded_normal_variance(sd: float) -> float:
    """Var round(sd·Z) = 2 Σ_{k≥1} k² P(round(sd·Z) = k) (symmetric, mean 0)."""
    k = np.arange(1, int(40 * sd) + 40, dtype=float)
    p = norm.sf((k - 0.5) / sd) - norm.sf((k + 0.5) / sd)
    return float(2 * np.sum(k * k * p))


def jittered(err: np.ndarray, seed: int) -> np.ndarray:
    """err + U(−½, ½) (the grid is 1): continuous, with the CDF of :func:`rounded_normal_cdf`."""
    # a stream of its own: default_rng(seed) would repeat SeededNoise(seed)'s words
    rng = np.random.default_rng([seed, 0x5EED])
    return err + rng.uniform(-0.5, 0.5, size=err.shape)


def test_rounded_normal_helpers_against_direct_sums() -> None:
    sd = 0.6
    k = np.arange(-40, 41, dtype=float)
    p = ndtr((k + 0.5) / sd) - ndtr((k - 0.5) / sd)  # P(round(sd·Z) = k)
    # the CDF of R + U at the cell centres: P(R < k) + P(R = k)/2
    np.testing.assert_allclose(rounded_normal_cdf(sd)(k), np.cumsum(p) - p / 2, atol=1e-12)
    assert rounded_normal_variance(sd) == pytest.approx(float(np.sum(k * k * p)), rel=1e-12)
    # Sheppard: sd² + 1/12 up to terms of order e^{−2π²sd²} (e^{−123} at sd = 2.5)
    assert rounded_normal_variance(2.5) == pytest.approx(2.5**2 + 1 / 12, rel=1e-14)


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
    sigma = gamma / mu  # Def 6.4
    if isinstance(f, DPNeighbor):
        # ψ = x on its default grid 1, integer sums: the published error is round(σZ)
        cdf = rounded_normal_cdf(sigma)

        def errors(m: Measurement, seed: int) -> np.ndarray:
            e = m.noisy - sums
            assert np.all(e == np.round(e))
            return jittered(e, seed)
    else:
        # ψ grid 2⁻²⁰: the rounding moves ω by ≤ 2⁻²¹, so each CDF value by
        # ≤ 2⁻²¹/(σ√(2π)) < 3e-7, against a KS critical value ≈ 0.016 at N = 20 000
        cdf = norm(scale=sigma).cdf

        def errors(m: Measurement, seed: int) -> np.ndarray:
            return m.noisy - f.psi(sums)

    assert_ks(errors(psi_mechanism(sums, f, gamma, mu, SeededNoise(1)), 1), cdf)
    wrong = psi_mechanism(sums, f, gamma, mu / 1.3, SeededNoise(2))  # σ 30% too large
    assert_detects(lambda s: ks_matches(s, cdf), errors(wrong, 2))


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
def test_psi_mechanism_output_depends_on_data_only_through_omega(
    f: SqrtShift, pinned: None
) -> None:
    x1 = np.array([0.0, 1.0, 10.0, 500.0, 36_000.0])
    x2 = np.array([7.0, 0.0, 90_000.0, 3.0, 12.0])
    sa, sb = PinnedNoise(9), PinnedNoise(9)
    a = psi_mechanism(x1, f, 0.5, 0.7, sa)
    b = psi_mechanism(x2, f, 0.5, 0.7, sb)
    assert sa.calls == sb.calls == 1  # the answers were pinned
    for field in ("noisy", "estimate", "std", "ci_low", "ci_high", "variance"):
        va, vb = getattr(a, field), getattr(b, field)
        if va is None:
            assert vb is None
        else:
            np.testing.assert_array_equal(va, vb)


def test_all_randomness_comes_from_the_sources_words(sums: np.ndarray) -> None:
    """Given the same random words, the GEDP mechanisms publish the same values, whatever
    the state of any other generator; they ask the source for at least a word per cell."""
    x = sums[:500]

    def run(seed: int, other: int) -> tuple[list[np.ndarray], int]:
        saved = np.random.get_state()
        np.random.seed(other)  # the legacy global generator: must not matter
        try:
            src = RecordingNoise(seed)
            outs = [
                psi_mechanism(x, SqrtShift(), 0.5, 0.7, src).noisy,
                psi_mechanism(x, DPNeighbor(), 0.5, 0.7, src).noisy,
                estab_gaussian(x, 2.0, 0.5, src).noisy,
                pnc_mechanism(x, np.full(x.shape, 3.0), 0.6, src).noisy,
            ]
        finally:
            np.random.set_state(saved)
        return outs, src.words

    a, words_a = run(3, 0)
    b, words_b = run(3, 1)
    c, _ = run(4, 0)
    assert words_a == words_b >= 4 * x.size  # Box–Muller: two words per two cells
    for oa, ob, oc in zip(a, b, c, strict=True):
        np.testing.assert_array_equal(oa, ob)
        assert not np.array_equal(oa, oc)


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
    assert delta == 2.0  # Def 6.1 for ψ = x: Δ_ψ = γ
    out = estab_gaussian(sums, delta, mu, SeededNoise(4))
    sd = delta / mu
    # published on the grid 1, integer sums: the error is round(sd·Z), of variance
    # 2Σ k² P(round(sd·Z) = k) = sd² + 1/12 (Sheppard; exact to e^{−2π²·16} at sd = 4)
    var = rounded_normal_variance(sd)
    assert var == pytest.approx(sd * sd + 1 / 12, rel=1e-14)
    np.testing.assert_allclose(out.variance, np.full(sums.shape, var), rtol=1e-12)
    assert out.std is not None
    np.testing.assert_allclose(out.std, np.full(sums.shape, math.sqrt(var)), rtol=1e-12)
    err = out.noisy - sums
    assert np.all(err == np.round(err))
    cdf = rounded_normal_cdf(sd)
    assert_ks(jittered(err, 1), cdf)
    wrong = estab_gaussian(sums, 1.3 * delta, mu, SeededNoise(5))
    assert_detects(lambda s: ks_matches(s, cdf), jittered(wrong.noisy - sums, 2))
    # the CI answer ± (z·sd + ½) (clamped at 0, which cannot uncover x ≥ 1) covers x
    # exactly when |round(sd·Z)| ≤ m = ⌊z·sd + ½⌋, probability 2Φ((m + ½)/sd) − 1 ≥ 95%
    m = math.floor(norm.ppf(0.975) * sd + 0.5)
    p = 2 * float(ndtr((m + 0.5) / sd)) - 1
    assert p >= 0.95
    pos = sums >= 1
    assert out.ci_low is not None and out.ci_high is not None
    covered = (out.ci_low[pos] <= sums[pos]) & (sums[pos] <= out.ci_high[pos])
    assert abs(covered.mean() - p) < Z_CRIT * math.sqrt(p * (1 - p) / pos.sum())
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
    live = delta > 0
    # (Δ/μ)² plus the rounding to the grid 1: 1/12, the rounding's mean square averaged
    # over T's position in its grid cell (a clipped sum T need not be an integer; for the
    # integer T = 0 with Δ = 0, published exactly, it is an upper bound)
    np.testing.assert_allclose(published, (delta / mu) ** 2 + 1 / 12, rtol=1e-12)
    # for the integer T here it is the exact variance of round(T + (Δ/μ)Z) − T (sd ≥ 2.4)
    exact = [rounded_normal_variance(sd) for sd in delta[live] / mu]
    np.testing.assert_allclose(published[live], exact, rtol=1e-12)
    assert out.std is not None
    np.testing.assert_allclose(out.std[0] ** 2, published, rtol=1e-12)
    assert np.all(out.variance == published)  # the same for every release
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


def test_pnc_publishes_bounds_and_variances_from_noisy_identity_only(pinned: None) -> None:
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
