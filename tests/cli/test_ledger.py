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
    assert r.exit_code == 2 and "no ledger at" in r.output
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


def _edit_manifest(release, **changes):
    path = release / "manifest.json"
    m = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            m.pop(key, None)
        else:
            m[key] = value
    path.write_text(json.dumps(m))
    return m


def _seeded_marks(src, dest):
    """Copy a seeded release's marks (the file, and each table's Parquet metadata) onto
    ``dest``'s tables, as a forger would."""
    import pyarrow.parquet as pq

    (dest / "NOT_FOR_PUBLICATION").write_text((src / "NOT_FOR_PUBLICATION").read_text())
    for t in (dest / "tables").glob("*.parquet"):
        table = pq.read_table(t)
        meta = {**(table.schema.metadata or {}), b"eree.random": b"seeded: NOT FOR PUBLICATION"}
        pq.write_table(table.replace_schema_metadata(meta), t)


@pytest.fixture
def charged_and_seeded(spec, tmp_path):
    led = tmp_path / "l.sqlite"
    invoke("ledger", "budget", led, "small", "--epsilon", 25, "--delta", 0.1, "--alpha", 0.1)
    assert invoke("protect", spec, "--out", tmp_path / "charged", "--ledger", led).exit_code == 0
    assert invoke("protect", spec, "--out", tmp_path / "seeded", "--seed", 3).exit_code == 0
    return led, tmp_path / "charged", tmp_path / "seeded"


def test_verify_says_a_seeded_release_was_never_charged(charged_and_seeded):
    led, charged, seeded = charged_and_seeded
    r = invoke("ledger", "verify", led, "--release", seeded, "--release", charged)
    assert r.exit_code == 0, r.output
    assert "seeded (seed 3): NOT FOR PUBLICATION, and never charged to a ledger" in r.output
    assert "charged: ledger row" in r.output and "chain intact" in r.output
    assert "tampered" not in r.output and "None" not in r.output


def test_a_charged_release_relabelled_seeded_does_not_pass(charged_and_seeded):
    led, charged, seeded = charged_and_seeded
    row = json.loads((charged / "manifest.json").read_text())["ledger"]
    # the manifest says seeded but keeps its ledger row
    _edit_manifest(charged, random={"mode": "seeded", "seed": 3})
    r = invoke("ledger", "verify", led, "--release", charged)
    assert r.exit_code == 1 and f"yet names ledger row {row['id']}" in r.output
    # ... and without its row: the seeded release's mark is missing
    _edit_manifest(charged, ledger=None)
    r = invoke("ledger", "verify", led, "--release", charged)
    assert r.exit_code == 1 and "no NOT_FOR_PUBLICATION file" in r.output
    # ... with the file: its tables are not a seeded release's
    (charged / "NOT_FOR_PUBLICATION").write_text("x")
    r = invoke("ledger", "verify", led, "--release", charged)
    assert r.exit_code == 1 and "4 of its 4 Parquet tables lack the seeded mark" in r.output
    # ... with every mark forged: the ledger's own row names the directory it charged
    _seeded_marks(seeded, charged)
    r = invoke("ledger", "verify", led, "--release", charged)
    assert r.exit_code == 1 and f"ledger row {row['id']} charged a release written to" in (r.output)


def test_a_seeded_release_dressed_as_charged_does_not_pass(charged_and_seeded):
    led, charged, seeded = charged_and_seeded
    row = json.loads((charged / "manifest.json").read_text())["ledger"]
    # the manifest says secure: it names no row, so it was never charged
    _edit_manifest(seeded, random={"mode": "secure", "seed": None})
    r = invoke("ledger", "verify", led, "--release", seeded)
    assert r.exit_code == 1 and "names no ledger row" in r.output
    # ... with the charged release's row and hash copied in: its seeded marks betray it
    _edit_manifest(seeded, ledger=row)
    r = invoke("ledger", "verify", led, "--release", seeded)
    assert r.exit_code == 1 and "carries a seeded release's marks" in r.output
    # ... with the marks removed too: two releases claim one charge
    (seeded / "NOT_FOR_PUBLICATION").unlink()
    for t in (seeded / "tables").glob("*.parquet"):
        t.write_bytes((charged / "tables" / t.name).read_bytes())
    r = invoke("ledger", "verify", led, "--release", charged, "--release", seeded)
    assert r.exit_code == 1 and "two releases for one charge" in r.output


def test_a_mistyped_ledger_creates_no_ledger_and_no_key(spec, tmp_path):
    led = tmp_path / "budget.sqlite"
    assert invoke("ledger", "budget", led, "small", "--epsilon", 25, "--delta", 0.1).exit_code == 0
    typo = tmp_path / "budgett.sqlite"
    r = invoke("protect", spec, "--out", tmp_path / "r", "--ledger", typo)
    assert r.exit_code == 2 and f"no ledger at {typo}" in r.output
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("budgett")) == []
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("value", ["1e-400", "-1", "nan", "inf", "1e400", "zero"])
def test_a_budget_never_passes_through_a_float(tmp_path, value):
    led = tmp_path / "budget.sqlite"
    for key in ("--epsilon", "--mu"):
        r = invoke("ledger", "budget", led, "d", key, value)
        assert r.exit_code == 2 and "budget of 'd'" in r.output, r.output
        assert not led.exists() and not (tmp_path / "budget.sqlite.key").exists()
    r = invoke("ledger", "budget", led, "d", "--epsilon", "1", "--delta", value)
    assert r.exit_code == 2 and "delta" in r.output and not led.exists()


def test_a_budget_is_registered_as_the_decimal_written(tmp_path):
    from fractions import Fraction

    from eree.errors import PrivacyParameterError
    from eree.privacy.ledger import Ledger

    led = tmp_path / "budget.sqlite"
    assert (
        invoke("ledger", "budget", led, "d", "--epsilon", "0.3", "--delta", "1e-300").exit_code == 0
    )
    book = Ledger(led)
    rows = [r for r in book.show() if r["dataset"] == "d"]
    assert rows[0]["budget"] == {"epsilon": 0.3, "delta": 1e-300}
    b = book.set_budget("e", epsilon="1e-320")  # a subnormal: kept exactly
    assert Fraction(b["epsilon"]) == Fraction(1, 10**320)
    with pytest.raises(PrivacyParameterError, match="below the smallest float"):
        book.set_budget("f", epsilon="1e-400")
    assert "f" not in {r["dataset"] for r in book.show()}


def test_lowering_a_budget_below_what_is_spent_needs_a_flag(spec, tmp_path):
    """One release spends ε = 10, δ ≈ 0.037: a budget of ε 8 (below 10) or of δ 0.01
    (below 0.037) is refused unless --below-spent; one at or above the spent total is not."""
    led = tmp_path / "l.sqlite"
    invoke("ledger", "budget", led, "small", "--epsilon", 25, "--delta", 0.1, "--alpha", 0.1)
    assert invoke("protect", spec, "--out", tmp_path / "r1", "--ledger", led).exit_code == 0
    for eps, delta, key in ((8, 0.1, "epsilon"), (25, 0.01, "delta")):
        r = invoke("ledger", "budget", led, "small", "--epsilon", eps, "--delta", delta)
        assert r.exit_code == 2, r.output
        assert "below what its releases already spent" in r.output and key in r.output
        assert "--below-spent" in r.output
    budget = json.loads(invoke("ledger", "show", led, "--json").raw)["datasets"][0]["budget"]
    assert budget["epsilon"] == 25  # unchanged by the refusals
    assert invoke("ledger", "budget", led, "small", "--epsilon", 10, "--delta", 0.1).exit_code == 0
    r = invoke("ledger", "budget", led, "small", "--epsilon", 8, "--delta", 0.1, "--below-spent")
    assert r.exit_code == 0, r.output
    r = invoke("protect", spec, "--out", tmp_path / "r2", "--ledger", led)
    assert r.exit_code == 2 and "lifetime budget of 'small'" in r.output
