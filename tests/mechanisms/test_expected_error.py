"""Mechanism.expected_error against the papers' formulas, computed here (not by the code).

Haney et al. (SIGMOD 2017): Log-Laplace Alg 1 (γ = 1/α, λ = 2 ln(1+α)/ε, Lemma 8.2),
Smooth Gamma Alg 2 (5S/ε₁·Z, Var Z = 1, E|Z| = 1/√2), Smooth Laplace Alg 3 (2S/ε·Lap(1)),
S = max(α x_v, 1); edge-DP Lap(1/ε); node-DP Lap(θ/ε). Webb et al.: ψ-mechanism Thm 6.6
(√: Var = 2σ²(2x+σ²); log(x+a): (x+a)²(e^{σ²}−1)), σ = γ/μ; pnc Def 6.8 std = Δ_ℓ/μ,
Δ_ℓ = u − (√u − γ)² for ψ = √ and u ≥ γ²; Estab-Gaussian Δ_ψ/μ.

Each expectation is recomputed from the formula (or by numerical integration of the
noise density) and compared at tight tolerances; ``test_power`` shows a 30% error in a
scale fails these comparisons.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from eree.mechanisms.adaptive import AdaptiveGroupBy
from eree.mechanisms.baselines import EdgeLaplace, TruncatedLaplace
from eree.mechanisms.er_ee import LogLaplace, SmoothGamma, SmoothLaplace
from eree.mechanisms.gedp import EstabGaussian, Pnc, PsiMechanism
from eree.mechanisms.registry import REGISTRY
from eree.privacy.neighbors import LogShift, SqrtShift

REL = 1e-9


def _close(got: float | None, want: float, rel: float = REL) -> bool:
    return got is not None and math.isclose(got, want, rel_tol=rel)


@pytest.mark.parametrize(
    ("alpha", "eps", "n"),
    [(0.1, 1.0, 0.0), (0.1, 1.0, 100.0), (0.2, 2.0, 10_000.0), (0.05, 0.5, 7.0)],
)
def test_log_laplace_error_matches_lemma_8_2_and_numerical_integration(alpha, eps, n):
    m = LogLaplace(query="q", alpha=alpha, epsilon=eps)
    e = m.expected_error({"count": n})
    gamma, lam = 1 / alpha, 2 * math.log(1 + alpha) / eps
    # n̂ = (n+γ)(1−λ²)e^η − γ: Var = (n+γ)²(1−λ²)²(E e^{2η} − (E e^η)²), E e^{kη} = 1/(1−k²λ²)
    var = (n + gamma) ** 2 * (1 - lam**2) ** 2 * (1 / (1 - 4 * lam**2) - 1 / (1 - lam**2) ** 2)
    assert _close(e.std, math.sqrt(var))

    # E|n̂ − n| by numerical integration over the Laplace density
    def f(x):
        return (
            abs((n + gamma) * (1 - lam**2) * math.exp(x) - gamma - n)
            * math.exp(-abs(x) / lam)
            / (2 * lam)
        )

    t = math.log(1 / (1 - lam**2))
    mean_abs = sum(integrate.quad(f, a, b, limit=200)[0] for a, b in
                   [(-60 * lam, 0.0), (0.0, t), (t, 60 * lam)])  # fmt: skip
    assert _close(e.mean_abs, mean_abs, 1e-7)
    # CI [(ñ+γ)e^{−q} − γ, (ñ+γ)e^{q} − γ], q = λ ln(1/(1−c)); E[ñ+γ] = (n+γ)/(1−λ²)
    q = lam * math.log(1 / 0.05)
    assert _close(e.ci_width, (n + gamma) / (1 - lam**2) * (math.exp(q) - math.exp(-q)))


def test_log_laplace_relative_error_tends_to_a_constant():
    """Multiplicative noise: E|error|/n → (1−λ²)E|e^η − 1/(1−λ²)| as n grows."""
    m = LogLaplace(query="q", alpha=0.1, epsilon=1.0)
    r = [m.expected_error({"count": n}).mean_abs / n for n in (1e4, 1e6, 1e8)]
    assert r[0] > r[1] > r[2] and math.isclose(r[1], r[2], rel_tol=1e-3)


def test_log_laplace_infinite_variance_when_lambda_at_least_half():
    # λ = 2 ln 1.1 / ε ≥ 1/2 ⇔ ε ≤ 4 ln 1.1 ≈ 0.381; λ < 1 needs ε > 0.19
    e = LogLaplace(query="q", alpha=0.1, epsilon=0.3).expected_error({"count": 10.0})
    assert e.std == math.inf and math.isfinite(e.mean_abs)


@pytest.mark.parametrize(
    ("alpha", "eps", "x_v"), [(0.1, 1.0, 1.0), (0.1, 1.0, 500.0), (0.2, 4.0, 30.0)]
)
def test_smooth_gamma_std_is_5s_over_eps1(alpha, eps, x_v):
    e = SmoothGamma(query="q", alpha=alpha, epsilon=eps).expected_error(
        {"count": 100.0, "x_v": x_v}
    )
    s = max(alpha * x_v, 1.0)
    eps1 = eps - 5 * math.log(1 + alpha)
    b = 5 * s / eps1
    # Z with density (√2/π)/(1+z⁴): Var Z = 1, E|Z| = 1/√2 (by integration)
    var_z = integrate.quad(lambda z: z * z * math.sqrt(2) / math.pi / (1 + z**4), -np.inf, np.inf)[
        0
    ]
    abs_z = integrate.quad(lambda z: abs(z) * math.sqrt(2) / math.pi / (1 + z**4), -np.inf, np.inf)[
        0
    ]
    assert _close(e.std, b * math.sqrt(var_z), 1e-7)
    assert _close(e.mean_abs, b * abs_z, 1e-7)
    assert e.ci_width is None  # no interval is published


@pytest.mark.parametrize(
    ("alpha", "eps", "x_v", "d"), [(0.1, 1.0, 1.0, 1), (0.1, 1.0, 200.0, 1), (0.1, 6.0, 200.0, 6)]
)
def test_smooth_laplace_error_is_lemma_9_3(alpha, eps, x_v, d):
    attrs = ("sex",) if d > 1 else ()
    m = SmoothLaplace(query="q", alpha=alpha, epsilon=eps, worker_cells=d,
                      worker_attributes=attrs)  # fmt: skip
    e = m.expected_error({"count": 50.0, "x_v": x_v})
    b = 2 * max(alpha * x_v, 1.0) / (eps / d)
    assert _close(e.mean_abs, b) and _close(e.std, math.sqrt(2) * b)


def test_dp_baselines():
    e = EdgeLaplace(query="q", epsilon=0.5).expected_error({"count": 10.0})
    # the published value is round(n + Lap(b)), b = 1/ε = 2, on the grid 1: Var of the
    # rounded noise = 2Σk²·e^{−k/b}·sinh(h) = cosh h/(2 sinh² h), h = 1/(2b)
    h = 1 / (2 * 2.0)
    assert _close(e.std, math.sqrt(math.cosh(h) / (2 * math.sinh(h) ** 2)))
    assert _close(e.mean_abs, 2.0)  # the noise before rounding (its note says so)
    assert _close(e.ci_width, 2 * math.log(20) / 0.5 + 1.0)  # widened by the grid
    t = TruncatedLaplace(query="q", epsilon=2.0, theta=50.0).expected_error(
        {"count_truncated": 10.0}
    )
    assert _close(t.std, math.sqrt(2) * 25.0) and "bias" in t.note


def _sqrt():
    return SqrtShift(0.0)


@pytest.mark.parametrize("x", [0.0, 3.0, 36.0, 36_000.0])
def test_psi_sqrt_std_is_theorem_6_6(x):
    gamma, mu = 0.5, 0.7
    e = PsiMechanism(query="q", attribute="a", neighbor=_sqrt(), gamma=gamma, mu=mu).expected_error(
        {"value": x}
    )
    s2 = (gamma / mu) ** 2
    assert _close(e.std, math.sqrt(2 * s2 * (2 * x + s2)))
    z = stats.norm.ppf(0.975)
    lo = max(0.0, math.sqrt(x) - z * gamma / mu) ** 2
    assert _close(e.ci_width, (math.sqrt(x) + z * gamma / mu) ** 2 - lo)


def test_psi_log_std_is_theorem_6_6():
    gamma, mu, a, x = 0.1, 0.5, 1.0, 360.0
    e = PsiMechanism(query="q", attribute="a", neighbor=LogShift(a), gamma=gamma, mu=mu
                     ).expected_error({"value": x})  # fmt: skip
    assert _close(e.std, (x + a) * math.sqrt(math.exp((gamma / mu) ** 2) - 1))


@pytest.mark.parametrize("u", [1.0, 100.0, 1e6])
def test_pnc_std_is_delta_over_mu(u):
    gamma, mu = 0.5, 0.6
    m = Pnc(query="q", attribute="a", neighbor=_sqrt(), gamma=gamma, mu=mu,
            bounds_from="identity", bounds_mu=0.7)  # fmt: skip
    e = m.expected_error({"bound": u})
    delta = u - max(0.0, math.sqrt(u) - gamma) ** 2  # Def 6.8 with ψ = √
    # rounded to the grid 1: the rounding adds 1/12 (averaged over the value's position)
    assert _close(e.std, math.sqrt((delta / mu) ** 2 + 1 / 12))
    assert _close(e.mean_abs, delta / mu * math.sqrt(2 / math.pi))
    assert _close(e.ci_width, 2 * stats.norm.ppf(0.975) * delta / mu + 1.0)


def test_adaptive_takes_the_smaller_and_estab_gaussian_is_constant():
    a = AdaptiveGroupBy(query="q", attribute="a", neighbor=_sqrt(), gamma=0.5, mu=0.6,
                        bounds_from="identity", bounds_mu=0.7)  # fmt: skip
    s2 = (0.5 / 0.6) ** 2
    psi = math.sqrt(2 * s2 * (2 * 1e4 + s2))
    pnc = math.sqrt(((1e8 - (1e4 - 0.5) ** 2) / 0.6) ** 2 + 1 / 12)  # grid 1
    assert _close(a.expected_error({"value": 1e4, "bound": 1e8}).std, min(psi, pnc))
    from eree.privacy.neighbors import DPNeighbor

    g = EstabGaussian(query="q", attribute="a", neighbor=DPNeighbor(2.0), gamma=2.0, mu=0.5)
    for v in (1.0, 1e6):  # ψ = x: Δ_ψ = γ = 2 (Def 6.1), std √((Δ_ψ/μ)² + 1/12) on grid 1
        assert _close(g.expected_error({"value": v}).std, math.sqrt((2.0 / 0.5) ** 2 + 1 / 12))


def test_power_a_30_percent_scale_error_fails_the_comparisons():
    """The comparisons above reject a scale off by 30% (and the tolerance is far tighter)."""
    e = SmoothLaplace(query="q", alpha=0.1, epsilon=1.0).expected_error({"count": 5.0, "x_v": 1.0})
    assert not _close(e.mean_abs * 1.3, 2.0) and not _close(e.mean_abs / 1.3, 2.0)
    p = Pnc(query="q", attribute="a", neighbor=_sqrt(), gamma=0.5, mu=0.6, bounds_from="i",
            bounds_mu=0.7).expected_error({"bound": 100.0})  # fmt: skip
    want = math.sqrt(((100 - 9.5**2) / 0.6) ** 2 + 1 / 12)
    assert _close(p.std, want) and not _close(p.std * 1.3, want)
    g = SmoothGamma(query="q", alpha=0.1, epsilon=1.0).expected_error({"count": 1.0, "x_v": 1.0})
    assert not _close(g.std * 0.7, 5 / (1 - 5 * math.log(1.1)))


def test_noise_infusion_ramp_moments_and_small_cells():
    """Haney et al. §5.1 with the ramp density p(δ) = 2(t−δ)/(t−s)² of δ = |f−1| on [s, t]."""
    from eree.mechanisms.noise_infusion import NoiseInfusion

    s, t = 0.05, 0.15
    m = NoiseInfusion(query="q", s=s, t=t)
    ramp = lambda d: 2 * (t - d) / (t - s) ** 2  # noqa: E731
    m1 = integrate.quad(lambda d: d * ramp(d), s, t)[0]
    m2 = integrate.quad(lambda d: d * d * ramp(d), s, t)[0]
    one = m.expected_error({"count": 100.0, "x_v": 100.0})  # one establishment: n(f − 1)
    assert _close(one.mean_abs, 100 * m1, 1e-9) and _close(one.std, 100 * math.sqrt(m2), 1e-9)
    many = m.expected_error({"count": 100.0, "x_v": 4.0})  # 25 establishments of 4
    assert _close(many.std, math.sqrt(25 * 16 * m2), 1e-9) and many.mean_abs is None
    small = m.expected_error({"count": 1.0, "x_v": 1.0})  # replaced by U{1, 2}
    assert _close(small.mean_abs, 0.5) and _close(small.std, math.sqrt(0.5))


def _instance(e):
    """A valid object of each registered class (parameters from the papers' ranges)."""
    from eree.mechanisms.noise_infusion import NoiseInfusion
    from eree.privacy.neighbors import DPNeighbor

    cls = e.cls
    if cls is NoiseInfusion:
        return cls(query="q")
    if "attribute" in cls.__dataclass_fields__:
        neighbor = DPNeighbor(1.0) if cls is EstabGaussian else _sqrt()
        kw = (
            {"bounds_from": "identity", "bounds_mu": 0.7}
            if "zeta" in cls.__dataclass_fields__
            else {}
        )
        gamma = 1.0 if cls is EstabGaussian else 0.5
        return cls(query="q", attribute="a", neighbor=neighbor, gamma=gamma, mu=0.6, **kw)
    kw = {"alpha": 0.1} if "alpha" in cls.__dataclass_fields__ else {}
    if "theta" in cls.__dataclass_fields__:
        kw["theta"] = 50.0
    return cls(query="q", epsilon=2.0, **kw)


@pytest.mark.parametrize("e", REGISTRY, ids=lambda e: f"{e.name}-{e.variant or 'x'}")
def test_every_registered_mechanism_has_a_preview_that_grows_with_size(e):
    m = _instance(e)
    stds = []
    for size in (1.0, 100.0, 10_000.0):
        at = {"count": size, "count_truncated": size, "x_v": size, "value": size, "bound": size}
        err = m.expected_error(at)
        assert err is not None, f"{e.name}: no expected_error"
        assert err.std is None or err.std >= 0
        stds.append(err.std)
    if None not in stds:
        assert stds[0] <= stds[1] <= stds[2]
