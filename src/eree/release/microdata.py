r"""Protected establishment microdata from a GEDP release (Webb et al. §7).

See docs/design.md#post-processing, #release-outputs.

With ``[postprocess] microdata = true`` a GEDP release also writes
``DIR/microdata.parquet``: one row per establishment — the id, the public attributes and
one column per measured confidential attribute — obtained by inverse-variance weighted
least squares (Eq. 1 of the QCEW paper, :func:`eree.postprocess.wls.solve_wls`) from the
**published tables only**:

* every (query, attribute) of the release is one mechanism
  :class:`~eree.mechanisms.base.Measurement`, turned into one WLS observation
  (:class:`~eree.postprocess.wls.GroupSumObservation`): its published estimate per cell
  (the ψ-mechanism's unbiased x̃ of Thm 6.6 — for the identity query one value per
  establishment —, pnc's noisy clipped sum, Estab-Gaussian's noisy answer) with its
  published variance: the *estimated* v̂ for the ψ-mechanism (its true variance depends
  on x and is never published, docs/design.md#what-may-be-published), the exact public (Δ_ℓ/μ)² for
  pnc, (Δ_ψ/μ)² for
  Estab-Gaussian;
* establishments are mapped to the cells of each table through their public attributes;
* a pnc cell with Δ_ℓ = 0 (every bound u_{j,i} in the group is 0, so the clipped sum is 0
  exactly whatever the true values) carries no information about the true sum and is left
  out (variance ∞);
* each attribute is solved on its own (:func:`eree.postprocess.wls.reconstruct_microdata`),
  optionally under non-negativity (``[postprocess] nonnegative``).

The microdata is a post-processing of the published tables: it costs no privacy budget,
and :func:`build_microdata` never sees a confidential value (it takes the tables and a
frame of public columns). Any grouping can then be tabulated from it
(:func:`tabulate_levels`: QCEW aggregation levels, state / county × total, supersector,
sector, NAICS-3 … NAICS-6). With ``consistent = true`` every released table is replaced
by its tabulation (:func:`tabulated_tables`). With ``nonnegative`` too, the solve is the
bias-corrected one (:mod:`eree.postprocess.bias_corrected`): a grouping whose plain
non-negative tabulation is evidently biased (the bias summed over many establishments)
has its totals fixed to the combined unbiased estimates of its cells. The never-worse
check of :func:`tabulated_tables` stays as a safety net: a table it still finds worse
keeps its own published values.

A ψ without a published variance estimate (``combine``, ``heterogeneous``, user-defined
ψ: no unbiased estimator is known, :mod:`eree.mechanisms.estimators`) cannot weight
Eq. 1: :func:`check_microdata_plan` refuses such plans before any data is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from eree.data.qcew import LEVEL_TITLES, QCEW_AGGREGATION_LEVELS
from eree.engine.base import Engine, LoadedEstablishments
from eree.errors import SpecError
from eree.mechanisms.base import Measurement
from eree.mechanisms.estimators import psi_estimates
from eree.mechanisms.gedp import PsiMechanism
from eree.postprocess.bias_corrected import BiasCorrected, solve_bias_corrected
from eree.postprocess.guard import TabulationCheck, tabulation_check
from eree.postprocess.sqrt_space import solve_sqrt_space
from eree.postprocess.wls import (
    GroupSumObservation,
    SqrtAnswers,
    WLSResult,
    reconstruct_microdata,
    tabulate,
)
from eree.privacy.neighbors import NeighborFunction, SqrtShift
from eree.release.spec import Plan
from eree.release.tables import QueryTable

__all__ = [
    "DEFAULT_LEVELS",
    "MICRODATA_FILE",
    "MicrodataResult",
    "build_microdata",
    "check_microdata_plan",
    "level_columns",
    "level_title",
    "microdata_measurements",
    "public_frame",
    "tabulate_levels",
    "tabulated_tables",
]

#: file name of the microdata inside a release directory
MICRODATA_FILE = "microdata.parquet"

#: how a Measurement's published variance came about, in the manifest's words
_VARIANCE_WORDS = {
    "public": "public: exact, a function of public parameters only (Def 6.2, Def 6.8; ψ = x)",
    "estimated": (
        "estimated: v̂ from the noisy answer (Thm 6.6); the true variance is not published"
    ),
}


def check_microdata_plan(plan: Plan) -> None:
    """Refuse, before any data is read, a plan whose microdata cannot be computed.

    Raises:
        SpecError: microdata asked for a non-GEDP (ER-EE / DP) release, or a ψ-mechanism
            query whose ψ publishes no variance estimate (nothing to weight Eq. 1 with).
    """
    if plan.privacy.definition != "gedp" or not hasattr(plan.data, "confidential"):
        raise SpecError(
            "[postprocess] microdata = true is available for establishment (GEDP) releases "
            'only ([data] kind = "establishments", definition = "gedp")'
        )
    from eree.release.build import gedp_definition_from_plan

    definition = gedp_definition_from_plan(plan)
    for q in plan.queries:
        if q.mechanism != PsiMechanism.name:
            continue
        for a in q.mu or {}:
            nb = definition.neighbor(a)
            if psi_estimates(np.ones(1), nb, 1.0).variance is None:
                raise SpecError(
                    f"query {q.name!r}, attribute {a!r}: the ψ-mechanism with "
                    f"{nb.describe()} publishes no variance estimate, so the weighted "
                    "least squares of the microdata (Eq. 1) has no weights; use ψ = sqrt, "
                    "sqrt_shift, log_shift or dp, or set [postprocess] microdata = false"
                )


def public_frame(data: LoadedEstablishments, engine: Engine) -> pl.DataFrame:
    """The id and public columns of loaded establishments (no confidential column)."""
    return engine.public_columns(data, [data.id_column, *data.config.public])


def _group_index(
    public: pl.DataFrame, table: pl.DataFrame, keys: Sequence[str], query: str
) -> np.ndarray:
    """Row of ``table`` (the cell) of every establishment of ``public``, by ``keys``."""
    keys = list(keys)
    if not keys:
        if table.height != 1:
            raise SpecError(f"table {query!r}: a total query must have exactly one row")
        return np.zeros(public.height, dtype=np.intp)
    cells = table.select(keys).with_row_index("__cell")
    if cells.select(keys).is_duplicated().any():
        raise SpecError(f"table {query!r}: duplicated cells")
    left = public.select(keys)
    try:
        cells = cells.with_columns([pl.col(k).cast(left.schema[k]) for k in keys])
    except pl.exceptions.PolarsError as e:
        raise SpecError(f"table {query!r}: key columns do not match the public frame") from e
    idx = left.join(cells, on=keys, how="left", maintain_order="left").get_column("__cell")
    if idx.null_count():
        raise SpecError(
            f"table {query!r}: some establishments belong to no published cell "
            f"(keys {', '.join(keys)})"
        )
    return idx.to_numpy().astype(np.intp)


def microdata_measurements(
    plan: Plan, tables: Sequence[QueryTable], public: pl.DataFrame
) -> tuple[list[GroupSumObservation], dict[str, list[dict[str, Any]]]]:
    """The WLS observations of a GEDP release, from the mechanisms' Measurements.

    Each published table carries the :class:`~eree.mechanisms.base.Measurement` of each
    attribute (its published estimate and published variance, or ``None`` when withheld);
    the table itself only supplies the cells' public keys.

    Args:
        plan: the release plan (queries and their groupings).
        tables: the published tables (:func:`eree.release.gedp.release_gedp`).
        public: one row per establishment with the id column and the public columns the
            queries group by (:func:`public_frame`); its row order is the microdata's.

    Returns:
        ``(observations, notes)``: one :class:`GroupSumObservation` per (query, attribute),
        and per attribute a list of ``{query, mechanism, cells, cells_used, variance}``
        describing how each measurement was weighted (for the manifest).

    Raises:
        SpecError: a measurement has no published variance, or a table's cells do not
            match the public frame.
    """
    id_col = plan.establishment_data.id
    from eree.release.build import gedp_definition_from_plan

    definition = gedp_definition_from_plan(plan)
    by_name = {t.name: t for t in tables}
    observations: list[GroupSumObservation] = []
    notes: dict[str, list[dict[str, Any]]] = {}
    for q in plan.queries:
        if q.name not in by_name:
            raise SpecError(f"no published table for query {q.name!r}")
        t = by_name[q.name]
        keys = [id_col] if q.by == "identity" else list(q.by)
        idx = _group_index(public, t.table, keys, q.name)
        groups: np.ndarray | None = idx
        if q.by == "identity":
            if t.table.height != public.height:
                raise SpecError(f"identity table {q.name!r} must have one row per establishment")
            groups = None
        for m in t.measurements:
            a = m.statistic
            if m.variance is None:
                raise SpecError(
                    f"table {q.name!r}: attribute {a!r} has no published variance "
                    f"({m.uncertainty_method}); the microdata's weighted least squares needs one "
                    "per cell"
                )
            var = np.asarray(m.variance, dtype=np.float64)
            unused = ~(var > 0)
            var = np.where(unused, np.inf, var)
            values = np.where(unused, 0.0, m.estimate)
            sqrt = _sqrt_answers(m, definition.neighbor(a))
            if groups is None:  # identity: put the values in the public frame's order
                values, var = values[idx], var[idx]
                if sqrt is not None:
                    sqrt = SqrtAnswers(sqrt.omega[idx], sqrt.sigma, sqrt.a)
            observations.append(GroupSumObservation(q.name, groups, values, var, a, sqrt))
            note: dict[str, Any] = {
                "query": q.name,
                "mechanism": m.mechanism,
                "cells": int(t.table.height),
                "cells_used": int(t.table.height - unused.sum()),
                "variance": _VARIANCE_WORDS[m.variance_kind],
            }
            if unused.any():
                note["left_out"] = "cells with variance 0 (pnc: Δ_ℓ = 0, the sum is clipped to 0)"
            notes.setdefault(a, []).append(note)
    return observations, notes


def _sqrt_answers(m: Measurement, neighbor: NeighborFunction) -> SqrtAnswers | None:
    """The ψ-space answers ω of m's cells answered by the ψ-mechanism with ψ = √(x + a).

    ω is the mechanism's output (x̃ = ω² − σ² − a is computed from it), so fitting it is
    post-processing (:mod:`eree.postprocess.sqrt_space`).
    """
    if not isinstance(neighbor, SqrtShift) or "sigma" not in m.extra:
        return None
    if m.mechanism == PsiMechanism.name:
        psi = np.ones(np.shape(m.noisy), dtype=bool)
    elif "chosen" in m.extra:  # the adaptive choice: the cells ψ answered
        psi = np.asarray(m.extra["chosen"]) == PsiMechanism.name
    else:
        return None
    if not psi.any():
        return None
    omega = np.where(psi, np.asarray(m.noisy, dtype=np.float64), np.nan)
    return SqrtAnswers(omega, float(m.extra["sigma"]), float(neighbor.a))


@dataclass(frozen=True)
class MicrodataResult:
    """Reconstructed establishment microdata.

    Attributes:
        frame: the id, the public columns, then one Float64 column per attribute.
        results: attribute → the WLS solution (:class:`~eree.postprocess.wls.WLSResult`).
        observations: the observations the solution is computed from.
        nonnegative: whether x ≥ 0 was imposed.
        notes: attribute → how each measurement was weighted.
        fit: ``"eq1"`` or ``"sqrt-space"`` (``[postprocess] microdata_fit``).
        unconstrained: with ``nonnegative``, the same columns solved by Eq. 1 without
            the constraint (unbiased; the reference of the never-worse check of
            :func:`tabulated_tables`), else None.
    """

    frame: pl.DataFrame
    results: dict[str, WLSResult]
    observations: list[GroupSumObservation]
    nonnegative: bool
    notes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    fit: str = "eq1"
    unconstrained: pl.DataFrame | None = None
    #: with ``nonnegative`` and ``consistent`` (Eq. 1 fit): attribute → the bias-corrected
    #: solve (:mod:`eree.postprocess.bias_corrected`: which groupings were anchored)
    bias_corrected: dict[str, BiasCorrected] = field(default_factory=dict)

    def manifest_entry(self, file: str = MICRODATA_FILE) -> dict[str, Any]:
        """How the microdata was computed (public information only), for the manifest."""
        attrs: dict[str, Any] = {}
        for a, r in self.results.items():
            attrs[a] = {
                "measurements": self.notes.get(a, []),
                "solver": r.method,
                "iterations": int(r.iterations),
                "converged": bool(r.converged),
                "relative_residual": float(r.relative_residual),
            }
            if self.nonnegative:
                attrs[a]["kkt_violation"] = float(r.kkt_violation)
            if a in self.bias_corrected:
                attrs[a]["bias_corrected"] = self.bias_corrected[a].manifest_entry()
        return {
            "file": file,
            "rows": self.frame.height,
            "columns": self.frame.columns,
            "method": (
                "inverse-variance weighted least squares (Webb et al. §7, Eq. 1), each "
                "attribute on its own: min Σ_q Σ_g (Σ_{j∈g} x_j − a_g)² / v_g over the "
                "published cells a_g, with v_g the square of the published standard error "
                "(estimated v̂ for ψ-mechanism answers, exact public variances for pnc and "
                "Estab-Gaussian)"
            ),
            "fit": self.fit
            + (
                ": √-ψ answers fitted in √-space by Gauss–Newton, the total anchored to the "
                "inverse-variance combination of the queries' totals (docs/spec.md, "
                "[postprocess] microdata_fit)"
                if self.fit == "sqrt-space"
                else ": Eq. 1"
            ),
            "inputs": "the published tables only (post-processing: no additional privacy cost)",
            "nonnegative": self.nonnegative,
            "attributes": attrs,
        }


def build_microdata(
    plan: Plan,
    tables: Sequence[QueryTable],
    public: pl.DataFrame,
    *,
    nonnegative: bool | None = None,
    **options: Any,
) -> MicrodataResult:
    """Reconstruct establishment microdata from a GEDP release's published tables.

    Args:
        plan: the release plan.
        tables: the published tables.
        public: id + public columns, one row per establishment (:func:`public_frame`);
            confidential columns, if present, are ignored (dropped before anything else).
        nonnegative: impose x ≥ 0 (default: the plan's ``[postprocess] nonnegative``).
        **options: passed to :func:`eree.postprocess.wls.solve_wls` (``method``,
            ``rtol``, …).

    Returns:
        :class:`MicrodataResult` (attributes in ``[data].confidential`` order, those the
        release measures).
    """
    check_microdata_plan(plan)
    conf = set(plan.establishment_data.confidential)
    public = public.select([c for c in public.columns if c not in conf])
    nonneg = bool(plan.postprocess.nonnegative if nonnegative is None else nonnegative)
    observations, notes = microdata_measurements(plan, tables, public)
    corrected: dict[str, BiasCorrected] = {}
    if plan.postprocess.microdata_fit == "sqrt-space":
        solved = {
            a: solve_sqrt_space(public.height, obs, nonnegative=nonneg, **options)
            for a, obs in _by_attribute(observations).items()
        }
    elif nonneg and plan.postprocess.consistent:  # docs/publication-grade.md, section 5
        corrected = {
            a: solve_bias_corrected(public.height, obs, **options)
            for a, obs in _by_attribute(observations).items()
        }
        solved = {a: c.result for a, c in corrected.items()}
    else:
        solved = reconstruct_microdata(public.height, observations, nonnegative=nonneg, **options)
    attrs = [a for a in plan.establishment_data.confidential if a in solved]
    frame = public.with_columns([pl.Series(a, solved[a].x, dtype=pl.Float64) for a in attrs])
    free = None
    if nonneg and plan.postprocess.consistent:
        plain = (
            {a: c.unconstrained for a, c in corrected.items()}
            if corrected
            else reconstruct_microdata(public.height, observations, nonnegative=False, **options)
        )
        free = public.with_columns([pl.Series(a, plain[a].x, dtype=pl.Float64) for a in attrs])
    return MicrodataResult(
        frame, {a: solved[a] for a in attrs}, observations, nonneg, notes,
        plan.postprocess.microdata_fit, free,
        {a: corrected[a] for a in attrs if a in corrected},
    )  # fmt: skip


def _by_attribute(
    observations: Sequence[GroupSumObservation],
) -> dict[str, list[GroupSumObservation]]:
    by_attr: dict[str, list[GroupSumObservation]] = {}
    for o in observations:
        by_attr.setdefault(str(o.attribute), []).append(o)
    return by_attr


#: the aggregation levels of the QCEW paper's evaluation (ownership ignored, as in its
#: Tables 8 and 9): state and county × total, supersector, sector, NAICS-3 … NAICS-6
DEFAULT_LEVELS: tuple[int, ...] = (50, 53, 54, 55, 56, 57, 58, 70, 73, 74, 75, 76, 77, 78)


def level_columns(level: int, columns: Sequence[str], *, ownership: bool = False) -> list[str]:
    """The group-by columns of a QCEW aggregation level present in a one-state file.

    ``state`` is dropped when absent (a one-state file: the state level is the whole file);
    ``own`` unless ``ownership``.
    """
    if level not in QCEW_AGGREGATION_LEVELS:
        raise ValueError(f"unknown QCEW aggregation level {level}")
    cols = [c for c in QCEW_AGGREGATION_LEVELS[level] if ownership or c != "own"]
    return [c for c in cols if c != "state" or "state" in columns]


def tabulate_levels(
    microdata: pl.DataFrame,
    values: Sequence[str],
    levels: Sequence[int] = DEFAULT_LEVELS,
    *,
    ownership: bool = False,
) -> dict[int, pl.DataFrame]:
    """Tabulate microdata at QCEW aggregation levels.

    Args:
        microdata: one row per establishment (reconstructed or true).
        values: columns to sum.
        levels: QCEW aggregation level codes (:data:`~eree.data.qcew.LEVEL_TITLES`).
        ownership: group by ``own`` too.

    Returns:
        level → :func:`~eree.postprocess.wls.tabulate` result (keys, ``n``, sums).
    """
    out: dict[int, pl.DataFrame] = {}
    for lv in levels:
        out[lv] = tabulate(
            microdata, level_columns(lv, microdata.columns, ownership=ownership), values
        )
    return out


def level_title(level: int) -> str:
    """The QCEW title of an aggregation level (e.g. ``County NAICS 5-digit``)."""
    return LEVEL_TITLES[level]


def tabulated_tables(
    plan: Any,
    tables: Sequence[QueryTable],
    microdata: pl.DataFrame,
    id_column: str,
    checks: dict[str, TabulationCheck] | None = None,
    unconstrained: pl.DataFrame | None = None,
) -> list[QueryTable]:
    """Each released table replaced by the tabulation of the WLS microdata, never worse.

    The identity table gets the microdata values, a group-by table the microdata's group
    sums over its own groups: every table then adds up to every coarser one, and with
    ``nonnegative`` every value is ≥ 0. Std and CI columns are null (the mechanisms'
    intervals describe their raw answers, not these values).

    Never worse (:func:`eree.postprocess.guard.tabulation_check`): with ``unconstrained``
    (the same least squares without non-negativity, :attr:`MicrodataResult.unconstrained`),
    a (table, attribute) whose estimated squared bias — the two tabulations' difference —
    exceeds its own values' published variance (summed over its cells; the coarse wage
    totals of a non-negative solve) keeps its own published values (≥ 0 with
    ``nonnegative``) with the mechanism's std and CI; it then no longer adds up to the
    finer tables. ``checks``, if given, receives each ``query.attribute``'s check.
    """
    nonneg = bool(plan.postprocess.nonnegative)
    out = []
    for t in tables:
        q = plan.query(t.name)
        attrs = [m.statistic for m in t.measurements]
        keys = [id_column] if q.by == "identity" else list(q.by)
        table = _tabulate(t.table, microdata, keys, attrs)
        ref = table if unconstrained is None else _tabulate(t.table, unconstrained, keys, attrs)
        cols = []
        how = {}
        for m in t.measurements:
            a = m.statistic
            tab = table[a].fill_null(0.0).to_numpy().astype(np.float64)
            own = t.table[a].to_numpy().astype(np.float64)
            var = (np.full(own.shape, np.nan) if m.variance is None
                   else np.asarray(m.variance, dtype=np.float64))  # fmt: skip
            check = tabulation_check(var, tab, ref[a].fill_null(0.0).to_numpy())
            if checks is not None:
                checks[f"{t.name}.{a}"] = check
            if check.keep_own:
                value = np.maximum(own, 0.0) if nonneg else own
                cols += [pl.Series(a, value, dtype=pl.Float64),
                         *(t.table[f"{a}_{s}"] for s in ("std", "ci_low", "ci_high"))]  # fmt: skip
                how[a] = (
                    "its own published value (the tabulation of the non-negative WLS "
                    f"microdata has an estimated squared bias {check.bias_ratio:.3g} times "
                    "its published variance: worse); std/CI are the mechanism's; not "
                    "constrained to add up"
                )
                continue
            null = pl.Series([None] * len(tab), dtype=pl.Float64)
            cols += [pl.Series(a, tab, dtype=pl.Float64), null.alias(f"{a}_std"),
                     null.alias(f"{a}_ci_low"), null.alias(f"{a}_ci_high")]  # fmt: skip
            how[a] = ("tabulated from the WLS microdata (consistent = true); std/CI not "
                      "published for these values")  # fmt: skip
        table = pl.concat([table.select(keys), pl.DataFrame(cols)], how="horizontal")
        out.append(QueryTable(t.name, table, how, (*t.notes, "tabulated from the WLS microdata"),
                              t.measurements))  # fmt: skip
    return out


def _tabulate(
    table: pl.DataFrame, microdata: pl.DataFrame, keys: list[str], attrs: list[str]
) -> pl.DataFrame:
    """The microdata's sums of ``attrs`` over the cells of ``table`` (its row order)."""
    if not keys:
        return microdata.select([pl.col(a).sum() for a in attrs])
    agg = microdata.group_by(keys).agg([pl.col(a).sum() for a in attrs])
    return table.select(keys).join(agg, on=keys, how="left", maintain_order="left")
