"""The published table of one query and how it is assembled from mechanism outputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from eree.mechanisms.base import Measurement


@dataclass(frozen=True)
class QueryTable:
    """One published table.

    Attributes:
        name: the query name (file stem).
        table: key columns, then per statistic s: ``s``, ``s_std``, ``s_ci_low``,
            ``s_ci_high`` (null where not publishable).
        uncertainty: statistic → how its std/CI were obtained (or why withheld).
        notes: public remarks (defaults used, public zeros); warnings are the manifest's.
        measurements: the mechanisms' Measurements behind the table, one per statistic
            (what post-processing consumes; never written as such).
    """

    name: str
    table: pl.DataFrame
    uncertainty: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    measurements: tuple[Measurement, ...] = ()

    @property
    def cells(self) -> int:
        """Number of published cells."""
        return self.table.height


#: said of every published statistic that has a confidence interval (docs/design.md#post-processing)
CLAMP_NOTE = (
    "published estimate = the mechanism's estimate clamped into its own CI (where the "
    "interval is clamped at 0, so is the estimate); the unclamped estimate is used only "
    "inside post-processing"
)


def published_estimate(out: Measurement) -> np.ndarray:
    """The value a table publishes (:meth:`Measurement.published_estimate`)."""
    return out.published_estimate()


def uncertainty_of(out: Measurement) -> str:
    """How a statistic's std/CI were obtained, and how its published estimate relates."""
    if out.ci_low is None or out.ci_high is None:
        return out.uncertainty_method
    return f"{out.uncertainty_method}; {CLAMP_NOTE}"


def statistic_columns(stat: str, out: Measurement) -> dict[str, Any]:
    """The four published columns of statistic ``stat`` from a mechanism output.

    The estimate column is :func:`published_estimate` (never outside its own CI).
    """
    n = out.estimate.shape[0]
    null = pl.repeat(None, n, dtype=pl.Float64, eager=True)

    def col(v: np.ndarray | None) -> Any:
        return null if v is None else pl.Series(np.asarray(v, dtype=np.float64))

    return {
        stat: col(published_estimate(out)),
        f"{stat}_std": col(out.std),
        f"{stat}_ci_low": col(out.ci_low),
        f"{stat}_ci_high": col(out.ci_high),
    }
