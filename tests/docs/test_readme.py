"""The README's "Using eree on your data" block runs verbatim from a fresh clone."""

from __future__ import annotations

import json
import shlex

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
    # the recommended spec: √(4·(0.7² + 0.3² + 0.6² + 0.7²)) (Webb et al. Thm 5.7)
    assert abs(gedp["privacy"]["total"]["mu"] - 2 * (0.49 + 0.09 + 0.36 + 0.49) ** 0.5) < 1e-9
    # its identity query is answered and charged, but no per-establishment table is written
    ident = next(q for q in gedp["queries"] if q["name"] == "identity")
    assert (
        ident["file"] is None and not (repo / "rel-qcew" / "tables" / "identity.parquet").exists()
    )
    # every query of the block's specs validates without a warning of its own
    for spec in ("pa-lodes-recommended", "qcew-recommended"):
        warned = [w for w in json.loads((repo / ("rel-2026q1" if spec.startswith("pa") else
                  "rel-qcew") / "manifest.json").read_text())["warnings"]
                  if w.get("query")]  # fmt: skip
        assert warned == [], (spec, warned)


def test_the_developer_line_is_what_ci_runs():
    """The README's developer line (its first block's line with the ``dev`` extra) and
    ``.ci/run`` run the same commands: a venv of their own, the install, the suite with the
    venv's Python (``.ci/run`` adds only ``--clear`` and pip's ``-q``)."""
    first = fenced((REPO / "README.md").read_text(encoding="utf-8"), "bash")[0]
    dev = [line.split("#")[0] for line in first.splitlines() if '".[dev]"' in line]
    assert len(dev) == 1, first
    readme = [shlex.split(c) for c in dev[0].split("&&")]
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8").replace("\\\n", " ")
    ci = [
        shlex.split(line)
        for line in script.splitlines()
        if line.strip() and not line.lstrip().startswith(("#", "if", "fi", "{", "SUDO"))
    ]
    extra = {"--clear", "-q"}
    for command in readme:
        assert [w for w in command if w not in extra] in [
            [w for w in c if w not in extra] for c in ci
        ], f"{shlex.join(command)!r} is on the README's developer line but not in .ci/run"
    assert readme[0][:3] == ["python", "-m", "venv"]
    venv = readme[0][3]
    assert all(c[0].startswith(f"{venv}/bin/") for c in readme[1:])
    assert "--system-site-packages" not in readme[0]
    assert f"/{venv}/" in (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
