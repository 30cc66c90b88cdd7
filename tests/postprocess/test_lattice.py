"""Least squares over a lattice of marginals (eree.postprocess.lattice): expectations from
the mathematics of constrained least squares, not from the code."""

import numpy as np
import pytest

from eree.postprocess.hierarchy import MarginalInput, publication_grade
from eree.postprocess.lattice import Pair, lattice_least_squares, lattice_round


def test_one_parent_two_children_is_the_closed_form():
    # min Σ (x−y)²/v s.t. x_p = x_1 + x_2: λ = (y_p − y_1 − y_2)/(v_p + v_1 + v_2),
    # x_p = y_p − v_p λ, x_i = y_i + v_i λ
    y = {"p": np.array([10.0]), "c": np.array([3.0, 4.0])}
    v = {"p": np.array([2.0]), "c": np.array([1.0, 5.0])}
    out = lattice_least_squares(y, v, [Pair("c", "p", np.array([0, 0]))], nonnegative=False)
    lam = (10 - 7) / 8
    assert out["p"][0] == pytest.approx(10 - 2 * lam)
    np.testing.assert_allclose(out["c"], [3 + lam, 4 + 5 * lam])


def test_on_a_tree_it_is_the_tree_algorithm_s_gls():
    rng = np.random.default_rng(1)
    n_p, n_c, n_g = 5, 15, 45
    ic = np.repeat(np.arange(n_p), 3)
    ig = np.repeat(np.arange(n_c), 3)
    y = {k: rng.normal(50, 10, n) for k, n in (("p", n_p), ("c", n_c), ("g", n_g))}
    v = {k: rng.uniform(1, 9, n) for k, n in (("p", n_p), ("c", n_c), ("g", n_g))}
    pairs = [Pair("c", "p", ic), Pair("g", "c", ig), Pair("g", "p", ic[ig])]
    lat = lattice_least_squares(y, v, pairs, nonnegative=False)
    tree = publication_grade(
        [MarginalInput("p", y["p"], v["p"]), MarginalInput("c", y["c"], v["c"], "p", ic),
         MarginalInput("g", y["g"], v["g"], "c", ig)],
        consistent=True, nonnegative=False, integer=False,
    )  # fmt: skip
    for k in y:
        np.testing.assert_allclose(lat[k], tree[k], rtol=1e-7, atol=1e-7)


def _lattice(rng, units=40):
    """Per unit u: total T, T × sex (2), T × age (3), T × sex × age (6) — a lattice."""
    sa = np.arange(units * 6)
    unit = sa // 6
    sex = unit * 2 + (sa % 6) // 3
    age = unit * 3 + (sa % 3)
    truth = rng.poisson(4, sa.size).astype(float)
    t = {"T": np.bincount(unit, truth), "S": np.bincount(sex, truth),
         "A": np.bincount(age, truth), "SA": truth}  # fmt: skip
    pairs = [Pair("S", "T", np.arange(units * 2) // 2), Pair("A", "T", np.arange(units * 3) // 3),
             Pair("SA", "S", sex), Pair("SA", "A", age), Pair("SA", "T", unit)]  # fmt: skip
    return t, pairs


def _check_all_pairs(values, pairs):
    for p in pairs:
        sums = np.bincount(p.index, values[p.child], minlength=values[p.parent].size)
        np.testing.assert_array_equal(sums, values[p.parent], err_msg=f"{p.child}->{p.parent}")


@pytest.mark.parametrize("finest", [True, False])
def test_lattice_release_every_pair_adds_up_and_every_cell_is_a_nonnegative_integer(finest):
    rng = np.random.default_rng(7)
    truth, pairs = _lattice(rng)
    if not finest:  # no marginal refines all others: the integer program rounds
        truth = {k: v for k, v in truth.items() if k != "SA"}
        pairs = [p for p in pairs if p.child != "SA"]
        truth["S2"] = truth["S"].copy()  # a second root-level sibling
    var = {k: np.full(v.size, 4.0) for k, v in truth.items()}
    noisy = {k: v + rng.laplace(0, np.sqrt(2.0), v.size) for k, v in truth.items()}
    if not finest:
        pairs.append(Pair("S2", "T", np.arange(truth["S2"].size) // 2))
    x = lattice_least_squares(noisy, var, pairs, nonnegative=True)
    assert all((v >= 0).all() for v in x.values())
    r, how = lattice_round(x, pairs)
    _check_all_pairs(r, pairs)
    for k, v in r.items():
        assert (v >= 0).all() and np.array_equal(v, np.rint(v)), k
        assert np.max(np.abs(v - x[k])) < (3.0 if finest else 2.0 + 1e-9)
    assert ("controlled" in how) == finest


def test_consistency_with_correct_weights_does_not_hurt_any_marginal():
    # GLS with the true variances is BLUE: every marginal's mean squared error falls
    rng = np.random.default_rng(3)
    truth, pairs = _lattice(rng, units=200)
    var = {"T": 50.0, "S": 20.0, "A": 10.0, "SA": 8.0}
    mse_raw = {k: 0.0 for k in truth}
    mse_ls = {k: 0.0 for k in truth}
    for _ in range(20):
        noisy = {k: v + rng.normal(0, np.sqrt(var[k]), v.size) for k, v in truth.items()}
        x = lattice_least_squares(noisy, {k: np.full(v.size, var[k]) for k, v in truth.items()},
                                  pairs, nonnegative=False)  # fmt: skip
        for k in truth:
            mse_raw[k] += np.mean((noisy[k] - truth[k]) ** 2)
            mse_ls[k] += np.mean((x[k] - truth[k]) ** 2)
    for k in truth:
        assert mse_ls[k] < mse_raw[k], k
