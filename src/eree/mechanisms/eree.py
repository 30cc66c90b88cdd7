r"""ER-EE mechanisms of Haney et al., SIGMOD 2017 (``papers/001_*``), SIGMOD version.

Notation for one cell v: n = true count, x_v = the largest number of matching workers in
any single establishment of the cell (Lemma 8.5). All functions are vectorised over
cells and take the per-cell privacy parameters (for a worker-attribute marginal under
weak privacy that is ε/d; the accountant works that out, not the mechanism).

* :func:`log_laplace` — Algorithm 1.
* :func:`smooth_gamma` — Algorithm 2.
* :func:`smooth_laplace` — Algorithm 3.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from eree.mechanisms.base import MechanismOutput
from eree.mechanisms.noise import FloatArray, NoiseSource
from eree.mechanisms.samplers import smooth_gamma_standard
from eree.privacy.eree_conditions import (
    check_log_laplace,
    check_smooth_laplace,
    log_laplace_lambda,
    smooth_gamma_epsilons,
)

SMOOTH_WITHHELD = (
    "withheld: the noise scale of a smooth-sensitivity mechanism depends on x_v, "
    "which is confidential (DESIGN.md §4.4)"
)


def log_laplace_expectation(n: ArrayLike, alpha: float, epsilon: float) -> FloatArray:
    r"""Lemma 8.2: :math:`E[\tilde n] = (n+\gamma)/(1-\lambda^2) - \gamma`, γ = 1/α."""
    lam = log_laplace_lambda(alpha, epsilon)
    if lam >= 1:
        return np.full(np.shape(n), np.inf)
    gamma = 1.0 / alpha
    return (np.asarray(n, dtype=np.float64) + gamma) / (1.0 - lam * lam) - gamma


def log_laplace(
    n: ArrayLike,
    alpha: float,
    epsilon: float,
    source: NoiseSource,
    *,
    force: bool = False,
    confidence: float = 0.95,
) -> MechanismOutput:
    r"""Log-Laplace mechanism (Haney et al. Algorithm 1).

    :math:`\gamma = 1/\alpha`, :math:`\lambda = 2\ln(1+\alpha)/\varepsilon`,
    :math:`\tilde n = \exp(\ln(n+\gamma)+\eta) - \gamma`, :math:`\eta\sim\mathrm{Lap}(\lambda)`.

    Published estimate: the bias-corrected :math:`\hat n = (\tilde n+\gamma)(1-\lambda^2)-\gamma`
    (unbiased by Lemma 8.2). The confidence interval is exact, from the pivot
    :math:`\ln(n+\gamma) = \ln(\tilde n+\gamma) - \eta` and the Laplace quantile
    :math:`q=\lambda\ln(1/(1-c))`:
    :math:`[(\tilde n+\gamma)e^{-q}-\gamma,\,(\tilde n+\gamma)e^{q}-\gamma]`.
    The standard error is the plug-in estimate
    :math:`(\max(\hat n,0)+\gamma)\sqrt{(1-\lambda^2)^2/(1-4\lambda^2)-1}`, finite for λ < 1/2.
    Both depend on the data only through ñ and the public λ.
    """
    lam = check_log_laplace(alpha, epsilon, force=force)
    gamma = 1.0 / alpha
    n_arr = np.asarray(n, dtype=np.float64)
    log_noisy = source.add_laplace(np.log(n_arr + gamma), lam)
    noisy = np.exp(log_noisy) - gamma
    # Lemma 8.2 bias correction; with λ >= 1 (forced) there is none
    estimate = (noisy + gamma) * (1.0 - lam * lam) - gamma if lam < 1 else noisy.copy()
    q = lam * math.log(1.0 / (1.0 - confidence))
    ci_low = (noisy + gamma) * math.exp(-q) - gamma
    ci_high = (noisy + gamma) * math.exp(q) - gamma
    if lam < 0.5:
        factor = math.sqrt((1.0 - lam * lam) ** 2 / (1.0 - 4.0 * lam * lam) - 1.0)
        std: FloatArray | None = (np.maximum(estimate, 0.0) + gamma) * factor
        method = (
            f"exact {confidence:.0%} CI from the Laplace pivot ln(n+1/alpha) = ln(noisy+1/alpha)"
            f" - eta with public lambda; std: plug-in estimate of the sd of the "
            f"bias-corrected estimate (Lemma 8.2)"
        )
    else:
        std = None
        method = (
            f"exact {confidence:.0%} CI from the Laplace pivot with public lambda; std withheld: "
            "the variance is infinite for lambda >= 1/2"
        )
    return MechanismOutput(noisy, estimate, std, ci_low, ci_high, method)


# --------------------------------------------------------------------------- smooth sensitivity


def smooth_sensitivity(x_v: ArrayLike, alpha: float) -> FloatArray:
    r"""Lemma 8.5: :math:`S = \max(\alpha x_v, 1)` (when :math:`e^b \ge 1+\alpha`)."""
    return np.maximum(alpha * np.asarray(x_v, dtype=np.float64), 1.0)


def smooth_gamma(
    n: ArrayLike, x_v: ArrayLike, alpha: float, epsilon: float, source: NoiseSource
) -> MechanismOutput:
    r"""Smooth Gamma mechanism (Haney et al. Algorithm 2).

    :math:`\varepsilon_2 = 5\ln(1+\alpha)`, :math:`\varepsilon_1 = \varepsilon-\varepsilon_2`,
    :math:`S=\max(\alpha x_v,1)`, :math:`\tilde n = n + (5S/\varepsilon_1) Z`, Z with density
    :math:`(\sqrt2/\pi)/(1+z^4)`. Unbiased; Var = (5S/ε₁)², E|err| = 5S/(ε₁√2).
    No standard error is published (it would reveal x_v).
    """
    eps1, _ = smooth_gamma_epsilons(alpha, epsilon)
    n_arr = np.asarray(n, dtype=np.float64)
    scale = 5.0 * smooth_sensitivity(x_v, alpha) / eps1
    z = smooth_gamma_standard(source, n_arr.size).reshape(n_arr.shape)
    noisy = n_arr + scale * z
    return MechanismOutput(noisy, noisy, None, None, None, SMOOTH_WITHHELD)


def smooth_laplace(
    n: ArrayLike,
    x_v: ArrayLike,
    alpha: float,
    epsilon: float,
    source: NoiseSource,
    *,
    delta: float | None = None,
) -> MechanismOutput:
    r"""Smooth Laplace mechanism (Haney et al. Algorithm 3), (α, ε, δ)-ER-EE private.

    :math:`S=\max(\alpha x_v,1)`, :math:`\tilde n = n + (2S/\varepsilon)\eta`,
    :math:`\eta\sim\mathrm{Lap}(1)`. Unbiased; E|err| = 2S/ε (Lemma 9.3); the error does not
    depend on δ, which only has to satisfy the condition of :func:`check_smooth_laplace`.
    """
    check_smooth_laplace(alpha, epsilon, delta)
    scale = 2.0 * smooth_sensitivity(x_v, alpha) / epsilon
    noisy = source.add_laplace(n, scale)
    return MechanismOutput(noisy, noisy, None, None, None, SMOOTH_WITHHELD)
