"""The interval LP's incremental options: the component cache and the goals.

Expected bounds come from one LP per cell and side over all cells together
(``scipy.optimize.linprog``), not from the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from eree.suppression.linked import BATCH_WEIGHT_RANGE, batch_weights, linked_bounds


def _two_tables(seed: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """Two unrelated 3 × 3 tables with their margins and totals (two LP components)."""
    rng = np.random.default_rng(seed)
    blocks, values = [], []
    for _ in range(2):
        x = rng.integers(1, 9, size=(3, 3)).astype(float)
        v = np.concatenate([x.ravel(), x.sum(1), x.sum(0), [x.sum()]])
        n = v.size
        rows = []
        for i in range(3):
            r = np.zeros(n)
            r[9 + i], r[i * 3 : i * 3 + 3] = 1, -1
            rows.append(r)
            r = np.zeros(n)
            r[12 + i], r[i:9:3] = 1, -1
            rows.append(r)
        r = np.zeros(n)
        r[15], r[9:12] = 1, -1
        rows.append(r)
        blocks.append(sp.csr_matrix(np.array(rows)))
        values.append(v)
    return sp.block_diag(blocks, format="csr"), np.concatenate(values)


def _brute(rel: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = rel.shape[1]
    b = list(zip(lo, np.where(np.isinf(hi), None, hi), strict=True))
    out_lo, out_hi = np.empty(n), np.empty(n)
    for j in range(n):
        c = np.zeros(n)
        c[j] = 1
        out_lo[j] = linprog(c, A_eq=rel, b_eq=np.zeros(rel.shape[0]), bounds=b).x[j]
        r = linprog(-c, A_eq=rel, b_eq=np.zeros(rel.shape[0]), bounds=b)
        out_hi[j] = np.inf if r.status == 3 else r.x[j]
    return out_lo, out_hi


def _publish(v: np.ndarray, kind: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """0 exact, 1 suppressed, 2 rounded to 5."""
    lo, hi = v.copy(), v.copy()
    lo[kind == 1], hi[kind == 1] = 0.0, np.inf
    r = 5 * np.round(v[kind == 2] / 5)
    lo[kind == 2], hi[kind == 2] = np.maximum(0.0, r - 2.5), r + 2.5
    return lo, hi


def _same(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> bool:
    f = np.isfinite(b[1])
    return bool(
        np.allclose(a[0], b[0], atol=1e-6)
        and np.array_equal(np.isinf(a[1]), np.isinf(b[1]))
        and np.allclose(a[1][f], b[1][f], atol=1e-6)
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_cache_re_solves_only_the_component_a_step_changed(seed: int) -> None:
    rel, v = _two_tables(seed)
    rng = np.random.default_rng(seed)
    kind = np.where(rng.random(v.size) < 0.5, 2, 0)
    kind[0] = kind[16] = 2  # one rounded cell in each table: two components
    cache: dict = {}
    st: dict[str, int] = {}
    lo, hi = _publish(v, kind)
    got = linked_bounds(rel, lo, hi, truth=v, cache=cache, stats=st)
    assert _same(got, _brute(rel, lo, hi))
    assert st["components"] == 2 and st["components_reused"] == 0
    # a step in the second table only: the first table's component is reused
    kind2 = kind.copy()
    kind2[16 + np.flatnonzero(kind[16:32] == 0)[:2]] = 1
    lo2, hi2 = _publish(v, kind2)
    st2: dict[str, int] = {}
    got2 = linked_bounds(rel, lo2, hi2, truth=v, cache=cache, stats=st2)
    assert _same(got2, _brute(rel, lo2, hi2))
    assert st2["components"] == 2 and st2["components_reused"] == 1
    # the same publication again: nothing re-solved, nothing changed
    st3: dict[str, int] = {}
    assert _same(linked_bounds(rel, lo2, hi2, truth=v, cache=cache, stats=st3), got2)
    assert st3["lp"] == 0 and st3["components_reused"] == 2
    # one own upper bound in the second table moves (the same cells free): re-solved
    hi4 = hi2.copy()
    hi4[16] += 7.0
    st4: dict[str, int] = {}
    got4 = linked_bounds(rel, lo2, hi4, truth=v, cache=cache, stats=st4)
    assert _same(got4, _brute(rel, lo2, hi4))
    assert st4["components_reused"] == 1
    lo4 = lo2.copy()
    lo4[16] = max(0.0, lo4[16] - 3.0)
    assert _same(linked_bounds(rel, lo4, hi4, truth=v, cache=cache), _brute(rel, lo4, hi4))


@pytest.mark.parametrize("seed", [4, 5])
def test_goals_stop_a_bound_on_the_goals_side(seed: int) -> None:
    """With goals, a returned bound is the tightest one where that is short of the goal,
    and otherwise lies between the tightest bound and the goal."""
    rel, v = _two_tables(seed)
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, 3, size=v.size)
    lo, hi = _publish(v, kind)
    exp_lo, exp_hi = _brute(rel, lo, hi)
    g_lo = v - rng.integers(0, 4, size=v.size)
    g_hi = v + rng.integers(0, 4, size=v.size)
    st: dict[str, int] = {}
    got_lo, got_hi = linked_bounds(rel, lo, hi, truth=v, goal_lower=g_lo, goal_upper=g_hi, stats=st)
    full: dict[str, int] = {}
    linked_bounds(rel, lo, hi, truth=v, stats=full)
    short = exp_lo > g_lo + 1e-6
    assert np.allclose(got_lo[short], exp_lo[short], atol=1e-6)
    assert (got_lo[~short] <= g_lo[~short] + 1e-6).all()
    assert (got_lo >= exp_lo - 1e-6).all()
    short = exp_hi < g_hi - 1e-6
    assert np.allclose(got_hi[short], exp_hi[short], atol=1e-6)
    assert (got_hi[~short] >= g_hi[~short] - 1e-6).all()
    assert (got_hi <= exp_hi + 1e-6).all()
    assert st["lp"] <= full["lp"]


def test_an_unbounded_cell_stays_unbounded_with_the_truth_as_a_start() -> None:
    """total = a + b; the total and b withheld ([0, ∞)), a in [3, 7]: b and the total
    have no upper bound, whatever feasible point (the truth 15 = 5 + 10) is known."""
    rel = sp.csr_matrix(np.array([[1.0, -1.0, -1.0]]))
    lo = np.array([0.0, 3.0, 0.0])
    hi = np.array([np.inf, 7.0, np.inf])
    for kw in ({}, {"cache": {}}, {"goal_lower": np.full(3, -np.inf)}):
        got_lo, got_hi = linked_bounds(rel, lo, hi, truth=np.array([15.0, 5.0, 10.0]), **kw)
        assert got_lo.tolist() == [3.0, 3.0, 0.0]
        assert got_hi[1] == 7.0 and np.isinf(got_hi[0]) and np.isinf(got_hi[2])


def test_binding_cells_are_the_bounds_that_hold_the_optimum():
    """T = A + B with T published exactly (10), B in [7, 9], A in [0, 9], and B = D + E
    with D, E in [0, 20]. max A = 10 − 7 = 3 is held by T and by B's lower end; min A =
    10 − 9 = 1 by T and B's upper end. D and E (inside their intervals at any optimum)
    hold neither."""
    from eree.suppression.linked import binding_cells

    # cells: T A B D E
    rel = sp.csr_matrix(np.array([[-1.0, 1, 1, 0, 0], [0, 0, -1, 1, 1]]))
    lo = np.array([10.0, 0, 7, 0, 0])
    hi = np.array([10.0, 9, 9, 20, 20])
    up, down = binding_cells(rel, lo, hi, np.array([1, 1]), np.array([1.0, -1.0]))
    assert sorted(up.tolist()) == [0, 2]
    assert sorted(down.tolist()) == [0, 2]
    # widen B's lower end, which held the max: the max moves (3 → 5); widening D does not
    lo2 = lo.copy()
    lo2[2] = 5.0
    assert linked_bounds(rel, lo2, hi)[1][1] == pytest.approx(5.0)
    hi3 = hi.copy()
    hi3[3] = 40.0
    assert linked_bounds(rel, lo, hi3)[1][1] == pytest.approx(3.0)


@pytest.mark.parametrize("seed", [6, 7, 8, 9])
def test_propagated_intervals_hold_every_feasible_point_and_narrow_some(seed: int) -> None:
    """Interval propagation may only narrow an own interval to what every feasible point
    satisfies: each propagated interval contains the attacker's exact one (one LP per cell
    and side, ``linprog``); and it does narrow some (the test's power)."""
    from eree.suppression.linked import propagate_bounds

    rel, v = _two_tables(seed)
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, 3, size=v.size)
    lo, hi = _publish(v, kind)
    exp_lo, exp_hi = _brute(rel, lo, hi)
    p_lo, p_hi, ok = propagate_bounds(rel, lo, hi)
    assert ok
    assert (p_lo <= exp_lo + 1e-9).all() and (p_hi >= exp_hi - 1e-9).all()
    assert (p_lo >= lo).all() and (p_hi <= hi).all()
    assert ((p_lo > lo + 0.5) | (p_hi < hi - 0.5)).any()


def test_propagation_known_answer() -> None:
    """A = AX + AY with A published exactly (18), AY in [10, 14], AX in [0, ∞): AX lies in
    [18 − 14, 18 − 10] = [4, 8]; T = A + B with B withheld ([0, ∞)) and T in [20, 25]
    gives B in [2, 7]. Inconsistent intervals (AY in [19, 20]) are reported."""
    from eree.suppression.linked import propagate_bounds

    # cells: A AX AY T B
    rel = sp.csr_matrix(np.array([[-1.0, 1, 1, 0, 0], [1.0, 0, 0, -1, 1]]))
    lo = np.array([18.0, 0, 10, 20, 0])
    hi = np.array([18.0, np.inf, 14, 25, np.inf])
    p_lo, p_hi, ok = propagate_bounds(rel, lo, hi)
    assert ok
    assert np.allclose(p_lo, [18, 4, 10, 20, 2]) and np.allclose(p_hi, [18, 8, 14, 25, 7])
    lo2 = lo.copy()
    lo2[2], hi2 = 19.0, hi.copy()
    hi2[2] = 20.0
    assert propagate_bounds(rel, lo2, hi2)[2] is False


@pytest.mark.parametrize("seed", [6, 7, 8, 9])
def test_linked_bounds_with_propagation_are_the_attackers_bounds(seed: int) -> None:
    """The same bounds with and without propagation, both equal to ``linprog``'s; with
    goals, each bound short of its goal is the tightest (propagation changes no verdict)."""
    rel, v = _two_tables(seed)
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, 3, size=v.size)
    lo, hi = _publish(v, kind)
    exp = _brute(rel, lo, hi)
    st: dict[str, int] = {}
    assert _same(linked_bounds(rel, lo, hi, truth=v, propagate=True, stats=st), exp)
    assert _same(linked_bounds(rel, lo, hi, propagate=True), exp)
    g_lo = v - rng.integers(0, 4, size=v.size)
    g_hi = v + rng.integers(0, 4, size=v.size)
    got_lo, got_hi = linked_bounds(
        rel, lo, hi, truth=v, goal_lower=g_lo, goal_upper=g_hi, propagate=True
    )
    short = exp[0] > g_lo + 1e-6
    assert np.allclose(got_lo[short], exp[0][short], atol=1e-6)
    assert (got_lo[~short] <= g_lo[~short] + 1e-6).all() and (got_lo >= exp[0] - 1e-6).all()
    short = exp[1] < g_hi - 1e-6
    assert np.allclose(got_hi[short], exp[1][short], atol=1e-6)
    assert (got_hi[~short] >= g_hi[~short] - 1e-6).all() and (got_hi <= exp[1] + 1e-6).all()


@pytest.mark.parametrize("seed", [6, 7])
def test_two_processes_give_the_bounds_and_binding_cells_of_one(seed, monkeypatch) -> None:
    """Every component split into its two LP families (the threshold lowered to 1): with a
    worker process and without, the bounds are ``linprog``'s and the cells holding each
    optimum are the same; the worker was used."""
    from eree.suppression import linked

    monkeypatch.setattr(linked, "PARALLEL_MIN_CELLS", 1)
    rel, v = _two_tables(seed)
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, 3, size=v.size)
    lo, hi = _publish(v, kind)
    exp = _brute(rel, lo, hi)
    cells = np.flatnonzero(kind == 1)[:4]
    sides = np.where(np.arange(cells.size) % 2 == 0, 1.0, -1.0)
    alone = linked.binding_cells(rel, lo, hi, cells, sides)
    with linked.lp_pool(2) as pool:
        st: dict[str, int] = {}
        got = linked_bounds(rel, lo, hi, truth=v, stats=st, pool=pool, propagate=True)
        held = linked.binding_cells(rel, lo, hi, cells, sides, pool=pool)
    assert _same(got, exp)
    assert _same(linked_bounds(rel, lo, hi, truth=v, propagate=True), exp)
    assert st["parallel_components"] == st["components"] > 0
    assert [h.tolist() for h in held] == [h.tolist() for h in alone]


def _holders_all_columns(
    rel: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray, k: int, side: float
) -> np.ndarray | None:
    """The cells with a non-zero reduced cost at the optimum of max/min ``x[k]``, every
    cell a column (exact ones with equal bounds): ``linprog`` (HiGHS), not the code under
    test."""
    n = rel.shape[1]
    c = np.zeros(n)
    c[k] = -1.0 if side > 0 else 1.0
    b = list(zip(lo, np.where(np.isinf(hi), None, hi), strict=True))
    r = linprog(c, A_eq=rel, b_eq=np.zeros(rel.shape[0]), bounds=b, method="highs")
    if r.status != 0:
        return None
    rc = np.asarray(r.lower.marginals) + np.asarray(r.upper.marginals)
    hold = np.abs(rc) > 1e-9
    hold[k] = False
    return np.flatnonzero(hold)


def _same_holders_as_linprog(rel, lo, hi, cells, sides, got) -> None:  # type: ignore[no-untyped-def]
    """Each ``got[i]`` is ``linprog``'s cells holding the bound of ``cells[i]`` on
    ``sides[i]`` (:func:`_holders_all_columns`); empty where that LP has no optimum."""
    for k, side, held in zip(cells, sides, got, strict=True):
        exp = _holders_all_columns(rel, lo, hi, int(k), float(side))
        if exp is None:
            assert held.size == 0
            continue
        assert held.tolist() == exp.tolist()


@pytest.mark.parametrize("lp_path", ["warm", "linprog"])
@pytest.mark.parametrize("seed", range(8))
def test_binding_cells_without_exact_columns_are_those_of_the_lp_with_every_cell(
    seed: int, lp_path: str, monkeypatch
) -> None:
    """``binding_cells`` solves over the cells not published exactly and prices the exact
    ones from the row duals (``−aⱼᵀy``). On generic data (values and interval ends drawn
    from a continuous law, so every optimum is non-degenerate and its duals unique) the
    cells returned are those of the LP with every cell a column — exact cells included,
    which hold most optima. Power: some exact cell is among them in every seed."""
    from eree.suppression.linked import binding_cells

    if lp_path == "linprog":
        monkeypatch.setenv("EREE_LP", "linprog")
    rng = np.random.default_rng(100 + seed)
    rel, v = _two_tables(seed)
    v = v + 0.0
    x = rng.uniform(1.0, 9.0, size=(2, 3, 3))
    for t in range(2):  # continuous values, the same relations
        vt = np.concatenate([x[t].ravel(), x[t].sum(1), x[t].sum(0), [x[t].sum()]])
        v[16 * t : 16 * (t + 1)] = vt
    kind = rng.integers(0, 3, size=v.size)
    lo, hi = v.copy(), v.copy()
    w = rng.uniform(0.5, 3.0, size=v.size)
    lo[kind == 1], hi[kind == 1] = 0.0, np.inf
    lo[kind == 2] = np.maximum(0.0, v[kind == 2] - w[kind == 2] * rng.uniform(0.2, 0.8))
    hi[kind == 2] = v[kind == 2] + w[kind == 2]
    cells = np.flatnonzero(kind != 0)
    sides = np.where(np.arange(cells.size) % 2 == 0, 1.0, -1.0)
    got = binding_cells(rel, lo, hi, cells, sides)
    _same_holders_as_linprog(rel, lo, hi, cells, sides, got)
    assert any((kind[held] == 0).any() for held in got)


@pytest.mark.parametrize("with_pool", [False, True])
@pytest.mark.parametrize("seed", [8, 9])
def test_a_remembered_basis_moves_where_the_lps_start_not_the_bounds(
    seed: int, with_pool: bool, monkeypatch
) -> None:
    """An optimizer's checks of publications a few steps apart, with a ``BasisMemory``
    (every component counted large: the threshold lowered to 1). Each check's bounds are
    ``linprog``'s, one LP per cell and side; from the second check on the LPs start from
    the kept bases, which HiGHS takes (``warm_starts``), also across a change of the
    components' cells (a cell published exactly, then rounded). A memory never consulted
    (``BasisMemory.start`` always None) fails the count."""
    from eree.suppression import linked

    monkeypatch.setattr(linked, "PARALLEL_MIN_CELLS", 1)
    rel, v = _two_tables(seed)
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, 3, size=v.size)
    memory = linked.BasisMemory(v.size, rel.shape[0])
    starts = []
    with linked.lp_pool(2 if with_pool else 1) as pool:
        for step in range(5):
            lo, hi = _publish(v, kind)
            st: dict[str, int] = {}
            got = linked_bounds(rel, lo, hi, truth=v, stats=st, memory=memory, pool=pool)
            assert _same(got, _brute(rel, lo, hi)), step
            starts.append(st["warm_starts"])
            # the next publication: two cells move (exact → rounded → suppressed → exact)
            for j in rng.choice(v.size, size=2, replace=False):
                kind[j] = (kind[j] + 1) % 3
    assert starts[0] == 0 and all(s > 0 for s in starts[1:])


@pytest.mark.parametrize("seed", range(4))
def test_binding_cells_from_a_remembered_basis_are_those_of_the_lp_with_every_cell(
    seed: int, monkeypatch
) -> None:
    """The binding cells' LPs started from a ``BasisMemory`` filled by a check of a
    nearby publication: on generic data (unique, non-degenerate optima) the cells
    returned are still those of the LP with every cell a column (``linprog``)."""
    from eree.suppression import linked

    monkeypatch.setattr(linked, "PARALLEL_MIN_CELLS", 1)
    rng = np.random.default_rng(200 + seed)
    rel, v = _two_tables(seed)
    x = rng.uniform(1.0, 9.0, size=(2, 3, 3))
    for t in range(2):
        v[16 * t : 16 * (t + 1)] = np.concatenate(
            [x[t].ravel(), x[t].sum(1), x[t].sum(0), [x[t].sum()]]
        )
    kind = rng.integers(0, 3, size=v.size)
    w = rng.uniform(0.5, 3.0, size=v.size)

    def intervals(kd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = v.copy(), v.copy()
        lo[kd == 1], hi[kd == 1] = 0.0, np.inf
        lo[kd == 2] = np.maximum(0.0, v[kd == 2] - w[kd == 2] * 0.4)
        hi[kd == 2] = v[kd == 2] + w[kd == 2]
        return lo, hi

    memory = linked.BasisMemory(v.size, rel.shape[0])
    before = kind.copy()
    before[rng.choice(v.size, size=3, replace=False)] = 0
    st: dict[str, int] = {}
    linked_bounds(rel, *intervals(before), truth=v, memory=memory, stats=st)
    lo, hi = intervals(kind)
    cells = np.flatnonzero(kind != 0)
    sides = np.where(np.arange(cells.size) % 2 == 0, 1.0, -1.0)
    got = linked.binding_cells(rel, lo, hi, cells, sides, memory=memory)
    _same_holders_as_linprog(rel, lo, hi, cells, sides, got)


def test_a_batch_settles_cells_of_every_magnitude() -> None:
    """A total ``T = B + s_1 + … + s_50`` published in ``[0, 10⁶ + 5]``, a large cell ``B``
    shown again as ``U = B`` in another table (both published in ``[0, 2·10⁶]``) and fifty
    small cells ``s_i ∈ [0, 10]``; the truth ``B = 5·10⁵``, ``s_i = 1``. The maxima trade
    off (``B + Σ s_i ≤ 10⁶ + 5``): max ``s_i`` = 10, max ``B`` = max ``U`` = 10⁶ + 5 (short
    of their own 2·10⁶: each needs an LP of its own), max ``T`` = 10⁶ + 5; every minimum
    is 0.

    Weighted by the inverse of each cell's gap (``batch_weights``), the first batch of
    maxima values a unit of ``s_i`` (gap 9) about 3·10⁴ times one of ``B``: its unique
    optimum puts every ``s_i`` at 10 and ``T`` at its top; the second (``B``, ``U``)
    settles nothing, and ``B``, ``U`` get one LP each; one batch settles every minimum:
    5 LPs, 3 of them batches. The unweighted sum is ``3B + 2Σ s_i``: its unique optimum
    leaves every ``s_i`` at 0, twice, and each small cell needs an LP of its own (55 LPs).
    """
    m = 50
    n = m + 3
    rel = np.zeros((2, n))
    rel[0, 0], rel[0, 1], rel[0, 3:] = 1.0, -1.0, -1.0  # T = B + Σ s_i
    rel[1, 2], rel[1, 1] = 1.0, -1.0  # U = B
    lower = np.zeros(n)
    upper = np.concatenate([[1e6 + 5, 2e6, 2e6], np.full(m, 10.0)])
    truth = np.concatenate([[5e5 + m, 5e5, 5e5], np.ones(m)])
    st: dict[str, int] = {}
    lo, hi = linked_bounds(sp.csr_matrix(rel), lower, upper, truth=truth, stats=st)
    assert np.allclose(hi, np.concatenate([[1e6 + 5] * 3, np.full(m, 10.0)]))
    assert np.allclose(lo, 0.0)
    assert (st["lp"], st["batch_lp"]) == (5, 3)


def test_batch_weights_are_the_inverse_gaps_scaled_to_one() -> None:
    """Weights ∝ 1/gap, the largest 1, the same in any unit; a gap below
    ``BATCH_WEIGHT_RANGE`` of the largest counts as that much; a cell no point has met
    (gap ``inf``) weighs as the largest gap; no finite gap at all: every weight 1."""
    gap = np.array([2.0, 8.0, 4.0, 1e-9, np.inf])
    w = batch_weights(gap)
    floor = BATCH_WEIGHT_RANGE * 8.0
    assert np.allclose(w, floor / np.array([2.0, 8.0, 4.0, floor, 8.0]))
    assert w.max() == 1.0
    assert np.allclose(batch_weights(gap * 1e6), w)  # dollars or thousands: the same LP
    assert np.array_equal(batch_weights(np.array([np.inf, np.inf])), np.ones(2))
