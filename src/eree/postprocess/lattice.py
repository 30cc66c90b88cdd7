r"""Least squares over any set of released marginals (a lattice), per geographic unit.

Post-processing of published values only (docs/design.md#post-processing). Every released
cell is a measurement :math:`y_c` with a variance :math:`v_c` (published, or the public
model of :mod:`eree.postprocess.variance_model`; 0 = published exactly). The constraints are
the additivity of every released pair in a refinement relation (parent cell = sum of its
child cells); only the covering pairs are needed, the rest follow. The solution is

.. math:: \hat x = \arg\min \sum_c (x_c - y_c)^2 / v_c \quad\text{s.t.}\quad A x = 0,

i.e. :math:`\hat x = y - V A^\top \lambda` with :math:`(A V A^\top)\lambda = A y`, solved by
preconditioned conjugate gradients (sparse: a few passes over the cells per iteration;
:math:`A V A^\top` may be singular where constraints are redundant — a lattice — but the
system is consistent and CG finds a solution). When the marginals form a tree this is the
same estimate as the two-pass algorithm of :mod:`eree.postprocess.hierarchy`. The problem
separates by geographic unit (the connected components of the constraints), so memory and
time grow linearly with the cells.

* **Non-negativity** (every output ≥ 0): an active-set iteration — cells that come out
  negative are fixed at 0 (as exact zero measurements) and the rest re-solved, until none
  is negative (at most as many rounds as cells; a handful in practice).
* **Integers with every released pair additive**: when one released marginal refines all
  the others (the usual case), its cells are rounded by cumulative (controlled) rounding
  in the order of the coarser marginals' cells, and every other marginal is published as
  the sum of its rounded cells — each coarser cell then moves by less than one. Otherwise
  an integer program per batch of units (HiGHS through :func:`scipy.optimize.milp`): each
  cell rounded up or down, every covering pair's equation exact, the total rounding
  distance least; where that is infeasible, cells may move by up to 2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import LinearOperator, cg

__all__ = [
    "LatticeError",
    "Pair",
    "cover_pairs",
    "lattice_least_squares",
    "lattice_round",
    "units",
]


class LatticeError(ValueError):
    """The least squares or the rounding could not be completed (message says why)."""


@dataclass(frozen=True)
class Pair:
    """A released pair in a refinement relation.

    Attributes:
        child: the finer marginal's name.
        parent: the coarser marginal's name.
        index: per child cell, the row of the parent cell it lies in.
    """

    child: str
    parent: str
    index: np.ndarray


def cover_pairs(pairs: Sequence[Pair]) -> list[Pair]:
    """The pairs no released marginal lies strictly between (enough for the constraints)."""
    rel = {(p.child, p.parent) for p in pairs}
    names = {n for p in pairs for n in (p.child, p.parent)}
    return [
        p for p in pairs
        if not any((p.child, m) in rel and (m, p.parent) in rel for m in names)
    ]  # fmt: skip


class _Layout:
    """The marginals' cells concatenated into one vector, and the constraint matrix A."""

    def __init__(self, sizes: Mapping[str, int], pairs: Sequence[Pair]) -> None:
        self.names = list(sizes)
        self.offset: dict[str, int] = {}
        o = 0
        for n in self.names:
            self.offset[n] = o
            o += sizes[n]
        self.n = o
        rows, cols, vals = [], [], []
        r0 = 0
        for p in pairs:
            m = int(sizes[p.parent])
            # parent cell j: +x_parent[j] − Σ_{i: index[i] = j} x_child[i] = 0
            rows.append(r0 + np.arange(m))
            cols.append(self.offset[p.parent] + np.arange(m))
            vals.append(np.ones(m))
            rows.append(r0 + np.asarray(p.index, dtype=np.int64))
            cols.append(self.offset[p.child] + np.arange(p.index.shape[0]))
            vals.append(-np.ones(p.index.shape[0]))
            r0 += m
        self.m = r0
        if r0:
            self.A = sp.csr_matrix(
                (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                shape=(r0, o),
            )
        else:
            self.A = sp.csr_matrix((0, o))

    def stack(self, parts: Mapping[str, np.ndarray]) -> np.ndarray:
        return np.concatenate([np.asarray(parts[n], dtype=np.float64) for n in self.names])

    def split(self, x: np.ndarray, sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
        return {n: x[self.offset[n] : self.offset[n] + sizes[n]].copy() for n in self.names}


def units(sizes: Mapping[str, int], pairs: Sequence[Pair]) -> dict[str, np.ndarray]:
    """The independent sub-problem (connected component of the constraints) of each cell."""
    lay = _Layout(sizes, pairs)
    if lay.m == 0:
        labels = np.arange(lay.n)
    else:  # cells and constraint rows as one bipartite graph
        a = sp.csr_matrix(lay.A != 0, dtype=np.int8)
        g = sp.bmat([[None, a.T], [a, None]], format="csr")
        _, lab = connected_components(g, directed=False)
        labels = lab[: lay.n]
    return {n: a.astype(np.int64) for n, a in lay.split(labels.astype(np.float64), sizes).items()}


def _solve(
    A: sp.csr_matrix, y: np.ndarray, v: np.ndarray, lam0: np.ndarray | None, rtol: float
) -> tuple[np.ndarray, np.ndarray]:
    """X = y − V Aᵀ λ with (A V Aᵀ) λ = A y, by Jacobi-preconditioned CG."""
    if A.shape[0] == 0:
        return y.copy(), np.zeros(0)
    AV = A.multiply(v[None, :]).tocsr()
    diag = np.asarray(AV.multiply(A).sum(axis=1)).ravel()
    inv = np.where(diag > 0, 1.0 / np.where(diag > 0, diag, 1.0), 0.0)
    At = A.T.tocsr()

    def matvec(lam: np.ndarray) -> np.ndarray:
        return np.asarray(A @ (v * (At @ lam)))

    n = A.shape[0]
    op = LinearOperator((n, n), matvec=matvec, dtype=np.float64)
    pre = LinearOperator((n, n), matvec=lambda r: inv * r, dtype=np.float64)
    b = np.asarray(A @ y)
    if not np.any(b):
        return y.copy(), np.zeros(n)
    lam, info = cg(op, b, x0=lam0, rtol=rtol, atol=0.0, maxiter=5000, M=pre)
    if info < 0:
        raise LatticeError("the least-squares system could not be solved")
    return y - v * (At @ lam), lam


def lattice_least_squares(
    estimates: Mapping[str, np.ndarray],
    variances: Mapping[str, np.ndarray],
    pairs: Sequence[Pair],
    *,
    nonnegative: bool,
    rtol: float = 1e-10,
    max_rounds: int = 200,
) -> dict[str, np.ndarray]:
    """The constrained weighted least-squares estimate of every marginal (module docstring).

    Args:
        estimates: marginal name → published values per cell.
        variances: marginal name → variance per cell (0: exact; inf is not allowed).
        pairs: every released pair in a refinement relation (the covering ones are used).
        nonnegative: fix negative cells at 0 and re-solve until none is negative.

    Returns:
        marginal name → values (consistent up to the solver's tolerance; see
        :func:`lattice_round` for exact integers).
    """
    sizes = {n: int(np.asarray(estimates[n]).shape[0]) for n in estimates}
    lay = _Layout(sizes, cover_pairs(pairs))
    y = lay.stack(estimates)
    v = lay.stack(variances)
    if not np.all(np.isfinite(v)) or np.any(v < 0):
        raise LatticeError("every variance must be finite and ≥ 0")
    x, lam = _solve(lay.A, y, v, None, rtol)
    if nonnegative:
        y = y.copy()
        v = v.copy()
        for _ in range(max_rounds):
            neg = x < 0
            if not neg.any():
                break
            y[neg] = 0.0
            v[neg] = 0.0
            x, lam = _solve(lay.A, y, v, lam, rtol)
        x = np.maximum(x, 0.0)
    return lay.split(x, sizes)


def _cumulative_round(values: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Cumulative rounding along ``order``: each value moves by < 1, runs keep their sums ± 1."""
    v = values[order]
    c = np.cumsum(v)
    r = np.floor(c + 0.5 + 1e-9)
    prev = np.r_[0.0, r[:-1]]
    out = np.empty_like(values)
    out[order] = r - prev
    return out


def lattice_round(
    values: Mapping[str, np.ndarray],
    pairs: Sequence[Pair],
    exact: Mapping[str, np.ndarray] | None = None,
    *,
    batch_cells: int = 20_000,
    held: Sequence[str] = (),
) -> tuple[dict[str, np.ndarray], str]:
    """Non-negative integers, every released pair exactly additive, close to ``values``.

    Args:
        values: marginal name → non-negative real values (consistent up to tolerance).
        pairs: every released pair in a refinement relation.
        exact: marginal name → cells that must keep their (integer) value.
        held: marginals whose (integer) values must be kept exactly, coarser ones
            included: with controlled rounding of the finest marginal, a held coarser
            marginal's cells lead the order, so that each of its cells is a run of the
            finest's cells whose running sums are integers at both ends — its rounded
            cells then add up to it exactly.

    Returns:
        The integer values and the method used, in words.
    """
    names = list(values)
    sizes = {n: int(values[n].shape[0]) for n in names}
    coarser = {n: {p.parent for p in pairs if p.child == n} for n in names}
    finest = [n for n in names if coarser[n] == set(names) - {n}]
    if finest or len(names) == 1:
        f = finest[0] if finest else names[0]
        idx = {p.parent: p.index for p in pairs if p.child == f}
        # order: coarsest marginal's cell first, then the next finer's, … then the cell
        ranking = sorted(idx, key=lambda n: (n not in held, sizes[n]))
        keys = [np.arange(sizes[f])] + [idx[n] for n in reversed(ranking)]
        order = np.lexsort(keys)
        x = np.maximum(np.asarray(values[f], dtype=np.float64), 0.0)
        fixed = None if exact is None else exact.get(f)
        r = _cumulative_round(np.where(fixed, 0.0, x) if fixed is not None else x, order)
        if fixed is not None:
            r = np.where(fixed, np.rint(x), r)
        out = {f: r}
        for n, i in idx.items():
            out[n] = np.bincount(i, r, minlength=sizes[n])
        return out, (
            f"controlled rounding of {f!r} (cumulative, in the order of its coarser "
            "marginals' cells); every other marginal is the sum of its rounded cells"
        )
    return _milp_round(values, pairs, sizes, exact, batch_cells), (
        "integer program per batch of geographic units (HiGHS): each cell rounded up or "
        "down, every released pair exact, least total rounding distance"
    )


def _milp_round(
    values: Mapping[str, np.ndarray],
    pairs: Sequence[Pair],
    sizes: Mapping[str, int],
    exact: Mapping[str, np.ndarray] | None,
    batch_cells: int,
) -> dict[str, np.ndarray]:
    from scipy.optimize import Bounds, LinearConstraint, milp

    cov = cover_pairs(pairs)
    lay = _Layout(sizes, cov)
    x = np.maximum(lay.stack(values), 0.0)
    fixed = np.zeros(lay.n, dtype=bool)
    if exact is not None:
        fixed = lay.stack({n: exact.get(n, np.zeros(sizes[n], bool)) for n in lay.names}) > 0
    lab = lay.stack({k: v.astype(np.float64) for k, v in units(sizes, cov).items()})
    lab = lab.astype(np.int64)
    out = np.rint(x)
    order = np.argsort(lab, kind="stable")
    bounds_u = np.r_[0, np.flatnonzero(np.diff(lab[order])) + 1, lab.size]
    A = lay.A.tocsc()
    start = 0
    while start < bounds_u.size - 1:
        stop = start + 1
        while stop < bounds_u.size - 1 and bounds_u[stop + 1] - bounds_u[start] <= batch_cells:
            stop += 1
        cells = order[bounds_u[start] : bounds_u[stop]]
        out[cells] = _milp_batch(A[:, cells], x[cells], fixed[cells], milp, Bounds,
                                 LinearConstraint)  # fmt: skip
        start = stop
    return lay.split(out, sizes)


def _milp_batch(A, x, fixed, milp, Bounds, LinearConstraint):  # type: ignore[no-untyped-def]
    rows = np.unique(A.nonzero()[0])
    A = A[rows, :]
    n = x.size
    lo = np.where(fixed, np.rint(x), np.floor(x))
    hi = np.where(fixed, np.rint(x), np.ceil(x))
    frac = x - np.floor(x)
    # |x − x*| for x ∈ {⌊x*⌋, ⌈x*⌉} is linear in x: (x − ⌊x*⌋)(1 − 2 frac) + frac
    res = milp(
        c=1.0 - 2.0 * frac,
        integrality=np.ones(n),
        bounds=Bounds(lo, hi),
        constraints=[LinearConstraint(A, 0.0, 0.0)] if rows.size else [],
    )
    if res.status == 0 and res.x is not None:
        return np.rint(res.x)
    # wider: x may move by up to 2, minimise Σ d with d ≥ |x − x*|
    lo2 = np.where(fixed, lo, np.maximum(np.floor(x) - 2, 0.0))
    hi2 = np.where(fixed, hi, np.ceil(x) + 2)
    eye = sp.identity(n, format="csr")
    cons = [
        LinearConstraint(sp.hstack([A, sp.csr_matrix((A.shape[0], n))]), 0.0, 0.0),
        LinearConstraint(sp.hstack([eye, -eye]), -np.inf, x),  # x − d ≤ x*
        LinearConstraint(sp.hstack([eye, eye]), x, np.inf),  # x + d ≥ x*
    ]
    res = milp(
        c=np.r_[np.zeros(n), np.ones(n)],
        integrality=np.r_[np.ones(n), np.zeros(n)],
        bounds=Bounds(np.r_[lo2, np.zeros(n)], np.r_[hi2, np.full(n, np.inf)]),
        constraints=cons,
    )
    if res.status != 0 or res.x is None:
        raise LatticeError("no integer rounding keeps every released pair additive here")
    return np.rint(res.x[:n])
