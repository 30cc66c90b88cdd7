r"""Publication-grade ER-EE count tables: consistent, non-negative, integer.

See docs/design.md#post-processing.

Post-processing of already published values only — it costs no privacy. The released
marginals are arranged in a **forest by refinement**: marginal B is a child of marginal A
when every attribute of A is an attribute of B or a geography level coarser than one of
B's (``tract`` determines ``county`` in the public workplace frame). Each cell of B then
lies in exactly one cell of A, and "A's cell equals the sum of its B-cells" is a linear
constraint that holds for the true counts. A marginal may have several child marginals (a
cell partitioned in several ways) but its coarser released marginals must form a chain
(a tree, not a lattice); :func:`marginal_forest` refuses other plans before any data is
read.

The algorithm is the Census TopDown / Hay et al. two-pass scheme on that tree:

1. **Bottom-up (generalised least squares).** For each cell u with measurement
   :math:`y_u` of variance :math:`v_u` and, for each child marginal k, the sum
   :math:`S_{u,k}` of its children's subtree estimates with variance :math:`V_{u,k}`, the
   subtree estimate is the inverse-variance combination
   :math:`Z_u = (y_u/v_u + \sum_k S_{u,k}/V_{u,k}) / (1/v_u + \sum_k 1/V_{u,k})` with
   variance :math:`V_u = 1/(1/v_u + \sum_k 1/V_{u,k})`. The measurements of disjoint
   subtrees are independent, so these are the exact GLS quantities.
2. **Top-down.** Roots are published as :math:`Z_u` (clamped at 0 and rounded when asked).
   Given a parent's final value P, its children in one child marginal are the weighted
   projection of their :math:`Z_c` onto :math:`\sum_c x_c = P`:
   :math:`x_c = Z_c - \lambda V_c`, or with non-negativity
   :math:`x_c = \max(0, Z_c - \lambda V_c)` (the KKT solution of
   :math:`\min \sum_c (x_c - Z_c)^2/V_c` over the simplex scaled to P), λ found exactly
   per parent by Michelot's active-set iteration. Without
   non-negativity this reproduces the GLS solution exactly.
3. **Controlled rounding.** With ``integer``, a parent's integer value P is split over its
   children by cumulative rounding (child k gets round(S_k) − round(S_{k−1}), S_k the
   running sum of the children's values): every child moves by less than 1, stays
   non-negative, and the children sum to P exactly. Done level by level from the roots,
   every released pair is exactly additive.

Everything is vectorised over cells (one ``bincount`` per pass and level, no matrix over
cells): time and memory are linear in the number of cells.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

__all__ = [
    "GEOGRAPHY",
    "HierarchyError",
    "MarginalInput",
    "cell_parents",
    "check_distinct",
    "marginal_forest",
    "publication_grade",
    "refines",
]

#: geography levels of the workplace frame, coarsest first (docs/design.md#er-ee-data)
GEOGRAPHY: tuple[str, ...] = ("state", "county", "tract", "block")


class HierarchyError(ValueError):
    """The released marginals or their cells do not form a tree (message names them)."""


def _implied(attr: str, by: Sequence[str]) -> bool:
    """Whether a marginal over ``by`` determines ``attr`` (itself or a coarser geography)."""
    if attr in by:
        return True
    if attr not in GEOGRAPHY:
        return False
    level = GEOGRAPHY.index(attr)
    return any(b in GEOGRAPHY and GEOGRAPHY.index(b) > level for b in by)


def refines(child: Sequence[str], parent: Sequence[str]) -> bool:
    """Whether every cell of the marginal over ``child`` lies in one cell of ``parent``.

    True when each attribute of ``parent`` is an attribute of ``child`` or a geography level
    coarser than one of ``child``'s, and the two marginals differ.
    """
    if set(child) == set(parent):
        return False
    return all(_implied(a, child) for a in parent)


def check_distinct(marginals: Mapping[str, Sequence[str]]) -> None:
    """Refuse two queries over the same attributes (consistency would be ill-posed).

    Raises:
        HierarchyError: naming the two queries.
    """
    names = list(marginals)
    sets = {n: frozenset(marginals[n]) for n in names}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if sets[a] == sets[b]:
                raise HierarchyError(
                    f"[postprocess] consistent = true: queries {a!r} and {b!r} release the "
                    "same marginal; release it once"
                )


def marginal_forest(marginals: Mapping[str, Sequence[str]]) -> dict[str, str | None]:
    """The parent marginal of each released marginal (None for a root).

    Args:
        marginals: query name → its ``by`` attributes.

    Raises:
        HierarchyError: two marginals over the same attributes, or a marginal that refines two
            released marginals neither of which refines the other (the constraints would
            form a lattice, not a tree).
    """
    names = list(marginals)
    sets = {n: frozenset(marginals[n]) for n in names}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if sets[a] == sets[b]:
                raise HierarchyError(
                    f"[postprocess] consistent = true: queries {a!r} and {b!r} release the "
                    "same marginal; release it once"
                )
    parent: dict[str, str | None] = {}
    for n in names:
        coarser = [m for m in names if m != n and refines(marginals[n], marginals[m])]
        for i, a in enumerate(coarser):
            for b in coarser[i + 1 :]:
                if not (refines(marginals[a], marginals[b]) or refines(marginals[b], marginals[a])):
                    raise HierarchyError(
                        f"[postprocess] consistent = true: query {n!r} refines both {a!r} "
                        f"and {b!r}, which do not refine each other; consistency is enforced "
                        "on a tree of marginals (drop one of the coarser marginals, or set "
                        "consistent = false)"
                    )
        # the finest coarser marginal: the one that refines all the others
        finest = [a for a in coarser if all(a == b or refines(marginals[a], marginals[b])
                                            for b in coarser)]  # fmt: skip
        parent[n] = finest[0] if finest else None
    return parent


def cell_parents(
    child_keys: pl.DataFrame,
    parent_keys: pl.DataFrame,
    frame: pl.DataFrame | None = None,
) -> np.ndarray:
    """For each cell of a child marginal, the row of its cell in the parent marginal.

    Args:
        child_keys: the child's key columns, one row per cell.
        parent_keys: the parent's key columns, one row per cell.
        frame: the public workplace frame, needed when the parent has a geography level the
            child has only at a finer level (e.g. ``county`` from ``tract``).

    Raises:
        HierarchyError: a geography level that is not nested in the frame (a tract in two
            counties) or a child cell without a parent cell.
    """
    cols = list(parent_keys.columns)
    if not cols:  # the parent is a total (by = []): its one cell is every cell's parent
        return np.zeros(child_keys.height, dtype=np.int64)
    repeated = _repeated_rows(child_keys, parent_keys)
    if repeated is not None:
        return repeated
    child = child_keys.with_row_index("__child")
    for a in cols:
        if a in child_keys.columns:
            continue
        finer = [
            b for b in child_keys.columns
            if b in GEOGRAPHY and a in GEOGRAPHY and GEOGRAPHY.index(b) > GEOGRAPHY.index(a)
        ]  # fmt: skip
        if not finer or frame is None:
            raise HierarchyError(f"cannot map cells over {list(child_keys.columns)} to {cols}")
        b = max(finer, key=GEOGRAPHY.index)
        pairs = frame.select(b, a).unique()
        if pairs[b].n_unique() != pairs.height:
            raise HierarchyError(f"geography is not nested in the workplace frame: a {b} lies in "
                            f"more than one {a}")  # fmt: skip
        pairs = pairs.with_columns(pl.col(b).cast(child[b].dtype), pl.col(a).cast(
            parent_keys[a].dtype))  # fmt: skip
        child = child.join(pairs, on=b, how="left")
    par = parent_keys.with_row_index("__parent")
    child = child.select("__child", *[pl.col(a).cast(par[a].dtype) for a in cols])
    joined = child.join(par, on=cols, how="left", maintain_order="left")
    idx = joined["__parent"]
    if idx.null_count() or joined.height != child_keys.height:
        raise HierarchyError("a cell of a finer marginal has no cell in its coarser marginal")
    return idx.to_numpy().astype(np.int64)


def _repeated_rows(child_keys: pl.DataFrame, parent_keys: pl.DataFrame) -> np.ndarray | None:
    """The parent rows when each parent cell's cells are the next r rows of the child.

    A release lays out a finer marginal's cells with its extra attributes varying fastest
    (every parent cell's r cells in a run, in the parent's order); then row i's parent is
    row i // r, with no join over the child's (possibly tens of millions of) rows. Checked
    exactly, column by column; None when the child's rows are laid out otherwise (the
    caller joins).
    """
    cols = list(parent_keys.columns)
    n, m = child_keys.height, parent_keys.height
    if m == 0 or n % m or not set(cols) <= set(child_keys.columns):
        return None
    idx = np.repeat(np.arange(m, dtype=np.int64), n // m)
    at = pl.Series(idx)
    for c in cols:
        a, b = child_keys[c], parent_keys[c]
        if a.dtype != b.dtype or a.null_count() or b.null_count():
            return None
        if not bool((a == b.gather(at)).all()):
            return None
    return idx


@dataclass(frozen=True)
class MarginalInput:
    """One released marginal as post-processing sees it (published values only).

    Attributes:
        name: the query name.
        estimate: the published estimate per cell.
        variance: the published variance per cell, or a public proxy for it (0 = exact).
        parent: the parent marginal's name, or None.
        parent_index: per cell, the row of its parent cell (None for a root).
    """

    name: str
    estimate: np.ndarray
    variance: np.ndarray
    parent: str | None = None
    parent_index: np.ndarray | None = None


def _combine(
    values: list[np.ndarray], variances: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Inverse-variance combination of independent estimates; a zero variance is exact."""
    exact = np.zeros(values[0].shape, dtype=bool)
    exact_value = np.zeros(values[0].shape)
    precision = np.zeros(values[0].shape)
    weighted = np.zeros(values[0].shape)
    for v, var in zip(values, variances, strict=True):
        zero = var <= 0
        new = zero & ~exact
        exact_value[new] = v[new]
        exact |= zero
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(zero | ~np.isfinite(var), 0.0, 1.0 / np.where(zero, 1.0, var))
        precision += w
        weighted += w * v
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(precision > 0, weighted / np.where(precision > 0, precision, 1.0), 0.0)
        var = np.where(precision > 0, 1.0 / np.where(precision > 0, precision, 1.0), np.inf)
    z[exact] = exact_value[exact]
    var[exact] = 0.0
    return z, var


def _project(
    z: np.ndarray, var: np.ndarray, group: np.ndarray, total: np.ndarray, nonnegative: bool
) -> np.ndarray:
    r"""Per group g, :math:`\arg\min \sum (x-z)^2/V` s.t. :math:`\sum x = \mathrm{total}_g`.

    Children with V = 0 are exact (kept); with ``nonnegative`` also x ≥ 0.
    """
    n = total.shape[0]
    free = var > 0
    vf = np.where(free, var, 0.0)
    sum_v = np.bincount(group, vf, minlength=n)
    sum_z = np.bincount(group, z, minlength=n)
    has_free = sum_v > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        lam0 = np.where(has_free, (sum_z - total) / np.where(has_free, sum_v, 1.0), 0.0)
    if not nonnegative:
        return np.where(free, z - lam0[group] * vf, z)
    # KKT: x = max(0, z − λV) with Σ x = target. Michelot's active-set iteration: solve λ
    # on the active children, drop those that came out negative, repeat; λ only grows, so
    # a dropped child stays at 0, and it stops after at most (group size) rounds — a few
    # in practice. Each round is one pass of bincounts over the cells.
    target = total - np.bincount(group, np.where(free, 0.0, z), minlength=n)
    active = free.copy()
    while True:
        a_z = np.bincount(group, np.where(active, z, 0.0), minlength=n)
        a_v = np.bincount(group, np.where(active, vf, 0.0), minlength=n)
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = np.where(a_v > 0, (a_z - target) / np.where(a_v > 0, a_v, 1.0), 0.0)
        x = np.where(active, z - lam[group] * vf, 0.0)
        negative = active & (x < 0)
        if not negative.any():
            break
        active &= ~negative
    x = np.where(free, np.maximum(x, 0.0), z)
    return _rescale(x, free, group, total)


def _rescale(x: np.ndarray, free: np.ndarray, group: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Scale each group's free children so that the group sums to its total exactly.

    Removes floating-point residue; the factor is 1 up to rounding error.
    """
    n = total.shape[0]
    fixed = np.bincount(group, np.where(free, 0.0, x), minlength=n)
    moving = np.bincount(group, np.where(free, x, 0.0), minlength=n)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(moving > 0, (total - fixed) / np.where(moving > 0, moving, 1.0), 1.0)
    return np.where(free, x * factor[group], x)


def _running_sums(v: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Within each run of equal ``g`` (sorted), the running sum of ``v``.

    Added child by child within each group (the k-th children of every group in one
    vectorised step), never as differences of one cumulative sum over all the cells: the
    result is the same bits wherever the group lies in the array, so a tree solved in
    blocks rounds exactly as it does whole, and no rounding error of a sum over millions
    of cells reaches a group's sums.
    """
    out = v.astype(np.float64, copy=True)
    if out.size == 0:
        return out
    first = np.r_[True, g[1:] != g[:-1]]
    starts = np.flatnonzero(first)
    pos = np.arange(out.size) - np.repeat(starts, np.diff(np.r_[starts, out.size]))
    by_pos = np.argsort(pos, kind="stable")
    counts = np.bincount(pos)
    for idx in np.split(by_pos, np.cumsum(counts)[:-1])[1:]:
        out[idx] += out[idx - 1]
    return out


def _controlled_round(
    x: np.ndarray, free: np.ndarray, group: np.ndarray, total: np.ndarray
) -> np.ndarray:
    """Integers within 1 of x whose group sums are the integer totals.

    Cumulative (systematic) rounding: within each group, in a fixed order, the k-th child
    gets round(S_k) − round(S_{k−1}) where S_k is the running sum of the group's values
    (S_0 = 0). The group then sums to round(S_last) = its integer total; each child moves
    by less than 1; round is monotone, so non-negative values stay non-negative. Exact
    (integer-valued) children are left as they are.
    """
    n = total.shape[0]
    order = np.argsort(group, kind="stable")  # O(n) when the cells are already grouped
    g = group[order]
    fixed_sum = np.bincount(group, np.where(free, 0.0, x), minlength=n)
    v = np.where(free[order], x[order], 0.0)
    running = _running_sums(v, g)  # S_k within the group
    # the group's free part must round to total − fixed exactly: anchor the last S there
    last = np.r_[g[1:] != g[:-1], True]
    goal = total - fixed_sum
    running = np.where(last, goal[g], running)
    r = np.floor(running + 0.5 + 1e-9)
    prev = np.r_[0.0, r[:-1]]
    prev[np.r_[True, g[1:] != g[:-1]]] = 0.0
    out = x.copy()
    out[order] = np.where(free[order], r - prev, x[order])
    return out


def publication_grade(
    marginals: Sequence[MarginalInput],
    *,
    consistent: bool,
    nonnegative: bool,
    integer: bool,
) -> dict[str, np.ndarray]:
    """The post-processed values of each marginal (see the module docstring).

    Args:
        marginals: every released marginal; with ``consistent`` a parent precedes nothing
            in particular (the order is worked out here) and ``parent_index`` is set.
        consistent: enforce parent = sum of children over the forest.
        nonnegative: every value ≥ 0.
        integer: every value an integer.

    Returns:
        query name → post-processed values, aligned with its cells.
    """
    by_name = {m.name: m for m in marginals}
    if not consistent:
        out = {}
        for m in marginals:
            x = m.estimate.astype(np.float64)
            if integer:
                x = np.rint(x)
            if nonnegative:
                x = np.maximum(x, 0.0)
            out[m.name] = x + 0.0
        return out
    children: dict[str, list[str]] = {m.name: [] for m in marginals}
    for m in marginals:
        if m.parent is not None:
            children[m.parent].append(m.name)

    def depth(name: str) -> int:
        # a loop, not a recursive closure: a closure that calls itself is a reference cycle
        # holding ``by_name`` (every input's arrays) until the cyclic garbage collector
        # happens to run, which a few large allocations never trigger
        d = 0
        p = by_name[name].parent
        while p is not None:
            d, p = d + 1, by_name[p].parent
        return d

    order = sorted(by_name, key=depth)
    z: dict[str, np.ndarray] = {}
    v: dict[str, np.ndarray] = {}
    for name in reversed(order):  # bottom-up
        m = by_name[name]
        vals: list[np.ndarray] = [m.estimate.astype(np.float64)]
        vars_: list[np.ndarray] = [m.variance.astype(np.float64)]
        size = m.estimate.shape[0]
        for c in children[name]:
            idx = by_name[c].parent_index
            assert idx is not None
            vals.append(np.bincount(idx, z[c], minlength=size))
            vars_.append(np.bincount(idx, v[c], minlength=size))
        z[name], v[name] = _combine(vals, vars_)
    final: dict[str, np.ndarray] = {}
    for name in order:  # top-down
        m = by_name[name]
        if m.parent is None:
            x = z[name].copy()
            if nonnegative:
                x = np.maximum(x, 0.0)
            if integer:
                x = np.rint(x)
                if nonnegative:
                    x = np.maximum(x, 0.0)
            final[name] = x + 0.0
            continue
        idx = m.parent_index
        assert idx is not None
        total = final[m.parent]
        free = v[name] > 0
        x = _project(z[name], v[name], idx, total, nonnegative)
        if integer:
            x = _controlled_round(x, free, idx, total)
        final[name] = x + 0.0
    return final


def check_additive(values: np.ndarray, parent_values: np.ndarray, index: np.ndarray) -> float:
    """The largest |parent − Σ children| over the parent's cells (0 when exactly additive)."""
    sums = np.bincount(index, values, minlength=parent_values.shape[0])
    return float(np.max(np.abs(sums - parent_values))) if sums.size else 0.0
