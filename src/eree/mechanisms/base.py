r"""The core objects between the engine and everything after it (docs/design.md#core-objects).

* :class:`Mechanism` — a frozen value object per mechanism. Its parameters are validated
  when it is built; :meth:`Mechanism.cost` is the privacy cost without touching data;
  :meth:`Mechanism.public_params` is what may be published about it;
  ``mechanism(cells, source)`` draws the noise and returns a :class:`Measurement`. The
  noise scale it draws with and the cost it reports come from the same object, computed
  once (e.g. the per-cell ε of a marginal with d worker-attribute combinations).
* :class:`Cells` — the cell statistics a mechanism reads (true counts, x_v, group sums,
  clipped sums, public bounds): confidential arrays handed over by the release, never
  published.
* :class:`Measurement` — what every mechanism returns and what post-processing consumes
  (as in private-pgm): the query and statistic it answers, the published values, the
  published variance (or why it is withheld), the CI and how it was obtained.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from eree.errors import PrivacyParameterError
from eree.mechanisms.error_law import Within
from eree.mechanisms.noise import FloatArray, NoiseSource
from eree.privacy.composition import Composition, Cost

__all__ = ["VARIANCE_KINDS", "Cells", "ExpectedError", "Measurement", "Mechanism"]

#: how a Measurement's variance came about
VARIANCE_KINDS = ("public", "estimated", "withheld")


class Cells:
    """Cell statistics for one query: named, aligned arrays (confidential).

    Args:
        columns: statistic name → array (``count``, ``x_v``, ``count_truncated``, an
            attribute's group sums, ``bound`` …), broadcast to one shape: cells, or
            trials × cells in an experiment (e.g. counts per trial, x_v per cell).
        context: release-wide public or shared inputs a mechanism may need (e.g. the
            establishment-to-cell incidence and the distortion factors of noise infusion).
    """

    __slots__ = ("_columns", "context", "shape")

    def __init__(
        self, columns: Mapping[str, Any], context: Mapping[str, Any] | None = None
    ) -> None:
        names = list(columns)
        arrays = np.broadcast_arrays(*(np.asarray(columns[k], dtype=np.float64) for k in names))
        self._columns = dict(zip(names, arrays, strict=True))
        self.shape: tuple[int, ...] = arrays[0].shape if arrays else (0,)
        self.context: Mapping[str, Any] = dict(context or {})

    def __getitem__(self, name: str) -> FloatArray:
        try:
            return self._columns[name]
        except KeyError:
            raise KeyError(f"the cell statistics have no column {name!r}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def __repr__(self) -> str:  # never shows values
        return f"Cells(columns={sorted(self._columns)}, shape={self.shape})"


@dataclass(frozen=True)
class Measurement:
    """A mechanism's answer to one statistic of one query.

    Attributes:
        noisy: the mechanism's raw output (e.g. Log-Laplace ñ, the ψ-mechanism's ω).
        estimate: the published value: the unbiased estimator where the mechanism has one
            (Log-Laplace n̂, ψ-mechanism x̃), otherwise the raw output.
        std: the published standard error per cell, or None where publishing one would
            reveal confidential data (docs/design.md#what-may-be-published).
        ci_low, ci_high: the published confidence interval, or None.
        uncertainty_method: how std/CI were obtained, or why they are withheld.
        variance_kind: "public" (a function of public parameters only), "estimated"
            (from the noisy output) or "withheld".
        mechanism: the registry name of the mechanism that produced it.
        query, statistic: what was measured (filled in by the release).
    """

    noisy: FloatArray
    estimate: FloatArray
    std: FloatArray | None
    ci_low: FloatArray | None
    ci_high: FloatArray | None
    uncertainty_method: str
    variance_kind: str = "withheld"
    mechanism: str = ""
    query: str = ""
    statistic: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.variance_kind not in VARIANCE_KINDS:
            raise ValueError(f"variance_kind must be one of {VARIANCE_KINDS}")
        if (self.std is None) != (self.variance_kind == "withheld"):
            raise ValueError("a withheld variance has no std, a published one has")

    def published_estimate(self) -> FloatArray:
        """The value a table publishes: the estimate clamped into its own interval.

        An interval that is clamped (e.g. at 0 for sums of non-negative values) and an
        estimate that is not would publish an estimate outside its own interval; the
        estimate is clamped the same way instead (docs/design.md#post-processing). Without
        a CI the estimate is published as it is.
        """
        est = np.asarray(self.estimate, dtype=np.float64)
        if self.ci_low is None or self.ci_high is None:
            return est
        return np.minimum(np.maximum(est, self.ci_low), self.ci_high)

    @property
    def variance(self) -> FloatArray | None:
        """The published variance (std²), or None where it is withheld."""
        return None if self.std is None else self.std * self.std

    def named(self, query: str, statistic: str) -> Measurement:
        """The same measurement labelled with its query and statistic."""
        return replace(self, query=query, statistic=statistic)

    def with_values(self, mask: np.ndarray, value: float, std: float = 0.0) -> Measurement:
        """Cells under ``mask`` set to an exact public ``value`` (std 0, CI [value, value])."""
        if not mask.any():
            return self

        def fix(v: FloatArray, x: float) -> FloatArray:
            v = v.copy()
            v[mask] = x
            return v

        def fix_if_published(v: FloatArray | None, x: float) -> FloatArray | None:
            return None if v is None else fix(v, x)

        return replace(
            self,
            noisy=fix(self.noisy, value),
            estimate=fix(self.estimate, value),
            std=fix_if_published(self.std, std),
            ci_low=fix_if_published(self.ci_low, value),
            ci_high=fix_if_published(self.ci_high, value),
        )


@dataclass(frozen=True)
class ExpectedError:
    """A mechanism's error on one cell at stated, representative (public) cell statistics.

    For planning only (the accuracy preview of ``eree explain`` / ``eree validate``):
    computed from the mechanism's public parameters and sizes the *user* chooses, never
    from the data.

    Attributes:
        std: standard deviation of (published estimate − true value); ``inf`` where it
            is infinite, None where no closed form is known.
        mean_abs: E|published estimate − true value|, or None where unknown.
        ci_width: expected width of the published confidence interval; None where no
            interval is published.
        note: what the numbers leave out (e.g. a truncation bias), or "".
        within: ``within(t)`` = P(|published estimate − true value| ≤ t), the law of the
            error (:mod:`eree.mechanisms.error_law`: exact for integer counts, a lower
            bound where the grid's rounding is counted against ``t``); None where the
            mechanism has no closed form or the error has a confidential part.
    """

    std: float | None
    mean_abs: float | None
    ci_width: float | None
    note: str = ""
    within: Within | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Mechanism(ABC):
    """A privacy mechanism with its parameters: one object, one place for scale and cost.

    Subclasses are frozen dataclasses whose ``__post_init__`` validates the parameters
    (raising :class:`~eree.errors.PrivacyParameterError` naming the query) and fixes every
    derived scale once.
    """

    #: registry name (the spec's ``mechanism = ...``), set by :mod:`eree.mechanisms.registry`
    name: ClassVar[str] = ""
    #: "sigmod" or "workshop" (ER-EE variants), "" elsewhere; set by the registry
    variant: ClassVar[str] = ""
    #: cell statistics the mechanism reads
    needs: ClassVar[tuple[str, ...]] = ("count",)
    #: whether the mechanism needs each establishment's contribution to each cell
    #: (``cells.context``), not only cell totals (input noise infusion)
    uses_establishment_incidence: ClassVar[bool] = False
    #: θ of node-DP truncation: the engine then also counts jobs of establishments < θ
    truncate_below: ClassVar[float | None] = None

    query: str

    @abstractmethod
    def composition(self) -> Composition:
        """The composition object of the mechanism's privacy family."""

    @abstractmethod
    def per_cell_cost(self) -> Cost:
        """The cost each cell's (or each group's) noise is drawn for."""

    @property
    def multiplicity(self) -> int:
        """How many per-cell costs compose sequentially into :meth:`cost` (d, or 1)."""
        return 1

    def cost(self) -> Cost:
        """The whole query's privacy cost, computed without data."""
        return self.composition().repeat(self.per_cell_cost(), self.multiplicity)

    @abstractmethod
    def public_params(self) -> dict[str, Any]:
        """Everything about the mechanism that may be published (no data-dependent scale)."""

    def variance_floor(self) -> float | None:
        """A public lower bound on each cell's noise variance, for a withheld variance.

        For the smooth-sensitivity mechanisms: the variance at the smallest smooth
        sensitivity (the true scale depends on the confidential x_v). None when the
        mechanism has no such bound. Used only as a post-processing weight.
        """
        return None

    def expected_error(self, at: Mapping[str, float]) -> ExpectedError | None:
        """The error of one cell whose statistics are ``at`` (names as in :attr:`needs`).

        ``at`` holds representative values chosen by the caller (e.g. ``count`` = 100,
        ``x_v`` = 1), never confidential ones. None when the mechanism has no preview.
        """
        return None

    @abstractmethod
    def guarantee(self) -> str:
        """The guarantee each cell and the whole query get, in words."""

    @abstractmethod
    def __call__(self, cells: Cells, source: NoiseSource) -> Measurement:
        """Draw the noise for ``cells`` from ``source``; all randomness comes from it."""

    def _fail(self, message: str) -> PrivacyParameterError:
        return PrivacyParameterError(f"query {self.query!r}: {message}")
