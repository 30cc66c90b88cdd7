"""The README's "Using eree on your data" block runs verbatim from a fresh clone."""

from __future__ import annotations

import json

from tests.docs.blocks import REPO, fenced, fresh_clone, run_bash, section

HEADING = "## Using eree on your data"


def _block() -> str:
    blocks = fenced(section((REPO / "README.md").read_text(encoding="utf-8"), HEADING), "bash")
    assert len(blocks) == 1, f"{HEADING!r} must hold exactly one bash block"
    return blocks[0]


def test_the_block_is_the_data_path_not_the_paper_evaluations():
    block = _block()
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert not any(c.startswith(("eree evaluate", "eree audit", "eree demo")) for c in commands)
    for step in ("eree synth", "eree explain", "eree protect", "eree ledger budget", "--ledger"):
        assert any(step in c for c in commands), step


def test_readme_block_runs_verbatim_from_a_fresh_clone(tmp_path, shared_data):
    repo = fresh_clone(tmp_path, shared_data)
    r = run_bash(_block(), repo)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    # what the block promises: a secure release, a ledger-charged one with a verified
    # chain, a seeded one marked NOT FOR PUBLICATION, and an establishment release
    first = json.loads((repo / "rel-2026q1" / "manifest.json").read_text())
    assert first["random"]["mode"] == "secure"
    assert not (repo / "rel-2026q1" / "NOT_FOR_PUBLICATION").exists()
    assert (repo / "rel-2026q2" / "manifest.json").is_file()
    assert (repo / "exp" / "NOT_FOR_PUBLICATION").is_file()
    assert "pa-2015" in r.stdout
    gedp = json.loads((repo / "rel-qcew" / "manifest.json").read_text())
    assert gedp["privacy"]["definition"] == "gedp"
    assert abs(gedp["privacy"]["total"]["mu"] - 2.3065) < 1e-3  # Table 7: sqrt(sum mu_q^2)
