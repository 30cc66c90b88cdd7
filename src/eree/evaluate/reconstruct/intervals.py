r"""The interval audit: the tightest interval every published constraint implies, jointly.

Unknowns are the true values :math:`x` of all cells. The attacker knows the additivity
relations :math:`A x = 0` of the linked tables (:meth:`.PublishedTables.derived_relations`)
and each cell's own interval :math:`\ell_c \le x_c \le u_c` from its status
(:meth:`.PublishedTables.bounds`: exact, suppressed, rounded, range, or a noisy cell's
central band). For each cell that is not published exactly it solves

.. math:: \min x_c \quad\text{and}\quad \max x_c
    \quad\text{s.t.}\quad A x = 0,\ \ell \le x \le u

with HiGHS (:class:`eree.suppression.lp.EqualityLP`, warm-started re-solves), one
constraint set per **connected component** of the cells that are not fixed (two cells
are linked when they appear in a common relation; fixed cells move to the right-hand
side). A relation left with a single unknown gives it away without an LP (the repeated
singleton attack, :func:`eree.suppression.peel`). Every optimum found is a feasible
point, and so are the true values when the auditor gives them: a cell whose value at a
feasible point already equals its own bound has that bound, without an LP (exact, not an
approximation).

For counts the LP's interval is rounded inward to whole numbers (the integer program's
interval can only be tighter). On suppressed cells with the suppression package's
relations this is the same LP as ``eree suppress``'s audit (:func:`eree.suppression.audit`)
and gives the same bounds (a test checks it).

A cell is **pinned** when its interval is one point and its status did not publish it
exactly. For noisy cells the interval is a confidence statement (the bands hold with the
stated probability each), not a certainty; a component whose bands are jointly
infeasible keeps its cells' own bands and is counted (``inconsistent_components``).

**Contributions.** When the cells give their number of establishments, each
establishment's contribution to a cell of the finest table is bounded by the cell's
interval: ``[lower, upper]`` when it is the cell's only establishment, ``[0, upper]``
otherwise (any split of the total among non-negative contributions is possible, so
these are tight).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from eree.evaluate.reconstruct.tables import PublishedTables
from eree.suppression import peel
from eree.suppression.lp import EqualityLP

__all__ = ["IntervalResult", "interval_audit", "linked_bounds"]


def _tol(x: np.ndarray) -> np.ndarray:
    return 1e-7 * np.maximum(1.0, np.abs(np.where(np.isfinite(x), x, 0.0)))


def linked_bounds(
    relations: sp.csr_matrix,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    truth: np.ndarray | None = None,
    stats: dict[str, int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Min and max of every cell subject to ``relations @ x = 0`` and ``lower ≤ x ≤ upper``.

    Args:
        relations: relations × cells.
        lower, upper: each cell's own interval (``upper`` may hold ``inf``).
        truth: the true values (a feasible point, to skip LPs; the bounds are the same).
        stats: counters added to: ``lp``, ``peeled``, ``components``,
            ``inconsistent_components``.

    Returns:
        (lower, upper) per cell; a fixed cell keeps its value; ``inf`` when unbounded.
    """
    st = stats if stats is not None else {}
    for key in ("lp", "peeled", "components", "inconsistent_components"):
        st.setdefault(key, 0)
    lo = np.asarray(lower, dtype=np.float64).copy()
    hi = np.asarray(upper, dtype=np.float64).copy()
    fixed = hi - lo <= _tol(lo)
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
        sub = a_f[rows][:, cols]
        bb = rhs[rows]
        fin = np.concatenate([np.abs(bb), lo[glob], hi[glob][np.isfinite(hi[glob])]])
        scale = max(1.0, float(np.abs(fin).max(initial=0.0))) / 1e3
        lp = EqualityLP(sub, bb / scale, lo[glob] / scale, hi[glob] / scale)
        lo_s, hi_s = lo[glob] / scale, hi[glob] / scale
        tol = 1e-9 * max(1.0, float(np.abs(bb / scale).max(initial=0.0)))
        if truth is not None:
            seen_min = truth[glob] / scale
            seen_max = seen_min.copy()
        else:
            seen_min = np.full(cols.size, np.inf)
            seen_max = np.full(cols.size, -np.inf)
        new_lo = lo_s.copy()
        new_hi = hi_s.copy()
        bad = False
        for k in range(cols.size):
            if not seen_max[k] >= hi_s[k] - tol:
                r = lp.optimise(np.array([k]), np.array([-1.0]))
                st["lp"] += 1
                if r.status == "optimal" and r.x is not None:
                    new_hi[k] = float(r.x[k])
                    np.minimum(seen_min, r.x, out=seen_min)
                    np.maximum(seen_max, r.x, out=seen_max)
                elif r.status == "unbounded":
                    new_hi[k] = np.inf
                else:
                    bad = True
                    break
            if not seen_min[k] <= lo_s[k] + tol:
                r = lp.optimise(np.array([k]), np.array([1.0]))
                st["lp"] += 1
                if r.status == "optimal" and r.x is not None:
                    new_lo[k] = float(r.x[k])
                    np.minimum(seen_min, r.x, out=seen_min)
                    np.maximum(seen_max, r.x, out=seen_max)
                else:
                    bad = True
                    break
        if bad:
            st["inconsistent_components"] += 1
            continue
        lo[glob] = np.maximum(lo[glob], new_lo * scale)
        hi[glob] = np.minimum(hi[glob], new_hi * scale)
    return lo, hi


@dataclass(frozen=True)
class IntervalResult:
    """The interval audit of published tables.

    Attributes:
        lower, upper: per cell, the attacker's interval (confidential for the cells the
            release did not publish exactly: internal).
        own_lower, own_upper: per cell, the interval from its own status alone.
        status: per cell, its published status.
        pinned: per cell, the interval is one point and the status was not ``exact``.
        narrowed: per cell, the linked interval is strictly inside the cell's own.
        contribution_pinned: establishments whose contribution is pinned (only one in a
            cell whose interval is a point), when establishment counts are given.
        stats: how the bounds were found (LPs, peeled, components).
        noisy: whether some intervals are noise bands (confidence, not certainty).
    """

    lower: np.ndarray
    upper: np.ndarray
    own_lower: np.ndarray
    own_upper: np.ndarray
    status: np.ndarray
    pinned: np.ndarray
    narrowed: np.ndarray
    contribution_pinned: int | None
    contributions: int | None
    stats: dict[str, int] = field(default_factory=dict)
    noisy: bool = False

    def summary(self) -> dict[str, Any]:
        """Counts only (no cell value)."""
        out: dict[str, Any] = {"cells": int(self.status.size)}
        per: dict[str, dict[str, int]] = {}
        for s in np.unique(self.status):
            m = self.status == s
            per[str(s)] = {
                "cells": int(m.sum()),
                "pinned": int(self.pinned[m].sum()),
                "narrowed": int(self.narrowed[m].sum()),
                "unbounded": int(np.isinf(self.upper[m]).sum()),
            }
        out["by_status"] = per
        out["cells_pinned"] = int(self.pinned.sum())
        if self.contributions is not None:
            out["establishment_contributions"] = self.contributions
            out["establishment_contributions_pinned"] = self.contribution_pinned
        out["noise_bands"] = self.noisy
        out["how"] = dict(self.stats)
        return out


def interval_audit(
    published: PublishedTables,
    *,
    level: float = 0.95,
    truth: np.ndarray | None = None,
) -> IntervalResult:
    """Every cell's interval from all published constraints jointly (LP, per component).

    Args:
        published: the tables.
        level: the central probability of a noisy cell's band.
        truth: true cell values (the auditor's; only to skip LPs, the result is the same).
    """
    own_lo, own_hi = published.bounds(level=level)
    rel = published.derived_relations()
    stats: dict[str, int] = {}
    lo, hi = linked_bounds(rel, own_lo, own_hi, truth=truth, stats=stats)
    if published.integer:
        lo = np.ceil(lo - 1e-6)
        hi = np.where(np.isfinite(hi), np.floor(hi + 1e-6), np.inf)
        hi = np.maximum(hi, lo)
    status = published.cells.get_column("status").to_numpy().astype(str)
    tol = _tol(hi)
    pinned = (hi - lo <= tol) & (status != "exact")
    narrowed = ((lo > own_lo + tol) | (hi < own_hi - tol)) & (status != "exact")
    est = published.cells.get_column("establishments").to_numpy()
    contrib = pinned_c = None
    if not np.all(np.isnan(est.astype(np.float64))):
        if published.finest is not None:
            fin = np.asarray(published.finest, dtype=bool)
        else:
            tcol = published.cells.get_column("table").to_numpy()
            by = published.tables
            finest = [t for t in by if not any(set(by[t]) < set(by[u]) for u in by)]
            fin = np.isin(tcol, finest)
        m = fin & ~np.isnan(est.astype(np.float64))
        e = est[m].astype(np.float64)
        contrib = int(e.sum())
        pinned_c = int(((e == 1) & (hi[m] - lo[m] <= tol[m])).sum())
    return IntervalResult(
        lo,
        hi,
        own_lo,
        own_hi,
        status,
        pinned,
        narrowed,
        pinned_c,
        contrib,
        stats,
        bool((status == "noisy").any()),
    )
