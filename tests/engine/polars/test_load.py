"""The Polars engine's lazy loader: same data as the eager loader, same errors.

See docs/design.md#validation.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from eree.data.config import JobTablesConfig
from eree.data.job_tables import load_job_tables
from eree.engine.polars.engine import PolarsEngine
from eree.errors import DataValidationError
from eree.synth.lodes import synth_parametric

BY = ("county", "naics_sector", "age", "sex")


@pytest.fixture(scope="module")
def tables() -> dict[str, pl.DataFrame]:
    s = synth_parametric(seed=3, n_jobs=3_000)
    return {"workplace": s.workplace, "worker": s.worker, "job": s.job}


def write(tmp: Path, t: dict[str, pl.DataFrame]) -> JobTablesConfig:
    for name, df in t.items():
        df.write_parquet(tmp / f"{name}.parquet")
    return JobTablesConfig(
        workplace=tmp / "workplace.parquet",
        worker=tmp / "worker.parquet",
        job=tmp / "job.parquet",
    )


def test_same_data_and_cells_as_the_eager_loader(tmp_path, tables) -> None:
    # shuffled jobs: neither ids in order nor the same order as the workers
    t = dict(tables, job=tables["job"].sample(fraction=1.0, shuffle=True, seed=5))
    cfg = write(tmp_path, t)
    eng = PolarsEngine()
    fast = eng.load_job_tables(cfg, BY)
    slow = load_job_tables(cfg)
    assert fast.workplaces.columns == ["workplace_id", "county", "naics_sector"]
    assert fast.workplaces.equals(slow.workplaces.select(fast.workplaces.columns))
    assert fast.jobs.cast(pl.Utf8).equals(slow.jobs.select(fast.jobs.columns))
    got = eng.cell_statistics(fast, ["county", "naics_sector"], ["age", "sex"])
    want = PolarsEngine().cell_statistics(slow, ["county", "naics_sector"], ["age", "sex"])
    assert got.equals(want)
    # every column (a release with a ledger): the per-job frame, coded, no job counts
    full = PolarsEngine().load_job_tables(cfg)
    assert full.job_counts is None and isinstance(full.jobs["workplace_id"].dtype, pl.Enum)
    eng_full = PolarsEngine()
    assert eng_full.cell_statistics(full, ["county", "naics_sector"], ["age", "sex"]).equals(want)
    want_ec = PolarsEngine().establishment_cells(slow, ["county"], ["sex"])
    assert eng_full.establishment_cells(full, ["county"], ["sex"]).equals(want_ec)
    assert eng.establishment_cells(fast, ["county"], ["sex"]).equals(want_ec)
    # the jobs counted per establishment row and worker attributes, as the engine uses
    # them, against a plain count over the eager loader's jobs
    counts = fast.job_counts
    assert counts is not None and fast.n_jobs == slow.n_jobs
    ids = fast.workplaces.get_column("workplace_id").to_numpy()
    got_counts = sorted(
        (ids[r], str(a), str(s), n)
        for r, a, s, n in counts.select("workplace_row", "age", "sex", "n").iter_rows()
    )
    want_counts: dict[tuple[str, str, str], int] = {}
    for w, a, s in slow.jobs.select("workplace_id", "age", "sex").iter_rows():
        want_counts[(w, a, s)] = want_counts.get((w, a, s), 0) + 1
    assert got_counts == sorted((*k, n) for k, n in want_counts.items())


def _dup_worker(t):
    wk = t["worker"]
    return dict(t, worker=wk.with_columns(
        pl.when(pl.int_range(wk.height) == 7).then(pl.lit(wk["worker_id"][3]))
        .otherwise(pl.col("worker_id")).alias("worker_id")))  # fmt: skip


def _unknown_workplace(t):
    jb = t["job"]
    return dict(t, job=jb.with_columns(
        pl.when(pl.int_range(jb.height) == 11).then(pl.lit("nowhere"))
        .otherwise(pl.col("workplace_id")).alias("workplace_id")))  # fmt: skip


def _outside_domain(t):
    wk = t["worker"]
    return dict(t, worker=wk.with_columns(
        pl.when(pl.int_range(wk.height) == 5).then(pl.lit("A99"))
        .otherwise(pl.col("age")).alias("age")))  # fmt: skip


def _missing_job(t):
    return dict(t, job=t["job"].slice(1))


def _blank_workplace_attr(t):
    wp = t["workplace"]
    return dict(t, workplace=wp.with_columns(
        pl.when(pl.int_range(wp.height) == 2).then(pl.lit(" "))
        .otherwise(pl.col("county")).alias("county")))  # fmt: skip


def _worker_id(t, row: int, value: str, *, job: bool):
    """Worker ``row``'s id set to ``value`` (and in the job table too, with ``job``)."""
    out = dict(t)
    for name in ("worker", "job") if job else ("worker",):
        df = t[name]
        out[name] = df.with_columns(
            pl.when(pl.col("worker_id") == t["worker"]["worker_id"][row]).then(pl.lit(value))
            .otherwise(pl.col("worker_id")).alias("worker_id"))  # fmt: skip
    return out


def _blank_worker_id(t):  # U+3000 is whitespace: blank, though it sorts after "!"
    return _worker_id(t, 4, "\u3000", job=True)


def _blank_job_worker_id(t):
    jb = t["job"]
    return dict(t, job=jb.with_columns(
        pl.when(pl.int_range(jb.height) == 9).then(pl.lit(""))
        .otherwise(pl.col("worker_id")).alias("worker_id")))  # fmt: skip


def _unsorted_duplicate_worker(t):  # a duplicate the "increasing" proof must not miss
    wk = t["worker"]
    return dict(t, worker=wk.with_columns(
        pl.when(pl.int_range(wk.height) == wk.height - 1).then(pl.lit(wk["worker_id"][0]))
        .otherwise(pl.col("worker_id")).alias("worker_id")))  # fmt: skip


@pytest.mark.parametrize(
    "corrupt", [_dup_worker, _unknown_workplace, _outside_domain, _missing_job,
                _blank_workplace_attr, _blank_worker_id, _blank_job_worker_id,
                _unsorted_duplicate_worker],
)  # fmt: skip
def test_invalid_input_is_rejected_like_the_eager_loader(tmp_path, tables, corrupt) -> None:
    cfg = write(tmp_path, corrupt(tables))
    with pytest.raises(DataValidationError) as slow:
        load_job_tables(cfg)
    with pytest.raises(DataValidationError) as fast:
        PolarsEngine().load_job_tables(cfg, BY)
    assert (fast.value.rule, fast.value.row, fast.value.column) == (
        slow.value.rule, slow.value.row, slow.value.column,
    )  # fmt: skip


def test_ids_the_cheap_proof_cannot_vouch_for_are_checked_exactly(tmp_path, tables) -> None:
    """Ids starting with a space or a non-ASCII letter are not blank: loaded as valid."""
    t = _worker_id(tables, 0, " p-first", job=True)
    t = _worker_id(t, t["worker"].height - 1, "é-last", job=True)
    cfg = write(tmp_path, t)
    fast = PolarsEngine().load_job_tables(cfg, BY)
    assert fast.jobs.height == load_job_tables(cfg).jobs.height == tables["job"].height


def test_partitioned_directories_load_like_single_files(tmp_path, tables) -> None:
    single = write(tmp_path, tables)
    parts = {}
    for name, df in tables.items():
        d = tmp_path / name
        d.mkdir()
        half = df.height // 2
        df.slice(0, half).write_parquet(d / "part-0.parquet")
        df.slice(half).write_parquet(d / "part-1.parquet")
        parts[name] = d
    cfg = JobTablesConfig(workplace=parts["workplace"], worker=parts["worker"], job=parts["job"])
    got = PolarsEngine().load_job_tables(cfg, BY)
    want = PolarsEngine().load_job_tables(single, BY)
    assert got.workplaces.equals(want.workplaces)
    assert got.jobs.cast(pl.Utf8).equals(want.jobs.cast(pl.Utf8))
    # an invalid partitioned input is refused (never loaded with rows dropped)
    (parts["job"] / "part-1.parquet").unlink()
    with pytest.raises(DataValidationError) as err:
        PolarsEngine().load_job_tables(cfg, BY)
    assert err.value.rule == "invalid-partitioned-input"
