r"""Cells that share one multiplicative distortion factor: ratio constraints and shares.

Input noise infusion (Haney et al. §5.1) multiplies every count of one establishment by
the same factor :math:`f_w \in [1-t, 1-s] \cup [1+s, 1+t]`. In a workplace combination
held by **one** establishment every published cell is :math:`v_c = f\,x_c` with the same
:math:`f` (§5.2). The format says so with a ``factor`` group (:mod:`.tables`); the
attacker then knows, for any two cells of a group,

.. math:: v_a\,x_c - v_c\,x_a = 0,

a linear relation added to the tables' additivity relations (:func:`factor_relations`,
one row per cell of the group but its anchor, the cell with the largest published
value; written as :math:`x_c - (v_c/v_a)\,x_a = 0`). With these rows the interval audit
(:mod:`.intervals`) carries any knowledge of one cell to every cell of its group: the
**size attack** of §5.2 (one true cell known ⇒ every cell and the total) is the interval
audit with that cell's range narrowed to the known value.

**Shares** (the **shape attack** of §5.2). The proportions :math:`x_c / \sum_{g\in G} x_g`
within a group are not linear in :math:`x`, but their extremes over the attacker's
feasible set are linear programs after the Charnes–Cooper transformation
:math:`y = x/\sum_G x`, :math:`\tau = 1/\sum_G x`:

.. math::
    \min / \max\ y_c \quad\text{s.t.}\quad A y = 0,\ \sum_{g\in G} y_g = 1,\
    \ell\,\tau \le y \le u\,\tau,\ y, \tau \ge 0,

over the connected component of the group's cells in the relations (``A`` includes the
ratio rows; ℓ, u are the cells' intervals). :func:`share_bounds` solves it with HiGHS for
every cell of every group. A group's **shape is disclosed** when every share's interval
is one point. Without the ratio rows (an attacker who ignores the common factor) each
share ranges over what the cells' own intervals allow — the shape is not pinned.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import scipy.sparse as sp
from scipy.optimize import linprog
from scipy.sparse.csgraph import connected_components

from eree.evaluate.reconstruct.tables import PublishedTables

__all__ = ["SHARE_TOLERANCE", "factor_groups", "factor_relations", "share_bounds"]

#: a share's interval narrower than this is a point (HiGHS's feasibility tolerance is 1e-7
#: on the scaled program; shares lie in [0, 1])
SHARE_TOLERANCE = 1e-6


def factor_groups(published: PublishedTables) -> list[np.ndarray]:
    """The cells of each ``factor`` group (indices into the cells), in order of first row."""
    f = published.cells.get_column("factor")
    if f.null_count() == f.len():
        return []
    frame = (
        f.to_frame()
        .with_row_index("_i")
        .filter(pl.col("factor").is_not_null())
        .group_by("factor", maintain_order=True)
        .agg("_i")
    )
    return [np.asarray(ix, dtype=np.int64) for ix in frame.get_column("_i").to_list()]


def factor_relations(published: PublishedTables) -> sp.csr_matrix:
    """Ratio rows ``x_c − (v_c/v_a)·x_a = 0`` of every group (groups × cells, CSR).

    The anchor ``a`` is the group's cell with the largest published value; a group whose
    published values are all 0 has every cell 0 (f > 0), one row ``x_c = 0`` per cell.
    """
    groups = factor_groups(published)
    n = published.n_cells
    if not groups:
        return sp.csr_matrix((0, n))
    v = published.cells.get_column("value").to_numpy().astype(np.float64)
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    r = 0
    for g in groups:
        a = int(g[np.argmax(v[g])])
        if v[a] <= 0:
            for c in g:
                rows.append(r)
                cols.append(int(c))
                vals.append(1.0)
                r += 1
            continue
        for c in g:
            if c == a:
                continue
            rows += [r, r]
            cols += [int(c), a]
            vals += [1.0, -float(v[c] / v[a])]
            r += 1
    return sp.csr_matrix((vals, (rows, cols)), shape=(r, n))


def share_bounds(
    relations: sp.csr_matrix,
    groups: list[np.ndarray],
    lower: np.ndarray,
    upper: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each group cell's share of its group: its interval over the feasible set (LP).

    Args:
        relations: every linear relation ``relations @ x = 0`` (additivity and ratios).
        groups: cells of each group (:func:`factor_groups`).
        lower, upper: each cell's interval (``upper`` may be ``inf``).

    Returns:
        (share_lower, share_upper, shape_pinned): per cell (NaN outside groups), and per
        group whether every share is one point. A group whose program is infeasible (the
        published constraints contradict each other) keeps [0, 1] and is not pinned.
    """
    n = lower.size
    s_lo = np.full(n, np.nan)
    s_hi = np.full(n, np.nan)
    pinned = np.zeros(len(groups), dtype=bool)
    if not groups:
        return s_lo, s_hi, pinned
    a = relations.tocsr()
    b = abs(a).tocsr()
    b.data[:] = 1.0
    adj = sp.bmat([[None, b.T], [b, None]], format="csr") if a.shape[0] else None
    if adj is not None:
        _, labels = connected_components(adj, directed=False)
        cell_lab, row_lab = labels[:n], labels[n:]
    else:
        cell_lab, row_lab = np.arange(n), np.zeros(0, dtype=np.int64)
    for gi, g in enumerate(groups):
        comp = np.flatnonzero(cell_lab == cell_lab[g[0]])
        comp = np.union1d(comp, g)
        rows = np.flatnonzero(row_lab == cell_lab[g[0]])
        m = comp.size
        pos = {int(c): k for k, c in enumerate(comp)}
        # variables: y (m), τ
        sub = a[rows][:, comp] if rows.size else sp.csr_matrix((0, m))
        in_g = np.zeros(m)
        in_g[[pos[int(c)] for c in g]] = 1.0
        a_eq = sp.vstack(
            [sp.hstack([sub, sp.csr_matrix((sub.shape[0], 1))]), sp.csr_matrix(np.r_[in_g, 0.0])]
        ).tocsr()
        b_eq = np.r_[np.zeros(sub.shape[0]), 1.0]
        lo, hi = lower[comp], upper[comp]
        eye = sp.identity(m, format="csr")
        parts = []
        has_lo = np.flatnonzero(lo > 0)
        if has_lo.size:  # ℓ τ − y ≤ 0
            parts.append(sp.hstack([-eye[has_lo], sp.csr_matrix(lo[has_lo][:, None])]))
        fin = np.flatnonzero(np.isfinite(hi))
        if fin.size:  # y − u τ ≤ 0
            parts.append(sp.hstack([eye[fin], sp.csr_matrix(-hi[fin][:, None])]))
        a_ub = sp.vstack(parts).tocsr() if parts else None
        b_ub = np.zeros(a_ub.shape[0]) if a_ub is not None else None
        ok = True
        for c in g:
            k = pos[int(c)]
            ends = []
            for sign in (1.0, -1.0):
                obj = np.zeros(m + 1)
                obj[k] = sign
                res = linprog(obj, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, method="highs")
                if res.status != 0:
                    ok = False
                    break
                ends.append(float(res.x[k]))
            if not ok:
                break
            s_lo[c], s_hi[c] = max(0.0, ends[0]), min(1.0, ends[1])
        if not ok:
            s_lo[g], s_hi[g] = 0.0, 1.0
            continue
        pinned[gi] = bool(np.all(s_hi[g] - s_lo[g] <= SHARE_TOLERANCE))
    return s_lo, s_hi, pinned
