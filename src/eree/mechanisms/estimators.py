r"""Estimators for ψ-mechanism answers (Webb et al., ``papers/004_*``, §6.1, Thm 6.6).

The ψ-mechanism releases :math:`\omega = \psi(x) + N(0,\sigma^2)`, σ = γ/μ (Def 6.4).
Everything below is a function of ω and the public σ only.

* ψ = √(x+a) (``sqrt``: a = 0). :math:`\omega^2/\sigma^2` is non-central χ²₁ with
  non-centrality :math:`(x+a)/\sigma^2`, so :math:`\tilde x = \omega^2-\sigma^2-a` is unbiased,
  :math:`\operatorname{Var}\tilde x = 2\sigma^2(2(x+a)+\sigma^2)` and the published estimate is
  :math:`\hat v = 2\sigma^2(2(\max(\tilde x,0)+a)+\sigma^2)`; :math:`\hat v/v\to1` in
  probability as x → ∞ (Thm 6.6; a > 0 is the same computation for x + a).
* ψ = log(x+a). :math:`e^{\omega}` is log-normal, :math:`\tilde x = e^{\omega-\sigma^2/2}-a`
  is unbiased, :math:`\operatorname{Var}\tilde x=(x+a)^2(e^{\sigma^2}-1)`, and the plug-in
  :math:`\hat v=(\tilde x+a)^2(e^{\sigma^2}-1)` does **not** converge: :math:`\hat v/v` has the
  same distribution for every x (Thm 6.6). Computed in log space: with
  :math:`\tilde x+a=e^{\omega-\sigma^2/2}`, :math:`\hat v=e^{2\omega}(1-e^{-\sigma^2})`
  exactly, so a large σ (γ/μ with σ² > 709: :math:`e^{\sigma^2}` alone exceeds the float
  range while x̃ + a underflows) still gives the value; only a v̂ that itself exceeds
  the float range (:math:`e^{2\omega}` > 1.8e308) is published as ``inf``.
* ψ = x (``dp``): :math:`\tilde x=\omega`, variance σ² — exact and data-independent.
* Any other ψ (combined, heterogeneous, user-defined): no unbiased estimator is known in
  closed form; we publish the maximum-likelihood :math:`\psi^{-1}(\max(\omega,\psi(0)))`
  (biased) and the exact CI, and **no** standard error.

CI (§6.1): :math:`[\psi^{-1}(\max(\psi(0),\omega-z\sigma)),\
\psi^{-1}(\max(\psi(0),\omega+z\sigma))]`
with z the two-sided normal quantile. It covers x with probability ≥ the confidence
level, for every ψ, because ψ(x) ≥ ψ(0).

The true variances (``*_true_variance``) depend on the confidential x: they are here for
theory and tests and must never be published (docs/design.md#what-may-be-published).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from eree.errors import PrivacyParameterError
from eree.privacy.neighbors import DPNeighbor, LogShift, NeighborFunction, SqrtShift
from eree.privacy.scipy_lazy import ndtri

FloatArray = NDArray[np.float64]

__all__ = [
    "PsiEstimates",
    "log_shift_estimate",
    "log_shift_true_variance",
    "log_shift_variance_at_omega",
    "log_shift_variance_estimate",
    "psi_confidence_interval",
    "psi_estimates",
    "psi_std_at",
    "psi_variance_at",
    "sqrt_estimate",
    "sqrt_true_variance",
    "sqrt_variance_estimate",
    "z_value",
]


def z_value(confidence: float) -> float:
    """Two-sided standard normal quantile: P(|Z| ≤ z) = confidence."""
    if not 0 < confidence < 1:
        raise PrivacyParameterError(f"confidence must lie in (0, 1) (got {confidence!r})")
    return float(-ndtri((1.0 - confidence) / 2.0))


def _a(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def sqrt_estimate(omega: ArrayLike, sigma: float, a: float = 0.0) -> FloatArray:
    r"""Thm 6.6: :math:`\tilde x = \omega^2 - \sigma^2 - a` (unbiased for ψ = √(x+a))."""
    w = _a(omega)
    return w * w - sigma * sigma - a


def sqrt_true_variance(x: ArrayLike, sigma: float, a: float = 0.0) -> FloatArray:
    r"""Thm 6.6: :math:`v = 2\sigma^2(2(x+a)+\sigma^2)`. Depends on x: never publish."""
    s2 = sigma * sigma
    return 2.0 * s2 * (2.0 * (_a(x) + a) + s2)


def sqrt_variance_estimate(x_tilde: ArrayLike, sigma: float, a: float = 0.0) -> FloatArray:
    r"""Published :math:`\hat v = 2\sigma^2(2(\max(\tilde x,0)+a)+\sigma^2)`."""
    s2 = sigma * sigma
    return 2.0 * s2 * (2.0 * (np.maximum(_a(x_tilde), 0.0) + a) + s2)


def _log_expm1(s2: float) -> float:
    r""":math:`\log(e^{s}-1) = s + \log(1-e^{-s})` for s > 0, finite where e^s overflows."""
    return s2 + math.log(-math.expm1(-s2))


def _log_space(log_value: FloatArray) -> FloatArray:
    """The exp of a log-space value: inf only where the value itself exceeds the float range."""
    with np.errstate(over="ignore"):
        return np.exp(log_value)


def log_shift_estimate(omega: ArrayLike, sigma: float, a: float) -> FloatArray:
    r"""Thm 6.6: :math:`\tilde x = e^{\omega-\sigma^2/2} - a` (unbiased for ψ = log(x+a))."""
    return np.exp(_a(omega) - 0.5 * sigma * sigma) - a


def log_shift_true_variance(x: ArrayLike, sigma: float, a: float) -> FloatArray:
    r"""Thm 6.6: :math:`v = (x+a)^2(e^{\sigma^2}-1)`. Depends on x: never publish.

    In log space (:func:`log_shift_variance_at_omega`); x + a > 0.
    """
    with np.errstate(divide="ignore"):
        log_xa = np.log(_a(x) + a)
    return _log_space(2.0 * log_xa + _log_expm1(sigma * sigma))


def log_shift_variance_estimate(x_tilde: ArrayLike, sigma: float, a: float) -> FloatArray:
    r"""Published plug-in :math:`\hat v = (\tilde x+a)^2(e^{\sigma^2}-1)` (in log space).

    From ω, :func:`log_shift_variance_at_omega` is exact where x̃ + a underflows to 0.
    """
    return log_shift_true_variance(x_tilde, sigma, a)


def log_shift_variance_at_omega(omega: ArrayLike, sigma: float) -> FloatArray:
    r"""The plug-in :math:`\hat v` from ω, in log space.

    :math:`(\tilde x+a)^2(e^{\sigma^2}-1)` with :math:`\tilde x+a=e^{\omega-\sigma^2/2}` is
    :math:`e^{2\omega}(1-e^{-\sigma^2})`.

    Computed as :math:`\exp(2\omega-\sigma^2+\log(e^{\sigma^2}-1))`: finite wherever v̂ is
    (the factors e^{σ²} and (x̃+a)² alone overflow / underflow for σ² > 709).
    """
    s2 = sigma * sigma
    return _log_space(2.0 * _a(omega) - s2 + _log_expm1(s2))


def psi_confidence_interval(
    omega: ArrayLike, neighbor: NeighborFunction, sigma: float, confidence: float = 0.95
) -> tuple[FloatArray, FloatArray]:
    r"""The §6.1 confidence interval from ω and the public σ.

    :math:`[\psi^{-1}(\max(\psi(0),\omega-z\sigma)),\ \psi^{-1}(\max(\psi(0),\omega+z\sigma))]`.
    """
    z = z_value(confidence)
    w = _a(omega)
    p0 = neighbor.psi0
    lo = np.asarray(neighbor.inverse(np.maximum(p0, w - z * sigma)), dtype=np.float64)
    hi = np.asarray(neighbor.inverse(np.maximum(p0, w + z * sigma)), dtype=np.float64)
    return lo, hi


@dataclass(frozen=True)
class PsiEstimates:
    """Publishable postprocessing of ψ-mechanism answers.

    Attributes:
        estimate: x̃ (unbiased where ψ has a known estimator, else ψ⁻¹(ω) clamped).
        variance: the published variance *estimate* v̂ (or the exact, public σ² for
            ψ = x), or None when none is published.
        ci_low, ci_high: the exact confidence interval.
        method: how estimate, variance and CI were obtained (for the output's metadata).
    """

    estimate: FloatArray
    variance: FloatArray | None
    ci_low: FloatArray
    ci_high: FloatArray
    method: str
    #: "public" (ψ = x: σ² is exact), "estimated" (v̂ from ω) or "withheld" (no variance)
    variance_kind: str = "estimated"


def psi_estimates(
    omega: ArrayLike, neighbor: NeighborFunction, sigma: float, confidence: float = 0.95
) -> PsiEstimates:
    """Estimate, published variance estimate and CI from ω and the public σ (Thm 6.6)."""
    if not (math.isfinite(sigma) and sigma > 0):
        raise PrivacyParameterError(f"sigma must be finite and > 0 (got {sigma!r})")
    w = _a(omega)
    lo, hi = psi_confidence_interval(w, neighbor, sigma, confidence)
    ci = (
        f"{confidence:.0%} CI [ψ⁻¹(max(ψ(0), ω − zσ)), ψ⁻¹(max(ψ(0), ω + zσ))] from the noisy "
        f"ω and public σ = γ/μ (§6.1)"
    )
    if isinstance(neighbor, SqrtShift):
        a = neighbor.a
        est = sqrt_estimate(w, sigma, a)
        var = sqrt_variance_estimate(est, sigma, a)
        m = (
            "estimate x̃ = ω² − σ²"
            + (f" − {a:g}" if a else "")
            + " (unbiased, Thm 6.6); std = √v̂, v̂ = 2σ²(2·max(x̃, 0)"
            + (f" + {a:g}" if a else "")
            + " + σ²) estimated from the noisy answer (the true variance depends on x and is "
            "not published); " + ci
        )
        return PsiEstimates(est, var, lo, hi, m)
    if isinstance(neighbor, LogShift) and neighbor.a > 0:
        a = neighbor.a
        est = log_shift_estimate(w, sigma, a)
        var = log_shift_variance_at_omega(w, sigma)
        m = (
            f"estimate x̃ = exp(ω − σ²/2) − {a:g} (unbiased, Thm 6.6); std = √v̂, plug-in "
            f"v̂ = (x̃ + {a:g})²(e^(σ²) − 1) estimated from the noisy answer (it does not "
            "converge to the true variance, Thm 6.6; the true variance is not published); " + ci
        )
        return PsiEstimates(est, var, lo, hi, m)
    if isinstance(neighbor, DPNeighbor):
        var = np.full(w.shape, sigma * sigma)
        m = "estimate x̃ = ω (unbiased); std = σ = γ/μ, exact and public; " + ci
        return PsiEstimates(w.copy(), var, lo, hi, m, "public")
    est = np.asarray(neighbor.inverse(np.maximum(neighbor.psi0, w)), dtype=np.float64)
    m = (
        "estimate ψ⁻¹(max(ω, ψ(0))) (maximum likelihood, biased: no unbiased estimator is "
        f"known for {neighbor.describe()}); no standard error published; " + ci
    )
    return PsiEstimates(est, None, lo, hi, m, "withheld")


def psi_std_at(neighbor: NeighborFunction, x: ArrayLike, sigma: float) -> FloatArray | None:
    r"""The square root of :func:`psi_variance_at`, computed without squaring.

    For log(x+a) in log space, :math:`\exp(\log(x+a)+\tfrac12\log(e^{\sigma^2}-1))`:
    finite wherever the std is, so two mechanisms' errors compare even where a variance
    exceeds the float range.
    """
    v = np.maximum(np.asarray(x, dtype=np.float64), 0.0)
    if isinstance(neighbor, LogShift) and neighbor.a > 0:
        return _log_space(np.log(v + neighbor.a) + 0.5 * _log_expm1(sigma * sigma))
    var = psi_variance_at(neighbor, v, sigma)
    return None if var is None else np.sqrt(var)


def psi_variance_at(neighbor: NeighborFunction, x: ArrayLike, sigma: float) -> FloatArray | None:
    r"""The ψ-mechanism's estimator variance at a group sum x (Thm 6.6), or None.

    √(x+a): :math:`2\sigma^2(2(x+a)+\sigma^2)`; log(x+a): :math:`(x+a)^2(e^{\sigma^2}-1)`;
    ψ = x: σ². Other ψ have no closed-form unbiased estimator (None). Called with a
    *public* x (an estimate from published answers) only.
    """
    v = np.maximum(np.asarray(x, dtype=np.float64), 0.0)
    s2 = sigma * sigma
    if isinstance(neighbor, SqrtShift):
        return 2.0 * s2 * (2.0 * (v + neighbor.a) + s2)
    if isinstance(neighbor, LogShift) and neighbor.a > 0:
        return log_shift_true_variance(v, sigma, neighbor.a)
    if isinstance(neighbor, DPNeighbor):
        return np.full(v.shape, s2)
    return None
