"""The common result type of mechanisms."""

from __future__ import annotations

from dataclasses import dataclass

from eree.mechanisms.noise import FloatArray


@dataclass(frozen=True)
class MechanismOutput:
    """What a mechanism returns for a vector of cells.

    Attributes:
        noisy: the mechanism's raw output (e.g. the Log-Laplace ñ).
        estimate: the published estimate: the unbiased estimator where the mechanism has
            one (Log-Laplace n̂), otherwise the raw output.
        std: a publishable standard error of ``estimate`` per cell, or None where
            publishing one would reveal confidential data (DESIGN.md §4.4).
        ci_low, ci_high: a publishable confidence interval, or None.
        uncertainty_method: how std/CI were obtained, or why they are withheld.
    """

    noisy: FloatArray
    estimate: FloatArray
    std: FloatArray | None
    ci_low: FloatArray | None
    ci_high: FloatArray | None
    uncertainty_method: str
