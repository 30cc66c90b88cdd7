"""Coarsening: rounding, ranges, the LP disclosure check and the greedy optimizer.

Known answers are worked out by hand on a 2 × 2 table with its margins (docstrings).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from eree.evaluate.reconstruct import from_frame, interval_audit
from eree.suppression import PrimaryRules, primary_suppression
from eree.suppression.coarsening import (
    BASES,
    Publication,
    cell_loss,
    disclosure_check,
    greedy_coarsen,
    random_round,
    round_to_base,
    rounding_rng,
    size_class,
)
from eree.suppression.coarsening.optimize import GRID_BASES, publication_at, tighten
from eree.suppression.linked import linked_bounds
from eree.suppression.tables import Dimension, TableLayout, tabulate

RULES = PrimaryRules(threshold=3, dominance_k=None, p_percent=10.0)


def _two_by_two(ax: float = 6.0) -> pl.DataFrame:
    """AX: one establishment (value ``ax``); AY, BX, BY: four establishments of 3 each."""
    rows = [("A", "X", ax)]
    for r, c in (("A", "Y"), ("B", "X"), ("B", "Y")):
        rows += [(r, c, 3.0)] * 4
    return pl.DataFrame(rows, schema=["r", "c", "emp"], orient="row")


def _tables(frame: pl.DataFrame):
    dims = tuple(Dimension(d, (("total", None), (d, d))) for d in ("r", "c"))
    layout = TableLayout(dims, (("total", "total"), ("r", "total"), ("total", "c"), ("r", "c")))
    return tabulate(frame, layout, ["emp"], top=2)


def _cell(tables, r: str, c: str) -> int:
    cells = tables.cells.with_row_index("_i")
    return int(cells.filter((pl.col("r") == r) & (pl.col("c") == c))["_i"][0])


def test_rounding_to_base_is_the_nearest_multiple():
    assert round_to_base(np.array([0, 2, 3, 7, 12, 18, 42]), 5).tolist() == [
        0,
        0,
        5,
        5,
        10,
        20,
        40,
    ]
    with pytest.raises(ValueError):
        round_to_base(np.array([1.0]), 0)


def test_random_rounding_is_unbiased_and_has_the_power_to_see_a_bias():
    """T = 7, b = 5: 10 w.p. 2/5, else 5; mean 7, sd of one draw √(2·3) = 2.449."""
    n = 40_000
    draws = random_round(np.full(n, 7.0), 5.0, rounding_rng(11))
    assert set(np.unique(draws).tolist()) == {5.0, 10.0}
    se = np.sqrt(2.0 * 3.0) / np.sqrt(n)
    assert abs(draws.mean() - 7.0) < 4 * se
    # a rounding whose up-probability were 30% off would move the mean by 0.3·2 = 0.6
    assert 40 * se < 0.6


def test_size_classes_hold_their_values():
    lo, hi = size_class(np.array([0, 3, 9, 10, 260, 1200]))
    assert lo.tolist() == [0, 1, 5, 10, 250, 1000]
    assert hi.tolist() == [0, 4, 9, 19, 499, 2499]


def test_the_lp_undoes_rounding_to_base_5_of_overlapping_totals():
    """Every cell rounded to base 5. AX = 6 is one establishment (threshold rule), U = 1
    (p% 0.6, threshold 10% of 6, at least 1): it needs [5, 7]. Its own interval is
    5 ± 2.5 → [3, 7], which covers; but row A = 18 → 20 gives A ≥ 18 (whole numbers) and
    AY = 12 → 10 gives AY ≤ 12, so AX = A − AY ≥ 6: the attacker's interval is [6, 7]
    and the check must flag AX (cell by cell it would pass).
    """
    tables = _tables(_two_by_two())
    prim = primary_suppression(tables, RULES, ("emp",))
    ax = _cell(tables, "A", "X")
    assert np.flatnonzero(prim.primary).tolist() == [ax]
    assert prim.protection["emp"][ax] == pytest.approx(1.0)
    t = tables.values("emp").astype(float)
    pub = publication_at(t, np.ones(t.size, dtype=np.int64))
    assert BASES[0] == 5.0
    own_lo, own_hi = pub.own_bounds()
    assert (own_lo[ax], own_hi[ax]) == (3.0, 7.0)
    chk = disclosure_check(tables, pub, "emp", prim)
    assert (chk.lower[ax], chk.upper[ax]) == (6.0, 7.0)
    assert chk.violated.tolist() == [i == ax for i in range(t.size)]
    # the same bounds without the true values as a starting point
    chk2 = disclosure_check(tables, pub, "emp", prim, use_truth=False)
    assert (chk2.lower[ax], chk2.upper[ax]) == (6.0, 7.0)


def _audit_independently(tables, pub: Publication, prim) -> int:
    """Violations by the reconstruction audit's reader and LP (evaluate/), protection by hand."""
    frame = pub.to_frame(tables, "emp").drop("attribute")
    res = interval_audit(from_frame(frame, relations=tables.relations, integer=True))
    t = tables.values("emp").astype(float)
    u = prim.protection["emp"]
    ok = (res.lower <= t - np.minimum(u, t) + 1e-9) & (res.upper >= t + u - 1e-9)
    return int((prim.primary & ~ok).sum())


@pytest.mark.parametrize("rounding", ["deterministic", "random"])
def test_the_optimizer_publishes_every_cell_and_passes_the_audit(rounding):
    tables = _tables(_two_by_two())
    prim = primary_suppression(tables, RULES, ("emp",))
    res = greedy_coarsen(tables, "emp", prim, rounding=rounding, seed=3)
    s = res.summary()
    assert s["audit"]["violations"] == 0
    assert _audit_independently(tables, res.publication, prim) == 0
    # suppression would withhold AX and at least three more cells (a 2 × 2 rectangle):
    # coarsening publishes all nine
    assert s["cells_published"] == tables.n_cells == 9
    assert 0 < s["information_loss"] < 1
    assert s["seeded"] is True


def test_a_weakened_coarsening_is_flagged():
    """The optimizer's output with every cell but AX put back to exact: AX = total − the
    others is pinned, whatever AX's own rounding."""
    tables = _tables(_two_by_two())
    prim = primary_suppression(tables, RULES, ("emp",))
    res = greedy_coarsen(tables, "emp", prim)
    ax = _cell(tables, "A", "X")
    t = tables.values("emp").astype(float)
    p = res.publication
    assert p.status[ax] != "exact"
    keep = np.arange(t.size) == ax
    weak = Publication(
        np.where(keep, p.status, "exact").astype("<U16"),
        np.where(keep, p.value, t),
        np.where(keep, p.base, np.nan),
        np.where(keep, p.lower, np.nan),
        np.where(keep, p.upper, np.nan),
        p.integer,
    )
    chk = disclosure_check(tables, weak, "emp", prim)
    assert chk.violated[ax]
    assert chk.lower[ax] == chk.upper[ax] == 6.0
    assert _audit_independently(tables, weak, prim) == 1


def test_information_loss_is_the_relative_interval_width():
    t = np.array([10.0, 10.0, 10.0, 0.0])
    pub = publication_at(t, np.array([0, 1, len(BASES) + 1, 1]))
    # exact 0; base 5 → [7.5, 12.5] → whole numbers [8, 12], width 4 → 0.4; suppressed 1;
    # 0 rounded to 0 → [0, 2], width 2 / max(0, 1) capped at 1
    assert cell_loss(pub, t).tolist() == pytest.approx([0.0, 0.4, 1.0, 1.0])


def test_the_last_resort_is_complementary_suppression_and_passes():
    """Stopped after its first check, the optimizer falls back on suppression: AX and its
    complements. With the margins exact, a 2 × 2 table protects AX only by withholding a
    rectangle: AX, AY, BX, BY (4 cells), or cells of the margins with them."""
    tables = _tables(_two_by_two())
    prim = primary_suppression(tables, RULES, ("emp",))
    res = greedy_coarsen(tables, "emp", prim, max_rounds=1)
    s = res.summary()
    assert s["audit"]["violations"] == 0
    assert _audit_independently(tables, res.publication, prim) == 0
    assert s["suppressed_as_last_resort"] >= 4
    assert s["by_status"]["suppressed"] >= 4
    assert res.publication.status[_cell(tables, "A", "X")] == "suppressed"


def test_tightening_publishes_a_cell_pinned_by_the_others_exactly():
    """AX rounded, every other cell exact: AX = A − AY = 18 − 12 = 6 whatever its own
    rounding, so the attacker's interval is [6, 6]. Publishing AX exactly adds nothing
    to what he knows: tighten makes it exact and leaves the other cells as they were."""
    tables = _tables(_two_by_two())
    prim = primary_suppression(tables, RULES, ("emp",))
    ax = _cell(tables, "A", "X")
    t = tables.values("emp").astype(float)
    level = np.zeros(t.size, dtype=np.int64)
    level[ax] = 2  # base 10: 10 ± 5 → [5, 15]
    weak = publication_at(t, level)
    chk = disclosure_check(tables, weak, "emp", prim)
    assert (chk.lower[ax], chk.upper[ax]) == (6.0, 6.0)
    lo, hi = linked_bounds(tables.relations, *weak.own_bounds(), truth=t)
    out, finer = tighten(weak, t, level, lo, hi)
    assert finer.tolist() == [i == ax for i in range(t.size)]
    assert out.status[ax] == "exact" and out.value[ax] == 6.0
    assert (out.status == "exact").all()


@pytest.mark.parametrize("rounding", ["deterministic", "random"])
def test_tightening_leaves_the_attackers_bounds_unchanged(rounding):
    """(Tighten itself is checked on the deterministic publication; the random one runs
    through the optimizer, whose draws stay inside it.)"""
    """Each new own interval contains what the tables already imply, so every cell's LP
    interval — and the check — is the same before and after; only the loss falls."""
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
    tables = _tables(frame)
    prim = primary_suppression(tables, RULES, ("emp",))
    assert prim.primary.any()
    res = greedy_coarsen(tables, "emp", prim, seed=5, tightening=False)
    t = tables.values("emp").astype(float)
    p = res.publication
    lo, hi = linked_bounds(tables.relations, *p.own_bounds(), truth=t)
    # the optimizer's deterministic ladder is the grid (nested ranges of GRID_BASES)
    level = np.array(
        [
            0
            if s == "exact"
            else len(GRID_BASES) + 1
            if s == "suppressed"
            else 1 + GRID_BASES.index(b)
            for s, b in zip(p.status, np.nan_to_num(p.base), strict=True)
        ]
    )
    assert np.array_equal(publication_at(t, level, ladder="grid").status, p.status)
    out, finer = tighten(p, t, level, lo, hi, ladder="grid")
    lo2, hi2 = linked_bounds(tables.relations, *out.own_bounds(), truth=t)
    assert np.allclose(lo2, lo) and np.array_equal(np.isinf(hi2), np.isinf(hi))
    f = np.isfinite(hi)
    assert np.allclose(hi2[f], hi[f])
    w0 = np.subtract(*p.own_bounds()[::-1])
    w1 = np.subtract(*out.own_bounds()[::-1])
    assert finer.any()
    assert (w1[finer] < w0[finer]).all()
    assert np.array_equal(w1[~finer], w0[~finer])
    assert (cell_loss(out, t) <= cell_loss(p, t)).all()
    assert not disclosure_check(tables, out, "emp", prim).violated.any()
    full = greedy_coarsen(tables, "emp", prim, rounding=rounding, seed=5)
    assert full.summary()["audit"]["violations"] == 0
    assert _audit_independently(tables, full.publication, prim) == 0
    if rounding == "deterministic":
        assert full.tightened == int(finer.sum())
        assert full.loss == pytest.approx(float(cell_loss(out, t).mean()))


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
    return _tables(frame)


@pytest.mark.parametrize("level", [0, 1, 2])
def test_the_optimizers_rounds_never_miss_a_violation(level):
    """The rounds' check (goals, batches, violations unproven) may count a covered cell
    as violated, never the reverse: its violations contain the full check's. Level 0:
    the 2 × 2 table all rounded to base 5, where only the LP finds AX (known answer
    above); else a 3 × 3 table at random levels."""
    tables = _tables(_two_by_two()) if level == 0 else _three_by_three()
    prim = primary_suppression(tables, RULES, ("emp",))
    t = tables.values("emp").astype(float)
    rng = np.random.default_rng(level)
    lv = np.ones(t.size, dtype=np.int64) if level == 0 else rng.integers(0, level + 1, t.size)
    pub = publication_at(t, lv)
    full = disclosure_check(tables, pub, "emp", prim)
    assert full.violated.any()  # the test has something to find
    for prove in (True, False):
        fast = disclosure_check(tables, pub, "emp", prim, sensitive_only=True, prove=prove)
        assert not (full.violated & ~fast.violated).any()
        if prove:  # proven: the same verdict
            assert np.array_equal(fast.violated, full.violated)


def test_tighten_keeps_an_interval_only_if_it_holds_the_implied_one():
    """T = 40 rounded to 50: [25, 75]. Implied [36, 44]: base 10 (40 → [35, 45]) holds it
    and is the narrowest (base 5 → [38, 42] does not, the size class [20, 49] is wider).
    Implied [30, 60]: base 10 and 25 (50 → [38, 62]) and the class [20, 49] miss a side;
    it stays at 50. Implied [25, 45]: only the class [20, 49] (width 29 < 50) holds it."""
    t = np.array([40.0])
    level = np.array([1 + BASES.index(50.0)])
    pub = publication_at(t, level)
    out, finer = tighten(pub, t, level, np.array([36.0]), np.array([44.0]))
    assert finer.tolist() == [True] and out.status[0] == "rounded" and out.base[0] == 10.0
    out, finer = tighten(pub, t, level, np.array([30.0]), np.array([60.0]))
    assert finer.tolist() == [False] and out.base[0] == 50.0
    # [36, 60]: base 10 holds the lower side only, base 25 the upper only
    out, finer = tighten(pub, t, level, np.array([36.0]), np.array([60.0]))
    assert finer.tolist() == [False] and out.base[0] == 50.0
    out, finer = tighten(pub, t, level, np.array([25.0]), np.array([45.0]))
    assert finer.tolist() == [True] and out.status[0] == "range"
    assert (out.lower[0], out.upper[0]) == (20.0, 49.0)


def test_the_verdict_only_final_check_passes_the_full_check_and_the_audit():
    """With ``full_check=False`` the optimizer's last check is the proven verdict (no
    bounds): its publication must pass the full check and the reconstruction audit."""
    tables = _three_by_three()
    prim = primary_suppression(tables, RULES, ("emp",))
    res = greedy_coarsen(tables, "emp", prim, full_check=False)
    assert res.summary()["final_check"].startswith("verdict")
    assert res.tightened == 0
    assert not disclosure_check(tables, res.publication, "emp", prim).violated.any()
    assert _audit_independently(tables, res.publication, prim) == 0


def _audit_pinned(tables, pub: Publication) -> np.ndarray:
    """Cells pinned in ``pub`` by the reconstruction audit's own reader and LP: interval one
    point, not published exactly."""
    frame = pub.to_frame(tables, "emp").drop("attribute")
    audit = interval_audit(from_frame(frame, relations=tables.relations, integer=True))
    return (audit.upper - audit.lower <= 1e-9) & (pub.status != "exact")


def test_the_tightened_publication_states_its_own_check(monkeypatch):
    """The result's check is that of the publication it returns, not of the one before
    tightening (the two feasible sets may differ by the LP's tolerance, and a cell
    tightened to exact is no longer counted pinned). Made to differ here: ``tighten``
    returns a publication of the 2 × 2 table built by hand — the four inner cells
    suppressed, the margins exact and the total T published as its grid range [40, 44]
    though A + B = 42 pins it — which passes the rules (AX ∈ [0, 18]) and pins exactly T.
    The optimizer's own passing publication pins none. The tightened publication's own
    check finds T pinned, so T is published exactly (its range hid nothing) and checked
    again: the publication returned is the hand-made one with T exact, and what it
    states — no cell pinned, no violation — is the audit's on it. Without that last
    step the hand-made publication would be returned with T pinned."""
    from eree.suppression.coarsening import optimize

    tables = _tables(_two_by_two())
    prim = primary_suppression(tables, RULES, ("emp",))
    t = tables.values("emp").astype(float)
    inner = [_cell(tables, r, c) for r in "AB" for c in "XY"]
    total = _cell(tables, "total", "total")
    level = np.zeros(t.size, dtype=np.int64)
    level[inner] = len(GRID_BASES) + 1  # suppressed
    level[total] = 1  # base 5: [40, 44]
    by_hand = publication_at(t, level, ladder="grid")

    def fake_tighten(publication, *args, **kwargs):
        return by_hand, np.ones(t.size, dtype=bool)

    plain = greedy_coarsen(tables, "emp", prim, tightening=False)
    assert not plain.check.pinned.any()
    monkeypatch.setattr(optimize, "tighten", fake_tighten)
    res = greedy_coarsen(tables, "emp", prim)
    assert np.flatnonzero(_audit_pinned(tables, by_hand)).tolist() == [total]
    pub = res.publication
    assert pub.status[total] == "exact" and pub.value[total] == t[total] == 42
    others = np.arange(t.size) != total
    assert np.array_equal(pub.status[others], by_hand.status[others])
    assert np.array_equal(pub.value[others], by_hand.value[others], equal_nan=True)
    pinned = _audit_pinned(tables, pub)
    assert not pinned.any() and np.array_equal(res.check.pinned, pinned)
    assert res.summary()["audit"]["cells_pinned"] == 0
    assert not res.check.violated.any() and _audit_independently(tables, pub, prim) == 0


def test_the_optimizers_stated_pinned_cells_are_the_audits():
    """Without any substitution: the pinned cells the optimizer states for the
    publication it returns are those the reconstruction audit finds in it."""
    tables = _three_by_three()
    prim = primary_suppression(tables, RULES, ("emp",))
    res = greedy_coarsen(tables, "emp", prim)
    assert np.array_equal(res.check.pinned, _audit_pinned(tables, res.publication))
    assert res.summary()["audit"]["cells_pinned"] == int(res.check.pinned.sum())


def test_tighten_cuts_no_whole_number_off_a_large_cells_implied_interval():
    """T = 10⁷ rounded to 100: [9,999,950, 10,000,050]. Implied [L, U] with L three whole
    numbers below base 10's interval [9,999,995, 10,000,005]: publishing base 10 (or
    exact) would tell the attacker that 9,999,992–9,999,994 are impossible, which the
    tables do not; the narrowest interval that holds [L, U] is base 25's. An implied L
    0.004 below base 10's end is the same interval up to the LP's own error (10⁻⁹ of
    10⁷ = 0.01: HiGHS's feasibility tolerance 10⁻⁷ on a model scaled to 10³, ten terms):
    base 10 is kept."""
    t = np.array([1e7])
    level = np.array([1 + BASES.index(100.0)])
    pub = publication_at(t, level)
    b10_lo = 9_999_995.0
    out, finer = tighten(pub, t, level, np.array([b10_lo - 3.0]), np.array([10_000_004.0]))
    assert finer.tolist() == [True] and out.status[0] == "rounded" and out.base[0] == 25.0
    lo, hi = out.own_bounds()
    assert lo[0] <= b10_lo - 3.0 and hi[0] >= 10_000_004.0
    out, finer = tighten(pub, t, level, np.array([b10_lo - 0.004]), np.array([10_000_004.0]))
    assert finer.tolist() == [True] and out.status[0] == "rounded" and out.base[0] == 10.0
