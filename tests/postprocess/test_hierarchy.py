"""Publication-grade post-processing on a tree of marginals (docs/design.md#post-processing).

Expectations come from the mathematics: the equality-constrained weighted least squares
solution computed densely from its KKT system on a tiny tree, the non-negative projection
checked against its KKT conditions, and the rounding checked against its definition.
"""

import numpy as np
import pytest

from eree.postprocess.hierarchy import (
    HierarchyError,
    MarginalInput,
    marginal_forest,
    publication_grade,
    refines,
)


def test_refinement_follows_attributes_and_geography():
    assert refines(["tract", "sex"], ["county"])  # tract determines county
    assert refines(["county", "age", "sex"], ["county", "sex"])
    assert refines(["block"], ["state"])
    assert not refines(["county"], ["tract"])  # coarser never refines finer
    assert not refines(["county", "sex"], ["county", "age"])
    assert not refines(["county", "sex"], ["sex", "county"])  # the same marginal
    assert not refines(["naics_sector", "sex"], ["county"])


def test_forest_picks_the_closest_coarser_marginal():
    parents = marginal_forest({
        "c": ["county"],
        "ci": ["county", "naics_sector"],
        "tio": ["tract", "naics_sector", "ownership"],
        "tio_age": ["tract", "naics_sector", "ownership", "age"],
        "cs": ["county", "sex"],
    })  # fmt: skip
    assert parents == {"c": None, "ci": "c", "tio": "ci", "tio_age": "tio", "cs": "c"}


def test_a_lattice_is_refused():
    with pytest.raises(HierarchyError, match="refines both"):
        marginal_forest({"cs": ["county", "sex"], "ca": ["county", "age"],
                         "cas": ["county", "age", "sex"]})  # fmt: skip
    with pytest.raises(HierarchyError, match="same marginal"):
        marginal_forest({"a": ["county", "sex"], "b": ["sex", "county"]})


def _tree(rng, n_root=4, k1=3, k2=2, k3=4):
    """A root marginal with two child marginals (k1- and k3-way), the first with a child."""
    root = MarginalInput("root", rng.normal(50, 5, n_root), rng.uniform(1, 4, n_root))
    i1 = np.repeat(np.arange(n_root), k1)
    a = MarginalInput("a", rng.normal(15, 5, i1.size), rng.uniform(1, 4, i1.size), "root", i1)
    i2 = np.repeat(np.arange(i1.size), k2)
    b = MarginalInput("b", rng.normal(7, 5, i2.size), rng.uniform(1, 4, i2.size), "a", i2)
    i3 = np.repeat(np.arange(n_root), k3)
    c = MarginalInput("c", rng.normal(12, 5, i3.size), rng.uniform(1, 4, i3.size), "root", i3)
    return [root, a, b, c]


def _dense_gls(ms):
    """argmin Σ (x−y)²/v s.t. parent = Σ children, from the dense KKT system."""
    names = [m.name for m in ms]
    off = np.cumsum([0] + [m.estimate.size for m in ms])
    pos = dict(zip(names, off[:-1], strict=True))
    n = off[-1]
    y = np.concatenate([m.estimate for m in ms])
    w = 1.0 / np.concatenate([m.variance for m in ms])
    rows = []
    for m in ms:
        if m.parent is None:
            continue
        for p in range(next(x for x in ms if x.name == m.parent).estimate.size):
            r = np.zeros(n)
            r[pos[m.parent] + p] = 1.0
            r[pos[m.name] + np.flatnonzero(m.parent_index == p)] = -1.0
            rows.append(r)
    a = np.array(rows)
    kkt = np.block([[np.diag(w), a.T], [a, np.zeros((a.shape[0], a.shape[0]))]])
    rhs = np.concatenate([w * y, np.zeros(a.shape[0])])
    sol = np.linalg.solve(kkt, rhs)[:n]
    return {nm: sol[pos[nm] : pos[nm] + ms[i].estimate.size] for i, nm in enumerate(names)}


def test_consistent_equals_the_constrained_least_squares_solution():
    ms = _tree(np.random.default_rng(0))
    got = publication_grade(ms, consistent=True, nonnegative=False, integer=False)
    want = _dense_gls(ms)
    for name, x in want.items():
        np.testing.assert_allclose(got[name], x, rtol=1e-10, atol=1e-9)


def _additivity(ms, vals):
    worst = 0.0
    for m in ms:
        if m.parent is not None:
            sums = np.bincount(m.parent_index, vals[m.name], minlength=vals[m.parent].size)
            worst = max(worst, float(np.max(np.abs(sums - vals[m.parent]))))
    return worst


def test_nonnegative_projection_meets_its_optimality_conditions():
    rng = np.random.default_rng(1)
    ms = _tree(rng)
    # noisy small cells: many children estimates below zero
    ms = [MarginalInput(m.name, m.estimate - (20 if m.parent else 0), m.variance, m.parent,
                        m.parent_index) for m in ms]  # fmt: skip
    got = publication_grade(ms, consistent=True, nonnegative=True, integer=False)
    assert _additivity(ms, got) < 1e-9
    assert all((v >= 0).all() for v in got.values())
    # KKT for one parent group of "c": x_j = max(0, z_j − λ v_j) — the positive children
    # share one λ and the zero children have z_j ≤ λ v_j. z for a leaf marginal is its y.
    c = ms[3]
    x = got["c"][c.parent_index == 0]
    z, v = c.estimate[c.parent_index == 0], c.variance[c.parent_index == 0]
    pos = x > 1e-12
    assert pos.any()
    lam = (z[pos] - x[pos]) / v[pos]
    np.testing.assert_allclose(lam, lam[0], rtol=1e-9)
    assert np.all(z[~pos] <= lam[0] * v[~pos] + 1e-9)


def test_integer_tables_are_exactly_additive_and_within_one():
    rng = np.random.default_rng(2)
    ms = _tree(rng, n_root=30)
    real = publication_grade(ms, consistent=True, nonnegative=True, integer=False)
    ints = publication_grade(ms, consistent=True, nonnegative=True, integer=True)
    assert _additivity(ms, ints) == 0.0
    for v in ints.values():
        assert np.array_equal(v, np.round(v)) and (v >= 0).all()
    # roots are rounded; below them each value moves by < 1 from the projection onto the
    # rounded parent, so by < 1 + (the parent's shift spread over its children) overall
    assert np.max(np.abs(ints["root"] - real["root"])) <= 0.5
    assert np.max(np.abs(ints["c"] - real["c"])) < 1.5


def test_exact_cells_stay_exact():
    ms = _tree(np.random.default_rng(3))
    c = ms[3]
    var = c.variance.copy()
    est = c.estimate.copy()
    var[:2] = 0.0
    est[:2] = 0.0  # two public zeros
    ms[3] = MarginalInput("c", est, var, "root", c.parent_index)
    got = publication_grade(ms, consistent=True, nonnegative=True, integer=True)
    assert got["c"][0] == 0 and got["c"][1] == 0
    assert _additivity(ms, got) == 0.0


def test_without_consistency_each_cell_alone():
    ms = _tree(np.random.default_rng(4))
    got = publication_grade(ms, consistent=False, nonnegative=True, integer=True)
    for m in ms:
        np.testing.assert_array_equal(got[m.name], np.maximum(np.rint(m.estimate), 0))


def test_least_squares_lowers_the_error_with_true_variances():
    # Laplace noise of equal variance σ² on a root and its k = 2 children: the GLS
    # estimate (BLUE) has variance σ²(1 − 1/(k+1)) = 2σ²/3 in both marginals. Squared
    # Laplace errors have a relative sd of √5 per cell, so with 20,000 roots the MSEs are
    # within ~2% of their expectations: 0.75 is a safe bound on the ratio 0.667.
    rng = np.random.default_rng(5)
    n_root, k = 20000, 2
    leaf_true = rng.poisson(5, n_root * k).astype(float)
    idx = np.repeat(np.arange(n_root), k)
    root_true = np.bincount(idx, leaf_true)
    b = 2.0
    root = MarginalInput("root", root_true + rng.laplace(0, b, n_root), np.full(n_root, 2 * b * b))
    noisy = leaf_true + rng.laplace(0, b, idx.size)
    leaf = MarginalInput("leaf", noisy, np.full(idx.size, 2 * b * b), "root", idx)
    got = publication_grade([root, leaf], consistent=True, nonnegative=False, integer=False)
    for m, truth in ((root, root_true), (leaf, leaf_true)):
        raw = np.mean((m.estimate - truth) ** 2)
        post = np.mean((got[m.name] - truth) ** 2)
        assert post < 0.75 * raw


def test_nonnegative_projection_matches_a_scalar_bisection():
    # x_j = max(0, z_j − λ v_j), Σ x_j = P: solve λ per parent by plain bisection on the
    # monotone function λ ↦ Σ max(0, z − λv) and compare, over many random parents.
    rng = np.random.default_rng(6)
    n_root, k = 300, 5
    root = MarginalInput("root", rng.uniform(0, 20, n_root), np.full(n_root, 1e-12))
    idx = np.repeat(np.arange(n_root), k)
    leaf = MarginalInput("leaf", rng.normal(2, 6, idx.size), rng.uniform(0.5, 3, idx.size),
                         "root", idx)  # fmt: skip
    got = publication_grade([root, leaf], consistent=True, nonnegative=True, integer=False)
    for g in range(n_root):
        z, v = leaf.estimate[idx == g], leaf.variance[idx == g]
        p = got["root"][g]
        lo, hi = -1e6, 1e6
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if np.maximum(0, z - mid * v).sum() > p:
                lo = mid
            else:
                hi = mid
        np.testing.assert_allclose(got["leaf"][idx == g], np.maximum(0, z - hi * v), atol=1e-7)


def test_a_solve_leaves_no_cycle_holding_its_inputs():
    # a release solves a national tree block after block: arrays held by a reference
    # cycle live until the cyclic collector happens to run, which large arrays alone never
    # trigger, and memory grows with every block (seen: +5 GiB nationally)
    import gc
    import weakref

    rng = np.random.default_rng(0)
    parent_est = rng.normal(10, 1, 4)
    child_est = rng.normal(2.5, 1, 16)
    child_var = np.ones(16)
    probe = weakref.ref(child_var)
    gc.disable()
    try:
        out = publication_grade(
            [
                MarginalInput("p", parent_est, np.ones(4)),
                MarginalInput("c", child_est, child_var, "p", np.repeat(np.arange(4), 4)),
            ],
            consistent=True, nonnegative=True, integer=True,
        )  # fmt: skip
        del child_var
        assert probe() is None  # freed by reference counting alone
        assert set(out) == {"p", "c"}
    finally:
        gc.enable()


def test_a_parent_rounds_its_children_the_same_wherever_it_lies():
    # controlled rounding depends only on a parent's own children: solved alone or after
    # a million large cells (a block of a national tree vs the whole), the same integers.
    # Children 0.2499997, 0.25, 0.5000003 of a parent 1 (exact): the running sum after two
    # is 0.4999997, just below the rounding boundary 0.5; taken as a difference of running
    # totals near 1e10 (whose spacing is ~2e-6) it would land on 0.5 and round up
    rng = np.random.default_rng(5)
    groups = 200
    small = np.tile([0.2499997, 0.25, 0.5000003], groups)
    small_parent = np.ones(groups)
    small_index = np.repeat(np.arange(groups), 3)

    def solve(children, parents, index):
        out = publication_grade(
            [MarginalInput("p", parents, np.full(parents.shape, 1e-12)),
             MarginalInput("c", children, np.ones(children.shape), "p", index)],
            consistent=True, nonnegative=True, integer=True,
        )  # fmt: skip
        return out["c"]

    alone = solve(small, small_parent, small_index)
    big = rng.random(1_000_000) * 1e4 + 1e4 + 0.5  # running sums up to ~1.5e10
    big_parents = np.array([big[:500_000].sum(), big[500_000:].sum()])
    index = np.r_[np.repeat([0, 1], 500_000), small_index + 2].astype(np.int64)
    behind = solve(np.r_[big, small], np.r_[big_parents, small_parent], index)
    np.testing.assert_array_equal(behind[-3 * groups :], alone)
    # each parent's children: running sums 0.2499997 → 0, 0.4999997 → 0, 1 → 1
    np.testing.assert_array_equal(alone, np.tile([0.0, 0.0, 1.0], groups))
