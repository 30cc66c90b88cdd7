"""The Spark engine: the engine contract (:mod:`eree.engine.base`) on PySpark.

For data that outgrow one machine (docs/design.md#data-flow). It gives **identical** cell statistics
to :class:`~eree.engine.polars.engine.PolarsEngine`: same columns, dtypes, row order and
values.

Data
    :class:`SparkEngine` accepts two kinds of dataset:

    * an :class:`~eree.data.job_tables.JobTables` (Polars frames, already validated by
      :func:`~eree.data.job_tables.load_job_tables`): it is handed to Spark once through Arrow
      and the Spark copy is reused while the same object is queried again;
    * a :class:`~eree.engine.spark.data.SparkJobTables`: the same two tables
      (``workplaces``, ``jobs``) as Spark DataFrames, read by Spark itself
      (:meth:`SparkJobTables.from_parquet`, :meth:`SparkJobTables.from_config`) or wrapped
      around DataFrames the caller already has. The microdata then never pass through
      Polars or the Python driver; the loaders run the rules of docs/design.md#validation as Spark
      aggregations (see :meth:`SparkJobTables.from_config`).

Where the work happens
    Spark does everything proportional to the microdata. Once per dataset it codes the
    data: per establishment (keyed by its workplace id) and combination of worker
    attribute indexes (each value's index in its declared domain), the number of jobs,
    with the establishment's attributes and size (its jobs, for truncation) beside it;
    and the workplaces with their sizes. Both are hash-partitioned by establishment and
    cached (memory, spilling to disk). Reading the three-table form with
    :meth:`SparkJobTables.from_config` codes the data in the same Spark passes that check
    docs/design.md#validation (see :func:`~eree.engine.spark.validate.validate_and_code_three`: a
    worker-id join and one workplace-partitioned count, or no join at all when no worker
    attribute is needed and the ids are proven to match by their order); other datasets
    are coded on the first query (:meth:`SparkEngine.prepare`,
    :mod:`eree.engine.spark.coding`). Each query then sums the coded counts per
    (establishment, cell) partition by partition, without a shuffle, and one shuffled
    group-by gives the per-cell ``sum`` (count), ``max`` (x_v) and truncated sum. One
    Spark job per query collects two small results: the non-empty cells and the number
    of establishments per workplace combination (both at most the size of the output).

    The full cell frame (the public workplace combinations × the full declared worker
    domain, docs/design.md#cells) is assembled on the driver in Polars/NumPy from those two
    collected frames, exactly as the Polars engine does it. The output has to be on the
    driver anyway and is no larger than what was collected plus its zero cells, so a Spark
    cross join would only add a shuffle and a larger collect; assembling it here also
    guarantees the Polars engine's row order (workplace keys sorted by Polars, worker
    attributes in declared-domain order) and dtypes by construction
    (:mod:`eree.engine.spark.assemble`).

Validation done by the engine itself (any dataset): a job pointing at an unknown
workplace, a worker attribute outside its declared domain, a missing workplace
attribute value and, with ``complete=True``, a workplace value outside its declared
domain raise :class:`~eree.errors.SpecError`; no row is ever dropped silently.

PySpark is imported lazily (inside functions), so :mod:`eree` works without it; install
the ``spark`` extra to use this module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from eree.data.config import EstablishmentDataConfig, JobTablesConfig
from eree.data.establishments import EstablishmentData
from eree.data.job_tables import JobTables
from eree.data.schema import WORKPLACE_ID
from eree.engine.base import (
    ESTABLISHMENT_INDEX,
    ESTABLISHMENTS,
    LoadedEstablishments,
    LoadedJobTables,
)
from eree.engine.cell_frame import domain_frame
from eree.engine.public_frame import establishment_index, sorted_workplace_counts
from eree.engine.spark.assemble import assemble
from eree.engine.spark.coding import (
    FLAGS,
    N_JOBS,
    SIZE,
    WORKER_CODE,
    WORKPLACE_KEY,
    CodedData,
    code_dataset,
    raise_on_flags,
    worker_code_and_flags,
)
from eree.engine.spark.data import SparkJobTables
from eree.engine.spark.io import to_polars
from eree.engine.spark.session import is_spark_failure, spark_input_error, spark_session
from eree.errors import DataValidationError, SpecError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, SparkSession

    from eree.engine.spark.establishments import SparkEstablishmentData

__all__ = ["SparkEngine"]


def _job_data(data: LoadedJobTables) -> JobTables | SparkJobTables:
    """The ER-EE data this engine reads behind a handle: its own, or Polars' (converted)."""
    if not isinstance(data, JobTables | SparkJobTables):
        raise TypeError(f"the Spark engine cannot read {type(data).__name__}")
    return data


def _estab_data(data: LoadedEstablishments) -> EstablishmentData | SparkEstablishmentData:
    """The establishment data this engine reads behind a handle: its own, or Polars'."""
    from eree.engine.spark.establishments import SparkEstablishmentData

    if not isinstance(data, EstablishmentData | SparkEstablishmentData):
        raise TypeError(f"the Spark engine cannot read {type(data).__name__}")
    return data


class SparkEngine:
    """Cell statistics with PySpark, identical to :class:`PolarsEngine`'s.

    Args:
        spark: the session to use; default: the active session, else
            :func:`spark_session` ().
        persist: keep the coded dataset (see :meth:`prepare`) in Spark's cache
            (memory, spilling to local disk) between queries. Without it every query
            recomputes it from the source.

    Datasets: :class:`~eree.data.job_tables.JobTables` (handed over once through Arrow)
    or :class:`SparkJobTables` (see the module docstring). :meth:`read_parquet` and
    :meth:`load` read a Spark-side dataset with this engine's session.

    Like the Polars engine, the engine codes one dataset at a time, on its first query
    (or on :meth:`prepare`), and reuses the coding while the same object is queried;
    :meth:`unpersist` frees it.
    """

    name = "spark"

    def __init__(self, spark: SparkSession | None = None, *, persist: bool = True) -> None:
        self._spark = spark
        self._persist = persist
        self._source: tuple[JobTables, SparkJobTables] | None = None
        self._prepared: tuple[JobTables | SparkJobTables, CodedData] | None = None
        self._estab_source: tuple[EstablishmentData, SparkEstablishmentData] | None = None

    @property
    def spark(self) -> SparkSession:
        """The session (started on first use when none was given)."""
        if self._spark is None:
            from pyspark.sql import SparkSession

            self._spark = SparkSession.getActiveSession() or spark_session()
        return self._spark

    def describe(self) -> dict[str, Any]:
        """The engine as the manifest records it: the session's master and Spark's version."""
        return {"kind": self.name, "master": self.spark.sparkContext.master,
                "spark": self.spark.version}  # fmt: skip

    def read_parquet(
        self,
        workplace_path: str | Path,
        worker_path: str | Path,
        job_path: str | Path,
        **kwargs: Any,
    ) -> SparkJobTables:
        """:meth:`SparkJobTables.from_parquet` with this engine's session."""
        return SparkJobTables.from_parquet(
            self.spark, workplace_path, worker_path, job_path, **kwargs
        )

    def load(self, config: JobTablesConfig, *, validate: bool = True) -> SparkJobTables:
        """:meth:`SparkJobTables.from_config` with this engine's session.

        A failure inside Spark becomes the Polars loader's one-line error for the same
        input (:func:`spark_input_error`), never Spark's message.
        """
        try:
            return SparkJobTables.from_config(self.spark, config, validate=validate)
        except Exception as e:
            if not (is_spark_failure(e) or isinstance(e, DataValidationError)):
                raise
            from eree.data.job_tables import load_job_tables

            raise spark_input_error(
                e, lambda: load_job_tables(config), config.input_files()
            ) from None

    def to_spark(self, data: JobTables | SparkJobTables) -> SparkJobTables:
        """The Spark-side dataset of ``data`` (converted once per :class:`JobTables`)."""
        if isinstance(data, SparkJobTables):
            return data
        if self._source is not None and self._source[0] is data:
            return self._source[1]
        sdata = SparkJobTables.from_job_tables(self.spark, data)
        self._source = (data, sdata)
        return sdata

    def prepare(self, data: JobTables | SparkJobTables) -> None:
        """Code ``data`` for queries now (otherwise the first query does it).

        Spark turns every worker attribute with a declared domain into its index in
        the domain (null when outside), counts the jobs per establishment and
        combination of indexes, hash-partitions those counts and the workplaces by
        establishment, and puts each establishment's attributes and size (its jobs, for
        truncation) beside its counts. With ``persist`` the result is cached (and
        materialised here). Data read and validated by :meth:`SparkJobTables.from_config`
        arrive coded already.
        """
        self._prepare(data)

    def unpersist(self) -> None:
        """Drop the cached coding of the current dataset (and its Arrow copy)."""
        if self._prepared is not None:
            self._prepared[1].unpersist()
            if isinstance(self._prepared[0], SparkJobTables):
                self._prepared[0].unpersist()
        self._prepared = None
        self._source = None

    def load_job_tables(
        self, config: JobTablesConfig, attributes: Sequence[str] | None = None
    ) -> SparkJobTables:
        """Read and validate ER-EE input with Spark (only ``attributes``, if given)."""
        from eree.engine.polars.load import narrow_config

        return self.load(narrow_config(config, attributes))

    def n_workplaces(self, data: LoadedJobTables) -> int:
        """The number of workplaces (a Spark count for Spark-side data)."""
        return int(_job_data(data).n_workplaces)

    def workplace_counts(self, data: LoadedJobTables, by: Sequence[str]) -> pl.DataFrame:
        """The public frame's establishments per combination of ``by`` (engine contract).

        One Spark aggregation over the workplaces; only the combinations reach the driver.
        """
        from pyspark.sql import functions as sf

        wp = self.to_spark(_job_data(data)).workplaces
        counts = to_polars(wp.groupBy(*by).agg(sf.count(sf.lit(1)).alias(ESTABLISHMENTS)))
        return sorted_workplace_counts(counts, by)

    def public_workplaces(self, data: LoadedJobTables) -> pl.DataFrame | None:
        """The workplace frame of in-memory data; ``None`` for Spark-side data.

        Spark-side workplaces are not collected for this: callers do without them.
        """
        data = _job_data(data)
        return data.workplaces if isinstance(data, JobTables) else None

    def fingerprints(self, data: LoadedJobTables | LoadedEstablishments) -> tuple[str, str]:
        """The content and structure fingerprints, computed in Spark for Spark-side data.

        The same values as :func:`eree.data.fingerprint.fingerprints` of the same rows
        loaded by Polars (:func:`~eree.engine.spark.fingerprint.spark_fingerprints`); no
        row reaches the driver.
        """
        from eree.engine.spark.establishments import SparkEstablishmentData

        if isinstance(data, JobTables | EstablishmentData):  # in memory already
            from eree.data.fingerprint import fingerprints

            return fingerprints(data)
        if not isinstance(data, SparkJobTables | SparkEstablishmentData):
            raise TypeError(f"the Spark engine cannot read {type(data).__name__}")
        from eree.engine.spark.fingerprint import spark_fingerprints

        return spark_fingerprints(data)

    def structure_counts(self, data: LoadedJobTables | LoadedEstablishments) -> tuple[Any, Any]:
        """Per workplace, the word of its id and its job count, computed in Spark.

        The same values as :func:`eree.data.fingerprint.structure_counts`: one row per
        workplace (an id's word and a count, never a job) reaches the driver.
        """
        from eree.engine.spark.establishments import SparkEstablishmentData

        if isinstance(data, JobTables | EstablishmentData):  # in memory already
            from eree.data.fingerprint import structure_counts

            return structure_counts(data)
        if not isinstance(data, SparkJobTables | SparkEstablishmentData):
            raise TypeError(f"the Spark engine cannot read {type(data).__name__}")
        from eree.engine.spark.fingerprint import spark_structure_counts

        return spark_structure_counts(data)

    # -- establishments (QCEW-like): docs/design.md#core-objects ----------------------------------

    def load_establishments(self, config: EstablishmentDataConfig) -> SparkEstablishmentData:
        """Read and validate establishment input with Spark.

        See docs/design.md#establishment-data, #validation.
        """
        from eree.engine.spark.establishments import load_establishments_spark

        try:
            return load_establishments_spark(self.spark, config)
        except Exception as e:
            if not (is_spark_failure(e) or isinstance(e, DataValidationError)):
                raise
            from eree.data.establishments import load_establishments

            raise spark_input_error(e, lambda: load_establishments(config), [config.path]) from None

    def _estab(self, data: LoadedEstablishments) -> SparkEstablishmentData:
        from eree.engine.spark.establishments import SparkEstablishmentData

        data = _estab_data(data)
        if isinstance(data, SparkEstablishmentData):
            return data
        if self._estab_source is not None and self._estab_source[0] is data:
            return self._estab_source[1]
        sdata = SparkEstablishmentData.from_polars(self.spark, data)
        self._estab_source = (data, sdata)
        return sdata

    def n_establishments(self, data: LoadedEstablishments) -> int:
        """The number of establishments (a Spark count for Spark-side data)."""
        return int(_estab_data(data).n)

    def public_columns(self, data: LoadedEstablishments, columns: Sequence[str]) -> pl.DataFrame:
        """The ``columns`` of every establishment (id and public attributes only).

        For Spark-side data only these columns come to the driver, none other.
        """
        data = _estab_data(data)
        if isinstance(data, EstablishmentData):  # in memory already
            return data.frame.select(list(columns))
        return to_polars(data.frame.select(*columns))

    def identity_values(
        self, data: LoadedEstablishments, attributes: Sequence[str]
    ) -> pl.DataFrame:
        """The identity query's answers: the id, then each attribute; sorted by id."""
        from eree.engine.spark import establishments as se

        return se.identity_values(self._estab(data), attributes)

    def group_sums(
        self,
        data: LoadedEstablishments,
        by: Sequence[str],
        attributes: Sequence[str],
    ) -> pl.DataFrame:
        """Exact group sums, identical to :meth:`PolarsEngine.group_sums`."""
        from eree.engine.spark import establishments as se

        return se.group_sums(self._estab(data), by, attributes)

    def group_max_bounds(
        self,
        data: LoadedEstablishments,
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
        data: LoadedEstablishments,
        by: Sequence[str],
        bounds: pl.DataFrame,
        attributes: Sequence[str],
    ) -> pl.DataFrame:
        """Exact clipped sums, identical to :meth:`PolarsEngine.clipped_group_sums`."""
        from eree.engine.spark import establishments as se

        return se.clipped_group_sums(self.spark, self._estab(data), by, bounds, attributes)

    def _prepare(self, data: JobTables | SparkJobTables) -> CodedData:
        if self._prepared is not None and self._prepared[0] is data:
            return self._prepared[1]
        self.unpersist()
        if isinstance(data, SparkJobTables) and data.coded is not None:
            self._prepared = (data, data.coded)  # coded while it was validated
            return data.coded
        sdata = self.to_spark(data)
        n_parts = int(self.spark.conf.get("spark.sql.shuffle.partitions") or "4")
        prep = code_dataset(
            sdata.workplaces, sdata.jobs, sdata.domains, n_parts=n_parts, persist=self._persist
        )
        self._prepared = (data, prep)
        return prep

    @staticmethod
    def _check(
        data: JobTables | SparkJobTables, workplace_by: Sequence[str], worker_by: Sequence[str]
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
        data: LoadedJobTables,
        workplace_by: Sequence[str],
        worker_by: Sequence[str],
    ) -> pl.DataFrame:
        """Per (establishment, cell) job counts (see :mod:`eree.engine.base`).

        Spark groups and joins; the result (one row per establishment and non-empty cell,
        up to the number of jobs) is collected and sorted on the driver by Polars, the
        same sort as the Polars engine's.
        """
        from pyspark.sql import functions as sf

        data = _job_data(data)
        self._check(data, workplace_by, worker_by)
        sdata = self.to_spark(data)
        wkeys, kkeys = list(workplace_by), list(worker_by)
        per = sdata.jobs.groupBy(WORKPLACE_ID, *kkeys).agg(sf.count(sf.lit(1)).alias("n"))
        wp = sdata.workplaces.select(WORKPLACE_ID, *wkeys)
        out = to_polars(
            per.join(wp, on=WORKPLACE_ID, how="inner").select(WORKPLACE_ID, *wkeys, *kkeys, "n")
        )
        schema = {WORKPLACE_ID: pl.Utf8, **{a: pl.Utf8 for a in [*wkeys, *kkeys]}, "n": pl.Int64}
        # every workplace's index in sorted id order (the public ids come to the driver)
        index = establishment_index(to_polars(sdata.workplaces.select(WORKPLACE_ID))[WORKPLACE_ID])
        return (
            out.cast(schema)  # type: ignore[arg-type]
            .join(index, on=WORKPLACE_ID, how="left")
            .select(WORKPLACE_ID, *wkeys, *kkeys, "n", ESTABLISHMENT_INDEX)
            .sort([WORKPLACE_ID, *wkeys, *kkeys])
        )

    def cell_statistics(
        self,
        data: LoadedJobTables,
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

        data = _job_data(data)
        self._check(data, workplace_by, worker_by)
        wkeys, kkeys = list(workplace_by), list(worker_by)
        missing = [a for a in kkeys if a not in data.domains]
        if missing:
            raise SpecError(f"attributes {missing} have no declared domain")
        full_frame = domain_frame(data.domains, wkeys).sort(wkeys) if complete and wkeys else None
        prep = self._prepare(data)
        sizes = [len(data.domains[a]) for a in kkeys]
        D = int(np.prod(sizes)) if kkeys else 1

        # --- Spark: per (establishment, worker code) its jobs, then cells ---
        code, flag = worker_code_and_flags(kkeys, sizes)
        aggs = [sf.sum(N_JOBS).alias("count"), sf.max(N_JOBS).alias("x_v")]
        if truncate_below is not None:
            # NaN: Spark orders NaN above every number, NumPy compares False; follow NumPy
            keep = (
                sf.col(SIZE) < sf.lit(float(truncate_below))
                if not math.isnan(truncate_below)
                else sf.lit(False)
            )
            aggs.append(sf.sum(sf.when(keep, sf.col(N_JOBS)).otherwise(0)).alias("count_truncated"))
        if prep.one_row_per_establishment:
            # every establishment is one row (its jobs: its size, maybe 0) and there is no
            # worker code: the cells and their establishments in one aggregation
            both = to_polars(
                prep.workplaces.withColumn(N_JOBS, sf.col(SIZE))
                .groupBy(*wkeys)
                .agg(*aggs, sf.count(sf.lit(1)).alias("establishments"))
            )
            est = both.select(*wkeys, "establishments")
            cells = both.drop("establishments").with_columns(
                pl.lit(0).alias(WORKER_CODE), pl.lit(0).alias(FLAGS)
            )
        else:
            # the coded rows are partitioned by establishment: this group-by is local
            coded_row: list[Column | str] = [code.alias(WORKER_CODE), flag.alias(FLAGS), N_JOBS]
            contrib = (
                prep.jobs.select(WORKPLACE_KEY, *wkeys, SIZE, *coded_row)
                .groupBy(WORKPLACE_KEY, *wkeys, SIZE, WORKER_CODE, FLAGS)
                .agg(sf.sum(N_JOBS).alias(N_JOBS))
            )
            cells_sdf = contrib.groupBy(*wkeys, WORKER_CODE, FLAGS).agg(*aggs)
            est_sdf = prep.workplaces.groupBy(*wkeys).agg(
                sf.count(sf.lit(1)).alias("establishments")
            )
            # --- driver: both small results in one Spark job (est rows: WORKER_CODE null) ---
            both = to_polars(cells_sdf.unionByName(est_sdf, allowMissingColumns=True))
            is_est = both[WORKER_CODE].is_null()
            cells = both.filter(~is_est).drop("establishments")
            est = both.filter(is_est).select(*wkeys, "establishments")
        raise_on_flags(cells, kkeys)
        for a in wkeys:
            if est[a].null_count():
                raise SpecError(f"workplace attribute {a!r} has missing values")
        return assemble(
            cells, est, wkeys, kkeys, data.domains, D, full_frame, truncate_below is not None,
            categorical_keys,
        )  # fmt: skip
