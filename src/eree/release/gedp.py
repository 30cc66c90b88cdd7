"""The Gaussian Establishment DP release path.

See docs/design.md#gaussian-establishment-dp, #gedp-mechanisms, #release-outputs, #release-spec.

Spec-level checks (:func:`eree.release.build.validate_gedp_plan`) and the mechanism
objects come from :mod:`eree.release.build`.

* :func:`accounting_plan` — a plan from (query, mechanism, μ) triples, to account for
  with ``build(plan).report()`` alone.
* :func:`release_gedp` — runs the plan's mechanism objects on loaded data: the ``bounds_from``
  identity query first (its noisy answers give the pnc upper bounds, Thm 6.7), then the
  others in plan order. Every query yields a :class:`QueryTable`: the key columns (the
  ``by`` attributes; the establishment id for the identity query — ids and public
  attributes are public), then for each confidential attribute ``s``: ``s`` (the published
  estimate), ``s_std``, ``s_ci_low``, ``s_ci_high`` (``s_std`` null where no standard error
  is publishable).

Nothing published depends on confidential data except through a mechanism's noisy
output (docs/design.md#what-may-be-published): ψ-mechanism standard errors are estimated from ω,
pnc bounds and
variances come from the noisy identity answers, Estab-Gaussian variances are public.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from eree.engine.base import Engine, LoadedEstablishments, bound_column
from eree.errors import PrivacyParameterError, SpecError
from eree.mechanisms.base import Cells, Measurement
from eree.mechanisms.gedp import PncBounded, PsiMechanism
from eree.mechanisms.noise import FloatArray, NoiseSource
from eree.privacy.accountant import PrivacyReport
from eree.privacy.gedp import (
    explain_gedp_lines,
    gedp_semantics,
    semantics_tables,
)
from eree.release.build import BuiltPlan, build, gedp_definition_from_plan
from eree.release.spec import Plan
from eree.release.tables import QueryTable, statistic_columns, uncertainty_of

__all__ = [
    "QueryTable",
    "accounting_plan",
    "gedp_plan_semantics",
    "release_gedp",
]


# --------------------------------------------------------------------------------------
# Plan-level validation and accounting (no data read)
# --------------------------------------------------------------------------------------


def accounting_plan(
    neighbor: Any,
    distance: dict[str, float] | None,
    measurements: list[tuple[str, str, dict[str, float]]],
    *,
    zeta: float | None = None,
    bounds_from: str | None = None,
) -> Plan:
    """A GEDP plan given as (query, mechanism, {attribute: μ}) triples, for accounting.

    Its report is ``build(plan).report()``, from the same mechanism objects a release
    builds (every query but ``bounds_from`` is a group-by over a public attribute ``g``).
    """
    from eree.data.config import EstablishmentDataConfig
    from eree.release.spec import PncSpec, PrivacySpec, QuerySpec

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
    return plan


def gedp_plan_semantics(plan: Plan, report: PrivacyReport) -> dict[str, Any]:
    """What the release guarantees (docs/design.md#semantics), from the plan alone.

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


def _check_report(built: BuiltPlan, report: PrivacyReport) -> None:
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


def _check_data(plan: Plan, data: LoadedEstablishments) -> None:
    cols = set(data.columns)
    for q in plan.queries:
        need = [*(q.mu or {})] + ([] if q.by == "identity" else list(q.by))
        missing = [c for c in need if c not in cols]
        if missing:
            raise SpecError(f"query {q.name!r}: columns {missing} are not in the loaded data")


def release_gedp(
    plan: BuiltPlan | Plan,
    data: LoadedEstablishments,
    source: NoiseSource,
    report: PrivacyReport | None = None,
    *,
    engine: Engine | None = None,
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
    built = plan if isinstance(plan, BuiltPlan) else build(plan)
    spec = built.plan
    if report is not None:
        _check_report(built, report)
    _check_data(spec, data)
    if engine is None:
        from eree.engine.select import make_engine

        engine = make_engine("polars")  # the default engine
    id_col = data.id_column
    order = list(built.queries)
    src = spec.pnc.bounds_from
    # statistics only the identity query's noisy answers can give (pnc bounds, x̂)
    from_identity = {"bound", "clipped", "identity_sum", "identity_variance"}
    needs_identity = any(from_identity & set(m.needs) for q in order for m in q.mechanisms)
    if src is not None and needs_identity:
        order.sort(key=lambda q: q.name != src)  # stable: bounds query first
    omegas: dict[str, FloatArray] = {}
    id_estimates: dict[str, FloatArray] = {}
    id_variances: dict[str, FloatArray] = {}
    ids: pl.Series | None = None
    bounds: pl.DataFrame | None = None
    results: dict[str, QueryTable] = {}
    for q in order:
        attrs = list(q.statistics)
        uncertainty: dict[str, str] = {}
        series: dict[str, Any] = {}
        measurements: list[Measurement] = []
        needs = {n for m in q.mechanisms for n in m.needs}
        frames: dict[str, pl.DataFrame] = {}
        if q.spec.by == "identity":
            cells = frames["value"] = engine.identity_values(data, attrs)
            keys: list[str] = [id_col]
        else:
            keys = list(q.spec.by)
            if "value" in needs:
                frames["value"] = engine.group_sums(data, keys, attrs)
            if needs & {"clipped", "bound"}:
                if bounds is None:
                    bounds = _pnc_bounds(built, omegas, ids, data, engine)
                frames["clipped"] = engine.clipped_group_sums(data, keys, bounds, attrs)
            cells = next(iter(frames.values()))
            frames = {k: _aligned(cells, f, keys) for k, f in frames.items()}
            if "identity_sum" in needs:
                frames["identity_sum"] = _identity_sums(
                    cells, data, engine, keys, attrs, ids, id_estimates
                )
            if "identity_variance" in needs:
                frames["identity_variance"] = _identity_sums(
                    cells, data, engine, keys, attrs, ids, id_variances
                )
        for a, mech in zip(attrs, q.mechanisms, strict=True):
            columns: dict[str, FloatArray] = {}
            for n in mech.needs:
                if n == "bound":
                    columns[n] = frames["clipped"].get_column(bound_column(a)).to_numpy()
                else:
                    columns[n] = frames[n].get_column(a).to_numpy()
            m = mech(Cells(columns), source).named(q.name, a)
            if q.spec.by == "identity" and q.name == src and isinstance(mech, PsiMechanism):
                omegas[a] = m.noisy
                id_estimates[a] = m.estimate
                if m.variance is not None:
                    id_variances[a] = np.asarray(m.variance, dtype=np.float64)
                ids = cells.get_column(id_col)
            uncertainty[a] = uncertainty_of(m)
            series.update(statistic_columns(a, m))
            if "chosen" in m.extra:  # which mechanism answered each cell (public)
                series[f"{a}_mechanism"] = pl.Series(np.asarray(m.extra["chosen"], dtype=str))
            measurements.append(m)
        table = cells.select(keys).with_columns(**series) if keys else pl.DataFrame(series)
        results[q.name] = QueryTable(q.name, table, uncertainty, (), tuple(measurements))
    return [results[q.name] for q in built.queries]


def _aligned(base: pl.DataFrame, other: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """``other``'s rows in the order of ``base``'s groups (the same groups of ``keys``)."""
    if not keys or other is base:
        return other
    return base.select(keys).join(other, on=keys, how="left", maintain_order="left")


def _public_keys(data: LoadedEstablishments, engine: Engine, keys: list[str]) -> pl.DataFrame:
    """The id and the public ``keys`` of every establishment (public columns only)."""
    cols = [data.id_column, *keys]
    return engine.public_columns(data, cols).with_columns(pl.col(data.id_column).cast(pl.Utf8))


def _identity_sums(
    cells: pl.DataFrame,
    data: LoadedEstablishments,
    engine: Engine,
    keys: list[str],
    attrs: list[str],
    ids: pl.Series | None,
    id_estimates: dict[str, FloatArray],
) -> pl.DataFrame:
    """Per group of ``cells``, the sum of the identity query's *published* values.

    ``id_estimates`` holds, per attribute, one published value per establishment: the
    estimates x̃_j (``identity_sum``) or their published variances (``identity_variance``).
    Public: both are published, and ids and ``keys`` are public attributes.
    """
    missing = [a for a in attrs if a not in id_estimates]
    if ids is None or missing:  # pragma: no cover - validate_gedp_plan orders the queries
        raise RuntimeError(f"no identity answers for {missing} before the group-by queries")
    est = pl.DataFrame(
        [ids.cast(pl.Utf8).alias(data.id_column),
         *(pl.Series(a, id_estimates[a], dtype=pl.Float64) for a in attrs)]
    )  # fmt: skip
    if not keys:
        return est.select(pl.col(a).sum() for a in attrs)
    joined = _public_keys(data, engine, keys).join(est, on=data.id_column, how="left")
    sums = joined.group_by(keys).agg(pl.col(a).sum() for a in attrs)
    return _aligned(cells, sums, keys).with_columns(pl.col(a).fill_null(0.0) for a in attrs)


def _pnc_bounds(
    built: BuiltPlan,
    omegas: dict[str, FloatArray],
    ids: pl.Series | None,
    data: LoadedEstablishments,
    engine: Engine,
) -> pl.DataFrame:
    """Per-establishment upper bounds u_{j,i} (Thm 6.7) from the noisy identity answers."""
    # pnc and the adaptive mechanism share the bounds of Thm 6.7
    pnc = {m.attribute: m for q in built.queries for m in q.mechanisms if isinstance(m, PncBounded)}
    src = built.query(str(built.plan.pnc.bounds_from))
    if ids is None or any(a not in omegas for a in src.statistics):  # pragma: no cover
        raise RuntimeError("pnc bounds requested before the identity query ran")
    cols = [ids.cast(pl.Utf8)]
    for a in src.statistics:
        # an attribute measured by the identity query but by no pnc query needs no bound
        if a in pnc:
            u = pnc[a].upper_bounds(omegas[a], engine.n_establishments(data))
        else:
            u = np.zeros(len(ids))
        cols.append(pl.Series(a, u, dtype=pl.Float64))
    return pl.DataFrame(cols)
