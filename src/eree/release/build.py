"""From a plan to mechanism objects, once per release (docs/design.md#core-objects).

:func:`build` reads the plan (no data) and returns a :class:`BuiltPlan`: for each query
the mechanism object of each published statistic, built from the one registry
(:mod:`eree.mechanisms.registry`) with the query's parameters. The accountant's report
(:meth:`BuiltPlan.report`), ``eree explain``, the manifest and the noise of the release
all read these same objects: the cost charged and the scale drawn are computed once.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from eree.data.config import JobTablesConfig
from eree.errors import PrivacyParameterError, SpecError
from eree.mechanisms.adaptive import AdaptiveGroupBy
from eree.mechanisms.base import Mechanism
from eree.mechanisms.gedp import Pnc, PncBounded, PsiMechanism
from eree.mechanisms.registry import entries_for, entry
from eree.privacy.accountant import PrivacyReport, QueryCharge, account, charge_query
from eree.privacy.gedp import GEDPDefinition, gedp_notes, make_gedp_definition
from eree.release.spec import Plan, QuerySpec

__all__ = [
    "BuiltPlan",
    "QueryPlan",
    "build",
    "gedp_definition_from_plan",
    "split_by",
    "validate_gedp_plan",
]

#: the statistic of an ER-EE count marginal
COUNT_STATISTIC = "jobs"


@dataclass(frozen=True)
class QueryPlan:
    """One query with its mechanism objects.

    Attributes:
        spec: the query as given.
        mechanisms: one per published statistic.
        statistics: the statistics' names (``jobs``, or the confidential attributes).
        workplace_by, worker_by: the ER-EE marginal's attributes by role (empty for GEDP).
    """

    spec: QuerySpec
    mechanisms: tuple[Mechanism, ...]
    statistics: tuple[str, ...]
    workplace_by: tuple[str, ...] = ()
    worker_by: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The mechanism's registry name."""
        return self.spec.name

    def charge(self) -> QueryCharge:
        """The accountant's charge of this query, from its mechanism objects."""
        attrs = None if self.statistics == (COUNT_STATISTIC,) else self.statistics
        return charge_query(self.name, self.mechanisms, attrs)


@dataclass(frozen=True)
class BuiltPlan:
    """A plan with every query's mechanism objects; the definition built once."""

    plan: Plan
    queries: tuple[QueryPlan, ...]
    gedp_definition: GEDPDefinition | None = None

    def query(self, name: str) -> QueryPlan:
        """The query named ``name``."""
        for q in self.queries:
            if q.name == name:
                return q
        raise SpecError(f"no query named {name!r}")

    def report(self) -> PrivacyReport:
        """The accountant's report, from the mechanism objects alone (no data)."""
        p = self.plan.privacy
        charges = [q.charge() for q in self.queries]
        notes: list[str] = []
        extra: dict[str, Any] = {}
        if self.gedp_definition is not None:
            notes = gedp_notes(len([m for q in self.queries for m in q.mechanisms]),
                               self.plan.pnc.zeta if self._has_pnc() else None)  # fmt: skip
            extra = self.gedp_definition.to_dict()
            extra["measurements"] = [
                {"query": q.name, "attribute": a, "mu": m.per_cell_cost().mu}
                for q in self.queries
                for a, m in zip(q.statistics, q.mechanisms, strict=True)
            ]
        elif p.definition == "blowfish":
            from eree.privacy.blowfish import blowfish_notes

            notes = blowfish_notes(charges)
        weak = any(q.worker_by for q in self.queries)
        return account(p.definition, p.alpha, charges, weak=weak, notes=notes, extra=extra)

    def _has_pnc(self) -> bool:
        return any(isinstance(m, PncBounded) for q in self.queries for m in q.mechanisms)


def split_by(query: QuerySpec, cfg: JobTablesConfig) -> tuple[list[str], list[str]]:
    """Split a query's ``by`` into (workplace attributes, worker attributes)."""
    if isinstance(query.by, str):
        raise SpecError(f"query {query.name!r}: by = {query.by!r} is not a count marginal")
    wp, wk = [], []
    for a in query.by:
        if a in cfg.workplace_attributes:
            wp.append(a)
        elif a in cfg.worker_attributes:
            wk.append(a)
        else:
            close = difflib.get_close_matches(
                a, (*cfg.workplace_attributes, *cfg.worker_attributes), n=1
            )
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise SpecError(
                f"query {query.name!r}: {a!r} is neither a workplace attribute "
                f"({', '.join(cfg.workplace_attributes)}) nor a worker attribute "
                f"({', '.join(cfg.worker_attributes)}){hint}"
            )
    return wp, wk


def _entry(plan: Plan, q: QuerySpec) -> Any:
    definition = plan.privacy.definition
    variant = q.params.get("variant") if "variant" in q.params else None
    try:
        e = entry(q.mechanism, variant) if variant else entry(q.mechanism)
    except KeyError:
        raise SpecError(
            f"query {q.name!r}: mechanism {q.mechanism!r} has no variant {variant!r}"
        ) from None
    if definition not in e.definitions:
        allowed = ", ".join(dict.fromkeys(x.name for x in entries_for(definition)))
        raise PrivacyParameterError(
            f"query {q.name!r}: mechanism {q.mechanism!r}"
            + (f' (variant = "{variant}")' if variant else "")
            + f" does not satisfy definition {definition!r}; allowed: {allowed}"
            + (
                "; the workshop variants are analysed under the Blowfish policy: use "
                'definition = "blowfish"'
                if variant == "workshop"
                else ""
            )
        )
    return e


def _build_counts(plan: Plan) -> BuiltPlan:
    cfg = plan.data
    if not isinstance(cfg, JobTablesConfig):
        raise SpecError(
            f"definition {plan.privacy.definition!r} applies to ER-EE data; establishment "
            'data use definition = "gedp"'
        )
    out = []
    for q in plan.queries:
        if q.mu is not None:
            raise SpecError(f"query {q.name!r}: mu belongs to GEDP queries, not count marginals")
        e = _entry(plan, q)
        wp, wk = split_by(q, cfg)
        d = math.prod(len(cfg.domains[a]) for a in wk) if wk else 1
        kwargs: dict[str, Any] = {
            "query": q.name,
            "definition": plan.privacy.definition,
            "confidence": plan.output.confidence,
        }
        if "epsilon" in e.settings:
            if q.epsilon is None:
                raise PrivacyParameterError(
                    f"query {q.name!r}: epsilon is required"
                    + ("; it has a target: `eree plan SPEC --write FILE` chooses epsilon"
                       if q.target is not None or plan.budget_plan is not None else "")
                )  # fmt: skip
            kwargs.update(epsilon=q.epsilon, worker_cells=d, worker_attributes=tuple(wk))
            if cfg.jobs_per_worker > 1:  # docs/privacy.md#several-jobs-per-worker
                kwargs["jobs_per_worker"] = cfg.jobs_per_worker
            if "alpha" in e.cls.__dataclass_fields__:
                if plan.privacy.alpha is None:
                    raise PrivacyParameterError(f"query {q.name!r}: {q.mechanism} needs alpha")
                kwargs["alpha"] = plan.privacy.alpha
        if q.delta is not None:
            kwargs["delta"] = q.delta
        kwargs.update({k: v for k, v in q.params.items() if k != "variant"})
        mech = e.cls(**kwargs)
        out.append(QueryPlan(q, (mech,), (COUNT_STATISTIC,), tuple(wp), tuple(wk)))
    return BuiltPlan(plan, tuple(out))


def _build_gedp(plan: Plan) -> BuiltPlan:
    validate_gedp_plan(plan)
    attrs = [a for q in plan.queries for a in (q.mu or {})]
    definition = make_gedp_definition(plan.privacy.neighbor, plan.privacy.distance, attrs)
    src = plan.pnc.bounds_from
    bounds_mu = dict(plan.query(src).mu or {}) if src else {}
    out = []
    for q in plan.queries:
        e = _entry(plan, q)
        mechs = []
        for a, mu in (q.mu or {}).items():
            kwargs: dict[str, Any] = {
                "query": q.name,
                "attribute": a,
                "neighbor": definition.neighbor(a),
                "gamma": definition.gamma(a),
                "mu": mu,
                "confidence": plan.output.confidence,
            }
            if "grid" in q.params:
                kwargs["grid"] = q.params["grid"]
            if issubclass(e.cls, PncBounded):  # pnc, adaptive: bounds from the identity query
                kwargs.update(
                    zeta=plan.pnc.zeta, bounds_from=src, bounds_mu=bounds_mu[a],
                    bounded_attributes=len(bounds_mu),
                )  # fmt: skip
            mechs.append(e.cls(**kwargs))
        out.append(QueryPlan(q, tuple(mechs), tuple(q.mu or {})))
    return BuiltPlan(plan, tuple(out), definition)


def validate_gedp_plan(plan: Plan) -> None:
    """Spec-level checks of a GEDP plan (no data read).

    Raises:
        SpecError: wrong definition or data kind, an attribute in ``mu`` that is not a
            declared confidential column, ``by`` naming a non-public column, ER-EE
            parameters on a GEDP query, pnc without a valid ``[pnc].bounds_from``.
        PrivacyParameterError: a missing distance or invalid ψ (via the definition).
    """
    if plan.privacy.definition != "gedp":
        raise SpecError(f"not a GEDP plan (definition {plan.privacy.definition!r})")
    data = plan.establishment_data
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
        other = sorted(k for k in q.params if k != "grid")
        if other:
            raise SpecError(f"{where}: parameters {other} do not apply to {q.mechanism}")
        planned = [a for a in (q.target or {}) if a not in (q.mu or {})]
        if planned or not q.mu:
            raise SpecError(
                f"{where}: give mu per confidential attribute, e.g. mu = {{ m1emp = 0.7 }}"
                + (f"; {planned} have a target: `eree plan SPEC --write FILE` chooses their mu"
                   if planned else "")
            )  # fmt: skip
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
                close = difflib.get_close_matches(bad_by[0], list(public), n=1)
                hint = f"; did you mean {close[0]!r}?" if close and bad_by != [id_col] else ""
                raise SpecError(
                    f"{where}: groups must be over public attributes; {bad_by} "
                    f"{'is the id column' if bad_by == [id_col] else 'not in [data].public'}"
                    f"{hint}"
                )
        if q.mechanism in (Pnc.name, AdaptiveGroupBy.name):
            m = q.mechanism
            if q.by == "identity":
                raise SpecError(
                    f"{where}: the identity query must use the psi mechanism (its answers give "
                    f"the pnc bounds, §6.2); {m} answers group-by queries"
                )
            src = plan.pnc.bounds_from
            if src is None:
                raise SpecError(
                    f"{where}: {m} needs [pnc] bounds_from = the psi identity query whose "
                    "answers give the upper bounds (Thm 6.7)"
                )
            b = plan.query(src)
            if b.mechanism != PsiMechanism.name or b.by != "identity":
                raise SpecError(
                    f'[pnc].bounds_from = {src!r} must be a psi query with by = "identity"'
                )
            missing = [a for a in q.mu if a not in (b.mu or {})]
            if missing:
                raise SpecError(
                    f"{where}: {m} attributes {missing} have no bounds: the identity query "
                    f"{src!r} does not measure them"
                )
    gedp_definition_from_plan(plan)


def gedp_definition_from_plan(plan: Plan) -> GEDPDefinition:
    """The μ-GEDP definition of a plan (neighbor functions and distances)."""
    attrs = [a for q in plan.queries for a in (q.mu or {})]
    return make_gedp_definition(plan.privacy.neighbor, plan.privacy.distance, attrs)


_BUILDERS: dict[str, Callable[[Plan], BuiltPlan]] = {
    "eree": _build_counts,
    "establishments": _build_gedp,
}


def build(plan: Plan) -> BuiltPlan:
    """Build every query's mechanism objects (validating all parameters); reads no data.

    Raises:
        SpecError, PrivacyParameterError: the message names the query.
    """
    if (plan.privacy.definition == "gedp") != (plan.kind == "establishments"):
        if plan.kind == "establishments":
            raise SpecError('establishment data use definition = "gedp"')
        raise SpecError(
            f"definition {plan.privacy.definition!r} applies to ER-EE data; establishment "
            'data use definition = "gedp"'
        )
    return _BUILDERS[plan.kind](plan)
