"""The variance check's statistic against its theory (:mod:`eree.postprocess.variance_check`).

A parent marginal of 3,000 cells, each the sum of 5 child cells; Laplace noise of known
variance (parent 4, child 1), so the model is exact. Under the model the check's z is
standardised by the statistic's simulated distribution: over 40 independent releases its
mean is 0 and its standard deviation 1 (bands of 3 standard errors: 3/√40 for the mean,
3/√80 relative for the standard deviation), and it fires (|z| > 3.5, probability 0.05%
each) at most once. Power: a model predicting 1.3× (0.7×) the variance sees gaps of
1/√1.3 (1/√0.7) the predicted size; with 3,000 parent cells T's log has sd ≈
√((1/κ² − 1)/3000) ≈ 0.015 (κ ≈ 0.77 for a Laplace plus 5 Laplaces), so z ≈ −9 (+12):
it fires in every release, and the measured factor is 1/√1.3 (1/√0.7) within 5 sd.
"""

import numpy as np

from eree.postprocess.guard import GuardInput
from eree.postprocess.variance_check import FIRE_Z, gap_statistic, variance_check
from eree.postprocess.variance_model import NoiseShape

J, K = 3000, 5
IDX = np.repeat(np.arange(J), K)
V_PARENT, V_CHILD = 4.0, 1.0


def _release(rng, model_factor=1.0):
    child_truth = rng.integers(0, 50, J * K).astype(np.float64)
    parent_truth = np.bincount(IDX, child_truth, minlength=J)
    lap = 1.0 / np.sqrt(2.0)
    y_c = child_truth + rng.laplace(0, lap, J * K) * np.sqrt(V_CHILD)
    y_p = parent_truth + rng.laplace(0, lap, J) * np.sqrt(V_PARENT)

    def gi(name, y, v):
        return GuardInput(
            name, y, np.zeros(y.size, bool), NoiseShape("laplace"),
            weight=lambda s, v=v: np.full(np.shape(s), v * model_factor),
            true_variance=lambda t, rng, v=v: np.full(np.shape(t), v * model_factor),
        )  # fmt: skip

    inputs = [gi("parent", y_p, V_PARENT), gi("child", y_c, V_CHILD)]
    truth = {"parent": parent_truth, "child": child_truth}  # a consistent pseudo-truth
    return inputs, truth


def test_statistic_is_the_gaps_mean_abs_weighted_by_their_sd():
    est = {"p": np.array([10.0, 0.0]), "c": np.array([4.0, 4.0, 1.0])}
    idx = np.array([0, 0, 1])
    pv = {("c", "p"): np.array([4.0, 9.0])}
    # d = (2, −1); Σ √P |d| / Σ P = (2·2 + 3·1) / 13
    t = gap_statistic(est, pv, {("c", "p"): idx})
    assert np.isclose(t[("c", "p")], 7.0 / 13.0)


def test_right_model_z_is_standard_normal_and_rarely_fires():
    rng = np.random.default_rng(11)
    zs, fired = [], 0
    for _ in range(40):
        inputs, truth = _release(rng)
        vc = variance_check(inputs, truth, {("child", "parent"): IDX})
        zs.append(vc.z)
        fired += vc.fired
    zs = np.array(zs)
    assert abs(zs.mean()) < 3.0 / np.sqrt(40)
    assert abs(zs.std(ddof=1) - 1.0) < 3.0 / np.sqrt(80)
    assert fired <= 1
    assert vc.threshold == FIRE_Z == 3.5


def test_model_off_by_30_percent_fires_every_time():
    rng = np.random.default_rng(12)
    for factor, sign in ((1.3, -1.0), (0.7, 1.0)):
        for _ in range(5):
            inputs, truth = _release(rng, model_factor=factor)
            vc = variance_check(inputs, truth, {("child", "parent"): IDX})
            assert vc.fired and np.sign(vc.z) == sign, (factor, vc.z)
            # the measured factor: the gaps' size over the model's, 1/√factor (± 8%)
            assert abs(vc.factor * np.sqrt(factor) - 1.0) < 0.08, (factor, vc.factor)


def test_too_few_parent_cells_test_nothing():
    rng = np.random.default_rng(13)
    inputs, truth = _release(rng)
    few = {("child", "parent"): IDX[: 7 * K]}
    inputs = [
        GuardInput(g.name, g.estimate[: 7 * (K if g.name == "child" else 1)],
                   g.exact[: 7 * (K if g.name == "child" else 1)], g.shape, g.weight,
                   g.true_variance)
        for g in inputs
    ]  # fmt: skip
    truth = {"parent": truth["parent"][:7], "child": truth["child"][: 7 * K]}
    assert variance_check(inputs, truth, few) is None
