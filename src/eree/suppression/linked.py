r"""The interval LP over cell constraints: each cell's tightest interval, jointly.

Unknowns are the true values :math:`x` of all cells; the constraints are the additivity
relations :math:`A x = 0` and each cell's own interval :math:`\ell_c \le x_c \le u_c`
(what its publication says: exact, suppressed, rounded, a range, a noise band). For every
cell not fixed, :func:`linked_bounds` solves :math:`\min x_c` and :math:`\max x_c` with
HiGHS (:class:`.lp.EqualityLP`, warm-started re-solves), one constraint set per connected
component of the unfixed cells; batches first (one LP maximising, or minimising, the sum
of the cells whose bound is still open, each weighted by the inverse of how far it still
has to go, :func:`batch_weights`: its optimum settles many at once), then one LP per
cell and side still open; a relation left with one unknown gives it away first
(:func:`.audit.peel`), and every optimum met is a feasible point that may settle other
cells' bounds without an LP.

Two additive options serve an optimizer that re-checks a publication after small steps:

* ``cache``: a dict kept by the caller. Each component's result is stored under a digest
  of everything its LP depends on (its cells, their own intervals, its relations and
  their right-hand sides, the goals below); a component no step changed has the same
  digest and is not re-solved. The bounds are the same as without the cache.
* ``goal_lower``, ``goal_upper``: what the caller needs to know of each cell. A cell's
  minimum is not solved for once a feasible point at or below ``goal_lower`` has been
  met (likewise the maximum); the bound returned is then that point's value — not the
  tightest bound, but on the goal's side of it. Without goals every bound is the
  tightest (the audit's use).

A third option, ``propagate``, runs :func:`propagate_bounds` first: interval propagation
over the relations narrows each cell's own interval to bounds every feasible point
satisfies, so the feasible set — hence every bound returned — is unchanged, while the
LPs start from intervals that are often already the tightest: a bound that a feasible
point reaches is then settled without an LP of its own (the batches' points reach it).

This is the attacker's core used by the reconstruction audit
(:mod:`eree.evaluate.reconstruct.intervals`) and by the coarsening disclosure check
(:mod:`eree.suppression.coarsening.check`); it lives here, in a lower layer, so that the protection
mode can use it.
"""

from __future__ import annotations

import functools
import hashlib
import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ParamSpec

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from eree.engine.parent_watch import exit_with_parent
from eree.suppression.audit import peel
from eree.suppression.lp import EqualityLP, solve_with_duals

_P = ParamSpec("_P")

__all__ = [
    "LP_MODEL_MAGNITUDE",
    "PARALLEL_MIN_CELLS",
    "BasisMemory",
    "binding_cells",
    "linked_bounds",
    "lp_pool",
    "model_scale",
    "propagate_bounds",
    "tolerance",
]


def tolerance(x: np.ndarray) -> np.ndarray:
    """Relative tolerance of an interval's end points (1e-7, at least 1e-7 absolute)."""
    return 1e-7 * np.maximum(1.0, np.abs(np.where(np.isfinite(x), x, 0.0)))


#: the largest magnitude of a model the LPs here solve: each component is divided by
#: :func:`model_scale` of its end points and sums
LP_MODEL_MAGNITUDE = 1e3


def model_scale(magnitudes: np.ndarray) -> float:
    """The divisor of a component's model: ``max(1, its largest magnitude) / 10³``."""
    return max(1.0, float(np.abs(magnitudes).max(initial=0.0))) / LP_MODEL_MAGNITUDE


#: a component of at least this many unknown cells is solved on two processes when the
#: caller gives a pool (its maxima in a worker, its minima in the caller)
PARALLEL_MIN_CELLS = 2000


@contextmanager
def lp_pool(workers: int) -> Iterator[Executor | None]:
    """A pool for :func:`linked_bounds` (``pool=``): ``workers − 1`` worker processes.

    ``None`` for one worker. The processes are started (``spawn``: a fresh interpreter,
    no state shared with the caller) only when a component large enough is first sent,
    so small tables never start one; they are stopped when the block ends, and end by
    themselves when the calling process dies, even by ``kill -9``
    (:func:`eree.engine.parent_watch.exit_with_parent`).
    """
    if workers < 2:
        yield None
        return
    ex = ProcessPoolExecutor(
        max_workers=workers - 1,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=exit_with_parent,
        initargs=(os.getpid(),),
    )
    try:
        yield ex
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


@dataclass(frozen=True)
class _Sides:
    """One component's result for the sides asked (scaled units; internal)."""

    new_lo: np.ndarray
    new_hi: np.ndarray
    solved_lo: np.ndarray
    solved_hi: np.ndarray
    seen_min: np.ndarray
    seen_max: np.ndarray
    lp: int
    batch_lp: int
    bad: bool
    bases: dict[float, tuple[np.ndarray, np.ndarray]]
    started: int


class BasisMemory:
    """Where the attacker's LPs of the last check ended, per side, by cell and relation.

    An optimizer checks one publication after another, each a few steps from the last.
    A large component's LP then changes little between checks, yet solved from scratch
    its first LP of each side costs most of the check (on NY's wages, a component of
    60,000 cells: 17 s of primal simplex, against about 1 s for each LP warm-started
    after it). Given to :func:`linked_bounds` (``memory=``), the optimal basis of each
    large component's first LP of each side (:data:`PARALLEL_MIN_CELLS`) is kept here,
    each status under its cell's and relation's index, and the same side's first LP of
    the next check starts from it (:meth:`.lp.EqualityLP.start_from`: HiGHS completes
    the statuses of cells that were fixed then, or were in another component, to a
    basis). Only where the simplex starts changes: every bound solved for is the same
    optimum; a feasible point a batch returns, hence a heuristic round's verdict, may
    differ (degenerate optima), and is the same with or without a pool.

    Statuses only (no value); kept in memory for one optimizer run, never written.
    """

    def __init__(self, n_cells: int, n_relations: int) -> None:
        self.n_cells, self.n_relations = n_cells, n_relations
        self._cols: dict[float, np.ndarray] = {}
        self._rows: dict[float, np.ndarray] = {}

    def start(
        self, side: float, cells: np.ndarray, rows: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The statuses kept for ``cells`` and ``rows`` on ``side`` (-1 unknown).

        None: none of the cells' known yet.
        """
        if side not in self._cols:
            return None
        cols = self._cols[side][cells]
        if (cols < 0).all():
            return None
        return cols, self._rows[side][rows]

    def keep(
        self, side: float, cells: np.ndarray, rows: np.ndarray, basis: tuple[np.ndarray, np.ndarray]
    ) -> None:
        """Keep ``basis`` (statuses of ``cells`` and ``rows``) for ``side``."""
        if side not in self._cols:
            self._cols[side] = np.full(self.n_cells, -1, dtype=np.int8)
            self._rows[side] = np.full(self.n_relations, -1, dtype=np.int8)
        self._cols[side][cells] = basis[0]
        self._rows[side][rows] = basis[1]


#: the smallest batch weight, relative to the largest (HiGHS's costs stay within six
#: orders of magnitude of each other)
BATCH_WEIGHT_RANGE = 1e-6


def batch_weights(gap: np.ndarray) -> np.ndarray:
    r"""The weights of a batch LP's cells: each the inverse of how far it still has to go.

    A batch maximises :math:`\sum_j w_j x_j` over the cells still short of their wanted
    bound (minimises, for lower bounds). With every :math:`w_j = 1` a dollar is a dollar:
    the optimum pushes the largest cells — a state's total of 10⁹ beside
    establishments' wages of 10³ — and leaves the small ones where they were, each to an
    LP of its own. With :math:`w_j = 1/g_j`, :math:`g_j` the distance from the farthest
    point met to the cell's wanted bound, each cell counts by the share of its way it
    goes, whatever its size, and one optimum settles cells of every magnitude (NY's
    wages: the untightened publication's check gave 434 cells an LP of their own instead
    of 3,537). Scaled so the largest weight is 1; a gap below
    :data:`BATCH_WEIGHT_RANGE` of the largest counts as that much, and a cell no point
    has met yet (``inf``) as the largest gap. Any weights give a feasible point, so the
    bounds do not depend on them — only how many LPs find them.
    """
    g = np.asarray(gap, dtype=np.float64)
    finite = np.isfinite(g) & (g > 0)
    if not finite.any():
        return np.ones(g.size)
    big = float(g[finite].max())
    g = np.where(finite, np.maximum(g, BATCH_WEIGHT_RANGE * big), big)
    return g.min() / g


def _solve_component(
    sub: sp.spmatrix,
    b: np.ndarray,
    lo_s: np.ndarray,
    hi_s: np.ndarray,
    want_lo: np.ndarray,
    want_hi: np.ndarray,
    seen_min: np.ndarray,
    seen_max: np.ndarray,
    tol: float,
    prove: bool,
    sides: tuple[float, ...],
    starts: dict[float, tuple[np.ndarray, np.ndarray] | None] | None = None,
) -> _Sides:
    """The LPs of one component for ``sides`` (-1: maxima, 1: minima), from feasible points.

    Batches first: one LP pushes every cell still short of its wanted bound at once, each
    by the share of its way it goes (:func:`batch_weights`); the optimum is a feasible
    point that settles many of them (repeated while it settles any;
    without ``prove``, while it settles a fair share); then, with ``prove``, one LP per cell
    and side still open, whose optimum is that bound. ``seen_min``/``seen_max`` (copied)
    are the extremes of the feasible points met. ``starts``: per side, the basis its
    first LP starts from (:class:`BasisMemory`; None: where the last LP ended); given,
    the basis of each side's first optimum is returned (``bases``). A module-level
    function, so that a worker process can run it (:func:`linked_bounds` with a pool).
    """
    seen_min = seen_min.copy()
    seen_max = seen_max.copy()
    lp = EqualityLP(sub, b, lo_s, hi_s)
    n_lp = n_batch = 0
    new_lo = lo_s.copy()
    new_hi = hi_s.copy()
    bases: dict[float, tuple[np.ndarray, np.ndarray]] = {}
    started = 0
    for side in sides:
        first = starts is not None
        kept = None if starts is None else starts.get(side)
        if kept is not None:
            started += lp.start_from(*kept)
        while True:
            if side < 0:
                need = np.flatnonzero((seen_max < want_hi - tol) & np.isfinite(hi_s))
                gap = want_hi[need] - seen_max[need]
            else:
                need = np.flatnonzero((seen_min > want_lo + tol) & np.isfinite(lo_s))
                gap = seen_min[need] - want_lo[need]
            if need.size < 2:
                break
            r = lp.optimise(need, side * batch_weights(gap))
            n_lp += 1
            n_batch += 1
            if r.status != "optimal" or r.x is None:
                break
            if first:
                got = lp.basis()
                if got is not None:
                    bases[side] = got
                first = False
            np.minimum(seen_min, r.x, out=seen_min)
            np.maximum(seen_max, r.x, out=seen_max)
            if side < 0:
                settled = seen_max[need] >= want_hi[need] - tol
            else:
                settled = seen_min[need] <= want_lo[need] + tol
            # proving: while it settles any; else while it settles a fair share
            if settled.sum() < (1 if prove else max(1, need.size // 50)):
                break
    n = lo_s.size
    solved_hi = np.zeros(n, dtype=bool)
    solved_lo = np.zeros(n, dtype=bool)
    do_hi, do_lo = -1.0 in sides, 1.0 in sides
    bad = False
    for k in range(n if prove else 0):
        if do_hi and not seen_max[k] >= want_hi[k] - tol:
            r = lp.optimise(np.array([k]), np.array([-1.0]))
            n_lp += 1
            solved_hi[k] = True
            if r.status == "optimal" and r.x is not None:
                new_hi[k] = float(r.x[k])
                np.minimum(seen_min, r.x, out=seen_min)
                np.maximum(seen_max, r.x, out=seen_max)
            elif r.status == "unbounded":
                new_hi[k] = np.inf
            else:
                bad = True
                break
        if do_lo and not seen_min[k] <= want_lo[k] + tol:
            r = lp.optimise(np.array([k]), np.array([1.0]))
            n_lp += 1
            solved_lo[k] = True
            if r.status == "optimal" and r.x is not None:
                new_lo[k] = float(r.x[k])
                np.minimum(seen_min, r.x, out=seen_min)
                np.maximum(seen_max, r.x, out=seen_max)
            else:
                bad = True
                break
    return _Sides(
        new_lo, new_hi, solved_lo, solved_hi, seen_min, seen_max, n_lp, n_batch, bad, bases, started
    )


def propagate_bounds(
    relations: sp.spmatrix,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    passes: int = 100,
) -> tuple[np.ndarray, np.ndarray, bool]:
    r"""Interval propagation: bounds on each cell implied by one relation at a time.

    For a relation :math:`\sum_j a_{rj} x_j = 0` and any cell :math:`j` in it,
    :math:`a_{rj} x_j = -\sum_{k \ne j} a_{rk} x_k` lies between minus the largest and
    minus the smallest value the other terms can take within their current intervals;
    dividing by :math:`a_{rj}` bounds :math:`x_j`. Every :math:`x` with
    :math:`A x = 0` and :math:`\ell \le x \le u` satisfies each such bound, so narrowing
    :math:`[\ell_j, u_j]` to it removes no feasible point; by induction the same holds
    after every pass (each pass uses intervals every feasible point already satisfies).
    Hence the set :math:`\{x : A x = 0,\ \ell' \le x \le u'\}` with the propagated
    :math:`\ell', u'` **is** the attacker's feasible set, and its LP bounds are the
    attacker's bounds — stopping after any pass is as safe as running to the end.

    Floating point: the end points are moved outward by ``1e-12`` relative (at least
    ``1e-12``) before they are used, so that a rounding error in the sums can never cut
    a feasible point off (for whole-number intervals below :math:`2^{53}` the sums are
    exact anyway). A cell's new interval is never wider than its own.

    Args:
        relations: relations × cells (any real coefficients; zero rows ignored).
        lower, upper: each cell's own interval (``upper`` may hold ``inf``, ``lower``
            ``-inf``).
        passes: most passes over all relations (stopped earlier when none narrows any
            interval by more than ``1e-9`` relative).

    Returns:
        (lower, upper, consistent): the propagated intervals, and False when some
        interval came out empty beyond rounding (no feasible point: the relations and
        intervals are inconsistent; the intervals returned are then the own ones).
    """
    lo0 = np.asarray(lower, dtype=np.float64)
    hi0 = np.asarray(upper, dtype=np.float64)
    lo, hi = lo0.copy(), hi0.copy()
    a = sp.csc_matrix(relations)
    a.eliminate_zeros()
    if a.nnz == 0:
        return lo, hi, True
    m = a.shape[0]
    rows = a.indices
    v = a.data
    counts = np.diff(a.indptr)
    has = np.flatnonzero(counts > 0)
    cols = np.repeat(np.arange(a.shape[1]), counts)
    starts = a.indptr[has]
    pos = v > 0
    for _ in range(passes):
        l_c, h_c = lo[cols], hi[cols]
        with np.errstate(invalid="ignore"):
            tmin = np.where(pos, v * l_c, v * h_c)  # each term's smallest value
            tmax = np.where(pos, v * h_c, v * l_c)
        inf_min = np.isinf(tmin)
        inf_max = np.isinf(tmax)
        n_inf_min = np.bincount(rows, weights=inf_min, minlength=m)[rows]
        n_inf_max = np.bincount(rows, weights=inf_max, minlength=m)[rows]
        s_min = np.bincount(rows, weights=np.where(inf_min, 0.0, tmin), minlength=m)[rows]
        s_max = np.bincount(rows, weights=np.where(inf_max, 0.0, tmax), minlength=m)[rows]
        # the other terms' largest and smallest sum (infinite when another term is)
        o_max = np.where(n_inf_max - inf_max > 0, np.inf, s_max - np.where(inf_max, 0.0, tmax))
        o_min = np.where(n_inf_min - inf_min > 0, -np.inf, s_min - np.where(inf_min, 0.0, tmin))
        # a x_j lies in [-o_max, -o_min]
        with np.errstate(invalid="ignore", divide="ignore"):
            c_lo = np.where(pos, -o_max / v, -o_min / v)
            c_hi = np.where(pos, -o_min / v, -o_max / v)
        c_lo = c_lo - 1e-12 * np.maximum(1.0, np.abs(np.where(np.isfinite(c_lo), c_lo, 0.0)))
        c_hi = c_hi + 1e-12 * np.maximum(1.0, np.abs(np.where(np.isfinite(c_hi), c_hi, 0.0)))
        new_lo, new_hi = lo.copy(), hi.copy()
        new_lo[has] = np.maximum(lo[has], np.maximum.reduceat(c_lo, starts))
        new_hi[has] = np.minimum(hi[has], np.minimum.reduceat(c_hi, starts))
        if np.any(new_lo > new_hi + tolerance(new_hi)):
            return lo0.copy(), hi0.copy(), False
        new_hi = np.maximum(new_hi, new_lo)  # a point met from both sides
        step = tolerance(new_lo) * 1e-2
        narrowed = (new_lo > lo + step) | (new_hi < hi - step)
        lo, hi = new_lo, new_hi
        if not narrowed.any():
            break
    return lo, hi, True


def _falls_back_without_propagation(
    bounds: Callable[_P, tuple[np.ndarray, np.ndarray]],
) -> Callable[_P, tuple[np.ndarray, np.ndarray]]:
    """:func:`linked_bounds`, computed again without propagation on a failure.

    When a component it propagated came out infeasible (its docstring, "Propagation's
    fallback").
    """

    @functools.wraps(bounds)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> tuple[np.ndarray, np.ndarray]:
        st = kwargs.get("stats")
        if st is None:
            st = {}
            kwargs["stats"] = st
        if not isinstance(st, dict):
            raise TypeError("stats must be a dict")
        st.setdefault("propagation_fallbacks", 0)
        before = st.get("inconsistent_components", 0)
        lo, hi = bounds(*args, **kwargs)
        if kwargs.get("propagate") and st["inconsistent_components"] > before:
            st["inconsistent_components"] = before
            st["propagation_fallbacks"] += 1
            kwargs["propagate"] = False
            lo, hi = bounds(*args, **kwargs)
        return lo, hi

    return run


@_falls_back_without_propagation
def linked_bounds(
    relations: sp.csr_matrix,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    truth: np.ndarray | None = None,
    stats: dict[str, int] | None = None,
    cache: dict[bytes, tuple[np.ndarray, np.ndarray] | None] | None = None,
    goal_lower: np.ndarray | None = None,
    goal_upper: np.ndarray | None = None,
    prove: bool = True,
    propagate: bool = False,
    pool: Executor | None = None,
    memory: BasisMemory | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Min and max of every cell subject to ``relations @ x = 0`` and ``lower ≤ x ≤ upper``.

    Args:
        relations: relations × cells.
        lower, upper: each cell's own interval (``upper`` may hold ``inf``).
        truth: the true values (a feasible point, to skip LPs; the bounds are the same).
        stats: counters added to: ``lp`` (of which ``batch_lp``), ``peeled``,
            ``components``, ``inconsistent_components``, ``components_reused``,
            ``warm_starts`` (LPs started from ``memory``).
        cache: results per component digest, kept between calls (module docstring).
        goal_lower, goal_upper: per cell, how far each bound must be known (module
            docstring); ``-inf``/``inf`` (the default) asks for the tightest bound.
        prove: False: no LP of its own for a cell the batches left short of its goal —
            its bound is then the farthest feasible point met, which may fall short of
            the goal though the tightest bound does not (a heuristic for an optimizer's
            rounds, never for an audit).
        memory: where the last check's large components ended (:class:`BasisMemory`),
            kept up to date: their first LPs start there. The same bounds.

    Returns:
        (lower, upper) per cell; a fixed cell keeps its value; ``inf`` when unbounded.

    **Propagation's fallback.** Propagation moves every end point outward by ``1e-12``
    relative per pass, so a cell it pins (its interval narrower than :func:`tolerance`)
    may sit up to about ``1e-8`` of its value off its exact value; substituted into the
    right-hand sides of a small component's relations, that error can exceed HiGHS's
    feasibility tolerance on the scaled model, which then reports the component
    infeasible (seen on DE's tables at random grid levels). When a component fails after
    propagation, the bounds are computed again without it (from the own intervals, where
    every cell substituted is published as one value): ``propagation_fallbacks`` counts
    it, and only a failure there is ``inconsistent_components``.
    """
    st = stats if stats is not None else {}
    keys = ("lp", "batch_lp", "peeled", "components", "inconsistent_components")
    for key in (*keys, "components_reused", "warm_starts"):
        st.setdefault(key, 0)
    lo = np.asarray(lower, dtype=np.float64).copy()
    hi = np.asarray(upper, dtype=np.float64).copy()
    n_all = lo.size
    g_lo = np.full(n_all, -np.inf) if goal_lower is None else np.asarray(goal_lower, float)
    g_hi = np.full(n_all, np.inf) if goal_upper is None else np.asarray(goal_upper, float)
    if propagate and relations.shape[0] > 0:
        lo, hi, consistent = propagate_bounds(relations, lo, hi)
        if not consistent:
            st["inconsistent_components"] += 1
    fixed = hi - lo <= tolerance(lo)
    free = np.flatnonzero(~fixed)
    if free.size == 0 or relations.shape[0] == 0:
        return lo, hi
    a = relations.tocsc()
    vals = np.where(fixed, lo, 0.0)
    rhs = -(a[:, fixed] @ vals[fixed])
    a_f = a[:, free].tocsr()
    det, det_val = peel(a_f, rhs)
    if det.any():
        g = free[det]
        lo[g] = np.maximum(lo[g], det_val[det])
        hi[g] = np.minimum(hi[g], det_val[det])
        st["peeled"] += int(det.sum())
        vals[g] = det_val[det]
        rhs = rhs - a[:, g] @ det_val[det]
        free = free[~det]
        a_f = a[:, free].tocsr()
    if free.size == 0:
        return lo, hi
    b = abs(a_f).tocsr()
    b.data[:] = 1.0
    m = free.size
    adj = sp.bmat([[None, b.T], [b, None]], format="csr")
    _, labels = connected_components(adj, directed=False)
    cell_lab = labels[:m]
    row_lab = labels[m:]
    has = np.diff(b.indptr) > 0
    order = np.argsort(cell_lab, kind="stable")
    rows_all = np.flatnonzero(has)
    rorder = rows_all[np.argsort(row_lab[rows_all], kind="stable")]
    ulab, starts = np.unique(cell_lab[order], return_index=True)
    ends = np.append(starts[1:], m)
    rl = row_lab[rorder]
    for lab, s0, e0 in zip(ulab, starts, ends, strict=True):
        cols = order[s0:e0]
        r0, r1 = np.searchsorted(rl, [lab, lab + 1])
        rows = rorder[r0:r1]
        if rows.size == 0:
            continue  # in no relation: its own interval
        st["components"] += 1
        glob = free[cols]
        bb = rhs[rows]
        digest: bytes | None = None
        if cache is not None:
            h = hashlib.blake2b(digest_size=20)
            parts = [glob, rows, bb, lo[glob], hi[glob], g_lo[glob], g_hi[glob]]
            if truth is not None:
                parts.append(truth[glob])
            parts.append(np.array([prove]))
            for arr in parts:
                h.update(np.ascontiguousarray(arr).tobytes())
                h.update(b"|")
            digest = h.digest()
            if digest in cache:
                st["components_reused"] += 1
                got = cache[digest]
                if got is None:
                    st["inconsistent_components"] += 1
                else:
                    lo[glob] = np.maximum(lo[glob], got[0])
                    hi[glob] = np.minimum(hi[glob], got[1])
                continue
        sub = a_f[rows][:, cols]
        fin = np.concatenate([np.abs(bb), lo[glob], hi[glob][np.isfinite(hi[glob])]])
        scale = model_scale(fin)
        lo_s, hi_s = lo[glob] / scale, hi[glob] / scale
        tol = 1e-9 * max(1.0, float(np.abs(bb / scale).max(initial=0.0)))
        if truth is not None:
            seen_min = truth[glob] / scale
            seen_max = seen_min.copy()
        else:
            seen_min = np.full(cols.size, np.inf)
            seen_max = np.full(cols.size, -np.inf)
        # a side counts as reached within ``tol`` of what is wanted (the solver's
        # resolution): a goal inside the own interval is moved out by ``tol``, so a point
        # that settles it lies at or beyond the goal itself — within ``tol`` short of it,
        # 10⁻⁹ of the component's magnitude (300 on NY's wages in dollars), a
        # sensitive cell would be counted violated though the LP covers it
        want_hi = np.minimum(hi_s, g_hi[glob] / scale + tol)
        want_lo = np.maximum(lo_s, g_lo[glob] / scale - tol)
        args = (sub, bb / scale, lo_s, hi_s, want_lo, want_hi, seen_min, seen_max, tol, prove)
        if cols.size >= PARALLEL_MIN_CELLS:
            # a large component: its two sides as independent LP families from the same
            # feasible points — the maxima in a worker process when there is a pool, the
            # minima here — and both sides' feasible points pooled below; the same
            # bounds and points with or without a pool (the result does not depend on
            # the number of processes)
            s_hi = s_lo = None
            if memory is not None:
                s_hi = {-1.0: memory.start(-1.0, glob, rows)}
                s_lo = {1.0: memory.start(1.0, glob, rows)}
            if pool is not None:
                far = pool.submit(_solve_component, *args, (-1.0,), s_hi)
                near = _solve_component(*args, (1.0,), s_lo)
                part = far.result()
                st["parallel_components"] = st.get("parallel_components", 0) + 1
            else:
                part = _solve_component(*args, (-1.0,), s_hi)
                near = _solve_component(*args, (1.0,), s_lo)
            if memory is not None:
                for side, got in (*part.bases.items(), *near.bases.items()):
                    memory.keep(side, glob, rows, got)
                st["warm_starts"] += part.started + near.started
            new_lo, solved_lo = near.new_lo, near.solved_lo
            new_hi, solved_hi = part.new_hi, part.solved_hi
            seen_min = np.minimum(near.seen_min, part.seen_min)
            seen_max = np.maximum(near.seen_max, part.seen_max)
            n_lp, n_batch = near.lp + part.lp, near.batch_lp + part.batch_lp
            bad = near.bad or part.bad
        else:
            one = _solve_component(*args, (-1.0, 1.0))
            new_lo, new_hi, solved_lo, solved_hi = (
                one.new_lo,
                one.new_hi,
                one.solved_lo,
                one.solved_hi,
            )
            seen_min, seen_max = one.seen_min, one.seen_max
            n_lp, n_batch, bad = one.lp, one.batch_lp, one.bad
        st["lp"] += n_lp
        st["batch_lp"] += n_batch
        if bad:
            st["inconsistent_components"] += 1
            if cache is not None and digest is not None:
                cache[digest] = None
            continue
        # a bound met by a feasible point but not solved for (goal reached): that point
        # (a side solved by its own LP keeps the LP's bound, ``inf`` when unbounded)
        reached_hi = ~solved_hi & (seen_max < hi_s - tol)
        new_hi = np.where(reached_hi, seen_max, new_hi)
        reached_lo = ~solved_lo & (seen_min > lo_s + tol)
        new_lo = np.where(reached_lo, seen_min, new_lo)
        got = (new_lo * scale, new_hi * scale)
        if cache is not None and digest is not None:
            cache[digest] = got
        lo[glob] = np.maximum(lo[glob], got[0])
        hi[glob] = np.minimum(hi[glob], got[1])
    return lo, hi


def _binding_in_component(
    sub: sp.spmatrix,
    b: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    ks: np.ndarray,
    sides: np.ndarray,
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """For each local column ``ks[i]``: reduced costs and row duals of its ``sides[i]`` bound.

    One model (``sub x = b``, ``lo ≤ x ≤ hi``, scaled), re-solved from the last basis
    for each pair in order (the first from ``start``, when given: a remembered basis,
    :class:`BasisMemory`); ``None`` where the LP has no optimum. Module level, so that a
    worker process can run it (:func:`binding_cells` with a pool).
    """
    n = sub.shape[1]
    lp = EqualityLP(sub, b, lo, hi)
    if start is not None:
        lp.start_from(*start)
    out: list[tuple[np.ndarray, np.ndarray] | None] = []
    for k, side in zip(ks, sides, strict=True):
        r = lp.optimise(np.array([k]), np.array([-1.0 if side > 0 else 1.0]))
        rc, y = lp.reduced_costs(), lp.row_duals()
        if r.status != "optimal":
            out.append(None)
            continue
        if rc is None or y is None:  # the public path: solve again for the duals
            c = np.zeros(n)
            c[k] = -1.0 if side > 0 else 1.0
            r, rc, y = solve_with_duals(c, sub, b, lo, hi)
            if r.status != "optimal" or rc is None or y is None:
                out.append(None)
                continue
        out.append((rc, y))
    return out


def binding_cells(
    relations: sp.csr_matrix,
    lower: np.ndarray,
    upper: np.ndarray,
    cells: np.ndarray,
    sides: np.ndarray,
    *,
    pool: Executor | None = None,
    memory: BasisMemory | None = None,
) -> list[np.ndarray]:
    r"""For each ``cells[i]``, the cells whose own interval holds its bound on ``sides[i]``.

    Solves the max (``sides[i]`` > 0) or min of ``x[cells[i]]`` over ``relations @ x = 0``,
    ``lower ≤ x ≤ upper`` and returns the other cells with a non-zero reduced cost at the
    optimum: the bounds that hold the optimum there. Widening one of them can move the
    bound; at that optimum no other cell's can (to first order). Empty when the LP has
    no optimum.

    **Fixed cells are not columns.** A cell whose interval is a point (published exactly)
    is substituted into the right-hand sides, and the LP is solved over the other cells,
    one model per connected component of them (re-solved from the last basis for each
    pair in it). Its optimal basis, with every fixed cell at its value, is an optimal
    basis of the LP with the fixed cells as columns, and its row duals :math:`y` are that
    LP's duals (a fixed column's dual constraint is free): a fixed cell :math:`j`'s
    reduced cost is :math:`-a_j^\top y` (its objective coefficient is 0), computed from
    the rows of the component it is in. So the cells returned are those of the LP with
    every cell a column solved at that basis, while the LP solved holds only the cells
    not published exactly.

    In a component of at least :data:`PARALLEL_MIN_CELLS` cells the pairs are solved in
    two halves, each from a model of its own (the first half in a worker process when
    ``pool`` is given), so the answer — which may depend on the basis an LP starts from
    when its optimum is degenerate — is the same with or without a pool. With ``memory``
    (the last check's bases, :class:`BasisMemory`; read, not changed) each half's first
    LP starts from the basis kept for its side (a maximum from the maxima's).
    """
    a = relations.tocsc()
    lo_all = np.asarray(lower, dtype=np.float64)
    hi_all = np.asarray(upper, dtype=np.float64)
    cells = np.asarray(cells, dtype=np.int64)
    sides = np.asarray(sides, dtype=np.float64)
    out: list[np.ndarray] = [np.array([], dtype=np.int64)] * len(cells)
    fixed = hi_all - lo_all <= tolerance(lo_all)
    fixed[cells] = False  # the cell bounded is a column
    free = np.flatnonzero(~fixed)
    fix_idx = np.flatnonzero(fixed)
    a_fix = a[:, fix_idx].tocsr()
    rhs = -(a_fix @ lo_all[fix_idx])
    a_f = a[:, free].tocsr()
    bin_f = abs(a_f).tocsr()
    m_free = free.size
    adj = sp.bmat([[None, bin_f.T], [bin_f, None]], format="csr")
    _, labels = connected_components(adj, directed=False)
    cell_lab, row_lab = labels[:m_free], labels[m_free:]
    row_has = np.diff(bin_f.indptr) > 0
    local = np.searchsorted(free, cells)  # every cell bounded is free
    for lab in np.unique(cell_lab[local]):
        cols = np.flatnonzero(cell_lab == lab)
        rows = np.flatnonzero((row_lab == lab) & row_has)
        if rows.size == 0:
            continue
        glob = free[cols]
        lo, hi = lo_all[glob], hi_all[glob]
        bb = rhs[rows]
        fin = np.concatenate([np.abs(bb), lo, hi[np.isfinite(hi)]])
        scale = model_scale(fin)
        sub = a_f[rows][:, cols]
        which = np.flatnonzero(cell_lab[local] == lab)
        ks = np.searchsorted(cols, local[which])
        args = (sub, bb / scale, lo / scale, hi / scale)

        # the bases kept for a large component, by the side of its first pair (a maximum
        # starts from the maxima's, side -1)
        kept = {}
        if memory is not None and cols.size >= PARALLEL_MIN_CELLS:
            kept = {-1.0: memory.start(-1.0, glob, rows), 1.0: memory.start(1.0, glob, rows)}
        if cols.size >= PARALLEL_MIN_CELLS and which.size >= 2:
            half = which.size // 2
            s0, s1 = -float(np.sign(sides[which[0]])), -float(np.sign(sides[which[half]]))
            first = (ks[:half], sides[which[:half]], kept.get(s0))
            second = (ks[half:], sides[which[half:]], kept.get(s1))
            if pool is not None:
                far = pool.submit(_binding_in_component, *args, *first)
                got = _binding_in_component(*args, *second)
                got = far.result() + got
            else:
                got = _binding_in_component(*args, *first) + _binding_in_component(*args, *second)
        else:
            got = _binding_in_component(
                *args, ks, sides[which], kept.get(-float(np.sign(sides[which[0]])))
            )
        # the fixed cells in the component's rows, and their columns there
        a_rows_fix = a_fix[rows].tocsc()
        touch = np.flatnonzero(np.diff(a_rows_fix.indptr) > 0)
        a_touch_t = a_rows_fix[:, touch].T.tocsr()
        for i, k, duals in zip(which, ks, got, strict=True):
            if duals is None:
                continue
            rc, y = duals
            hold = np.abs(rc) > 1e-9
            hold[k] = False
            rc_fix = -(a_touch_t @ y)
            held = np.concatenate([glob[hold], fix_idx[touch[np.abs(rc_fix) > 1e-9]]])
            out[i] = np.sort(held).astype(np.int64)
    return out
