"""The tutorials and the Python API page run as written, block by block, from a fresh copy."""

from __future__ import annotations

import json

from tests.docs.blocks import REPO, fenced, fresh_clone, run_document, run_python


def _doc(name: str) -> str:
    return (REPO / "docs" / name).read_text(encoding="utf-8")


def test_tutorial_lodes_runs_as_written(tmp_path):
    repo = fresh_clone(tmp_path)  # the parametric generator: no ../shared needed
    results = run_document(_doc("tutorial-lodes.md"), repo)
    out = repo / "tutorial-lodes"
    manifest = json.loads((out / "release" / "manifest.json").read_text())
    assert manifest["privacy"]["total"]["epsilon"] == 6.0
    assert (out / "release" / "report.html").is_file()
    # the over-budget release was refused and wrote nothing
    assert not (out / "release-q2").exists()
    assert any("refused: 6 + 6 > 10" in r.stdout for r in results)
    assert (out / "release-publication" / "tables" / "county.parquet").is_file()


def test_tutorial_qcew_runs_as_written(tmp_path, shared_data):
    repo = fresh_clone(tmp_path, shared_data)
    run_document(_doc("tutorial-qcew.md"), repo)
    out = repo / "tutorial-qcew"
    for mech in ("psi", "pnc", "adaptive"):
        assert (out / f"release-{mech}" / "NOT_FOR_PUBLICATION").is_file()
    manifest = json.loads((out / "release" / "manifest.json").read_text())
    assert manifest["random"]["mode"] == "secure"
    assert abs(manifest["privacy"]["total"]["mu"] - 2.3065) < 1e-3  # Table 7


def test_planning_page_runs_as_written(tmp_path):
    repo = fresh_clone(tmp_path)
    results = run_document(_doc("planning.md"), repo)
    assert "target: within 10% at 100 jobs, 90% of the time — met" in results[0].stdout
    assert "of [plan] 20" in results[1].stdout
    planned = (repo / "planning" / "planned.toml").read_text(encoding="utf-8")
    assert "planned by eree plan" in planned


def test_choosing_parameters_snippet_runs(tmp_path):
    results = run_document(_doc("choosing-parameters.md"), tmp_path)
    out = results[-1].stdout
    # by hand: 2·√2·max(0.1·40, 1)/1 = 11.3; σ = 0.5/0.6, σ·√(2(2·10⁴ + σ²)) = 166.7
    assert "Smooth Laplace: ±11.3 jobs" in out
    assert "psi: ±167," in out


def test_python_api_notebook_runs_in_one_session(tmp_path):
    blocks = fenced(_doc("python-api.md"), "python")
    assert len(blocks) >= 6
    r = run_python("\n".join(blocks), fresh_clone(tmp_path))  # one session, blocks in order
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "empirical std" in r.stdout
