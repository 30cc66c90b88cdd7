"""The DP baselines' noise models, pinned through the engine: edge-DP Laplace adds
Lap(1/ε); node-DP truncated Laplace drops exactly the establishments with total
employment at or above θ and adds Lap(θ/ε)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from eree.data.eree_tables import EreeData
from eree.data.schema import WORKER_DOMAINS
from eree.engine.polars_engine import PolarsEngine
from eree.evaluate.datasets import load_dataset
from eree.evaluate.haney import establishment_sizes, marginal_cells
from eree.mechanisms.baselines import laplace, truncated_laplace
from eree.mechanisms.noise import SeededNoise
from tests.stats import assert_detects, assert_ks, ks_matches

#: establishment sizes around θ = 20 (and 50): 19 kept, 20 dropped, 21 dropped
SIZES = {"w0": 1, "w1": 5, "w2": 19, "w3": 20, "w4": 21, "w5": 49, "w6": 50, "w7": 300}


def _data() -> EreeData:
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
    return EreeData(wp, jobs, {"sex": WORKER_DOMAINS["sex"]})


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


def _lap_cdf(b: float):
    return lambda x: stats.laplace.cdf(x, scale=b)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_edge_dp_laplace_scale(epsilon):
    n = np.full(60_000, 17.0)
    err = laplace(n, epsilon, SeededNoise(8)).noisy - n
    assert_ks(err, _lap_cdf(1 / epsilon))
    assert_detects(lambda x: ks_matches(x, _lap_cdf(1 / epsilon)), err * 1.3)


@pytest.mark.parametrize(("theta", "epsilon"), [(20, 1.0), (500, 4.0)])
def test_truncated_laplace_scale(theta, epsilon):
    n = np.full(60_000, 40.0)
    err = truncated_laplace(n, theta, epsilon, SeededNoise(9)).noisy - n
    assert_ks(err, _lap_cdf(theta / epsilon))
    assert_detects(lambda x: ks_matches(x, _lap_cdf(theta / epsilon)), err / 1.3)
