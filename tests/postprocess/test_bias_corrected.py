r"""The bias-corrected non-negative solve, against least-squares theory (many replicates).

Model (the GEDP shape of docs/publication-grade.md, section 5): n establishment wages,
most far below the ψ-mechanism's σ², grouped in counties. Published: the identity by
the √-ψ-mechanism (ω = √x + N(0, σ²), x̃ = ω² − σ², Thm 6.6: unbiased, variance
2σ²(2x + σ²)), each county's total and the state's total with Gaussian noise of known
variance. Each query's sum over a county is an unbiased estimate of the county's total;
the expectation is the least-squares posterior variance on the tree state → counties
(derivation in tests/release/test_gedp_bias_corrected.py):
:math:`P_c = s_c - (s_c/\Sigma s)^2(\Sigma s - S)`, :math:`s_c = 1/(1/V^{id}_c +
1/V^{co}_c)`, S the state's combined variance. Computed from the true x, never from the
solver. The plain non-negative solve is biased by far more than that (the reason for
the correction); the corrected one must meet P, with a power check.
"""

from __future__ import annotations

import numpy as np
import pytest

from eree.postprocess.bias_corrected import solve_bias_corrected
from eree.postprocess.wls import GroupSumObservation, SqrtAnswers, solve_wls

SIGMA = 50.0 / 0.15
COUNTIES = 3
N = 20000
REPS = 200


def _world(seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 200, N) + np.where(rng.random(N) < 0.05, rng.uniform(2e4, 2e5, N), 0)
    county = rng.integers(0, COUNTIES, N).astype(np.intp)
    # county and state totals' noise sd 1–2.4 M and 3 M (Syn-RI's wage totals' order):
    # the plain non-negative solve's bias exceeds both
    # unequal, so that sharing the state's correction by variance matters
    v_co = np.array([1.0e12, 3.0e12, 6.0e12])
    return x, county, v_co, 9.0e12


def _release(x, county, v_co, v_s, rng):
    omega = np.sqrt(x) + rng.normal(0, SIGMA, x.size)
    xt = omega**2 - SIGMA**2
    # the published variance estimate of Thm 6.6 at the answer (clamped positive)
    vhat = 2 * SIGMA**2 * (2 * np.maximum(xt, 0) + SIGMA**2)
    t_c = np.bincount(county, x, COUNTIES)
    return [
        GroupSumObservation("identity", None, xt, vhat, "wage", SqrtAnswers(omega, SIGMA)),
        GroupSumObservation("county", county, t_c + rng.normal(0, np.sqrt(v_co)), v_co, "wage"),
        GroupSumObservation("state", np.zeros(x.size, dtype=np.intp),
                            np.array([x.sum() + rng.normal(0, np.sqrt(v_s))]),
                            np.array([v_s]), "wage"),
    ]  # fmt: skip


def _theory(x, county, v_co, v_s):
    v_id = np.bincount(county, 2 * SIGMA**2 * (2 * x + SIGMA**2), COUNTIES)
    s = 1 / (1 / v_id + 1 / v_co)
    big_s = 1 / (1 / v_id.sum() + 1 / v_s + 1 / v_co.sum())
    return s - (s / s.sum()) ** 2 * (s.sum() - big_s), big_s


@pytest.fixture(scope="module")
def runs():
    x, county, v_co, v_s = _world()
    rng = np.random.default_rng(7)
    t_c = np.bincount(county, x, COUNTIES)
    out = {"post": [], "plain": [], "own": [], "anchored": [], "gap": [], "state": []}
    for _ in range(REPS):
        obs = _release(x, county, v_co, v_s, rng)
        r = solve_bias_corrected(x.size, obs)
        plain = solve_wls(x.size, obs, nonnegative=True)
        assert r.result.x.min() >= 0
        out["post"].append(np.bincount(county, r.result.x, COUNTIES) - t_c)
        out["plain"].append(np.bincount(county, plain.x, COUNTIES) - t_c)
        out["own"].append(obs[1].values - t_c)
        out["state"].append(r.result.x.sum() - x.sum())
        out["anchored"].append(tuple(sorted(r.anchored)))
        out["gap"].append(r.gap)
    p, big_s = _theory(x, county, v_co, v_s)
    res = {k: np.array(v) for k, v in out.items() if k != "anchored"}
    res |= {"anchored": out["anchored"], "P": p, "S": big_s, "V_co": v_co}
    return res


def _ratio(err, var):
    per_rep = (err**2 / var).mean(axis=1)
    return float(per_rep.mean()), float(per_rep.std(ddof=1) / np.sqrt(per_rep.size))


def test_the_biased_totals_are_anchored_exactly(runs):
    assert all(a == ("county", "state") for a in runs["anchored"])
    assert max(runs["gap"]) <= 1e-9


def test_the_plain_nonnegative_solve_is_biased_and_the_corrected_one_is_not(runs):
    plain_bias = runs["plain"].sum(axis=1).mean()  # the state total's bias
    post = runs["post"].sum(axis=1)
    se = post.std(ddof=1) / np.sqrt(post.size)
    assert plain_bias > 3 * np.sqrt(runs["S"])  # the problem is real in this model
    assert abs(post.mean()) <= 3 * se


def test_county_totals_meet_the_least_squares_posterior_variance(runs):
    ratio, se = _ratio(runs["post"], runs["P"])
    assert abs(ratio - 1) <= 3 * se, (ratio, se)
    own, own_se = _ratio(runs["own"], runs["V_co"])
    assert abs(own - 1) <= 3 * own_se, (own, own_se)
    # the gain the theory predicts (the state's precision shared down), and measured
    predicted = float(np.mean(runs["V_co"]) / np.mean(runs["P"]))
    assert predicted > 1.15
    gain = float(np.mean(runs["own"] ** 2) / np.mean(runs["post"] ** 2))
    assert gain > 1.0 and gain == pytest.approx(predicted, rel=0.15)
    for scale in (0.7, 1.3):  # power: a prediction 30% off fails
        off, off_se = _ratio(runs["post"], scale * runs["P"])
        assert abs(off - 1) > 3 * off_se, (scale, off, off_se)


def test_the_state_total_meets_its_combined_variance(runs):
    ratio, se = _ratio(runs["state"][:, None], np.array([[runs["S"]]]))
    assert abs(ratio - 1) <= 3 * se, (ratio, se)
