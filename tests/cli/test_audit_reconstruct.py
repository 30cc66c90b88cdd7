"""``eree audit reconstruct``: format files and release folders in, rates out, errors exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from eree.synth.lodes import synth_parametric
from tests.cli.inputs import run_cli


def _cells(tmp_path: Path) -> Path:
    """Two blocks: one job in b0 (determined by its margins), two in b1."""
    rows = []
    truth = {"b0": [("A1", "F")], "b1": [("A2", "M"), ("A3", "M")]}
    for b, jobs in truth.items():
        rows.append(
            {
                "table": "t",
                "block": b,
                "age": None,
                "sex": None,
                "status": "exact",
                "value": float(len(jobs)),
            }
        )
        for a in ("A1", "A2", "A3"):
            rows.append(
                {
                    "table": "a",
                    "block": b,
                    "age": a,
                    "sex": None,
                    "status": "exact",
                    "value": float(sum(j[0] == a for j in jobs)),
                }
            )
        for s in ("F", "M"):
            rows.append(
                {
                    "table": "s",
                    "block": b,
                    "age": None,
                    "sex": s,
                    "status": "exact",
                    "value": float(sum(j[1] == s for j in jobs)),
                }
            )
    p = tmp_path / "cells.csv"
    pl.DataFrame(rows).write_csv(p)
    return p


def test_reconstruct_a_format_file_prints_json_with_rates_only(tmp_path: Path) -> None:
    r = run_cli(["audit", "reconstruct", str(_cells(tmp_path)), "--json", "--quiet"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    rec = res["records"]
    # b0: one job, determined; b1: ages A2, A3 and two males: determined too
    assert rec["records_rebuilt"] == 3 and rec["records_certain"] == 3
    assert res["intervals"]["cells_pinned"] == 0

    def lists(x: object) -> list[list[object]]:
        if isinstance(x, dict):
            return [v for k in x for v in lists(x[k])]
        if isinstance(x, list):
            return [x, *[v for k in x for v in lists(k)]]
        return []

    # aggregate output: lists hold names and notes only, never numbers (no cell values)
    assert all(isinstance(v, str) for lst in lists(res) for v in lst)


def test_workers_give_the_same_result(tmp_path: Path) -> None:
    base = ["audit", "reconstruct", str(_cells(tmp_path)), "--json", "--quiet", "--no-intervals"]
    one = json.loads(run_cli(base).stdout)["records"]
    two = json.loads(run_cli([*base, "--workers", "2"]).stdout)["records"]
    assert two["how"]["workers"] == 2
    for key in ("records_rebuilt", "records_certain", "units_failed"):
        assert one[key] == two[key]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--level", "1.5"], "--level must be in (0, 1)"),
        (["--unit", "tract"], "no table is classified by the unit 'tract'"),
        (["--only", "zz"], "no unit code starts with 'zz'"),
        (["--workers", "0"], "--workers must be positive"),
    ],
)
def test_bad_options_exit_2_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "out"
    r = run_cli(["audit", "reconstruct", str(_cells(tmp_path)), "--out", str(out), *args])
    assert r.exit_code == 2
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.output and not out.exists()


def test_a_bad_cell_names_file_row_and_column(tmp_path: Path) -> None:
    p = _cells(tmp_path)
    pl.read_csv(p).with_columns(pl.lit("maybe").alias("status")).write_csv(p)
    r = run_cli(["audit", "reconstruct", str(p)])
    assert r.exit_code == 2
    assert f"file {p}, row 1, column 'status'" in r.stderr


def test_a_noise_infusion_release_through_protect(tmp_path: Path) -> None:
    d = tmp_path / "data"
    d.mkdir()
    s = synth_parametric(2, 150, n_counties=1, tracts_per_county=1, blocks_per_tract=8)
    s.workplace.write_parquet(d / "workplace.parquet")
    s.worker.write_parquet(d / "worker.parquet")
    s.job.write_parquet(d / "job.parquet")
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'name = "ni"\n[data]\nkind = "eree"\nworkplace = "data/workplace.parquet"\n'
        'worker = "data/worker.parquet"\njob = "data/job.parquet"\n'
        '[privacy]\ndefinition = "none"\n'
        '[[query]]\nname = "c"\nby = ["block"]\nmechanism = "noise_infusion"\n'
        '[[query]]\nname = "s"\nby = ["block", "sex"]\nmechanism = "noise_infusion"\n'
    )
    rel = tmp_path / "rel"
    r = run_cli(["protect", str(spec), "--out", str(rel), "--seed", "1"])
    assert r.exit_code == 0, r.output
    out = tmp_path / "audit"
    r = run_cli(
        [
            "audit",
            "reconstruct",
            str(rel),
            "--truth",
            str(d),
            "--out",
            str(out),
            "--max-candidates",
            "50",
        ]
    )
    assert r.exit_code == 0, r.output
    res = json.loads((out / "reconstruction.json").read_text())
    t = res["records"]["against_truth"]
    assert t["records"] == 150
    # zeros are exact under noise infusion: records certain are right
    assert t["share_certain_correct"] == 1.0
    assert res["status"] == {
        "exact": res["status"].get("exact", 0),
        "range": res["status"]["range"],
    }
    assert "noise infusion read as ranges" in " ".join(res["notes"])
    assert "against the truth" in r.stdout


def test_frontier_of_establishments_writes_rates_and_a_plot(tmp_path: Path) -> None:
    from tests.suppression.helpers import random_qcew

    f = tmp_path / "est.csv"
    random_qcew(5, 200).with_columns(pl.col("m1emp").alias("m3emp")).write_csv(f)
    out = tmp_path / "fr"
    r = run_cli(
        [
            "audit",
            "reconstruct-frontier",
            str(f),
            "--establishments",
            "--out",
            str(out),
            "--budget-factors",
            "1,4",
            "--coarsening",
            "none",
        ]
    )
    assert r.exit_code == 0, r.output
    res = pl.read_csv(out / "frontier.csv")
    assert res.get_column("method").to_list() == ["exact", "suppressed", "gedp", "gedp"]
    row = {x["method"]: x for x in res.to_dicts()}
    assert row["exact"]["share_lone_within_10pct"] == 1.0  # published exactly
    assert row["suppressed"]["share_withheld"] > 0
    assert (out / "frontier.png").stat().st_size > 1000
    r = run_cli(
        [
            "audit",
            "reconstruct-frontier",
            str(f),
            "--establishments",
            "--out",
            str(tmp_path / "x"),
            "--budget-factors",
            "1,-2",
        ]
    )
    assert r.exit_code == 2 and "--budget-factors: give positive numbers" in r.stderr


def _factor_cells(tmp_path: Path, known: bool) -> Path:
    """One establishment's block × age cells, each published as 1.1 × its true value
    (10, 20, 30), read as ranges for t = 0.15; with ``known`` the attacker knows A1 = 10."""
    true = {"A1": 10.0, "A2": 20.0, "A3": 30.0}
    rows = [
        {
            "table": "a",
            "block": "b0",
            "age": a,
            "status": "range",
            "value": 1.1 * x,
            "lower": x if known and a == "A1" else 1.1 * x / 1.15,
            "upper": x if known and a == "A1" else 1.1 * x / 0.85,
            "factor": "w0",
        }
        for a, x in true.items()
    ]
    p = tmp_path / "factor.csv"
    pl.DataFrame(rows).write_csv(p)
    return p


def test_a_shared_factor_gives_the_shape_and_with_one_cell_the_size(tmp_path: Path) -> None:
    """§5.2 in the format: shares 1/6, 2/6, 3/6 whatever f; one known cell gives f = 1.1
    and every cell (the interval audit; --no-records)."""
    for known, pinned in ((False, 0), (True, 3)):
        p = _factor_cells(tmp_path, known)
        r = run_cli(["audit", "reconstruct", str(p), "--json", "--quiet", "--no-records"])
        assert r.exit_code == 0, r.output
        iv = json.loads(r.stdout)["intervals"]
        assert iv["factor_groups"] == 1 and iv["factor_groups_shape_pinned"] == 1
        assert iv["cells_pinned"] == pinned


def test_a_bad_factor_cell_names_file_row_and_column(tmp_path: Path) -> None:
    p = _factor_cells(tmp_path, False)
    pl.read_csv(p).with_columns(
        pl.when(pl.col("age") == "A2").then(None).otherwise(pl.col("value")).alias("value")
    ).write_csv(p)
    out = tmp_path / "out"
    r = run_cli(["audit", "reconstruct", str(p), "--out", str(out)])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
    assert f"file {p}, row 2, column 'value'" in r.stderr and "Traceback" not in r.output
    assert not out.exists()
