"""System tests through the `eree` command."""

import json

import polars as pl
from typer.testing import CliRunner

from eree.cli import app
from tests.release.conftest import SPEC, write_small_job_tables

runner = CliRunner()


def _spec(tmp_path, text=SPEC):
    write_small_job_tables(tmp_path / "data")
    p = tmp_path / "spec.toml"
    p.write_text(text)
    return p


def test_help_lists_commands():
    r = runner.invoke(app, ["--help"])
    assert r.exit_code == 0
    for cmd in ("demo", "protect", "explain", "synth"):
        assert cmd in r.output


def test_explain_prints_costs_and_semantics(tmp_path):
    r = runner.invoke(app, ["explain", str(_spec(tmp_path))])
    assert r.exit_code == 0, r.output
    assert "county_age_sex" in r.output and "total" in r.output
    assert "e^" in r.output  # the Bayes-factor statement
    r = runner.invoke(app, ["explain", str(tmp_path / "spec.toml"), "--json"])
    assert json.loads(r.output)["privacy"]["total"]["epsilon"] == 10.0


def test_protect_seeded_says_not_for_publication(tmp_path):
    spec = _spec(tmp_path)
    r = runner.invoke(app, ["protect", str(spec), "--out", str(tmp_path / "rel"), "--seed", "5"])
    assert r.exit_code == 0, r.output
    assert "NOT FOR PUBLICATION" in r.output
    m = json.loads((tmp_path / "rel" / "manifest.json").read_text())
    assert m["random"]["mode"] == "seeded"
    assert pl.read_parquet(tmp_path / "rel" / "tables" / "county.parquet").height > 0


def test_protect_secure_by_default(tmp_path):
    spec = _spec(tmp_path)
    r = runner.invoke(app, ["protect", str(spec), "--out", str(tmp_path / "rel")])
    assert r.exit_code == 0, r.output
    assert "NOT FOR PUBLICATION" not in r.output
    m = json.loads((tmp_path / "rel" / "manifest.json").read_text())
    assert m["random"]["mode"] == "secure" and m["random"]["seed"] is None
    assert "float-safe" in m["random"]["sampler"]
    # every query's public grid is recorded (docs/privacy.md: counts on the grid 1)
    for q in m["queries"]:  # log-space grid for Log-Laplace
        assert q["params"]["grid"] == (2.0**-20 if q["mechanism"] == "log_laplace" else 1.0)


def test_errors_are_clean_and_exit_2(tmp_path):
    spec = _spec(tmp_path, SPEC.replace("epsilon = 6.0", "epsilom = 6.0"))
    r = runner.invoke(app, ["explain", str(spec)])
    assert r.exit_code == 2
    assert "did you mean 'epsilon'" in r.output
    assert "Traceback" not in r.output
    spec.write_text(SPEC.replace("alpha = 0.1", "alpha = 0.1\nepsilon = 1"))
    r = runner.invoke(app, ["explain", str(spec)])
    assert r.exit_code == 2 and "in [privacy]" in r.output


def test_synth_lodes_parametric(tmp_path):
    r = runner.invoke(app, ["synth", "lodes", "--out", str(tmp_path / "s"), "--jobs", "3000"])
    assert r.exit_code == 0, r.output
    assert pl.read_parquet(tmp_path / "s" / "job.parquet").height == 3000


def test_demo_runs_end_to_end(tmp_path):
    r = runner.invoke(app, ["demo", "--out", str(tmp_path / "demo"), "--seed", "1"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "demo" / "report.html").exists()
    m = json.loads((tmp_path / "demo" / "releases" / "lodes" / "manifest.json").read_text())
    assert m["privacy"]["total"]["epsilon"] == 12.0  # 2 + 2 + 2 + 6 (the demo spec)
    g = json.loads((tmp_path / "demo" / "releases" / "qcew" / "manifest.json").read_text())
    assert g["privacy"]["definition"] == "gedp" and g["privacy"]["total"]["mu"] > 0
    assert "demo finished" in r.output


def test_synth_qcew_parametric(tmp_path):
    out = tmp_path / "e"
    r = runner.invoke(
        app, ["synth", "qcew", "--out", str(out), "--establishments", "500", "--format", "parquet"]
    )
    assert r.exit_code == 0, r.output
    df = pl.read_parquet(out / "establishments.parquet")
    assert df.height == 500 and {"primary_key", "cnty", "m3emp", "wage"} <= set(df.columns)


def test_explain_the_papers_two_gedp_configurations():
    from pathlib import Path

    examples = Path(__file__).resolve().parents[2] / "examples"
    r = runner.invoke(app, ["explain", str(examples / "syn-ri-section8-1.toml")])
    assert r.exit_code == 0, r.output
    assert "μ_total = 2.28" in r.output and "2.28 (2.2847)" in r.output
    r = runner.invoke(app, ["explain", str(examples / "syn-ri-table7.toml")])
    assert r.exit_code == 0, r.output
    assert "μ_total = 2.31" in r.output and "power ≤" in r.output


def test_experiment_and_audit_commands_are_registered(tmp_path):
    r = runner.invoke(
        app,
        ["evaluate", "haney-workload1", "--out", str(tmp_path / "w1"), "--small-grid",
         "--trials", "2", "--jobs", "4000"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert (tmp_path / "w1" / "results.csv").exists()
    for cmd in (["evaluate", "webb-all", "--help"], ["evaluate", "workshop-figure1", "--help"],
                ["audit", "noise-infusion", "--help"], ["audit", "suppression", "--help"],
                ["suppress", "--help"]):  # fmt: skip
        r = runner.invoke(app, cmd)
        assert r.exit_code == 0, (cmd, r.output)


def test_version_and_short_help():
    import tomllib
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    version = tomllib.loads(pyproject.read_text())["project"]["version"]
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output.strip() == f"eree {version}"
    for args in (["-h"], ["protect", "-h"], ["ledger", "budget", "-h"], ["audit", "privacy", "-h"]):
        r = runner.invoke(app, args)
        assert r.exit_code == 0 and "Usage" in r.output, args
