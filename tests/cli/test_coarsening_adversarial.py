"""A coarsening spec under attack: bad keys, hostile names and data, kill -9 mid-write.

* A bad ``[protection]`` (or a section a coarsening release does not read) is refused in
  one line naming the key, exit 2, nothing written — before any data are read.
* Hostile names (markup in the dataset's name and in a confidential column's name, a
  path-like output folder) are published escaped or refused; state and county codes that
  are not FIPS codes cannot name files outside the release.
* ``kill -9`` at any moment of a release leaves either no release or a complete one
  (the release transaction: staged in a hidden sibling, renamed into place).
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
from tests.release.test_coarsening_release import SPEC, frame, write_case

BAD = [
    ('mode = "coarsening"', 'mode = "rounding"', "[protection].mode"),
    ('rounding = "{rounding}"', 'rounding = "stochastic"', "[protection].rounding"),
    ("threshold = 3", "threshold = -1", "[protection].threshold"),
    ("threshold = 3", "threshold = 2.5", "[protection].threshold"),
    ("threshold = 3", "threshold = true", "[protection].threshold"),
    ("dominance_k = 80.0", "dominance_k = 150.0", "[protection].dominance_k"),
    ("dominance_k = 80.0", "dominance_k = nan", "[protection].dominance_k"),
    ("dominance_n = 1", "dominance_n = 0", "[protection].dominance_n"),
    ("p_percent = 10.0", 'p_percent = "10"', "[protection].p_percent"),
    ("p_percent = 10.0", "p_percent = -1.0", "[protection].p_percent"),
    ("min_protection = 1.0", "min_protection = inf", "[protection].min_protection"),
    ('exempt_own = ["1"]', 'exempt_own = "1"', "[protection].exempt_own"),
    ('exempt_own = ["1"]', 'exempt_own = ["1"]\nattributes = ["m9emp"]', "[protection].attributes"),
    ('exempt_own = ["1"]', 'exempt_own = ["1"]\nattributes = []', "[protection].attributes"),
    ('exempt_own = ["1"]', 'exempt_own = ["1"]\nbases = [5, 10]', "'bases' in [protection]"),
    ('exempt_own = ["1"]', 'exempt_own = ["1"]\n[privacy]\ndefinition = "gedp"', "[privacy]"),
    ('exempt_own = ["1"]', 'exempt_own = ["1"]\n[[query]]\nname = "q"', "[[query]]"),
    ('exempt_own = ["1"]', 'exempt_own = ["1"]\nmerge_areas = "1"', "[protection].merge_areas"),
    (
        'exempt_own = ["1"]',
        'exempt_own = ["1"]\nmerge_areas = [[1, 3]]',
        "[protection].merge_areas",
    ),
    ('exempt_own = ["1"]', 'exempt_own = ["1"]\nmerge_areas = [["1"]]', "[protection].merge_areas"),
    (
        'exempt_own = ["1"]',
        'exempt_own = ["1"]\nmerge_areas = [["1", "1"]]',
        "[protection].merge_areas",
    ),
    (
        'exempt_own = ["1"]',
        'exempt_own = ["1"]\nmerge_areas = [["1", "3"], ["3", "5"]]',
        "[protection].merge_areas: code '3' is in groups 1 and 2",
    ),
    (
        'exempt_own = ["1"]',
        'exempt_own = ["1"]\nmerge_areas = [["1+3", "5"]]',
        "[protection].merge_areas",
    ),
    (
        'exempt_own = ["1"]',
        'exempt_own = ["1"]\nmerge_areas = [["", "5"]]',
        "[protection].merge_areas",
    ),
    (
        'exempt_own = ["1"]',
        'exempt_own = ["1"]\nmerge_industries = [["23611", "236116"]]',
        "[protection].merge_industries: group 1: industries are merged as six-digit",
    ),
    (
        'exempt_own = ["1"]',
        'exempt_own = ["1"]\nmerge_industries = [["236115", "541211"]]',
        "[protection].merge_industries: group 1: merged industries must share",
    ),
    (
        'exempt_own = ["1"]',
        'exempt_own = ["1"]\nmerge_areas = [["1", "3"]]',
        "[protection].merge_areas does not go with [output].format",
    ),
    (
        'exempt_own = ["1"]',
        'exempt_own = ["1"]\nmerge_industries = [["236115", "236116"]]',
        "[protection].merge_industries does not go with [output].format",
    ),
    ("year = 2024", "year = 2024\nconfidence = 0.9", "[output].confidence"),
    ('format = "qcew-by-area"', 'format = "lodes-wac"', "[output].format"),
    ("year = 2024\n", "", "[output].year"),
    ('kind = "establishments"', 'kind = "qcew"', "[data].kind"),
    (
        'public = ["state", "cnty", "own", "naics"]',
        'public = ["state", "cnty", "own"]',
        "[data].public",
    ),
    (
        'public = ["state", "cnty", "own", "naics"]',
        'public = ["cnty", "own", "naics"]',
        "[data].public must list state",
    ),
    (
        'confidential = ["m1emp", "m2emp", "m3emp", "wage"]',
        'confidential = ["m1emp"]',
        "[protection].attributes must include m2emp",
    ),
]


@pytest.mark.parametrize("old,new,named", BAD, ids=[b[2] + ":" + b[1][:20] for b in BAD])
def test_a_bad_key_is_one_line_naming_it_and_nothing_is_written(tmp_path, old, new, named):
    assert old in SPEC
    spec = write_case(tmp_path, spec=SPEC.replace(old, new, 1))
    (tmp_path / "data" / "estab.csv").unlink()  # refused from the spec: no data read
    out = tmp_path / "rel"
    r = run_cli(["protect", str(spec), "--out", str(out)])
    text = assert_clean_failure(r, out, named)
    assert "not found" not in text  # the spec's error, not the missing data's
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


def test_hostile_names_are_escaped_in_the_report_and_kept_as_data(tmp_path):
    evil = "<script>alert(1)</script>"
    col = "<img src=x onerror=alert(5)>"
    data = frame().with_columns(pl.col("wage").alias(col))
    spec_text = SPEC.replace(
        'confidential = ["m1emp", "m2emp", "m3emp", "wage"]',
        f'confidential = ["m1emp", "m2emp", "m3emp", "wage", {json.dumps(col)}]',
    )
    spec = write_case(tmp_path, name=evil, spec=spec_text, data=data)
    out = tmp_path / "a dir with spaces & ünïcode" / "rel"
    r = run_cli(["protect", str(spec), "--out", str(out)])
    assert r.exit_code == 0, r.output
    page = (out / "report.html").read_text()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;" in page
    m = json.loads((out / "manifest.json").read_text())
    assert m["dataset"]["name"] == evil
    published = pl.read_parquet(out / "tables" / "coarsened.parquet")
    assert col in published["attribute"].unique().to_list()


def test_a_name_with_a_newline_is_refused(tmp_path):
    spec = write_case(tmp_path, name="line one\\nline two")
    out = tmp_path / "rel"
    assert_clean_failure(run_cli(["protect", str(spec), "--out", str(out)]), out, "name")


@pytest.mark.parametrize("column,value", [("state", "../1"), ("cnty", "1/2"), ("state", "123")])
def test_codes_that_are_not_fips_cannot_name_files(tmp_path, column, value):
    data = frame().with_columns(
        pl.when(pl.col("primary_key") == "3").then(pl.lit(value)).otherwise(column).alias(column)
    )
    spec = write_case(tmp_path, data=data)
    out = tmp_path / "rel"
    text = assert_clean_failure(run_cli(["protect", str(spec), "--out", str(out)]), out, column)
    assert value not in text  # a public code, but the message names the column only
    assert not any(p.name.startswith(".rel") for p in tmp_path.iterdir())


ENV = {**os.environ, "PYTHONPATH": str(Path(eree.__file__).resolve().parents[1])}


def _complete(out: Path) -> bool:
    m = json.loads((out / "manifest.json").read_text())
    files = [t["file"] for t in m["tables"]] + m["agency_files"]["files"]
    return all((out / f).is_file() for f in files) and (out / "report.html").is_file()


@pytest.mark.slow
def test_kill9_at_any_moment_leaves_no_release_or_a_complete_one(tmp_path):
    spec = write_case(tmp_path, data=frame(n=600))
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
