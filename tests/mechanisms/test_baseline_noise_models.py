"""The DP baselines' noise models, pinned through the engine: edge-DP Laplace adds
Lap(1/ε); node-DP truncated Laplace drops exactly the establishments with total
employment at or above θ and adds Lap(θ/ε).

The published value is round(n + bL) on the public grid 1 (docs/privacy.md), L standard
Laplace: for an integer count n the published error is R = round(bL), an integer. The
laws are checked as published: R + U with U ~ U(−½, ½) independent (drawn here) has the
continuous CDF of bL interpolated linearly between the half-integers (:func:`rounded_cdf`),
so the KS test applies exactly.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

from eree.data.job_tables import JobTables
from eree.data.schema import WORKER_DOMAINS
from eree.engine.polars.engine import PolarsEngine
from eree.evaluate.datasets import load_dataset
from eree.evaluate.haney import establishment_sizes, marginal_cells
from eree.mechanisms.baselines import laplace, truncated_laplace
from eree.mechanisms.noise import SeededNoise
from tests.stats import assert_detects, assert_ks, ks_matches

#: establishment sizes around θ = 20 (and 50): 19 kept, 20 dropped, 21 dropped
SIZES = {"w0": 1, "w1": 5, "w2": 19, "w3": 20, "w4": 21, "w5": 49, "w6": 50, "w7": 300}


def _data() -> JobTables:
    ids = list(SIZES)
    wp = pl.DataFrame(
        {
            "workplace_id": ids,
            "tract": ["t1", "t1", "t1", "t1", "t2", "t2", "t2", "t2"],
            "naics_sector": ["23"] * 8,
            "ownership": ["A05"] * 8,
        }
    )
    wid = np.repeat(ids, list(SIZES.values()))
    sex = np.where(np.arange(wid.size) % 3 == 0, "F", "M")
    jobs = pl.DataFrame({"workplace_id": wid.tolist(), "sex": sex.tolist()})
    return JobTables(wp, jobs, {"sex": WORKER_DOMAINS["sex"]})


@pytest.mark.parametrize("theta", [2, 20, 21, 50, 51, 1000])
def test_truncation_drops_exactly_the_establishments_at_or_above_theta(theta):
    data = _data()
    eng = PolarsEngine()
    st = eng.cell_statistics(data, ["tract"], [], truncate_below=theta)
    expect = {
        t: sum(s for w, s in SIZES.items() if s < theta and (w < "w4") == (t == "t1"))
        for t in ("t1", "t2")
    }
    got = dict(zip(st["tract"], st["count_truncated"], strict=True))
    assert got == expect
    # the mechanism with a vanishing noise scale returns exactly the truncated count
    out = truncated_laplace(st["count_truncated"].to_numpy(), theta, 1e12, SeededNoise(0))
    assert np.allclose(out.noisy, [expect["t1"], expect["t2"]], atol=1e-6)
    # with worker attributes: an establishment is dropped by its *total* size, not its
    # size within the cell
    st2 = eng.cell_statistics(data, ["tract"], ["sex"], truncate_below=theta)
    assert st2["count_truncated"].sum() == expect["t1"] + expect["t2"]


def test_experiment_truncation_matches_the_engine():
    ds = load_dataset(seed=5, jobs=20_000)
    eng = PolarsEngine()
    cells = marginal_cells(ds.data, eng, ["tract", "naics_sector", "ownership"], ["sex"])
    assert np.array_equal(
        establishment_sizes(ds.data),
        ds.data.workplaces.join(
            ds.data.jobs.group_by("workplace_id").len(), on="workplace_id", how="left",
            maintain_order="left",
        )["len"].to_numpy(),
    )  # fmt: skip
    for theta in (2, 20, 50, 100, 200, 500):
        st = eng.cell_statistics(
            ds.data, ["tract", "naics_sector", "ownership"], ["sex"], truncate_below=theta
        )
        assert np.array_equal(cells.count_truncated(theta), st["count_truncated"].to_numpy())
    assert np.array_equal(cells.n, cells.count_truncated(1e18))


def rounded_cdf(b: float):
    """CDF of round(bL) + U, U ~ U(−½, ½) independent, L standard Laplace.

    For y in [k − ½, k + ½): P(R + U ≤ y) = P(R ≤ k − 1) + P(R = k)·(y − k + ½)
    = F(k − ½) + (F(k + ½) − F(k − ½))·(y − k + ½), F the CDF of bL.
    """

    def cdf(y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        k = np.floor(y + 0.5)
        lo = stats.laplace.cdf(k - 0.5, scale=b)
        hi = stats.laplace.cdf(k + 0.5, scale=b)
        return lo + (hi - lo) * (y - (k - 0.5))

    return cdf


def jittered(err: np.ndarray, seed: int) -> np.ndarray:
    """err + U(−½, ½) (the grid is 1): continuous, with the CDF of :func:`rounded_cdf`."""
    # a stream of its own: default_rng(seed) would repeat SeededNoise(seed)'s words
    rng = np.random.default_rng([seed, 0x5EED])
    return err + rng.uniform(-0.5, 0.5, size=err.shape)


def rounded_laplace_sd(b: float) -> float:
    """Sd of R = round(bL) (symmetric, mean 0): P(|R| ≥ k) = e^{−(k−½)/b} for k ≥ 1, so
    E R² = Σ_k (2k − 1) e^{−(k−½)/b} = cosh(h)/(2 sinh²(h)) with h = 1/(2b)."""
    h = 1 / (2 * b)
    return math.sqrt(math.cosh(h) / (2 * math.sinh(h) ** 2))


def test_rounded_helpers_against_direct_sums():
    b = 0.7
    k = np.arange(-60, 61, dtype=float)
    p = stats.laplace.cdf(k + 0.5, scale=b) - stats.laplace.cdf(k - 0.5, scale=b)  # P(R = k)
    # the CDF of R + U at the cell centres: P(R < k) + P(R = k)/2
    np.testing.assert_allclose(rounded_cdf(b)(k), np.cumsum(p) - p / 2, atol=1e-12)
    assert rounded_laplace_sd(b) == pytest.approx(math.sqrt(np.sum(k * k * p)), rel=1e-12)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_edge_dp_laplace_scale(epsilon):
    n = np.full(60_000, 17.0)
    out = laplace(n, epsilon, SeededNoise(8))
    err = out.noisy - n
    assert np.all(err == np.round(err))  # published on the grid 1
    check = functools.partial(ks_matches, cdf=rounded_cdf(1 / epsilon))
    assert_ks(jittered(err, 1), rounded_cdf(1 / epsilon))
    # power: the mechanism with a 30% larger scale 1.3/ε is rejected
    wrong = laplace(n, epsilon / 1.3, SeededNoise(18)).noisy - n
    assert_detects(check, jittered(wrong, 2))
    # the published sd is the exact sd of the rounded noise (at ε = 2: 0.7475, not the
    # unrounded √2/ε = 0.7071)
    assert out.std is not None
    np.testing.assert_allclose(out.std, rounded_laplace_sd(1 / epsilon), rtol=1e-9)


@pytest.mark.parametrize(("theta", "epsilon"), [(20, 1.0), (500, 4.0)])
def test_truncated_laplace_scale(theta, epsilon):
    n = np.full(60_000, 40.0)
    err = truncated_laplace(n, theta, epsilon, SeededNoise(9)).noisy - n
    assert np.all(err == np.round(err))  # published on the grid 1
    check = functools.partial(ks_matches, cdf=rounded_cdf(theta / epsilon))
    assert_ks(jittered(err, 3), rounded_cdf(theta / epsilon))
    # power: the mechanism with a 30% smaller scale θ/(1.3ε) is rejected
    wrong = truncated_laplace(n, theta, 1.3 * epsilon, SeededNoise(19)).noisy - n
    assert_detects(check, jittered(wrong, 4))
