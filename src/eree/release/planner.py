"""From accuracy targets to budgets: each query's ε or μ, chosen (``eree plan``; docs/planning.md).

Reads the spec only — never data — and spends nothing. Every error figure comes from the
query's own mechanism object (:meth:`eree.mechanisms.base.Mechanism.expected_error`, the
one place the error law lives), built at a candidate ε or μ: the mechanism's validity
conditions (Algorithm 2 and 3's, λ < 1 for Log-Laplace's finite error, the pnc bounds)
are the constructor's, so an invalid candidate is never chosen.

* **Targets** (:mod:`eree.release.targets`): the smallest ε (or μ) whose mechanism meets
  the target at the representative cell, by a geometric search then bisection to a
  relative 10⁻⁶, then rounded *up* to three significant digits (a stated minimum that
  suffices) and checked again. Unreachable targets are refused with the reason and the
  nearest target the mechanism can meet.
* **A fixed total** (``[plan] epsilon`` or ``mu``): the split minimising Σ wᵢ·Eᵢ, with Eᵢ
  the relative E|error| (E|error| / at, or the std where E|error| has no closed form) of
  statistic i at its representative cell, subject to the family's composition — Σ εᵢ =
  total (sequential, ER-EE family) or Σ μᵢ² = total² (GEDP) — and each target as a floor.
  Writing rᵢ for εᵢ or μᵢ², the problem is separable: for a multiplier λ each rᵢ(λ)
  minimises wᵢEᵢ(rᵢ) + λrᵢ over rᵢ ≥ its floor, found on a dense log grid interpolated
  from exact evaluations (each Eᵢ is a power law in rᵢ or nearly, so log-log interpolation
  is exact for the 1/ε and 1/μ laws); λ is bisected until Σ rᵢ(λ) meets the total. The
  values are then rounded *down* to three significant digits, so the plan never exceeds the
  total. pnc's public bounds depend on the identity query's μ, so the split is repeated
  with the bounds of the last split until the identity query's μ no longer moves.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal
from typing import Any

import numpy as np

from eree.errors import EreeError, SpecError
from eree.mechanisms.base import ExpectedError, Mechanism
from eree.mechanisms.gedp import PncBounded
from eree.mechanisms.registry import entries_for
from eree.release.build import BuiltPlan, build
from eree.release.preview import (
    GEDP_ASSUMED_ESTABLISHMENTS,
    round_up,
    smallest_parameter,
    statistics_at,
)
from eree.release.spec import Plan, QuerySpec
from eree.release.targets import Target, relative_error, representative_cell, target_met

__all__ = [
    "PlanError",
    "PlanResult",
    "PlannedStatistic",
    "plan_budget",
    "round_up_float",
]

#: relative steps of the trade-off curve (×parameter)
CURVE_FACTORS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0)
#: grid points per statistic when splitting a total (exact evaluations, then 40× denser)
_TABLE_POINTS = 96
_DENSE = 40
#: provisional parameters tried when a query has none yet (the search replaces them)
_PROVISIONAL = (1.0, 10.0, 100.0, 1_000.0, 10_000.0)


class PlanError(SpecError):
    """A target or total the planner cannot meet, with the reason and the nearest option."""


@dataclass(frozen=True)
class PlannedStatistic:
    """One published statistic's plan.

    Attributes:
        query, statistic, mechanism: which measurement.
        parameter: ``epsilon`` or ``mu``.
        given: the value the spec stated (None when it stated none).
        chosen: the planned value.
        target: the target (None: the query has none).
        at, x_v: the representative cell (x_v only for count mechanisms).
        error: the mechanism's error there at the chosen value.
        achieved: what the target measures at the chosen value (a probability, a CV or a
            half-width).
        relative_error: E|error| / at (or std / at where E|error| is unknown).
        curve: (value, relative error) at :data:`CURVE_FACTORS` × the chosen value.
        alternatives: (mechanism, the ε that mechanism needs for the target) for the
            other count mechanisms of the definition (ER-EE targets only).
    """

    query: str
    statistic: str
    mechanism: str
    parameter: str
    given: float | None
    chosen: float
    target: Target | None
    at: float
    x_v: float | None
    error: ExpectedError
    achieved: float | None
    relative_error: float
    curve: tuple[tuple[float, float], ...] = ()
    alternatives: tuple[tuple[str, float | None], ...] = ()

    @property
    def planned(self) -> bool:
        """Whether the planner chose the value (a target, or a share of a total)."""
        return self.target is not None or self.split

    split: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "query": self.query, "statistic": self.statistic, "mechanism": self.mechanism,
            "parameter": self.parameter, "given": self.given, "chosen": self.chosen,
            "target": None if self.target is None else self.target.to_dict(),
            "at": self.at, "x_v": self.x_v, "std": self.error.std,
            "mean_abs": self.error.mean_abs, "achieved": self.achieved,
            "relative_error": self.relative_error,
            "curve": [list(c) for c in self.curve],
            "alternatives": [list(a) for a in self.alternatives],
            "planned": self.planned,
        }  # fmt: skip


@dataclass(frozen=True)
class PlanResult:
    """A completed plan: the spec with every ε or μ chosen, and what each buys."""

    plan: Plan
    built: BuiltPlan
    statistics: tuple[PlannedStatistic, ...]
    parameter: str
    total: float
    requested_total: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "parameter": self.parameter,
            "total": self.total,
            "requested_total": self.requested_total,
            "statistics": [s.to_dict() for s in self.statistics],
            "notes": list(self.notes),
        }


# ------------------------------------------------------------------ one statistic


def _unmeasurable(target: Target, mech: Mechanism, e: ExpectedError | None) -> str | None:
    """Why a target cannot be judged for a mechanism at all, or None."""
    if e is None:
        return (
            f"{mech.name} has no error law to plan with (its error depends on confidential values)"
        )
    if target.kind == "relative_error" and e.within is None:
        alt = " (a cv target uses its std)" if e.std is not None else ""
        return f"{mech.name} has no closed-form error law for a relative_error target{alt}"
    if target.kind == "cv" and e.std is None:
        return f"{mech.name} has no closed-form std for a cv target"
    if target.kind == "ci_half_width" and e.ci_width is None:
        return f"{mech.name} publishes no confidence interval (use relative_error or cv)"
    return None


@dataclass(frozen=True)
class _Slot:
    """One statistic: how to build its mechanism at a candidate value."""

    query: QuerySpec
    index: int
    statistic: str
    mechanism: Mechanism
    parameter: str
    given: float | None
    target: Target | None
    at: float
    share: float
    weight: float

    def at_value(self, v: float, bounds_mu: float | None = None) -> Mechanism:
        if self.parameter == "epsilon":
            return dataclasses.replace(self.mechanism, epsilon=v)  # type: ignore[call-arg]
        if bounds_mu is not None and isinstance(self.mechanism, PncBounded):
            return dataclasses.replace(self.mechanism, mu=v, bounds_mu=bounds_mu)
        return dataclasses.replace(self.mechanism, mu=v)  # type: ignore[call-arg]

    def error(self, m: Mechanism) -> ExpectedError | None:
        x_v = max(self.share * self.at, 1.0)
        return m.expected_error(statistics_at(m, self.at, x_v, GEDP_ASSUMED_ESTABLISHMENTS))

    def loss(self, m: Mechanism) -> float:
        """Relative E|error| (or std) at the representative cell; inf where invalid."""
        return relative_error(self.error(m), self.at)


def _where(s: _Slot) -> str:
    stat = "" if s.statistic == "jobs" else f", attribute {s.statistic!r}"
    return f"query {s.query.name!r}{stat}"


def _need(s: _Slot, bounds_mu: float | None) -> float:
    """The smallest value meeting the slot's target, rounded up to 3 significant digits."""
    assert s.target is not None
    t = s.target
    why = _unmeasurable(t, s.mechanism, s.error(s.mechanism))
    if why:
        raise PlanError(f"{_where(s)}: {why}")

    def make(v: float) -> Mechanism:
        return s.at_value(v, bounds_mu)

    def ok(m: Mechanism) -> bool:
        return target_met(t, s.error(m))[0]

    v = smallest_parameter(make, ok, 1e-4)
    if v is None:
        raise PlanError(f"{_where(s)}: {_unreachable(s, make)}")
    up = float(round_up(v))
    for _ in range(5):  # the rounded-up value must meet the target itself
        try:
            if ok(make(up)):
                return up
        except EreeError:
            pass
        up = float(round_up(up * 1.001))
    raise PlanError(f"{_where(s)}: no value near {up:g} meets the target")  # pragma: no cover


def _unreachable(s: _Slot, make: Callable[[float], Mechanism]) -> str:
    """Why no ε/μ meets a target, and the nearest target that some value meets."""
    assert s.target is not None
    t = s.target
    best = None
    for v in (1e2, 1e3, 1e4, 1e6):  # as good as the mechanism gets
        try:
            best = s.error(make(v)), v
        except EreeError:
            continue
    what = f"the target ({t.words()}) is out of reach of {s.mechanism.name} at any {s.parameter}"
    if best is None or best[0] is None:
        return what
    e, v = best
    if t.kind == "relative_error" and e is not None and e.within is not None:
        within = e.within
        # the smallest bound met with the stated confidence at a very large budget
        lo, hi = 0.0, 1e6
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if within(mid * t.at) >= t.confidence else (mid, hi)
        return (f"{what}: even at {s.parameter} = {v:g} a cell of {t.at:g} is within "
                f"{100 * hi:.3g}% of its value {t.confidence:.0%} of the time (a floor set by the "
                "mechanism, e.g. the smooth sensitivity α·x_v); a larger at or a smaller "
                "largest_share can be met")  # fmt: skip
    return what


# ------------------------------------------------------------------ building the slots


def _provisional_plan(plan: Plan) -> Plan:
    """The plan with a valid provisional ε/μ for every query that has none (or will be split)."""
    bp = plan.budget_plan
    split = bp is not None and (bp.epsilon is not None or bp.mu is not None)
    gedp = plan.kind == "establishments"
    queries = list(plan.queries)
    for i, q in enumerate(queries):
        if gedp:
            stats = list(dict.fromkeys([*(q.mu or {}), *(q.target or {})]))
            if not stats:
                raise PlanError(f"query {q.name!r}: give mu or a target per attribute")
            missing = [a for a in stats if a not in (q.mu or {})]
            if missing and q.target is None and not split:  # pragma: no cover - parse refuses
                raise PlanError(f"query {q.name!r}: give mu, a target, or a [plan] total")
            queries[i] = dataclasses.replace(q, mu={**{a: 1.0 for a in missing}, **(q.mu or {})})
            continue
        if q.epsilon is not None:
            continue
        if q.target is None and not split:
            raise PlanError(f"query {q.name!r}: give epsilon, a target, or a [plan] total to split")
        for v in _PROVISIONAL:
            cand = dataclasses.replace(q, epsilon=v)
            try:
                build(dataclasses.replace(plan, queries=(cand,)))
            except EreeError:
                continue
            queries[i] = cand
            break
        else:  # pragma: no cover - a count query that no ε up to 10⁴ makes valid
            raise PlanError(f"query {q.name!r}: no epsilon up to 10000 is valid for {q.mechanism}")
    return dataclasses.replace(plan, queries=tuple(queries))


def _slots(plan: Plan, built: BuiltPlan) -> list[_Slot]:
    gedp = plan.kind == "establishments"
    bp = plan.budget_plan
    out = []
    for qp in built.queries:
        q = qp.spec
        for j, (stat, mech) in enumerate(zip(qp.statistics, qp.mechanisms, strict=True)):
            t = (q.target or {}).get(stat)
            at, share = representative_cell(q, stat, bp, gedp)
            original = plan.query(q.name)
            given = (original.mu or {}).get(stat) if gedp else original.epsilon
            out.append(_Slot(q, j, stat, mech, "mu" if gedp else "epsilon", given, t, at,
                             share, q.weight))  # fmt: skip
    return out


# ------------------------------------------------------------------ splitting a total


def _validity_floor(s: _Slot, bounds_mu: float | None) -> float:
    """The smallest value at which the mechanism is valid and its error finite."""

    def ok(m: Mechanism) -> bool:
        return math.isfinite(s.loss(m))

    v = smallest_parameter(lambda v: s.at_value(v, bounds_mu), ok, 1e-6)
    if v is None:  # pragma: no cover
        raise PlanError(f"{_where(s)}: no {s.parameter} makes {s.mechanism.name} valid")
    return v * (1 + 1e-6)


def _split(
    slots: list[_Slot], floors: list[float], total: float, bounds: dict[str, float | None]
) -> list[float]:
    """Minimise Σ wᵢEᵢ(rᵢ) subject to Σ rᵢ = R, rᵢ ≥ floorᵢ (r = ε, or μ²)."""
    gaussian = slots[0].parameter == "mu"
    resource_total = total * total if gaussian else total
    r_floor = np.array([f * f if gaussian else f for f in floors])
    if r_floor.sum() > resource_total * (1 + 1e-12):
        need = math.sqrt(r_floor.sum()) if gaussian else float(r_floor.sum())
        unit = "mu" if gaussian else "epsilon"
        raise PlanError(
            f"[plan].{unit} = {total:g} is less than the {round_up(need)} the targets and the "
            "mechanisms' validity conditions need: raise it, or relax the targets"
        )
    k = len(slots)
    dense = np.empty((k, _TABLE_POINTS * _DENSE))
    losses = np.empty_like(dense)
    for i, s in enumerate(slots):
        lo = math.log(r_floor[i])
        hi = math.log(max(resource_total, r_floor[i] * (1 + 1e-9)))
        pts = np.linspace(lo, hi, _TABLE_POINTS)
        vals = []
        for lr in pts:
            v = math.exp(lr / 2) if gaussian else math.exp(lr)
            try:
                vals.append(s.weight * s.loss(s.at_value(v, bounds.get(s.statistic))))
            except EreeError:
                vals.append(math.inf)
        y = np.array(vals, dtype=np.float64)
        fine = np.linspace(lo, hi, _TABLE_POINTS * _DENSE)
        finite = np.isfinite(y) & (y > 0)
        if finite.sum() >= 2:
            ly = np.interp(fine, pts[finite], np.log(y[finite]))
            losses[i] = np.where(fine >= pts[finite][0], np.exp(ly), np.inf)
        else:
            losses[i] = np.where(np.isfinite(y[0]), y[0], 0.0)  # weight 0: any value
        dense[i] = np.exp(fine)

    def spend(lam: float) -> tuple[np.ndarray, float]:
        idx = np.argmin(losses + lam * dense, axis=1)
        r = dense[np.arange(k), idx]
        return r, float(r.sum())

    lo_l, hi_l = 1e-30, 1e30
    best = spend(hi_l)[0]
    for _ in range(200):
        mid = math.sqrt(lo_l * hi_l)
        r, used = spend(mid)
        if used <= resource_total:
            best, hi_l = r, mid
        else:
            lo_l = mid
        if hi_l / lo_l < 1 + 1e-9:
            break
    return [math.sqrt(x) if gaussian else float(x) for x in best]


def _round_down3(x: float) -> float:
    """``x`` rounded down to three significant digits, as the decimal a spec writes."""
    d = Decimal(repr(x))
    return float(d.quantize(Decimal(1).scaleb(d.adjusted() - 2), rounding=ROUND_FLOOR))


# ------------------------------------------------------------------ the plan


def plan_budget(plan: Plan, *, alternatives: bool = True) -> PlanResult:
    """Choose every query's ε (ER-EE family) or μ (GEDP) from its targets and ``[plan]``.

    Args:
        plan: the spec.
        alternatives: also say what the definition's other count mechanisms need for
            each ER-EE target.

    Raises:
        PlanError: an unreachable target, a total too small for the targets, or a query
            with neither a value, a target nor a total to split.
    """
    if plan.privacy.definition == "none" or any(
        q.mechanism == "noise_infusion" for q in plan.queries
    ):
        raise PlanError("noise infusion has no formal budget to plan (no epsilon or mu)")
    provisional = _provisional_plan(plan)
    built = build(provisional)
    slots = _slots(plan, built)
    gedp = plan.kind == "establishments"
    bp = plan.budget_plan
    total = None if bp is None else (bp.mu if gedp else bp.epsilon)
    for s in slots:
        if total is not None and s.target is None and not math.isfinite(s.at):
            raise PlanError(
                f"{_where(s)}: no target and no representative size: give [plan].at."
                f"{s.statistic} (in its unit)"
            )
    src = plan.pnc.bounds_from
    identity = {s.statistic: s for s in slots if s.query.name == src}
    bounds: dict[str, float | None] = {a: s.given for a, s in identity.items()}
    chosen: dict[tuple[str, str], float] = {}
    for _ in range(6 if total is not None and identity else 1):
        # identity targets first: pnc's bounds use the identity query's μ
        order = sorted(slots, key=lambda s: s.query.name != src)
        floors = []
        for s in order:
            if s.target is not None:
                b = bounds.get(s.statistic) if s.query.name != src else None
                v = _need(s, b)
                if s.query.name == src:
                    bounds[s.statistic] = v
            elif total is None:
                v = s.given if s.given is not None else math.nan
            else:
                v = 0.0
            floors.append(v)
        if total is None:
            new = {(s.query.name, s.statistic): v for s, v in zip(order, floors, strict=True)}
        else:
            mins = [  # three significant digits, so that rounding down keeps them
                max(f, round_up_float(_validity_floor(s, bounds.get(s.statistic))))
                for s, f in zip(order, floors, strict=True)
            ]
            values = _split(order, mins, total, bounds)
            new = {
                (s.query.name, s.statistic): max(_round_down3(v), m)
                for s, v, m in zip(order, values, mins, strict=True)
            }
        moved = any(abs(new[k] - chosen.get(k, math.inf)) > 1e-12 for k in new)
        chosen = new
        for a, s in identity.items():
            bounds[a] = chosen[(s.query.name, a)]
        if not moved:
            break
    done = _completed(plan, chosen)
    built = build(done)
    stats = _describe(done, built, slots, chosen, bounds, alternatives)
    report_total = built.report().total
    got = report_total.mu if gedp else report_total.epsilon
    notes = []
    if gedp and any(isinstance(m, PncBounded) for q in built.queries for m in q.mechanisms):
        notes.append(
            f"pnc rows assume {GEDP_ASSUMED_ESTABLISHMENTS:,} establishments (tau-hat); "
            "no data were read"
        )
    at_plan = [s.query.name for s in slots
               if total is not None and s.target is None and s.query.at is None]  # fmt: skip
    if at_plan:
        names = ", ".join(dict.fromkeys(at_plan))
        notes.append(
            f"split at [plan].at for {names}: a split serves cells of the size it is planned "
            "at; give each query its typical cell size as at (e.g. a published total over "
            "the number of cells; docs/planning.md)"
        )
    return PlanResult(done, built, tuple(stats), "mu" if gedp else "epsilon",
                      float(got or 0.0), total, tuple(notes))  # fmt: skip


def round_up_float(x: float) -> float:
    """``x`` rounded up to three significant digits."""
    return float(round_up(x))


def _completed(plan: Plan, chosen: dict[tuple[str, str], float]) -> Plan:
    gedp = plan.kind == "establishments"
    queries = []
    for q in plan.queries:
        if gedp:
            mu = dict(q.mu or {})
            for (name, stat), v in chosen.items():
                if name == q.name:
                    mu[stat] = v
            queries.append(dataclasses.replace(q, mu=mu))
        else:
            queries.append(dataclasses.replace(q, epsilon=chosen[(q.name, "jobs")]))
    return dataclasses.replace(plan, queries=tuple(queries))


def _describe(
    plan: Plan,
    built: BuiltPlan,
    slots: list[_Slot],
    chosen: dict[tuple[str, str], float],
    bounds: dict[str, float | None],
    alternatives: bool,
) -> list[PlannedStatistic]:
    split = plan.budget_plan is not None and (
        plan.budget_plan.epsilon is not None or plan.budget_plan.mu is not None
    )
    out = []
    for s in slots:
        v = chosen[(s.query.name, s.statistic)]
        b = None if s.query.name == plan.pnc.bounds_from else bounds.get(s.statistic)
        m = s.at_value(v, b)
        e = s.error(m)
        assert e is not None
        achieved = None if s.target is None else target_met(s.target, e)[1]
        curve = []
        for f in CURVE_FACTORS:
            try:
                curve.append((v * f, s.loss(s.at_value(v * f, b))))
            except EreeError:
                curve.append((v * f, math.inf))
        out.append(PlannedStatistic(
            s.query.name, s.statistic, m.name, s.parameter, s.given, v, s.target, s.at,
            max(s.share * s.at, 1.0) if "x_v" in m.needs else None, e, achieved,
            s.loss(m), tuple(curve),
            _alternatives(plan, s) if alternatives and s.target is not None else (),
            split,
        ))  # fmt: skip
    return out


def _alternatives(plan: Plan, s: _Slot) -> tuple[tuple[str, float | None], ...]:
    """The ε each other count mechanism of the definition needs for the same target."""
    if s.parameter != "epsilon":
        return ()
    out: list[tuple[str, float | None]] = []
    names = dict.fromkeys(
        e.name for e in entries_for(plan.privacy.definition)
        if "epsilon" in e.settings and e.name not in (s.mechanism.name, "noise_infusion")
        and e.variant != "workshop"
    )  # fmt: skip
    for name in names:
        q = QuerySpec(s.query.name, s.query.by, name, epsilon=None, target=s.query.target)
        try:
            alt_plan = dataclasses.replace(plan, queries=(q,), budget_plan=None)
            alt = plan_budget(alt_plan, alternatives=False).statistics[0].chosen
        except EreeError:
            alt = None
        out.append((name, alt))
    return tuple(out)
