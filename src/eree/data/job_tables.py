"""Loading and validating ER-EE (LODES-like) input: docs/design.md#er-ee-data, #validation.

Two input forms are accepted (:class:`~eree.data.config.JobTablesConfig`):

* three tables — ``workplace`` (``workplace_id`` + public attributes), ``worker``
  (``worker_id`` + private attributes) and ``job`` (``worker_id``, ``workplace_id``);
* one joined ``jobs`` table, one row per job, with ``workplace_id``, the workplace
  attributes and the worker attributes (the papers' WorkerFull relation). A
  ``worker_id`` column is optional there; when present it must be unique (each worker
  holds exactly one job).

Either way the result is an :class:`JobTables`: one row per establishment and one row per
job. The whole input is rejected, naming file, 1-based data row and column, when any
rule of docs/design.md#validation is violated; messages may name ids and columns but never a worker
attribute value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from eree.data.config import JobSelection, JobTablesConfig, check_job_selection
from eree.data.io import (
    check_domain,
    check_nonnegative_finite,
    check_not_missing,
    check_unique,
    first_true,
    read_table,
)
from eree.data.job_order import fresh_key, order_words
from eree.data.location import local_path
from eree.data.schema import OWNERSHIP, PRIVATE_OWNERSHIP, WORKPLACE_ID
from eree.errors import DataValidationError, SpecError

__all__ = ["JobSelection", "JobTables", "load_job_tables", "select_jobs"]

_MULTIPLE_JOBS = "worker holds more than one job (also in row {first_row})"
#: a worker's job at one workplace listed twice (a job is a worker–workplace pair)
_SAME_JOB_TWICE = "worker holds a job at the same workplace twice (also in row {first_row})"


#: :attr:`JobTables.job_counts`' column of establishment rows (0-based, in ``workplaces``)
ROW = "workplace_row"
#: :attr:`JobTables.job_counts`' column of job counts
JOBS = "n"


@dataclass(frozen=True)
class JobTables:
    """Validated ER-EE input.

    Attributes:
        workplaces: ``workplace_id`` (Utf8) + the configured workplace attributes (Utf8);
            one row per establishment, in input order.
        jobs: ``workplace_id`` + the configured worker attributes (categorical
            codes); one row per job, in input (job table) order. Utf8 here; the Polars
            engine's loader keeps them as ``pl.Enum`` (workplace ids in workplace-table
            order, attributes in declared-domain order), which reads as the same text.
            May be given as a function that reads the frame: it is then called on first
            use (a loader that gives ``job_counts`` reads the per-job frame only when
            asked).
        domains: declared domain of every worker attribute, and of the workplace
            attributes that have one.
        selection: what the job-selection rule dropped, when workers may hold several
            jobs (:class:`JobSelection`); ``None`` otherwise.
        job_counts: ``None``, or the jobs counted per establishment and combination of
            worker attributes: :data:`ROW` (the establishment's 0-based row in
            ``workplaces``, UInt32), each worker attribute that has a declared domain
            (``pl.Enum`` over it) and :data:`JOBS` (UInt32, at least 1): all a count
            query needs, from a loader that has them from its validation pass.
    """

    workplaces: pl.DataFrame
    jobs: pl.DataFrame
    domains: dict[str, tuple[str, ...]]
    job_counts: pl.DataFrame | None = None
    selection: JobSelection | None = None

    @property
    def worker_attributes(self) -> tuple[str, ...]:
        """The worker attributes the jobs carry (without reading the per-job frame)."""
        if self.job_counts is not None:
            return tuple(c for c in self.job_counts.columns if c not in (ROW, JOBS))
        return tuple(c for c in self.jobs.columns if c != "workplace_id")

    @property
    def n_jobs(self) -> int:
        """Number of jobs."""
        if self.job_counts is not None:
            return int(self.job_counts.get_column(JOBS).sum())
        return self.jobs.height

    @property
    def n_workplaces(self) -> int:
        """Number of workplaces (establishments)."""
        return self.workplaces.height


def _get_jobs(self: JobTables) -> pl.DataFrame:
    jobs = self.__dict__["_jobs"]
    if not isinstance(jobs, pl.DataFrame):  # read on first use
        jobs = self.__dict__["_jobs"] = jobs()
    return jobs


def _set_jobs(self: JobTables, jobs: pl.DataFrame | Callable[[], pl.DataFrame]) -> None:
    self.__dict__["_jobs"] = jobs


# ``jobs`` may be given as a function (see the class docstring): a property over the field
JobTables.jobs = property(_get_jobs, _set_jobs, doc="The per-job frame (read on first use).")  # type: ignore[assignment]


def load_job_tables(config: JobTablesConfig) -> JobTables:
    """Load and validate ER-EE input in either form (docs/design.md#er-ee-data, #validation).

    Checks, in this order: the spec is coherent; required columns are present and every
    value parses; ids are present and unique; every categorical value is in its declared
    domain (workplace attributes must be non-missing); every job points at a known
    workplace and a known worker; every worker holds exactly one job; in the joined
    form, each workplace's attributes are the same on all of its jobs.

    Args:
        config: the ``[data]`` part of a spec.

    Returns:
        The validated tables.

    Raises:
        SpecError: the configuration names no input, both forms, overlapping columns, or
            a worker attribute without a declared domain.
        DataValidationError: the data violate a rule of docs/design.md#validation.
    """
    check_config(config)
    domains = {a: tuple(config.domains[a]) for a in config.worker_attributes}
    for a in config.workplace_attributes:
        if a in config.domains:
            domains[a] = tuple(config.domains[a])
    loaded: pl.DataFrame | tuple[pl.DataFrame, JobSelection]
    if config.jobs is not None:
        workplaces, loaded = _load_joined(config, local_path(config.jobs, "[data].jobs"))
    else:
        wp, wk, jb = config.workplace, config.worker, config.job
        if wp is None or wk is None or jb is None:  # pragma: no cover - check_config
            raise SpecError("[data] needs workplace, worker and job tables")
        workplaces, loaded = _load_three(
            config,
            local_path(wp, "[data].workplace"),
            local_path(wk, "[data].worker"),
            local_path(jb, "[data].job"),
        )
    jobs, selection = loaded if isinstance(loaded, tuple) else (loaded, None)
    workplaces, jobs = canonical_ids(config, workplaces), canonical_ids(config, jobs)
    return JobTables(workplaces=workplaces, jobs=jobs, domains=domains, selection=selection)


def select_jobs(jobs: pl.DataFrame, config: JobTablesConfig) -> tuple[pl.DataFrame, JobSelection]:
    """The jobs a release counts: of the job type, at most k per worker, by the keyed rule.

    docs/privacy.md#several-jobs-per-worker. ``jobs`` holds one row per job with the
    worker id, the workplace id, and (JT02, JT03) the workplace's ``ownership`` and
    (JT01, JT03) the job's earnings. Each worker's jobs are ordered by
    :data:`~eree.data.schema.JOB_ORDER` (earnings descending for primary jobs, then the
    keyed order of :mod:`eree.data.job_order` under ``config.order_key``) and the first k
    kept (k = 1 for primary jobs). JT02 keeps private jobs (ownership
    :data:`~eree.data.schema.PRIVATE_OWNERSHIP`) and bounds those; JT03 takes each
    worker's primary job among all of its jobs and keeps it when it is private (LODES:
    the private jobs classified as primary). The rule reads only the worker's own jobs and
    a key independent of the data: adding or removing a worker changes no other worker's
    kept jobs, which is what the guarantee's proof needs. Row order is kept.

    Returns:
        The kept rows (same columns) and the counts of what was dropped.
    """
    kid, wid = config.worker_id, config.workplace_id
    key = config.order_key if config.order_key is not None else fresh_key()
    n_in = jobs.height
    if config.private_only and not config.primary_only:  # JT02: bound the private jobs
        jobs = jobs.filter(pl.col(OWNERSHIP) == PRIVATE_OWNERSHIP)
    not_of_type = n_in - jobs.height
    k = config.jobs_per_worker
    row, rank, word, many = "__eree_row", "__eree_rank", "__eree_word", "__eree_many"
    framed = jobs.with_row_index(row).with_columns((pl.len().over(kid) > k).alias(many))
    alone = framed.filter(~pl.col(many))  # k jobs or fewer: all kept, no order needed
    crowd = framed.filter(pl.col(many))
    crowd = crowd.with_columns(
        pl.Series(word, order_words(key, crowd.get_column(kid), crowd.get_column(wid)),
                  dtype=pl.Utf8)
    )  # fmt: skip
    keys, descending = [kid, word], [False, False]
    if config.primary_only:
        assert config.job_earnings is not None  # check_config
        keys, descending = [kid, config.job_earnings, word], [False, True, False]
    ranked = crowd.sort(keys, descending=descending).with_columns(
        pl.int_range(pl.len(), dtype=pl.UInt32).over(kid).alias(rank)
    )
    over = ranked.filter(pl.col(rank) == k).height
    kept = pl.concat(
        [alone.drop(many), ranked.filter(pl.col(rank) < k).drop(many, word, rank)]
    ).sort(row)
    dropped = jobs.height - kept.height
    if config.private_only and config.primary_only:  # JT03: the primary job, if private
        primary = kept.height
        kept = kept.filter(pl.col(OWNERSHIP) == PRIVATE_OWNERSHIP)
        not_of_type = primary - kept.height
    return kept.drop(row), JobSelection(
        k=k,
        job_type=config.job_type,
        workers_over=over,
        jobs_dropped=dropped,
        jobs_not_of_type=not_of_type,
    )


def canonical_ids(config: JobTablesConfig, frame: pl.DataFrame) -> pl.DataFrame:
    """The frame with the spec's workplace id column named :data:`WORKPLACE_ID`.

    The loaded tables always call the workplace id ``workplace_id`` (the engines' name);
    ``[data] workplace_id`` names it in the input files only.
    """
    wid = config.workplace_id
    if wid == WORKPLACE_ID or wid not in frame.columns:
        return frame
    return frame.rename({wid: WORKPLACE_ID})


def check_config(config: JobTablesConfig) -> None:
    three = (config.workplace, config.worker, config.job)
    if config.jobs is not None:
        if any(p is not None for p in three):
            raise SpecError(
                "[data] gives both 'jobs' (one joined table) and workplace/worker/job "
                "tables; give one form only"
            )
    elif any(p is None for p in three):
        missing = [
            n for n, p in zip(("workplace", "worker", "job"), three, strict=True) if p is None
        ]
        raise SpecError(
            f"[data] needs either 'jobs' or all of workplace, worker, job "
            f"(missing: {', '.join(missing)})"
        )
    if config.workplace_id == config.worker_id:
        raise SpecError("workplace_id and worker_id must be different columns")
    attrs = (*config.workplace_attributes, *config.worker_attributes)
    if config.workplace_id != WORKPLACE_ID and WORKPLACE_ID in attrs:
        raise SpecError(
            f"attribute {WORKPLACE_ID!r} cannot be used while [data] workplace_id = "
            f"{config.workplace_id!r}: eree calls the workplace id {WORKPLACE_ID!r} once "
            "loaded; rename the attribute"
        )
    ids = {config.workplace_id, config.worker_id}
    seen: set[str] = set()
    for a in (*config.workplace_attributes, *config.worker_attributes):
        if a in ids:
            raise SpecError(f"attribute {a!r} is also an id column")
        if a in seen:
            raise SpecError(f"attribute {a!r} is listed twice (workplace and/or worker)")
        seen.add(a)
    for a in config.worker_attributes:
        if a not in config.domains or len(config.domains[a]) == 0:
            raise SpecError(f"worker attribute {a!r} has no declared domain")
    check_job_selection(config)


def _check_workplace_attributes(df: pl.DataFrame, config: JobTablesConfig, file: Path) -> None:
    check_not_missing(df, config.workplace_attributes, file)
    for a in config.workplace_attributes:
        if a in config.domains:
            check_domain(df, a, config.domains[a], file)


def _load_three(
    config: JobTablesConfig, wp_path: Path, wk_path: Path, jb_path: Path
) -> tuple[pl.DataFrame, pl.DataFrame | tuple[pl.DataFrame, JobSelection]]:
    wid, kid = config.workplace_id, config.worker_id
    wp = read_table(wp_path, {wid: pl.Utf8, **dict.fromkeys(config.workplace_attributes, pl.Utf8)})
    wk = read_table(wk_path, {kid: pl.Utf8, **dict.fromkeys(config.worker_attributes, pl.Utf8)})
    earn = config.job_earnings
    jb = read_table(jb_path, {kid: pl.Utf8, wid: pl.Utf8, **({earn: pl.Float64} if earn else {})})

    # ids present and unique
    check_not_missing(wp, [wid], wp_path, rule="missing-id")
    check_unique(wp, wid, wp_path)
    check_not_missing(wk, [kid], wk_path, rule="missing-id")
    check_unique(wk, kid, wk_path)
    check_not_missing(jb, [kid, wid], jb_path, rule="missing-id")

    # attribute values
    _check_workplace_attributes(wp, config, wp_path)
    for a in config.worker_attributes:
        check_domain(wk, a, config.domains[a], wk_path)

    # referential integrity
    unknown = first_true(~jb.get_column(wid).is_in(wp.get_column(wid).implode()))
    if unknown is not None:
        raise DataValidationError(
            "job points at a workplace id not in the workplace table",
            file=str(jb_path),
            row=unknown + 1,
            column=wid,
            rule="unknown-workplace",
        )
    if config.selects_jobs:
        return wp, _select_three(config, wp, wk, jb, wk_path, jb_path)
    check_unique(jb, kid, jb_path, rule="multiple-jobs", message=_MULTIPLE_JOBS)
    worker_row = _match_workers(jb.get_column(kid), wk.get_column(kid))
    unknown = first_true(worker_row.is_null())
    if unknown is not None:
        raise DataValidationError(
            "job points at a worker id not in the worker table",
            file=str(jb_path),
            row=unknown + 1,
            column=kid,
            rule="unknown-worker",
        )
    # job worker ids are unique and all known: every worker holds a job iff the counts match
    if jb.height != wk.height:
        r = first_true(~wk.get_column(kid).is_in(jb.get_column(kid).implode()))
        raise DataValidationError(
            "worker holds no job (each worker must hold exactly one)",
            file=str(wk_path),
            row=(r or 0) + 1,
            column=kid,
            rule="no-job",
        )
    attrs = wk.select(config.worker_attributes)
    if not _is_identity(worker_row):
        attrs = attrs[worker_row]
    jobs = pl.concat([jb.select(wid), attrs], how="horizontal")
    return wp, jobs


def _select_three(
    config: JobTablesConfig,
    wp: pl.DataFrame,
    wk: pl.DataFrame,
    jb: pl.DataFrame,
    wk_path: Path,
    jb_path: Path,
) -> tuple[pl.DataFrame, JobSelection]:
    """Jobs of workers who may hold several: checked, selected, joined to their workers.

    Refused: a job pointing at an unknown worker, a worker holding no job, one worker's
    job at one workplace listed twice (a job is a worker–workplace pair), an earnings
    value missing, negative or not finite.
    """
    wid, kid = config.workplace_id, config.worker_id
    rows = jb.select(kid, wid).with_row_index("__eree_r")
    second = rows.filter(~pl.struct(kid, wid).is_first_distinct()).head(1)
    if second.height:
        r, k, w = second.row(0)
        first = rows.filter((pl.col(kid) == k) & (pl.col(wid) == w)).get_column("__eree_r")[0]
        raise DataValidationError(
            _SAME_JOB_TWICE.format(first_row=int(first) + 1),
            file=str(jb_path),
            row=int(r) + 1,
            column=wid,
            rule="same-job-twice",
        )
    known = jb.get_column(kid).is_in(wk.get_column(kid).implode())
    unknown = first_true(~known)
    if unknown is not None:
        raise DataValidationError(
            "job points at a worker id not in the worker table",
            file=str(jb_path),
            row=unknown + 1,
            column=kid,
            rule="unknown-worker",
        )
    nojob = first_true(~wk.get_column(kid).is_in(jb.get_column(kid).implode()))
    if nojob is not None:
        raise DataValidationError(
            "worker holds no job (each worker must hold at least one)",
            file=str(wk_path),
            row=nojob + 1,
            column=kid,
            rule="no-job",
        )
    if config.job_earnings is not None:
        check_not_missing(jb, [config.job_earnings], jb_path)
        check_nonnegative_finite(jb, [config.job_earnings], jb_path)
    frame = jb
    if config.private_only:
        frame = frame.join(wp.select(wid, OWNERSHIP), on=wid, how="left", maintain_order="left")
    kept, selection = select_jobs(frame, config)
    jobs = kept.select(kid, wid).join(
        wk.select(kid, *config.worker_attributes), on=kid, how="left", maintain_order="left"
    )
    return jobs.select(wid, *config.worker_attributes), selection


def _is_identity(idx: pl.Series) -> bool:
    return bool((idx == pl.int_range(idx.len(), eager=True, dtype=pl.UInt32)).all())


def _match_workers(job_ids: pl.Series, worker_ids: pl.Series) -> pl.Series:
    """For each job, the 0-based row of its worker in the worker table (null if unknown).

    ``worker_ids`` must be unique and non-null. Fast paths: identical order (the common
    case of generated data), then a join on 64-bit hashes verified by comparing the
    ids themselves (exact, since worker hashes are checked to be distinct); otherwise a
    plain join on the ids.
    """
    n = job_ids.len()
    if n == worker_ids.len() and bool((job_ids == worker_ids).all()):
        return pl.int_range(n, eager=True, dtype=pl.UInt32)
    wh = worker_ids.hash()
    if wh.n_unique() == worker_ids.len():
        right = pl.DataFrame(
            {"__h": wh, "__row": pl.int_range(wh.len(), eager=True, dtype=pl.UInt32)}
        )
        left = pl.DataFrame({"__h": job_ids.hash()})
        row = left.join(right, on="__h", how="left", maintain_order="left").get_column("__row")
        same = worker_ids.gather(row.fill_null(0)) == job_ids
        return row.set(~same.fill_null(False), None)
    right = pl.DataFrame(
        {"__k": worker_ids, "__row": pl.int_range(worker_ids.len(), eager=True, dtype=pl.UInt32)}
    )
    left = pl.DataFrame({"__k": job_ids})
    return left.join(right, on="__k", how="left", maintain_order="left").get_column("__row")


def _load_joined(config: JobTablesConfig, path: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    wid, kid = config.workplace_id, config.worker_id
    wattrs, kattrs = config.workplace_attributes, config.worker_attributes
    df = read_table(
        path,
        {wid: pl.Utf8, **dict.fromkeys(wattrs, pl.Utf8), **dict.fromkeys(kattrs, pl.Utf8)},
        optional={kid: pl.Utf8},
    )
    check_not_missing(df, [wid], path, rule="missing-id")
    if kid in df.columns:
        check_not_missing(df, [kid], path, rule="missing-id")
        check_unique(df, kid, path, rule="multiple-jobs", message=_MULTIPLE_JOBS)
    _check_workplace_attributes(df, config, path)
    for a in kattrs:
        check_domain(df, a, config.domains[a], path)

    workplaces = df.select(wid, *wattrs).unique(subset=[wid], keep="first", maintain_order=True)
    if wattrs:
        # fast path: as many distinct (id, attributes) hashes as ids means consistent;
        # otherwise (or on a hash collision) the exact check below decides.
        n_distinct = df.select(pl.struct(wid, *wattrs).hash().n_unique()).item()
        if n_distinct != workplaces.height:
            _raise_inconsistent(df, wid, wattrs, path)
    return workplaces, df.select(wid, *kattrs)


def _raise_inconsistent(df: pl.DataFrame, wid: str, wattrs: tuple[str, ...], path: Path) -> None:
    """Name the first row whose workplace attributes differ from its workplace's first row."""
    masks = df.with_row_index("__row").select(
        pl.col("__row").first().over(wid).alias("__first"),
        *[(pl.col(a) != pl.col(a).first().over(wid)).alias(a) for a in wattrs],
    )
    best: tuple[int, str] | None = None
    for a in wattrs:
        i = first_true(masks.get_column(a))
        if i is not None and (best is None or i < best[0]):
            best = (i, a)
    if best is None:  # a hash collision, not an inconsistency
        return
    i, a = best
    first = int(masks.get_column("__first")[i])
    raise DataValidationError(
        f"workplace has a different {a!r} than on its first row {first + 1} (workplace "
        "attributes must be the same on all its jobs)",
        file=str(path),
        row=i + 1,
        column=a,
        rule="inconsistent-workplace",
    )
