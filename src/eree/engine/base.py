"""The engine contract.

An engine is the only code that scans microdata. It loads and validates its own data —
the ``data`` it returns are its own type (Polars frames, or Spark DataFrames that stay
in Spark) — and answers every question a release asks about them, so the release path
never looks at the data's type. The release path holds loaded data as an opaque handle,
typed :class:`LoadedJobTables` or :class:`LoadedEstablishments`: the handle shows the
public facts every engine's data share (declared domains; the id column, configuration
and column names of establishment data) and nothing else, so a release that reached for
a frame would be a type error, not a crash on the other engine. An engine given another
engine's data refuses it (``TypeError``).

=========================  =============  =============================================
method                     data           gives
=========================  =============  =============================================
``load_job_tables``              ER-EE          the validated input (only the attributes
                                          used, if given), as the engine's own data
``cell_statistics``        ER-EE          the cell statistics of a marginal (below)
``establishment_cells``    ER-EE          job counts per (establishment, cell), with
                                          each establishment's index (below)
``n_workplaces``           ER-EE          the number of workplaces (public)
``workplace_counts``       ER-EE          the public frame's establishments per
                                          combination of workplace attributes
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
``structure_counts``       either         per workplace, the word of its id and its
                                          job count (the ledger's similarity sketch,
                                          :mod:`eree.privacy.similarity`); confidential
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

``establishment_cells`` lists, per establishment and cell with jobs, ``workplace_id``, the
keys, ``n`` (its jobs in the cell, Int64) and ``establishment`` (UInt32): the workplace's
index among all workplace ids of the public frame in sorted order, 0 … n_workplaces − 1 —
the same index whichever engine loaded the data and however its files were ordered
(noise infusion draws one factor per index). ``workplace_counts(data, by)`` gives one
row per combination of the workplace attributes ``by`` that occurs in the public frame
(keys Utf8, sorted) and ``establishments`` (Int64): what post-processing needs of the
public frame (establishments per cell, the nesting of geography levels), without the
frame itself.

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

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import polars as pl

from eree.data.config import EstablishmentDataConfig, JobSelection, JobTablesConfig

__all__ = [
    "CELL_STAT_COLUMNS",
    "ESTABLISHMENTS",
    "ESTABLISHMENT_INDEX",
    "Engine",
    "LoadedEstablishments",
    "LoadedJobTables",
    "bound_column",
    "result_order",
]

CELL_STAT_COLUMNS = ("count", "x_v", "establishments", "has_establishment")

#: name of the public establishment-count column in group results
ESTABLISHMENTS = "establishments"

#: column of :meth:`Engine.establishment_cells`: the workplace's index in sorted id order
ESTABLISHMENT_INDEX = "establishment"


class LoadedJobTables(Protocol):
    """Loaded ER-EE data as the release path holds it: an opaque handle.

    Only the engine that loaded the data reads them; what the handle shows is public
    (the declared domains of the spec). Polars' :class:`~eree.data.job_tables.JobTables`
    and Spark's ``SparkJobTables`` both are one.
    """

    @property
    def domains(self) -> Mapping[str, tuple[str, ...]]:
        """Declared domain of every worker attribute (and workplace ones that have one)."""
        ...

    @property
    def selection(self) -> JobSelection | None:
        """What the job-selection rule dropped, or ``None`` (one job per worker).

        Confidential counts, for ``eree validate`` only.
        """
        ...


class LoadedEstablishments(Protocol):
    """Loaded establishment data as the release path holds it: an opaque handle.

    Shows the id column, the ``[data]`` configuration and the loaded columns' names
    (public: the spec's and the file's header); the values stay with the engine.
    """

    @property
    def id_column(self) -> str:
        """The establishment id column."""
        ...

    @property
    def config(self) -> EstablishmentDataConfig:
        """The ``[data]`` configuration the data were loaded with."""
        ...

    @property
    def columns(self) -> tuple[str, ...]:
        """The names of the loaded columns (derived ones included)."""
        ...


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
    ) -> LoadedJobTables:
        """Load and validate ER-EE input (only ``attributes``, if given) for this engine."""
        ...

    def cell_statistics(
        self,
        data: LoadedJobTables,
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
        self, data: LoadedJobTables, workplace_by: Sequence[str], worker_by: Sequence[str]
    ) -> pl.DataFrame:
        """Per (establishment, cell) job counts (module doc).

        Columns ``workplace_id``, keys, ``n`` (Int64), then :data:`ESTABLISHMENT_INDEX`
        (UInt32). Only cells with n > 0 are listed, sorted by ``workplace_id`` then the
        keys. Used by baselines that act on establishments (input noise infusion) and by
        audits.
        """
        ...

    def n_workplaces(self, data: LoadedJobTables) -> int:
        """The number of workplaces (establishments) of loaded ER-EE data (public)."""
        ...

    def workplace_counts(self, data: LoadedJobTables, by: Sequence[str]) -> pl.DataFrame:
        """The public frame's establishments per combination of the workplace attributes ``by``.

        One row per combination that occurs (keys Utf8, sorted), then
        :data:`ESTABLISHMENTS` (Int64); ``by = []``: one row, every workplace.
        """
        ...

    def public_workplaces(self, data: LoadedJobTables) -> pl.DataFrame | None:
        """The public workplace frame of loaded ER-EE data, if held in memory.

        ``None`` when the engine would have to scan for it (Spark-side data); callers
        then do without (e.g. cell-count bounds from the declared domains).
        """
        ...

    # -- establishment data -----------------------------------------------------------

    def load_establishments(self, config: EstablishmentDataConfig) -> LoadedEstablishments:
        """Load and validate establishment input for this engine."""
        ...

    def identity_values(
        self, data: LoadedEstablishments, attributes: Sequence[str]
    ) -> pl.DataFrame:
        """The identity query's answers: the id, then each attribute (Float64), by id."""
        ...

    def group_sums(
        self, data: LoadedEstablishments, by: Sequence[str], attributes: Sequence[str]
    ) -> pl.DataFrame:
        """Per group of ``by``: the exact sum of each attribute and ``establishments``."""
        ...

    def group_max_bounds(
        self, data: LoadedEstablishments, by: Sequence[str], bounds: pl.DataFrame
    ) -> pl.DataFrame:
        """Per group: the largest public bound u*ℓ of each attribute of ``bounds``."""
        ...

    def clipped_group_sums(
        self,
        data: LoadedEstablishments,
        by: Sequence[str],
        bounds: pl.DataFrame,
        attributes: Sequence[str],
    ) -> pl.DataFrame:
        """Per group: the exact clipped sums T = Σ min(r, u*ℓ) (pnc, Def 6.8) and u*ℓ."""
        ...

    def n_establishments(self, data: LoadedEstablishments) -> int:
        """The number of establishments of loaded establishment data (public)."""
        ...

    def public_columns(self, data: LoadedEstablishments, columns: Sequence[str]) -> pl.DataFrame:
        """The ``columns`` of every establishment (one row each), as a Polars frame.

        For the id and public attributes only: a confidential column never leaves the
        engine this way.
        """
        ...

    # -- either kind ------------------------------------------------------------------

    def fingerprints(self, data: LoadedJobTables | LoadedEstablishments) -> tuple[str, str]:
        """The ``(content, structure)`` fingerprints of loaded data.

        The values of :func:`eree.data.fingerprint.fingerprints` for the same rows
        loaded by Polars, whichever engine computes them.
        """
        ...

    def structure_counts(self, data: LoadedJobTables | LoadedEstablishments) -> tuple[Any, Any]:
        """Per workplace (establishment) row: the word of its id, its number of jobs.

        The values of :func:`eree.data.fingerprint.structure_counts` (numpy uint64 and
        int64 arrays, in any row order) whichever engine loaded the data. Confidential
        (sizes): only the ledger's keyed sketch of them is kept.
        """
        ...

    def describe(self) -> dict[str, Any]:
        """The engine as the manifest records it (public settings and versions only)."""
        ...
