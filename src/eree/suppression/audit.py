r"""The attacker's audit: linear-programming bounds of every suppressed cell.

The attacker knows every published cell, the additivity relations :math:`A x = 0` of the
linked tables, that confidential values are non-negative, and (in QCEW) the number of
establishments of every cell (which adds nothing to these LPs). For each suppressed cell
:math:`i` and attribute, the audit solves

.. math::
    \underline{x}_i = \min x_i, \quad \overline{x}_i = \max x_i
    \quad \text{s.t.}\quad A_S x_S = -A_P a_P,\ x_S \ge 0,

where :math:`S` are the suppressed cells (unknowns), :math:`P` the published ones
(constants :math:`a_P`). A cell is **pinned** when :math:`\overline{x}_i - \underline{x}_i
\approx 0` (the attacker recovers it exactly), and **narrowed** when its feasible
interval does not cover its protection interval
:math:`[a_i - \min(U_i, a_i),\ a_i + U_i]` (:mod:`.rules`).

The LPs are solved with HiGHS (:mod:`.lp`) per connected component of the suppressed
cells (two suppressed cells are connected when they appear in a common relation; relations
without suppressed cells are constants): a component with m cells is one constraint set
and 2m objectives, each re-solved from the previous optimal basis. An unbounded maximum is
reported as ``inf``. Each component is scaled so that its largest number is 1,000.

**Cheap attacks first.** Before any LP, the audit runs the attacks that need no
optimisation: a relation with a single suppressed cell gives that cell away (the
*singleton* attack), and substituting it may leave another relation with a single
unknown, and so on (Gaussian elimination on the triangular part of the system). Cells
found this way are pinned, with no LP.

**Certified bounds instead of LPs where they suffice.** Every feasible point of the
attacker's system bounds his interval from inside: the true values are one, and each
*witness* of the complementary suppression (:class:`~.secondary.Witness`: a direction
``y`` with ``A y = 0`` that moves suppressed cells only) gives two more,
:math:`a + t^+ y` and :math:`a - t^- y`, with the largest steps that keep every cell
non-negative. The audit checks every witness against the relations and the pattern
itself (it does not trust the code that found it); a cell whose certified interval
already covers its protection interval (and, for any suppressed cell, has positive
width) is proved safe without its LPs. Only the other cells are solved exactly. The
guarantee is the same — no cell pinned, no primary cell narrowed — since the attacker's
exact interval contains the certified one; the reported ``lower``/``upper`` of a
certified cell are then inner bounds (``lower_exact``/``upper_exact`` say which), so its
``relative_halfwidth`` overstates how tightly the attacker can bound it (the
``within_10_percent`` count is an upper bound). ``exact=True`` solves every LP.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from eree.suppression.lp import EqualityLP
from eree.suppression.secondary import Witness
from eree.suppression.tables import LinkedTables

__all__ = ["AuditResult", "SolverError", "attacker_bounds", "audit"]


class SolverError(RuntimeError):
    """HiGHS did not return an optimal solution where one must exist."""


def _components(a_s: sp.csr_matrix) -> tuple[int, np.ndarray, np.ndarray]:
    """Connected components of suppressed cells linked by relations.

    Returns (number of components, component of each suppressed cell, component of each
    relation row (-1 for rows without suppressed cells)).
    """
    n_cols = a_s.shape[1]
    b = abs(a_s).tocsr()
    b.data[:] = 1.0
    adj = sp.bmat([[None, b.T], [b, None]], format="csr")
    n_comp, labels = connected_components(adj, directed=False)
    cell_lab = labels[:n_cols]
    row_lab = labels[n_cols:].copy()
    row_lab[np.diff(b.indptr) == 0] = -1
    # relabel to 0..k-1 over cells
    uniq, cell_lab = np.unique(cell_lab, return_inverse=True)
    remap = -np.ones(n_comp, dtype=np.int64)
    remap[uniq] = np.arange(uniq.size)
    row_lab = np.where(row_lab >= 0, remap[np.maximum(row_lab, 0)], -1)
    return int(uniq.size), cell_lab.astype(np.int64), row_lab.astype(np.int64)


def _outer_upper(sub: sp.csr_matrix, b: np.ndarray) -> np.ndarray:
    """Cheap valid upper bounds.

    In a relation whose suppressed cells are all children (coefficient −1), each of them
    is at most the published remainder ``-b``.
    """
    m = sub.shape[1]
    ub = np.full(m, np.inf)
    coo = sub.tocoo()
    pos_rows = np.zeros(sub.shape[0], dtype=bool)
    pos_rows[coo.row[coo.data > 0]] = True
    ok = ~pos_rows[coo.row]
    np.minimum.at(ub, coo.col[ok], -b[coo.row[ok]])
    return ub


def _component_bounds(
    lp: EqualityLP,
    sub: sp.csr_matrix,
    b: np.ndarray,
    truth: np.ndarray | None,
    want: np.ndarray,
    stats: dict[str, int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Min and max of each wanted cell of one component (scaled units).

    Every LP optimum is a feasible point, and so are the true values (when given): a
    cell whose value at some feasible point is 0 has minimum 0, and one whose value
    reaches its :func:`_outer_upper` bound has that maximum; those LPs are skipped
    (exactly).
    """
    ub = _outer_upper(sub, b)
    m = sub.shape[1]
    if truth is None:
        seen_min = np.full(m, np.inf)
        seen_max = np.full(m, -np.inf)
    else:
        seen_min = truth.astype(np.float64).copy()
        seen_max = seen_min.copy()
    lo = np.zeros(want.size)
    hi = np.zeros(want.size)
    tol = 1e-9 * max(1.0, float(np.abs(b).max(initial=0.0)))
    for k, j in enumerate(want):
        if seen_max[j] >= ub[j] - tol:
            hi[k] = ub[j]
        else:
            r = lp.optimise(np.array([j]), np.array([-1.0]))
            if stats is not None:
                stats["lp_max"] = stats.get("lp_max", 0) + 1
            if r.status == "optimal" and r.x is not None:
                hi[k] = float(r.x[j])
                np.minimum(seen_min, r.x, out=seen_min)
                np.maximum(seen_max, r.x, out=seen_max)
            elif r.status == "unbounded":
                hi[k] = np.inf
            else:
                raise SolverError(f"HiGHS: {r.status} {r.message}".strip())
        if seen_min[j] <= tol:
            lo[k] = 0.0
        else:
            r = lp.optimise(np.array([j]), np.array([1.0]))
            if stats is not None:
                stats["lp_min"] = stats.get("lp_min", 0) + 1
            if r.status != "optimal" or r.x is None:
                raise SolverError(f"HiGHS: {r.status} {r.message}".strip())
            lo[k] = max(0.0, float(r.x[j]))
            np.minimum(seen_min, r.x, out=seen_min)
            np.maximum(seen_max, r.x, out=seen_max)
    return lo, hi


def peel(a_s: sp.csr_matrix, rhs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The singleton attack, repeated: a relation with one unknown gives it away.

    Args:
        a_s: relations × suppressed cells (the unknowns).
        rhs: right-hand side of ``a_s x = rhs`` (minus the published cells' part).

    Returns:
        (determined, value): boolean per unknown, and its value where determined.
    """
    m = a_s.shape[1]
    determined = np.zeros(m, dtype=bool)
    value = np.full(m, np.nan)
    if a_s.nnz == 0:
        return determined, value
    csr = a_s.tocsr()
    csc = a_s.tocsc()
    left = np.diff(csr.indptr).astype(np.int64)
    res = np.asarray(rhs, dtype=np.float64).copy()
    queue: list[int] = [int(x) for x in np.flatnonzero(left == 1)]
    while queue:
        r = queue.pop()
        if left[r] != 1:
            continue
        cols = csr.indices[csr.indptr[r] : csr.indptr[r + 1]]
        coef = csr.data[csr.indptr[r] : csr.indptr[r + 1]]
        free = ~determined[cols]
        if not free.any():
            continue
        j = int(cols[free][0])
        determined[j] = True
        value[j] = res[r] / float(coef[free][0])
        rows = csc.indices[csc.indptr[j] : csc.indptr[j + 1]]
        data = csc.data[csc.indptr[j] : csc.indptr[j + 1]]
        res[rows] -= data * value[j]
        left[rows] -= 1
        queue += [int(x) for x in rows[left[rows] == 1]]
    return determined, value


def attacker_bounds(
    relations: sp.csr_matrix,
    suppressed: np.ndarray,
    values: np.ndarray,
    *,
    cells: np.ndarray | None = None,
    values_known: bool = True,
    stats: dict[str, int] | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The attacker's LP bounds of suppressed cells.

    Cells given away by the repeated singleton attack (:func:`peel`) are pinned without
    an LP; the others are solved per connected component.

    Args:
        relations: the relation matrix A (relations × cells).
        suppressed: boolean mask of suppressed cells.
        values: values of every cell; published ones enter the constraints.
        cells: restrict to these suppressed cells (default: all suppressed cells).
        values_known: the suppressed cells' entries of ``values`` are their true values
            (a feasible point, used to skip LPs); False when auditing a publication
            whose suppressed values are unknown (e.g. BLS's files).
        stats: counters to add to: ``lp_max``/``lp_min`` (LPs solved), ``peeled``
            (cells pinned by the singleton attack), ``lp_components``.
        progress: called with the number of cells finished, as components finish.

    Returns:
        (lower, upper), arrays over all cells; NaN for cells not audited, ``inf`` for
        unbounded maxima.

    Raises:
        SolverError: HiGHS fails on an LP (the true values are always feasible).
    """
    st = stats if stats is not None else {}
    n = relations.shape[1]
    suppressed = np.asarray(suppressed, dtype=bool)
    supp_idx = np.flatnonzero(suppressed)
    lower = np.full(n, np.nan)
    upper = np.full(n, np.nan)
    if supp_idx.size == 0:
        return lower, upper
    want = np.zeros(n, dtype=bool)
    want[supp_idx if cells is None else np.asarray(cells, dtype=np.int64)] = True
    want &= suppressed
    a = relations.tocsc()
    a_s = a[:, supp_idx].tocsr()
    b_all = -(a[:, ~suppressed] @ values[~suppressed])
    det, det_val = peel(a_s, b_all)
    if det.any():
        g = supp_idx[det]
        w = want[g]
        lower[g[w]] = upper[g[w]] = det_val[det][w]
        st["peeled"] = st.get("peeled", 0) + int(w.sum())
        want[g] = False
        if progress is not None:
            progress(int(w.sum()))
    if not want.any():
        return lower, upper
    k, cell_lab, row_lab = _components(a_s)
    order_c = np.argsort(cell_lab, kind="stable")
    bounds_c = np.searchsorted(cell_lab[order_c], np.arange(k + 1))
    rows_all = np.flatnonzero(row_lab >= 0)
    order_r = rows_all[np.argsort(row_lab[rows_all], kind="stable")]
    bounds_r = np.searchsorted(row_lab[order_r], np.arange(k + 1))
    for c in range(k):
        cols = order_c[bounds_c[c] : bounds_c[c + 1]]
        glob = supp_idx[cols]
        local_want = np.flatnonzero(want[glob])
        if local_want.size == 0:
            continue
        rows = order_r[bounds_r[c] : bounds_r[c + 1]]
        if rows.size == 0:  # in no relation: anything non-negative
            lower[glob[local_want]] = 0.0
            upper[glob[local_want]] = np.inf
            continue
        st["lp_components"] = st.get("lp_components", 0) + 1
        sub = a_s[rows][:, cols]
        b = b_all[rows]
        known = values[glob] if values_known else np.zeros(0)
        scale = max(1.0, float(np.abs(b).max()), float(np.abs(known).max(initial=0.0))) / 1e3
        m = cols.size
        lp = EqualityLP(sub, b / scale, np.zeros(m), np.full(m, np.inf))
        truth = values[glob] / scale if values_known else None
        lo_c, hi_c = _component_bounds(lp, sub, b / scale, truth, local_want, st)
        lower[glob[local_want]] = lo_c * scale
        upper[glob[local_want]] = hi_c * scale
        if progress is not None:
            progress(int(local_want.size))
    return lower, upper


def verify_witnesses(
    relations: sp.csr_matrix,
    suppressed: np.ndarray,
    witnesses: Sequence[Witness],
    *,
    rtol: float = 1e-7,
) -> np.ndarray:
    """Which witnesses are valid directions of the attacker's system.

    Valid: every cell they move is suppressed and ``A y = 0`` (to ``rtol`` of the largest
    move).

    Returns a boolean per witness.
    """
    ok = np.zeros(len(witnesses), dtype=bool)
    if not witnesses:
        return ok
    a = relations.tocsc()
    for k, w in enumerate(witnesses):
        if w.cells.size == 0 or not bool(suppressed[w.cells].all()):
            continue
        r = a[:, w.cells] @ w.y
        ok[k] = float(np.abs(r).max(initial=0.0)) <= rtol * max(1.0, float(np.abs(w.y).max()))
    return ok


def certified_bounds(
    n: int, values: np.ndarray, witnesses: Sequence[Witness]
) -> tuple[np.ndarray, np.ndarray]:
    """Inner bounds of the attacker's interval of every cell from feasible points.

    The feasible points: the true values and, per (verified) witness ``y``,
    ``values + t⁺ y`` and ``values − t⁻ y`` with the largest steps keeping every cell
    non-negative.

    Returns (lower, upper) over all cells (``upper`` is ``inf`` when a witness moves a
    cell up without bound).
    """
    lo = np.asarray(values, dtype=np.float64).copy()
    hi = lo.copy()
    for w in witnesses:
        v = values[w.cells]
        y = w.y
        neg, pos = y < 0, y > 0
        t_up = float(np.min(v[neg] / -y[neg])) if neg.any() else np.inf
        t_dn = float(np.min(v[pos] / y[pos])) if pos.any() else np.inf
        for t, sign in ((t_up, 1.0), (t_dn, -1.0)):
            if t <= 0:
                continue
            step = sign * y
            if np.isinf(t):  # nothing decreases: the increasing cells are unbounded
                hi[w.cells[step > 0]] = np.inf
                continue
            x = np.maximum(v + t * step, 0.0)
            np.maximum.at(hi, w.cells, x)
            np.minimum.at(lo, w.cells, x)
    return lo, hi


@dataclass(frozen=True)
class AuditResult:
    """The audit of a suppression pattern.

    Attributes:
        bounds: one row per (suppressed cell, attribute): the cell's keys, ``cell``,
            ``attribute``, ``primary``, ``value`` (true, confidential), ``lower``/``upper``
            (the attacker's LP bounds; ``upper`` may be ``inf``), ``protection``
            (required U, 0 for complementary cells), ``pinned``, ``narrowed``
            (the feasible interval does not cover the protection interval),
            ``relative_halfwidth`` ((upper − lower)/(upper + lower): the attacker's
            midpoint is that close, relatively, to every feasible value — usable when
            true values are unknown), ``lower_exact``/``upper_exact`` (the bound is the
            LP optimum; otherwise an inner bound certified by a feasible point). The
            frame is confidential (true values, bounds that may pin values down): an
            internal report, not a release.
        n_suppressed: number of suppressed cells.
        stats: how the bounds were obtained: ``lp`` (LPs solved; ``lp_max``,
            ``lp_min``), ``certified`` ((cell, attribute) pairs proved safe by feasible
            points, no LP), ``peeled`` (pinned by the singleton attack, no LP),
            ``witnesses`` and ``witnesses_rejected``, ``lp_components``.
    """

    bounds: pl.DataFrame
    n_suppressed: int
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def pinned(self) -> pl.DataFrame:
        """The bounds rows of the pinned cells."""
        return self.bounds.filter(pl.col("pinned"))

    @property
    def narrowed(self) -> pl.DataFrame:
        """The bounds rows of the cells narrowed below their protection."""
        return self.bounds.filter(pl.col("narrowed"))

    @property
    def ok(self) -> bool:
        """No cell pinned and no primary cell narrowed below its protection."""
        return self.pinned.height == 0 and self.narrowed.height == 0

    def summary(self) -> dict[str, object]:
        """Counts only (no confidential value)."""
        b = self.bounds
        out: dict[str, object] = {"suppressed_cells": self.n_suppressed}
        per: dict[str, dict[str, int]] = {}
        for a in b.get_column("attribute").unique(maintain_order=True).to_list():
            s = b.filter(pl.col("attribute") == a)
            per[a] = {
                "audited": s.height,
                "pinned": int(s.get_column("pinned").sum()),
                "pinned_primary": int((s.get_column("pinned") & s.get_column("primary")).sum()),
                "narrowed_primary": int(s.get_column("narrowed").sum()),
                "unbounded_above": int(s.get_column("upper").is_infinite().sum()),
                "within_10_percent": int((s.get_column("relative_halfwidth") < 0.1).sum()),
            }
        out["attributes"] = per
        out["ok"] = self.ok
        out["how"] = dict(self.stats)
        return out


def _halfwidth(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Relative half-width (upper − lower)/(upper + lower) of the attacker's interval.

    The midpoint guess is within this share of any feasible value; inf when unbounded,
    0 when pinned (0/0 → 0).
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        h = (hi - lo) / (hi + lo)
    return np.where(hi - lo <= 0, 0.0, np.where(np.isfinite(hi), h, np.inf))


def audit(
    tables: LinkedTables,
    suppressed: np.ndarray,
    *,
    attributes: Sequence[str] | None = None,
    protection: dict[str, np.ndarray] | None = None,
    primary: np.ndarray | None = None,
    rtol: float = 1e-6,
    values_known: bool = True,
    witnesses: Sequence[Witness] | None = None,
    exact: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> AuditResult:
    """Audit a suppression pattern: the attacker's bounds of every suppressed cell.

    Args:
        tables: the linked tables.
        suppressed: boolean mask of suppressed cells.
        attributes: attributes to audit (default: all tabulated).
        protection: required protection U per attribute and cell (from
            :func:`~eree.suppression.rules.primary_suppression`); without it
            only pinned cells are reported.
        primary: boolean mask of primary cells (reported; default: cells with U > 0).
        rtol: tolerance, relative to max(1, value), for "pinned" and "narrowed".
        values_known: the tables hold the true values of suppressed cells (False for a
            publication audited from its published cells only: then ``value`` is null
            and nothing is "narrowed"; pinned is relative to max(1, upper)).
        witnesses: feasible directions (from
            :func:`~eree.suppression.secondary.secondary_suppression`) that certify
            cells without LPs; each is checked first, invalid ones are ignored.
        exact: solve every cell's LPs (exact bounds for every cell).
        progress: called with (cells done, total) over all attributes.
    """
    attrs = tuple(attributes) if attributes is not None else tables.attributes
    suppressed = np.asarray(suppressed, dtype=bool)
    idx = np.flatnonzero(suppressed)
    keys = tables.cells.select(["cell", *tables.key_columns])[idx]
    frames: list[pl.DataFrame] = []
    stats: dict[str, int] = {"lp_max": 0, "lp_min": 0, "peeled": 0}
    use = [] if exact or not values_known or witnesses is None else list(witnesses)
    if use:
        valid = verify_witnesses(tables.relations, suppressed, use)
        stats["witnesses"] = len(use)
        stats["witnesses_rejected"] = int((~valid).sum())
        use = [w for w, ok in zip(use, valid, strict=True) if ok]
    total = idx.size * len(attrs)
    done = [0]

    def tick(k: int) -> None:
        done[0] += k
        if progress is not None:
            progress(done[0], total)

    for a in attrs:
        vals = tables.values(a)
        u = (
            protection[a]
            if protection is not None and a in protection
            else np.zeros(tables.n_cells)
        )
        prim = primary if primary is not None else u > 0
        lo = np.full(tables.n_cells, np.nan)
        hi = np.full(tables.n_cells, np.nan)
        exact_lo = np.zeros(tables.n_cells, dtype=bool)
        exact_hi = np.zeros(tables.n_cells, dtype=bool)
        todo = idx
        if use:
            clo, chi = certified_bounds(tables.n_cells, vals, use)
            v = vals[idx]
            tol = rtol * np.maximum(1.0, v)
            need_up = v + u[idx] - tol
            need_dn = v - np.minimum(u[idx], v) + tol
            safe = (chi[idx] - clo[idx] > tol) & (chi[idx] >= need_up) & (clo[idx] <= need_dn)
            good = idx[safe]
            lo[good], hi[good] = clo[good], chi[good]
            exact_lo[good] = clo[good] <= 0.0
            exact_hi[good] = np.isinf(chi[good])
            stats["certified"] = stats.get("certified", 0) + int(safe.sum())
            tick(int(safe.sum()))
            todo = idx[~safe]
        if todo.size:
            l2, h2 = attacker_bounds(
                tables.relations,
                suppressed,
                vals,
                cells=todo,
                values_known=values_known,
                stats=stats,
                progress=tick,
            )
            lo[todo], hi[todo] = l2[todo], h2[todo]
            exact_lo[todo] = exact_hi[todo] = True
        v = vals[idx] if values_known else np.full(idx.size, np.nan)
        ref = v if values_known else np.where(np.isfinite(hi[idx]), hi[idx], 0.0)
        tol = rtol * np.maximum(1.0, ref)
        width = hi[idx] - lo[idx]
        pinned = width <= tol
        up_ok = hi[idx] >= v + u[idx] - tol
        down_ok = lo[idx] <= v - np.minimum(u[idx], v) + tol
        narrowed = prim[idx] & ~(up_ok & down_ok) & values_known
        frames.append(
            keys.with_columns(
                pl.lit(a).alias("attribute"),
                pl.Series("primary", prim[idx]),
                pl.Series("value", v),
                pl.Series("lower", lo[idx]),
                pl.Series("upper", hi[idx]),
                pl.Series("lower_exact", exact_lo[idx]),
                pl.Series("upper_exact", exact_hi[idx]),
                pl.Series("protection", u[idx]),
                pl.Series("pinned", pinned),
                pl.Series("narrowed", narrowed),
                pl.Series("relative_halfwidth", _halfwidth(lo[idx], hi[idx])),
            )
        )
    bounds = pl.concat(frames) if frames else pl.DataFrame()
    stats["lp"] = stats["lp_max"] + stats["lp_min"]
    return AuditResult(bounds, int(idx.size), stats)
