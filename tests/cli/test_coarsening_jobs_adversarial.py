"""A coarsening spec of job records under attack: bad keys, bad records, hostile names, kill -9.

* A ``[protection]`` key that applies to establishments only, a value outside its range,
  an ``[output]`` key a job-table release does not read, or WAC attributes missing from
  ``[data]`` are refused in one line naming the key (exit 2, nothing written) before any
  data are read.
* A bad value in a job record's file is one line naming the file, the row and the column
  (exit 2, nothing written); block codes that cannot name a LODES file are refused naming
  the file and the column, never echoing a code.
* Hostile names (markup in the dataset's name, a folder with spaces and non-ASCII
  letters, markup as a block code without a format) are escaped or kept as data.
* ``kill -9`` at any moment leaves no release or a complete one.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

import eree
from tests.cli.inputs import assert_clean_failure, run_cli
from tests.release.test_coarsening_jobs_release import SPEC, records, write_case

FILLED = SPEC.format(
    name="pa-wac", rounding="deterministic", threshold=3, protection=1
)  # the template with its defaults

BAD = [
    ("min_protection = 1", "min_protection = 1\ndominance_k = 80.0", "[protection].dominance_k"),
    ("min_protection = 1", "min_protection = 1\ndominance_n = 2", "[protection].dominance_n"),
    ("min_protection = 1", "min_protection = 1\np_percent = 10.0", "[protection].p_percent"),
    ("min_protection = 1", 'min_protection = 1\nexempt_own = ["1"]', "[protection].exempt_own"),
    ("min_protection = 1", 'min_protection = 1\nattributes = ["jobs"]', "[protection].attributes"),
    ("min_protection = 1", "min_protection = 1\nbases = [2, 3]", "'bases' in [protection]"),
    (
        "min_protection = 1",
        'min_protection = 1\nmerge_areas = [["1", "3"]]',
        "[protection].merge_areas",
    ),
    (
        "min_protection = 1",
        'min_protection = 1\nmerge_industries = [["236115", "236116"]]',
        "[protection].merge_industries",
    ),
    ('mode = "coarsening"', 'mode = "rounding"', "[protection].mode"),
    ('rounding = "deterministic"', 'rounding = "nearest"', "[protection].rounding"),
    ("threshold = 3", "threshold = -1", "[protection].threshold"),
    ("threshold = 3", "threshold = 2.5", "[protection].threshold"),
    ("threshold = 3", 'threshold = "3"', "[protection].threshold"),
    ("min_protection = 1", "min_protection = 0", "[protection].min_protection"),
    ("min_protection = 1", "min_protection = 0.5", "[protection].min_protection"),
    ("min_protection = 1", "min_protection = 1.5", "[protection].min_protection"),
    ("min_protection = 1", "min_protection = inf", "[protection].min_protection"),
    ("min_protection = 1", "min_protection = nan", "[protection].min_protection"),
    ('format = "lodes-wac"', 'format = "qcew-by-area"', "[output].format"),
    ('format = "lodes-wac"', 'format = "lodes-rac"', "[output].format"),
    ("year = 2015", "year = 2015\nquarter = 1", "[output].quarter"),
    ("year = 2015", 'year = 2015\njob_type = "JT01"', "[output].job_type"),
    ("year = 2015", "year = 2015\nconfidence = 0.9", "[output].confidence"),
    ("year = 2015\n", "", "[output].year"),
    ("year = 2015", "year = 15", "[output].year"),
    (
        'job = "data/job.parquet"',
        'job = "data/job.parquet"\nworkplace_attributes = ["state", "county", "block"]',
        "[data].workplace_attributes",
    ),
    (
        'job = "data/job.parquet"',
        'job = "data/job.parquet"\nworker_attributes = ["age", "sex"]',
        "[data].worker_attributes",
    ),
    (
        'job = "data/job.parquet"',
        'job = "data/job.parquet"\n[data.domains]\nage = ["young", "old"]',
        "[data.domains].age",
    ),
    ('kind = "eree"', 'kind = "lodes"', "[data].kind"),
    ("[output]", '[privacy]\ndefinition = "eree"\n[output]', "[privacy]"),
    ("[output]", '[[query]]\nname = "q"\n[output]', "[[query]]"),
]


@pytest.mark.parametrize("old,new,named", BAD, ids=[b[2] + ":" + b[1][-24:] for b in BAD])
def test_a_bad_key_is_one_line_naming_it_and_nothing_is_written(tmp_path, old, new, named):
    assert old in FILLED
    spec = write_case(tmp_path)
    spec.write_text(FILLED.replace(old, new, 1), encoding="utf-8")
    for t in ("workplace", "worker", "job"):
        (tmp_path / "data" / f"{t}.parquet").unlink()  # refused from the spec: nothing read
    out = tmp_path / "rel"
    text = assert_clean_failure(run_cli(["protect", str(spec), "--out", str(out)]), out, named)
    assert "not found" not in text and "does not exist" not in text
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".rel")] == []


def _csv_case(root: Path, table: str, column: str, value: str) -> Path:
    """The records as CSV files, ``column`` of ``table`` set to ``value`` in its 4th row."""
    s = records()
    frames = {t: getattr(s, t) for t in ("workplace", "worker", "job")}
    f = frames[table]
    frames[table] = (
        f.with_row_index("_r")
        .with_columns(
            pl.when(pl.col("_r") == 3).then(pl.lit(value)).otherwise(pl.col(column)).alias(column)
        )
        .drop("_r")
    )
    (root / "data").mkdir(parents=True, exist_ok=True)
    for t, fr in frames.items():
        fr.write_csv(root / "data" / f"{t}.csv")
    spec = root / "spec.toml"
    spec.write_text(FILLED.replace(".parquet", ".csv"), encoding="utf-8")
    return spec


@pytest.mark.parametrize(
    "table,column,value",
    [
        ("worker", "age", "A09"),
        ("worker", "sex", ""),
        ("worker", "education", "<b>E9</b>"),
        ("workplace", "naics_sector", "99"),
        ("job", "workplace_id", "no-such-workplace"),
    ],
)
def test_a_bad_value_in_a_record_is_one_line_naming_file_row_and_column(
    tmp_path, table, column, value
):
    spec = _csv_case(tmp_path, table, column, value)
    out = tmp_path / "rel"
    text = assert_clean_failure(
        run_cli(["protect", str(spec), "--out", str(out)]), out, f"{table}.csv", column
    )
    assert "row" in text
    assert not out.exists()


@pytest.mark.parametrize("value", ["../../etc", "4200101", "<script>x</script>", "990010001001009"])
def test_block_codes_that_cannot_name_a_lodes_file_are_refused(tmp_path, value):
    spec = _csv_case(tmp_path, "workplace", "block", value)
    out = tmp_path / "rel"
    text = assert_clean_failure(
        run_cli(["protect", str(spec), "--out", str(out)]), out, "workplace.csv", "block"
    )
    assert value not in text
    assert not out.exists()


def test_hostile_names_are_escaped_in_the_report_and_kept_as_data(tmp_path):
    evil = "<script>alert(1)</script>"
    spec = _csv_case(tmp_path, "workplace", "block", "<img src=x onerror=alert(5)>")
    text = spec.read_text().replace('name = "pa-wac"', f"name = {json.dumps(evil)}")
    spec.write_text(text.replace('format = "lodes-wac"\nyear = 2015\n', ""), encoding="utf-8")
    out = tmp_path / "a dir with spaces & ünïcode" / "rel"
    r = run_cli(["protect", str(spec), "--out", str(out)])
    assert r.exit_code == 0, r.output
    page = (out / "report.html").read_text()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;" in page
    m = json.loads((out / "manifest.json").read_text())
    assert m["dataset"]["name"] == evil
    published = pl.read_parquet(out / "tables" / "coarsened.parquet")
    assert "<img src=x onerror=alert(5)>" in published["block"].unique().to_list()


def test_a_name_with_a_newline_is_refused(tmp_path):
    spec = write_case(tmp_path, name="line one\\nline two")
    out = tmp_path / "rel"
    assert_clean_failure(run_cli(["protect", str(spec), "--out", str(out)]), out, "name")


ENV = {**os.environ, "PYTHONPATH": str(Path(eree.__file__).resolve().parents[1])}


def _complete(out: Path) -> bool:
    m = json.loads((out / "manifest.json").read_text())
    files = [t["file"] for t in m["tables"]] + m["agency_files"]["files"]
    return all((out / f).is_file() for f in files) and (out / "report.html").is_file()


@pytest.mark.slow
def test_kill9_at_any_moment_leaves_no_release_or_a_complete_one(tmp_path):
    spec = write_case(tmp_path, jobs=1500)
    cmd = [sys.executable, "-m", "eree.cli", "protect", str(spec), "--out"]
    t0 = time.perf_counter()
    subprocess.run([*cmd, str(tmp_path / "ref")], env=ENV, check=True, capture_output=True)
    whole = time.perf_counter() - t0
    assert _complete(tmp_path / "ref")
    rng = random.Random(42)
    outcomes = []
    for i in range(8):
        out = tmp_path / f"r{i}"
        p = subprocess.Popen([*cmd, str(out)], env=ENV, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)  # fmt: skip
        time.sleep(rng.uniform(0.5, 1.05) * whole)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
        p.wait()
        if out.exists():
            assert _complete(out), out
            outcomes.append("complete")
        else:
            outcomes.append("none")
    assert "none" in outcomes  # some kills landed inside the release
