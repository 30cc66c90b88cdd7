"""Linear programs with HiGHS, as shipped inside SciPy.

Two entry points:

* :func:`solve` — one LP ``min c·x s.t. A x = b, lb ≤ x ≤ ub``.
* :class:`EqualityLP` — one constraint set, many objectives (the audit's min and max of
  every cell of a component), re-solved from the previous optimal basis.

Both use HiGHS through ``scipy.optimize``. Re-solving from a basis needs the HiGHS object
itself, which SciPy binds as ``scipy.optimize._highspy._core._Highs`` (a private module):
when it is importable the warm-started path is used (about 7× faster per LP on a state's
audit), otherwise — or with ``EREE_LP=linprog`` in the environment — every LP goes
through the public ``scipy.optimize.linprog(method="highs")``. Tests check that both
paths agree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

__all__ = ["EqualityLP", "LPResult", "solve", "solve_with_duals", "warm_start_available"]

try:  # SciPy's private binding of the HiGHS object (scipy >= 1.15)
    from scipy.optimize._highspy import _core as _hc

    _HAVE_CORE = hasattr(_hc, "_Highs") and hasattr(_hc, "HighsLp")
except ImportError:  # pragma: no cover - depends on the SciPy build
    _hc = None
    _HAVE_CORE = False


def warm_start_available() -> bool:
    """Whether the warm-started HiGHS path is used."""
    return _HAVE_CORE and os.environ.get("EREE_LP", "") != "linprog"


@dataclass(frozen=True)
class LPResult:
    """status: ``"optimal"``, ``"infeasible"``, ``"unbounded"`` or ``"error"``."""

    status: str
    x: np.ndarray | None
    message: str = ""


def _linprog(
    c: np.ndarray, a: sp.spmatrix, b: np.ndarray, lb: np.ndarray, ub: np.ndarray
) -> LPResult:
    res = linprog(
        c,
        A_eq=a,
        b_eq=b,
        bounds=np.column_stack([lb, ub]),
        method="highs",
        options={"presolve": False},
    )
    status = {0: "optimal", 2: "infeasible", 3: "unbounded"}.get(res.status, "error")
    return LPResult(status, None if res.x is None else np.asarray(res.x), str(res.message))


def _model(
    c: np.ndarray,
    a: sp.spmatrix,
    b: np.ndarray,
    lb: np.ndarray,
    ub: np.ndarray,
    presolve: bool = False,
) -> Any:
    h = _hc._Highs()
    h.setOptionValue("output_flag", False)
    if not presolve:  # small, sparse LPs: presolve costs more than it saves
        h.setOptionValue("presolve", "off")
    csc = sp.csc_matrix(a)
    csc.sort_indices()
    lp = _hc.HighsLp()
    m, n = csc.shape
    lp.num_col_ = n
    lp.num_row_ = m
    lp.col_cost_ = np.asarray(c, dtype=np.float64)
    lp.col_lower_ = np.asarray(lb, dtype=np.float64)
    lp.col_upper_ = np.where(np.isinf(ub), 1e30, ub).astype(np.float64)
    lp.row_lower_ = np.asarray(b, dtype=np.float64)
    lp.row_upper_ = np.asarray(b, dtype=np.float64)
    lp.a_matrix_.format_ = _hc.MatrixFormat.kColwise
    lp.a_matrix_.start_ = csc.indptr.astype(np.int32)
    lp.a_matrix_.index_ = csc.indices.astype(np.int32)
    lp.a_matrix_.value_ = csc.data.astype(np.float64)
    lp.a_matrix_.num_col_ = n
    lp.a_matrix_.num_row_ = m
    h.passModel(lp)
    return h


def _run(h: Any) -> LPResult:
    h.run()
    st = h.getModelStatus()
    ms = _hc.HighsModelStatus
    if st == ms.kOptimal:
        return LPResult("optimal", np.asarray(h.getSolution().col_value))
    if st == ms.kInfeasible:
        return LPResult("infeasible", None)
    if st in (ms.kUnbounded, ms.kUnboundedOrInfeasible):
        return LPResult("unbounded", None, h.modelStatusToString(st))
    return LPResult("error", None, h.modelStatusToString(st))


def solve(c: np.ndarray, a: sp.spmatrix, b: np.ndarray, lb: np.ndarray, ub: np.ndarray) -> LPResult:
    """``min c·x`` s.t. ``a x = b``, ``lb ≤ x ≤ ub`` (``ub`` may hold ``inf``)."""
    if not warm_start_available():
        return _linprog(c, a, b, lb, ub)
    return _run(_model(c, a, b, lb, ub))


def solve_with_duals(
    c: np.ndarray, a: sp.spmatrix, b: np.ndarray, lb: np.ndarray, ub: np.ndarray
) -> tuple[LPResult, np.ndarray | None, np.ndarray | None]:
    """``min c·x`` s.t. ``a x = b``, ``lb ≤ x ≤ ub``; each column's reduced cost, each row's dual.

    Both ``None`` without an optimum. The reduced costs are ``c − aᵀy`` for the row duals
    ``y``. A non-zero reduced cost marks a column held at one of its bounds by the
    optimum: relaxing that bound by δ improves the objective by up to ``|reduced cost|·δ``.
    """
    if not warm_start_available():
        res = linprog(c, A_eq=a, b_eq=b, bounds=np.column_stack([lb, ub]), method="highs")
        status = {0: "optimal", 2: "infeasible", 3: "unbounded"}.get(res.status, "error")
        if status != "optimal":
            return LPResult(status, None, str(res.message)), None, None
        rc = np.asarray(res.lower.marginals) + np.asarray(res.upper.marginals)
        return LPResult(status, np.asarray(res.x)), rc, np.asarray(res.eqlin.marginals)
    h = _model(c, a, b, lb, ub, presolve=True)
    r = _run(h)
    if r.status != "optimal":
        return r, None, None
    sol = h.getSolution()
    return r, np.asarray(sol.col_dual), np.asarray(sol.row_dual)


class EqualityLP:
    """The LP ``{x : a x = b, lb ≤ x ≤ ub}`` with many objectives.

    Each objective is re-solved from the last optimal basis (warm start) when SciPy's
    HiGHS object is available.
    """

    def __init__(self, a: sp.spmatrix, b: np.ndarray, lb: np.ndarray, ub: np.ndarray) -> None:
        self.a = sp.csc_matrix(a)
        self.b = np.asarray(b, dtype=np.float64)
        self.lb = np.asarray(lb, dtype=np.float64)
        self.ub = np.asarray(ub, dtype=np.float64)
        self.n = self.a.shape[1]
        self._h = None
        if warm_start_available():
            self._h = _model(np.zeros(self.n), self.a, self.b, self.lb, self.ub)
            # a new objective leaves the last optimal basis primal feasible: primal simplex
            self._h.setOptionValue("simplex_strategy", 4)
        self._last: np.ndarray | None = None
        self._rc: np.ndarray | None = None
        self._y: np.ndarray | None = None

    def reduced_costs(self) -> np.ndarray | None:
        """Each column's reduced cost at the last optimum (None without the warm path)."""
        return self._rc

    def row_duals(self) -> np.ndarray | None:
        """Each row's dual ``y`` at the last optimum (None without the warm path).

        The reduced costs are ``c − aᵀy``.
        """
        return self._y

    def basis(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The basis HiGHS holds now: each column's and each row's status.

        int8 codes of ``HighsBasisStatus``: 0 at its lower bound, 1 basic, 2 at its upper
        bound, 3 free at zero. None without the warm path or without a valid basis.
        """
        if self._h is None:
            return None
        b = self._h.getBasis()
        if not b.valid:
            return None
        cols = np.fromiter((int(s) for s in b.col_status), np.int8, self.n)
        rows = np.fromiter((int(s) for s in b.row_status), np.int8, self.b.size)
        return cols, rows

    def start_from(self, cols: np.ndarray, rows: np.ndarray) -> bool:
        """Solve the next objective from the basis ``cols``/``rows``.

        Codes of :meth:`basis`; -1: no status known, put at a bound.

        Given to HiGHS as an *alien* basis: HiGHS completes it to a non-singular basis of
        the right size (a basis remembered from a nearby model may have too many or too few
        basic variables). A status that names an infinite bound is put at the finite one.
        Only where the solve starts changes: an optimum is an optimum, and a basis HiGHS
        refuses leaves the last one in place. Returns whether HiGHS took it.
        """
        if self._h is None:
            return False
        c = np.asarray(cols, dtype=np.int8).copy()
        r = np.asarray(rows, dtype=np.int8).copy()
        if c.size != self.n or r.size != self.b.size:
            return False
        lb_inf, ub_inf = np.isinf(self.lb), np.isinf(self.ub)
        c[(c < 0) | (c > 3)] = 0
        c[(c == 2) & ub_inf] = 0
        c[(c == 0) & lb_inf] = 2
        c[lb_inf & ub_inf & (c != 1)] = 3
        r[(r < 0) | (r == 3) | (r > 3)] = 0  # an equality row: at its (one) bound
        st = _hc.HighsBasisStatus
        codes = (st.kLower, st.kBasic, st.kUpper, st.kZero)
        basis = _hc.HighsBasis()
        basis.col_status = [codes[v] for v in c.tolist()]
        basis.row_status = [codes[v] for v in r.tolist()]
        basis.alien = True
        basis.valid = True
        return bool(self._h.setBasis(basis) != _hc.HighsStatus.kError)

    def optimise(self, cost_index: np.ndarray, cost_value: np.ndarray) -> LPResult:
        """Minimise ``Σ cost_value[k] · x[cost_index[k]]`` (all other costs 0)."""
        idx = np.asarray(cost_index, dtype=np.int32)
        val = np.asarray(cost_value, dtype=np.float64)
        if self._h is None:
            c = np.zeros(self.n)
            c[idx] = val
            return _linprog(c, self.a, self.b, self.lb, self.ub)
        if self._last is not None:
            self._h.changeColsCost(self._last.size, self._last, np.zeros(self._last.size))
        self._h.changeColsCost(idx.size, idx, val)
        self._last = idx
        res = _run(self._h)
        self._rc = self._y = None
        if res.status == "optimal":
            sol = self._h.getSolution()
            self._rc = np.asarray(sol.col_dual)
            self._y = np.asarray(sol.row_dual)
        if res.status == "error":
            # the warm start can end in an unknown status (seen on small components with
            # an unbounded side): solve this objective again from scratch
            c = np.zeros(self.n)
            c[idx] = val
            res = _run(_model(c, self.a, self.b, self.lb, self.ub))
            if res.status == "error":
                res = _linprog(c, self.a, self.b, self.lb, self.ub)
        return res
