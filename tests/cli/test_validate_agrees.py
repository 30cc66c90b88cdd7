"""``eree validate`` accepts and refuses exactly what ``eree protect`` does, with the same line.

See docs/design.md#validation. A release without a ledger reads the columns its queries
use; one with a ledger reads every configured column (its fingerprint covers them).
``eree validate`` reads what the first reads, ``eree validate --all-columns`` what the
second reads. Every column of every input file is corrupted in every way of
:mod:`tests.cli.corruptions` (a planted secret in each bad value) and both commands run
on the same input: both succeed, or both fail with the same one-line error.
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


def test_a_column_no_query_reads_is_read_by_neither_and_by_both_with_a_ledger(tmp_path):
    """The worker's age is in the data but in no query: --all-columns and --ledger read it."""
    case = Corruption("eree3", "csv", "worker", "age", "outside", "zq9xZZZ", "accept")
    ok, _ = _agree(case, tmp_path / "a")
    assert ok  # read by neither (the queries use county and sex)
    root = tmp_path / "b"
    spec = build(case, root)
    ledger = root / "ledger.sqlite"
    r = run_cli(["ledger", "budget", str(ledger), "fuzz-eree", "--epsilon", "10", "--delta",
                 "0.5", "--alpha", "0.1"])  # fmt: skip
    assert r.exit_code == 0, r.output
    validated = _outcome(["validate", str(spec), "--all-columns"], None, root)
    out = root / "rel"
    protected = _outcome(
        ["protect", str(spec), "--out", str(out), "--ledger", str(ledger)], out, root
    )
    assert validated == protected
    ok, line = protected
    assert not ok and "worker.csv" in line and "'age'" in line, line
    shutil.rmtree(root, ignore_errors=True)


def test_validate_says_which_columns_it_read(tmp_path):
    spec = build(Corruption("eree3", "csv", "worker", "age", "none", "A01", "accept"), tmp_path)
    r = run_cli(["validate", str(spec)])
    assert r.exit_code == 0, r.output
    assert "the columns the release reads" in r.stdout and "--all-columns" in r.stdout
    r = run_cli(["validate", str(spec), "--all-columns"])
    assert r.exit_code == 0, r.output
    assert "every configured column" in r.stdout
