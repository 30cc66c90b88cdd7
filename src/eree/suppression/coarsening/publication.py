"""A coarsened publication of one attribute: each cell's status and what it says.

Statuses are those of the reconstruction audit's table format
(docs/reconstruction-audit.md): ``exact``, ``rounded`` (deterministic, ``|T − v| ≤ b/2``),
``random_rounded`` (unbiased random, ``|T − v| < b``; written as ``range`` in the format),
``range`` (``lower ≤ T ≤ upper``) and ``suppressed``. :meth:`Publication.own_bounds` is
each cell's interval from its own publication; the attacker adds the relations
(:mod:`.check`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from eree.suppression.tables import LinkedTables

__all__ = ["STATUSES", "Publication"]

#: the statuses a coarsened cell can have
STATUSES = ("exact", "rounded", "random_rounded", "range", "suppressed")


@dataclass(frozen=True)
class Publication:
    """One attribute's cells as published (arrays indexed like the linked tables' cells).

    Attributes:
        status: per cell, one of :data:`STATUSES`.
        value: the published value (NaN for ``range`` and ``suppressed``).
        base: the rounding base (NaN where not rounded).
        lower, upper: a ``range`` cell's class (NaN elsewhere).
        integer: the values are whole numbers (intervals rounded inward).
    """

    status: np.ndarray
    value: np.ndarray
    base: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    integer: bool = True

    def own_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Each cell's interval from its own publication (before the relations)."""
        st = self.status
        n = st.size
        lo = np.zeros(n)
        hi = np.full(n, np.inf)
        m = st == "exact"
        lo[m] = hi[m] = self.value[m]
        m = st == "rounded"
        lo[m] = self.value[m] - self.base[m] / 2.0
        hi[m] = self.value[m] + self.base[m] / 2.0
        m = st == "random_rounded"
        lo[m] = self.value[m] - self.base[m]
        hi[m] = self.value[m] + self.base[m]
        if self.integer:  # strict: |T − v| < b
            lo[m] += 1.0
            hi[m] -= 1.0
        m = st == "range"
        lo[m] = self.lower[m]
        hi[m] = self.upper[m]
        lo = np.maximum(lo, 0.0)
        if self.integer:
            lo = np.ceil(lo - 1e-9)
            hi = np.where(np.isfinite(hi), np.floor(hi + 1e-9), np.inf)
        return lo, hi

    def counts(self) -> dict[str, int]:
        """Cells per status (public)."""
        return {s: int((self.status == s).sum()) for s in STATUSES}

    def to_frame(self, tables: LinkedTables, attribute: str) -> pl.DataFrame:
        """The cells in the reconstruction audit's table format, with status flags.

        Keys: ``table_code`` and each dimension's code; ``status`` in the format's
        words (random rounding written as its ``range``); the public establishment count.
        """
        c = tables.cells
        keys = ["table_code", *[d.name for d in tables.layout.dimensions]]
        lo, hi = self.own_bounds()
        rr = self.status == "random_rounded"
        status = np.where(rr, "range", self.status)
        is_range = status == "range"
        return c.select([pl.col(k).cast(pl.Utf8) for k in keys]).with_columns(
            pl.Series("table", c.get_column("table_code").cast(pl.Utf8)),
            pl.Series("attribute", np.full(self.status.size, attribute)),
            pl.Series("status", status),
            pl.Series("value", np.where(is_range, np.nan, self.value)).fill_nan(None),
            pl.Series("base", np.where(status == "rounded", self.base, np.nan)).fill_nan(None),
            pl.Series("lower", np.where(is_range, lo, np.nan)).fill_nan(None),
            pl.Series("upper", np.where(is_range, hi, np.nan)).fill_nan(None),
            pl.Series("establishments", tables.counts().astype(np.float64)),
        )
