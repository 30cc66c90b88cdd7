"""Tests of eree.data.job_tables.load_job_tables: both input forms, every rule of
docs/design.md#validation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import polars as pl
import pytest

from eree.data.config import JobTablesConfig
from eree.data.job_tables import JobTables, load_job_tables
from eree.data.schema import WORKER_DOMAINS, WORKPLACE_ATTRIBUTES
from eree.errors import DataValidationError, SpecError

Frames = tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]


def _frames() -> Frames:
    workplace = pl.DataFrame(
        {
            "workplace_id": ["w1", "w2", "w3", "w4"],
            "state": ["42"] * 4,
            "county": ["42001", "42001", "42003", "42003"],
            "tract": ["42001000100", "42001000100", "42003000200", "42003000200"],
            "block": ["420010001001000", "420010001001001", "420030002001000", "420030002001000"],
            "naics_sector": ["11", "92", "62", "44-45"],
            "ownership": ["A05", "A00", "A05", "A05"],
        }
    )
    worker = pl.DataFrame(
        {
            "worker_id": ["p1", "p2", "p3", "p4", "p5", "p6"],
            "age": ["A01", "A02", "A03", "A02", "A01", "A03"],
            "sex": ["M", "F", "F", "M", "F", "M"],
            "race": ["A1", "A2", "A4", "A1", "A7", "A1"],
            "ethnicity": ["A1", "A1", "A2", "A1", "A2", "A1"],
            "education": ["E1", "E2", "E3", "E4", "E2", "E3"],
            "earnings": ["E01", "E02", "E03", "E03", "E01", "E02"],
        }
    )
    # job order differs from worker order; w4 has no jobs (allowed)
    job = pl.DataFrame(
        {
            "worker_id": ["p3", "p1", "p2", "p6", "p4", "p5"],
            "workplace_id": ["w2", "w1", "w1", "w3", "w2", "w3"],
        }
    )
    return workplace, worker, job


def _write(df: pl.DataFrame, path: Path) -> Path:
    if path.suffix == ".parquet":
        df.write_parquet(path)
    elif path.name.endswith(".gz"):
        import gzip

        with gzip.open(path, "wb") as fh:
            df.write_csv(fh)
    else:
        df.write_csv(path)
    return path


def _write_three(tmp_path: Path, frames: Frames, fmt: str, **cfg: object) -> JobTablesConfig:
    paths = [
        _write(df, tmp_path / f"{n}.{fmt}")
        for n, df in zip(("workplace", "worker", "job"), frames, strict=True)
    ]
    return JobTablesConfig(workplace=paths[0], worker=paths[1], job=paths[2], **cfg)  # type: ignore[arg-type]


def _joined(frames: Frames, with_worker_id: bool = True) -> pl.DataFrame:
    wp, wk, jb = frames
    df = jb.join(wk, on="worker_id", how="left", maintain_order="left").join(
        wp, on="workplace_id", how="left", maintain_order="left"
    )
    cols = [
        "workplace_id",
        *WORKPLACE_ATTRIBUTES,
        *(["worker_id"] if with_worker_id else []),
        *WORKER_DOMAINS,
    ]
    return df.select(cols)


def _set(df: pl.DataFrame, row: int, column: str, value: object) -> pl.DataFrame:
    """Set 1-based data ``row`` of ``column``."""
    s = df.get_column(column).to_list()
    s[row - 1] = value
    return df.with_columns(pl.Series(column, s, dtype=df.schema[column]))


def _corrupt_csv_row(path: Path, row: int) -> None:
    lines = path.read_text().splitlines()
    lines[row] += ",SECRETFIELD"
    path.write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------- happy paths


@pytest.mark.parametrize("fmt", ["csv", "csv.gz", "parquet"])
def test_three_tables_load(tmp_path: Path, fmt: str) -> None:
    frames = _frames()
    data = load_job_tables(_write_three(tmp_path, frames, fmt))
    assert isinstance(data, JobTables)
    assert data.workplaces.equals(frames[0])
    expected = (
        frames[2]
        .join(frames[1], on="worker_id", how="left", maintain_order="left")
        .select("workplace_id", *WORKER_DOMAINS)
    )
    assert data.jobs.equals(expected)  # job order, each job with its own worker's attributes
    assert data.jobs.schema == dict.fromkeys(data.jobs.columns, pl.Utf8)
    assert data.domains == WORKER_DOMAINS
    assert (data.n_jobs, data.n_workplaces) == (6, 4)


def test_same_order_fast_path(tmp_path: Path) -> None:
    wp, wk, jb = _frames()
    jb = jb.sort("worker_id")  # now in worker-table order
    data = load_job_tables(_write_three(tmp_path, (wp, wk, jb), "parquet"))
    assert data.jobs["workplace_id"].to_list() == jb["workplace_id"].to_list()
    assert data.jobs["age"].to_list() == wk["age"].to_list()


def test_integer_ids_in_parquet_are_read_as_strings(tmp_path: Path) -> None:
    wp, wk, jb = _frames()
    strip = lambda df, c: df.with_columns(pl.col(c).str.slice(1).cast(pl.Int64))  # noqa: E731
    frames = (
        strip(wp, "workplace_id"),
        strip(wk, "worker_id"),
        strip(strip(jb, "worker_id"), "workplace_id"),
    )
    data = load_job_tables(_write_three(tmp_path, frames, "parquet"))
    assert data.workplaces["workplace_id"].to_list() == ["1", "2", "3", "4"]
    assert data.jobs["workplace_id"].to_list() == ["2", "1", "1", "3", "2", "3"]


def test_declared_workplace_domains_are_returned(tmp_path: Path) -> None:
    domains = {**WORKER_DOMAINS, "ownership": ("A01", "A00", "A05")}
    data = load_job_tables(_write_three(tmp_path, _frames(), "csv", domains=domains))
    assert data.domains["ownership"] == ("A01", "A00", "A05")


def test_custom_columns(tmp_path: Path) -> None:
    wp, wk, jb = _frames()
    wp = wp.rename({"workplace_id": "estab"}).select("estab", "county")
    jb = jb.rename({"workplace_id": "estab"})
    wk = wk.select("worker_id", "sex")
    cfg = _write_three(
        tmp_path,
        (wp, wk, jb),
        "csv",
        workplace_id="estab",
        workplace_attributes=("county",),
        worker_attributes=("sex",),
        domains={"sex": ("M", "F")},
    )
    data = load_job_tables(cfg)
    # the loaded tables call the workplace id "workplace_id" (what the engines read,
    # JobTables's contract); [data] workplace_id names it in the input files only
    assert data.jobs.columns == ["workplace_id", "sex"]
    assert data.workplaces.columns == ["workplace_id", "county"]
    assert data.workplaces["workplace_id"].to_list() == wp["estab"].cast(pl.Utf8).to_list()
    assert data.domains == {"sex": ("M", "F")}


@pytest.mark.parametrize("with_worker_id", [True, False])
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_joined_form_equals_three_tables(tmp_path: Path, fmt: str, with_worker_id: bool) -> None:
    frames = _frames()
    three = load_job_tables(_write_three(tmp_path, frames, fmt))
    p = _write(_joined(frames, with_worker_id), tmp_path / f"jobs.{fmt}")
    joined = load_job_tables(JobTablesConfig(jobs=p))
    assert joined.jobs.equals(three.jobs)
    # derived workplaces: distinct workplaces with jobs, in order of first appearance
    assert joined.workplaces.equals(
        three.workplaces.filter(pl.col("workplace_id") != "w4").sort(
            pl.col("workplace_id").replace_strict({"w2": 0, "w1": 1, "w3": 2})
        )
    )


# ---------------------------------------------------------------- spec errors


def test_spec_errors(tmp_path: Path) -> None:
    cfg = _write_three(tmp_path, _frames(), "csv")
    with pytest.raises(SpecError, match="one form only"):
        load_job_tables(replace(cfg, jobs=cfg.job))
    with pytest.raises(SpecError, match="missing: worker"):
        load_job_tables(replace(cfg, worker=None))
    with pytest.raises(SpecError, match="no declared domain"):
        load_job_tables(replace(cfg, domains={"age": ("A01",)}))
    with pytest.raises(SpecError, match="listed twice"):
        load_job_tables(replace(cfg, workplace_attributes=("county", "age")))


# ---------------------------------------------------------------- every input rule
# (docs/design.md#validation)


@dataclass
class Case:
    """A malformed input: ``mutate`` breaks the frames; the error names table, row, column."""

    id: str
    mutate: Callable[[Frames], Frames]
    table: str
    row: int | None
    column: str | None
    rule: str
    secret: str | None = None  # a value that must not appear in the message
    formats: tuple[str, ...] = ("csv", "parquet")
    config: dict[str, object] = field(default_factory=dict)
    post: Callable[[Path], None] | None = None  # corrupt the written file


def _wp(f: Callable[[pl.DataFrame], pl.DataFrame]) -> Callable[[Frames], Frames]:
    return lambda fr: (f(fr[0]), fr[1], fr[2])


def _wk(f: Callable[[pl.DataFrame], pl.DataFrame]) -> Callable[[Frames], Frames]:
    return lambda fr: (fr[0], f(fr[1]), fr[2])


def _jb(f: Callable[[pl.DataFrame], pl.DataFrame]) -> Callable[[Frames], Frames]:
    return lambda fr: (fr[0], fr[1], f(fr[2]))


THREE_TABLE_CASES = [
    Case(
        "missing-workplace-id",
        _wp(lambda d: _set(d, 2, "workplace_id", None)),
        "workplace",
        2,
        "workplace_id",
        "missing-id",
    ),
    Case(
        "blank-workplace-id",
        _wp(lambda d: _set(d, 3, "workplace_id", " ")),
        "workplace",
        3,
        "workplace_id",
        "missing-id",
    ),
    Case(
        "missing-worker-id",
        _wk(lambda d: _set(d, 3, "worker_id", None)),
        "worker",
        3,
        "worker_id",
        "missing-id",
    ),
    Case(
        "missing-job-worker-id",
        _jb(lambda d: _set(d, 4, "worker_id", None)),
        "job",
        4,
        "worker_id",
        "missing-id",
    ),
    Case(
        "missing-job-workplace-id",
        _jb(lambda d: _set(d, 5, "workplace_id", None)),
        "job",
        5,
        "workplace_id",
        "missing-id",
    ),
    Case(
        "duplicate-workplace-id",
        _wp(lambda d: _set(d, 3, "workplace_id", "w1")),
        "workplace",
        3,
        "workplace_id",
        "duplicate-id",
    ),
    Case(
        "duplicate-worker-id",
        _wk(lambda d: _set(d, 5, "worker_id", "p2")),
        "worker",
        5,
        "worker_id",
        "duplicate-id",
    ),
    Case(
        "job-unknown-workplace",
        _jb(lambda d: _set(d, 2, "workplace_id", "w99")),
        "job",
        2,
        "workplace_id",
        "unknown-workplace",
    ),
    Case(
        "job-unknown-worker",
        _jb(lambda d: _set(d, 3, "worker_id", "p99")),
        "job",
        3,
        "worker_id",
        "unknown-worker",
    ),
    Case(
        "worker-with-no-job",
        _jb(lambda d: d.filter(pl.col("worker_id") != "p4")),
        "worker",
        4,
        "worker_id",
        "no-job",
    ),
    Case(
        "worker-with-two-jobs",
        _jb(lambda d: pl.concat([d, pl.DataFrame({"worker_id": ["p2"], "workplace_id": ["w3"]})])),
        "job",
        7,
        "worker_id",
        "multiple-jobs",
    ),
    Case(
        "worker-attribute-outside-domain",
        _wk(lambda d: _set(d, 4, "age", "SECRETAGE")),
        "worker",
        4,
        "age",
        "domain",
        secret="SECRETAGE",
    ),
    Case(
        "worker-attribute-missing",
        _wk(lambda d: _set(d, 2, "earnings", None)),
        "worker",
        2,
        "earnings",
        "domain",
    ),
    Case(
        "workplace-attribute-missing",
        _wp(lambda d: _set(d, 2, "county", None)),
        "workplace",
        2,
        "county",
        "missing-value",
    ),
    Case(
        "workplace-attribute-outside-domain",
        _wp(lambda d: _set(d, 4, "ownership", "SECRETOWN")),
        "workplace",
        4,
        "ownership",
        "domain",
        secret="SECRETOWN",
        config={"domains": {**WORKER_DOMAINS, "ownership": ("A01", "A00", "A05")}},
    ),
    Case(
        "missing-column-worker",
        _wk(lambda d: d.drop("race")),
        "worker",
        None,
        "race",
        "missing-column",
    ),
    Case(
        "missing-column-workplace",
        _wp(lambda d: d.drop("naics_sector")),
        "workplace",
        None,
        "naics_sector",
        "missing-column",
    ),
    Case(
        "missing-column-job",
        _jb(lambda d: d.drop("workplace_id")),
        "job",
        None,
        "workplace_id",
        "missing-column",
    ),
    Case(
        "ragged-row",
        lambda fr: fr,
        "worker",
        5,
        None,
        "field-count",
        secret="SECRETFIELD",
        formats=("csv",),
        post=lambda p: _corrupt_csv_row(p / "worker.csv", 5),
    ),
    Case(
        "unparseable-float-ids",
        _wk(lambda d: d.with_columns(pl.Series("worker_id", [1.5, 2.5, 3.5, 4.5, 5.5, 6.5]))),
        "worker",
        None,
        "worker_id",
        "type",
        formats=("parquet",),
    ),
]


@pytest.mark.parametrize(
    ("case", "fmt"),
    [pytest.param(c, f, id=f"{c.id}-{f}") for c in THREE_TABLE_CASES for f in c.formats],
)
def test_three_table_violations(tmp_path: Path, case: Case, fmt: str) -> None:
    cfg = _write_three(tmp_path, case.mutate(_frames()), fmt, **case.config)
    if case.post:
        case.post(tmp_path)
    with pytest.raises(DataValidationError) as ei:
        load_job_tables(cfg)
    e = ei.value
    assert e.file == str(tmp_path / f"{case.table}.{fmt}")
    assert (e.row, e.column, e.rule) == (case.row, case.column, case.rule)
    if case.secret:
        assert case.secret not in str(e)


def test_domain_message_lists_domain(tmp_path: Path) -> None:
    cfg = _write_three(tmp_path, _wk(lambda d: _set(d, 4, "age", "A09"))(_frames()), "csv")
    with pytest.raises(DataValidationError) as ei:
        load_job_tables(cfg)
    msg = str(ei.value)
    assert "declared domain of 'age' (A01, A02, A03)" in msg
    assert "A09" not in msg


def test_ids_are_not_repeated_in_referential_errors(tmp_path: Path) -> None:
    """The row and column locate the id; the id itself is not printed (design.md#validation)."""
    cfg = _write_three(tmp_path, _jb(lambda d: _set(d, 2, "workplace_id", "w99"))(_frames()), "csv")
    with pytest.raises(DataValidationError) as ei:
        load_job_tables(cfg)
    assert (ei.value.row, ei.value.column) == (2, "workplace_id")
    assert "w99" not in str(ei.value)


# ---------------------------------------------------------------- joined form


JOINED_CASES = [
    # (id, mutate, row, column, rule, secret, formats)
    (
        "missing-workplace-id",
        lambda d: _set(d, 3, "workplace_id", None),
        3,
        "workplace_id",
        "missing-id",
        None,
        ("csv", "parquet"),
    ),
    (
        "missing-worker-id",
        lambda d: _set(d, 2, "worker_id", ""),
        2,
        "worker_id",
        "missing-id",
        None,
        ("csv", "parquet"),
    ),
    (
        "worker-with-two-jobs",
        lambda d: _set(d, 5, "worker_id", "p3"),
        5,
        "worker_id",
        "multiple-jobs",
        None,
        ("csv", "parquet"),
    ),
    (
        "worker-attribute-outside-domain",
        lambda d: _set(d, 6, "race", "SECRETRACE"),
        6,
        "race",
        "domain",
        "SECRETRACE",
        ("csv", "parquet"),
    ),
    (
        "worker-attribute-missing",
        lambda d: _set(d, 1, "sex", None),
        1,
        "sex",
        "domain",
        None,
        ("csv", "parquet"),
    ),
    (
        "workplace-attribute-missing",
        lambda d: _set(d, 4, "tract", None),
        4,
        "tract",
        "missing-value",
        None,
        ("csv", "parquet"),
    ),
    (
        "inconsistent-workplace",
        lambda d: _set(d, 5, "county", "SECRETCTY"),
        5,
        "county",
        "inconsistent-workplace",
        "SECRETCTY",
        ("csv", "parquet"),
    ),
    (
        "missing-column-worker-attribute",
        lambda d: d.drop("education"),
        None,
        "education",
        "missing-column",
        None,
        ("csv", "parquet"),
    ),
    (
        "missing-column-workplace-id",
        lambda d: d.drop("workplace_id"),
        None,
        "workplace_id",
        "missing-column",
        None,
        ("csv", "parquet"),
    ),
    (
        "missing-column-workplace-attribute",
        lambda d: d.drop("ownership"),
        None,
        "ownership",
        "missing-column",
        None,
        ("csv", "parquet"),
    ),
    (
        "unparseable-float-ids",
        lambda d: d.with_columns(pl.Series("workplace_id", [1.5] * 6)),
        None,
        "workplace_id",
        "type",
        None,
        ("parquet",),
    ),
]


@pytest.mark.parametrize(
    ("mutate", "row", "column", "rule", "secret", "fmt"),
    [pytest.param(*c[1:6], f, id=f"{c[0]}-{f}") for c in JOINED_CASES for f in c[6]],
)
def test_joined_violations(
    tmp_path: Path,
    mutate: Callable[[pl.DataFrame], pl.DataFrame],
    row: int | None,
    column: str | None,
    rule: str,
    secret: str | None,
    fmt: str,
) -> None:
    # joined rows: (p3,w2) (p1,w1) (p2,w1) (p6,w3) (p4,w2) (p5,w3)
    p = _write(mutate(_joined(_frames())), tmp_path / f"jobs.{fmt}")
    with pytest.raises(DataValidationError) as ei:
        load_job_tables(JobTablesConfig(jobs=p))
    e = ei.value
    assert (e.file, e.row, e.column, e.rule) == (str(p), row, column, rule)
    if secret:
        assert secret not in str(e)


def test_joined_inconsistent_names_first_row(tmp_path: Path) -> None:
    p = _write(_set(_joined(_frames()), 5, "naics_sector", "11"), tmp_path / "jobs.csv")
    with pytest.raises(DataValidationError, match=r"first row 1") as ei:
        load_job_tables(JobTablesConfig(jobs=p))
    assert "w2" not in str(ei.value)  # the row names the workplace; its id is not printed


def test_joined_ragged_row(tmp_path: Path) -> None:
    p = _write(_joined(_frames()), tmp_path / "jobs.csv")
    _corrupt_csv_row(p, 2)
    with pytest.raises(DataValidationError) as ei:
        load_job_tables(JobTablesConfig(jobs=p))
    assert (ei.value.file, ei.value.row, ei.value.rule) == (str(p), 2, "field-count")
    assert "SECRETFIELD" not in str(ei.value)
