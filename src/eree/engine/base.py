"""The engine contract.

An engine computes **cell statistics** for a marginal over any mix of public workplace
attributes and private worker attributes. Cells (DESIGN.md §4): every combination of the
queried workplace attributes that occurs in the public workplace frame, crossed with the
full declared domain of the queried worker attributes. With ``complete=True`` the
workplace combinations with no establishment (public zeros) are listed too, with
``has_establishment = False``; this needs declared domains for the workplace attributes.

The result is a Polars DataFrame, one row per cell, sorted by the key columns:

========================  =============================================================
column                    meaning
========================  =============================================================
*keys*                    ``workplace_by`` then ``worker_by`` (Utf8)
``count``                 true number of jobs in the cell (Int64) — confidential
``x_v``                   largest number of the cell's jobs in one establishment
                          (Lemma 8.5) (Int64) — confidential
``establishments``        number of establishments in the cell's workplace combination
                          (Int64) — public
``has_establishment``     ``establishments > 0`` (Boolean) — public
``count_truncated``       only with ``truncate_below=θ``: jobs in establishments whose
                          total employment is < θ (node-DP truncated Laplace) (Int64)
========================  =============================================================

A Spark engine implements the same contract and must give identical frames.

The same protocol serves establishment (QCEW-like) data (DESIGN.md §1.1):
:meth:`Engine.identity_values`, :meth:`Engine.group_sums`,
:meth:`Engine.group_max_bounds` and :meth:`Engine.clipped_group_sums` return small Polars
frames (keys sorted, then the attribute columns; see
:mod:`eree.engine.polars.establishments`), with exact sums (:mod:`eree.engine.exact_sums`)
so that every engine gives the same bits. Each engine also loads its own data
(:meth:`Engine.load_eree`, :meth:`Engine.load_establishments`): the Spark engine reads
and validates in Spark, and the data it returns are Spark-side (the ``data`` arguments
are then its own types).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import polars as pl

from eree.data.config import EreeDataConfig, EstablishmentDataConfig
from eree.data.eree_tables import EreeData

CELL_STAT_COLUMNS = ("count", "x_v", "establishments", "has_establishment")

#: name of the public establishment-count column in group results
ESTABLISHMENTS = "establishments"


def bound_column(attribute: str) -> str:
    """Column of a clipped-sum result holding u*_ℓ for ``attribute``."""
    return f"{attribute}__ustar"


def result_order(by: Sequence[str], attributes: Sequence[str], cols: Sequence[Any]) -> list[str]:
    """Column order of group results.

    Keys; per attribute its value, then its u* column (when present); then
    :data:`ESTABLISHMENTS`.
    """
    names = {c if isinstance(c, str) else c.name for c in cols}
    order = list(by)
    for a in attributes:
        order += [c for c in (a, bound_column(a)) if c in names]
    return [*order, ESTABLISHMENTS]


class Engine(Protocol):
    """What every engine provides."""

    name: str

    def cell_statistics(
        self,
        data: EreeData,
        workplace_by: Sequence[str],
        worker_by: Sequence[str],
        *,
        complete: bool = False,
        truncate_below: float | None = None,
        categorical_keys: bool = False,
    ) -> pl.DataFrame:
        """Cell statistics of the marginal ``workplace_by × worker_by`` (see module doc).

        With ``categorical_keys`` the key columns are :class:`polars.Enum` (the same
        values, a small integer code per cell instead of a text value): what a release
        uses for tables it writes as text while streaming them to disk.
        """
        ...

    def establishment_cells(
        self, data: EreeData, workplace_by: Sequence[str], worker_by: Sequence[str]
    ) -> pl.DataFrame:
        """Per (establishment, cell) job counts: ``workplace_id``, keys, ``n`` (Int64).

        Only cells with n > 0 are listed. Used by baselines that act on establishments
        (input noise infusion) and by audits.
        """
        ...

    def load_eree(self, config: EreeDataConfig, attributes: Sequence[str] | None = None) -> Any:
        """Load and validate ER-EE input (only ``attributes``, if given) for this engine."""
        ...

    def load_establishments(self, config: EstablishmentDataConfig) -> Any:
        """Load and validate establishment input for this engine."""
        ...

    def identity_values(self, data: Any, attributes: Sequence[str]) -> pl.DataFrame:
        """The identity query's answers: the id, then each attribute (Float64), by id."""
        ...

    def group_sums(self, data: Any, by: Sequence[str], attributes: Sequence[str]) -> pl.DataFrame:
        """Per group of ``by``: the exact sum of each attribute and ``establishments``."""
        ...

    def group_max_bounds(self, data: Any, by: Sequence[str], bounds: pl.DataFrame) -> pl.DataFrame:
        """Per group: the largest public bound u*ℓ of each attribute of ``bounds``."""
        ...

    def clipped_group_sums(
        self, data: Any, by: Sequence[str], bounds: pl.DataFrame, attributes: Sequence[str]
    ) -> pl.DataFrame:
        """Per group: the exact clipped sums T = Σ min(r, u*ℓ) (pnc, Def 6.8) and u*ℓ."""
        ...
