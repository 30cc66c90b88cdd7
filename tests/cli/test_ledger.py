"""`eree ledger budget|show|verify` and `eree protect --ledger` through the command."""

from __future__ import annotations

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from eree.cli import app
from tests.release.conftest import SPEC, write_small_job_tables

runner = CliRunner()


@pytest.fixture
def spec(tmp_path):
    write_small_job_tables(tmp_path / "data")
    p = tmp_path / "spec.toml"
    p.write_text(SPEC)  # "small": ε = 10, δ ≈ 0.037 at α = 0.1
    return p


class Run:
    """A command's exit code and output, with the console's line wrapping undone."""

    def __init__(self, *args):
        r = runner.invoke(app, [str(a) for a in args])
        self.exit_code = r.exit_code
        self.output = " ".join(r.output.split())
        self.raw = r.output


invoke = Run


@pytest.mark.parametrize("cmd", ["budget", "show", "verify"])
def test_ledger_subcommands_have_help_with_an_example(cmd):
    r = invoke("ledger", cmd, "--help")
    assert r.exit_code == 0 and "Example: eree ledger " + cmd in r.output


def test_register_release_show_verify(spec, tmp_path):
    led = tmp_path / "l.sqlite"
    r = invoke("protect", spec, "--out", tmp_path / "r0", "--ledger", led)
    assert r.exit_code == 2 and "not registered" in r.output
    r = invoke("ledger", "budget", led, "small", "--epsilon", 25, "--delta", 0.1, "--alpha", 0.1)
    assert r.exit_code == 0, r.output
    for i in (1, 2):
        r = invoke("protect", spec, "--out", tmp_path / f"r{i}", "--ledger", led)
        assert r.exit_code == 0, r.output
        assert "ledger row" in r.output
    r = invoke("protect", spec, "--out", tmp_path / "r3", "--ledger", led)
    assert r.exit_code == 2 and "lifetime budget of 'small'" in r.output  # 30 > 25
    assert not (tmp_path / "r3").exists()
    r = invoke("ledger", "show", led, "--json")
    shown = json.loads(r.raw)
    (ds,) = shown["datasets"]
    assert ds["dataset"] == "small" and ds["spent"]["epsilon"] == 20.0  # 10 + 10
    assert ds["releases"] == {"committed": 2, "pending": 0, "void": 0}
    r = invoke("ledger", "verify", led, "--release", tmp_path / "r1", "--release", tmp_path / "r2")
    assert r.exit_code == 0 and "chain intact" in r.output
    con = sqlite3.connect(led)
    con.execute("DELETE FROM events WHERE id = (SELECT min(id) FROM events WHERE kind='commit')")
    con.commit()
    r = invoke("ledger", "verify", led)
    assert r.exit_code == 1 and "deleted" in r.output


def test_seed_with_ledger_is_refused(spec, tmp_path):
    led = tmp_path / "l.sqlite"
    invoke("ledger", "budget", led, "small", "--epsilon", 25, "--delta", 0.1)
    r = invoke("protect", spec, "--out", tmp_path / "r", "--ledger", led, "--seed", 1)
    assert r.exit_code == 2 and "--seed cannot be combined with --ledger" in r.output
    assert not (tmp_path / "r").exists()
    assert json.loads(invoke("ledger", "show", led, "--json").raw)["releases"] == []


def test_budget_needs_one_family(tmp_path):
    led = tmp_path / "l.sqlite"
    r = invoke("ledger", "budget", led, "x", "--epsilon", 1, "--mu", 1)
    assert r.exit_code == 2 and "not both" in r.output
    r = invoke("ledger", "budget", led, "x")
    assert r.exit_code == 2 and "--epsilon" in r.output


def test_show_of_a_missing_ledger_is_a_clean_error(tmp_path):
    r = invoke("ledger", "show", tmp_path / "nope.sqlite")
    assert r.exit_code == 2 and "no ledger" in r.output


def test_a_readable_key_is_refused_with_the_remedy(spec, tmp_path):
    import os

    led = tmp_path / "l.sqlite"
    invoke("ledger", "budget", led, "small", "--epsilon", 25, "--delta", 0.1, "--alpha", 0.1)
    os.chmod(tmp_path / "l.sqlite.key", 0o644)
    for args in (("ledger", "verify", led),
                 ("protect", spec, "--out", tmp_path / "r", "--ledger", led)):  # fmt: skip
        r = invoke(*args)
        assert r.exit_code == 2 and "chmod 600" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(("flag", "value"), [("--delta", 1), ("--delta", 2), ("--mu", 1e200)])
def test_a_budget_that_promises_nothing_is_refused(tmp_path, flag, value):
    led = tmp_path / "l.sqlite"
    extra = ["--epsilon", 1] if flag == "--delta" else []
    r = invoke("ledger", "budget", led, "d", *extra, flag, value)
    assert r.exit_code == 2
    assert ("promises nothing" in r.output) or ("distinguishes" in r.output)
    assert "Traceback" not in r.output
