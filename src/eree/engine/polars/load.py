"""Loading ER-EE Parquet input for the Polars engine in lazy scans.

See docs/design.md#data-flow, #validation.

:func:`eree.data.job_tables.load_job_tables` reads every configured column eagerly and checks
row by row, so that it can name the file, row and column of the first problem. A release
needs neither all the columns nor the row numbers when the data are valid, which they
almost always are. :func:`scan_job_tables` therefore

1. narrows the configuration to the attributes the release uses;
2. proves, with lazy aggregations over the Parquet files (counts of missing values,
   distinct ids, values outside the declared domains, jobs whose workplace or worker is
   unknown; for one joined ``jobs`` table, workplace ids with more than one set of
   workplace attributes), that the narrowed input satisfies every rule of
   docs/design.md#validation that :func:`~eree.data.job_tables.load_job_tables` checks;
   nothing proportional to the microdata is kept by these checks but hash sets of ids;
3. reads only the needed columns: either the per-job frame (workplace ids and worker
   attributes coded as Enums), or, for a release, only the jobs counted per
   establishment and combination of worker attributes (one streaming group-by: all
   the engine needs; the per-job frame is then read only if asked for).

A joined table is read in at most three streaming passes over its needed columns
(:func:`_scan_joined`): its workplaces, grouped and checked; its worker ids, if it has
them; with worker attributes, the jobs counted per establishment and attributes.

Tables may be Parquet files or directories of Parquet files (a partitioned table, read
in sorted file order). When a check fails, or the input is not Parquet with text or
integer columns, it hands over to :func:`~eree.data.job_tables.load_job_tables` on the same narrowed
configuration, which raises the precise error (file, row, column). So the rules and
their messages live in one place and the fast path can only be stricter, never looser.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import polars as pl

from eree.data.config import JobTablesConfig
from eree.data.io import table_format
from eree.data.job_tables import JOBS, ROW, JobTables, canonical_ids, check_config, load_job_tables
from eree.data.location import local_path
from eree.data.schema import OWNERSHIP, WORKPLACE_ID
from eree.errors import DataValidationError

__all__ = ["local_inputs", "narrow_config", "scan_job_tables"]


def local_inputs(config: JobTablesConfig) -> JobTablesConfig:
    """``config`` with every input as a local path: ``file://`` URIs mapped, others refused.

    See :func:`eree.data.location.local_path` (a one-line :class:`SpecError` naming the
    ``[data]`` key for a scheme only the Spark engine reads).
    """
    paths = {key.removeprefix("[data]."): local_path(p, key) for key, p in config.inputs().items()}
    return dataclasses.replace(config, **paths)  # type: ignore[arg-type]


def narrow_config(config: JobTablesConfig, attributes: Iterable[str] | None) -> JobTablesConfig:
    """``config`` restricted to the workplace and worker attributes in ``attributes``.

    ``None`` keeps the configuration as it is. Unknown names are left for the queries'
    own checks (they are simply not loaded).
    """
    if attributes is None:
        return config
    want = set(attributes)
    if config.private_only:  # the job-type rule reads each job's ownership
        want.add(OWNERSHIP)
    return dataclasses.replace(
        config,
        workplace_attributes=tuple(a for a in config.workplace_attributes if a in want),
        worker_attributes=tuple(a for a in config.worker_attributes if a in want),
    )


def _text_or_int(dtype: pl.DataType) -> bool:
    return (
        dtype == pl.Utf8
        or dtype.is_integer()
        or dtype == pl.Categorical
        or isinstance(dtype, pl.Enum)
    )


def parquet_files(path: Path) -> list[Path] | None:
    """The Parquet files of a table.

    The file itself, or a directory's ``*.parquet`` files in sorted order (a partitioned
    table); ``None`` if it is neither.
    """
    if path.is_dir():
        files = sorted(path.rglob("*.parquet"))
        if any(not f.is_file() for f in files):
            return None  # a pipe or device among them: the loader refuses it by name
        return files or None
    if not path.is_file():  # missing, a pipe (would block) or a device: the loader says which
        return None
    try:
        return [path] if table_format(path) == "parquet" else None
    except Exception:
        return None


def _scan(path: Path, columns: Sequence[str]) -> pl.LazyFrame | None:
    """A lazy scan of ``columns`` as Utf8, or ``None`` if the fast path does not apply."""
    files = parquet_files(path)
    if files is None:
        return None
    try:
        schemas = [pl.read_parquet_schema(f) for f in files]
    except Exception:
        return None
    for schema in schemas:
        if any(c not in schema or not _text_or_int(schema[c]) for c in columns):
            return None
    return pl.scan_parquet(files).select([pl.col(c).cast(pl.Utf8) for c in columns])


def _missing(c: str) -> pl.Expr:
    return (pl.col(c).is_null() | (pl.col(c).str.strip_chars() == "")).sum()


def _filled_stats(c: str, i: int) -> list[pl.Expr]:
    r"""Aggregations that usually prove column ``c`` has no missing value (no copy).

    Nulls, and whether every value sorts between ``"!"`` and ``"\x7f"``: each then
    starts with a printable ASCII character, so none is blank.
    """
    return [
        pl.col(c).null_count().alias(f"nulls_{i}"),
        ((pl.col(c) >= "!") & (pl.col(c) < "\x7f")).all().alias(f"printable_{i}"),
    ]


def _filled(frame: pl.LazyFrame | pl.DataFrame, c: str, i: int, st: dict[str, object]) -> bool:
    """Whether column ``c`` has no missing value, from :func:`_filled_stats` (index ``i``).

    Blanks are counted exactly only when the cheap proof does not apply.
    """
    if st[f"nulls_{i}"]:
        return False
    if st[f"printable_{i}"]:
        return True
    blanks = frame.lazy().select(_missing(c)).collect(engine="streaming").item()
    return not blanks


def _outside(c: str, domain: Sequence[str]) -> pl.Expr:
    allowed = pl.Series(list(domain), dtype=pl.Utf8).implode()
    return (~pl.col(c).is_in(allowed).fill_null(False)).sum()


def _unique(frame: pl.LazyFrame, c: str, stats: dict[str, object]) -> bool:
    """Whether column ``c`` has no duplicate (``False`` may also mean "not proven").

    Strictly increasing ids (the usual layout) are unique; otherwise distinct 64-bit
    hashes prove distinct ids (equal hashes send the input to the exact loader).
    """
    if stats["increasing"]:
        return True
    distinct = frame.select(pl.col(c).hash().n_unique()).collect(engine="streaming").item()
    return bool(distinct == stats["n"])


def scan_job_tables(config: JobTablesConfig, *, lazy_jobs: bool = False) -> JobTables:
    """Load and validate ER-EE input; fast for valid Parquet (module docstring).

    Args:
        config: the ``[data]`` configuration, already narrowed to what is needed; a
            ``file://`` URI is read as the local path it names, any other URI refused
            (:func:`local_inputs`).
        lazy_jobs: on the fast path, count the jobs per establishment and combination of
            worker attributes (:attr:`~eree.data.job_tables.JobTables.job_counts`) in a
            streaming pass instead of reading the per-job frame, which is then read only
            if asked for (:attr:`~eree.data.job_tables.JobTables.jobs`).

    Returns:
        The validated data.

    Raises:
        SpecError, DataValidationError: as :func:`~eree.data.job_tables.load_job_tables`.
    """
    check_config(config)
    config = local_inputs(config)
    if config.selects_jobs:  # workers with several jobs: the loader that selects them
        return load_job_tables(config)
    if config.jobs is None:
        # a Polars failure on the fast path (an unreadable Parquet page, a panic) hands the
        # input to the eager loader, which names the file, row and column
        fast = _or_eager(lambda: _scan_three(config, lazy_jobs))
    else:
        fast = _scan_joined(config, Path(config.jobs), lazy_jobs)
    if fast is not None:
        return fast
    dirs = [p for p in config.input_files() if Path(p).is_dir()]
    if dirs:
        # the eager loader reads single files only: say what failed without row numbers
        raise DataValidationError(
            "a partitioned (directory) input is not valid Parquet with text or integer "
            "columns, or fails an input rule of docs/spec.md (ids missing or duplicated, a job "
            "at an unknown workplace or worker, a worker without exactly one job, a value "
            "missing or outside its declared domain); the Spark engine names the rule and "
            "an offending id",
            file=", ".join(str(d) for d in dirs),
            rule="invalid-partitioned-input",
        )
    return load_job_tables(config)


def _scan_three(config: JobTablesConfig, lazy_jobs: bool) -> JobTables | None:
    if config.workplace is None or config.worker is None or config.job is None:
        return None
    wid, kid = config.workplace_id, config.worker_id
    wattrs, kattrs = config.workplace_attributes, config.worker_attributes
    wp = _scan(Path(config.workplace), [wid, *wattrs])
    wk = _scan(Path(config.worker), [kid, *kattrs])
    jb = _scan(Path(config.job), [kid, wid])
    if wp is None or wk is None or jb is None:
        return None
    # the public workplace table is small: read it (it is part of the output anyway)
    workplaces = wp.collect()
    wp_cols = [wid, *wattrs]
    wp_checks = workplaces.select(
        pl.len().alias("n"),
        pl.col(wid).n_unique().alias("distinct"),
        *[e for i, c in enumerate(wp_cols) for e in _filled_stats(c, i)],
        *[
            _outside(a, config.domains[a]).alias(f"outside_{a}")
            for a in wattrs
            if a in config.domains
        ],
    ).row(0, named=True)
    if wp_checks["distinct"] != wp_checks["n"] or any(
        v for k, v in wp_checks.items() if k.startswith("outside_")
    ):
        return None
    if not all(_filled(workplaces, c, i, wp_checks) for i, c in enumerate(wp_cols)):
        return None
    # as many jobs as workers (Parquet metadata: no data read)
    n = wk.select(pl.len()).collect().item()
    if jb.select(pl.len()).collect().item() != n:
        return None
    if n == 0:
        return None
    # one streaming pass over the job table's worker ids beside the worker table and
    # the worker table's next id (strictly increasing ids, the usual layout, are unique)
    jk, nx = "__eree_job_worker", "__eree_next_worker"
    nxt = pl.concat(
        [
            wk.select(pl.col(kid).alias(nx)).slice(1),
            pl.LazyFrame({nx: [None]}, schema={nx: pl.Utf8}),
        ]
    )
    zipped = pl.concat([jb.select(pl.col(kid).alias(jk)), wk, nxt], how="horizontal")
    st = (
        zipped.select(
            *_filled_stats(kid, 0),
            (pl.col(nx) > pl.col(kid)).fill_null(True).all().alias("increasing"),
            (pl.col(jk) == pl.col(kid)).fill_null(False).all().alias("same"),
            *[_outside(a, config.domains[a]).alias(f"outside_{a}") for a in kattrs],
        )
        .collect(engine="streaming")
        .row(0, named=True)
    )
    if any(st[f"outside_{a}"] for a in kattrs):
        return None
    if not _filled(wk, kid, 0, st):
        return None
    same = bool(st["same"])
    if not same:  # the job table's worker ids are not the worker table's, row by row
        jst = jb.select(_filled_stats(kid, 1)).collect(engine="streaming").row(0, named=True)
        if not _filled(jb, kid, 1, jst):
            return None
    if not _unique(wk, kid, {"increasing": st["increasing"], "n": n}):
        return None
    if not same:
        # unique worker ids, as many jobs as workers: each worker holds exactly one job
        # iff the job table's worker ids are unique and all known
        if not _unique(jb, kid, {"increasing": False, "n": n}):
            return None
        known = jb.select(kid).join(wk.select(kid), on=kid, how="semi").select(pl.len())
        if known.collect().item() != n:
            return None
    domains = {a: tuple(config.domains[a]) for a in kattrs}
    for a in wattrs:
        if a in config.domains:
            domains[a] = tuple(config.domains[a])
    # the second and last pass: each worker attribute coded by its index in the declared
    # domain (an Enum: 1 byte per job, not 16)
    attr_codes = [pl.col(a).cast(pl.Enum(list(config.domains[a]))) for a in kattrs]
    if not kattrs:
        joined = jb.select(wid)
    elif same:
        joined = pl.concat([jb.select(wid), wk.select(kattrs)], how="horizontal")
    else:
        joined = jb.join(wk, on=kid, how="left", maintain_order="left").select(wid, *kattrs)
    ids = workplaces.get_column(wid)

    def read_jobs() -> pl.DataFrame | None:
        # streaming: the text columns are coded batch by batch, never held whole; each
        # job's workplace id coded by its row in the workplace table
        try:
            jobs = joined.select(pl.col(wid).cast(pl.Enum(ids)), *attr_codes).collect(
                engine="streaming"
            )
        except pl.exceptions.InvalidOperationError:  # a job at an unknown (or blank) workplace
            return None
        return None if jobs.get_column(wid).null_count() else jobs

    workplaces = canonical_ids(config, workplaces)
    if not lazy_jobs:
        jobs = read_jobs()
        return None if jobs is None else JobTables(workplaces, canonical_ids(config, jobs), domains)
    # the jobs per establishment and worker-attribute combination, in one streaming
    # group-by (what the engine needs; nothing per job is kept)
    counts = (
        joined.select(wid, *attr_codes)
        .group_by(wid, *kattrs)
        .agg(pl.len().cast(pl.UInt32).alias(JOBS))
        .join(
            workplaces.lazy().select(pl.col(WORKPLACE_ID).alias(wid)).with_row_index(ROW),
            on=wid,
            how="left",
        )
        .select(pl.col(ROW).cast(pl.UInt32), *kattrs, JOBS)
        .collect(engine="streaming")
    )
    if counts.get_column(ROW).null_count():  # a job at an unknown (or blank) workplace
        return None

    def jobs_when_asked() -> pl.DataFrame:
        jobs = read_jobs()
        if jobs is None:
            raise DataValidationError(
                "the job table changed while the release read it; run again",
                file=str(config.job),
                rule="input-changed",
            )
        return canonical_ids(config, jobs)

    return JobTables(workplaces, jobs_when_asked, domains, job_counts=counts)  # type: ignore[arg-type]


def _column_in_every_file(path: Path, column: str) -> bool | None:
    """Whether every Parquet file of ``path`` has ``column`` (``None``: only some have it)."""
    files = parquet_files(path)
    if files is None:
        return False
    try:
        present = {column in pl.read_parquet_schema(f) for f in files}
    except Exception:
        return False
    return None if len(present) > 1 else present.pop()


def _or_eager(scan: Callable[[], JobTables | None]) -> JobTables | None:
    """``scan()``, or ``None`` (the eager loader's turn) if Polars fails inside it."""
    try:
        return scan()
    except pl.exceptions.PolarsError:
        return None
    except BaseException as exc:  # a Rust panic is a BaseException, not an Exception
        if type(exc).__name__ == "PanicException":
            return None
        raise


def _streamed(frame: pl.LazyFrame) -> pl.DataFrame | None:
    """``frame`` collected by the streaming engine, or ``None`` if Polars fails.

    A value outside an Enum's categories, an unreadable Parquet page or a Rust panic
    (a ``BaseException``) all hand the input to the eager loader, which names the file,
    row and column.
    """
    try:
        return frame.collect(engine="streaming")
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        return None


def _scan_joined(config: JobTablesConfig, path: Path, lazy_jobs: bool) -> JobTables | None:
    """The fast path for one joined ``jobs`` table (docs/design.md#validation).

    1. One streaming group-by over the workplace id and attributes counts the jobs of
       each distinct (id, attributes) and notes its first row. Every workplace rule is
       proven on that small frame: ids and attributes filled, attributes in their
       domains, one set of attributes per id (as many distinct ids as rows). It is the
       workplace frame, in order of first occurrence (as the eager loader gives it), and,
       without worker attributes, already the jobs counted per establishment.
    2. A ``worker_id`` column, when the table has one, is proven filled and unique in a
       pass over that column alone.
    3. With worker attributes, one more streaming group-by counts the jobs per
       establishment row (the workplace id coded by its row in the workplace frame) and
       worker attributes (coded as Enums over their declared domains, which refuses a
       value outside them).
    """
    wid, kid = config.workplace_id, config.worker_id
    wattrs, kattrs = config.workplace_attributes, config.worker_attributes
    has_kid = _column_in_every_file(path, kid)
    if has_kid is None:
        return None
    jobs = _scan(path, [wid, *wattrs, *kattrs, *([kid] if has_kid else [])])
    if jobs is None:
        return None
    first = "__eree_first_row"
    groups = _streamed(
        jobs.with_row_index(first)
        .select(first, wid, *wattrs)
        .group_by(wid, *wattrs)
        .agg(pl.len().cast(pl.UInt32).alias(JOBS), pl.col(first).min())
    )
    if groups is None or groups.height == 0:
        return None
    groups = groups.sort(first)
    wp_cols = [wid, *wattrs]
    checks = groups.select(
        pl.col(wid).n_unique().alias("distinct"),
        *[e for i, c in enumerate(wp_cols) for e in _filled_stats(c, i)],
        *[
            _outside(a, config.domains[a]).alias(f"outside_{a}")
            for a in wattrs
            if a in config.domains
        ],
    ).row(0, named=True)
    if checks["distinct"] != groups.height:  # an id with two sets of attributes
        return None
    if any(v for k, v in checks.items() if k.startswith("outside_")):
        return None
    if not all(_filled(groups, c, i, checks) for i, c in enumerate(wp_cols)):
        return None
    if has_kid:
        # filled and unique: strictly increasing ids (the usual layout) need no hash set
        ids = jobs.select(kid)
        st = _streamed(
            ids.select(
                pl.len().alias("n"),
                *_filled_stats(kid, 0),
                (pl.col(kid) > pl.col(kid).shift(1)).fill_null(True).all().alias("increasing"),
            )
        )
        if st is None:
            return None
        stats = st.row(0, named=True)
        if not _filled(ids, kid, 0, stats) or not _unique(ids, kid, stats):
            return None
    domains = {a: tuple(config.domains[a]) for a in kattrs}
    for a in wattrs:
        if a in config.domains:
            domains[a] = tuple(config.domains[a])
    ids_in_order = groups.get_column(wid)
    workplaces = canonical_ids(config, groups.select(wp_cols))

    def coded() -> pl.LazyFrame:
        # each job's workplace id coded by its establishment's row, each worker attribute
        # by its index in the declared domain (a value outside it fails the cast)
        return jobs.select(
            pl.col(wid).cast(pl.Enum(ids_in_order)),
            *[pl.col(a).cast(pl.Enum(list(config.domains[a]))) for a in kattrs],
        )

    def read_jobs() -> pl.DataFrame | None:
        frame = _streamed(coded())
        if frame is None or any(frame.get_column(c).null_count() for c in frame.columns):
            return None
        return canonical_ids(config, frame)

    if not lazy_jobs:
        frame = read_jobs()
        return None if frame is None else JobTables(workplaces, frame, domains)
    if kattrs:
        counts = _streamed(
            coded()
            .group_by(wid, *kattrs)
            .agg(pl.len().cast(pl.UInt32).alias(JOBS))
            .select(pl.col(wid).to_physical().cast(pl.UInt32).alias(ROW), *kattrs, JOBS)
        )
        if counts is None or any(counts.get_column(c).null_count() for c in counts.columns):
            return None
    else:  # the jobs of each establishment, counted in the first pass
        counts = groups.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias(ROW), JOBS)

    def jobs_when_asked() -> pl.DataFrame:
        frame = read_jobs()
        if frame is None:
            raise DataValidationError(
                "the jobs table changed while the release read it; run again",
                file=str(path),
                rule="input-changed",
            )
        return frame

    return JobTables(workplaces, jobs_when_asked, domains, job_counts=counts)  # type: ignore[arg-type]
