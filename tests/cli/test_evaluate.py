"""``eree evaluate …`` and ``eree audit noise-infusion``: the commands, through Typer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from eree.cli.audit import audit_noise_infusion
from eree.cli.evaluate import evaluate_haney, evaluate_webb, workshop_figure1
from eree.synth.qcew import synth_qcew_parametric


def _app(name: str, command: object) -> typer.Typer:
    """An app with ``command`` as ``name`` and a second command, so the name is needed."""
    app = typer.Typer()
    app.command(name)(command)
    app.command("noop")(lambda: None)
    return app


def test_cli_functions(tmp_path):
    app = typer.Typer()
    app.command("evaluate")(evaluate_haney)
    app.command("noise-infusion")(audit_noise_infusion)
    runner = CliRunner()
    out = tmp_path / "h"
    res = runner.invoke(
        app,
        ["evaluate", "haney-workload1", "--out", str(out), "--trials", "2", "--small-grid",
         "--jobs", "5000", "--seed", "4"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (out / "results.csv").exists() and (out / "report.html").exists()
    assert "NOT FOR PUBLICATION" in res.output
    res = runner.invoke(app, ["evaluate", "haney-nope", "--out", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "unknown experiment" in res.output
    assert not (tmp_path / "nope").exists()
    res = runner.invoke(
        app, ["noise-infusion", "--trials", "2", "--jobs", "20000", "--out", str(tmp_path / "a")],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (tmp_path / "a" / "audit.csv").exists()
    assert "zeros" in res.output


def test_small_grid_headline_shows_numbers(tmp_path):
    res = CliRunner().invoke(
        _app("evaluate", evaluate_haney),
        ["evaluate", "haney-workload1", "--out", str(tmp_path / "h"), "--trials", "2",
         "--small-grid", "--jobs", "5000", "--quiet"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "at ε = 4, α = 0.1" in res.output
    rows = [ln for ln in res.output.splitlines() if ln.startswith("haney-workload1 ")]
    assert len(rows) == 3  # the three ER-EE mechanisms
    assert all("nan" not in ln and "—" not in ln for ln in rows), rows


def test_ctrl_c_writes_the_partial_run_with_a_note(tmp_path, monkeypatch):
    import eree.evaluate.haney as haney

    real = haney.run_haney

    def interrupted(*a, **k):
        finished = []

        def stop_after_two(msg: str) -> None:  # Ctrl-C after 2 finished parameter points
            if "(omitted)" not in msg:
                finished.append(msg)
                if len(finished) == 2:
                    raise KeyboardInterrupt

        k["progress"] = stop_after_two
        return real(*a, **k)

    monkeypatch.setattr(haney, "run_haney", interrupted)
    out = tmp_path / "h"
    res = CliRunner().invoke(
        _app("evaluate", evaluate_haney),
        ["evaluate", "haney-workload1", "--out", str(out), "--trials", "2", "--small-grid",
         "--jobs", "5000", "--workers", "1"],
    )  # fmt: skip
    assert res.exit_code == 130, res.output
    assert (out / "results.csv").exists() and (out / "report.html").exists()
    note = (out / "INTERRUPTED").read_text()
    assert "partial" in note and "2 of" in note
    assert json.loads((out / "run.json").read_text())["interrupted"] == note.strip()


@pytest.fixture(scope="module")
def small_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("webb") / "est.parquet"
    synth_qcew_parametric(3, 1500, n_counties=3).write(p)
    return p


def test_webb_command(small_file: Path, tmp_path: Path) -> None:
    app = _app("evaluate-webb", evaluate_webb)
    runner = CliRunner()
    out = tmp_path / "cmd"
    res = runner.invoke(
        app,
        ["evaluate-webb", "webb-table3", "--out", str(out), "--trials", "2",
         "--data", str(small_file)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (out / "results.csv").exists() and (out / "report.html").exists()
    assert "NOT FOR PUBLICATION" in res.output
    bad = runner.invoke(app, ["evaluate-webb", "webb-nope", "--out", str(out.with_name("bad"))])
    assert bad.exit_code == 2 and "unknown experiment" in bad.output
    assert not out.with_name("bad").exists()


def test_workshop_command_runs_through_typer(tmp_path):
    app = _app("workshop-figure1", workshop_figure1)
    out = tmp_path / "wf1"
    args = ["workshop-figure1", "--out", str(out), "--trials", "2", "--jobs", "2000",
            "--alphas", "0.1", "--epsilons", "1,4", "--variants", "workshop"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert (out / "workshop_figure1.png").exists() and not (out / "workshop_vs_sigmod.png").exists()
    assert "NOT FOR PUBLICATION" in res.output
    bad_args = [a if a != str(out) else str(tmp_path / "wf-bad") for a in args[:-2]]
    bad = CliRunner().invoke(app, [*bad_args, "--variants", "blowfish"])
    assert bad.exit_code == 2 and "variants" in bad.output
    assert not (tmp_path / "wf-bad").exists()


def test_publication_grade_command_writes_markdown_json_and_calibration(tmp_path):
    from eree.cli.evaluate import publication_grade
    from eree.evaluate.publication_grade import WORKLOADS

    data = tmp_path / "synth"
    from eree.cli import app as eree_app

    made = CliRunner().invoke(eree_app, ["synth", "lodes", "--out", str(data), "--jobs", "3000"])
    assert made.exit_code == 0, made.output
    app = _app("publication-grade", publication_grade)
    out = tmp_path / "pub"
    args = ["publication-grade", "--data", str(data), "--out", str(out), "--seeds", "2",
            "--workloads", "chain-state", "--mechanisms", "smooth_laplace,log_laplace",
            "--calibration-seeds", "2"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "NOT FOR PUBLICATION" in res.output
    doc = json.loads((out / "publication_eval.json").read_text())
    rows = doc["marginals"]
    # one row per marginal of the workload per mechanism, each over the 2 releases
    assert len(rows) == len(WORKLOADS["chain-state"]) * 2
    assert {r["mechanism"] for r in rows} == {"smooth_laplace", "log_laplace"}
    assert all(r["seeds"] == 2 and r["raw"] >= 0 and r["post"] >= 0 for r in rows)
    for r in rows:  # the ratio is raw / post, by definition
        assert r["ratio"] == pytest.approx(r["raw"] / r["post"]) if r["post"] > 0 else True
    md = (out / "publication_eval.md").read_text()
    assert "#### chain-state" in md and "calibration, smooth_laplace" in md
    cal = (out / "calibration.csv").read_text().splitlines()
    assert cal[0].count(",") >= 6 and len(cal) > 1
    assert all(line.endswith(",smooth_laplace") for line in cal[1:])  # Log-Laplace: no model
    bad = CliRunner().invoke(app, [*args[:3], "--out", str(tmp_path / "bad"), "--workloads", "x"])
    assert bad.exit_code == 2 and "unknown workload" in bad.output
    assert not (tmp_path / "bad").exists()


def test_publication_grade_evaluation_keeps_finished_pairs_on_ctrl_c(tmp_path):
    from eree.cli import app as eree_app
    from eree.evaluate.publication_grade import WORKLOADS, evaluate

    data = tmp_path / "synth"
    made = CliRunner().invoke(eree_app, ["synth", "lodes", "--out", str(data), "--jobs", "2000"])
    assert made.exit_code == 0, made.output

    def stop(_line: str) -> None:
        raise KeyboardInterrupt

    stopped: list[str] = []
    res = evaluate(data, workloads=["chain-state"], mechanisms=["log_laplace", "smooth_gamma"],
                   seeds=2, progress=stop, interrupted=stopped)  # fmt: skip
    assert len(stopped) == 1 and "after 0 of 2" in stopped[0]
    assert [r.mechanism for r in res] == ["log_laplace"] * len(WORKLOADS["chain-state"])
    with pytest.raises(KeyboardInterrupt):
        evaluate(data, workloads=["chain-state"], mechanisms=["log_laplace"], seeds=2,
                 progress=stop)  # fmt: skip


def test_publication_grade_gedp_tables_tabulated_from_the_microdata_vs_raw(tmp_path):
    from eree.cli import app as eree_app
    from eree.cli.evaluate import publication_grade

    lodes, qcew = tmp_path / "lodes", tmp_path / "qcew"
    runner = CliRunner()
    assert (
        runner.invoke(eree_app, ["synth", "lodes", "--out", str(lodes), "--jobs", "2000"]).exit_code
        == 0
    )
    made = runner.invoke(
        eree_app, ["synth", "qcew", "--out", str(qcew), "--establishments", "1500"]
    )
    assert made.exit_code == 0, made.output
    app = _app("publication-grade", publication_grade)
    out = tmp_path / "pub"
    args = ["publication-grade", "--data", str(lodes), "--out", str(out), "--seeds", "2",
            "--workloads", "chain-state", "--mechanisms", "log_laplace",
            "--calibration-seeds", "0", "--gedp-spec", str(qcew / "release.toml")]  # fmt: skip
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    rows = json.loads((out / "publication_eval.json").read_text())["marginals"]
    gedp = {r["marginal"]: r for r in rows if r["mechanism"] in ("psi", "pnc")}
    # the starter spec: identity (ψ) and three pnc group-by queries, four attributes each
    assert len(gedp) == 16 and "identity.m1emp" in gedp and "county_sector.wage" in gedp
    assert gedp["identity.m1emp"]["cells"] == 1500 and gedp["state.wage"]["cells"] == 1
    assert not (out / "calibration.csv").exists()
    lodes_spec = runner.invoke(app, [*args[:3], "--out", str(tmp_path / "bad"),
                                     "--gedp-spec", str(lodes / "release.toml")])  # fmt: skip
    assert lodes_spec.exit_code == 2 and "not an establishment" in lodes_spec.output
    assert not (tmp_path / "bad").exists()


def test_publication_grade_reports_oracle_bias_and_variance_calibration(tmp_path):
    from eree.cli import app as eree_app
    from eree.cli.evaluate import publication_grade

    data = tmp_path / "synth"
    made = CliRunner().invoke(eree_app, ["synth", "lodes", "--out", str(data), "--jobs", "3000"])
    assert made.exit_code == 0, made.output
    app = _app("publication-grade", publication_grade)
    runs = {}
    for flag in ([], ["--variance-calibration"]):
        out = tmp_path / f"pub{len(flag)}"
        args = ["publication-grade", "--data", str(data), "--out", str(out), "--seeds", "2",
                "--workloads", "chain-county", "--mechanisms", "smooth_laplace",
                "--calibration-seeds", "0", *flag]  # fmt: skip
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        runs[bool(flag)] = json.loads((out / "publication_eval.json").read_text())
        md = (out / "publication_eval.md").read_text()
        assert "oracle L1" in md and "not publishable" in md and "bias of each marginal" in md
    for cal, doc in runs.items():
        assert doc["meta"]["variance_calibration"] is cal
        for r in doc["marginals"]:
            assert r["oracle"] > 0 and r["oracle_ratio"] == pytest.approx(r["raw"] / r["oracle"])
            assert r["raw_bias_se"] > 0 and isinstance(r["post_bias_beyond_3se"], bool)
    # the same seeds: raw identical, oracle identical (it does not use the public model)
    off, on = (sorted(runs[c]["marginals"], key=lambda r: r["marginal"]) for c in (False, True))
    assert [r["raw"] for r in off] == [r["raw"] for r in on]
    assert [r["oracle"] for r in off] == [r["oracle"] for r in on]
    assert [r["post"] for r in off] != [r["post"] for r in on]  # the option took effect
