"""An input error names file, row and column and never repeats a value of the data.

docs/design.md#validation: not a confidential value and not an id either (an id can be a
person's or an employer's identifier, and an error line travels into logs and tickets).
Each case plants a known value in one row and runs ``eree protect``: exit 2, one line,
the file, ``row N`` and the column named, the planted value (or the id it repeats)
absent from everything printed.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tests.cli.inputs import assert_clean_failure, run_cli, write_eree_case, write_estab_case
from tests.cli.test_coarsening_jobs_adversarial import _csv_case


def _refused_without(spec: Path, out: Path, value: str, file: str, row: int, column: str):
    text = assert_clean_failure(run_cli(["protect", str(spec), "--out", str(out)]), out)
    assert file in text, text
    assert f"row {row}" in text, text
    assert column in text, text
    assert value not in text, text
    assert not out.exists()


#: (table, column, value planted in the 4th data row, the error's file and column)
JOB_RECORD_CASES = [
    ("job", "workplace_id", "wSECRET4417", "job.csv", "workplace_id"),  # unknown workplace
    ("job", "worker_id", "pSECRET5521", "job.csv", "worker_id"),  # unknown worker
    ("job", "worker_id", "p0000000", "job.csv", "worker_id"),  # a worker's second job
    ("workplace", "workplace_id", "w0000000", "workplace.csv", "workplace_id"),  # duplicate
    ("worker", "worker_id", "p0000000", "worker.csv", "worker_id"),  # duplicate
]


@pytest.mark.parametrize("table,column,value,file,named", JOB_RECORD_CASES)
def test_a_job_record_coarsening_error_repeats_no_id(tmp_path, table, column, value, file, named):
    spec = _csv_case(tmp_path, table, column, value)
    _refused_without(spec, tmp_path / "rel", value, file, 4, named)


def _set_cell(path: Path, row: int, column: str, value: str) -> None:
    f = pl.read_csv(path, infer_schema=False)
    f = f.with_columns(
        pl.when(pl.int_range(pl.len()) == row - 1)
        .then(pl.lit(value))
        .otherwise(pl.col(column))
        .alias(column)
    )
    f.write_csv(path)


def test_a_job_at_an_unknown_workplace_repeats_no_id_in_a_noise_release(tmp_path):
    spec = write_eree_case(tmp_path)
    _set_cell(tmp_path / "data" / "job.csv", 3, "workplace_id", "wSECRET9182")
    _refused_without(spec, tmp_path / "rel", "wSECRET9182", "job.csv", 3, "workplace_id")


def test_a_workplace_with_two_counties_repeats_no_id(tmp_path):
    spec = write_eree_case(tmp_path, joined=True)
    path = tmp_path / "data" / "jobs.csv"
    jobs = pl.read_csv(path, infer_schema=False)
    wid = jobs["workplace_id"][0]
    assert jobs["workplace_id"][1] == wid  # the second row: the same workplace
    other = next(c for c in jobs["county"].unique().to_list() if c != jobs["county"][0])
    _set_cell(path, 2, "county", other)
    _refused_without(spec, tmp_path / "rel", wid, "jobs.csv", 2, "county")


def test_a_repeated_establishment_id_is_not_repeated(tmp_path):
    spec = write_estab_case(tmp_path)
    path = tmp_path / "data" / "estab.csv"
    first = pl.read_csv(path, infer_schema=False)["primary_key"][0]
    _set_cell(path, 4, "primary_key", first)
    _refused_without(spec, tmp_path / "rel", first, "estab.csv", 4, "primary_key")
