"""The one CLI convention (docs/cli.md): ``--out``, ``--force``, umask, help, version.

Every command is found from the Typer app itself, so a new command cannot escape these
tests: each one with ``--out`` must refuse a non-empty folder (exit 2, one line, nothing
written), and each one must have its own first help line and an example.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import typer

from eree.cli import app, register_lazy_commands
from tests.cli.inputs import run_cli, write_eree_case

register_lazy_commands()
ROOT = typer.main.get_command(app)


def _leaves(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command under ``group`` (Typer's click: duck-typed), lazy ones loaded."""
    if hasattr(group, "_load"):
        group._load()
    ctx = group.context_class(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None, name
        if hasattr(cmd, "commands"):
            yield from _leaves(cmd, (*path, name))
        else:
            yield (*path, name), cmd


COMMANDS = dict(_leaves(ROOT))
WITH_OUT = {
    p: c for p, c in COMMANDS.items() if any("--out" in getattr(x, "opts", []) for x in c.params)
}


def test_the_app_is_walked_completely():
    # the commands that write a folder (docs/cli.md), found by walking the app
    expected = {("protect",), ("demo",), ("suppress",), ("audit", "suppression"),
                ("audit", "privacy"), ("audit", "noise-infusion"), ("synth", "lodes"),
                ("synth", "qcew"), ("evaluate", "haney-all"), ("evaluate", "webb-table11"),
                ("evaluate", "workshop-figure1")}  # fmt: skip
    assert expected <= set(WITH_OUT)
    assert len([p for p in WITH_OUT if p[0] == "evaluate"]) == 13  # 6 haney, 5 webb, workshop, pub
    assert ("explain",) in COMMANDS and ("ledger", "verify") in COMMANDS


def _args_for(path: tuple[str, ...], cmd: Any, out: Path) -> list[str]:
    """The command with its required arguments filled in (the --out check comes first)."""
    args = list(path)
    for p in cmd.params:
        if p.param_type_name == "argument" and p.required:
            args.append("placeholder-input")
    return [*args, "--out", str(out)]


@pytest.mark.parametrize("path", sorted(WITH_OUT), ids=" ".join)
def test_a_non_empty_out_is_refused_and_nothing_is_written(tmp_path, path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    r = run_cli(_args_for(path, WITH_OUT[path], out))
    assert r.exit_code == 2, (path, r.output)
    err = r.stderr.strip()
    assert err.startswith("error:") and "not empty" in err and "--force" in err, err
    assert "Traceback" not in r.output
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no partial sibling


@pytest.mark.parametrize("path", sorted(WITH_OUT), ids=" ".join)
def test_force_never_replaces_a_folder_eree_did_not_write(tmp_path, path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    r = run_cli([*_args_for(path, WITH_OUT[path], out), "--force"])
    assert r.exit_code == 2, (path, r.output)
    assert "not written by eree" in r.stderr
    assert (out / "thesis.tex").read_text() == "years of work"


def _synth(out: Path, *extra: str) -> object:
    return run_cli(["synth", "lodes", "--out", str(out), "--jobs", "1500", *extra])


def test_force_replaces_an_earlier_output_of_eree(tmp_path):
    out = tmp_path / "pa"
    assert _synth(out, "--seed", "1").exit_code == 0
    first = (out / "job.parquet").read_bytes()
    r = _synth(out, "--seed", "2")
    assert r.exit_code == 2 and "not empty" in r.stderr
    assert (out / "job.parquet").read_bytes() == first
    # a file eree did not write stops --force (tests/data/test_force.py has the rest)
    (out / "notes.txt").write_text("the analyst's")
    r = _synth(out, "--seed", "2", "--force")
    assert r.exit_code == 2 and "did not write: notes.txt" in r.stderr, r.stderr
    (out / "notes.txt").unlink()
    r = _synth(out, "--seed", "2", "--force")
    assert r.exit_code == 0, r.output
    assert (out / "job.parquet").read_bytes() != first
    assert json.loads((out / ".eree-output").read_text())["written_by"] == "eree synth lodes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pa"]  # the old one is gone


def test_force_never_overwrites_a_release_recorded_in_a_ledger(tmp_path):
    spec = write_eree_case(tmp_path)
    ledger = tmp_path / "budget.sqlite"
    assert run_cli(["ledger", "budget", str(ledger), "fuzz-eree", "--epsilon", "100",
                    "--delta", "0.5", "--alpha", "0.1"]).exit_code == 0  # fmt: skip
    rel = tmp_path / "rel"
    r = run_cli(["protect", str(spec), "--out", str(rel), "--ledger", str(ledger)])
    assert r.exit_code == 0, r.output
    before = (rel / "manifest.json").read_bytes()
    for extra in ([], ["--ledger", str(ledger)], ["--seed", "1"]):
        r = run_cli(["protect", str(spec), "--out", str(rel), "--force", *extra])
        assert r.exit_code == 2, (extra, r.output)
        assert "ledger" in r.stderr, r.stderr
        assert (rel / "manifest.json").read_bytes() == before
    # an unpublished (seeded) release may be replaced, but not by a ledger release
    exp = tmp_path / "exp"
    assert run_cli(["protect", str(spec), "--out", str(exp), "--seed", "1"]).exit_code == 0
    r = run_cli(["protect", str(spec), "--out", str(exp), "--force", "--ledger", str(ledger)])
    assert r.exit_code == 2 and "new or empty" in r.stderr, r.stderr
    r = run_cli(["protect", str(spec), "--out", str(exp), "--force", "--seed", "2"])
    assert r.exit_code == 0, r.output
    assert json.loads((exp / "manifest.json").read_text())["random"]["seed"] == 2


@contextmanager
def _umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_outputs_respect_the_umask_and_secrets_stay_owner_only(tmp_path, mask):
    spec = write_eree_case(tmp_path)
    ledger = tmp_path / "budget.sqlite"
    with _umask(mask):
        assert run_cli(["ledger", "budget", str(ledger), "fuzz-eree", "--epsilon", "100",
                        "--delta", "0.5", "--alpha", "0.1"]).exit_code == 0  # fmt: skip
        rel = tmp_path / "rel"
        r = run_cli(["protect", str(spec), "--out", str(rel), "--ledger", str(ledger)])
        assert r.exit_code == 0, r.output
        syn = tmp_path / "syn"
        assert _synth(syn).exit_code == 0
    dirs, files = 0o777 & ~mask, 0o666 & ~mask
    for folder in (rel, rel / "tables", syn):
        assert _mode(folder) == dirs, (folder, oct(_mode(folder)))
    for f in (rel / "manifest.json", *(rel / "tables").iterdir(), syn / "job.parquet",
              syn / "release.toml"):  # fmt: skip
        assert _mode(f) == files, (f, oct(_mode(f)))
    key = ledger.with_name(ledger.name + ".key")
    assert key.exists() and _mode(key) == 0o600


def test_every_command_has_its_own_description_and_an_example():
    firsts: dict[str, tuple[str, ...]] = {}
    for path, cmd in COMMANDS.items():
        text = (cmd.help or "").strip()
        first = text.split("\n\n")[0].strip()
        assert first, path
        assert first not in firsts, f"{' '.join(path)} and {' '.join(firsts[first])}: {first}"
        firsts[first] = path
        assert "Example: eree " in text, path
        example = text.split("Example: ")[1].split()
        assert example[1 : 1 + len(path)] == list(path), (path, example)
        assert "DES" + "IGN" not in text, path  # users do not have the design brief


def test_help_of_every_command_renders_with_h_and_help():
    for path in COMMANDS:
        for flag in ("-h", "--help"):
            r = run_cli([*path, flag])
            assert r.exit_code == 0 and "Example" in r.output, (path, flag, r.output)
    r = run_cli(["evaluate", "haney-workload2", "--help"])
    assert "Figure 3" in r.output and "Workload 2" in r.output


def test_version():
    from eree import __version__

    r = run_cli(["--version"])
    assert r.exit_code == 0 and r.stdout.strip() == f"eree {__version__}"


@pytest.mark.parametrize(
    "synth",
    [["synth", "lodes", "--jobs", "3000", "--seed", "4"],
     ["synth", "qcew", "--establishments", "800", "--seed", "4"]],
    ids=["lodes", "qcew"],
)  # fmt: skip
def test_synth_writes_a_starter_spec_that_explain_and_protect_accept(tmp_path, synth, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the relative paths of the README's commands
    r = run_cli([*synth, "--out", "data"])
    assert r.exit_code == 0, r.output
    assert "data/release.toml" in r.stdout
    r = run_cli(["explain", "data/release.toml"])
    assert r.exit_code == 0, r.output
    r = run_cli(["protect", "data/release.toml", "--out", "rel", "--seed", "1"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "rel" / "manifest.json").exists()
    # from another working directory too: the spec's paths are relative to the spec
    monkeypatch.chdir(tmp_path.parent)
    r = run_cli(["protect", str(tmp_path / "data" / "release.toml"), "--out",
                 str(tmp_path / "rel2"), "--seed", "1"])  # fmt: skip
    assert r.exit_code == 0, r.output


def test_qcew_starter_spec_keeps_counties_of_different_states_apart(tmp_path, monkeypatch):
    """County codes repeat across states: the starter spec groups by (state, county)."""
    import polars as pl

    area = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "qcew_2016_by_area"
    if not area.is_dir():
        pytest.skip("../shared/data/qcew_2016_by_area is absent")
    monkeypatch.chdir(tmp_path)
    r = run_cli(["synth", "qcew", "--qcew-area", str(area), "--out", "data", "--seed", "2"])
    assert r.exit_code == 0, r.output
    r = run_cli(["protect", "data/release.toml", "--out", "rel", "--seed", "1"])
    assert r.exit_code == 0, r.output
    truth = pl.read_csv("data/establishments.csv.gz", infer_schema_length=0)
    pairs = truth.select("state", "cnty").unique().height
    states = truth.select("state").unique().height
    assert states > 1  # the folder holds several states (else the test proves nothing)
    assert pl.read_parquet("rel/tables/county.parquet").height == pairs
    assert pl.read_parquet("rel/tables/state.parquet").height == states
