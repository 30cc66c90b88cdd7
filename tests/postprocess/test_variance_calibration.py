"""Per-release calibration of the public variance model (eree.postprocess.variance_calibration).

Expectations from the moment conditions of the module docstring: a parent cell's value
minus the sum of its child cells has variance Var(parent) + Σ Var(children), so data drawn
with known true multipliers must give those multipliers back.
"""

import numpy as np
import pytest

from eree.postprocess.variance_calibration import BOUNDS, calibrate_variances
from eree.postprocess.variance_model import NoiseShape, simulate_noise

FLOOR = 8.0  # Smooth Laplace at ε = 1 and S = 1: 2·(2/1)²


def _two_levels(shape, c_parent, c_child, parents=3000, d=3, seed=0, with_truth=False):
    """A parent marginal over ``parents`` cells, each with ``d`` child cells.

    Model variances: the floor plus a modelled part varying from cell to cell (so the
    parent's share of each discrepancy varies and both multipliers are identified); the
    true variance is the floor plus c × the modelled part.
    """
    rng = np.random.default_rng(seed)
    idx = np.repeat(np.arange(parents), d)
    extra_p = rng.choice([0.0, 20.0, 200.0, 2000.0], parents)
    extra_c = rng.choice([0.0, 10.0, 100.0, 1000.0], parents * d)
    truth_c = rng.integers(50, 500, parents * d).astype(float)
    truth_p = np.bincount(idx, weights=truth_c)
    noise = NoiseShape(shape)
    est = {
        "parent": simulate_noise(noise, truth_p, FLOOR + c_parent * extra_p, rng),
        "child": simulate_noise(noise, truth_c, FLOOR + c_child * extra_c, rng),
    }
    model = {"parent": FLOOR + extra_p, "child": FLOOR + extra_c}
    pairs = {("child", "parent"): idx}
    return (est, model, pairs, truth_c) if with_truth else (est, model, pairs)


@pytest.mark.parametrize("shape", ["laplace", "quartic"])
def test_known_multipliers_are_recovered(shape):
    # Smooth Gamma's quartic noise has no fourth moment: the fit on |d| must still work
    est, model, pairs = _two_levels(shape, c_parent=0.3, c_child=2.5)
    cal = calibrate_variances(est, model, pairs, {"parent": FLOOR, "child": FLOOR})
    assert cal.multipliers["parent"] == pytest.approx(0.3, rel=0.2)
    assert cal.multipliers["child"] == pytest.approx(2.5, rel=0.2)
    assert cal.parent_cells == {"parent": 3000, "child": 3000}


def test_a_right_model_gets_multipliers_near_one():
    est, model, pairs = _two_levels("laplace", c_parent=1.0, c_child=1.0, seed=1)
    cal = calibrate_variances(est, model, pairs, {"parent": FLOOR, "child": FLOOR})
    for c in cal.multipliers.values():
        assert c == pytest.approx(1.0, abs=0.15)


def test_the_floor_is_known_and_never_scaled():
    # every child cell at the floor (no modelled part): the data say nothing about the
    # child's multiplier, which stays at 1; the parent's is still fitted
    rng = np.random.default_rng(2)
    parents, d = 3000, 3
    idx = np.repeat(np.arange(parents), d)
    extra_p = rng.choice([20.0, 200.0, 2000.0], parents)
    model = {"parent": FLOOR + extra_p, "child": np.full(parents * d, FLOOR)}
    true = {"parent": FLOOR + 0.25 * extra_p, "child": model["child"]}
    est = {
        n: simulate_noise(NoiseShape("laplace"), np.zeros(v.size), v, rng) for n, v in true.items()
    }
    cal = calibrate_variances(est, model, {("child", "parent"): idx},
                              {"parent": FLOOR, "child": FLOOR})  # fmt: skip
    assert cal.multipliers["child"] == pytest.approx(1.0, abs=1e-6)
    assert cal.multipliers["parent"] == pytest.approx(0.25, rel=0.25)


def test_one_pair_with_constant_shares_does_not_fail():
    # identifiability: every row has the same parent share, so only one combination of the
    # two multipliers is identified; the fit must still return bounded multipliers whose
    # combination matches the data (the common level 0.4 here)
    rng = np.random.default_rng(5)
    parents, d = 2000, 3
    idx = np.repeat(np.arange(parents), d)
    model = {
        "parent": np.full(parents, FLOOR + 300.0),
        "child": np.full(parents * d, FLOOR + 100.0),
    }
    true = {n: FLOOR + 0.4 * (v - FLOOR) for n, v in model.items()}
    est = {
        n: simulate_noise(NoiseShape("laplace"), np.zeros(v.size), v, rng) for n, v in true.items()
    }
    cal = calibrate_variances(est, model, {("child", "parent"): idx},
                              {"parent": FLOOR, "child": FLOOR})  # fmt: skip
    c = cal.multipliers
    assert all(BOUNDS[0] <= x <= BOUNDS[1] for x in c.values())
    share_p = 300.0 / 600.0  # the parent's share of the modelled part of every row
    combined = FLOOR * 4 + 600.0 * (share_p * c["parent"] + (1 - share_p) * c["child"])
    assert combined == pytest.approx(FLOOR * 4 + 0.4 * 600.0, rel=0.1)


def test_known_variances_and_marginals_in_no_pair():
    # a published-variance parent (not modelled) is subtracted, not fitted; a modelled
    # marginal in no released pair keeps 1; exact cells carry no noise and no variance
    est, model, pairs, truth_c = _two_levels(
        "laplace", c_parent=1.0, c_child=0.5, seed=7, with_truth=True
    )
    est["alone"] = np.array([3.0, 4.0])
    model["alone"] = np.array([FLOOR, FLOOR])
    exact = {n: np.zeros(v.size, dtype=bool) for n, v in est.items()}
    # 30 exact child cells (public zeros: true value 0, published 0): remove their true
    # value from the parents' and publish them as 0
    idx = pairs[("child", "parent")]
    exact["child"][:30] = True
    est["parent"] -= np.bincount(idx[:30], weights=truth_c[:30], minlength=est["parent"].size)
    est["child"][:30] = 0.0
    cal = calibrate_variances(est, model, pairs, {"child": FLOOR, "alone": FLOOR}, exact)
    assert set(cal.multipliers) == {"child", "alone"}
    assert cal.multipliers["alone"] == 1.0 and cal.parent_cells["alone"] == 0
    assert cal.multipliers["child"] == pytest.approx(0.5, rel=0.2)


@pytest.mark.parametrize("shape", ["laplace", "quartic"])
def test_a_group_shares_one_multiplier(shape):
    # parent and child at the same true level 0.3: tied, the one multiplier is recovered;
    # each on its own, a level the data cannot split (constant shares) is split toward 1
    rng = np.random.default_rng(11)
    parents, d = 3000, 3
    idx = np.repeat(np.arange(parents), d)
    extra_c = np.full(parents * d, 300.0)
    extra_p = np.full(parents, 900.0)
    model = {"parent": FLOOR + extra_p, "child": FLOOR + extra_c}
    noise = NoiseShape(shape)
    truth_c = rng.integers(50, 500, parents * d).astype(float)
    est = {
        "parent": simulate_noise(noise, np.bincount(idx, weights=truth_c), FLOOR + 0.3 * extra_p,
                                 rng),
        "child": simulate_noise(noise, truth_c, FLOOR + 0.3 * extra_c, rng),
    }  # fmt: skip
    floors = {"parent": FLOOR, "child": FLOOR}
    pairs = {("child", "parent"): idx}
    tied = calibrate_variances(est, model, pairs, floors, groups={"parent": "g", "child": "g"})
    assert tied.multipliers["parent"] == tied.multipliers["child"]
    assert tied.multipliers["parent"] == pytest.approx(0.3, rel=0.15)
    # power: without the tie the two multipliers are not identified and differ
    free = calibrate_variances(est, model, pairs, floors)
    assert free.multipliers["parent"] != pytest.approx(free.multipliers["child"], rel=0.05)
