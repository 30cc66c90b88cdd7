"""workshop-figure1 on a tiny parametric dataset: structure, omissions, reproducibility."""

import json
import math

import numpy as np
import polars as pl
import pytest

from eree.evaluate.datasets import load_dataset
from eree.evaluate.haney import CSV_COLUMNS
from eree.evaluate.workshop import (
    EXPERIMENT,
    WORKLOADS,
    WorkshopGrid,
    omission_reason,
    run_workshop_figure1,
    write_workshop_outputs,
)

GRID = WorkshopGrid(epsilons=(0.5, 2.0), alphas=(0.1, 0.2), trials=3)


@pytest.fixture(scope="module")
def dataset():
    return load_dataset(seed=3, jobs=4000)


@pytest.fixture(scope="module")
def result(dataset):
    return run_workshop_figure1(dataset, grid=GRID, seed=5)


def test_cells_grow_by_the_worker_domains(result):
    cells = result.meta["cells"]
    assert list(cells) == list(WORKLOADS)
    base = cells["workplace"]
    assert cells["workplace*age"] == 3 * base
    assert cells["workplace*age*sex"] == 6 * base
    assert cells["workplace*age*sex*race"] == 36 * base
    assert result.meta["d"] == {
        "workplace": 1, "workplace*age": 3, "workplace*age*sex": 6, "workplace*age*sex*race": 36
    }  # fmt: skip
    assert result.meta["paper_cells"]["workplace*age*sex*race"] == 3_397_068


def test_tidy_results_and_ratios(result):
    df = result.results
    assert tuple(df.columns) == CSV_COLUMNS
    assert set(df["experiment"]) == {EXPERIMENT} and set(df["trials"]) == {3}
    ratios = df.filter((pl.col("metric") == "l1_ratio") & (pl.col("stratum") == "all"))
    assert ratios.height > 0 and (ratios["value"] > 0).all()
    assert np.isfinite(ratios["value"].to_numpy()).all()
    mechs = set(ratios["mechanism"])
    for m in ("log_laplace", "smooth_gamma", "smooth_laplace"):
        assert f"{m}/workshop" in mechs and f"{m}/sigmod" in mechs
    assert "log_laplace_unbiased/workshop" in mechs
    # ratio = L1 / L1 of noise infusion, same workload and stratum
    ni = df.filter(
        (pl.col("mechanism") == "noise_infusion") & (pl.col("metric") == "l1")
        & (pl.col("stratum") == "all") & (pl.col("workload") == "workplace")
    )["value"][0]  # fmt: skip
    row = df.filter(
        (pl.col("mechanism") == "smooth_laplace/workshop") & (pl.col("workload") == "workplace")
        & (pl.col("alpha") == 0.1) & (pl.col("epsilon") == 2.0) & (pl.col("stratum") == "all")
    )  # fmt: skip
    l1 = row.filter(pl.col("metric") == "l1")["value"][0]
    assert row.filter(pl.col("metric") == "l1_ratio")["value"][0] == pytest.approx(l1 / ni)
    assert result.ratio("workplace", "smooth_laplace/workshop", 0.1, 2.0) == pytest.approx(l1 / ni)
    # smooth Laplace records the δ it ran at: δ_min = exp(−ε/(2 ln(1+α)))
    d = df.filter(
        (pl.col("metric") == "delta") & (pl.col("alpha") == 0.2) & (pl.col("epsilon") == 0.5)
    )["value"]  # fmt: skip
    assert d.len() > 0 and d[0] == pytest.approx(math.exp(-0.5 / (2 * math.log(1.2))))


def test_errors_decrease_with_epsilon(result):
    r = result.ratio
    for w in WORKLOADS:
        for m in ("smooth_laplace/workshop", "log_laplace/workshop"):
            assert r(w, m, 0.1, 2.0) < r(w, m, 0.1, 0.5)


def test_omitted_points_follow_the_mechanisms_conditions(result):
    om = result.omitted
    keys = {(r["mechanism"], r["alpha"], r["epsilon"]) for r in om.iter_rows(named=True)}
    # workshop Smooth Gamma: α+1 <= e^{ε/4}: 4 ln 1.2 = 0.73 > 0.5, 4 ln 1.1 = 0.38 < 0.5
    assert ("smooth_gamma/workshop", 0.2, 0.5) in keys
    assert ("smooth_gamma/workshop", 0.1, 0.5) not in keys
    # SIGMOD Smooth Gamma: α+1 < e^{ε/5}: 5 ln 1.1 = 0.48 < 0.5, 5 ln 1.2 = 0.91 > 0.5
    assert ("smooth_gamma/sigmod", 0.1, 0.5) not in keys
    assert ("smooth_gamma/sigmod", 0.2, 0.5) in keys
    assert not any(m.startswith("smooth_laplace") for m, _, _ in keys)  # δ = δ_min
    assert all("e^(epsilon" in r for r in om["reason"])
    assert omission_reason("log_laplace", "workshop", 0.2, 0.3) is not None  # λ >= 1
    assert omission_reason("log_laplace", "workshop", 0.2, 0.5) is None


def test_reproducible_with_the_same_seed(dataset, result):
    again = run_workshop_figure1(
        dataset, grid=WorkshopGrid(epsilons=(2.0,), alphas=(0.1,), trials=3,
                                   workloads=("workplace",)), seed=5,
    )  # fmt: skip
    for m in ("smooth_gamma/workshop", "log_laplace/sigmod"):
        assert again.ratio("workplace", m, 0.1, 2.0) == result.ratio("workplace", m, 0.1, 2.0)


def test_outputs_written(result, tmp_path):
    paths = write_workshop_outputs(result, tmp_path, dpi=40)
    for k in ("results", "omitted", "run", "figure", "comparison"):
        assert paths[k].exists() and paths[k].stat().st_size > 0
    back = pl.read_csv(paths["results"])
    assert back.height == result.results.height
    assert json.loads(paths["run"].read_text())["cells"] == result.meta["cells"]


def test_noise_infusion_baseline_is_haney_workload1s(dataset, result):
    from eree.evaluate.haney import HaneyGrid, run_haney

    h = run_haney(
        "haney-workload1", dataset, seed=5,
        grid=HaneyGrid(epsilons=(1.0,), alphas=(0.1,), thetas=(20,), trials=3, extras=False),
    )  # fmt: skip

    def ni(df):
        return df.filter(
            (pl.col("mechanism") == "noise_infusion") & (pl.col("metric") == "l1")
            & (pl.col("stratum") == "all")
        )["value"][0]  # fmt: skip

    mine = result.results.filter(pl.col("workload") == "workplace")
    assert ni(mine) == pytest.approx(ni(h.results), rel=1e-12)
