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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import polars as pl

from eree.data.eree_tables import EreeData

CELL_STAT_COLUMNS = ("count", "x_v", "establishments", "has_establishment")


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
    ) -> pl.DataFrame:
        """Cell statistics of the marginal ``workplace_by × worker_by`` (see module doc)."""
        ...

    def establishment_cells(
        self, data: EreeData, workplace_by: Sequence[str], worker_by: Sequence[str]
    ) -> pl.DataFrame:
        """Per (establishment, cell) job counts: ``workplace_id``, keys, ``n`` (Int64).

        Only cells with n > 0 are listed. Used by baselines that act on establishments
        (input noise infusion) and by audits.
        """
        ...
