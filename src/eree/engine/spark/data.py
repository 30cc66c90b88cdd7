"""ER-EE input as Spark DataFrames: the Spark-side twin of :class:`~eree.data.job_tables.JobTables`.

:class:`SparkJobTables` holds the two tables (``workplaces``, ``jobs``) as Spark
DataFrames: read by Spark itself (:meth:`SparkJobTables.from_parquet`,
:meth:`SparkJobTables.from_config`, which validate them in Spark,
:mod:`eree.engine.spark.validate`), handed over from Polars
(:meth:`SparkJobTables.from_job_tables`), or wrapped around DataFrames the caller already has.
PySpark is imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from eree.data.config import JobSelection, JobTablesConfig
from eree.data.job_tables import JobTables
from eree.data.location import data_path
from eree.data.schema import WORKER_DOMAINS, WORKER_ID, WORKPLACE_ID
from eree.engine.spark.coding import CodedData
from eree.engine.spark.fingerprint import WORD_PREFIX, text_word
from eree.engine.spark.io import polars_to_spark, read_text_columns
from eree.engine.spark.validate import (
    validate_and_code_three,
    validate_and_select_three,
    validate_joined,
)
from eree.errors import SpecError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame as SparkDataFrame
    from pyspark.sql import SparkSession

__all__ = ["SparkJobTables"]


@dataclass(frozen=True)
class SparkJobTables:
    """ER-EE input as Spark DataFrames: the Spark-side twin of :class:`JobTables`.

    Attributes:
        workplaces: ``workplace_id`` + workplace attributes (strings); one row per
            establishment.
        jobs: ``workplace_id`` + worker attributes (strings); one row per job.
        domains: declared domain of every worker attribute and of the workplace
            attributes that have one.
        hashed: ``jobs`` plus, per row, the fingerprint word of its workplace id
            (column ``WORD_PREFIX + "workplace_id"``), hashed once per workplace by
            :meth:`from_config`, or ``None``; the Spark fingerprint reads it instead of
            hashing the id of every job.
        coded: the dataset already coded for queries (see :meth:`SparkEngine.prepare`)
            and held in Spark's cache, or ``None``. :meth:`from_config` produces it for
            the three-table form in the same Spark passes that validate the data.
        selection: what the job-selection rule dropped when workers may hold several
            jobs (:class:`~eree.data.job_tables.JobSelection`), else ``None``.

    Build one with :meth:`from_parquet`, :meth:`from_config` (Spark reads and validates
    the files) or :meth:`from_job_tables` (an in-memory :class:`JobTables`), or directly from
    DataFrames you already hold; in that case the tables are used as they are (the
    engine still refuses unknown workplaces and out-of-domain values).
    """

    workplaces: SparkDataFrame
    jobs: SparkDataFrame
    domains: dict[str, tuple[str, ...]]
    hashed: SparkDataFrame | None = None
    coded: CodedData | None = None
    selection: JobSelection | None = None

    def unpersist(self) -> None:
        """Drop the cached coding (later queries recompute it from the files)."""
        if self.coded is not None:
            self.coded.unpersist()

    @property
    def n_jobs(self) -> int:
        """Number of jobs (a Spark count)."""
        return int(self.jobs.count())

    @property
    def n_workplaces(self) -> int:
        """Number of establishments (a Spark count)."""
        return int(self.workplaces.count())

    @classmethod
    def from_job_tables(cls, spark: SparkSession, data: JobTables) -> SparkJobTables:
        """Hand an in-memory :class:`JobTables` to Spark (through Arrow)."""
        jobs = data.jobs.with_columns(  # Enum-coded columns (fast Polars loader) as text
            [pl.col(c).cast(pl.Utf8) for c, t in data.jobs.schema.items() if t != pl.Utf8]
        )
        return cls(
            workplaces=polars_to_spark(spark, data.workplaces),
            jobs=polars_to_spark(spark, jobs),
            domains=dict(data.domains),
            selection=data.selection,
        )

    @classmethod
    def from_parquet(
        cls,
        spark: SparkSession,
        workplace_path: str | Path,
        worker_path: str | Path,
        job_path: str | Path,
        *,
        domains: Mapping[str, Sequence[str]] | None = None,
        workplace_attributes: Sequence[str] | None = None,
        worker_attributes: Sequence[str] | None = None,
        workplace_id: str = WORKPLACE_ID,
        worker_id: str = WORKER_ID,
        validate: bool = True,
    ) -> SparkJobTables:
        """Read the three tables (``workplace``, ``worker``, ``job``) with Spark.

        Paths (local, or URIs read by Spark: docs/spark-cluster.md#inputs-by-uri) may be
        Parquet files or directories of Parquet files (Spark's usual layout), e.g. the
        output of :meth:`eree.synth.lodes.SynthLodes.write`.

        Args:
            workplace_path, worker_path, job_path: the tables.
            domains: declared domains (default
                :data:`eree.data.schema.WORKER_DOMAINS`); every worker attribute needs
                one, workplace attributes may have one.
            workplace_attributes: default: every column of the workplace table but its
                id.
            worker_attributes: default: the columns of the worker table that have a
                declared domain.
            workplace_id, worker_id: id columns.
            validate: run the checks of docs/design.md#validation (a few Spark passes over the
                data; see :meth:`from_config`).

        Returns:
            The Spark-side dataset (lazy: nothing but the validation has run yet).
        """
        doms = {a: tuple(v) for a, v in (domains or WORKER_DOMAINS).items()}
        if workplace_attributes is None:
            cols = spark.read.parquet(str(workplace_path)).columns
            workplace_attributes = [c for c in cols if c != workplace_id]
        if worker_attributes is None:
            cols = spark.read.parquet(str(worker_path)).columns
            worker_attributes = [c for c in cols if c != worker_id and c in doms]
        config = JobTablesConfig(
            workplace=data_path(workplace_path),
            worker=data_path(worker_path),
            job=data_path(job_path),
            workplace_id=workplace_id,
            worker_id=worker_id,
            workplace_attributes=tuple(workplace_attributes),
            worker_attributes=tuple(worker_attributes),
            domains=doms,
        )
        return cls.from_config(spark, config, validate=validate, format="parquet")

    @classmethod
    def from_config(
        cls,
        spark: SparkSession,
        config: JobTablesConfig,
        *,
        validate: bool = True,
        format: str | None = None,
    ) -> SparkJobTables:
        """Read the ``[data]`` input of a spec with Spark, in either form.

        See docs/design.md#er-ee-data.

        Files are Parquet (file or directory) or CSV/CSV.gz (read as text; ragged rows
        are detected), by suffix unless ``format`` (``"parquet"`` or ``"csv"``) says.
        Integer columns are read as text, like :func:`~eree.data.job_tables.load_job_tables`.

        With ``validate`` (default), docs/design.md#validation is checked with Spark aggregations,
        in the order of :func:`~eree.data.job_tables.load_job_tables`: required columns
        present and parseable, ids present and unique, workplace attributes present
        (and in their domain when declared), worker attributes in their domain, every
        job pointing at a known workplace and a known worker, every worker holding
        exactly one job, and (joined form) each workplace's attributes the same on all
        its jobs. Errors are :class:`~eree.errors.DataValidationError` naming file,
        column, rule and, where allowed, an offending id; unlike the Polars loader they
        give no row number (Spark has no row order) and never a worker attribute value.

        Returns:
            The Spark-side dataset.
        """
        from pyspark.sql import functions as sf

        _check_config(config)
        doms = {a: tuple(config.domains[a]) for a in config.worker_attributes}
        for a in config.workplace_attributes:
            if a in config.domains:
                doms[a] = tuple(config.domains[a])
        wid, kid = config.workplace_id, config.worker_id
        wattrs, kattrs = list(config.workplace_attributes), list(config.worker_attributes)
        hashed = None
        coded: CodedData | None = None
        selection: JobSelection | None = None
        if config.jobs is not None:
            df = read_text_columns(
                spark, config.jobs, [wid, *wattrs, *kattrs], [kid], format, "[data].jobs"
            )
            if validate:
                validate_joined(df, config, doms)
            workplaces = df.select(wid, *wattrs).dropDuplicates([wid])
            jobs = df.select(wid, *kattrs)
        else:
            assert config.workplace and config.worker and config.job  # _check_config
            wp = read_text_columns(
                spark, config.workplace, [wid, *wattrs], [], format, "[data].workplace"
            )
            wk = read_text_columns(
                spark, config.worker, [kid, *kattrs], [], format, "[data].worker"
            )
            earn = [config.job_earnings] if config.job_earnings else []
            jb = read_text_columns(
                spark, config.job, [kid, wid, *earn], [], format, "[data].job", numbers=earn
            )
            workplaces = wp.select(wid, *wattrs)
            # left join: a job with an unknown worker is kept (and refused), never dropped;
            # lazy: only establishment_cells and a ledger's fingerprint read it
            jobs = jb.select(kid, wid).join(wk.select(kid, *kattrs), on=kid, how="left")
            jobs = jobs.select(wid, *kattrs)
            if config.selects_jobs:  # workers with several jobs: checked, then selected
                jobs, selection = validate_and_select_three(wp, wk, jb, config, doms)
            elif validate:  # validated and coded for queries in the same Spark passes
                coded = validate_and_code_three(wp, wk, jb, config, doms)
                # the fingerprint's input: each workplace id hashed once, per workplace
                hashed = (
                    jb.select(kid, wid)
                    .join(wp.select(wid, text_word(wid).alias(WORD_PREFIX + wid)), on=wid,
                          how="left")
                    .join(wk.select(kid, *kattrs), on=kid, how="left")
                    .select(
                        sf.col(wid).alias(WORKPLACE_ID),
                        *kattrs,
                        sf.col(f"`{WORD_PREFIX}{wid}`").alias(WORD_PREFIX + WORKPLACE_ID),
                    )
                )  # fmt: skip
        if wid != WORKPLACE_ID:
            workplaces = workplaces.withColumnRenamed(wid, WORKPLACE_ID)
            jobs = jobs.withColumnRenamed(wid, WORKPLACE_ID)
        return cls(
            workplaces=workplaces, jobs=jobs, domains=doms, hashed=hashed, coded=coded,
            selection=selection,
        )  # fmt: skip


def _check_config(config: JobTablesConfig) -> None:
    from eree.data.config import check_job_selection

    check_job_selection(config)
    three = (config.workplace, config.worker, config.job)
    if config.jobs is not None and any(p is not None for p in three):
        raise SpecError("[data] gives both 'jobs' and workplace/worker/job tables")
    if config.jobs is None and any(p is None for p in three):
        raise SpecError("[data] needs either 'jobs' or all of workplace, worker, job")
    for a in config.worker_attributes:
        if a not in config.domains or len(config.domains[a]) == 0:
            raise SpecError(f"worker attribute {a!r} has no declared domain")
