r"""The interval LP over cell constraints: each cell's tightest interval, jointly.

Unknowns are the true values :math:`x` of all cells; the constraints are the additivity
relations :math:`A x = 0` and each cell's own interval :math:`\ell_c \le x_c \le u_c`
(what its publication says: exact, suppressed, rounded, a range, a noise band). For every
cell not fixed, :func:`linked_bounds` solves :math:`\min x_c` and :math:`\max x_c` with
HiGHS (:class:`.lp.EqualityLP`, warm-started re-solves), one constraint set per connected
component of the unfixed cells; a relation left with one unknown gives it away first
(:func:`.audit.peel`), and every optimum met is a feasible point that may settle other
cells' bounds without an LP.

This is the attacker's core used by the reconstruction audit
(:mod:`eree.evaluate.reconstruct.intervals`) and by the coarsening disclosure check
(:mod:`eree.suppression.coarsening.check`); it lives here, in a lower layer, so that the protection
mode can use it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from eree.suppression.audit import peel
from eree.suppression.lp import EqualityLP

__all__ = ["linked_bounds", "tolerance"]


def tolerance(x: np.ndarray) -> np.ndarray:
    """Relative tolerance of an interval's end points (1e-7, at least 1e-7 absolute)."""
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
