"""The check's two shortcuts decide exactly as the full check.

* ``near``: a publication checked with the bounds of one whose feasible set is its own
  up to the LP's accuracy (the tightened publication, checked with the untightened
  one's bounds) states the same violations and the same pinned cells as its full check,
  though it does not solve every bound to the tightest.
* ``covered``: the optimizer's rounds do not ask again for a sensitive cell's side a
  feasible point showed covered in a publication whose every own interval lies inside
  the current one's (nested steps only widen the attacker's feasible set); the verdict
  is that of the check without it.

The expectation is the full check of the same publication (itself tested against
``linprog`` and the reconstruction audit elsewhere), never the shortcut's own output.
"""

from __future__ import annotations

import numpy as np
import pytest

from eree.suppression import primary_suppression
from eree.suppression.coarsening import disclosure_check
from eree.suppression.coarsening.optimize import GRID_BASES, publication_at, tighten
from eree.suppression.linked import tolerance
from eree.suppression.rules import protected_lower
from tests.suppression.coarsening.test_propagated_check import (
    RULES,
    _three_by_three,
    delaware_m1emp,
)

TOP = len(GRID_BASES) + 1


def _delaware():
    tables, prim = delaware_m1emp()
    return tables, prim, "m1emp"


def _small():
    tables = _three_by_three()
    return tables, primary_suppression(tables, RULES, ("emp",)), "emp"


def _random_levels(t: np.ndarray, rng: np.random.Generator, high: int, suppress: float):
    level = rng.integers(0, high, t.size)
    level[rng.random(t.size) < suppress] = TOP
    return level


def _agree(tables, prim, a, pub, near) -> tuple[int, int]:
    full = disclosure_check(tables, pub, a, prim)
    fast = disclosure_check(tables, pub, a, prim, near=near)
    assert np.array_equal(fast.violated, full.violated)
    assert np.array_equal(fast.pinned, full.pinned)
    assert fast.raw_lower is None and fast.raw_upper is None
    # inner bounds: every one attained by a feasible point (within the full bounds)
    assert (fast.lower >= full.lower - 1e-6).all() and (fast.upper <= full.upper + 1e-6).all()
    return int(full.violated.sum()), int(full.pinned.sum())


def test_near_bounds_state_the_full_checks_violations_and_pinned_cells():
    """3 × 3 with margins at random grid levels (twelve seeds): the publication itself
    and its tightening, each checked with the untightened publication's bounds. Power:
    over the seeds some publications have violations and some pinned cells."""
    tables, prim, a = _small()
    t = tables.values(a).astype(float)
    found_v = found_p = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        level = _random_levels(t, rng, 4, 0.15)
        pub = publication_at(t, level, ladder="grid")
        full = disclosure_check(tables, pub, a, prim)
        near = (full.raw_lower, full.raw_upper)
        v, p = _agree(tables, prim, a, pub, near)
        q, _ = tighten(pub, t, level, full.raw_lower, full.raw_upper, ladder="grid")
        v2, p2 = _agree(tables, prim, a, q, near)
        found_v, found_p = found_v + v + v2, found_p + p + p2
    assert found_v > 0 and found_p > 0


def test_near_bounds_on_delaware_state_the_full_checks_counts():
    """DE's linked tables (7,850 cells) at random grid levels, a twentieth suppressed,
    and the tightened publication: violations and pinned cells are the full check's,
    with some of each to find."""
    tables, prim, a = _delaware()
    t = tables.values(a).astype(float)
    rng = np.random.default_rng(3)
    level = _random_levels(t, rng, 3, 0.05)
    pub = publication_at(t, level, ladder="grid")
    full = disclosure_check(tables, pub, a, prim)
    v, p = _agree(tables, prim, a, pub, (full.raw_lower, full.raw_upper))
    q, finer = tighten(pub, t, level, full.raw_lower, full.raw_upper, ladder="grid")
    _, p2 = _agree(tables, prim, a, q, (full.raw_lower, full.raw_upper))
    assert v > 0 and p + p2 > 0 and finer.sum() > 0


def _covered(tables, prim, a, pub):
    t = tables.values(a).astype(float)
    u = prim.protection[a]
    chk = disclosure_check(tables, pub, a, prim, sensitive_only=True, prove=True)
    tol = tolerance(t)
    lo_ok = prim.primary & (chk.lower <= protected_lower(tables.relations, t, u, None) + tol)
    hi_ok = prim.primary & (chk.upper >= t + u - tol)
    return chk, lo_ok, hi_ok


@pytest.mark.parametrize("source", ["small", "delaware"])
@pytest.mark.parametrize("seed", range(4))
def test_sides_shown_covered_before_a_nested_step_decide_as_the_full_verdict(source, seed):
    """A publication at random grid levels, then one step up for a random tenth of its
    cells (nested: each own interval holds the one before): the verdict of the second
    with the first's covered sides given is the verdict without them (and the full
    check's). Power: sides were given, and violations remain to be found."""
    tables, prim, a = _small() if source == "small" else _delaware()
    t = tables.values(a).astype(float)
    rng = np.random.default_rng(40 + seed)
    level = _random_levels(t, rng, 3, 0.0)
    first = publication_at(t, level, ladder="grid")
    _, lo_ok, hi_ok = _covered(tables, prim, a, first)
    up = level.copy()
    step = rng.random(t.size) < 0.1
    up[step] = np.minimum(up[step] + 1, TOP - 1)
    second = publication_at(t, up, ladder="grid")
    l1, h1 = first.own_bounds()
    l2, h2 = second.own_bounds()
    assert (l2 <= l1).all() and (h2 >= h1).all()  # nested
    with_known = disclosure_check(
        tables, second, a, prim, sensitive_only=True, prove=True, covered=(lo_ok, hi_ok)
    )
    without = disclosure_check(tables, second, a, prim, sensitive_only=True, prove=True)
    full = disclosure_check(tables, second, a, prim)
    assert np.array_equal(with_known.violated, without.violated)
    assert np.array_equal(with_known.violated, full.violated)
    assert (lo_ok | hi_ok).any()
    assert full.violated.any() or source == "small"


@pytest.mark.parametrize("source", ["small", "delaware"])
def test_any_near_bounds_even_wrong_ones_give_the_full_checks_counts(source):
    """``near`` only guides which sides are solved: with its lower ends pushed far down
    (every value then in the upper third of its ``near`` interval, so the true values
    themselves reach every upper goal and no maximum is solved), a cell whose lower
    bound is its value comes out a point and has its sides solved again: the pinned
    cells are still the full check's, not more."""
    tables, prim, a = _small() if source == "small" else _delaware()
    t = tables.values(a).astype(float)
    level = _random_levels(t, np.random.default_rng(7), 3, 0.05)
    pub = publication_at(t, level, ladder="grid")
    full = disclosure_check(tables, pub, a, prim)
    w = np.where(np.isfinite(full.raw_upper), full.raw_upper - full.raw_lower, 0.0)
    wrong = (full.raw_lower - 10.0 * w - 10.0, full.raw_upper)
    _agree(tables, prim, a, pub, wrong)


@pytest.mark.parametrize("source", ["small", "delaware"])
@pytest.mark.parametrize("seed", range(3))
def test_bounds_as_far_as_tightening_needs_tighten_as_every_tightest_bound(source, seed):
    """``reach = tighten_reach(...)``: the check solves each side only as far as some
    candidate of ``tighten`` could still hold it; tightening from those bounds publishes
    exactly what it publishes from the full check's, and the violations and pinned cells
    are the full check's. Power: cells were tightened, and some side stopped at its
    reach (fewer LPs than the full check)."""
    from eree.suppression.coarsening.optimize import tighten_reach

    tables, prim, a = _small() if source == "small" else _delaware()
    t = tables.values(a).astype(float)
    level = _random_levels(t, np.random.default_rng(20 + seed), 4, 0.05)
    pub = publication_at(t, level, ladder="grid")
    full = disclosure_check(tables, pub, a, prim)
    reach = tighten_reach(pub, t, level, ladder="grid")
    guided = disclosure_check(tables, pub, a, prim, reach=reach)
    assert np.array_equal(guided.violated, full.violated)
    assert np.array_equal(guided.pinned, full.pinned)
    q_full, f_full = tighten(pub, t, level, full.raw_lower, full.raw_upper, ladder="grid")
    q_g, f_g = tighten(pub, t, level, guided.raw_lower, guided.raw_upper, ladder="grid")
    assert np.array_equal(f_g, f_full) and f_full.any()
    assert np.array_equal(q_g.status, q_full.status)
    for name in ("value", "base", "lower", "upper"):
        assert np.array_equal(getattr(q_g, name), getattr(q_full, name), equal_nan=True)
    if source == "delaware":
        assert guided.stats["lp"] < full.stats["lp"]
