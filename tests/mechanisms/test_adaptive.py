"""The adaptive GEDP group-by: the choice rule and the published variance.

See docs/design.md#gedp-mechanisms.

Expectations are written from Webb et al. (Def 6.4, Thm 6.6, Thm 6.7, Def 6.8), never from
eree's helpers: the identity query's answers, the pnc bounds, the clipped sums and the
public per-group estimate x̂ are simulated here from the formulas.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from eree.errors import PrivacyParameterError
from eree.mechanisms.adaptive import AdaptiveGroupBy
from eree.mechanisms.base import Cells
from eree.mechanisms.noise import SeededNoise
from eree.privacy.neighbors import DPNeighbor, SqrtShift, combine

GAMMA = 0.5
MU_ID = 1.0
MU = 0.5
SIGMA = GAMMA / MU  # ψ branch: σ = γ/μ (Def 6.4)
ZETA = 0.01


def _mech(**kw: object) -> AdaptiveGroupBy:
    args: dict[str, object] = dict(
        query="q", attribute="m1emp", neighbor=SqrtShift(), gamma=GAMMA, mu=MU,
        zeta=ZETA, bounds_from="identity", bounds_mu=MU_ID, bounded_attributes=1,
    )  # fmt: skip
    args.update(kw)
    return AdaptiveGroupBy(**args)  # type: ignore[arg-type]


def _pnc_variance(u_star: np.ndarray) -> np.ndarray:
    """Def 6.8 for ψ = √x: Δ = u* − (√u* − γ)², variance (Δ/μ)²."""
    delta = u_star - np.maximum(np.sqrt(u_star) - GAMMA, 0.0) ** 2
    return (delta / MU) ** 2


def test_choice_is_the_smaller_predicted_variance() -> None:
    """pnc where (Δ_ℓ/μ)² ≤ 2σ²(2x̂+σ²) (Thm 6.6 at the public x̂), ψ elsewhere — when x̂
    is known exactly (its published variance 0)."""
    u_star = np.array([1e4, 1e4, 1e4, 1e6, 0.0])
    x_hat = np.array([100.0, 9_000.0, 20_000.0, 2e5, -50.0])  # the last one is clamped at 0
    v_psi = 2 * SIGMA**2 * (2 * np.maximum(x_hat, 0) + SIGMA**2)
    expected = _pnc_variance(u_star) <= v_psi
    got = _mech().choose(u_star, x_hat, np.zeros(5))
    np.testing.assert_array_equal(got, expected)
    assert got.any() and not got.all()  # both outcomes are exercised


def test_choice_compares_at_the_lower_confidence_limit_of_x_hat() -> None:
    """With x̂'s published variance V, ψ's variance is taken at max(0, x̂ − 2√V): pnc is
    chosen only where even that lower limit makes ψ the worse (hand-computed)."""
    u_star = np.full(4, 1e4)
    # Δ = u* − (√u* − γ)² = 1e4 − 99.5² = 99.75; (Δ/μ)² = 39 800.25
    # 2σ²(2x + σ²) = 4x + 2 ≥ 39 800.25 ⇔ x ≥ 9 949.56 (σ = 1)
    assert _pnc_variance(u_star)[0] == pytest.approx(39_800.25)
    x_hat = np.array([10_500.0, 10_500.0, 10_500.0, 20_000.0])
    sd = np.array([0.0, 200.0, 300.0, 6_000.0])
    # lower limits: 10 500, 10 100, 9 900, 8 000 → pnc, pnc, ψ, ψ
    got = _mech().choose(u_star, x_hat, sd**2)
    np.testing.assert_array_equal(got, [True, True, False, False])


def test_a_psi_without_variance_formula_is_refused() -> None:
    with pytest.raises(PrivacyParameterError, match="variance formula"):
        _mech(neighbor=combine((SqrtShift(), 0.5), (DPNeighbor(), 1.0)))


def _simulate(
    rng: np.random.Generator, sizes: list[int], reps: int, mu_id: float = MU_ID
) -> dict[str, np.ndarray]:
    """reps full releases of the identity query (Def 6.4) and their public products.

    Returns the true group sums, clipped sums T_ℓ, bounds u*_ℓ (Thm 6.7) and x̂_ℓ (the sum
    of the identity estimates x̃_j = ω_j² − σ_a², Thm 6.6), each (reps, groups).
    """
    n = sum(sizes)
    x = rng.integers(2_000, 9_000, n).astype(float)
    group = np.repeat(np.arange(len(sizes)), sizes)
    s_a = GAMMA / mu_id
    omega = np.sqrt(x) + rng.normal(0.0, s_a, (reps, n))
    tau = norm.ppf((1 - ZETA) ** (1 / n))
    u = np.where(omega + GAMMA * tau / mu_id > 0, (omega + GAMMA * tau / mu_id) ** 2, 0.0)
    g = len(sizes)
    u_star = np.full((reps, g), -np.inf)
    for j in range(n):
        u_star[:, group[j]] = np.maximum(u_star[:, group[j]], u[:, j])
    clipped = np.zeros((reps, g))
    x_hat = np.zeros((reps, g))
    v_hat = np.zeros((reps, g))
    for j in range(n):
        clipped[:, group[j]] += np.minimum(x[j], u_star[:, group[j]])
        x_tilde = omega[:, j] ** 2 - s_a**2
        x_hat[:, group[j]] += x_tilde
        v_hat[:, group[j]] += 2 * s_a**2 * (2 * np.maximum(x_tilde, 0) + s_a**2)  # Thm 6.6
    value = np.broadcast_to(np.bincount(group, x, g), (reps, g))
    return {"value": value, "clipped": clipped, "bound": u_star, "identity_sum": x_hat,
            "identity_variance": v_hat}  # fmt: skip


def _variance_z(estimates: np.ndarray, published_var: np.ndarray) -> np.ndarray:
    """Per cell: (empirical variance − mean published variance) / its standard error."""
    reps = estimates.shape[0]
    centred = estimates - estimates.mean(axis=0)
    s2 = (centred**2).sum(axis=0) / (reps - 1)
    m4 = (centred**4).mean(axis=0)
    se_s2 = np.sqrt(np.maximum(m4 - s2**2, 0.0) / reps)
    pv = published_var.mean(axis=0)
    se_pv = published_var.std(axis=0, ddof=1) / math.sqrt(reps)
    return (s2 - pv) / np.hypot(se_s2, se_pv)


def test_published_variance_matches_the_empirical_variance() -> None:
    """Over repeated releases (identity query and group-by), each group's published values
    vary as much as the published variance says — for the groups pnc answers (exact
    public variance) and those ψ answers (estimated) — within the sampling error; a
    variance off by 30% would be detected."""
    rng = np.random.default_rng(2024)
    sizes = [1] * 30 + [5] * 30  # singletons: ψ wins (u* > x); groups of five: pnc wins
    reps = 3_000
    cells = _simulate(rng, sizes, reps)
    m = _mech()(Cells(cells), SeededNoise(7))
    chosen = np.asarray(m.extra["chosen"])
    # the choice is the same in every release for each group (far from the boundary)
    assert (chosen[:, :30] == "psi").all() and (chosen[:, 30:] == "pnc").all()
    var = m.variance
    assert var is not None
    # pnc's public variance (Def 6.8) plus the rounding to the grid 1: 1/12, the rounding's
    # mean square averaged over T's position (here T is an integer sum and sd = Δ/μ ≫ 1, so
    # it is also the exact variance of round(T + (Δ/μ)Z), Sheppard); Δ is rounded up past
    # its floating-point error, relative ≈ 2⁻³⁸(√u* + γ)/γ < 8e-10 for the u* ≈ 10⁴ here
    want = np.sqrt(_pnc_variance(cells["bound"][:, 30:]) + 1 / 12)
    np.testing.assert_allclose(np.sqrt(var[:, 30:]), want, rtol=1e-9)
    z = _variance_z(m.estimate, var)
    assert np.all(np.abs(z) < 4.5), z
    total = z.sum() / math.sqrt(z.size)  # ≈ N(0, 1) across the 60 independent groups
    assert abs(total) < 4.0
    for f in (0.7, 1.3):  # power: a 30% error in the published variance is caught
        zf = _variance_z(m.estimate, f * var)
        assert abs(zf.sum() / math.sqrt(zf.size)) > 4.0
    # and the published values are unbiased for the true sums (no clipping in practice)
    bias_z = (m.estimate.mean(axis=0) - cells["value"][0]) / np.sqrt(var.mean(axis=0) / reps)
    assert np.all(np.abs(bias_z) < 4.5)


@pytest.mark.parametrize(("mu_id", "plain"), [(0.1, False), (0.05, True)])
def test_published_variance_is_right_given_the_choice(
    mu_id: float, plain: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the identity query is so noisy that the choice varies from release to release
    (groups of three; μ_id = 0.1 with the default rule, 0.05 comparing at x̂ itself), the
    ψ answers' published variance is right *given that ψ was chosen*: the empirical
    variance of x̃ over the releases where ψ answered matches the mean published variance
    there, and a 30% error is caught (power). The published variance may depend on the
    group's own answer only: Thm 6.6's variance at the identity-based x̂ (what the choice
    compares) is biased low given the choice (ψ is chosen where x̂ is small) — with the
    plain comparison at x̂ the same check catches it."""
    rng = np.random.default_rng(99)
    reps = 6_000
    cells = _simulate(rng, [3] * 80, reps, mu_id)
    if plain:  # the choice at x̂ itself (z = 0): it varies more between releases
        monkeypatch.setattr(AdaptiveGroupBy, "choice_z", 0.0)
    mech = AdaptiveGroupBy(
        query="q", attribute="m1emp", neighbor=SqrtShift(), gamma=GAMMA, mu=MU,
        zeta=ZETA, bounds_from="identity", bounds_mu=mu_id, bounded_attributes=1,
    )  # fmt: skip
    m = mech(Cells(cells), SeededNoise(13))
    psi = np.asarray(m.extra["chosen"]) == "psi"
    var = m.variance
    assert var is not None
    x_hat = np.maximum(cells["identity_sum"], 0.0)
    at_x_hat = 2 * SIGMA**2 * (2 * x_hat + SIGMA**2)  # Thm 6.6 at x̂
    own = 2 * SIGMA**2 * (2 * np.maximum(m.estimate, 0.0) + SIGMA**2)  # Thm 6.6's v̂
    keep = [g for g in range(80) if 300 <= psi[:, g].sum() <= reps - 300]
    assert len(keep) >= 10  # the choice really varies
    np.testing.assert_allclose(var[psi], own[psi], rtol=1e-12)
    z_own, z_x_hat, z_far = [], [], []
    for g in keep:
        sel = psi[:, g]
        est = m.estimate[sel, g][:, None]
        z_own.append(_variance_z(est, var[sel, g][:, None])[0])
        z_x_hat.append(_variance_z(est, at_x_hat[sel, g][:, None])[0])
        z_far.append(max(abs(_variance_z(est, f * var[sel, g][:, None])[0]) for f in (0.7, 1.3)))
    k = math.sqrt(len(keep))
    assert abs(sum(z_own) / k) < 4.0, z_own
    if plain:  # empirical variance above the x̂-based one: biased low
        assert sum(z_x_hat) / k > 4.0
    assert sum(z_far) / k > 4.0  # power
