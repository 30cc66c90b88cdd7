"""The disclosure check with interval propagation decides exactly as the check without.

Propagation (:func:`eree.suppression.linked.propagate_bounds`) narrows each cell's own
interval to bounds that every point of the attacker's feasible set satisfies, so the LP
bounds — and everything the optimizer reads from them: violations, cells pinned and the
tightened publication — must be those of the LPs from the own intervals alone
(``propagate=False``, the reconstruction audit's path), which is the independent
expectation here. On a hand-made 3 × 3 table the bounds are also checked against every
cell and side by SciPy's ``linprog``.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy.optimize import linprog

from eree.suppression import PrimaryRules, primary_suppression, qcew_tables
from eree.suppression.coarsening import disclosure_check, greedy_coarsen
from eree.suppression.coarsening.optimize import GRID_BASES, publication_at, tighten
from eree.suppression.tables import Dimension, TableLayout, tabulate
from tests.suppression.helpers import QCEW_DIR, need

RULES = PrimaryRules(threshold=3, dominance_k=None, p_percent=10.0)
TOP = len(GRID_BASES) + 1


def _three_by_three():
    frame = pl.DataFrame(
        [
            (r, c, float(v))
            for r in "ABC"
            for c in "XYZ"
            for v in (1, 2, 4, 9)[: 1 + (ord(r) + ord(c)) % 4]
        ],
        schema=["r", "c", "emp"],
        orient="row",
    )
    dims = tuple(Dimension(d, (("total", None), (d, d))) for d in ("r", "c"))
    layout = TableLayout(dims, (("total", "total"), ("r", "total"), ("total", "c"), ("r", "c")))
    return tabulate(frame, layout, ["emp"], top=2)


def delaware_m1emp():
    """DE's QCEW linked tables of month-1 employment (synthesised from the by-area files,
    seed 1) and the BLS primary rules (federal ownership exempt); skipped without data."""
    from eree.synth.qcew import synth_qcew_from_area

    need(QCEW_DIR)
    est = synth_qcew_from_area(QCEW_DIR, seed=1).establishments
    est = est.filter(pl.col("state").cast(pl.Int64) == 10).drop("state")
    tables = qcew_tables(est, ("m1emp",), top=2)
    return tables, primary_suppression(tables, PrimaryRules(exempt={"own": ("1",)}), ("m1emp",))


def _same_decisions(tables, pub, level, attribute, prim) -> tuple[int, int]:
    """Both checks and both tightenings agree; returns (violations, cells tightened)."""
    fast = disclosure_check(tables, pub, attribute, prim)
    slow = disclosure_check(tables, pub, attribute, prim, propagate=False)
    assert np.array_equal(fast.violated, slow.violated)
    assert np.array_equal(fast.pinned, slow.pinned)
    assert np.array_equal(fast.lower, slow.lower)
    assert np.array_equal(fast.upper, slow.upper)
    t = tables.values(attribute).astype(np.float64)
    q_fast, f_fast = tighten(pub, t, level, fast.raw_lower, fast.raw_upper, ladder="grid")
    q_slow, f_slow = tighten(pub, t, level, slow.raw_lower, slow.raw_upper, ladder="grid")
    assert np.array_equal(f_fast, f_slow)
    assert np.array_equal(q_fast.status, q_slow.status)
    for name in ("value", "base", "lower", "upper"):
        assert np.array_equal(getattr(q_fast, name), getattr(q_slow, name), equal_nan=True)
    return int(fast.violated.sum()), int(f_fast.sum())


def _linprog_bounds(tables, lo, hi) -> tuple[np.ndarray, np.ndarray]:
    """Min and max of every cell by SciPy's ``linprog`` over all cells together, rounded
    inward to whole numbers (the attacker knows counts are whole)."""
    rel = tables.relations.toarray()
    n = rel.shape[1]
    bounds = list(zip(lo, np.where(np.isinf(hi), None, hi), strict=True))
    out_lo, out_hi = np.empty(n), np.empty(n)
    for j in range(n):
        c = np.zeros(n)
        c[j] = 1.0
        r = linprog(c, A_eq=rel, b_eq=np.zeros(rel.shape[0]), bounds=bounds, method="highs")
        out_lo[j] = np.ceil(r.x[j] - 1e-6)
        r = linprog(-c, A_eq=rel, b_eq=np.zeros(rel.shape[0]), bounds=bounds, method="highs")
        out_hi[j] = np.inf if r.status == 3 else np.floor(r.x[j] + 1e-6)
    return out_lo, out_hi


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_propagated_check_on_a_hand_made_table_matches_linprog(seed):
    """3 × 3 with margins at random grid levels (some suppressed): the check's bounds are
    SciPy's ``linprog`` bounds over all cells (rounded inward), and with and without
    propagation the verdicts, pinned cells and tightening agree."""
    tables = _three_by_three()
    prim = primary_suppression(tables, RULES, ("emp",))
    t = tables.values("emp").astype(float)
    rng = np.random.default_rng(seed)
    level = rng.integers(0, 4, t.size)
    level[rng.random(t.size) < 0.15] = TOP
    pub = publication_at(t, level, ladder="grid")
    lo, hi = pub.own_bounds()
    chk = disclosure_check(tables, pub, "emp", prim)
    e_lo, e_hi = _linprog_bounds(tables, lo, hi)
    assert np.array_equal(chk.lower, e_lo)
    assert np.array_equal(chk.upper, e_hi)
    assert _same_decisions(tables, pub, level, "emp", prim)[1] > 0  # something tightened


def test_the_optimizer_with_propagation_passes_the_check_without():
    """The optimizer's publication of the 3 × 3 table passes the check from the own
    intervals (no propagation) with the same pinned cells."""
    tables = _three_by_three()
    prim = primary_suppression(tables, RULES, ("emp",))
    res = greedy_coarsen(tables, "emp", prim)
    slow = disclosure_check(tables, res.publication, "emp", prim, propagate=False)
    assert not slow.violated.any()
    assert np.array_equal(slow.pinned, res.check.pinned)


@pytest.mark.slow
def test_propagated_check_on_delaware_decides_as_the_full_lp_check():
    """DE's linked tables (7,850 cells) at random grid levels (about a tenth suppressed):
    the same violations, pinned cells, bounds and tightening with and without propagation,
    with something to find on each (violations and tightened cells)."""
    tables, prim = delaware_m1emp()
    t = tables.values("m1emp").astype(float)
    rng = np.random.default_rng(5)
    level = rng.integers(0, 5, t.size)
    level[rng.random(t.size) < 0.1] = TOP
    pub = publication_at(t, level, ladder="grid")
    violations, tightened = _same_decisions(tables, pub, level, "m1emp", prim)
    assert violations > 0 and tightened > 0


def test_the_optimizer_publishes_the_same_with_one_or_two_processes(monkeypatch):
    """Every component split (threshold lowered to 1): ``workers=2`` (a worker process
    solves one LP family) and ``workers=1`` publish the same cells."""
    from eree.suppression import linked

    monkeypatch.setattr(linked, "PARALLEL_MIN_CELLS", 1)
    tables = _three_by_three()
    prim = primary_suppression(tables, RULES, ("emp",))
    one = greedy_coarsen(tables, "emp", prim, workers=1)
    two = greedy_coarsen(tables, "emp", prim, workers=2)
    assert two.check.stats.get("parallel_components", 0) > 0
    assert np.array_equal(one.publication.status, two.publication.status)
    for name in ("value", "base", "lower", "upper"):
        a, b = getattr(one.publication, name), getattr(two.publication, name)
        assert np.array_equal(a, b, equal_nan=True)
    assert one.loss == two.loss and not two.check.violated.any()


def test_a_component_propagation_leaves_infeasible_is_solved_again_without_it():
    """DE at random grid levels (0–2, seed 41): propagation pins 3,584 cells up to
    4.5 × 10⁻⁷ off their values, and one small component's LP comes out infeasible on
    them. The check falls back to the LPs from the own intervals (counted), and decides
    as the check without propagation: the same violations, pinned cells and bounds. It
    raised "the attacker's LP failed" before."""
    tables, prim = delaware_m1emp()
    t = tables.values("m1emp").astype(float)
    level = np.random.default_rng(41).integers(0, 3, t.size)
    pub = publication_at(t, level, ladder="grid")
    fast = disclosure_check(tables, pub, "m1emp", prim)
    slow = disclosure_check(tables, pub, "m1emp", prim, propagate=False)
    assert fast.stats["propagation_fallbacks"] == 1
    assert fast.stats["inconsistent_components"] == 0
    assert np.array_equal(fast.violated, slow.violated) and fast.violated.any()
    assert np.array_equal(fast.pinned, slow.pinned)
    assert np.array_equal(fast.lower, slow.lower) and np.array_equal(fast.upper, slow.upper)
