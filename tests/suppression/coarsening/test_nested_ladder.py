"""The property the optimizer's rounds rely on: a coarsening step never narrows any bound.

The optimizer's deterministic ladder (exact, the grid ranges of 5, 10, 20, 40, …, then
suppressed) is nested: each step's interval holds the one before it. Then each step only
adds points to the attacker's feasible set ``{x : A x = 0, own_lo ≤ x ≤ own_hi}``, so no
cell's attacker interval (its min and max over that set) can shrink, and a sensitive cell
covered before a step stays covered. The attacker here is computed without the package's
LP code: by enumerating every whole-number table of a 2 × 2 table with its margins, and by
SciPy's ``linprog`` on the same relations.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from eree.suppression.coarsening.optimize import (
    BASES,
    GRID_BASES,
    ladder_bases,
    publication_at,
)

# a 2 × 2 table with its margins: AX AY BX BY | A B X Y | total
INTERIOR = np.array([13.0, 22.0, 27.0, 8.0])
NAMES = ("AX", "AY", "BX", "BY", "A", "B", "X", "Y", "T")


def _cells(interior: np.ndarray) -> np.ndarray:
    ax, ay, bx, by = interior
    return np.array([ax, ay, bx, by, ax + ay, bx + by, ax + bx, ay + by, ax + ay + bx + by])


def _relations() -> np.ndarray:
    """A x = 0: each margin minus its parts."""
    rows = [
        (4, (0, 1)),  # A = AX + AY
        (5, (2, 3)),  # B = BX + BY
        (6, (0, 2)),  # X = AX + BX
        (7, (1, 3)),  # Y = AY + BY
        (8, (4, 5)),  # T = A + B
    ]
    a = np.zeros((len(rows), 9))
    for i, (m, parts) in enumerate(rows):
        a[i, m] = -1.0
        a[i, list(parts)] = 1.0
    return a


def _own(level: np.ndarray, ladder: str = "grid") -> tuple[np.ndarray, np.ndarray]:
    return publication_at(_cells(INTERIOR), level, ladder=ladder).own_bounds()


def _bounds_by_enumeration(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Min and max of every cell over all whole-number tables within the own intervals."""
    axes = [np.arange(lo[k], hi[k] + 1) for k in range(4)]
    g = np.meshgrid(*axes, indexing="ij")
    x = np.stack([v.ravel() for v in g])  # 4 × points
    ax, ay, bx, by = x
    full = np.stack([ax, ay, bx, by, ax + ay, bx + by, ax + bx, ay + by, ax + ay + bx + by])
    ok = np.all((full >= lo[:, None]) & (full <= hi[:, None]), axis=0)
    assert ok.any()  # the true table is always in it
    return full[:, ok].min(axis=1), full[:, ok].max(axis=1)


def _bounds_by_lp(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = _relations()
    bnds = np.column_stack([lo, hi])
    out_lo, out_hi = np.empty(9), np.empty(9)
    for c in range(9):
        for sign, out in ((1.0, out_lo), (-1.0, out_hi)):
            cost = np.zeros(9)
            cost[c] = sign
            r = linprog(cost, A_eq=a, b_eq=np.zeros(5), bounds=bnds, method="highs")
            assert r.status == 0
            out[c] = r.x[c]
    return out_lo, out_hi


def test_each_grid_step_holds_the_interval_before_it():
    """For every whole number up to 5,000 (and fractional values), the interval at level
    k + 1 contains the one at level k, from exact up to suppressed."""
    top = len(GRID_BASES) + 1
    v = np.concatenate([np.arange(0.0, 5001.0), np.linspace(0.0, 3000.0, 977) + 0.37])
    for integer in (True, False):
        vals = np.round(v) if integer else v
        prev = None
        for k in range(min(top, 14) + 1):
            lv = np.full(vals.size, top if k == min(top, 14) else k)
            lo, hi = publication_at(vals, lv, ladder="grid", integer=integer).own_bounds()
            assert np.all((lo <= vals) & (vals <= hi))  # the truth is inside
            if prev is not None:
                assert np.all(lo <= prev[0]) and np.all(hi >= prev[1]), (integer, k)
            prev = (lo, hi)


def test_the_rounding_ladder_is_not_nested():
    """Why the optimizer does not step on it: 13 rounded to 5 is 15, [13, 17] in whole
    numbers; rounded to 10 it is 10, [5, 15] — the coarser step drops 16 and 17."""
    assert ladder_bases("rounding") == BASES
    lo, hi = publication_at(np.array([13.0, 13.0]), np.array([1, 2])).own_bounds()
    assert (lo.tolist(), hi.tolist()) == ([13.0, 5.0], [17.0, 15.0])


@pytest.mark.parametrize("trial", range(12))
def test_a_step_never_narrows_any_attackers_bound(trial):
    """Random levels (exact, 5, 10, 20 for the inner cells; up to 40 for the margins), then
    each cell in turn one step coarser: every cell's attacker interval — by enumeration of
    the whole-number tables and by the LP relaxation — contains the one before."""
    rng = np.random.default_rng(trial)
    level = np.concatenate([rng.integers(0, 4, 4), rng.integers(0, 5, 5)])
    lo0, hi0 = _own(level)
    e_lo, e_hi = _bounds_by_enumeration(lo0, hi0)
    l_lo, l_hi = _bounds_by_lp(lo0, hi0)
    for c in range(9):
        if c < 4 and level[c] >= 4:
            continue  # keep the enumeration small: inner cells up to base 40
        step = level.copy()
        step[c] += 1
        lo1, hi1 = _own(step)
        assert lo1[c] <= lo0[c] and hi1[c] >= hi0[c]  # the step's own interval holds
        e_lo1, e_hi1 = _bounds_by_enumeration(lo1, hi1)
        assert np.all(e_lo1 <= e_lo) and np.all(e_hi1 >= e_hi), (NAMES[c], level)
        l_lo1, l_hi1 = _bounds_by_lp(lo1, hi1)
        assert np.all(l_lo1 <= l_lo + 1e-7) and np.all(l_hi1 >= l_hi - 1e-7), (NAMES[c], level)


def test_the_same_steps_on_the_rounding_ladder_narrow_some_bound():
    """The power of the test above: on the rounding ladder, some step of some cell at some
    levels narrows an attacker's interval (13 → 10 drops 16 and 17, 22 → 25 at base 25…)."""
    found = False
    for lv in itertools.product(range(4), repeat=4):
        level = np.array([*lv, 0, 0, 0, 0, 0])
        lo0, hi0 = _own(level, "rounding")
        e_lo, e_hi = _bounds_by_enumeration(lo0, hi0)
        for c in range(4):
            step = level.copy()
            step[c] += 1
            e_lo1, e_hi1 = _bounds_by_enumeration(*_own(step, "rounding"))
            if np.any(e_lo1 > e_lo) or np.any(e_hi1 < e_hi):
                found = True
                break
        if found:
            break
    assert found
