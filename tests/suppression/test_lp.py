"""The LP layer's warm start from a given basis (``EqualityLP.start_from``).

Expected optima come from ``scipy.optimize.linprog`` on the same LP, not from the code
under test.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from eree.suppression.lp import EqualityLP, warm_start_available

pytestmark = pytest.mark.skipif(
    not warm_start_available(), reason="SciPy's HiGHS object is not importable here"
)


def _lp(seed: int) -> tuple[sp.csc_matrix, np.ndarray, np.ndarray, np.ndarray]:
    """A random feasible LP ``a x = b``, ``0 ≤ x ≤ u`` (some ``u`` infinite)."""
    rng = np.random.default_rng(seed)
    m, n = 12, 30
    a = sp.random(m, n, density=0.3, random_state=seed, format="csc")
    a = a + sp.eye(m, n, format="csc")  # no empty row
    x = rng.uniform(0.0, 5.0, size=n)
    ub = np.where(rng.random(n) < 0.3, np.inf, x + rng.uniform(0.0, 3.0, size=n))
    return sp.csc_matrix(a), a @ x, np.zeros(n), ub


def _optimum(a, b, lb, ub, k: int, side: float) -> float:  # type: ignore[no-untyped-def]
    c = np.zeros(a.shape[1])
    c[k] = side
    r = linprog(c, A_eq=a, b_eq=b, bounds=np.column_stack([lb, ub]), method="highs")
    return float(r.x[k]) if r.status == 0 else np.inf


@pytest.mark.parametrize("seed", range(6))
def test_any_alien_basis_is_taken_and_the_optimum_is_linprogs(seed: int) -> None:
    """Bases of the wrong size (every column basic; none basic), of statuses naming an
    infinite bound, and a basis from a neighbouring model are each completed by HiGHS, and
    the next optimum is ``linprog``'s; a basis of another shape is refused."""
    a, b, lb, ub = _lp(seed)
    m, n = a.shape
    rng = np.random.default_rng(seed)
    other = EqualityLP(a, b, lb, ub)
    other.optimise(np.arange(n), np.ones(n))
    kept = other.basis()
    assert kept is not None and kept[0].size == n and kept[1].size == m
    assert (kept[0] == 1).sum() + (kept[1] == 1).sum() == m  # a basis: m basic
    starts = {
        "all basic": (np.ones(n, np.int8), np.ones(m, np.int8)),
        "none basic": (np.zeros(n, np.int8), np.zeros(m, np.int8)),
        "at infinite bounds": (np.full(n, 2, np.int8), np.full(m, 2, np.int8)),
        "unknown": (np.full(n, -1, np.int8), np.full(m, -1, np.int8)),
        "neighbour's": kept,
    }
    for name, (cols, rows) in starts.items():
        lp = EqualityLP(a, b, lb, ub)
        assert lp.start_from(cols, rows), name
        for k in rng.choice(n, size=4, replace=False):
            for side in (1.0, -1.0):
                r = lp.optimise(np.array([k]), np.array([side]))
                exp = _optimum(a, b, lb, ub, int(k), side)
                if np.isinf(exp):
                    assert r.status == "unbounded", name
                else:
                    assert r.status == "optimal" and r.x is not None, name
                    assert abs(r.x[k] - exp) <= 1e-6 * max(1.0, abs(exp)), name
    lp = EqualityLP(a, b, lb, ub)
    assert not lp.start_from(np.zeros(n + 1, np.int8), np.zeros(m, np.int8))
    assert not lp.start_from(np.zeros(n, np.int8), np.zeros(m - 1, np.int8))
