r"""Differential-privacy baselines of Haney et al. §6 (docs/design.md#er-ee-mechanisms).

* :class:`EdgeLaplace` — edge-DP: ñ = n + Lap(1/ε). Each job is in exactly one cell of a
  marginal, so a marginal costs ε (parallel composition), whatever its attributes.
* :class:`TruncatedLaplace` — node-DP: establishments with total employment ≥ θ are
  dropped, ñ = n_trunc + Lap(θ/ε); an establishment's contribution to a marginal is at
  most θ in L1, so a marginal costs ε.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike
from typing_extensions import override

from eree.mechanisms.base import Cells, ExpectedError, Measurement
from eree.mechanisms.er_ee import CountMechanism, laplace_quantile
from eree.mechanisms.error_law import laplace_within
from eree.mechanisms.noise import NoiseSource
from eree.mechanisms.sampling import additive, rounded_variance
from eree.privacy.definitions import EdgeDP, NodeDP

__all__ = ["EdgeLaplace", "TruncatedLaplace", "laplace", "truncated_laplace"]


@dataclass(frozen=True, kw_only=True)
class WholeMarginalMechanism(CountMechanism):
    """A DP baseline whose privacy analysis covers a whole marginal at ε (no split by d).

    Edge-DP: each job is in exactly one cell of any marginal (parallel composition over
    the cells). Node-DP with truncation at θ: an establishment contributes < θ to the
    whole marginal in L1.
    """

    def __post_init__(self) -> None:
        object.__setattr__(self, "worker_cells", 1)  # the worker attributes do not split ε
        super().__post_init__()

    @override
    @classmethod
    def cell_epsilon(cls, epsilon: float, worker_cells: int) -> float:
        """Every cell gets the marginal's ε."""
        return epsilon

    @override
    def epsilon_divisor(self) -> Fraction:
        """K: a worker's k jobs move the whole marginal k times as far as one job.

        docs/privacy.md#several-jobs-per-worker; 1 with one job per worker.
        """
        return Fraction(self.jobs_per_worker)


@dataclass(frozen=True, kw_only=True)
class EdgeLaplace(WholeMarginalMechanism):
    r"""Edge-DP Laplace mechanism: :math:`\tilde n = n + \mathrm{Lap}(1/\varepsilon)`.

    The noise scale is public, so the standard error √2/ε and the exact interval
    ñ ± ln(1/(1−c))/ε are published. Worker attributes change nothing: each job is in
    exactly one cell of any marginal.
    """

    allowed_definitions: ClassVar[tuple[str, ...]] = ("edge-dp",)
    definition: str = "edge-dp"
    scale: float = field(init=False, default=0.0)

    def _derive(self) -> None:
        object.__setattr__(self, "scale", 1.0 / self.epsilon_cell)

    @override
    def public_params(self) -> dict[str, Any]:
        return {"scale": self.scale, "grid": self.grid}

    @override
    def guarantee(self) -> str:
        return f"{EdgeDP(self.epsilon)}; each job is in exactly one cell" + self._jobs_words()

    @override
    def expected_error(self, at: Mapping[str, float]) -> ExpectedError | None:
        """Lap(1/ε) rounded to the grid, as published.

        std: the rounded noise's; E|error| = 1/ε (before rounding); the published
        interval's width 2·ln(1/(1−c))/ε + grid.
        """
        b, grid = self.scale, float(self.grid or 1)
        sd = math.sqrt(rounded_variance("laplace", b, grid, on_grid=grid <= 1))
        return ExpectedError(sd, b, 2.0 * laplace_quantile(b, self.confidence) + grid,
                             "E|error| of the noise before rounding to the grid",
                             laplace_within(b, grid, on_grid=grid <= 1))  # fmt: skip

    @override
    def __call__(self, cells: Cells, source: NoiseSource) -> Measurement:
        grid = float(self.grid)  # type: ignore[arg-type]
        noisy = additive(source, cells["count"], "laplace", self.scale, grid,
                         numerator=1.0, denominator=self.epsilon_cell)  # fmt: skip
        half = laplace_quantile(self.scale, self.confidence) + grid / 2
        sd = math.sqrt(rounded_variance("laplace", self.scale, grid, on_grid=grid <= 1))
        std = np.full(noisy.shape, sd)
        return Measurement(
            noisy, noisy, std, noisy - half, noisy + half,
            f"public Laplace scale 1/epsilon, rounded to the grid {grid:g}: sd of the rounded "
            f"noise (exact for integer counts), {self.confidence:.0%} interval of the Laplace "
            "noise widened by half the grid (coverage at least the level)",
            "public", self.name,
        )  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class TruncatedLaplace(WholeMarginalMechanism):
    r"""Node-DP truncated Laplace: :math:`\tilde n = n_{trunc} + \mathrm{Lap}(\theta/\varepsilon)`.

    ``count_truncated`` counts only jobs of establishments with total employment < θ. The
    estimate is biased downward by the dropped establishments, an amount that depends on
    confidential data, so no standard error or interval for the true count is published.
    """

    needs: ClassVar[tuple[str, ...]] = ("count_truncated",)
    allowed_definitions: ClassVar[tuple[str, ...]] = ("node-dp",)
    definition: str = "node-dp"
    theta: float | None = None
    scale: float = field(init=False, default=0.0)

    def _derive(self) -> None:
        if self.theta is None:
            raise self._fail(
                "truncated_laplace needs theta (establishments with total employment >= "
                "theta are dropped)"
            )
        if isinstance(self.theta, bool) or not (math.isfinite(self.theta) and self.theta > 0):
            raise self._fail(f"theta must be a finite number > 0 (got {self.theta!r})")
        object.__setattr__(self, "scale", self.theta / self.epsilon_cell)
        # θ: the engine counts only establishments with total employment < θ
        object.__setattr__(self, "truncate_below", self.theta)

    @override
    def public_params(self) -> dict[str, Any]:
        return {"theta": self.theta, "scale": self.scale, "grid": self.grid}

    @override
    def variance_floor(self) -> float | None:
        """2(θ/ε)²: the noise variance (public; the truncation bias is not)."""
        return 2.0 * self.scale**2

    @override
    def guarantee(self) -> str:
        return (
            f"{NodeDP(self.epsilon)}; each establishment contributes < θ={self.theta:g} jobs"
            + self._jobs_words()
        )

    @override
    def expected_error(self, at: Mapping[str, float]) -> ExpectedError | None:
        """The noise Lap(θ/ε) alone: std √2·θ/ε, E|noise| = θ/ε (the bias is confidential)."""
        b = self.scale
        return ExpectedError(
            math.sqrt(2.0) * b, b, None,
            f"noise only: jobs in establishments of size >= theta = {self.theta:g} are dropped, "
            "a bias not included here",
        )  # fmt: skip

    @override
    def __call__(self, cells: Cells, source: NoiseSource) -> Measurement:
        noisy = additive(source, cells["count_truncated"], "laplace", self.scale,
                         self.grid, numerator=self.theta,  # type: ignore[arg-type]
                         denominator=self.epsilon_cell)  # fmt: skip
        return Measurement(
            noisy, noisy, None, None, None,
            "withheld: the truncation bias (jobs in establishments of size >= theta) is "
            "confidential",
            "withheld", self.name,
        )  # fmt: skip


def laplace(
    n: ArrayLike,
    epsilon: float,
    source: NoiseSource,
    *,
    confidence: float = 0.95,
    grid: float | None = None,
) -> Measurement:
    """Convenience: :class:`EdgeLaplace` at ``epsilon`` on the counts ``n``."""
    return EdgeLaplace(query="cells", epsilon=epsilon, confidence=confidence, grid=grid)(
        Cells({"count": n}), source
    )


def truncated_laplace(
    n_truncated: ArrayLike,
    theta: float,
    epsilon: float,
    source: NoiseSource,
    *,
    grid: float | None = None,
) -> Measurement:
    """Convenience: :class:`TruncatedLaplace` at ``epsilon``, θ on truncated counts."""
    return TruncatedLaplace(query="cells", epsilon=epsilon, theta=theta, grid=grid)(
        Cells({"count_truncated": n_truncated}), source
    )
