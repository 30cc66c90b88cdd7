"""Accuracy preview of a plan, from public information only (``eree explain``, ``eree validate``).

For each query, the error of one published cell at representative sizes the user can
read against their tables — never the data's own sizes. Every number comes from the
query's mechanism object (:meth:`eree.mechanisms.base.Mechanism.expected_error`), the
same object whose scale the release draws with; nothing here repeats a formula.

* ER-EE and DP count marginals: a cell of n jobs (n = 1, 10, …, 10,000) whose largest
  establishment holds x_v of them, at x_v = 1 (jobs spread over many establishments:
  the least noise of a smooth-sensitivity mechanism) and x_v = n (one establishment
  holds the whole cell: the most).
* GEDP sums, per confidential attribute: a group whose sum is x (ψ-mechanism,
  Estab-Gaussian) and whose largest establishment has value x (pnc: its public bound
  u*_ℓ is ψ⁻¹(ψ(x) + γτ̂/μ⁽ᵃ⁾) at the identity query's median answer), x = 1 … 10⁶ in the
  attribute's own units.

Warnings have the shape ``{"code", "query", "message", "remedy"}`` and say what to change;
``noise-exceeds-value`` also gives its ``statistic`` and the size ``below`` which the noise
std exceeds the value (in the statistic's unit; None: every size), which ``eree audit
claims`` checks.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from eree.errors import EreeError
from eree.mechanisms.base import ExpectedError, Mechanism
from eree.mechanisms.er_ee import ApproximateCountMechanism, CountMechanism
from eree.mechanisms.gedp import GedpMechanism, PncBounded
from eree.mechanisms.noise_infusion import NoiseInfusion
from eree.privacy.neighbors import SqrtShift
from eree.release.build import BuiltPlan, QueryPlan
from eree.release.report_words import FPR, power_of_epsilon, power_of_mu
from eree.release.targets import (
    Target,
    relative_error,
    representative_cell,
    split_share,
    target_met,
)
from eree.release.units import UNKNOWN, amount, money_scale, unit_of

__all__ = [
    "COUNT_SIZES",
    "COUNT_WARN_BELOW",
    "GEDP_ASSUMED_ESTABLISHMENTS",
    "GEDP_WARN_BELOW",
    "GEDP_WARN_BELOW_DOLLARS",
    "MEANINGFUL_POWER",
    "VALUE_SIZES",
    "WEAK_POWER",
    "accuracy_tradeoffs",
    "delta_warning",
    "gedp_warn_limit",
    "guarantee_warning",
    "plan_warnings",
    "preview",
    "round_down",
    "round_up",
    "smallest_parameter",
    "statistics_at",
    "target_check",
    "tradeoff",
]

#: representative cell sizes n (jobs) of a count marginal
COUNT_SIZES = (1, 10, 100, 1_000, 10_000)
#: representative group values of a GEDP attribute, in the attribute's own units
VALUE_SIZES = (1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)
#: warn when a count cell of more than this many jobs gets noise larger than its value
COUNT_WARN_BELOW = 10.0
#: warn when a GEDP group of value above this gets noise larger than it, for an attribute
#: whose unit is not known (in the attribute's own units)
GEDP_WARN_BELOW = 1_000.0
#: the same for a money attribute, in dollars, converted into the attribute's declared unit
#: so that the same data in dollars and in thousands warn alike: $1 million, the 1,000 this
#: warning has always used on the QCEW-like files it was set for (wages in thousands of
#: dollars). A lower limit would warn on the papers' recommended wage protection (γ = 50
#: on √dollars) for single establishments of a few jobs, with a remedy of μ ≈ 100
GEDP_WARN_BELOW_DOLLARS = 1_000_000.0
#: a total guarantee under which a test at 5% false positives can reach this power or
#: more protects little in practice: it gets the ``guarantee-weak`` warning
WEAK_POWER = 0.99
#: the power at 5% false positives the ``guarantee-weak`` remedy's budget keeps to
MEANINGFUL_POWER = 0.5
#: n used for pnc's τ̂ when the number of establishments is not known (``eree explain``)
GEDP_ASSUMED_ESTABLISHMENTS = 10_000

#: search range of the break-even size and of a remedy's parameter
_LOW, _HIGH = 1e-3, 1e12


def warning(
    code: str, query: str | None, message: str, remedy: str, **extra: Any
) -> dict[str, Any]:
    """One warning in the shape the manifest and the report use (``extra``: its figures)."""
    return {"code": code, "query": query, "message": message, "remedy": remedy, **extra}


# ------------------------------------------------------------------ per-mechanism inputs


def _pnc_bound(mech: PncBounded, x: float, n_est: int) -> float:
    """u*_ℓ of a group whose largest establishment has value x, at the median ω = ψ(x)."""
    omega = mech.neighbor.psi(np.array([x], dtype=np.float64))
    return float(mech.upper_bounds(omega, n_est)[0])


def statistics_at(mech: Mechanism, size: float, x_v: float, n_est: int) -> dict[str, float]:
    """The cell statistics a mechanism reads, at a representative size."""
    if isinstance(mech, GedpMechanism):
        at = {"value": size}
        if isinstance(mech, PncBounded):
            at["bound"] = _pnc_bound(mech, size, n_est)
        return at
    return {"count": size, "count_truncated": size, "x_v": x_v}


def _error(mech: Mechanism, size: float, x_v: float, n_est: int) -> ExpectedError | None:
    return mech.expected_error(statistics_at(mech, size, x_v, n_est))


def _uses_x_v(mech: Mechanism) -> bool:
    return "x_v" in mech.needs or mech.uses_establishment_incidence


def _std_over_size(mech: Mechanism, size: float, n_est: int) -> float:
    """The noise std over the size at ``size`` (x_v = 1 for counts); NaN without a std."""
    e = _error(mech, size, 1.0, n_est)
    if e is None or e.std is None:
        return math.nan
    return e.std / size


def break_even(mech: Mechanism, n_est: int) -> float | None:
    """The size below which the noise std exceeds the value (x_v = 1 for counts).

    Assumes std/size decreases in size (true of every registered mechanism). None when
    the std never exceeds the value above size 10⁻³; ``inf`` when it always does.
    """

    def ratio(size: float) -> float:
        return _std_over_size(mech, size, n_est)

    lo, hi = _LOW, _HIGH
    if not ratio(lo) > 1:  # nan (no preview) or already below
        return None
    if ratio(hi) > 1:
        return math.inf
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if ratio(mid) > 1:
            lo = mid
        else:
            hi = mid
        if hi / lo < 1 + 1e-9:
            break
    return hi


def smallest_parameter(
    make: Callable[[float], Mechanism], ok: Callable[[Mechanism], bool], start: float
) -> float | None:
    """The smallest parameter ≥ ``start`` (geometric search) whose mechanism satisfies ``ok``."""

    def good(v: float) -> bool:
        try:
            return ok(make(v))
        except EreeError:
            return False

    lo, hi = start, start
    while not good(hi):
        lo, hi = hi, hi * 2
        if hi > _HIGH:
            return None
    for _ in range(200):
        if hi / lo < 1 + 1e-6:
            break
        mid = math.sqrt(lo * hi)
        if good(mid):
            hi = mid
        else:
            lo = mid
    return hi


# ------------------------------------------------------------------ the preview


def _fmt(v: float | None) -> float | None:
    return None if v is None else float(v)


def _count_rows(mech: Mechanism, n_est: int, plan: Any = None) -> list[list[Any]]:
    rows: list[list[Any]] = []
    bp = None if plan is None else plan.budget_plan
    for n in COUNT_SIZES:
        modelled = max(1, round(split_share(float(n), bp) * n))  # the public variance model
        for x_v in dict.fromkeys((1, modelled, n)) if _uses_x_v(mech) else (None,):
            e = _error(mech, float(n), float(x_v or n), n_est)
            if e is None:
                continue
            rel = None if e.mean_abs is None else e.mean_abs / n
            cells = [n] if x_v is None else [n, x_v]
            rows.append([*cells, _fmt(e.std), _fmt(e.mean_abs), rel, _fmt(e.ci_width)])
    return rows


def _value_rows(mech: Mechanism, n_est: int) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for x in VALUE_SIZES:
        e = _error(mech, float(x), 1.0, n_est)
        if e is None:
            continue
        rel = None if e.std is None else e.std / x
        rows.append([x, _fmt(e.std), _fmt(e.mean_abs), rel, _fmt(e.ci_width)])
    return rows


def _notes(mech: Mechanism, n_est: int, known: bool) -> list[str]:
    notes = []
    e = _error(mech, 100.0, 1.0, n_est)
    if e is not None and e.note:
        notes.append(e.note)
    if isinstance(mech, CountMechanism) and _uses_x_v(mech):
        notes.append(
            "x_v: jobs of the cell in its largest establishment (x_v = 1: spread over many "
            "establishments, the least noise; x_v = n: one establishment, the most; the row "
            "between: the public variance model's typical x_v for a cell of n jobs held by "
            "n/16 establishments, min(5.05·k^-0.585, 1)·n, the share post-processing and "
            "eree plan use)"
        )
    if isinstance(mech, PncBounded):
        assumed = f"an assumed {GEDP_ASSUMED_ESTABLISHMENTS:,} establishments (no data read)"
        how = "the data's number of establishments" if known else assumed
        notes.append(
            "pnc rows: a group whose largest establishment has this value; its public bound u* "
            f"at the identity query's median answer, with tau-hat for {how}; the group's sum is "
            "at least the value, so std/value bounds the relative error from above"
        )
    return notes


def preview(built: BuiltPlan, n_establishments: int | None = None) -> dict[str, Any]:
    """The accuracy preview and warnings of a built plan (public information only).

    Args:
        built: the plan's mechanism objects.
        n_establishments: the number of establishments (public: the workplace frame);
            None when no data is read.

    Returns:
        ``{"queries": [...], "warnings": [...]}``; each query entry has ``query``,
        ``statistic``, ``mechanism``, ``columns``, ``rows``, ``break_even`` (the size
        below which the noise std exceeds the value) and ``notes``.
    """
    n_est = n_establishments or GEDP_ASSUMED_ESTABLISHMENTS
    known = n_establishments is not None
    out: list[dict[str, Any]] = []
    for q in built.queries:
        for stat, mech in zip(q.statistics, q.mechanisms, strict=True):
            gedp = isinstance(mech, GedpMechanism)
            rows = _value_rows(mech, n_est) if gedp else _count_rows(mech, n_est, built.plan)
            if not rows:
                continue
            conf = f"{getattr(mech, 'confidence', 0.95):.0%}"
            size_cols = ["value"] if gedp else (["n", "x_v"] if _uses_x_v(mech) else ["n"])
            err_cols = ["std", "E|error|", "std/value" if gedp else "E|error|/n"]
            cols = [*size_cols, *err_cols, f"{conf} CI width"]
            entry: dict[str, Any] = {
                "query": q.name, "statistic": stat, "mechanism": mech.name,
                "columns": cols, "rows": rows, "break_even": break_even(mech, n_est),
                "notes": _notes(mech, n_est, known),
            }  # fmt: skip
            t = (q.spec.target or {}).get(stat)
            if t is not None:
                entry["target"] = target_check(mech, t, n_est)
            entry["tradeoff"] = tradeoff(mech, stat, q.spec, n_est, built.plan)
            same = [e for e in out if e["query"] == q.name and e["rows"] == rows
                    and "target" not in e and t is None]  # fmt: skip
            if same:  # attributes with the same parameters share one table
                same[0]["statistic"] += f", {stat}"
                continue
            out.append(entry)
    return {"queries": out, "warnings": plan_warnings(built, n_establishments)}


# ------------------------------------------------------------------ targets and trade-off

#: the budget multiples the trade-off curve is drawn at
TRADEOFF_FACTORS = (0.25, 0.35, 0.5, 0.7, 1.0, 1.4, 2.0, 2.8, 4.0)


def _representative(mech: Mechanism, spec: Any, plan: Any, stat: str) -> tuple[float, float] | None:
    """The cell a query's accuracy is read at: its target's, its at, [plan].at, else 100 jobs.

    None for a GEDP statistic without any stated size: there is no public size to state
    its accuracy at before the release (after it, the published median cell is used).
    """
    at, share = representative_cell(spec, stat, plan.budget_plan, isinstance(mech, GedpMechanism))
    if not math.isfinite(at):
        return None
    return at, max(share * at, 1.0)


def target_check(mech: Mechanism, t: Target, n_est: int) -> dict[str, Any]:
    """Whether the mechanism, as the spec sets it, meets the query's target."""
    x_v = max(t.largest_share * t.at, 1.0)
    met, achieved = target_met(t, mech.expected_error(statistics_at(mech, t.at, x_v, n_est)))
    return {"target": t.to_dict(), "words": t.words("jobs" if not isinstance(
        mech, GedpMechanism) else ""), "met": met, "achieved": achieved}  # fmt: skip


def tradeoff(
    mech: Mechanism,
    stat: str,
    spec: Any,
    n_est: int,
    plan: Any,
    cell: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Relative E|error| at the representative cell against the budget (the spec's value ×k).

    ``cell``: the public statistics of the cell to state it at (after a release: the
    published median cell, :func:`eree.release.accuracy.published_accuracy`), with its
    size ``at``; default the spec's representative cell. Empty when there is none.
    """
    gedp = isinstance(mech, GedpMechanism)
    name = "mu" if gedp else "epsilon"
    if not hasattr(mech, name):
        return {}
    if cell is not None:
        at, x_v = float(cell["at"]), float(cell.get("x_v", 1.0))
        stats = dict(cell)
    else:
        rep = _representative(mech, spec, plan, stat)
        if rep is None:
            return {}
        at, x_v = rep
        stats = statistics_at(mech, at, x_v, n_est)
    v0 = float(getattr(mech, name))
    points = []
    for k in TRADEOFF_FACTORS:
        try:
            m = dataclasses.replace(mech, **{name: v0 * k})  # type: ignore[arg-type]
            e = m.expected_error(stats)
        except EreeError:
            continue
        rel = relative_error(e, at)
        if math.isfinite(rel):
            points.append([v0 * k, rel])
    return {"parameter": name, "value": v0, "at": at, "x_v": None if gedp else x_v,
            "published_median": cell is not None, "points": points}  # fmt: skip


# ------------------------------------------------------------------ warnings


def declared_units(plan: Any) -> dict[str, str]:
    """The spec's ``[data].units`` (public: the user states them); empty when none."""
    units = ((getattr(plan, "raw", None) or {}).get("data") or {}).get("units") or {}
    return {str(k): str(v) for k, v in units.items()} if isinstance(units, Mapping) else {}


def gedp_warn_limit(stat: str, units: Mapping[str, str] | None = None) -> tuple[float, str]:
    """The size above which a GEDP attribute's groups should get noise below their value.

    In the attribute's unit (the declared one wins over a guess from its name,
    :func:`eree.release.units.unit_of`): $1 million for money (1,000 in thousands of
    dollars, so the same data in dollars and in thousands warn alike), else 1,000 in the
    attribute's own units. Returns (limit, the limit in words).
    """
    unit = unit_of(stat, units)
    scale = money_scale(unit)
    if scale is not None:
        return GEDP_WARN_BELOW_DOLLARS / scale, amount(GEDP_WARN_BELOW_DOLLARS / scale, unit)
    return GEDP_WARN_BELOW, f"{GEDP_WARN_BELOW:,.0f} (in {stat}'s units)"


def _noise_warning(
    q: QueryPlan, stat: str, mech: Mechanism, n_est: int, units: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    if isinstance(mech, NoiseInfusion):
        return None  # no formal guarantee; its error depends on confidential s, t
    gedp = isinstance(mech, GedpMechanism)
    limit, size = gedp_warn_limit(stat, units) if gedp else (COUNT_WARN_BELOW, "")
    n = break_even(mech, n_est)
    if n is None or n <= limit:
        return None

    def fine(m: Mechanism) -> bool:
        # where the std already exceeds the value at the limit, break_even lies above it
        # (std/size decreases in size, break_even's own premise): one evaluation, not
        # break_even's bisection, for the many candidates the search rejects
        if _LOW <= limit < _HIGH and _std_over_size(m, limit, n_est) > 1:
            return False
        b = break_even(m, n_est)
        return b is None or b <= limit

    coarsen = "coarsen the query (fewer, larger cells)"
    if isinstance(mech, GedpMechanism):
        unit_name = unit_of(stat, units)
        unit = "" if money_scale(unit_name) is not None else (
            f" (in {stat}'s units)" if unit_name == UNKNOWN else f" {unit_name}")  # fmt: skip
        what = f"groups of attribute {stat!r}"
        then = f"(then groups above {size} get noise below their value)"
        if q.spec.is_identity:
            what, then = f"establishments' {stat}", f"(then those above {size} get noise below it)"
            coarsen = "accept it: the identity query answers single establishments"
        current = f"mu = {mech.mu:g}"
        if isinstance(mech, PncBounded):  # the bounds come from the identity query's μ
            m0 = mech
            factor = smallest_parameter(
                lambda k: dataclasses.replace(m0, mu=k * m0.mu, bounds_mu=k * m0.bounds_mu),
                fine, 1.0,
            )  # fmt: skip
            how = coarsen if factor is None else (
                f"raise mu for {stat} here and in query {mech.bounds_from!r} (whose answers "
                f"set pnc's bounds) by a factor of {round_up(factor)} {then}, "
                f"or {coarsen}")  # fmt: skip
        else:
            need = smallest_parameter(lambda v: dataclasses.replace(mech, mu=v), fine, mech.mu)
            how = coarsen if need is None else (
                f"raise mu for {stat} to {round_up(need)} {then}, or {coarsen}")  # fmt: skip
        dollars = money_scale(unit_name)
        if isinstance(mech.neighbor, SqrtShift) and dollars is not None:
            other = "thousands of dollars" if dollars == 1.0 else "dollars"
            wrong = "too small" if dollars == 1.0 else "too large"
            how += (
                f"; check gamma's unit: with psi = sqrt it is in sqrt({unit_name}) here "
                f"({stat} in {unit_name}), so a gamma chosen for {stat} in {other} is "
                f"sqrt(1000) ≈ 31.6 times {wrong} (gamma = {mech.gamma:g}; see "
                "docs/choosing-parameters.md, Units)"
            )
        money = not math.isinf(n) and unit == ""  # the size in dollars, whatever the unit
        below = amount(n, unit_name) if money else None
    elif isinstance(mech, CountMechanism):
        size = f"{limit:,.0f}"
        eps = mech.epsilon
        unit, what = " jobs, even with x_v = 1", "cells"
        need = smallest_parameter(lambda v: dataclasses.replace(mech, epsilon=v), fine, eps)
        current = f"epsilon = {eps:g}"
        how = coarsen if need is None else (
            f"raise the query's epsilon to {round_up(need)} (then cells above {size} jobs get "
            f"noise below their value), or {coarsen}")  # fmt: skip
        below = None
    else:
        return None
    if below is None:
        below = "every size" if math.isinf(n) else f"{n:,.0f}"
    message = (
        f"noise std exceeds the value for {what} below {below}{unit} "
        f"(query {q.name!r}, mechanism {mech.name}, {current})"
    )
    return warning("noise-exceeds-value", q.name, message, how, statistic=stat,
                   below=None if math.isinf(n) else n)  # fmt: skip


def round_up(x: float, digits: int = 3) -> str:
    """``x`` shown to ``digits`` significant digits, rounded *up*: a stated minimum suffices."""
    if x <= 0 or not math.isfinite(x):
        return f"{x:.{digits}g}"
    scale = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    v = math.ceil(x / scale - 1e-9) * scale
    return f"{v:.{digits}g}"


def round_down(x: float, digits: int = 2) -> float:
    """``x`` to ``digits`` significant digits, rounded *down*: a stated maximum holds."""
    if x <= 0 or not math.isfinite(x):
        return x
    scale = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    return float(f"{math.floor(x / scale + 1e-9) * scale:.{digits}g}")


def delta_warning(q: QueryPlan, n_establishments: int) -> dict[str, Any] | None:
    """Smooth Laplace: a per-cell δ ≥ 1/(number of establishments) (Haney et al. §9).

    At such a δ a mechanism may publish some establishments exactly. The remedy gives
    the query's δ for a per-cell δ of a tenth of 1/N and the ε that δ needs, both from
    the mechanism object.
    """
    mech = q.mechanisms[0]
    if not isinstance(mech, ApproximateCountMechanism) or n_establishments < 1:
        return None
    dcell = mech.delta_cell
    if dcell < 1.0 / n_establishments:
        return None
    target = round_down(0.1 / n_establishments * mech.worker_cells)  # the δ the remedy states
    need = smallest_parameter(lambda e: dataclasses.replace(mech, epsilon=e, delta=target),
                     lambda m: True, mech.epsilon)  # fmt: skip
    message = (
        f"per-cell delta {dcell:.3g} >= 1/(number of establishments) = "
        f"{1.0 / n_establishments:.3g}: a mechanism could publish some establishments "
        f"exactly at this delta (Haney et al. §9; query {q.name!r})"
    )
    per_cell = target / mech.worker_cells
    if need is not None:  # with k > 1 jobs per worker δ splits over more than d
        per_cell = dataclasses.replace(mech, epsilon=need, delta=target).delta_cell
    remedy = (
        f"set the query's delta to {target:g} (per cell {per_cell:.2g}); "
        + (f"that needs epsilon >= {round_up(need)}; " if need is not None else "")
        + "or use log_laplace or smooth_gamma, which have no delta"
    )
    return warning("delta-per-cell-large", q.name, message, remedy)


def accuracy_tradeoffs(
    built: BuiltPlan,
    n_establishments: int | None = None,
    published: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Per query and statistic: relative E|error| at its representative cell against budget.

    The manifest's ``accuracy_tradeoff`` (the release report draws it): the spec's ε or μ
    and multiples of it, the target when the query has one and whether it is met.
    ``published``: after a release, its :func:`eree.release.accuracy.published_accuracy`;
    each curve is then drawn at the table's published median cell (public once published),
    otherwise at the spec's representative size (none for GEDP without a stated size).
    """
    n_est = n_establishments or GEDP_ASSUMED_ESTABLISHMENTS
    cells = {(a["query"], a["statistic"]): a["cell"] for a in published or [] if a.get("cell")}
    out = []
    for q in built.queries:
        for stat, mech in zip(q.statistics, q.mechanisms, strict=True):
            if isinstance(mech, NoiseInfusion):
                continue
            cell = cells.get((q.name, stat))
            curve = tradeoff(mech, stat, q.spec, n_est, built.plan, cell)
            if not curve or not curve["points"]:
                continue
            entry = {"query": q.name, "statistic": stat, "mechanism": mech.name, **curve}
            t = (q.spec.target or {}).get(stat)
            if t is not None:
                entry["target"] = target_check(mech, t, n_est)
            out.append(entry)
    return out


def plan_warnings(built: BuiltPlan, n_establishments: int | None = None) -> list[dict[str, Any]]:
    """Every warning of a plan, from public information (and N when known)."""
    n_est = n_establishments or GEDP_ASSUMED_ESTABLISHMENTS
    units = declared_units(built.plan)
    out = []
    for q in built.queries:
        for stat, mech in zip(q.statistics, q.mechanisms, strict=True):
            w = _noise_warning(q, stat, mech, n_est, units)
            if w is not None:
                out.append(w)
            t = (q.spec.target or {}).get(stat)
            if t is not None and not target_check(mech, t, n_est)["met"]:
                unit = "mu" if isinstance(mech, GedpMechanism) else "epsilon"
                what = "" if stat == "jobs" else f" for {stat}"
                out.append(warning(
                    "target-not-met", q.name,
                    f"query {q.name!r}{what} misses its target ({t.words()}) at its {unit}",
                    f"`eree plan SPEC --write FILE` chooses the {unit} that meets it",
                ))  # fmt: skip
        if n_establishments is not None:
            d = delta_warning(q, n_establishments)
            if d is not None:
                out.append(d)
    weak = guarantee_warning(built.report().total.to_dict())
    if weak is not None:
        out.append(weak)
    return out


def _meaningful_budget(power: Callable[[float], float]) -> float:
    """The largest budget whose power at 5% false positives is at most MEANINGFUL_POWER."""
    lo, hi = 0.0, 1.0
    while power(hi) <= MEANINGFUL_POWER:
        lo, hi = hi, 2 * hi
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if power(mid) <= MEANINGFUL_POWER else (lo, mid)
    return lo


def guarantee_warning(total: Mapping[str, Any]) -> dict[str, Any] | None:
    """``guarantee-weak``: a total under which a test at 5% false positives reaches ≥ 99% power.

    Such a guarantee protects little in practice: an attacker's test can tell an individual's
    two neighbouring worlds apart nearly always. The remedy states the total that keeps the
    power at or below 50% (μ by Φ(Φ⁻¹(0.05) + μ), ε by the (ε, δ) testing bound,
    :mod:`eree.release.report_words`).
    """
    mu, eps = total.get("mu"), total.get("epsilon")
    delta = float(total.get("delta") or 0.0)
    if mu is not None:
        power, sym, now = power_of_mu(float(mu)), "mu", float(mu)
        need = _meaningful_budget(power_of_mu)
    elif eps is not None:
        power, sym, now = power_of_epsilon(float(eps), delta), "epsilon", float(eps)
        need = _meaningful_budget(lambda e: power_of_epsilon(e, delta))
    else:
        return None
    if power < WEAK_POWER:
        return None
    message = (
        f"the guarantee protects little in practice: at a total {sym} = {now:.3g}, a test "
        f"that raises false alarms {FPR:.0%} of the time can tell apart the neighbouring "
        f"datasets the definition protects with power up to {power:.1%}"
    )
    remedy = (
        f"a total {sym} of at most {round_down(need, 3):g} keeps that power at or below "
        f"{MEANINGFUL_POWER:.0%}; lower the queries' {sym} (`eree plan` splits a total "
        f"{sym} = {round_down(need, 3):g} over them, docs/planning.md), or publish fewer tables"
    )
    return warning("guarantee-weak", None, message, remedy)
