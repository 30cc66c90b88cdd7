"""``eree validate`` and the accuracy preview through the CLI (black box).

Valid input: exit 0, the checks, the preview and "valid"; nothing written. Bad input: one
line on stderr naming file, row and column, exit 2, no traceback. Never a planted
confidential value (:mod:`tests.cli.inputs`) nor a confidential size in what it prints.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.inputs import (
    SECRETS,
    assert_clean_failure,
    judge,
    run_cli,
    write_eree_case,
    write_estab_case,
)


def _tree(root: Path) -> dict[str, float]:
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*")}


def test_validate_good_establishment_spec_prints_preview_writes_nothing(tmp_path):
    spec = write_estab_case(tmp_path)
    before = _tree(tmp_path)
    r = run_cli(["validate", str(spec)])
    o = judge(r, None)
    assert o.ok, o.text
    assert o.leak is None, o.leak
    for want in ("ok", "data:", "Accuracy preview", "identity", "valid", "nothing spent"):
        assert want in r.stdout, want
    assert _tree(tmp_path) == before  # nothing written, no ledger


def test_validate_prints_no_confidential_size(tmp_path):
    """Neither the number of jobs, the number of rows with a value, nor any total."""
    spec = write_eree_case(tmp_path)
    r = run_cli(["validate", str(spec), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["data_checked"] is True
    text = r.stdout
    for s in SECRETS:
        assert s not in text
    from tests.cli.inputs import eree_frames

    n_jobs = eree_frames()["job"].height
    # the preview's representative sizes are 1, 10, …: a job count that is not one of
    # them must not appear as a number anywhere
    assert n_jobs not in (1, 10, 100, 1000, 10000)
    assert f" {n_jobs}," not in text and f": {n_jobs}" not in text and f"[{n_jobs}" not in text


def test_validate_bad_data_is_one_line_naming_file_row_column(tmp_path):
    spec = write_estab_case(tmp_path)
    f = tmp_path / "data" / "estab.csv"
    lines = f.read_text().splitlines()
    fields = lines[3].split(",")
    fields[4] = "-3"  # m1emp of data row 3: negative
    lines[3] = ",".join(fields)
    f.write_text("\n".join(lines) + "\n")
    r = run_cli(["validate", str(spec)])
    msg = assert_clean_failure(r, None, "estab.csv", "m1emp", "row")
    assert "Traceback" not in msg


def test_validate_missing_file_and_no_data(tmp_path):
    spec = write_estab_case(tmp_path)
    (tmp_path / "data" / "estab.csv").unlink()
    assert_clean_failure(run_cli(["validate", str(spec)]), None, "[data].path", "not found")
    # --no-data still checks the paths
    assert_clean_failure(run_cli(["validate", str(spec), "--no-data"]), None, "not found")


def test_validate_no_data_skips_reading(tmp_path):
    spec = write_estab_case(tmp_path)
    f = tmp_path / "data" / "estab.csv"
    f.write_text(f.read_text().replace("primary_key", "pk", 1))  # would fail the loader
    r = run_cli(["validate", str(spec), "--no-data"])
    assert r.exit_code == 0, r.output
    assert "Accuracy preview" in r.stdout
    assert run_cli(["validate", str(spec)]).exit_code == 2


def test_validate_spec_error_has_did_you_mean(tmp_path):
    spec = write_estab_case(tmp_path)
    spec.write_text(spec.read_text().replace('mechanism = "pnc"', 'mechanism = "pcn"'))
    assert_clean_failure(run_cli(["validate", str(spec)]), None, "did you mean 'pnc'")


def test_explain_shows_the_preview_and_warnings(tmp_path):
    spec = write_eree_case(tmp_path)
    # smooth_laplace at ε = 0.4 over d = 2 sexes: std at x_v = 1 is 2√2/0.2 ≈ 14 > 10 jobs
    text = spec.read_text().split("[[query]]")
    text[2] = text[2].replace("epsilon = 1.0", "epsilon = 0.4")
    spec.write_text("[[query]]".join(text))
    r = run_cli(["explain", str(spec)])
    assert r.exit_code == 0, r.output
    assert "Accuracy preview" in r.stdout and "noise-exceeds-value" in r.stdout
    assert "raise the query's epsilon" in r.stdout


def test_validate_eree_unknown_workplace_names_file_row_column(tmp_path):
    spec = write_eree_case(tmp_path)
    f = tmp_path / "data" / "job.csv"
    lines = f.read_text().splitlines()
    lines[5] = lines[5].split(",")[0] + ",w999"  # a job at an unknown workplace
    f.write_text("\n".join(lines) + "\n")
    assert_clean_failure(run_cli(["validate", str(spec)]), None, "job.csv", "row", "workplace_id")


def test_json_is_strict_with_infinite_values(tmp_path):
    """Log-Laplace at λ ≥ 1/2 has infinite variance: strict JSON still parses."""
    spec = write_eree_case(tmp_path)
    spec.write_text(spec.read_text().replace("epsilon = 1.0", "epsilon = 0.3", 1))
    r = run_cli(["explain", str(spec), "--json"])
    assert r.exit_code == 0, r.output

    def no_constants(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    out = json.loads(r.stdout, parse_constant=no_constants)
    county = next(q for q in out["preview"]["queries"] if q["query"] == "county")
    assert county["break_even"] == "inf" and county["rows"][0][1] == "inf"


def test_validate_refuses_a_plan_over_its_own_budget(tmp_path):
    spec = write_eree_case(tmp_path)
    text = spec.read_text().replace("alpha = 0.1", "alpha = 0.1\nbudget = { epsilon = 1.5 }")
    spec.write_text(text)  # the two queries cost ε = 2
    assert_clean_failure(run_cli(["validate", str(spec), "--no-data"]), None, "budget")
