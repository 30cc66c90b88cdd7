"""One joined ``jobs`` table on the Polars engine: the streaming fast path.

The joined table is the same data as the three tables (docs/spec.md, ``[data] jobs``), so
a seeded release of either form publishes the same tables; every input rule of
docs/design.md#validation is still enforced on it, with the file, row and column of the
first offending row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from eree.data.config import JobTablesConfig
from eree.engine.polars.engine import PolarsEngine
from eree.errors import DataValidationError
from eree.mechanisms.noise import SeededNoise
from eree.release.protect import protect
from eree.release.spec import load_spec
from eree.synth.lodes import synth_parametric

PRIVACY = """
[privacy]
definition = "eree-weak"
alpha = 0.1
"""
#: worker attributes read: the jobs are counted per establishment and attributes
QUERIES = (
    PRIVACY
    + """
[[query]]
name = "county_industry"
by = ["county", "naics_sector"]
mechanism = "log_laplace"
epsilon = 1.0
[[query]]
name = "tract_sex"
by = ["tract", "sex"]
mechanism = "smooth_gamma"
epsilon = 2.0
[[query]]
name = "county_ownership_age_sex"
by = ["county", "ownership", "age", "sex"]
mechanism = "smooth_laplace"
epsilon = 6.0
"""
)
#: workplace attributes only: the jobs per establishment come from the workplace pass
WORKPLACE_QUERIES = (
    PRIVACY
    + """
[[query]]
name = "tract_industry_ownership"
by = ["tract", "naics_sector", "ownership"]
mechanism = "smooth_laplace"
epsilon = 1.0
[[query]]
name = "county"
by = ["county"]
mechanism = "log_laplace"
epsilon = 1.0
"""
)


@pytest.fixture(scope="module")
def three() -> dict[str, pl.DataFrame]:
    s = synth_parametric(seed=11, n_jobs=4_000)
    return {"workplace": s.workplace, "worker": s.worker, "job": s.job}


def joined(t: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """One row per job, rows shuffled (neither workplace nor worker ids in order)."""
    return (
        t["job"]
        .join(t["worker"], on="worker_id", how="left", maintain_order="left")
        .join(t["workplace"], on="workplace_id", how="left", maintain_order="left")
        .sample(fraction=1.0, shuffle=True, seed=2)
    )


def release(
    spec_dir: Path, data_lines: str, out: Path, queries: str = QUERIES
) -> dict[str, pl.DataFrame]:
    spec = spec_dir / "spec.toml"
    spec.write_text(f'name = "joined"\n[data]\n{data_lines}\n{queries}')
    protect(load_spec(spec), out, SeededNoise(7))
    return {p.name: pl.read_parquet(p) for p in sorted((out / "tables").glob("*.parquet"))}


@pytest.mark.parametrize(
    ("queries", "n"),
    [(QUERIES, 3), (WORKPLACE_QUERIES, 2)],
    ids=["worker-attributes", "workplace-attributes-only"],
)
def test_a_joined_table_releases_what_the_three_tables_release(tmp_path, three, queries, n) -> None:
    for name, df in three.items():
        df.write_parquet(tmp_path / f"{name}.parquet")
    joined(three).write_parquet(tmp_path / "jobs.parquet", row_group_size=500)
    by_three = release(
        tmp_path,
        'workplace = "workplace.parquet"\nworker = "worker.parquet"\njob = "job.parquet"',
        tmp_path / "three",
        queries,
    )
    by_joined = release(tmp_path, 'jobs = "jobs.parquet"', tmp_path / "joined", queries)
    assert len(by_three) == n and by_three.keys() == by_joined.keys()
    for name, table in by_three.items():
        assert table.equals(by_joined[name]), name


def test_the_fast_path_counts_the_jobs_and_keeps_first_occurrence_order(tmp_path, three) -> None:
    jobs = joined(three)
    jobs.write_parquet(tmp_path / "jobs.parquet", row_group_size=500)
    cfg = JobTablesConfig(jobs=tmp_path / "jobs.parquet")
    data = PolarsEngine().load_job_tables(cfg, ["county", "naics_sector", "age", "sex"])
    assert data.job_counts is not None  # counted while validated: the streaming path
    # workplaces: one row per id, in order of first occurrence in the table
    want = jobs.select("workplace_id", "county", "naics_sector").unique(
        subset="workplace_id", keep="first", maintain_order=True
    )
    assert data.workplaces.equals(want)
    # jobs per (workplace, age, sex), from the establishment's row, against a plain count
    ids = data.workplaces.get_column("workplace_id").to_list()
    got = {
        (ids[r], str(a), str(s)): n
        for r, a, s, n in data.job_counts.select("workplace_row", "age", "sex", "n").iter_rows()
    }
    assert got == Counter(jobs.select("workplace_id", "age", "sex").iter_rows())
    # the per-job frame, when asked for: the table's own rows, in order
    assert data.jobs.cast(pl.Utf8).equals(jobs.select("workplace_id", "age", "sex"))
    # no worker attribute: the jobs per establishment, from the workplace pass
    only = PolarsEngine().load_job_tables(cfg, ["county"])
    assert only.job_counts is not None and only.job_counts.columns == ["workplace_row", "n"]
    assert only.workplaces.equals(want.select("workplace_id", "county"))
    per = dict(only.job_counts.iter_rows())
    assert {ids[r]: n for r, n in per.items()} == Counter(jobs.get_column("workplace_id"))


def _set(column: str, row: int, value: str | None) -> Callable[[pl.DataFrame], pl.DataFrame]:
    def corrupt(df: pl.DataFrame) -> pl.DataFrame:
        new = pl.when(pl.int_range(pl.len()) == row).then(pl.lit(value, dtype=pl.Utf8))
        return df.with_columns(new.otherwise(pl.col(column)).alias(column))

    return corrupt


def _copy(column: str, row: int, from_row: int) -> Callable[[pl.DataFrame], pl.DataFrame]:
    def corrupt(df: pl.DataFrame) -> pl.DataFrame:
        return _set(column, row, df.get_column(column)[from_row])(df)

    return corrupt


def _other_tract(row: int) -> Callable[[pl.DataFrame], pl.DataFrame]:
    """Row ``row``'s workplace given a tract it has on none of its other rows."""

    def corrupt(df: pl.DataFrame) -> pl.DataFrame:
        own = df.get_column("tract")[row]
        other = next(t for t in df.get_column("tract").unique().sort() if t != own)
        return _set("tract", row, other)(df)

    return corrupt


# (corruption, 0-based row, column, rule); each workplace in the table has several jobs
CASES = [
    (_other_tract(900), 900, "tract", "inconsistent-workplace"),
    (_copy("worker_id", 3_000, 17), 3_000, "worker_id", "multiple-jobs"),
    (_set("workplace_id", 1_234, " "), 1_234, "workplace_id", "missing-id"),
    (_set("workplace_id", 1_234, None), 1_234, "workplace_id", "missing-id"),
    (_set("worker_id", 77, ""), 77, "worker_id", "missing-id"),
    (_set("sex", 2_500, "X"), 2_500, "sex", "domain"),
    (_set("age", 3_999, None), 3_999, "age", "domain"),
    (_set("county", 42, "\u3000"), 42, "county", "missing-value"),
]


@pytest.mark.parametrize(("corrupt", "row", "column", "rule"), CASES)
def test_every_input_rule_still_holds_on_a_joined_table(
    tmp_path, three, corrupt, row, column, rule
) -> None:
    jobs = joined(three).pipe(corrupt)
    jobs.write_parquet(tmp_path / "jobs.parquet", row_group_size=500)
    with pytest.raises(DataValidationError) as err:
        release(tmp_path, 'jobs = "jobs.parquet"', tmp_path / "out")
    e = err.value
    assert (e.rule, e.row, e.column) == (rule, row + 1, column)
    assert e.file == str(tmp_path / "jobs.parquet")
    assert not (tmp_path / "out").exists()


def test_a_partitioned_joined_table_releases_what_one_file_releases(tmp_path, three) -> None:
    jobs = joined(three)
    jobs.write_parquet(tmp_path / "jobs.parquet")
    parts = tmp_path / "jobs"
    parts.mkdir()
    for i, lo in enumerate(range(0, jobs.height, 1_500)):
        jobs.slice(lo, 1_500).write_parquet(parts / f"part-{i}.parquet")
    one = release(tmp_path, 'jobs = "jobs.parquet"', tmp_path / "one")
    split = release(tmp_path, 'jobs = "jobs"', tmp_path / "split")
    assert one.keys() == split.keys() and all(one[k].equals(split[k]) for k in one)
    # a duplicated worker across two parts is refused (never loaded)
    dup = jobs.slice(0, 1).with_columns(pl.lit("w-other").alias("workplace_id"))
    dup.write_parquet(parts / "part-9.parquet")
    with pytest.raises(DataValidationError) as err:
        release(tmp_path, 'jobs = "jobs"', tmp_path / "bad")
    assert err.value.rule == "invalid-partitioned-input"
