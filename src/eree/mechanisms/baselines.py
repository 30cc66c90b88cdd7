r"""Differential-privacy baselines of Haney et al. §6 (DESIGN.md §4.1).

* :func:`laplace` — edge-DP: ñ = n + Lap(1/ε). Each job is in exactly one cell of a
  marginal, so a marginal costs ε (parallel composition).
* :func:`truncated_laplace` — node-DP: establishments with total employment ≥ θ are
  dropped, ñ = n_trunc + Lap(θ/ε).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from eree.errors import PrivacyParameterError
from eree.mechanisms.base import MechanismOutput
from eree.mechanisms.noise import NoiseSource


def _check_epsilon(epsilon: float) -> None:
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise PrivacyParameterError(f"epsilon must be a finite number > 0 (got {epsilon!r})")


def laplace(
    n: ArrayLike, epsilon: float, source: NoiseSource, *, confidence: float = 0.95
) -> MechanismOutput:
    r"""Edge-DP Laplace mechanism: :math:`\tilde n = n + \mathrm{Lap}(1/\varepsilon)`.

    The noise scale is public, so the standard error √2/ε and the exact interval
    ñ ± ln(1/(1−c))/ε are published.
    """
    _check_epsilon(epsilon)
    b = 1.0 / epsilon
    noisy = source.add_laplace(n, b)
    half = b * math.log(1.0 / (1.0 - confidence))
    std = np.full(noisy.shape, math.sqrt(2.0) * b)
    return MechanismOutput(
        noisy,
        noisy,
        std,
        noisy - half,
        noisy + half,
        f"public Laplace scale 1/epsilon: sd sqrt(2)/epsilon, exact {confidence:.0%} interval",
    )


def truncated_laplace(
    n_truncated: ArrayLike, theta: float, epsilon: float, source: NoiseSource
) -> MechanismOutput:
    r"""Node-DP truncated Laplace: :math:`\tilde n = n_{trunc} + \mathrm{Lap}(\theta/\varepsilon)`.

    ``n_truncated`` counts only jobs of establishments with total employment < θ. The
    estimate is biased downward by the dropped establishments, an amount that depends on
    confidential data, so no standard error or interval for the true count is published.
    """
    _check_epsilon(epsilon)
    if not (math.isfinite(theta) and theta > 0):
        raise PrivacyParameterError(f"theta must be a finite number > 0 (got {theta!r})")
    noisy = source.add_laplace(n_truncated, theta / epsilon)
    return MechanismOutput(
        noisy,
        noisy,
        None,
        None,
        None,
        "withheld: the truncation bias (jobs in establishments of size >= theta) is confidential",
    )
