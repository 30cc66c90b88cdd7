r"""The workshop variants of the ER-EE mechanisms (Haney et al., workshop version,
``papers/002_*``, §5 and Appendix A), for the Blowfish policy of
:mod:`eree.privacy.blowfish`.

The SIGMOD versions (:mod:`eree.mechanisms.eree`) are normative (DESIGN.md §10); these
are selectable per query with ``variant = "workshop"``. Notation for one cell V:
n = true count, :math:`x_V` = the largest number of the cell's workers in one
establishment (Eq. 9), :math:`S^*_{V,\beta} = \alpha x_V` the (β, G)-smooth sensitivity
(Lemma 5.5, bounded iff :math:`e^\beta \ge 1+\alpha`). All functions are vectorised over
cells (any array shape; ``x_v`` broadcasts against ``n``, so trials × cells arrays work).

* :func:`workshop_log_laplace` — Alg 1: :math:`\gamma = \Delta/\alpha`,
  :math:`\eta\sim\mathrm{Lap}(2\ln(1+\alpha)/\varepsilon)`,
  :math:`\tilde n = e^{\ln(n+\gamma)+\eta}-\gamma`. With Δ = 1 it equals the SIGMOD
  Log-Laplace.
* :func:`workshop_smooth_laplace` — Alg 2, requires
  :math:`\alpha+1 \le e^{\varepsilon/(2\ln(1/\delta))}`:
  :math:`\tilde n = n + \frac{\alpha x_V}{\varepsilon/2}\eta + \eta'`,
  :math:`\eta\sim\mathrm{Lap}(1)`, :math:`\eta'\sim\mathrm{Lap}(1/\varepsilon)`.
* :func:`workshop_smooth_gamma` — Alg 3, requires :math:`\alpha+1 \le e^{\varepsilon/4}`:
  :math:`\tilde n = n + \frac{\alpha x_V}{\varepsilon/16}\eta + \eta'`, η with density
  :math:`\propto 1/(1+|z|^4)` — the same law as SIGMOD's Smooth Gamma noise
  (normalised: :math:`(\sqrt2/\pi)/(1+z^4)`, Var = 1, E|η| = 1/√2; the paper's Lemma G
  "variance π/√2 ≈ 2.2" is the unnormalised integral and its "MSE 2.2²" squares it
  once more), from Lemma 5.6 with exponent 4: (ε/16, ε/4)-admissible.

Differences from SIGMOD: no max(·, 1) in the smooth sensitivity (cells with
:math:`x_V = 0` get only η′) and a separate :math:`\eta'\sim\mathrm{Lap}(1/\varepsilon)`;
Smooth Gamma uses all of ε for β = ε/4 and a = ε/16 instead of SIGMOD's split
ε₂ = 5 ln(1+α), ε₁ = ε − ε₂ with scale 5S/ε₁. The workshop's privacy proof
(Thm 5.4) covers the smooth term only, not η′.

Errors of the smooth variants (used by tests and the evaluation):
E|ñ − n| is the mean absolute value of :math:`bZ + \eta'` with b the smooth scale.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from eree.mechanisms.base import MechanismOutput
from eree.mechanisms.noise import FloatArray, NoiseSource
from eree.mechanisms.samplers import smooth_gamma_standard
from eree.privacy.blowfish import (
    check_workshop_log_laplace,
    check_workshop_smooth_gamma,
    check_workshop_smooth_laplace,
)

__all__ = [
    "WORKSHOP_WITHHELD",
    "workshop_log_laplace",
    "workshop_log_laplace_expectation",
    "workshop_smooth_gamma",
    "workshop_smooth_gamma_scale",
    "workshop_smooth_laplace",
    "workshop_smooth_laplace_scale",
    "workshop_smooth_sensitivity",
]

WORKSHOP_WITHHELD = (
    "withheld: the noise scale of a smooth-sensitivity mechanism depends on x_V, "
    "which is confidential (DESIGN.md §4.4)"
)


def workshop_smooth_sensitivity(x_v: ArrayLike, alpha: float) -> FloatArray:
    r"""Lemma 5.5: :math:`S^*_{V,\beta}(x) = \alpha x_V` (no max with 1).

    Valid when :math:`e^\beta \ge 1+\alpha` (unbounded otherwise).
    """
    return alpha * np.asarray(x_v, dtype=np.float64)


def workshop_smooth_laplace_scale(x_v: ArrayLike, alpha: float, epsilon: float) -> FloatArray:
    r"""Alg 2's smooth Laplace scale: :math:`S^*/(\varepsilon/2) = 2\alpha x_V/\varepsilon`."""
    return workshop_smooth_sensitivity(x_v, alpha) / (epsilon / 2.0)


def workshop_smooth_gamma_scale(x_v: ArrayLike, alpha: float, epsilon: float) -> FloatArray:
    r"""Scale of Alg 3's 1/(1+z⁴) term: :math:`S^*/(\varepsilon/16) = 16\alpha x_V/\varepsilon`."""
    return workshop_smooth_sensitivity(x_v, alpha) / (epsilon / 16.0)


def workshop_log_laplace_expectation(
    n: ArrayLike, alpha: float, epsilon: float, additive: float = 1.0
) -> FloatArray:
    r"""Lemma 5.2: :math:`E[\tilde n]+\gamma = (n+\gamma)/(1-\lambda^2)` for λ < 1 (∞ otherwise)."""
    gamma, lam = check_workshop_log_laplace(alpha, epsilon, additive, force=True)
    if lam >= 1:
        return np.full(np.shape(n), np.inf)
    return (np.asarray(n, dtype=np.float64) + gamma) / (1.0 - lam * lam) - gamma


def workshop_log_laplace(
    n: ArrayLike,
    alpha: float,
    epsilon: float,
    source: NoiseSource,
    *,
    additive: float = 1.0,
    force: bool = False,
    confidence: float = 0.95,
) -> MechanismOutput:
    r"""Log-Laplace mechanism, workshop Algorithm 1.

    :math:`\gamma = \Delta/\alpha` (``additive`` = Δ, default 1 as in the paper's
    experiments), :math:`\lambda = 2\ln(1+\alpha)/\varepsilon`,
    :math:`\tilde n = \exp(\ln(n+\gamma)+\eta)-\gamma`, :math:`\eta\sim\mathrm{Lap}(\lambda)`.

    Published estimate: :math:`\hat n = (\tilde n+\gamma)(1-\lambda^2)-\gamma`, unbiased by
    Lemma 5.2 (the paper's Thm 5.3 writes :math:`1-\lambda/2`; its proof gives
    :math:`1-\lambda^2`, DESIGN.md §10). CI from the Laplace pivot, plug-in std for
    λ < 1/2 — as for the SIGMOD mechanism, with γ = Δ/α.

    Raises:
        PrivacyParameterError: λ ≥ 1 without ``force``, Δ < 1, α or ε not positive.
    """
    gamma, lam = check_workshop_log_laplace(alpha, epsilon, additive, force=force)
    n_arr = np.asarray(n, dtype=np.float64)
    noisy = np.exp(source.add_laplace(np.log(n_arr + gamma), lam)) - gamma
    estimate = (noisy + gamma) * (1.0 - lam * lam) - gamma if lam < 1 else noisy.copy()
    q = lam * math.log(1.0 / (1.0 - confidence))
    ci_low = (noisy + gamma) * math.exp(-q) - gamma
    ci_high = (noisy + gamma) * math.exp(q) - gamma
    std: FloatArray | None
    if lam < 0.5:
        factor = math.sqrt((1.0 - lam * lam) ** 2 / (1.0 - 4.0 * lam * lam) - 1.0)
        std = (np.maximum(estimate, 0.0) + gamma) * factor
        method = (
            f"exact {confidence:.0%} CI from the Laplace pivot ln(n+Delta/alpha) = "
            "ln(noisy+Delta/alpha) - eta with public lambda; std: plug-in estimate of the sd "
            "of the bias-corrected estimate (workshop Lemma 5.2)"
        )
    else:
        std = None
        method = (
            f"exact {confidence:.0%} CI from the Laplace pivot with public lambda; std "
            "withheld: the variance is infinite for lambda >= 1/2"
        )
    return MechanismOutput(noisy, estimate, std, ci_low, ci_high, method)


def workshop_smooth_laplace(
    n: ArrayLike,
    x_v: ArrayLike,
    alpha: float,
    epsilon: float,
    source: NoiseSource,
    *,
    delta: float | None = None,
) -> MechanismOutput:
    r"""Smooth Laplace mechanism, workshop Algorithm 2 ((ε, δ, G)-Blowfish as claimed).

    Requires :math:`\alpha+1 \le e^{\varepsilon/(2\ln(1/\delta))}` (δ defaults to the
    smallest such δ, as in the workshop's evaluation; the noise does not depend on δ).
    :math:`\tilde n = n + \frac{\alpha x_V}{\varepsilon/2}\eta + \eta'`,
    :math:`\eta\sim\mathrm{Lap}(1)`, :math:`\eta'\sim\mathrm{Lap}(1/\varepsilon)`.
    Unbiased (Lemma 5.7); no standard error is published (it would reveal x_V).
    """
    check_workshop_smooth_laplace(alpha, epsilon, delta)
    with_eta_prime = source.add_laplace(n, 1.0 / epsilon)
    noisy = source.add_laplace(with_eta_prime, workshop_smooth_laplace_scale(x_v, alpha, epsilon))
    return MechanismOutput(noisy, noisy, None, None, None, WORKSHOP_WITHHELD)


def workshop_smooth_gamma(
    n: ArrayLike, x_v: ArrayLike, alpha: float, epsilon: float, source: NoiseSource
) -> MechanismOutput:
    r"""Smooth Gamma mechanism, workshop Algorithm 3 ((ε, G)-Blowfish as claimed).

    Requires :math:`\alpha+1 \le e^{\varepsilon/4}`.
    :math:`\tilde n = n + \frac{\alpha x_V}{\varepsilon/16}\eta + \eta'`, η with density
    :math:`(\sqrt2/\pi)/(1+z^4)`, :math:`\eta'\sim\mathrm{Lap}(1/\varepsilon)`. Unbiased
    (Lemma 5.7); Var = (16αx_V/ε)² + 2/ε². No standard error is published.
    """
    check_workshop_smooth_gamma(alpha, epsilon)
    with_eta_prime = source.add_laplace(n, 1.0 / epsilon)
    z = smooth_gamma_standard(source, with_eta_prime.size).reshape(with_eta_prime.shape)
    noisy = with_eta_prime + workshop_smooth_gamma_scale(x_v, alpha, epsilon) * z
    return MechanismOutput(noisy, noisy, None, None, None, WORKSHOP_WITHHELD)
