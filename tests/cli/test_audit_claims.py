"""``eree audit claims`` through the CLI (black box, small data, two seeded releases).

What it must do (docs/cli.md): say that its releases are seeded and not for publication,
print every stated figure beside the figure realised against the confidential data,
write nothing (not even into the spec's folder), and refuse a bad spec with one line,
exit 2.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli.inputs import assert_clean_failure, run_cli, write_eree_case, write_estab_case

#: the columns the command prints, in order
COLUMNS = ("source", "table", "statistic", "statement", "stated", "realised", "cells")


def _tree(root: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*")}


def _rows(stdout: str) -> list[list[str]]:
    """The table's rows, split on the runs of 2+ spaces between its columns."""
    lines = stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.split()[:2] == ["source", "table"])
    rows = []
    for line in lines[head + 2 :]:  # past the header and its rule
        if not line.startswith(("report", "manifest", "validate")):
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


@pytest.mark.parametrize("case", [write_eree_case, write_estab_case], ids=["eree", "gedp"])
def test_audit_claims_prints_each_stated_figure_beside_its_realised_one(tmp_path, case):
    spec = case(tmp_path)
    before = _tree(tmp_path)
    r = run_cli(["audit", "claims", str(spec), "--seeds", "2", "--quiet"])
    assert r.exit_code == 0, r.output
    flat = re.sub(r"\s+", " ", r.stdout)
    assert "NOT FOR PUBLICATION" in flat and "never charged to a ledger" in flat
    rows = _rows(r.stdout)
    assert rows, r.stdout
    for row in rows:
        assert len(row) == len(COLUMNS) + 1, row  # … and stated/realised
        stated, realised = row[4], row[5]
        assert stated != "—", row  # nothing is printed that is not stated …
        assert realised != "—", row  # … and every stated figure is measured
        assert int(row[6].replace(",", "")) > 0, row
    # the release's statements are per table: both statements of each table are there
    what = {(row[1], row[3].split(" (")[0]) for row in rows}
    for table in {row[1] for row in rows}:
        assert (table, "median relative error") in what, what
        assert (table, "share of cells within ±10%") in what, what
    summary = re.search(r"(\d+) of (\d+) measurable statements .*?; (\d+) not measurable", flat)
    assert summary and int(summary.group(2)) + int(summary.group(3)) == len(rows), flat
    assert _tree(tmp_path) == before  # nothing written beside the spec (nor anywhere under it)


def test_audit_claims_bad_spec_is_one_line_exit_2(tmp_path):
    spec = write_eree_case(tmp_path)
    spec.write_text(spec.read_text().replace('mechanism = "log_laplace"', 'mechanism = "nope"'))
    before = _tree(tmp_path)
    r = run_cli(["audit", "claims", str(spec), "--seeds", "2"])
    text = assert_clean_failure(r, None, "nope")
    assert r.exit_code == 2 and "Traceback" not in text
    assert _tree(tmp_path) == before
