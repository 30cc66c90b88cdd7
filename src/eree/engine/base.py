"""The engine contract.

An engine is the only code that scans microdata. It loads and validates its own data —
the ``data`` it returns are its own type (Polars frames, or Spark DataFrames that stay
in Spark) — and answers every question a release asks about them, so the release path
never looks at the data's type:

=========================  =============  =============================================
method                     data           gives
=========================  =============  =============================================
``load_job_tables``              ER-EE          the validated input (only the attributes
                                          used, if given), as the engine's own data
``cell_statistics``        ER-EE          the cell statistics of a marginal (below)
``establishment_cells``    ER-EE          job counts per (establishment, cell)
``n_workplaces``           ER-EE          the number of workplaces (public)
``public_workplaces``      ER-EE          the public workplace frame when the engine
                                          holds it in memory, else ``None``
``load_establishments``    establishment  the validated input, as the engine's own data
``identity_values``        establishment  the identity query's answers, by id
``group_sums``             establishment  exact sums per group (below)
``group_max_bounds``       establishment  the largest public bound u*_ℓ per group
``clipped_group_sums``     establishment  exact clipped sums per group (below)
``n_establishments``       establishment  the number of establishments (public)
``public_columns``         establishment  public columns of every establishment, as a
                                          Polars frame
``fingerprints``           either         the content and structure fingerprints
                                          (:mod:`eree.data.fingerprint`): the same
                                          values whichever engine loaded the data
``describe``               —              what the manifest records about the
                                          engine: its kind and version; Spark: the
                                          master and Spark's version (public only)
=========================  =============  =============================================

Cell statistics are computed for a marginal over any mix of public workplace attributes
and private worker attributes. Cells (docs/design.md#cells): every combination of the queried
workplace attributes that occurs in the public workplace frame, crossed with the full
declared domain of the queried worker attributes. With ``complete=True`` the workplace
combinations with no establishment (public zeros) are listed too, with
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

The same protocol serves establishment (QCEW-like) data (docs/design.md#core-objects): the group
queries return small Polars frames, keys sorted (one row per group of ``by`` that
occurs; ``by = []``: one total row), then the attribute columns in
:func:`result_order`:

========================  =============================================================
column                    meaning
========================  =============================================================
*keys*                    ``by`` (Utf8)
*attribute*               per attribute: its exact sum, or clipped sum (Float64) —
                          confidential
:func:`bound_column`      per attribute: u*_ℓ, the group's largest public bound
                          (Float64; clipped sums and largest bounds only) — public
:data:`ESTABLISHMENTS`    number of establishments in the group (Int64) — public
========================  =============================================================

Sums are exact (:mod:`eree.engine.exact_sums`), so that every engine gives the same
bits. Each engine loads its own data: the Spark engine reads and validates in Spark,
and the data it returns are Spark-side (the ``data`` arguments are then its own types).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import polars as pl

from eree.data.config import EstablishmentDataConfig, JobTablesConfig
from eree.data.job_tables import JobTables

__all__ = [
    "CELL_STAT_COLUMNS",
    "ESTABLISHMENTS",
    "Engine",
    "bound_column",
    "result_order",
]

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
    """What every engine provides (the table of the module docstring)."""

    name: str

    # -- ER-EE data -------------------------------------------------------------------

    def load_job_tables(
        self, config: JobTablesConfig, attributes: Sequence[str] | None = None
    ) -> Any:
        """Load and validate ER-EE input (only ``attributes``, if given) for this engine."""
        ...

    def cell_statistics(
        self,
        data: JobTables,
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
        self, data: JobTables, workplace_by: Sequence[str], worker_by: Sequence[str]
    ) -> pl.DataFrame:
        """Per (establishment, cell) job counts: ``workplace_id``, keys, ``n`` (Int64).

        Only cells with n > 0 are listed. Used by baselines that act on establishments
        (input noise infusion) and by audits.
        """
        ...

    def n_workplaces(self, data: Any) -> int:
        """The number of workplaces (establishments) of loaded ER-EE data (public)."""
        ...

    def public_workplaces(self, data: Any) -> pl.DataFrame | None:
        """The public workplace frame of loaded ER-EE data, if held in memory.

        ``None`` when the engine would have to scan for it (Spark-side data); callers
        then do without (e.g. cell-count bounds from the declared domains).
        """
        ...

    # -- establishment data -----------------------------------------------------------

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

    def n_establishments(self, data: Any) -> int:
        """The number of establishments of loaded establishment data (public)."""
        ...

    def public_columns(self, data: Any, columns: Sequence[str]) -> pl.DataFrame:
        """The ``columns`` of every establishment (one row each), as a Polars frame.

        For the id and public attributes only: a confidential column never leaves the
        engine this way.
        """
        ...

    # -- either kind ------------------------------------------------------------------

    def fingerprints(self, data: Any) -> tuple[str, str]:
        """The ``(content, structure)`` fingerprints of loaded data.

        The values of :func:`eree.data.fingerprint.fingerprints` for the same rows
        loaded by Polars, whichever engine computes them.
        """
        ...

    def describe(self) -> dict[str, Any]:
        """The engine as the manifest records it (public settings and versions only)."""
        ...
