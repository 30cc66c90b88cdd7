"""The input rules of docs/design.md#validation in Spark, for both forms of ER-EE input.

Four paths, each a function here; ids may be printed in errors, values never:

* the joined form: :func:`validate_joined`, the rules one by one (two Spark
  aggregations);
* the three-table form: :func:`validate_and_code_three` checks the rules and codes the
  data for queries (:class:`~eree.engine.spark.coding.CodedData`) in the same Spark
  passes, by one of two fused paths:

  - :func:`_validate_and_code_by_order` when no worker attribute is needed and the
    worker table's ids are in order: jobs and workers are matched without a join,
    by lanes of id hashes (:mod:`eree.engine.spark.id_order`);
  - :func:`_validate_and_code_by_join` otherwise: jobs and workers matched by a
    worker-id join, every row rule a condition on the joined row;

  a fused path only says whether the input breaks a rule; when it does, the coding is
  dropped and :func:`_validate_three` runs the rules one by one, in the Polars loader's
  order, and raises the error it names (file, column, rule, an offending id).

PySpark is imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NoReturn

from eree.data.config import JobSelection, JobTablesConfig
from eree.engine.spark.checks import (
    ID_MISSING,
    Check,
    attr_checks,
    missing,
    number_from_text,
    outside,
    run_checks,
)
from eree.engine.spark.coding import (
    N_JOBS,
    SIZE,
    WORKPLACE_KEY,
    CodedData,
    code_frames,
    code_type,
    domain_index,
)
from eree.engine.spark.file_counts import value_counts
from eree.engine.spark.fingerprint import WORD_PREFIX, text_word
from eree.engine.spark.id_order import (
    id_lanes,
    ids_in_order,
    lane_halves,
    lane_sums,
    twin_files_in_order,
)
from eree.engine.spark.session import is_spark_failure
from eree.errors import DataValidationError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column
    from pyspark.sql import DataFrame as SparkDataFrame

__all__ = ["validate_and_code_three", "validate_and_select_three", "validate_joined"]

#: rows per partition of the fused validation's shuffles (the worker-id join holds one
#: partition's workers in a hash table)
_ROWS_PER_PARTITION = 2_000_000


def validate_joined(
    df: SparkDataFrame, config: JobTablesConfig, doms: Mapping[str, Sequence[str]]
) -> None:
    """docs/design.md#validation for the joined form, in two Spark aggregations."""
    from pyspark.sql import functions as sf

    wid, kid = config.workplace_id, config.worker_id
    assert config.jobs is not None
    checks = [Check(missing(wid), wid, "missing-id", ID_MISSING)]
    has_kid = kid in df.columns
    if has_kid:
        checks.append(Check(missing(kid), kid, "missing-id", ID_MISSING))
    checks += attr_checks(config.workplace_attributes, doms)
    checks += attr_checks(config.worker_attributes, doms)
    run_checks(
        df,
        config.jobs,
        checks,
        unique=kid if has_kid else None,
        unique_rule="multiple-jobs",
        unique_message="worker holds more than one job",
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
                f"workplace has different {a!r} values on its jobs (workplace "
                "attributes must be the same on all its jobs)",
                file=str(config.jobs),
                column=a,
                rule="inconsistent-workplace",
            )


def validate_and_code_three(
    wp: SparkDataFrame,
    wk: SparkDataFrame,
    jb: SparkDataFrame,
    config: JobTablesConfig,
    doms: Mapping[str, Sequence[str]],
) -> CodedData:
    """docs/design.md#validation for the three-table form and the coding for queries, fused.

    Without worker attributes the ids may be matched by their order, without a join
    (:func:`_validate_and_code_by_order`); otherwise, or when the worker table's ids are
    not in order, by a worker-id join (:func:`_validate_and_code_by_join`). An input that
    breaks a rule gets the error of the rule-by-rule checks (:func:`_validate_three`).

    Returns:
        The coded dataset: workplaces (``WORKPLACE_KEY`` = workplace id, attributes,
        ``SIZE``) and contributions (``WORKPLACE_KEY``, each worker attribute's index,
        ``N_JOBS`` jobs), both hash-partitioned by ``WORKPLACE_KEY`` and cached.
    """
    if not config.worker_attributes:  # no worker attribute: the ids may be matched without a join
        coded = _validate_and_code_by_order(wp, wk, jb, config, doms)
        if coded is not None:
            return coded
    return _validate_and_code_by_join(wp, wk, jb, config, doms)


def _validate_and_code_by_join(
    wp: SparkDataFrame,
    wk: SparkDataFrame,
    jb: SparkDataFrame,
    config: JobTablesConfig,
    doms: Mapping[str, Sequence[str]],
) -> CodedData:
    """The input rules and the coding for queries, with jobs and workers joined by worker id.

    The rules: docs/design.md#validation.

    At most two shuffles of the microdata instead of one pass per rule:

    1. jobs (worker id, workplace id) and workers (id, each attribute's index in its
       domain) are matched by a shuffled hash join on the worker id. Every worker-side
       rule is a condition on the joined row (missing id, a job pointing at an unknown
       worker, a worker with no job, a missing workplace id, an attribute outside its
       domain): a row that breaks one is marked *suspect*; a repeated id shows as a
       count mismatch (see the pair count below);
    2. the jobs are counted per (workplace id, attribute indexes, suspect), partially
       before the shuffle, then hash-partitioned by workplace id beside the workplace
       rows (rows with a missing id or attribute flagged): sizes and the join need no
       further shuffle; a job whose workplace is unknown is marked suspect there, and a
       repeated workplace id shows as two rows of its id.

    The counts are the coded dataset the queries read (cached); one Spark job both
    materialises them and checks them. A suspect row, a flagged or repeated workplace
    row or a count mismatch: the cache is dropped and :func:`_validate_three` runs the
    rules one by one and raises the error it names. So an invalid input gets the same
    message as before.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as sf

    wid, kid = config.workplace_id, config.worker_id
    wattrs, kattrs = list(config.workplace_attributes), list(config.worker_attributes)
    spark = wp.sparkSession
    n_parts = int(spark.conf.get("spark.sql.shuffle.partitions") or "4")
    k_wk, k_jb, miss_w, aflag, nwp, wflag, suspect = (
        "__eree_k_wk", "__eree_k_jb", "__eree_miss_w", "__eree_aflag", "__eree_n_wp",
        "__eree_wflag", "__eree_suspect",
    )  # fmt: skip
    types = {a: code_type(len(doms[a])) for a in kattrs}
    # --- 1. jobs and workers matched by worker id (a shuffled hash join: no sort) ---
    n_jobs, n_workers = jb.count(), wk.count()  # Parquet: from the files' metadata
    # enough partitions that one partition of the join fits a task's memory
    n_parts = max(n_parts, -(-max(n_jobs, n_workers) // _ROWS_PER_PARTITION))
    attr_outside: Column = sf.lit(False)
    for a in kattrs:
        attr_outside = attr_outside | outside(a, doms[a])
    workers = wk.select(
        sf.col(kid).alias(k_wk),
        *[domain_index(a, doms[a]).cast(types[a]).alias(a) for a in kattrs],
        attr_outside.alias(aflag),
    )
    jobs = jb.select(sf.col(kid).alias(k_jb), wid, missing(wid).alias(miss_w))
    matched = jobs.repartition(n_parts, k_jb).join(
        workers.repartition(n_parts, k_wk).hint("shuffle_hash"),
        sf.col(k_jb) == sf.col(k_wk),
        "full_outer",
    )
    # a joined row is suspect when a worker id is missing (null or blank) on either side
    # (so also an unmatched row: a job at an unknown worker or a worker with no job has
    # no id on the other side; null ids never match in the join), when the job's
    # workplace id is missing, or when a worker attribute is outside its domain. A worker
    # id repeated in either table shows as a count mismatch (see below).
    broken = (
        missing(k_jb)
        | missing(k_wk)
        | sf.coalesce(sf.col(miss_w), sf.lit(False))
        | sf.coalesce(sf.col(aflag), sf.lit(False))
    )
    per_worker = matched.select(wid, *kattrs, broken.alias(suspect))
    # --- 2. per establishment and attribute indexes (partial counts before the shuffle),
    # then both sides in workplace-id partitions: joins and sizes need no further shuffle
    contrib = (
        per_worker.groupBy(sf.col(wid).alias(WORKPLACE_KEY), *kattrs, suspect)
        .agg(sf.count(sf.lit(1)).alias(N_JOBS))
        .repartition(n_parts, WORKPLACE_KEY)
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    wbad: Column = missing(wid)
    for a in wattrs:
        wbad = wbad | (outside(a, doms[a]) if a in doms else missing(a))
    # the workplace rows themselves (their text is not aggregated)
    wp_rows = wp.select(sf.col(wid).alias(WORKPLACE_KEY), *wattrs, wbad.cast("byte").alias(wflag))
    coded_wp = coded_jobs = None
    try:
        coded_wp, coded_jobs = code_frames(
            wp_rows.repartition(n_parts, WORKPLACE_KEY), contrib, wattrs, kattrs, suspect=suspect
        )
        # a duplicate workplace id shows as 2 rows of its id (local: partitioned by id)
        per_id = coded_wp.groupBy(WORKPLACE_KEY).agg(
            sf.count(sf.lit(1)).alias(nwp), sf.max(wflag).alias(wflag)
        )
        # both checks in one Spark job (each side is one row)
        row = (
            coded_jobs.agg(sf.max(suspect).alias(suspect), sf.sum(N_JOBS).alias("pairs"))
            .crossJoin(per_id.agg(sf.max(nwp).alias(nwp), sf.max(wflag).alias(wflag)))
            .first()
        )
        assert row is not None
        # With no suspect row (every row matched), worker id k on a_k jobs and b_k workers
        # (both ≥ 1) gives a_k·b_k matched pairs: Σ a_k·b_k = Σ a_k (the jobs) iff every
        # b_k = 1, and = Σ b_k (the workers) iff every a_k = 1. Row counts come from
        # file metadata.
        pairs = int(row["pairs"] or 0)
        valid = (
            not row[suspect]
            and (row[nwp] or 0) <= 1
            and not row[wflag]
            and pairs == n_jobs
            and pairs == n_workers
        )
    except BaseException:
        for df in (coded_jobs, coded_wp):
            if df is not None:
                df.unpersist()
        raise
    finally:
        contrib.unpersist()
    if not valid:
        coded_jobs.unpersist()
        coded_wp.unpersist()
        _raise_named_error(wp, wk, jb, config, doms, "fused")
    return CodedData(
        workplaces=coded_wp.select(WORKPLACE_KEY, *wattrs, SIZE),
        jobs=coded_jobs.select(WORKPLACE_KEY, *wattrs, SIZE, *kattrs, N_JOBS),
        cached=(coded_wp, coded_jobs),
    )


def _validate_and_code_by_order(
    wp: SparkDataFrame,
    wk: SparkDataFrame,
    jb: SparkDataFrame,
    config: JobTablesConfig,
    doms: Mapping[str, Sequence[str]],
) -> CodedData | None:
    """The input rules and the coding of a release without worker attributes, no join by worker.

    The rules: docs/design.md#validation.

    ``None`` when the worker table's ids are not in order (proven from its Parquet files
    by :func:`~eree.engine.spark.id_order.twin_files_in_order` when PyArrow can read
    them, else by :func:`~eree.engine.spark.id_order.ids_in_order`): the caller then
    matches jobs and workers by a join. Otherwise:

    1. the worker ids are matched with the jobs' worker ids by one of two proofs:

       - *twin files* (no Spark pass over any worker id): the pass of PyArrow tasks that
         proves the order also reads, beside each worker file, the job file paired with
         it (the ``i``-th of each table's files sorted by name) and finds the same ids
         in the same order, none blank, and as many rows in all as Spark counts in each
         table;
       - *lanes*, when the files are not twins: the worker table gives its rows, its
         missing ids and its lane (Σ xxHash64 under a fresh secret key modulo 2⁶⁴,
         :func:`~eree.engine.spark.id_order.id_lanes`), and the pass of step 2 sums the
         lanes of the jobs' worker ids per workplace;

    2. one pass over the jobs counts them per workplace id (partially before the
       shuffle, which partitions by workplace id): by twin files, PyArrow counts each
       job file's rows per workplace id in Spark tasks
       (:func:`~eree.engine.spark.file_counts.value_counts`), else Spark's own scan;
    3. the workplace rows, partitioned the same way, are joined with those counts (no
       further shuffle) and cached: each establishment with its attributes and size is
       the coded dataset, as a job count per establishment is all the queries need;
    4. one Spark job materialises the cache and checks: the jobs counted at known
       workplaces are all the jobs (file metadata) and as many as the workers, no
       workplace id repeats, no workplace value is missing or outside its domain; and,
       by lanes, no worker id is missing and the lanes of the jobs equal the workers'.

    Why this proves the worker rules. The workers' ids are distinct (in order) and
    present. By twin files: the rows PyArrow read are the rows Spark reads (the files
    of the plain reads, ``DataFrame.inputFiles``, and the same row counts); every job
    file is the twin of exactly one worker file and holds its ids row for row, so the
    jobs' worker ids are exactly the workers' ids, each once: no chance is involved.
    By lanes: the jobs' worker ids and the workers' ids are two multisets of the same
    size with equal lanes, hence equal (multisets that differ agree on the 64-bit lane
    only by chance, about 2⁻⁶⁴ for ids not crafted against xxHash64 under a key they
    cannot know). Either way each worker holds exactly one job and every job's worker
    is known.

    Any failure drops the cache and :func:`_validate_three` names the error
    (:func:`_raise_named_error`).
    """
    import secrets

    from pyspark import StorageLevel
    from pyspark.sql import functions as sf

    wid, kid = config.workplace_id, config.worker_id
    wattrs = list(config.workplace_attributes)
    try:
        # from the Parquet files themselves when PyArrow can read them (no id passes
        # through Spark's JVM), the job files read beside them; else from the rows as
        # Spark reads them
        by_files = twin_files_in_order(wk.sparkSession, wk.inputFiles(), kid, jb.inputFiles(), kid)
        if by_files is None:
            if not ids_in_order(wk, kid):
                return None
        elif not by_files.proven:
            return None
    except Exception as e:  # a failure inside Spark only (eree's own errors propagate)
        if not is_spark_failure(e):
            raise
        # the Python workers could not run the batch function (executors are checked
        # for PyArrow and NumPy before a cluster release: this is local mode without
        # pandas): the join proves the same rules
        return None
    n_jobs = jb.count()  # Parquet: from the files' metadata
    keys: list[int] = []  # the lanes' secret keys (none: matched by twin files)
    missing_workers, lanes_workers = 0, list[int]()
    if (
        by_files is not None
        and by_files.same
        and by_files.rows == n_jobs
        and by_files.rows == wk.count()  # the rows Spark reads (file metadata)
    ):
        n_workers = by_files.rows
    else:
        keys = [secrets.randbits(63)]  # one 64-bit lane under a fresh secret key
        [(n_workers, missing_workers, lanes_workers)] = id_lanes([wk], kid, keys)
        # other rows than those Spark reads (not a plain read of the files): Spark proves it
        if by_files is not None and by_files.rows != n_workers and not ids_in_order(wk, kid):
            return None
    spark = wp.sparkSession
    n_parts = int(spark.conf.get("spark.sql.shuffle.partitions") or "4")
    wflag, nwp = "__eree_wflag", "__eree_n_wp"
    halves = lane_halves(kid, keys)
    # a missing worker id of a job needs no check of its own: the workers' ids are all
    # present, so the jobs' multiset would differ from theirs (and so would the lanes)
    if keys:
        sizes = jb.groupBy(sf.col(wid).alias(WORKPLACE_KEY)).agg(
            sf.count(sf.lit(1)).alias(SIZE),
            *[sf.sum(h).alias(f"__eree_h{i}") for i, h in enumerate(halves)],
        )
    else:  # twin files: PyArrow read the job files; it counts them per workplace too
        sizes = value_counts(spark, jb.inputFiles(), wid, WORKPLACE_KEY, SIZE)
    wbad: Column = missing(wid)
    for a in wattrs:
        wbad = wbad | (outside(a, doms[a]) if a in doms else missing(a))
    wp_rows = wp.select(sf.col(wid).alias(WORKPLACE_KEY), *wattrs, wbad.cast("byte").alias(wflag))
    coded = (
        wp_rows.repartition(n_parts, WORKPLACE_KEY)
        .join(sizes.hint("shuffle_hash"), on=WORKPLACE_KEY, how="left")
        .fillna(0, subset=[SIZE])
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    half_sums = [sf.sum(f"__eree_h{i}").alias(f"h{i}") for i in range(len(halves))]
    ok = False
    try:
        # local: partitioned by the workplace key
        per_id = coded.groupBy(WORKPLACE_KEY).agg(sf.count(sf.lit(1)).alias(nwp))
        row = (
            coded.agg(
                sf.sum(SIZE).alias("jobs"),
                sf.max(wflag).alias(wflag),
                *half_sums,
            )
            .crossJoin(per_id.agg(sf.max(nwp).alias(nwp)))
            .first()
        )
        assert row is not None
        lanes_jobs = lane_sums(row, len(keys))  # [] == [] when matched by twin files
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
        _raise_named_error(wp, wk, jb, config, doms, "ordered-id")
    workplaces = coded.select(WORKPLACE_KEY, *wattrs, SIZE)
    return CodedData(
        workplaces=workplaces,
        jobs=workplaces.where(sf.col(SIZE) > 0).withColumn(N_JOBS, sf.col(SIZE)),
        cached=(coded,),
        one_row_per_establishment=True,
    )


def _validate_three(
    wp: SparkDataFrame,
    wk: SparkDataFrame,
    jb: SparkDataFrame,
    config: JobTablesConfig,
    doms: Mapping[str, Sequence[str]],
) -> SparkDataFrame:
    """docs/design.md#validation for the three-table form, in three Spark aggregations.

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
    run_checks(
        wp,
        config.workplace,
        [
            Check(missing(wid), wid, "missing-id", ID_MISSING),
            *attr_checks(config.workplace_attributes, doms),
        ],
        unique=wid,
    )
    n_workers = run_checks(
        wk,
        config.worker,
        [
            Check(missing(kid), kid, "missing-id", ID_MISSING),
            *attr_checks(config.worker_attributes, doms),
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


def _check_jobs(
    jj: SparkDataFrame,
    wk: SparkDataFrame,
    jb: SparkDataFrame,
    config: JobTablesConfig,
    n_workers: int,
    in_wp: str,
    in_wk: str,
) -> None:
    """The job table's checks of docs/design.md#validation on the job ⋈ workplace ⋈ worker join."""
    from pyspark.sql import functions as sf

    wid, kid = config.workplace_id, config.worker_id
    assert config.job and config.worker
    n_jobs = run_checks(
        jj,
        config.job,
        [
            Check(missing(kid), kid, "missing-id", ID_MISSING),
            Check(missing(wid), wid, "missing-id", ID_MISSING),
            Check(
                sf.col(in_wp).isNull(),
                wid,
                "unknown-workplace",
                "job points at a workplace id not in the workplace table",
            ),
            Check(
                sf.col(in_wk).isNull(),
                kid,
                "unknown-worker",
                "job points at a worker id not in the worker table",
            ),
        ],
        unique=kid,
        unique_rule="multiple-jobs",
        unique_message="worker holds more than one job",
    )
    # job worker ids are unique and all known: every worker holds a job iff counts match
    if n_jobs != n_workers:
        raise DataValidationError(
            "worker holds no job (each worker must hold exactly one)",
            file=str(config.worker),
            column=kid,
            rule="no-job",
        )


def _raise_named_error(
    wp: SparkDataFrame,
    wk: SparkDataFrame,
    jb: SparkDataFrame,
    config: JobTablesConfig,
    doms: Mapping[str, Sequence[str]],
    path: str,
) -> NoReturn:
    """Raise the rule-by-rule checks' error for an input a fused ``path`` refused."""
    jj = _validate_three(wp, wk, jb, config, doms)  # raises the named error
    jj.unpersist()
    raise RuntimeError(  # pragma: no cover - the two validations disagree
        f"eree internal error: the {path} validation failed where the rule-by-rule "
        "checks found nothing"
    )


def validate_and_select_three(
    wp: SparkDataFrame,
    wk: SparkDataFrame,
    jb: SparkDataFrame,
    config: JobTablesConfig,
    doms: Mapping[str, Sequence[str]],
) -> tuple[SparkDataFrame, JobSelection]:
    """The input rules for workers who may hold several jobs, and the job selection.

    The Spark twin of the Polars loader's selection (:func:`eree.data.job_tables.select_jobs`,
    docs/privacy.md#several-jobs-per-worker): the workplace and worker tables checked as
    always; each job's ids present and known; a worker's job at one workplace listed once;
    every worker holding a job; a job's earnings (primary jobs) present, a number, ≥ 0 and
    finite. Then private jobs only (JT02), each worker's jobs ordered by earnings
    (descending, primary jobs) and the keyed order (:mod:`eree.data.job_order`), the first
    k kept, and for JT03 the primary job kept when it is private. Nothing is left cached:
    the counts are one pass and the kept jobs a lazy frame.

    Returns:
        The kept jobs (workplace id, worker attributes) and the counts of what was
        dropped (confidential: for ``eree validate`` only).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    from eree.data.job_order import SEPARATOR, fresh_key
    from eree.data.schema import OWNERSHIP, PRIVATE_OWNERSHIP

    wid, kid = config.workplace_id, config.worker_id
    assert config.workplace and config.worker and config.job
    run_checks(
        wp,
        config.workplace,
        [
            Check(missing(wid), wid, "missing-id", ID_MISSING),
            *attr_checks(config.workplace_attributes, doms),
        ],
        unique=wid,
    )
    run_checks(
        wk,
        config.worker,
        [
            Check(missing(kid), kid, "missing-id", ID_MISSING),
            *attr_checks(config.worker_attributes, doms),
        ],
        unique=kid,
    )
    in_wp, in_wk, earn, bad = "__eree_in_wp", "__eree_in_wk", "__eree_earn", "__eree_bad"
    kattrs = list(config.worker_attributes)
    own = [OWNERSHIP] if config.private_only else []
    jcols = [kid, wid]
    if config.job_earnings is not None:
        number, unparsed = number_from_text(config.job_earnings)
        jcols += [number.alias(earn), unparsed.alias(bad)]  # type: ignore[list-item]
    jj = (
        jb.select(*jcols)
        .join(wp.select(wid, *own, sf.lit(True).alias(in_wp)), on=wid, how="left")
        .join(wk.select(kid, *kattrs, sf.lit(True).alias(in_wk)), on=kid, how="left")
    )
    checks = [
        Check(missing(kid), kid, "missing-id", ID_MISSING),
        Check(missing(wid), wid, "missing-id", ID_MISSING),
        Check(sf.col(in_wp).isNull(), wid, "unknown-workplace",
              "job points at a workplace id not in the workplace table"),
        Check(sf.col(in_wk).isNull(), kid, "unknown-worker",
              "job points at a worker id not in the worker table"),
    ]  # fmt: skip
    if config.job_earnings is not None:
        e = config.job_earnings
        checks += [
            Check(sf.col(bad), e, "type", "value does not parse as a number"),
            Check(sf.col(earn).isNull() & ~sf.col(bad), e, "missing-value",
                  "missing value (null or blank)"),
            Check(sf.isnan(earn) | (sf.col(earn) < 0) | sf.col(earn).isin(
                float("inf"), float("-inf")), e, "negative-or-nonfinite",
                "value is negative, NaN or infinite"),
        ]  # fmt: skip
    run_checks(jj, config.job, checks)
    twice = jb.groupBy(kid, wid).count().filter(sf.col("count") > 1).limit(1).collect()
    if twice:
        raise DataValidationError(
            "worker holds a job at the same workplace twice",
            file=str(config.job),
            column=wid,
            rule="same-job-twice",
        )
    nojob = wk.join(jb.select(kid), on=kid, how="left_anti").select(kid).limit(1).collect()
    if nojob:
        raise DataValidationError(
            "worker holds no job (each worker must hold at least one)",
            file=str(config.worker),
            column=kid,
            rule="no-job",
        )
    rank = "__eree_rank"
    jt03 = config.private_only and config.primary_only
    # JT02 bounds the private jobs; JT03 takes the primary job among all, then keeps it if
    # private (eree.data.job_tables.select_jobs)
    typed = jj.where(sf.col(OWNERSHIP) == PRIVATE_OWNERSHIP) if config.private_only and not \
        config.primary_only else jj  # fmt: skip
    key = config.order_key if config.order_key is not None else fresh_key()
    # the keyed order (eree.data.job_order): the same word as order_words, computed by Spark
    word = sf.sha2(sf.concat_ws(SEPARATOR, sf.lit(key.hex()), sf.col(kid), sf.col(wid)), 256)
    order = [word.asc()]
    if config.primary_only:
        order = [sf.col(earn).desc(), *order]
    k = config.jobs_per_worker
    ranked = typed.withColumn(
        rank, sf.row_number().over(Window.partitionBy(kid).orderBy(*order))
    )  # not cached: one pass for the counts, and the kept jobs are read later, lazily (the
    # order is total: one job per worker and workplace, a word per job; same rows again)
    private = sf.col(OWNERSHIP) == PRIVATE_OWNERSHIP if jt03 else sf.lit(True)
    row = ranked.agg(
        sf.count(sf.lit(1)).alias("typed"),
        sf.sum(sf.when(sf.col(rank) == k + 1, 1).otherwise(0)).alias("over"),
        sf.sum(sf.when(sf.col(rank) > k, 1).otherwise(0)).alias("dropped"),
        sf.sum(sf.when((sf.col(rank) <= k) & ~private, 1).otherwise(0)).alias("public"),
    ).first()
    assert row is not None
    n_jobs = jb.count()
    kept = ranked.where((sf.col(rank) <= k) & private).select(wid, *kattrs)
    not_of_type = n_jobs - int(row["typed"] or 0)
    selection = JobSelection(
        k=k,
        job_type=config.job_type,
        workers_over=int(row["over"] or 0),
        jobs_dropped=int(row["dropped"] or 0),
        jobs_not_of_type=int(row["public"] or 0) if jt03 else not_of_type,
    )
    return kept, selection
