"""The Gaussian Establishment DP release path (DESIGN.md §3.2, §4.2, §7.2–7.3).

* :func:`validate_gedp_plan` — spec-level checks before any data is read: mechanisms,
  μ per confidential attribute, a distance for each, groups over public attributes only,
  pnc's ``bounds_from`` naming a psi identity query that covers the pnc attributes.
* :func:`account_gedp_plan` — the accountant's report, from the plan's mechanism objects
  (:func:`eree.release.build.build`) alone.
* :func:`release_gedp` — runs the plan's mechanism objects on loaded data: the ``bounds_from``
  identity query first (its noisy answers give the pnc upper bounds, Thm 6.7), then the
  others in plan order. Every query yields a :class:`QueryTable`: the key columns (the
  ``by`` attributes; the establishment id for the identity query — ids and public
  attributes are public), then for each confidential attribute ``s``: ``s`` (the published
  estimate), ``s_std``, ``s_ci_low``, ``s_ci_high`` (``s_std`` null where no standard error
  is publishable).

Nothing published depends on confidential data except through a mechanism's noisy
output (DESIGN.md §4.4): ψ-mechanism standard errors are estimated from ω, pnc bounds and
variances come from the noisy identity answers, Estab-Gaussian variances are public.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from eree.data.establishments import EstablishmentData
from eree.engine.establishments import bound_column
from eree.errors import PrivacyParameterError, SpecError
from eree.mechanisms.base import Cells, Measurement
from eree.mechanisms.gedp import Pnc, PsiMechanism
from eree.mechanisms.noise import FloatArray, NoiseSource
from eree.mechanisms.registry import entries_for
from eree.privacy.accountant import PrivacyReport
from eree.privacy.gedp import (
    GEDPDefinition,
    explain_gedp_lines,
    gedp_semantics,
    make_gedp_definition,
    semantics_tables,
)
from eree.release.tables import QueryTable, statistic_columns

__all__ = [
    "QueryTable",
    "account_gedp",
    "account_gedp_plan",
    "gedp_definition_from_plan",
    "gedp_plan_semantics",
    "release_gedp",
    "validate_gedp_plan",
]


# --------------------------------------------------------------------------------------
# Plan-level validation and accounting (no data read)
# --------------------------------------------------------------------------------------


def validate_gedp_plan(plan: Any) -> None:
    """Spec-level checks of a GEDP plan (no data read).

    Raises:
        SpecError: wrong definition or data kind, an attribute in ``mu`` that is not a
            declared confidential column, ``by`` naming a non-public column, ER-EE
            parameters on a GEDP query, pnc without a valid ``[pnc].bounds_from``.
        PrivacyParameterError: a missing distance or invalid ψ (via the definition).
    """
    if plan.privacy.definition != "gedp":
        raise SpecError(f"not a GEDP plan (definition {plan.privacy.definition!r})")
    data = plan.data
    if not hasattr(data, "confidential"):
        raise SpecError('GEDP needs establishment data: [data] kind = "establishments"')
    conf = tuple(data.confidential)
    public = tuple(data.public)
    id_col = data.id
    for q in plan.queries:
        where = f"query {q.name!r}"
        gedp_names = [e.name for e in entries_for("gedp")]
        if q.mechanism not in gedp_names:
            raise SpecError(
                f"{where}: mechanism {q.mechanism!r} is not a GEDP mechanism; use one of "
                f"{', '.join(gedp_names)}"
            )
        if q.epsilon is not None or q.delta is not None:
            raise SpecError(
                f"{where}: epsilon/delta are not GEDP parameters; give mu per attribute"
            )
        if q.params:
            raise SpecError(f"{where}: parameters {sorted(q.params)} do not apply to {q.mechanism}")
        if not q.mu:
            raise SpecError(
                f"{where}: give mu per confidential attribute, e.g. mu = {{ m1emp = 0.7 }}"
            )
        bad = [a for a in q.mu if a not in conf]
        if bad:
            raise SpecError(
                f"{where}: mu names {bad}, which are not confidential columns "
                f"([data].confidential = {list(conf)})"
            )
        if q.complete:
            raise SpecError(f"{where}: complete = true is not supported for GEDP queries")
        if q.by != "identity":
            bad_by = [b for b in q.by if b not in public]
            if bad_by:
                raise SpecError(
                    f"{where}: groups must be over public attributes; {bad_by} "
                    f"{'is the id column' if bad_by == [id_col] else 'not in [data].public'}"
                )
        if q.mechanism == "pnc":
            if q.by == "identity":
                raise SpecError(
                    f"{where}: the identity query must use the psi mechanism (its answers give "
                    "the pnc bounds, §6.2); pnc answers group-by queries"
                )
            src = plan.pnc.bounds_from
            if src is None:
                raise SpecError(
                    f"{where}: pnc needs [pnc] bounds_from = the psi identity query whose "
                    "answers give the upper bounds (Thm 6.7)"
                )
            b = plan.query(src)
            if b.mechanism != "psi" or b.by != "identity":
                raise SpecError(
                    f'[pnc].bounds_from = {src!r} must be a psi query with by = "identity"'
                )
            missing = [a for a in q.mu if a not in (b.mu or {})]
            if missing:
                raise SpecError(
                    f"{where}: pnc attributes {missing} have no bounds: the identity query "
                    f"{src!r} does not measure them"
                )
    gedp_definition_from_plan(plan)


def gedp_definition_from_plan(plan: Any) -> GEDPDefinition:
    """The μ-GEDP definition of a plan (neighbor functions and distances)."""
    attrs = [a for q in plan.queries for a in (q.mu or {})]
    return make_gedp_definition(plan.privacy.neighbor, plan.privacy.distance, attrs)


def account_gedp_plan(plan: Any) -> PrivacyReport:
    """Validate a GEDP plan and return its privacy report (no data read)."""
    from eree.release.build import build

    return build(plan).report()


def account_gedp(
    neighbor: Any,
    distance: dict[str, float] | None,
    measurements: list[tuple[str, str, dict[str, float]]],
    *,
    zeta: float | None = None,
    bounds_from: str | None = None,
) -> PrivacyReport:
    """The report of a GEDP plan given as (query, mechanism, {attribute: μ}) triples.

    Builds the same mechanism objects a release does (every identity-like query of a
    psi measurement is taken as a group-by over a public attribute ``g``).
    """
    from eree.data.config import EstablishmentDataConfig
    from eree.release.spec import Plan, PncSpec, PrivacySpec, QuerySpec

    if not measurements:
        raise PrivacyParameterError("a GEDP release needs at least one query")
    conf = tuple(dict.fromkeys(a for _, _, mus in measurements for a in mus))
    queries = tuple(
        QuerySpec(name, "identity" if name == bounds_from else ("g",), mech, mu=dict(mus))
        for name, mech, mus in measurements
    )
    plan = Plan(
        name="accounting",
        data=EstablishmentDataConfig(path=None, public=("g",), confidential=conf),  # type: ignore[arg-type]
        privacy=PrivacySpec("gedp", None, neighbor, distance),
        queries=queries,
        pnc=PncSpec(0.01 if zeta is None else zeta, bounds_from),
    )
    return account_gedp_plan(plan)


def gedp_plan_semantics(plan: Any, report: PrivacyReport) -> dict[str, Any]:
    """What the release guarantees (DESIGN.md §3.3), from the plan alone.

    The dict of :func:`eree.privacy.gedp.gedp_semantics` plus ``statements`` (the
    human-readable lines of ``eree explain``, among them ``μ_total = …``) and ``tables``
    (uncertainty intervals and person protection at the representative sizes).
    """
    definition = gedp_definition_from_plan(plan)
    mu = report.total.mu or 0.0
    sem = gedp_semantics(definition, mu)
    sem["statements"] = explain_gedp_lines(report, definition, tables=False, budget=False)
    sem["tables"] = semantics_tables(sem)
    return sem


# --------------------------------------------------------------------------------------
# Release
# --------------------------------------------------------------------------------------


def _check_report(built: Any, report: PrivacyReport) -> None:
    """The report given must be the one the plan's mechanism objects produce."""
    if report.definition != "gedp":
        raise PrivacyParameterError("the privacy report is not a GEDP report")
    mine = built.report()
    for q in built.queries:
        try:
            charge = report.charge(q.name)
        except KeyError:
            raise PrivacyParameterError(
                f"query {q.name!r} was not charged by the accountant"
            ) from None
        if charge.to_dict() != mine.charge(q.name).to_dict():
            raise PrivacyParameterError(
                f"query {q.name!r}: the privacy report does not match the plan"
            )


def _check_data(plan: Any, data: EstablishmentData) -> None:
    cols = set(data.frame.columns)
    for q in plan.queries:
        need = [*(q.mu or {})] + ([] if q.by == "identity" else list(q.by))
        missing = [c for c in need if c not in cols]
        if missing:
            raise SpecError(f"query {q.name!r}: columns {missing} are not in the loaded data")


def release_gedp(
    plan: Any,
    data: EstablishmentData,
    source: NoiseSource,
    report: PrivacyReport | None = None,
    *,
    engine: Any = None,
) -> list[QueryTable]:
    """Run the plan's GEDP mechanism objects on ``data``; return the tables in plan order.

    The cell statistics (identity answers, group sums, clipped sums) come from
    ``engine`` (default: the Polars engine); ``data`` is what that engine loaded.

    Args:
        plan: a :class:`~eree.release.build.BuiltPlan` (or a GEDP
            :class:`~eree.release.spec.Plan`, built here).
        data: the loaded establishments.
        source: the noise source (all noise is drawn from it, queries in run order —
            the ``bounds_from`` query first — attributes in ``mu`` order).
        report: if given, it must be the report of ``plan`` (a release refuses to run
            queries the report does not cover).

    Raises:
        SpecError, PrivacyParameterError: the plan is invalid or does not match the report.
    """
    from eree.release.build import BuiltPlan, build

    built = plan if isinstance(plan, BuiltPlan) else build(plan)
    spec = built.plan
    if report is not None:
        _check_report(built, report)
    _check_data(spec, data)
    if engine is None:
        from eree.engine.polars_engine import PolarsEngine

        engine = PolarsEngine()
    id_col = data.id_column
    order = list(built.queries)
    src = spec.pnc.bounds_from
    has_pnc = any(isinstance(m, Pnc) for q in order for m in q.mechanisms)
    if src is not None and has_pnc:
        order.sort(key=lambda q: q.name != src)  # stable: bounds query first
    omegas: dict[str, FloatArray] = {}
    ids: pl.Series | None = None
    bounds: pl.DataFrame | None = None
    results: dict[str, QueryTable] = {}
    for q in order:
        attrs = list(q.statistics)
        uncertainty: dict[str, str] = {}
        series: dict[str, Any] = {}
        measurements: list[Measurement] = []
        uses_bounds = any(isinstance(m, Pnc) for m in q.mechanisms)
        if q.spec.by == "identity":
            cells = engine.identity_values(data, attrs)
            keys: list[str] = [id_col]
        else:
            keys = list(q.spec.by)
            if uses_bounds:
                if bounds is None:
                    bounds = _pnc_bounds(built, omegas, ids, data)
                cells = engine.clipped_group_sums(data, keys, bounds, attrs)
            else:
                cells = engine.group_sums(data, keys, attrs)
        for a, mech in zip(attrs, q.mechanisms, strict=True):
            columns = {"value": cells.get_column(a).to_numpy()}
            if uses_bounds:
                columns["bound"] = cells.get_column(bound_column(a)).to_numpy()
            m = mech(Cells(columns), source).named(q.name, a)
            if q.spec.by == "identity" and q.name == src and isinstance(mech, PsiMechanism):
                omegas[a] = m.noisy
                ids = cells.get_column(id_col)
            uncertainty[a] = m.uncertainty_method
            series.update(statistic_columns(a, m))
            measurements.append(m)
        table = cells.select(keys).with_columns(**series) if keys else pl.DataFrame(series)
        note = f"mechanism {q.spec.mechanism}; keys: {', '.join(keys) if keys else '(total)'}"
        results[q.name] = QueryTable(q.name, table, uncertainty, (note,), tuple(measurements))
    return [results[q.name] for q in built.queries]


def _pnc_bounds(
    built: Any,
    omegas: dict[str, FloatArray],
    ids: pl.Series | None,
    data: EstablishmentData,
) -> pl.DataFrame:
    """Per-establishment upper bounds u_{j,i} (Thm 6.7) from the noisy identity answers."""
    pnc = {m.attribute: m for q in built.queries for m in q.mechanisms if isinstance(m, Pnc)}
    src = built.query(built.plan.pnc.bounds_from)
    if ids is None or any(a not in omegas for a in src.statistics):  # pragma: no cover
        raise RuntimeError("pnc bounds requested before the identity query ran")
    cols = [ids.cast(pl.Utf8)]
    for a in src.statistics:
        # an attribute measured by the identity query but by no pnc query needs no bound
        u = pnc[a].upper_bounds(omegas[a], data.n) if a in pnc else np.zeros(len(ids))
        cols.append(pl.Series(a, u, dtype=pl.Float64))
    return pl.DataFrame(cols)
