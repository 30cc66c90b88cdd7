"""Workers with several jobs: the job-selection rule of docs/privacy.md#several-jobs-per-worker.

The expected kept jobs are worked out here by hand from the documented rule (job type,
then each worker's jobs by workplace id — by earnings, highest first, for primary jobs —
the first k kept), never from eree's own selection.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from eree.data.config import JobTablesConfig
from eree.data.job_tables import load_job_tables
from eree.engine.polars.load import narrow_config, scan_job_tables
from eree.errors import DataValidationError, SpecError

WORKPLACES = pl.DataFrame(
    {
        "workplace_id": ["w1", "w2", "w3", "w4"],
        "block": ["b1", "b2", "b3", "b4"],
        "ownership": ["A05", "A00", "A05", "A05"],
    }
)
WORKERS = pl.DataFrame({"worker_id": ["p1", "p2", "p3"], "sex": ["M", "F", "F"]})
# p1: 4 jobs (w3, w1, w4, w2); p2: 2 jobs (w2, w4); p3: 1 job (w3)
JOBS = pl.DataFrame(
    {
        "worker_id": ["p1", "p1", "p2", "p1", "p3", "p2", "p1"],
        "workplace_id": ["w3", "w1", "w2", "w4", "w3", "w4", "w2"],
        "pay": [900.0, 100.0, 50.0, 900.0, 10.0, 70.0, 5000.0],
    }
)


def _config(root: Path, jobs: pl.DataFrame = JOBS, **kw: object) -> JobTablesConfig:
    WORKPLACES.write_csv(root / "workplace.csv")
    WORKERS.write_csv(root / "worker.csv")
    jobs.write_csv(root / "job.csv")
    return JobTablesConfig(
        workplace=root / "workplace.csv",
        worker=root / "worker.csv",
        job=root / "job.csv",
        workplace_attributes=("block", "ownership"),
        worker_attributes=("sex",),
        domains={"sex": ("M", "F")},
        **kw,  # type: ignore[arg-type]
    )


def _kept(cfg: JobTablesConfig) -> list[tuple[str, str]]:
    t = load_job_tables(cfg)
    return sorted(zip(t.jobs["workplace_id"], t.jobs["sex"], strict=True))


@pytest.mark.parametrize(
    "kw,expected,over,dropped",
    [
        # k = 2, by workplace id: p1 keeps w1, w2; p2 keeps w2, w4; p3 w3
        ({"max_jobs_per_worker": 2}, [("w1", "M"), ("w2", "F"), ("w2", "M"), ("w3", "F"),
                                      ("w4", "F")], 1, 2),
        ({"max_jobs_per_worker": 4}, [("w1", "M"), ("w2", "F"), ("w2", "M"), ("w3", "F"),
                                      ("w3", "M"), ("w4", "F"), ("w4", "M")], 0, 0),
        # JT01: the highest-earning job (p1: w2 at 5000; p2: w4 at 70; p3: w3)
        ({"job_type": "JT01", "job_earnings": "pay"}, [("w2", "M"), ("w3", "F"), ("w4", "F")],
         2, 4),
        # JT02: private jobs (w2 is A00), then k = 1 by workplace id: p1 w1, p2 w4, p3 w3
        ({"job_type": "JT02", "max_jobs_per_worker": 1}, [("w1", "M"), ("w3", "F"),
                                                           ("w4", "F")], 1, 2),
        # JT03: the highest-earning private job (p1: w3 and w4 tie at 900 → w3)
        ({"job_type": "JT03", "job_earnings": "pay"}, [("w3", "F"), ("w3", "M"), ("w4", "F")],
         1, 2),
    ],
)  # fmt: skip
def test_the_documented_rule_keeps_these_jobs(
    tmp_path: Path, kw: dict, expected: list, over: int, dropped: int
) -> None:
    cfg = _config(tmp_path, **kw)
    assert _kept(cfg) == expected
    sel = load_job_tables(cfg).selection
    assert sel is not None and (sel.workers_over, sel.jobs_dropped) == (over, dropped)
    # the release's loader (narrowed to the queried attributes) keeps the same jobs
    fast = scan_job_tables(narrow_config(cfg, ["block", "sex"]))
    assert fast.jobs.height == len(expected)


def test_without_the_key_a_second_job_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataValidationError, match="more than one job") as e:
        load_job_tables(_config(tmp_path))
    assert e.value.rule == "multiple-jobs"


def test_a_job_listed_twice_is_refused_by_row(tmp_path: Path) -> None:
    twice = pl.concat([JOBS, JOBS.slice(1, 1)])
    with pytest.raises(DataValidationError) as e:
        load_job_tables(_config(tmp_path, twice, max_jobs_per_worker=3))
    assert (e.value.rule, e.value.row, e.value.column) == ("same-job-twice", 8, "workplace_id")


def test_bad_earnings_are_refused_without_the_value(tmp_path: Path) -> None:
    bad = JOBS.with_columns(pl.Series("pay", [1.0, 2.0, -7.5, 3.0, 4.0, 5.0, 6.0]))
    with pytest.raises(DataValidationError) as e:
        load_job_tables(_config(tmp_path, bad, job_type="JT01", job_earnings="pay"))
    assert e.value.row == 3 and e.value.column == "pay" and "7.5" not in str(e.value)


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"max_jobs_per_worker": 0}, "whole number"),
        ({"job_type": "JT04"}, "job_type"),
        ({"job_type": "JT01"}, "job_earnings"),
        ({"job_type": "JT01", "job_earnings": "pay", "max_jobs_per_worker": 2}, "one primary"),
        ({"job_earnings": "pay"}, "only for primary"),
    ],
)
def test_inconsistent_keys_are_refused_before_reading(tmp_path: Path, kw: dict, match: str) -> None:
    cfg = _config(tmp_path, **kw)
    with pytest.raises(SpecError, match=match):
        load_job_tables(replace(cfg, workplace=tmp_path / "absent.csv"))


def test_private_jobs_need_the_ownership_attribute(tmp_path: Path) -> None:
    cfg = replace(_config(tmp_path, job_type="JT02"), workplace_attributes=("block",))
    with pytest.raises(SpecError, match="ownership"):
        load_job_tables(cfg)
