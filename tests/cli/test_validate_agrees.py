"""``eree validate`` accepts and refuses exactly what ``eree protect`` does, with the same line.

See docs/design.md#validation. Every release reads every configured column, with or
without a ledger, and ``eree validate`` reads the same: one verdict. Every column of
every input file is corrupted in every way of :mod:`tests.cli.corruptions` (a planted
secret in each bad value) and both commands run on the same input: both succeed, or both
fail with the same one-line error.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli.corruptions import Corruption, build, corruptions, subset
from tests.cli.inputs import judge, run_cli

CASES = corruptions()
#: in the default suite: every 4th case and the issue's named ones (all: -m slow)
DEFAULT = subset(CASES, 4)


def _outcome(args: list[str], out: Path | None, root: Path) -> tuple[bool, str]:
    r = run_cli(args)
    o = judge(r, out)
    assert not o.traceback and o.leak is None, (args, o.text)
    assert o.ok or o.clean_error, (args, o.text)
    line = "" if o.ok else r.stderr.strip().replace(str(root), "CASE")
    return o.ok, line


def _agree(c: Corruption, root: Path) -> tuple[bool, str]:
    spec = build(c, root)
    validated = _outcome(["validate", str(spec)], None, root)
    out = root / "rel"
    protected = _outcome(["protect", str(spec), "--out", str(out), "--seed", "1"], out, root)
    assert validated == protected, (c.label, validated, protected)
    return protected


@pytest.mark.parametrize("case", DEFAULT, ids=lambda c: c.label)
def test_validate_and_protect_agree(tmp_path: Path, case: Corruption) -> None:
    _agree(case, tmp_path / "case")


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if c not in DEFAULT], ids=lambda c: c.label)
def test_validate_and_protect_agree_everywhere(tmp_path: Path, case: Corruption) -> None:
    _agree(case, tmp_path / "case")


def test_a_configured_column_no_query_reads_has_one_verdict_with_or_without_a_ledger(tmp_path):
    """The worker's age is configured (a declared domain) but in no query: validate,
    protect and protect --ledger all read it and refuse a value outside its domain with
    the same line (validate said "valid", protect --ledger refused)."""
    case = Corruption("eree3", "csv", "worker", "age", "outside", "zq9xZZZ", "reject")
    root = tmp_path / "b"
    spec = build(case, root)
    ledger = root / "ledger.sqlite"
    r = run_cli(["ledger", "budget", str(ledger), "fuzz-eree", "--epsilon", "10", "--delta",
                 "0.5", "--alpha", "0.1"])  # fmt: skip
    assert r.exit_code == 0, r.output
    validated = _outcome(["validate", str(spec)], None, root)
    out = root / "rel"
    plain = _outcome(["protect", str(spec), "--out", str(out), "--seed", "1"], out, root)
    charged = _outcome(
        ["protect", str(spec), "--out", str(out), "--ledger", str(ledger)], out, root
    )
    assert validated == plain == charged, (validated, plain, charged)
    ok, line = charged
    assert not ok and "worker.csv" in line and "'age'" in line, line
    shutil.rmtree(root, ignore_errors=True)


def test_a_column_the_spec_does_not_configure_is_read_by_none(tmp_path):
    """The worker file's private_note is no attribute of the spec: no release reads it."""
    case = Corruption("eree3", "csv", "worker", "private_note", "text", "zq9xanything", "accept")
    ok, _ = _agree(case, tmp_path / "a")
    assert ok


def test_validate_says_which_columns_it_read(tmp_path):
    spec = build(Corruption("eree3", "csv", "worker", "age", "none", "A01", "accept"), tmp_path)
    r = run_cli(["validate", str(spec)])
    assert r.exit_code == 0, r.output
    assert "every configured column" in r.stdout and "with or without --ledger" in r.stdout
