"""The Spark engine: the engine contract (:mod:`eree.engine.base`) on PySpark.

For data that outgrow one machine (DESIGN.md §1). It gives **identical** cell statistics
to :class:`~eree.engine.polars.engine.PolarsEngine`: same columns, dtypes, row order and
values.

Data
    :class:`SparkEngine` accepts two kinds of dataset:

    * an :class:`~eree.data.eree_tables.EreeData` (Polars frames, already validated by
      :func:`~eree.data.eree_tables.load_eree`): it is handed to Spark once through Arrow
      and the Spark copy is reused while the same object is queried again;
    * a :class:`SparkEreeData`: the same two tables (``workplaces``, ``jobs``) as Spark
      DataFrames, read by Spark itself (:meth:`SparkEreeData.from_parquet`,
      :meth:`SparkEreeData.from_config`) or wrapped around DataFrames the caller already
      has. The microdata then never pass through Polars or the Python driver; the loaders
      run the rules of DESIGN.md §2.3 as Spark aggregations (see
      :meth:`SparkEreeData.from_config`).

Where the work happens
    Spark does everything proportional to the microdata. Once per dataset it codes the
    data: per establishment (keyed by its workplace id) and combination of worker
    attribute indexes (each value's index in its declared domain), the number of jobs,
    with the establishment's attributes and size (its jobs, for truncation) beside it;
    and the workplaces with their sizes. Both are hash-partitioned by establishment and
    cached (memory, spilling to disk). Reading the three-table form with
    :meth:`SparkEreeData.from_config` codes the data in the same Spark passes that check
    DESIGN.md §2.3 (see :func:`_validate_and_code_three`: a worker-id join and one
    workplace-partitioned count, or no join at all when no worker attribute is needed
    and the ids are proven to match by their order); other datasets are coded on the
    first query (:meth:`SparkEngine.prepare`). Each query then sums the coded counts per
    (establishment, cell) partition by partition, without a shuffle, and one shuffled
    group-by gives the per-cell ``sum`` (count), ``max`` (x_v) and truncated sum. One
    Spark job per query collects two small results: the non-empty cells and the number
    of establishments per workplace combination (both at most the size of the output).

    The full cell frame (the public workplace combinations × the full declared worker
    domain, DESIGN.md §4) is assembled on the driver in Polars/NumPy from those two
    collected frames, exactly as the Polars engine does it. The output has to be on the
    driver anyway and is no larger than what was collected plus its zero cells, so a Spark
    cross join would only add a shuffle and a larger collect; assembling it here also
    guarantees the Polars engine's row order (workplace keys sorted by Polars, worker
    attributes in declared-domain order) and dtypes by construction.

Validation done by the engine itself (any dataset): a job pointing at an unknown
workplace, a worker attribute outside its declared domain, a missing workplace
attribute value and, with ``complete=True``, a workplace value outside its declared
domain raise :class:`~eree.errors.SpecError`; no row is ever dropped silently.

PySpark is imported lazily (inside functions), so :mod:`eree` works without it; install
the ``spark`` extra to use this module.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from eree.data.config import EreeDataConfig, EstablishmentDataConfig
from eree.data.eree_tables import EreeData
from eree.data.establishments import EstablishmentData
from eree.data.schema import WORKER_DOMAINS, WORKER_ID, WORKPLACE_ID
from eree.engine.polars.engine import _domain_frame, cell_keys
from eree.engine.spark.io import (
    WORD_PREFIX,
    _Check,
    _missing,
    _outside,
    _polars_to_spark,
    _read,
    _run_checks,
    _to_polars,
    text_word,
)
from eree.errors import DataValidationError, SpecError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, SparkSession
    from pyspark.sql import DataFrame as SparkDataFrame

    from eree.engine.spark.establishments import SparkEstablishmentData

__all__ = ["SparkEngine", "SparkEreeData", "spark_session"]

# internal column names (prefixed so they cannot collide with attribute names)
_D = "__eree_d"
_N = "__eree_n"
_SIZE = "__eree_size"
_FLAG = "__eree_flag"
_F = "__eree_f"
_W = "__eree_w"
_UNKNOWN_WORKPLACE = 1  # bit of _FLAG; bit i+1 marks worker attribute i outside its domain


# --------------------------------------------------------------------------------------
# session
# --------------------------------------------------------------------------------------


def spark_session(
    app: str = "eree",
    cores: int = 2,
    *,
    driver_memory: str = "2g",
    shuffle_partitions: int | None = None,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """A local SparkSession with settings for a small machine.

    ``local[cores]`` master, Spark UI and console progress bars off, driver bound to
    127.0.0.1, ``spark.sql.shuffle.partitions = 2·cores`` (Spark's default of 200 is
    meant for clusters; adaptive query execution stays on and coalesces further),
    Arrow transfers on, UTC session time zone, log level ERROR.

    If a session already exists in this process, Spark returns it (``getOrCreate``) and
    settings fixed at JVM start (master, driver memory) keep their old values.

    Args:
        app: application name.
        cores: local worker threads.
        driver_memory: JVM heap of the driver (which, in local mode, runs the tasks too).
        shuffle_partitions: overrides ``2·cores``.
        conf: further Spark settings, applied last.

    Returns:
        The session.
    """
    from pyspark.sql import SparkSession

    if cores < 1:
        raise ValueError("cores must be at least 1")
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": driver_memory,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.shuffle.partitions": str(shuffle_partitions or 2 * cores),
        "spark.default.parallelism": str(2 * cores),
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        **(conf or {}),
    }
    builder = SparkSession.builder.master(f"local[{cores}]").appName(app)
    for k, v in settings.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    # Spark's own logs of a failed task quote the offending input value (e.g. a wage
    # that does not parse): eree turns every such failure into its own one-line error
    # (:func:`spark_input_error`), so the JVM's and PySpark's error logs stay silent
    spark.sparkContext.setLogLevel("OFF")
    import logging

    logging.getLogger("DataFrameQueryContextLogger").disabled = True
    return spark


def _is_spark_failure(e: BaseException) -> bool:
    """An exception raised by Spark itself (PySpark or the JVM through py4j)."""
    return type(e).__module__.split(".")[0] in ("pyspark", "py4j")


def spark_input_error(
    e: BaseException, exact_check: Callable[[], object], paths: Sequence[Path]
) -> Exception:
    """The error to raise when Spark fails, or finds a fault, reading and checking input.

    Spark's messages quote the offending value (confidential), so they are never shown.
    The Polars loader checks the same input and names file, row and column without the
    value, so an input fault reads the same on both engines: its error is the one raised
    (only on this failure path; for partitioned directories, which it does not read, the
    Spark check's own error stays). If it finds nothing, a generic line says so.
    """
    from eree.errors import EreeError

    files = ", ".join(str(p) for p in paths)
    if any(Path(p).is_dir() for p in paths):  # partitioned input: the Spark check's own
        if isinstance(e, DataValidationError):
            return e
    else:
        try:
            exact_check()
        except EreeError as exact:
            return exact
        if isinstance(e, DataValidationError):
            return e
    return DataValidationError(
        f"the Spark engine could not read or check the input ({type(e).__name__}); eree's "
        "Polars loader accepts it: release with --engine polars, or report this",
        file=files,
        rule="spark-read",
    )


# --------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SparkEreeData:
    """ER-EE input as Spark DataFrames: the Spark-side twin of :class:`EreeData`.

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

    Build one with :meth:`from_parquet`, :meth:`from_config` (Spark reads and validates
    the files) or :meth:`from_eree` (an in-memory :class:`EreeData`), or directly from
    DataFrames you already hold; in that case the tables are used as they are (the
    engine still refuses unknown workplaces and out-of-domain values).
    """

    workplaces: SparkDataFrame
    jobs: SparkDataFrame
    domains: dict[str, tuple[str, ...]]
    hashed: SparkDataFrame | None = None
    coded: _Prepared | None = None

    def unpersist(self) -> None:
        """Drop the cached coding (later queries recompute it from the files)."""
        if self.coded is not None:
            self.coded.release()

    @property
    def n_jobs(self) -> int:
        """Number of jobs (a Spark count)."""
        return int(self.jobs.count())

    @property
    def n_workplaces(self) -> int:
        """Number of establishments (a Spark count)."""
        return int(self.workplaces.count())

    @classmethod
    def from_eree(cls, spark: SparkSession, data: EreeData) -> SparkEreeData:
        """Hand an in-memory :class:`EreeData` to Spark (through Arrow)."""
        jobs = data.jobs.with_columns(  # Enum-coded columns (fast Polars loader) as text
            [pl.col(c).cast(pl.Utf8) for c, t in data.jobs.schema.items() if t != pl.Utf8]
        )
        return cls(
            workplaces=_polars_to_spark(spark, data.workplaces),
            jobs=_polars_to_spark(spark, jobs),
            domains=dict(data.domains),
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
    ) -> SparkEreeData:
        """Read the three tables (``workplace``, ``worker``, ``job``) with Spark.

        Paths may be Parquet files or directories of Parquet files (Spark's usual
        layout), e.g. the output of :meth:`eree.synth.lodes.SynthLodes.write`.

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
            validate: run the checks of DESIGN.md §2.3 (a few Spark passes over the
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
        config = EreeDataConfig(
            workplace=Path(workplace_path),
            worker=Path(worker_path),
            job=Path(job_path),
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
        config: EreeDataConfig,
        *,
        validate: bool = True,
        format: str | None = None,
    ) -> SparkEreeData:
        """Read the ``[data]`` input of a spec with Spark, in either form (DESIGN.md §2.1).

        Files are Parquet (file or directory) or CSV/CSV.gz (read as text; ragged rows
        are detected), by suffix unless ``format`` (``"parquet"`` or ``"csv"``) says.
        Integer columns are read as text, like :func:`~eree.data.eree_tables.load_eree`.

        With ``validate`` (default), DESIGN.md §2.3 is checked with Spark aggregations,
        in the order of :func:`~eree.data.eree_tables.load_eree`: required columns
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
        coded: _Prepared | None = None
        if config.jobs is not None:
            df = _read(spark, config.jobs, [wid, *wattrs, *kattrs], [kid], format)
            if validate:
                _validate_joined(df, config, doms)
            workplaces = df.select(wid, *wattrs).dropDuplicates([wid])
            jobs = df.select(wid, *kattrs)
        else:
            assert config.workplace and config.worker and config.job  # _check_config
            wp = _read(spark, config.workplace, [wid, *wattrs], [], format)
            wk = _read(spark, config.worker, [kid, *kattrs], [], format)
            jb = _read(spark, config.job, [kid, wid], [], format)
            workplaces = wp.select(wid, *wattrs)
            # left join: a job with an unknown worker is kept (and refused), never dropped;
            # lazy: only establishment_cells and a ledger's fingerprint read it
            jobs = jb.select(kid, wid).join(wk.select(kid, *kattrs), on=kid, how="left")
            jobs = jobs.select(wid, *kattrs)
            if validate:  # validated and coded for queries in the same Spark passes
                coded = _validate_and_code_three(wp, wk, jb, config, doms)
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
        )  # fmt: skip


def _check_config(config: EreeDataConfig) -> None:
    three = (config.workplace, config.worker, config.job)
    if config.jobs is not None and any(p is not None for p in three):
        raise SpecError("[data] gives both 'jobs' and workplace/worker/job tables")
    if config.jobs is None and any(p is None for p in three):
        raise SpecError("[data] needs either 'jobs' or all of workplace, worker, job")
    for a in config.worker_attributes:
        if a not in config.domains or len(config.domains[a]) == 0:
            raise SpecError(f"worker attribute {a!r} has no declared domain")


# --------------------------------------------------------------------------------------
# validation (DESIGN.md §2.3) with Spark aggregations; ids may be printed, values not
# --------------------------------------------------------------------------------------


_ID_MISSING = "missing id (null or blank)"


def _attr_checks(
    attrs: Sequence[str], doms: Mapping[str, Sequence[str]], id_col: str
) -> list[_Check]:
    """Attributes with a declared domain must be in it; the others must be present."""
    out = []
    for a in attrs:
        if a in doms:
            listed = ", ".join(doms[a])
            msg = f"value missing or not in declared domain of {a!r} ({listed}) at id {{id!r}}"
            out.append(_Check(_outside(a, doms[a]), a, "domain", msg, id_col))
        else:
            msg = "missing value (null or blank) at id {id!r}"
            out.append(_Check(_missing(a), a, "missing-value", msg, id_col))
    return out


def _validate_three(
    wp: SparkDataFrame,
    wk: SparkDataFrame,
    jb: SparkDataFrame,
    config: EreeDataConfig,
    doms: Mapping[str, Sequence[str]],
) -> SparkDataFrame:
    """DESIGN.md §2.3 for the three-table form, in three Spark aggregations.

    Returns:
        The jobs left-joined to their workers (worker id, workplace id, worker
        attributes, two flags and the workplace id's fingerprint word, hashed once per
        workplace), held in Spark's cache (memory, spilling to disk):
        the job check's aggregation computes it once and the caller reads the jobs
        from it. Dropped here if a check fails.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as sf

    wid, kid = config.workplace_id, config.worker_id
    assert config.workplace and config.worker and config.job
    _run_checks(
        wp,
        config.workplace,
        [
            _Check(_missing(wid), wid, "missing-id", _ID_MISSING),
            *_attr_checks(config.workplace_attributes, doms, wid),
        ],
        unique=wid,
    )
    n_workers = _run_checks(
        wk,
        config.worker,
        [
            _Check(_missing(kid), kid, "missing-id", _ID_MISSING),
            *_attr_checks(config.worker_attributes, doms, kid),
        ],
        unique=kid,
    )
    # ids of both tables are now unique: left joins keep every job exactly once
    in_wp, in_wk = "__eree_in_wp", "__eree_in_wk"
    kattrs = list(config.worker_attributes)
    jj = (
        jb.select(kid, wid)
        .join(
            wp.select(wid, sf.lit(True).alias(in_wp), text_word(wid).alias(WORD_PREFIX + wid)),
            on=wid,
            how="left",
        )
        .join(wk.select(kid, *kattrs, sf.lit(True).alias(in_wk)), on=kid, how="left")
    ).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        _check_jobs(jj, wk, jb, config, n_workers, in_wp, in_wk)
    except BaseException:
        jj.unpersist()
        raise
    return jj


# violation bits of the fused validation (one per rule; any set bit sends the data through
# the rule-by-rule checks, which name the file, column, rule and an offending id)
_V_MISSING_WORKER_ID = 1
_V_DUPLICATE_WORKER = 2
_V_UNKNOWN_WORKER = 4
_V_NO_JOB = 8
_V_MULTIPLE_JOBS = 16
_V_MISSING_WORKPLACE_ID = 32
_V_WORKER_ATTRIBUTE = 64
_V_UNKNOWN_WORKPLACE = 128
_V_WORKPLACE_ROW = 256  # missing workplace id, or a workplace attribute missing/outside
#: rows per partition of the fused validation's shuffles (the worker-id join holds one
#: partition's workers in a hash table)
_ROWS_PER_PARTITION = 2_000_000


def _validate_and_code_three(
    wp: SparkDataFrame,
    wk: SparkDataFrame,
    jb: SparkDataFrame,
    config: EreeDataConfig,
    doms: Mapping[str, Sequence[str]],
) -> _Prepared:
    """DESIGN.md §2.3 for the three-table form and the coding for queries, fused.

    At most two shuffles of the microdata instead of one pass per rule:

    1. jobs (worker id, workplace id) and workers (id, each attribute's index in its
       domain) are matched by a shuffled hash join on the worker id. Every worker-side
       rule is a condition on the joined row (missing id, a job pointing at an unknown
       worker, a worker with no job, a missing workplace id, an attribute outside its
       domain), kept as violation bits; a repeated id shows as a count mismatch (see the
       pair count below). When no worker attribute is needed and the worker table's
       ids are in order, :func:`_validate_and_code_by_order` does without the join;
    2. the jobs are counted per (workplace id, attribute indexes, bits), partially before
       the shuffle, then hash-partitioned by workplace id beside the workplace rows
       (rows with a missing id or attribute flagged): sizes and the join need no further
       shuffle; a job whose workplace is unknown is flagged there, and a repeated
       workplace id shows as two rows of its id.

    The counts are the coded dataset the queries read (cached); one Spark job both
    materialises them and ORs the bits. Any bit set: the cache is dropped and
    :func:`_validate_three` runs the rules one by one, in the Polars loader's order, and
    raises the error it names. So an invalid input gets the same message as before.

    Returns:
        The coded dataset: workplaces (``_W`` = workplace id, attributes, ``_SIZE``) and
        contributions (``_W``, each worker attribute's index, ``_N`` jobs), both
        hash-partitioned by ``_W`` and cached.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as sf

    wid, kid = config.workplace_id, config.worker_id
    wattrs, kattrs = list(config.workplace_attributes), list(config.worker_attributes)
    spark = wp.sparkSession
    n_parts = int(spark.conf.get("spark.sql.shuffle.partitions") or "4")
    k_wk, k_jb, miss_w, aflag, nwp, wflag = (
        "__eree_k_wk", "__eree_k_jb", "__eree_miss_w", "__eree_aflag", "__eree_n_wp",
        "__eree_wflag",
    )  # fmt: skip
    types = {a: _code_type(len(doms[a])) for a in kattrs}

    def bit(cond: Column, b: int) -> Column:
        return sf.when(cond, sf.lit(b)).otherwise(sf.lit(0))

    if not kattrs:  # no worker attribute: the ids may be matched without a join
        coded = _validate_and_code_by_order(wp, wk, jb, config, doms)
        if coded is not None:
            return coded
    # --- 1. jobs and workers matched by worker id (a shuffled hash join: no sort) ---
    n_jobs, n_workers = jb.count(), wk.count()  # Parquet: from the files' metadata
    # enough partitions that one partition of the join fits a task's memory
    n_parts = max(n_parts, -(-max(n_jobs, n_workers) // _ROWS_PER_PARTITION))
    outside: Column = sf.lit(False)
    for a in kattrs:
        outside = outside | _outside(a, doms[a])
    workers = wk.select(
        sf.col(kid).alias(k_wk),
        *[_domain_index(a, doms[a]).cast(types[a]).alias(a) for a in kattrs],
        outside.alias(aflag),
    )
    jobs = jb.select(sf.col(kid).alias(k_jb), wid, _missing(wid).alias(miss_w))
    matched = jobs.repartition(n_parts, k_jb).join(
        workers.repartition(n_parts, k_wk).hint("shuffle_hash"),
        sf.col(k_jb) == sf.col(k_wk),
        "full_outer",
    )

    # a worker id repeated in either table shows as a count mismatch (see below)
    v = (
        bit(_missing(k_jb) & sf.col(k_jb).isNotNull(), _V_MISSING_WORKER_ID)
        .bitwiseOR(bit(_missing(k_wk) & sf.col(k_wk).isNotNull(), _V_MISSING_WORKER_ID))
        .bitwiseOR(bit(sf.col(k_wk).isNull(), _V_UNKNOWN_WORKER))
        .bitwiseOR(bit(sf.col(k_jb).isNull(), _V_NO_JOB))
        .bitwiseOR(bit(sf.coalesce(sf.col(miss_w), sf.lit(False)), _V_MISSING_WORKPLACE_ID))
        .bitwiseOR(bit(sf.coalesce(sf.col(aflag), sf.lit(False)), _V_WORKER_ATTRIBUTE))
    )
    # null ids (never equal in the join) land on both sides unmatched: flagged as missing
    v = v.bitwiseOR(bit((sf.col(k_jb).isNull() & sf.col(k_wk).isNull()), _V_MISSING_WORKER_ID))
    per_worker = matched.select(wid, *kattrs, v.alias(_FLAG))
    # --- 2. per establishment and attribute indexes (partial counts before the shuffle),
    # then both sides in workplace-id partitions: joins and sizes need no further shuffle
    contrib = (
        per_worker.groupBy(sf.col(wid).alias(_W), *kattrs, _FLAG)
        .agg(sf.count(sf.lit(1)).alias(_N))
        .repartition(n_parts, _W)
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    wbad: Column = _missing(wid)
    for a in wattrs:
        wbad = wbad | (_outside(a, doms[a]) if a in doms else _missing(a))
    # the workplace rows themselves (their text is not aggregated)
    wp_rows = wp.select(sf.col(wid).alias(_W), *wattrs, wbad.cast("byte").alias(wflag))
    coded_wp = coded_jobs = None
    try:
        coded_wp, coded_jobs = _code(wp_rows.repartition(n_parts, _W), contrib, wattrs, kattrs)
        unmatched = _V_UNKNOWN_WORKER | _V_NO_JOB
        # a duplicate workplace id shows as 2 rows of its id (local: partitioned by id)
        per_id = coded_wp.groupBy(_W).agg(
            sf.count(sf.lit(1)).alias(nwp), sf.max(wflag).alias(wflag)
        )
        # both checks in one Spark job (each side is one row)
        row = (
            coded_jobs.agg(
                sf.bit_or(_FLAG).alias("bits"),
                sf.sum(sf.when(sf.col(_FLAG).bitwiseAND(sf.lit(unmatched)) == 0, sf.col(_N))).alias(
                    "pairs"
                ),
            )
            .crossJoin(per_id.agg(sf.max(nwp).alias(nwp), sf.max(wflag).alias(wflag)))
            .first()
        )
        assert row is not None
        bits = int(row["bits"] or 0)
        if (row[nwp] or 0) > 1 or (row[wflag] or 0) > 0:
            bits |= _V_WORKPLACE_ROW
        # With no unmatched row, worker id k on a_k jobs and b_k workers (both ≥ 1) gives
        # a_k·b_k matched pairs: Σ a_k·b_k = Σ a_k (the jobs) iff every b_k = 1, and
        # = Σ b_k (the workers) iff every a_k = 1. Row counts come from file metadata.
        pairs = int(row["pairs"] or 0)
        if not bits and (pairs != n_jobs or pairs != n_workers):
            bits |= _V_DUPLICATE_WORKER | _V_MULTIPLE_JOBS
    except BaseException:
        for df in (coded_jobs, coded_wp):
            if df is not None:
                df.unpersist()
        raise
    finally:
        contrib.unpersist()
    if bits:
        coded_jobs.unpersist()
        coded_wp.unpersist()
        jj = _validate_three(wp, wk, jb, config, doms)  # raises the named error
        jj.unpersist()
        raise RuntimeError(  # pragma: no cover - the two validations disagree
            f"eree internal error: fused validation flagged bits {bits} that the "
            "rule-by-rule checks did not find"
        )
    return _Prepared(
        workplaces=coded_wp.select(_W, *wattrs, _SIZE),
        jobs=coded_jobs.select(_W, *wattrs, _SIZE, *kattrs, _N),
        cached=(coded_wp, coded_jobs),
    )


def _validate_and_code_by_order(
    wp: SparkDataFrame,
    wk: SparkDataFrame,
    jb: SparkDataFrame,
    config: EreeDataConfig,
    doms: Mapping[str, Sequence[str]],
) -> _Prepared | None:
    """DESIGN.md §2.3 and the coding of a release without worker attributes, no join by worker.

    ``None`` when the worker table's ids are not in order (:func:`_ids_in_order`): the
    caller then matches jobs and workers by a join. Otherwise:

    1. the worker table gives its rows, its missing ids and its lane (Σ xxHash64 under a
       fresh secret key modulo 2⁶⁴, :func:`_id_lanes`);
    2. one pass over the jobs counts them per workplace id (partially before the
       shuffle, which partitions by workplace id), with the lane sums of their worker
       ids per workplace;
    3. the workplace rows, partitioned the same way, are joined with those counts (no
       further shuffle) and cached: each establishment with its attributes and size is
       the coded dataset, as a job count per establishment is all the queries need;
    4. one Spark job materialises the cache and checks: the jobs counted at known
       workplaces are all the jobs (file metadata) and as many as the workers, no
       worker id is missing, the lanes of the jobs equal the workers', no workplace id
       repeats, no workplace value is missing or outside its domain.

    Why this proves the worker rules: the jobs' worker ids and the workers' ids are then
    two multisets of the same size with equal lanes, hence equal (multisets that differ
    agree on the 64-bit lane only by chance, about 2⁻⁶⁴ for ids not crafted against
    xxHash64 under a key they cannot know); the workers' ids are distinct (in order), so
    the jobs' are too: each worker holds exactly one job and every job's worker is known.

    Any failure drops the cache and :func:`_validate_three` names the error.
    """
    import secrets

    from pyspark import StorageLevel
    from pyspark.sql import functions as sf

    wid, kid = config.workplace_id, config.worker_id
    wattrs = list(config.workplace_attributes)
    try:
        if not _ids_in_order(wk, kid):
            return None
    except Exception:  # no PyArrow/pandas for the Python workers: take the join
        return None
    keys = [secrets.randbits(63)]  # one 64-bit lane under a fresh secret key
    [(n_workers, missing_workers, lanes_workers)] = _id_lanes([wk], kid, keys)
    n_jobs = jb.count()  # Parquet: from the files' metadata
    spark = wp.sparkSession
    n_parts = int(spark.conf.get("spark.sql.shuffle.partitions") or "4")
    wflag, nwp = "__eree_wflag", "__eree_n_wp"
    halves = _lane_halves(kid, keys)
    # a missing worker id of a job needs no check of its own: the workers' ids are all
    # present, so the jobs' multiset would differ from theirs (and so would the lanes)
    sizes = jb.groupBy(sf.col(wid).alias(_W)).agg(
        sf.count(sf.lit(1)).alias(_SIZE),
        *[sf.sum(h).alias(f"__eree_h{i}") for i, h in enumerate(halves)],
    )
    wbad: Column = _missing(wid)
    for a in wattrs:
        wbad = wbad | (_outside(a, doms[a]) if a in doms else _missing(a))
    wp_rows = wp.select(sf.col(wid).alias(_W), *wattrs, wbad.cast("byte").alias(wflag))
    coded = (
        wp_rows.repartition(n_parts, _W)
        .join(sizes.hint("shuffle_hash"), on=_W, how="left")
        .fillna(0, subset=[_SIZE])
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    lane_sums = [sf.sum(f"__eree_h{i}").alias(f"h{i}") for i in range(len(halves))]
    ok = False
    try:
        per_id = coded.groupBy(_W).agg(sf.count(sf.lit(1)).alias(nwp))  # local: by _W
        row = (
            coded.agg(
                sf.sum(_SIZE).alias("jobs"),
                sf.max(wflag).alias(wflag),
                *lane_sums,
            )
            .crossJoin(per_id.agg(sf.max(nwp).alias(nwp)))
            .first()
        )
        assert row is not None
        lanes_jobs = _lanes(row, len(keys))
        ok = (
            int(row["jobs"] or 0) == n_jobs == n_workers
            and not missing_workers
            and lanes_jobs == lanes_workers
            and (row[nwp] or 0) <= 1
            and not row[wflag]
        )
    finally:
        if not ok:
            coded.unpersist()
    if not ok:
        jj = _validate_three(wp, wk, jb, config, doms)  # raises the named error
        jj.unpersist()
        raise RuntimeError(  # pragma: no cover - the two validations disagree
            "eree internal error: the ordered-id validation failed where the rule-by-rule "
            "checks found nothing"
        )
    workplaces = coded.select(_W, *wattrs, _SIZE)
    return _Prepared(
        workplaces=workplaces,
        jobs=workplaces.where(sf.col(_SIZE) > 0).withColumn(_N, sf.col(_SIZE)),
        cached=(coded,),
        one_row_per_establishment=True,
    )


def _lane_halves(col: str, keys: Sequence[int]) -> list[Column]:
    """Per key, xxHash64(key, id) of column ``col`` as its low and high 32-bit halves.

    Summed over up to 2³¹ rows the halves stay below 2⁶³ (so ANSI mode raises no
    overflow); :func:`_lanes` puts the sums back together modulo 2⁶⁴.
    """
    from pyspark.sql import functions as sf

    low = sf.lit(0xFFFFFFFF)
    out = []
    for key in keys:
        h = sf.xxhash64(sf.lit(key).cast("long"), sf.col(col).cast("string"))
        out += [h.bitwiseAND(low), sf.shiftright(h, 32).bitwiseAND(low)]
    return out


def _lanes(row: Any, n_keys: int) -> list[int]:
    """Per key, Σ xxHash64 modulo 2⁶⁴ from a row of the half sums ``h0``, ``h1``, …."""
    return [
        (int(row[f"h{2 * j + 1}"] or 0) * (1 << 32) + int(row[f"h{2 * j}"] or 0)) % (1 << 64)
        for j in range(n_keys)
    ]


def _id_lanes(
    dfs: Sequence[SparkDataFrame], col: str, keys: Sequence[int]
) -> list[tuple[int, int, list[int]]]:
    """Per table: its rows, its missing ids, and per key Σ xxHash64(key, id) modulo 2⁶⁴.

    One Spark aggregation over all tables (no shuffle but of one row per task and
    table); the hashes as in :func:`_lane_halves`.
    """
    from pyspark.sql import functions as sf

    ids = None
    for t, df in enumerate(dfs):
        one = df.select(sf.col(col).cast("string").alias(col), sf.lit(t).alias("__eree_t"))
        ids = one if ids is None else ids.union(one)
    assert ids is not None
    halves = [sf.sum(h).alias(f"h{i}") for i, h in enumerate(_lane_halves(col, keys))]
    counts = [sf.count(sf.lit(1)).alias("n"), sf.sum(_missing(col).cast("long")).alias("miss")]
    rows = {r["__eree_t"]: r for r in ids.groupBy("__eree_t").agg(*counts, *halves).collect()}
    out = []
    for t in range(len(dfs)):
        r = rows.get(t)
        if r is None:  # an empty table
            out.append((0, 0, [0] * len(keys)))
        else:
            out.append((int(r["n"]), int(r["miss"] or 0), _lanes(r, len(keys))))
    return out


def _ids_in_order(df: SparkDataFrame, col: str) -> bool:
    """Whether the ids of ``col`` are present and in order, hence distinct.

    The ids are read in file order: within a Spark partition, each file block's rows
    come together (a partition may hold several files' blocks, packed largest first).
    Every run of rows from one block must be strictly increasing (bytewise order of the
    UTF-8 text) with no null; the runs' ranges, sorted by their first id, must not
    overlap. Then no id repeats. Where a run starts is only a hint (a hash of the file
    name and block offset): had two blocks been taken for one run, that run must still
    increase throughout, so the proof stands. Spark sends only the ids and the hint to
    Python (Arrow batches), where PyArrow compares neighbours a batch at a time.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import functions as sf

    ddl = "ok boolean, lo string, hi string, n long"
    schema = pa.schema([("ok", pa.bool_()), ("lo", pa.string()), ("hi", pa.string()),
                        ("n", pa.int64())])  # fmt: skip

    def summarise(batches):  # type: ignore[no-untyped-def]
        spans: list[list[Any]] = []  # per run: first id, last id, rows
        run = None
        ok = True
        for b in batches:
            a, n = b.column(0), b.num_rows
            if n == 0:
                continue
            if a.null_count:
                ok = False
                break
            r = b.column(1).to_numpy(zero_copy_only=False)
            same = r[1:] == r[:-1]  # neighbours from one block must increase
            if n > 1:
                up = pc.less(a.slice(0, n - 1), a.slice(1)).to_numpy(zero_copy_only=False)
                if not (up | ~same).all():
                    ok = False
                    break
            for s, e in pairwise([0, *(np.flatnonzero(~same) + 1).tolist(), n]):
                first, last = a[s].as_py(), a[e - 1].as_py()
                if spans and run == r[s]:  # the same block continues from the last batch
                    if not spans[-1][1].encode() < first.encode():
                        ok = False
                        break
                    spans[-1][1] = last
                    spans[-1][2] += e - s
                else:
                    spans.append([first, last, e - s])
                run = r[s]
            if not ok:
                break
        rows = [{"ok": ok, "lo": lo, "hi": hi, "n": n} for lo, hi, n in spans]
        rows.append({"ok": ok, "lo": None, "hi": None, "n": 0})
        yield pa.RecordBatch.from_pylist(rows, schema=schema)

    ids = df.select(
        sf.col(col).cast("string").alias(col),
        sf.hash(sf.input_file_name(), sf.input_file_block_start()).alias("__eree_run"),
    )
    rows = ids.mapInArrow(summarise, ddl).collect()
    if not all(r["ok"] for r in rows):
        return False
    spans = sorted((r["lo"].encode(), r["hi"].encode()) for r in rows if r["n"])
    return all(x[1] < y[0] for x, y in pairwise(spans))


def _code(
    workplaces: SparkDataFrame,
    contrib: SparkDataFrame,
    wattrs: Sequence[str],
    kattrs: Sequence[str],
    *,
    persist: bool = True,
) -> tuple[SparkDataFrame, SparkDataFrame]:
    """The coded dataset from workplace rows and per-establishment job counts.

    Both inputs are hash-partitioned by ``_W`` into the same number of partitions
    (``workplaces``: ``_W`` + attributes [+ more]; ``contrib``: ``_W``, worker attribute
    indexes [+ ``_FLAG``], ``_N``), so every step here is local to a partition.

    Returns:
        ``workplaces`` with ``_SIZE`` (the establishment's jobs; 0 without any), and the
        contributions with each establishment's attributes and ``_SIZE`` beside them
        (null: a job's workplace is missing from the workplace table; ``_FLAG`` gets
        :data:`_V_UNKNOWN_WORKPLACE` when ``contrib`` carries one). With ``persist``
        both are cached (and materialised by the caller's first action).
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as sf

    sizes = contrib.groupBy(_W).agg(sf.sum(_N).alias(_SIZE))
    coded_wp = workplaces.join(sizes.hint("shuffle_hash"), on=_W, how="left").fillna(
        0, subset=[_SIZE]
    )
    if persist:
        coded_wp = coded_wp.persist(StorageLevel.MEMORY_AND_DISK)
    wp = coded_wp.select(_W, *wattrs, _SIZE).hint("shuffle_hash")
    joined = contrib.join(wp, on=_W, how="left")
    cols = [_W, *wattrs, _SIZE, *kattrs, _N]
    if _FLAG in contrib.columns:
        unknown = sf.when(sf.col(_SIZE).isNull(), sf.lit(_V_UNKNOWN_WORKPLACE)).otherwise(0)
        cols.insert(-1, sf.col(_FLAG).bitwiseOR(unknown).alias(_FLAG))  # type: ignore[arg-type]
    coded_jobs = joined.select(*cols)
    if persist:
        coded_jobs = coded_jobs.persist(StorageLevel.MEMORY_AND_DISK)
    return coded_wp, coded_jobs


def _check_jobs(
    jj: SparkDataFrame,
    wk: SparkDataFrame,
    jb: SparkDataFrame,
    config: EreeDataConfig,
    n_workers: int,
    in_wp: str,
    in_wk: str,
) -> None:
    """The job table's checks of DESIGN.md §2.3 on the job ⋈ workplace ⋈ worker join."""
    from pyspark.sql import functions as sf

    wid, kid = config.workplace_id, config.worker_id
    assert config.job and config.worker
    n_jobs = _run_checks(
        jj,
        config.job,
        [
            _Check(_missing(kid), kid, "missing-id", _ID_MISSING),
            _Check(_missing(wid), wid, "missing-id", _ID_MISSING),
            _Check(
                sf.col(in_wp).isNull(),
                wid,
                "unknown-workplace",
                "job points at unknown workplace {id!r}",
                wid,
            ),
            _Check(
                sf.col(in_wk).isNull(),
                kid,
                "unknown-worker",
                "job points at unknown worker {id!r}",
                kid,
            ),
        ],
        unique=kid,
        unique_rule="multiple-jobs",
        unique_message="worker {id!r} holds more than one job",
    )
    # job worker ids are unique and all known: every worker holds a job iff counts match
    if n_jobs != n_workers:
        nojob = wk.join(jb.select(kid), on=kid, how="left_anti").select(kid).limit(1).collect()
        raise DataValidationError(
            f"worker {nojob[0][0] if nojob else '?'!r} holds no job (each worker must hold "
            "exactly one)",
            file=str(config.worker),
            column=kid,
            rule="no-job",
        )


def _validate_joined(
    df: SparkDataFrame, config: EreeDataConfig, doms: Mapping[str, Sequence[str]]
) -> None:
    """DESIGN.md §2.3 for the joined form, in two Spark aggregations."""
    from pyspark.sql import functions as sf

    wid, kid = config.workplace_id, config.worker_id
    assert config.jobs is not None
    checks = [_Check(_missing(wid), wid, "missing-id", _ID_MISSING)]
    has_kid = kid in df.columns
    if has_kid:
        checks.append(_Check(_missing(kid), kid, "missing-id", _ID_MISSING))
    checks += _attr_checks(config.workplace_attributes, doms, wid)
    checks += _attr_checks(config.worker_attributes, doms, kid if has_kid else wid)
    _run_checks(
        df,
        config.jobs,
        checks,
        unique=kid if has_kid else None,
        unique_rule="multiple-jobs",
        unique_message="worker {id!r} holds more than one job",
    )
    wattrs = list(config.workplace_attributes)
    if wattrs:
        incons = (
            df.groupBy(wid)
            .agg(*[sf.countDistinct(sf.col(a)).alias(a) for a in wattrs])
            .filter(sf.greatest(*[sf.col(a) for a in wattrs], sf.lit(1)) > 1)
            .limit(1)
            .collect()
        )
        if incons:
            r = incons[0]
            a = next(a for a in wattrs if r[a] > 1)
            raise DataValidationError(
                f"workplace {r[wid]!r} has different {a!r} values on its jobs (workplace "
                "attributes must be the same on all its jobs)",
                file=str(config.jobs),
                column=a,
                rule="inconsistent-workplace",
            )


# --------------------------------------------------------------------------------------
# the engine
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Prepared:
    """A dataset coded for queries (the Spark twin of the Polars engine's ``_Prepared``).

    Both frames are hash-partitioned by ``_W`` into the same number of partitions, so the
    per-establishment group-by and the join to the workplaces need no shuffle.
    """

    workplaces: SparkDataFrame  # _W (workplace key), workplace attributes (strings), _SIZE
    # _W (null: unknown workplace), per coded attribute its index, _N (jobs of the row)
    jobs: SparkDataFrame
    cached: tuple[SparkDataFrame, ...] = ()  # held in Spark's cache: dropped by release()
    #: each row of ``jobs`` is one establishment's jobs, and no attribute is coded
    one_row_per_establishment: bool = False

    def release(self) -> None:
        for df in self.cached:
            df.unpersist()


class SparkEngine:
    """Cell statistics with PySpark, identical to :class:`PolarsEngine`'s.

    Args:
        spark: the session to use; default: the active session, else
            :func:`spark_session` ().
        persist: keep the coded dataset (see :meth:`prepare`) in Spark's cache
            (memory, spilling to local disk) between queries. Without it every query
            recomputes it from the source.

    Datasets: :class:`~eree.data.eree_tables.EreeData` (handed over once through Arrow)
    or :class:`SparkEreeData` (see the module docstring). :meth:`read_parquet` and
    :meth:`load` read a Spark-side dataset with this engine's session.

    Like the Polars engine, the engine codes one dataset at a time, on its first query
    (or on :meth:`prepare`), and reuses the coding while the same object is queried;
    :meth:`release` frees it.
    """

    name = "spark"

    def __init__(self, spark: SparkSession | None = None, *, persist: bool = True) -> None:
        self._spark = spark
        self._persist = persist
        self._source: tuple[EreeData, SparkEreeData] | None = None
        self._prepared: tuple[EreeData | SparkEreeData, _Prepared] | None = None
        self._estab_source: tuple[EstablishmentData, SparkEstablishmentData] | None = None

    @property
    def spark(self) -> SparkSession:
        """The session (started on first use when none was given)."""
        if self._spark is None:
            from pyspark.sql import SparkSession

            self._spark = SparkSession.getActiveSession() or spark_session()
        return self._spark

    def read_parquet(
        self,
        workplace_path: str | Path,
        worker_path: str | Path,
        job_path: str | Path,
        **kwargs: Any,
    ) -> SparkEreeData:
        """:meth:`SparkEreeData.from_parquet` with this engine's session."""
        return SparkEreeData.from_parquet(
            self.spark, workplace_path, worker_path, job_path, **kwargs
        )

    def load(self, config: EreeDataConfig, *, validate: bool = True) -> SparkEreeData:
        """:meth:`SparkEreeData.from_config` with this engine's session.

        A failure inside Spark becomes the Polars loader's one-line error for the same
        input (:func:`spark_input_error`), never Spark's message.
        """
        try:
            return SparkEreeData.from_config(self.spark, config, validate=validate)
        except Exception as e:
            if not (_is_spark_failure(e) or isinstance(e, DataValidationError)):
                raise
            from eree.data.eree_tables import load_eree

            raise spark_input_error(e, lambda: load_eree(config), config.input_files()) from None

    def to_spark(self, data: EreeData | SparkEreeData) -> SparkEreeData:
        """The Spark-side dataset of ``data`` (converted once per :class:`EreeData`)."""
        if isinstance(data, SparkEreeData):
            return data
        if self._source is not None and self._source[0] is data:
            return self._source[1]
        sdata = SparkEreeData.from_eree(self.spark, data)
        self._source = (data, sdata)
        return sdata

    def prepare(self, data: EreeData | SparkEreeData) -> None:
        """Code ``data`` for queries now (otherwise the first query does it).

        Spark turns every worker attribute with a declared domain into its index in
        the domain (null when outside), counts the jobs per establishment and
        combination of indexes, hash-partitions those counts and the workplaces by
        establishment, and puts each establishment's attributes and size (its jobs, for
        truncation) beside its counts. With ``persist`` the result is cached (and
        materialised here). Data read and validated by :meth:`SparkEreeData.from_config`
        arrive coded already.
        """
        self._prepare(data)

    def release(self) -> None:
        """Drop the cached coding of the current dataset (and its Arrow copy)."""
        if self._prepared is not None:
            self._prepared[1].release()
            if isinstance(self._prepared[0], SparkEreeData):
                self._prepared[0].unpersist()
        self._prepared = None
        self._source = None

    # -- establishments (QCEW-like): DESIGN.md §1.1 ------------------------------------

    def load_eree(
        self, config: EreeDataConfig, attributes: Sequence[str] | None = None
    ) -> SparkEreeData:
        """Read and validate ER-EE input with Spark (only ``attributes``, if given)."""
        from eree.engine.polars.load import narrow_config

        return self.load(narrow_config(config, attributes))

    def load_establishments(self, config: EstablishmentDataConfig) -> SparkEstablishmentData:
        """Read and validate establishment input with Spark (DESIGN.md §2.2–2.3)."""
        from eree.engine.spark.establishments import load_establishments_spark

        try:
            return load_establishments_spark(self.spark, config)
        except Exception as e:
            if not (_is_spark_failure(e) or isinstance(e, DataValidationError)):
                raise
            from eree.data.establishments import load_establishments

            raise spark_input_error(e, lambda: load_establishments(config), [config.path]) from None

    def _estab(self, data: EstablishmentData | SparkEstablishmentData) -> SparkEstablishmentData:
        from eree.engine.spark.establishments import SparkEstablishmentData

        if isinstance(data, SparkEstablishmentData):
            return data
        if self._estab_source is not None and self._estab_source[0] is data:
            return self._estab_source[1]
        sdata = SparkEstablishmentData.from_polars(self.spark, data)
        self._estab_source = (data, sdata)
        return sdata

    def identity_values(
        self, data: EstablishmentData | SparkEstablishmentData, attributes: Sequence[str]
    ) -> pl.DataFrame:
        """The identity query's answers: the id, then each attribute; sorted by id."""
        from eree.engine.spark import establishments as se

        return se.identity_values(self._estab(data), attributes)

    def group_sums(
        self,
        data: EstablishmentData | SparkEstablishmentData,
        by: Sequence[str],
        attributes: Sequence[str],
    ) -> pl.DataFrame:
        """Exact group sums, identical to :meth:`PolarsEngine.group_sums`."""
        from eree.engine.spark import establishments as se

        return se.group_sums(self._estab(data), by, attributes)

    def group_max_bounds(
        self,
        data: EstablishmentData | SparkEstablishmentData,
        by: Sequence[str],
        bounds: pl.DataFrame,
    ) -> pl.DataFrame:
        """Per group, the largest public bound of each attribute of ``bounds``."""
        from eree.engine.spark import establishments as se

        sdata = self._estab(data)
        attrs = [c for c in bounds.columns if c != sdata.id_column]
        return se.group_max_bounds(self.spark, sdata, by, bounds, attrs)

    def clipped_group_sums(
        self,
        data: EstablishmentData | SparkEstablishmentData,
        by: Sequence[str],
        bounds: pl.DataFrame,
        attributes: Sequence[str],
    ) -> pl.DataFrame:
        """Exact clipped sums, identical to :meth:`PolarsEngine.clipped_group_sums`."""
        from eree.engine.spark import establishments as se

        return se.clipped_group_sums(self.spark, self._estab(data), by, bounds, attributes)

    def _prepare(self, data: EreeData | SparkEreeData) -> _Prepared:
        if self._prepared is not None and self._prepared[0] is data:
            return self._prepared[1]
        from pyspark import StorageLevel
        from pyspark.sql import functions as sf

        self.release()
        if isinstance(data, SparkEreeData) and data.coded is not None:
            self._prepared = (data, data.coded)  # coded while it was validated
            return data.coded
        sdata = self.to_spark(data)
        n_parts = int(self.spark.conf.get("spark.sql.shuffle.partitions") or "4")
        coded = [a for a in sdata.jobs.columns if a != WORKPLACE_ID and a in sdata.domains]
        # per establishment (keyed by its id) and worker attribute indexes, its jobs
        contrib = (
            sdata.jobs.groupBy(
                sf.col(WORKPLACE_ID).alias(_W),
                *[
                    _domain_index(a, sdata.domains[a])
                    .cast(_code_type(len(sdata.domains[a])))
                    .alias(a)
                    for a in coded
                ],
            )
            .agg(sf.count(sf.lit(1)).alias(_N))
            .repartition(n_parts, _W)
        )
        workplaces = sdata.workplaces.withColumnRenamed(WORKPLACE_ID, _W).repartition(n_parts, _W)
        wattrs = [c for c in workplaces.columns if c != _W]
        if self._persist:
            contrib = contrib.persist(StorageLevel.MEMORY_AND_DISK)
        coded_wp, coded_jobs = _code(workplaces, contrib, wattrs, coded, persist=self._persist)
        if self._persist:
            coded_jobs.count()
            coded_wp.count()
            contrib.unpersist()
        cached = (coded_wp, coded_jobs) if self._persist else ()
        prep = _Prepared(workplaces=coded_wp, jobs=coded_jobs, cached=cached)
        self._prepared = (data, prep)
        return prep

    @staticmethod
    def _check(
        data: EreeData | SparkEreeData, workplace_by: Sequence[str], worker_by: Sequence[str]
    ) -> None:
        wp_cols, job_cols = data.workplaces.columns, data.jobs.columns
        for a in workplace_by:
            if a not in wp_cols or a == WORKPLACE_ID:
                raise SpecError(f"{a!r} is not a workplace attribute of the data")
        for a in worker_by:
            if a not in job_cols or a == WORKPLACE_ID:
                raise SpecError(f"{a!r} is not a worker attribute of the data")

    def establishment_cells(
        self,
        data: EreeData | SparkEreeData,
        workplace_by: Sequence[str],
        worker_by: Sequence[str],
    ) -> pl.DataFrame:
        """Per (establishment, cell) job counts (see :mod:`eree.engine.base`).

        Spark groups and joins; the result (one row per establishment and non-empty cell,
        up to the number of jobs) is collected and sorted on the driver by Polars, the
        same sort as the Polars engine's.
        """
        from pyspark.sql import functions as sf

        self._check(data, workplace_by, worker_by)
        sdata = self.to_spark(data)
        wkeys, kkeys = list(workplace_by), list(worker_by)
        per = sdata.jobs.groupBy(WORKPLACE_ID, *kkeys).agg(sf.count(sf.lit(1)).alias("n"))
        wp = sdata.workplaces.select(WORKPLACE_ID, *wkeys)
        out = _to_polars(
            per.join(wp, on=WORKPLACE_ID, how="inner").select(WORKPLACE_ID, *wkeys, *kkeys, "n")
        )
        schema = {WORKPLACE_ID: pl.Utf8, **{a: pl.Utf8 for a in [*wkeys, *kkeys]}, "n": pl.Int64}
        return out.cast(schema).sort([WORKPLACE_ID, *wkeys, *kkeys])  # type: ignore[arg-type]

    def cell_statistics(
        self,
        data: EreeData | SparkEreeData,
        workplace_by: Sequence[str],
        worker_by: Sequence[str],
        *,
        complete: bool = False,
        truncate_below: float | None = None,
        categorical_keys: bool = False,
    ) -> pl.DataFrame:
        """Cell statistics (see :mod:`eree.engine.base`), identical to the Polars engine's.

        On the coded dataset (:meth:`prepare`), Spark gives each coded row its worker
        code ``d`` (the mixed-radix index of the query's worker attributes in their
        declared domains, as in the Polars engine) and a flag for values outside the
        domains or an unknown workplace; a group-by over (establishment, d), local to
        the establishment's partition, gives each establishment's contribution n to each
        cell; a group-by over (workplace keys, d) gives ``sum(n)``, ``max(n)`` and the
        sum over establishments smaller than ``truncate_below``. The number of
        establishments per workplace combination is computed in the same Spark job
        (for data coded one row per establishment, by the same aggregation).
        Driver: the two small results are scattered into the full F × D cell frame.
        """
        from pyspark.sql import functions as sf

        self._check(data, workplace_by, worker_by)
        wkeys, kkeys = list(workplace_by), list(worker_by)
        missing = [a for a in kkeys if a not in data.domains]
        if missing:
            raise SpecError(f"attributes {missing} have no declared domain")
        full_frame = _domain_frame(data.domains, wkeys).sort(wkeys) if complete and wkeys else None
        prep = self._prepare(data)
        sizes = [len(data.domains[a]) for a in kkeys]
        D = int(np.prod(sizes)) if kkeys else 1

        # --- Spark: per (establishment, worker code) its jobs, then cells ---
        code: Column = sf.lit(0).cast("long")
        flag: Column = sf.when(sf.col(_SIZE).isNull(), sf.lit(_UNKNOWN_WORKPLACE)).otherwise(0)
        for i, (a, size) in enumerate(zip(kkeys, sizes, strict=True)):
            code = code * sf.lit(size) + sf.coalesce(sf.col(a).cast("long"), sf.lit(0))
            flag = flag.bitwiseOR(sf.when(sf.col(a).isNull(), sf.lit(1 << (i + 1))).otherwise(0))
        aggs = [sf.sum(_N).alias("count"), sf.max(_N).alias("x_v")]
        if truncate_below is not None:
            # NaN: Spark orders NaN above every number, NumPy compares False; follow NumPy
            keep = (
                sf.col(_SIZE) < sf.lit(float(truncate_below))
                if not math.isnan(truncate_below)
                else sf.lit(False)
            )
            aggs.append(sf.sum(sf.when(keep, sf.col(_N)).otherwise(0)).alias("count_truncated"))
        if prep.one_row_per_establishment:
            # every establishment is one row (its jobs: its size, maybe 0) and there is no
            # worker code: the cells and their establishments in one aggregation
            both = _to_polars(
                prep.workplaces.withColumn(_N, sf.col(_SIZE))
                .groupBy(*wkeys)
                .agg(*aggs, sf.count(sf.lit(1)).alias("establishments"))
            )
            est = both.select(*wkeys, "establishments")
            cells = both.drop("establishments").with_columns(
                pl.lit(0).alias(_D), pl.lit(0).alias(_FLAG)
            )
        else:
            # the coded rows are partitioned by establishment: this group-by is local
            contrib = (
                prep.jobs.select(_W, *wkeys, _SIZE, code.alias(_D), flag.alias(_FLAG), _N)
                .groupBy(_W, *wkeys, _SIZE, _D, _FLAG)
                .agg(sf.sum(_N).alias(_N))
            )
            cells_sdf = contrib.groupBy(*wkeys, _D, _FLAG).agg(*aggs)
            est_sdf = prep.workplaces.groupBy(*wkeys).agg(
                sf.count(sf.lit(1)).alias("establishments")
            )
            # --- driver: both small results in one Spark job (est rows: _D null) ---
            both = _to_polars(cells_sdf.unionByName(est_sdf, allowMissingColumns=True))
            is_est = both[_D].is_null()
            cells = both.filter(~is_est).drop("establishments")
            est = both.filter(is_est).select(*wkeys, "establishments")
        _raise_on_flags(cells, kkeys)
        for a in wkeys:
            if est[a].null_count():
                raise SpecError(f"workplace attribute {a!r} has missing values")
        return _assemble(
            cells, est, wkeys, kkeys, data.domains, D, full_frame, truncate_below is not None,
            categorical_keys,
        )  # fmt: skip


def _code_type(size: int) -> str:
    return "byte" if size <= 127 else "short" if size <= 32767 else "int"


def _domain_index(a: str, domain: Sequence[str]) -> Column:
    """Index of column ``a``'s value in ``domain``; null when outside (or missing)."""
    from pyspark.sql import functions as sf

    if not domain:
        return sf.lit(None).cast("long")
    idx = sf.when(sf.col(a) == sf.lit(domain[0]), sf.lit(0))
    for j, v in enumerate(domain[1:], start=1):
        idx = idx.when(sf.col(a) == sf.lit(v), sf.lit(j))
    return idx


def _raise_on_flags(cells: pl.DataFrame, worker_by: Sequence[str]) -> None:
    flags = cells[_FLAG]
    if not (flags != 0).any():
        return
    any_flag = int(np.bitwise_or.reduce(flags.to_numpy().astype(np.int64)))
    if any_flag & _UNKNOWN_WORKPLACE:
        raise SpecError("a job points at a workplace missing from the workplace table")
    bad = [a for i, a in enumerate(worker_by) if any_flag & (1 << (i + 1))]
    raise SpecError(
        f"worker attribute(s) {bad} have values missing or outside their declared domain"
    )


def _assemble(
    cells: pl.DataFrame,
    est: pl.DataFrame,
    wkeys: list[str],
    kkeys: list[str],
    domains: Mapping[str, tuple[str, ...]],
    D: int,
    full_frame: pl.DataFrame | None,
    truncated: bool,
    categorical: bool = False,
) -> pl.DataFrame:
    """Scatter the collected non-empty cells into the full frame (as the Polars engine)."""
    est = est.cast({a: pl.Utf8 for a in wkeys}).with_columns(
        pl.col("establishments").cast(pl.Int64)
    )
    if wkeys:
        if full_frame is not None:
            outside = est.join(full_frame, on=wkeys, how="anti")
            if outside.height:
                raise SpecError(f"workplace values outside the declared domains of {wkeys}")
            frame = full_frame.join(est, on=wkeys, how="left", maintain_order="left")
            frame = frame.with_columns(pl.col("establishments").fill_null(0))
        else:
            frame = est.sort(wkeys)
        frame = frame.with_row_index(_F)
        cells = cells.cast({a: pl.Utf8 for a in wkeys}).join(
            frame.select(*wkeys, _F), on=wkeys, how="left"
        )
        if cells[_F].null_count():  # pragma: no cover - every job's workplace is in est
            raise SpecError("a job's workplace combination is missing from the frame")
    else:
        # one combination (the total); no workplace means zero establishments
        frame = pl.DataFrame({"establishments": [int(est["establishments"].sum())]}).with_row_index(
            _F
        )
        cells = cells.with_columns(pl.lit(0, dtype=pl.UInt32).alias(_F))
    n_frame = frame.height
    idx = cells[_F].cast(pl.Int64).to_numpy() * D + cells[_D].cast(pl.Int64).to_numpy()

    def scatter(col: str) -> np.ndarray:
        out = np.zeros(n_frame * D, dtype=np.int64)
        out[idx] = cells[col].cast(pl.Int64).to_numpy()
        return out

    cols: dict[str, pl.Series | np.ndarray] = {}
    cols.update(cell_keys(frame, wkeys, kkeys, domains, D, categorical=categorical))
    n_est = frame["establishments"].to_numpy().astype(np.int64)
    cols["count"] = scatter("count")
    cols["x_v"] = scatter("x_v")
    cols["establishments"] = np.repeat(n_est, D)
    cols["has_establishment"] = np.repeat(n_est > 0, D)
    if truncated:
        cols["count_truncated"] = scatter("count_truncated")
    return pl.DataFrame(cols)
