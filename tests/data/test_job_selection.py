"""Workers with several jobs: the job-selection rule of docs/privacy.md#several-jobs-per-worker.

The expected kept jobs are worked out here from the documented rule (job type, then each
worker's jobs by earnings, highest first, for primary jobs, then by the keyed word
SHA-256(hex(key), worker id, workplace id); the first k kept; JT03: the primary job when
private), with plain Python, never from eree's own selection.
"""

from __future__ import annotations

import hashlib
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


KEY = bytes(range(32))


def _word(key: bytes, worker: str, workplace: str) -> str:
    """The documented keyed word: SHA-256 of hex(key), worker id and workplace id."""
    return hashlib.sha256(f"{key.hex()}\x1f{worker}\x1f{workplace}".encode()).hexdigest()


def _by_rule(kw: dict, key: bytes = KEY) -> tuple[list[tuple[str, str]], int, int, int]:
    """The kept (workplace, sex) pairs, workers over, jobs dropped, jobs not of the type.

    Worked out from the documented rule with plain Python: JT02 keeps private jobs; each
    worker's jobs ordered by earnings (primary jobs, highest first) then by the keyed word;
    the first k kept; JT03 keeps the primary job when it is private.
    """
    jt = kw.get("job_type", "JT00")
    primary = jt in ("JT01", "JT03")
    k = 1 if primary else kw["max_jobs_per_worker"]
    own = dict(zip(WORKPLACES["workplace_id"], WORKPLACES["ownership"], strict=True))
    sex = dict(zip(WORKERS["worker_id"], WORKERS["sex"], strict=True))
    jobs = list(JOBS.iter_rows())
    n_not = 0
    if jt == "JT02":
        n_not = sum(own[w] != "A05" for _, w, _ in jobs)
        jobs = [j for j in jobs if own[j[1]] == "A05"]
    kept, over, dropped = [], 0, 0
    for p in sorted({p for p, _, _ in jobs}):
        mine = [j for j in jobs if j[0] == p]
        mine.sort(key=lambda j: ((-j[2] if primary else 0), _word(key, p, j[1])))
        over += len(mine) > k
        dropped += max(0, len(mine) - k)
        kept += [(w, sex[p]) for _, w, _ in mine[:k]]
    if jt == "JT03":
        n_not = sum(own[w] != "A05" for w, _ in kept)
        kept = [(w, s) for w, s in kept if own[w] == "A05"]
    return sorted(kept), over, dropped, n_not


def _kept(cfg: JobTablesConfig) -> list[tuple[str, str]]:
    t = load_job_tables(cfg)
    return sorted(zip(t.jobs["workplace_id"], t.jobs["sex"], strict=True))


@pytest.mark.parametrize(
    "kw",
    [
        {"max_jobs_per_worker": 2},
        {"max_jobs_per_worker": 4},
        {"job_type": "JT01", "job_earnings": "pay"},
        {"job_type": "JT02", "max_jobs_per_worker": 1},
        {"job_type": "JT03", "job_earnings": "pay"},
    ],
)
def test_the_documented_rule_keeps_these_jobs(tmp_path: Path, kw: dict) -> None:
    expected, over, dropped, n_not = _by_rule(kw)
    cfg = _config(tmp_path, order_key=KEY, **kw)
    assert _kept(cfg) == expected
    sel = load_job_tables(cfg).selection
    assert sel is not None
    assert (sel.workers_over, sel.jobs_dropped, sel.jobs_not_of_type) == (over, dropped, n_not)
    # the release's loader (narrowed to the queried attributes) keeps the same jobs
    fast = scan_job_tables(narrow_config(cfg, ["block", "sex"]))
    assert fast.jobs.height == len(expected)


def test_primary_and_private_primary_jobs_by_hand(tmp_path: Path) -> None:
    """Earnings decide before the key: the hand-worked primary jobs (LODES JT01, JT03).

    p1's highest-earning job is w2 (5000, ownership A00: public), p2's w4 (70), p3's w3.
    JT03 takes the primary job among all of a worker's jobs and keeps it when private
    (LODES: the private jobs classified as primary), so p1 has no private primary job.
    """
    for key in (KEY, bytes(32)):
        cfg = _config(tmp_path, order_key=key, job_type="JT01", job_earnings="pay")
        assert _kept(cfg) == [("w2", "M"), ("w3", "F"), ("w4", "F")]
        cfg = _config(tmp_path, order_key=key, job_type="JT03", job_earnings="pay")
        assert _kept(cfg) == [("w3", "F"), ("w4", "F")]
        sel = load_job_tables(cfg).selection
        assert sel is not None and (sel.jobs_dropped, sel.jobs_not_of_type) == (4, 1)


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


def test_partitioned_parquet_folders_with_several_jobs(tmp_path: Path) -> None:
    """The three tables as folders of Parquet files (a partitioned table) keep the same jobs
    as the single files, on the Polars loader the release uses; a bad value in a later
    part is refused naming the folder and its row counted over the parts in order."""
    (tmp_path / "one").mkdir()
    one = _config(tmp_path / "one", order_key=KEY, max_jobs_per_worker=2)
    parts = tmp_path / "parts"
    for name, frame in (("workplace", WORKPLACES), ("worker", WORKERS), ("job", JOBS)):
        (parts / name / "k=1").mkdir(parents=True)
        half = frame.height // 2
        frame[:half].write_parquet(parts / name / "a.parquet")
        frame[half:].write_parquet(parts / name / "k=1" / "b.parquet")
    cfg = replace(one, workplace=parts / "workplace", worker=parts / "worker", job=parts / "job")
    expected, over, dropped, _ = _by_rule({"max_jobs_per_worker": 2})
    for loaded in (load_job_tables(cfg), scan_job_tables(cfg)):
        got = sorted(zip(loaded.jobs["workplace_id"].cast(pl.Utf8), loaded.jobs["sex"].cast(
            pl.Utf8), strict=True))  # fmt: skip
        assert got == expected
        assert loaded.selection is not None
        assert (loaded.selection.workers_over, loaded.selection.jobs_dropped) == (over, dropped)
    bad = JOBS[JOBS.height // 2 :].with_columns(pl.lit("w9").alias("workplace_id"))
    bad.write_parquet(parts / "job" / "k=1" / "b.parquet")
    with pytest.raises(DataValidationError) as e:
        scan_job_tables(cfg)
    assert e.value.file == str(parts / "job") and e.value.row == JOBS.height // 2 + 1


@pytest.mark.parametrize("kw", [{"max_jobs_per_worker": 2}, {"job_type": "JT02"}])
def test_a_joined_table_with_several_jobs_is_refused_before_reading(
    tmp_path: Path, kw: dict
) -> None:
    """Documented refusal (docs/privacy.md#several-jobs-per-worker): the selection needs the
    three tables; nothing is read (the joined file does not exist)."""
    cfg = JobTablesConfig(
        jobs=tmp_path / "absent.parquet",
        workplace_attributes=("block", "ownership"),
        worker_attributes=("sex",),
        domains={"sex": ("M", "F")},
        **kw,
    )
    for load in (load_job_tables, scan_job_tables):
        with pytest.raises(SpecError, match="need the three tables"):
            load(cfg)
