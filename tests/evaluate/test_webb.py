"""The QCEW paper's experiments (``eree evaluate webb-…``; fast: small parametric data)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from eree.data.establishments import EstablishmentData
from eree.evaluate.haney import CSV_COLUMNS
from eree.evaluate.webb import (
    GROUPINGS,
    TABLE7,
    Replicates,
    load_webb_data,
    run_replicates,
    run_webb,
    table11,
    webb_plan,
    write_webb_outputs,
)
from eree.evaluate.webb.plans import PAPER_TABLE3, total_mu
from eree.evaluate.webb.replicates import error_rows
from eree.postprocess.wls import tabulate
from eree.release.build import build
from eree.synth.qcew import synth_qcew_parametric


@pytest.fixture(scope="module")
def small_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("webb") / "est.parquet"
    synth_qcew_parametric(3, 1500, n_counties=3).write(p)
    return p


@pytest.fixture(scope="module")
def small(small_file: Path) -> EstablishmentData:
    return load_webb_data(small_file)


def test_plans_and_table7_budget(small: EstablishmentData) -> None:
    assert total_mu(TABLE7) == pytest.approx(2.3065, abs=1e-4)  # Table 7: μ ≈ 2.31
    pnc = webb_plan(small.config, "pnc")
    sqrt = webb_plan(small.config, "sqrt", scale=2.0)
    assert [q.mechanism for q in pnc.queries] == ["psi", "pnc", "pnc", "pnc", "pnc"]
    assert all(q.mechanism == "psi" for q in sqrt.queries)
    assert pnc.pnc.bounds_from == "identity" and pnc.pnc.zeta == 0.01
    assert pnc.privacy.distance == {"m1emp": 0.5, "m2emp": 0.5, "m3emp": 0.5, "wage": 50.0}
    assert pnc.query("county_naics5").by == ("cnty", "naics5")
    assert build(pnc).report().total.mu == pytest.approx(2.3065, abs=1e-4)
    assert build(sqrt).report().total.mu == pytest.approx(2 * 2.3065, abs=1e-3)
    assert sqrt.query("identity").mu == {"m1emp": 1.4, "m2emp": 1.4, "m3emp": 1.4, "wage": 0.3}
    with pytest.raises(ValueError, match="workflow"):
        webb_plan(small.config, "laplace")
    # the paper's workflows fit Eq. 1; the adaptive one fits its √-ψ answers in √-space
    assert pnc.postprocess.microdata_fit == sqrt.postprocess.microdata_fit == "eq1"
    assert webb_plan(small.config, "adaptive").postprocess.microdata_fit == "sqrt-space"


def test_replicates_truth_and_accuracy(small: EstablishmentData) -> None:
    gs = {g: GROUPINGS[g] for g in ("state", "county", "naics5", "county_naics5")}
    rep = run_replicates(small, trials=2, seed=1, scale=200.0, groupings=gs)
    for g, cols in gs.items():
        t = tabulate(small.frame, list(cols), ["m3emp", "wage"])
        np.testing.assert_allclose(rep.truth["m3emp"][g], t["m3emp"].to_numpy())
        np.testing.assert_allclose(rep.establishments[g], t["n"].to_numpy())
    # with a huge budget the protected microdata tabulate close to the truth: the cells of
    # the release, the microdata and the evaluation groupings are aligned
    for w in ("pnc", "sqrt", "adaptive"):
        for g in gs:
            est, tru = rep.estimates[w]["m3emp"][g], rep.truth["m3emp"][g]
            assert np.abs(est - tru).max() <= 0.05 * tru.max() + 5
    # seeded: the same seed gives the same replicates
    again = run_replicates(small, trials=2, seed=1, scale=200.0, groupings=gs)
    np.testing.assert_array_equal(
        again.estimates["pnc"]["wage"]["county"], rep.estimates["pnc"]["wage"]["county"]
    )


def test_error_rows_by_hand() -> None:
    truth = {"m3emp": {"g": np.array([10.0, 100.0])}}
    est = {
        "pnc": {"m3emp": {"g": np.array([[11.0, 98.0], [9.0, 104.0]])}},
        "sqrt": {"m3emp": {"g": np.array([[13.0, 101.0], [7.0, 99.0]])}},
    }
    rep = Replicates(est, truth, {"g": np.array([1.0, 5.0])}, {"g": pl.DataFrame()}, 2.0, 2)
    rows = error_rows(rep, "x", signed=True)
    v = {(r["mechanism"], r["metric"]): r["value"] for r in rows}
    assert v[("pnc", "mean_abs_error")] == pytest.approx((1 + 3) / 2)  # cells 1 and 3
    assert v[("sqrt", "mean_abs_error")] == pytest.approx((3 + 1) / 2)
    assert v[("pnc", "median_rel_error")] == pytest.approx(np.median([1 / 11, 3 / 101]))
    assert v[("pnc", "signed_mean")] == pytest.approx((1 - 2 - 1 + 4) / 4)
    assert v[("pnc", "signed_median")] == pytest.approx(np.quantile([1, -2, -1, 4], 0.5))
    assert v[("pnc-vs-sqrt", "share_pnc_better")] == pytest.approx(0.5)
    assert v[("pnc-vs-sqrt", "abs_error_ratio")] == pytest.approx(1.0)
    assert v[("pnc-vs-sqrt", "abs_error_diff")] == pytest.approx(((1.5 - 2) + (2.5 - 2)) / 2)
    assert all(r["mu"] == 2.0 and r["trials"] == 2 for r in rows)


def test_adaptive_against_the_best_by_hand() -> None:
    truth = {"m3emp": {"g": np.array([10.0, 100.0])}}
    est = {
        "pnc": {"m3emp": {"g": np.array([[11.0, 98.0], [9.0, 104.0]])}},  # |e|: 1, 2; 1, 4
        "sqrt": {"m3emp": {"g": np.array([[13.0, 101.0], [7.0, 99.0]])}},  # 3, 1; 3, 1
        "adaptive": {"m3emp": {"g": np.array([[10.0, 101.0], [8.0, 100.0]])}},  # 0, 1; 2, 0
    }
    rep = Replicates(est, truth, {"g": np.array([1.0, 5.0])}, {"g": pl.DataFrame()}, 2.0, 2)
    v = {(r["mechanism"], r["metric"]): r["value"] for r in error_rows(rep, "x")}
    # MAE: pnc (1.5 + 2.5)/2 = 2, √ 2, adaptive (0.5 + 1)/2 = 0.75; ties go to pnc
    assert v[("adaptive-vs-best", "best_is_pnc")] == 1.0
    assert v[("adaptive-vs-best", "abs_error_ratio")] == pytest.approx(0.75 / 2)
    # per replicate: adaptive 0.5, 1.0; pnc 1.5, 2.5 → differences −1, −1.5
    assert v[("adaptive-vs-best", "abs_error_diff")] == pytest.approx(-1.25)
    assert v[("adaptive-vs-best", "abs_error_diff_se")] == pytest.approx(
        np.std([-1.0, -1.5], ddof=1) / np.sqrt(2)
    )
    assert v[("adaptive", "mean_abs_error_se")] == pytest.approx(
        np.std([0.5, 1.0], ddof=1) / np.sqrt(2)
    )


def test_table11_chunks() -> None:
    t = table11(3000, seed=2, chunk=1000)
    assert t.height == 18
    assert set(t["neighbor"]) == {"sqrt", "log"} and (t["trials"] == 3000).all()
    assert (t["se"] > 0).all() and t["z"].is_finite().all()
    total = t.filter(
        pl.col("neighbor") == "sqrt", pl.col("strategy") == "Act", pl.col("query") == "Total"
    )
    # the MSE of the total with true variances is ≈ 335 (Table 11); 3,000 trials: ±~7%
    assert abs(total["mse"][0] - 335.2) < 5 * total["se"][0] + 1


def test_run_all_and_outputs(small: EstablishmentData, tmp_path: Path) -> None:
    res = run_webb("webb-all", small, trials=3, seed=0, table11_trials=2000, sweep_mu=(1.0, 4.0))
    r = res.results
    assert set(r["experiment"]) == {"webb-table11", "webb-table3", "webb-figures", "webb-figure9"}
    f9 = r.filter(pl.col("experiment") == "webb-figure9")
    assert sorted(set(f9["mu"].round(4))) == [1.0, 2.3065, 4.0]
    t3 = r.filter(pl.col("experiment") == "webb-table3")
    assert set(t3["stratum"]) == set(PAPER_TABLE3)
    figs = r.filter(pl.col("experiment") == "webb-figures")
    assert set(figs["stratum"]) == set(GROUPINGS)
    assert set(figs["mechanism"]) == {"pnc", "sqrt", "adaptive", "pnc-vs-sqrt", "adaptive-vs-best"}
    # more budget, less error (Figure 9), for every workflow at the state level
    for w in ("pnc", "sqrt", "adaptive"):
        s = f9.filter(
            pl.col("workload") == "m3emp", pl.col("mechanism") == w,
            pl.col("stratum") == "naics5", pl.col("metric") == "mean_abs_error",
        ).sort("mu")  # fmt: skip
        assert s["value"][0] > s["value"][-1]
    paths = write_webb_outputs(res, tmp_path / "out")
    csv = pl.read_csv(paths["results"])
    assert tuple(csv.columns) == CSV_COLUMNS and csv.height == r.height
    cells = pl.read_csv(paths["cells"])
    assert {"workflow", "attribute", "grouping", "cell", "truth", "mean_abs_error"} <= set(
        cells.columns
    )
    for k in ("figure2", "figure3", "figure8", "figure9"):
        assert paths[f"figure:{k}"].stat().st_size > 1000
    page = paths["report"].read_text()
    for part in ("Table 11", "Table 3", "Figures 2, 3 and 8", "Figure 9", "NOT FOR PUBLICATION"):
        assert part in page
    assert "data:image/png;base64" in page
    assert res.meta["seconds"]["total"] > 0 and not math.isnan(res.meta["mu_total"])


def test_ctrl_c_keeps_the_finished_replicates(
    small: EstablishmentData, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = run_replicates(small, trials=3, seed=5, groupings={"county": ("cnty",)})

    def stop(msg: str) -> None:
        if msg.startswith("replicate 2/"):
            raise KeyboardInterrupt

    part = run_replicates(small, trials=3, seed=5, groupings={"county": ("cnty",)}, progress=stop)
    assert part.interrupted and not full.interrupted and part.trials == 2
    for w, by_a in part.estimates.items():
        for a, by_g in by_a.items():
            assert by_g["county"].shape[0] == 2
            np.testing.assert_array_equal(by_g["county"], full.estimates[w][a]["county"][:2])

    def ctrl_c(*a: object, **k: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("eree.evaluate.webb.replicates.build_microdata", ctrl_c)
    with pytest.raises(KeyboardInterrupt):  # during the first replicate: nothing to keep
        run_replicates(small, trials=3, seed=5)
