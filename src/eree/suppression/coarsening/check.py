r"""The disclosure check of a coarsened publication: the attacker's LP over all tables.

The attacker knows every cell's own interval (:meth:`.Publication.own_bounds`), the
additivity relations of the linked tables and non-negativity. For every cell he gets
:math:`[\underline{x}_c, \overline{x}_c]` from :func:`eree.suppression.linked.linked_bounds`
— all published tables together, not cell by cell (rounded to whole numbers inward for
counts). The rules are the suppression package's (:mod:`eree.suppression.rules`: p%,
dominance, threshold): a sensitive cell with total :math:`T` and protection level
:math:`U` is **violated** when its interval does not cover its protection interval
:math:`[T - \min(U, T),\ T + U]`. Since :math:`U` is what the total would have to change
for the rule to hold, an interval that covers it leaves the largest contributor's value
(for p%: as the second largest contributor sees it) as uncertain as the rule asks; a
cell with one establishment (threshold rule) is that establishment's contribution. Any
other cell is **pinned** when its interval is a point and it was not published exactly
(reported, not a violation: its publication broke no rule).

**What exact zeros disclose** (``floor``). A publication that prints every zero cell of
a table exactly tells the attacker that each cell of that table it did *not* print
exactly holds at least one unit (a job): :func:`presence_floor` gives those cells the
lower bound 1, and the check's LP starts every non-exact cell's own interval there. The
rule then protects the count, not the presence it discloses: the protection interval is
clipped below at what presence alone implies, :math:`[\max(T - \min(U, T),\ P_c),\ T + U]`,
with :math:`P_c` the least the cell can hold given only which cells are non-zero
(:func:`eree.suppression.rules.protected_lower`). For a job cell :math:`P_c` is 1, or the
number of non-zero cells of a table that splits it: one job cannot be told from two; that
there is a job, and in how many distinct cells, is disclosed by the exact zeros.
``floor`` None: no such knowledge (the QCEW tables, whose zeros are not published).

No formal guarantee: the check is the LP relaxation (an integer attacker can do better
only by integrality, counted inward for counts), it does not model an attacker who
knows how the coarsening was chosen, nor outside knowledge.
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np

from eree.suppression.coarsening.publication import Publication
from eree.suppression.linked import BasisMemory, linked_bounds, tolerance
from eree.suppression.rules import PrimaryResult, protected_lower
from eree.suppression.tables import LinkedTables

__all__ = [
    "CheckResult",
    "disclosure_check",
    "floored_bounds",
    "presence_floor",
    "raise_to_floor",
]


@dataclass(frozen=True)
class CheckResult:
    """The check of one attribute (arrays per cell; confidential, internal).

    Attributes:
        lower, upper: the attacker's interval per cell.
        violated: sensitive cells whose interval misses their protection interval.
        pinned: cells pinned to one value though not published exactly.
        stats: LPs solved, peeled cells, components.
        raw_lower, raw_upper: the LP's bounds before counts are rounded inward.
    """

    lower: np.ndarray
    upper: np.ndarray
    violated: np.ndarray
    pinned: np.ndarray
    stats: dict[str, int]
    raw_lower: np.ndarray | None = None
    raw_upper: np.ndarray | None = None

    def summary(self) -> dict[str, Any]:
        """Counts only (no cell value)."""
        return {
            "violations": int(self.violated.sum()),
            "cells_pinned": int(self.pinned.sum()),
            "how": dict(self.stats),
        }


def presence_floor(
    values: np.ndarray, exact: np.ndarray, kind: np.ndarray | None = None
) -> np.ndarray:
    """What exact zeros disclose: per cell, the lower bound 1 or 0 (counts).

    A cell gets 1 when every zero cell of its ``kind`` (e.g. its table) is published
    exactly: a cell of that kind not published exactly is then known to be non-zero (a
    count: at least 1). Applied by the attacker to the cells not published exactly only
    (an exact cell is known anyway). The one implementation of this knowledge: the WAC
    optimizer's check, its suppression arm and the WAC rule audit all take it from here.

    Args:
        values: the true values (the auditor's; only which are zero is used).
        exact: per cell, published exactly.
        kind: per cell, its kind (any labels); None: one kind for all.
    """
    t = np.asarray(values, dtype=np.float64)
    ex = np.asarray(exact, dtype=bool)
    hidden_zero = (t == 0) & ~ex
    if kind is None:
        return np.full(t.size, 0.0 if hidden_zero.any() else 1.0)
    _, inv = np.unique(np.asarray(kind), return_inverse=True)
    bad = np.bincount(inv, weights=hidden_zero.astype(np.float64)) > 0
    return np.where(bad[inv], 0.0, 1.0)


def raise_to_floor(
    lower: np.ndarray,
    upper: np.ndarray,
    exact: np.ndarray,
    floor: np.ndarray | float | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Own intervals with a non-exact cell's lower end raised to ``floor``.

    What exact zeros disclose (:func:`presence_floor`), applied by every reader of
    published intervals: the coarsening check (:func:`floored_bounds`) and the
    reconstruction audit's interval LP (:func:`eree.evaluate.reconstruct.intervals.
    interval_audit`). ``floor`` None: unchanged.
    """
    if floor is None:
        return lower, upper
    f = np.broadcast_to(np.asarray(floor, dtype=np.float64), lower.shape)
    lo = np.where(np.asarray(exact, dtype=bool), lower, np.maximum(lower, f))
    return lo, np.maximum(upper, lo)


def floored_bounds(
    publication: Publication, floor: np.ndarray | float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A publication's own intervals, what its exact zeros disclose added.

    :meth:`.Publication.own_bounds`, each non-exact cell's lower end raised to ``floor``
    (:func:`raise_to_floor`).
    """
    lo, hi = publication.own_bounds()
    return raise_to_floor(lo, hi, publication.status == "exact", floor)


def _lp_failed(stats: dict[str, int]) -> bool:
    """Whether a component's LP failed (reported inconsistent) in ``stats``."""
    return stats.get("inconsistent_components", 0) > 0


def disclosure_check(
    tables: LinkedTables,
    publication: Publication,
    attribute: str,
    primary: PrimaryResult,
    *,
    use_truth: bool = True,
    cache: dict[bytes, tuple[np.ndarray, np.ndarray] | None] | None = None,
    sensitive_only: bool = False,
    prove: bool = True,
    floor: np.ndarray | float | None = None,
    propagate: bool = True,
    pool: Executor | None = None,
    memory: BasisMemory | None = None,
    covered: tuple[np.ndarray, np.ndarray] | None = None,
    near: tuple[np.ndarray, np.ndarray] | None = None,
    reach: tuple[np.ndarray, np.ndarray] | None = None,
) -> CheckResult:
    """Audit a coarsened publication of ``attribute`` against the primary rules.

    Args:
        tables: the linked tables (true values and relations).
        publication: what is published of ``attribute``.
        attribute: the attribute.
        primary: the primary rules' result (sensitive cells and protection levels).
        use_truth: give the LP the true values as a known feasible point (skips LPs; the
            bounds are the same).
        cache: component results kept between checks of nearby publications
            (:func:`~eree.suppression.linked.linked_bounds`): components no step changed
            are not re-solved.
        sensitive_only: decide only ``violated`` (the optimizer's rounds): a bound is
            solved for only until a feasible point shows the sensitive cell's protection
            interval covered on that side; ``lower``/``upper`` are then not the tightest
            bounds and ``pinned`` is not computed (all False). The final check of a
            publication is always the full one.
        prove: with ``sensitive_only``, False skips the LP of each cell the batch LPs
            left uncovered: it is counted violated unproven (an optimizer's heuristic
            round; a pass is still exact — every covered side is witnessed).
        floor: per cell (or one for all), the lower bound the publication discloses
            for a cell it does not publish exactly (:func:`presence_floor`; module
            docstring): the attacker's own interval of such a cell starts there, and
            the protection interval is clipped below at it. None: 0.
        propagate: narrow the own intervals by interval propagation over the relations
            before the LPs (:func:`~eree.suppression.linked.propagate_bounds`): the
            attacker's feasible set is the same, so are the bounds and the verdict; most
            bounds are then reached by the batches' feasible points without an LP of
            their own (DE: 648 LPs instead of 4,745 for the full check). False: the LPs
            from the own intervals (the reconstruction audit's path).
        pool: worker processes for the LPs of large components
            (:func:`~eree.suppression.linked.lp_pool`; the same result on two cores).
        memory: where the last check's large LPs ended
            (:class:`~eree.suppression.linked.BasisMemory`, an optimizer's checks of
            nearby publications): they start there. The same bounds and verdict.
        covered: with ``sensitive_only``, per cell, whether its lower and its upper side
            are known covered (a feasible point beyond its protection interval's end met
            by the check of a publication whose every own interval lies inside this
            one's: the attacker's feasible set has only grown since, so the point is
            still feasible). Those sides are not asked of the LP again; the verdict is
            the same.
        near: the raw bounds (``raw_lower``, ``raw_upper``) of a publication whose
            feasible set is this one's up to the LP's accuracy (the untightened one of
            :func:`~.optimize.tighten`). The check then decides what a release states —
            the violations and the cells pinned — exactly, without every tightest
            bound: a sensitive cell's sides are solved only as far as its protection
            interval (as with ``sensitive_only`` and ``prove``), any other cell not
            published exactly only until feasible points a third of its ``near`` width
            apart are met (it is then not pinned); a cell whose bounds come out a point
            has its sides solved to the tightest. ``lower``/``upper`` are then inner
            bounds (each attained, or the tightest), and ``raw_lower``/``raw_upper``
            are None.
        reach: per cell, how far its lower and its upper bound are needed (e.g.
            :func:`~.optimize.tighten_reach`: what tightening needs): a side is solved
            only until a feasible point at or beyond its reach is met (a sensitive
            cell: at or beyond its protection interval's end too). As with ``near``,
            the violations and the cells pinned are decided exactly (a cell whose
            bounds come out a point is solved to the tightest); the bounds returned,
            raw ones included, are the tightest where short of the reach and a point
            met beyond it elsewhere.
    """
    t = tables.values(attribute).astype(np.float64)
    own_lo, own_hi = floored_bounds(publication, floor)
    stats: dict[str, int] = {}
    u = primary.protection.get(attribute, np.zeros(t.size))
    need_lo = protected_lower(tables.relations, t, u, floor)
    need_hi = t + u
    goal_lo = goal_hi = None
    if sensitive_only:
        # the goal is the protection interval; cells that are not sensitive: none
        # (for counts: the whole numbers beyond it, as the bounds are rounded inward)
        g_lo = np.floor(need_lo + 1e-9) if publication.integer else need_lo
        g_hi = np.ceil(need_hi - 1e-9) if publication.integer else need_hi
        goal_lo = np.where(primary.primary, g_lo, np.inf)
        goal_hi = np.where(primary.primary, g_hi, -np.inf)
        if covered is not None:
            goal_lo = np.where(covered[0], np.inf, goal_lo)
            goal_hi = np.where(covered[1], -np.inf, goal_hi)
    exact = publication.status == "exact"
    guided = (near is not None or reach is not None) and not sensitive_only
    if guided:
        goal_lo, goal_hi = _guided_goals(
            reach if reach is not None else _thirds(near, publication.integer),  # type: ignore[arg-type]
            exact,
            primary.primary,
            need_lo,
            need_hi,
            publication.integer,
        )

    def bounds(g_lo: np.ndarray | None, g_hi: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        return linked_bounds(
            tables.relations,
            own_lo,
            own_hi,
            truth=t if use_truth else None,
            stats=stats,
            cache=cache,
            goal_lower=g_lo,
            goal_upper=g_hi,
            prove=prove or not sensitive_only,
            propagate=propagate,
            pool=pool,
            memory=memory,
        )

    lo, hi = bounds(goal_lo, goal_hi)
    if guided and not _lp_failed(stats):
        # a cell whose inner bounds are a point, unless both its sides stopped short of
        # their goals (then each was solved to the tightest): solved to the tightest
        r_lo, r_hi = _rounded(lo, hi, publication.integer)
        point = ~exact & (r_hi - r_lo <= tolerance(r_hi))
        assert goal_lo is not None and goal_hi is not None
        slack = 1e-6 * np.maximum(1.0, np.abs(lo))
        short = (lo > goal_lo + slack) & (hi < goal_hi - slack)
        point &= ~short
        if point.any():
            lo2, hi2 = bounds(np.where(point, -np.inf, np.inf), np.where(point, np.inf, -np.inf))
            lo, hi = np.where(point, lo2, lo), np.where(point, hi2, hi)
    if use_truth and _lp_failed(stats):
        # the true values are a feasible point: an inconsistent component is a solver
        # failure, and its cells' bounds were not computed — never pass them unchecked
        raise RuntimeError("the attacker's LP failed on a component; the check cannot decide")
    raw_lo, raw_hi = lo.copy(), hi.copy()
    lo, hi = _rounded(lo, hi, publication.integer)
    tol = tolerance(t)
    low_ok, high_ok = lo <= need_lo + tol, hi >= need_hi - tol
    if sensitive_only and covered is not None:
        low_ok, high_ok = low_ok | covered[0], high_ok | covered[1]
    violated = primary.primary & ~(low_ok & high_ok)
    pinned = (hi - lo <= tolerance(hi)) & (publication.status != "exact")
    if sensitive_only:
        pinned = np.zeros(t.size, dtype=bool)
    if near is not None and reach is None and not sensitive_only:
        return CheckResult(lo, hi, violated, pinned, stats)
    return CheckResult(lo, hi, violated, pinned, stats, raw_lo, raw_hi)


def _rounded(lo: np.ndarray, hi: np.ndarray, integer: bool) -> tuple[np.ndarray, np.ndarray]:
    """The LP's bounds as the check states them: for counts, whole numbers inward."""
    if not integer:
        return lo, hi
    r_lo = np.ceil(lo - 1e-6)
    r_hi = np.where(np.isfinite(hi), np.floor(hi + 1e-6), np.inf)
    return r_lo, np.maximum(r_hi, r_lo)


def _thirds(near: tuple[np.ndarray, np.ndarray], integer: bool) -> tuple[np.ndarray, np.ndarray]:
    r"""The reach of :func:`disclosure_check` with ``near`` (its docstring).

    A cell of ``near`` width :math:`w`: the points a third and two thirds up ``near`` —
    two feasible points that reach them are :math:`w/3` apart, so the cell is not
    pinned; a width too small for that (or unknown): the tightest bounds. An unbounded
    cell: not pinned once a point :math:`1 + |\ell|` above its lower end is met.
    """
    n_lo, n_hi = near
    w = n_hi - n_lo
    wide = np.isfinite(w) & (w > 3.0 * tolerance(n_hi)) & (w > (3.0 if integer else 0.0))
    r_lo = np.where(wide, n_lo + w / 3.0, -np.inf)
    r_hi = np.where(wide, n_lo + 2.0 * w / 3.0, np.inf)
    unbounded = np.isinf(n_hi) & np.isfinite(n_lo)
    return r_lo, np.where(unbounded, n_lo + 1.0 + np.abs(n_lo), r_hi)


def _guided_goals(
    reach: tuple[np.ndarray, np.ndarray],
    exact: np.ndarray,
    sensitive: np.ndarray,
    need_lo: np.ndarray,
    need_hi: np.ndarray,
    integer: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """The goals of a guided check.

    Each cell's ``reach``; a sensitive cell's protection interval's ends too (the
    farther of the two; whole numbers beyond them for counts); none for an exact cell
    (its bounds are its value).
    """
    r_lo, r_hi = reach
    p_lo = np.floor(need_lo + 1e-9) if integer else need_lo
    p_hi = np.ceil(need_hi - 1e-9) if integer else need_hi
    g_lo = np.where(sensitive, np.minimum(p_lo, r_lo), r_lo)
    g_hi = np.where(sensitive, np.maximum(p_hi, r_hi), r_hi)
    return np.where(exact, np.inf, g_lo), np.where(exact, -np.inf, g_hi)
