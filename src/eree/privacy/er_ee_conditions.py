"""Parameter conditions of the ER-EE mechanisms (Haney et al. 2017).

They are privacy theorems, so they live here, below the mechanisms that check them.

* Log-Laplace (Alg 1, Lemma 8.2): λ = 2 ln(1+α)/ε; λ ≥ 1 refused unless forced.
* Smooth Gamma (Alg 2, Lemma 8.6): α + 1 < e^{ε/5}; ε₂ = 5 ln(1+α), ε₁ = ε − ε₂.
* Smooth Laplace (Alg 3, Lemma 9.1): δ ≥ δ_min = exp(−ε/(2 ln(1+α))).
"""

from __future__ import annotations

import math

from eree.errors import PrivacyParameterError

#: relative slack for conditions that the default parameters meet with equality
_REL_TOL = 1e-12


def check_alpha_epsilon(alpha: float, epsilon: float) -> None:
    """Refuse α or ε that are not finite numbers > 0."""
    if not (math.isfinite(alpha) and alpha > 0):
        raise PrivacyParameterError(f"alpha must be a finite number > 0 (got {alpha!r})")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise PrivacyParameterError(f"epsilon must be a finite number > 0 (got {epsilon!r})")


def log_laplace_lambda(alpha: float, epsilon: float) -> float:
    r"""Laplace scale of Algorithm 1: :math:`\lambda = 2\ln(1+\alpha)/\varepsilon`."""
    check_alpha_epsilon(alpha, epsilon)
    return 2.0 * math.log1p(alpha) / epsilon


def check_log_laplace(alpha: float, epsilon: float, *, force: bool = False) -> float:
    """Validate Log-Laplace parameters; return λ.

    Lemma 8.2: E[ñ] is unbounded when λ ≥ 1, so such parameters are refused unless
    ``force``.
    """
    lam = log_laplace_lambda(alpha, epsilon)
    if lam >= 1.0 and not force:
        raise PrivacyParameterError(
            f"Log-Laplace needs lambda = 2 ln(1+alpha)/epsilon < 1 (Lemma 8.2: otherwise the "
            f"expected output is unbounded); alpha={alpha}, epsilon={epsilon} give "
            f"lambda={lam:.4g}. Raise epsilon, lower alpha, or set force = true."
        )
    return lam


def smooth_gamma_epsilons(alpha: float, epsilon: float) -> tuple[float, float]:
    """Validate Smooth Gamma parameters; return (ε₁, ε₂) = (ε − 5 ln(1+α), 5 ln(1+α)).

    Algorithm 2 requires α + 1 < e^{ε/5}, i.e. ε₁ > 0.
    """
    check_alpha_epsilon(alpha, epsilon)
    eps2 = 5.0 * math.log1p(alpha)
    eps1 = epsilon - eps2
    if not eps1 > _REL_TOL * epsilon:  # strict, robust to rounding of the boundary
        raise PrivacyParameterError(
            f"Smooth Gamma requires alpha + 1 < e^(epsilon/5) (Algorithm 2); alpha={alpha}, "
            f"epsilon={epsilon} violate it (needs epsilon > 5 ln(1+alpha) = {eps2:.4g})."
        )
    return eps1, eps2


def smooth_laplace_delta_min(alpha: float, epsilon: float) -> float:
    r"""Smallest δ of Algorithm 3: :math:`\delta_{min} = \exp(-\varepsilon/(2\ln(1+\alpha)))`."""
    check_alpha_epsilon(alpha, epsilon)
    return math.exp(-epsilon / (2.0 * math.log1p(alpha)))


def check_smooth_laplace(alpha: float, epsilon: float, delta: float | None) -> float:
    """Validate Smooth Laplace parameters; return δ (δ_min when ``delta`` is None).

    Algorithm 3 requires α + 1 ≤ e^{ε/(2 ln(1/δ))}, i.e. δ ≥ δ_min.
    """
    dmin = smooth_laplace_delta_min(alpha, epsilon)
    if delta is None:
        return dmin
    if not (math.isfinite(delta) and 0 < delta < 1):
        raise PrivacyParameterError(f"delta must lie in (0, 1) (got {delta!r})")
    if delta < dmin * (1 - _REL_TOL):
        raise PrivacyParameterError(
            f"Smooth Laplace requires ln(1+alpha) <= epsilon/(2 ln(1/delta)) (Algorithm 3), i.e. "
            f"delta >= delta_min = exp(-epsilon/(2 ln(1+alpha))) = {dmin:.4g}; got delta={delta} "
            f"with alpha={alpha}, epsilon={epsilon}."
        )
    return delta
