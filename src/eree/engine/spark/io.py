"""Moving data into and out of Spark.

Reading a table's columns as text (:func:`read_text_columns`, CSV or Parquet, file or
partitioned directory), handing a Polars frame to Spark through Arrow
(:func:`polars_to_spark`) and bringing a Spark result to the driver as a Polars frame
(:func:`to_polars`, through Spark's result channel, checked against Spark's row count).
PySpark is imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from eree.data.location import DataPath, is_uri
from eree.errors import DataValidationError, SpecError

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame as SparkDataFrame
    from pyspark.sql import SparkSession

__all__ = [
    "CHUNK_ROWS",
    "OPEN_COST_BYTES",
    "check_rows",
    "partition_groups",
    "polars_to_spark",
    "read_text_columns",
    "split_small_files",
    "to_polars",
]

_CORRUPT = "__eree_corrupt_record"


_LOCAL_RELATION_THRESHOLD = "spark.sql.execution.arrow.localRelationThreshold"


def polars_to_spark(spark: SparkSession, df: pl.DataFrame) -> SparkDataFrame:
    """A Polars frame as a Spark DataFrame, through Arrow, in about 2 partitions per core.

    Spark 4 embeds Arrow data below ``localRelationThreshold`` (48 MiB) in the query
    plan itself (a ``LocalRelation``); every later query plan, and the cache lookups
    that compare plans, then carry all of its rows, which made each query seconds
    slower on a 351K-establishment table. The threshold is set to 0 for this call so
    the data always live in an RDD.
    """
    table = df.to_arrow(compat_level=pl.CompatLevel.oldest())
    if _spark_major() >= 4:
        old = spark.conf.get(_LOCAL_RELATION_THRESHOLD, None)
        spark.conf.set(_LOCAL_RELATION_THRESHOLD, "0")
        try:
            sdf = spark.createDataFrame(table)
        finally:
            if old is None:
                spark.conf.unset(_LOCAL_RELATION_THRESHOLD)
            else:
                spark.conf.set(_LOCAL_RELATION_THRESHOLD, old)
    else:  # pragma: no cover - Spark 3.5: through pandas (Arrow-enabled)
        sdf = spark.createDataFrame(table.to_pandas())
    # Spark makes one partition per Arrow batch (10,000 rows): merge them (no shuffle;
    # a no-op when there are fewer)
    return sdf.coalesce(max(1, 2 * spark.sparkContext.defaultParallelism))


def _spark_major() -> int:
    import pyspark

    return int(pyspark.__version__.split(".")[0])


#: rows brought to the driver per Spark job by :func:`to_polars` (partitions are grouped
#: up to this many rows; a larger partition comes alone)
CHUNK_ROWS = 1 << 20

_PARTITION = "__eree_partition"


def to_polars(sdf: SparkDataFrame) -> pl.DataFrame:
    """A Spark DataFrame's rows on the driver, as a Polars frame, checked against Spark's count.

    Correct on any cluster: nothing is written to a file system (no driver-local path that
    executors would have to share), and the rows reach the driver through Spark's own
    result channel as Arrow batches. Memory is bounded: the result is kept by Spark
    (``persist``, memory then Spark's own local disk, dropped before returning); one Spark
    job counts its rows per partition; then consecutive partitions are fetched a group
    of up to :data:`CHUNK_ROWS` rows at a time (``toArrow``), so the driver's JVM holds
    one group, never the whole result (a single collect is capped by
    ``spark.driver.maxResultSize`` and held whole in the JVM's heap).

    Every group's rows are checked against Spark's count of its partitions, and the
    total against Spark's count of the result: a mismatch raises, so a partial result is
    never used.

    Raises:
        EngineError: fewer or more rows reached the driver than Spark counted.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as sf

    kept = sdf.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        tagged = kept.withColumn(_PARTITION, sf.spark_partition_id())
        counts = {
            int(r[0]): int(r[1]) for r in tagged.groupBy(_PARTITION).count().collect()
        }  # Spark's own count, per partition of the kept result
        total = sum(counts.values())
        pieces = []
        for lo, hi, expected in partition_groups(counts, CHUNK_ROWS):
            part = tagged.filter(sf.col(_PARTITION).between(lo, hi)).drop(_PARTITION)
            pieces.append(_arrow_frame(part))
            check_rows(pieces[-1].height, expected)
        out = pl.concat(pieces, rechunk=False) if pieces else _arrow_frame(kept.limit(0))
        check_rows(out.height, total)
        return out
    finally:
        kept.unpersist()


def partition_groups(counts: dict[int, int], limit: int) -> list[tuple[int, int, int]]:
    """Consecutive partitions grouped up to ``limit`` rows: (first, last, rows) each.

    ``counts`` holds the rows of each non-empty partition; a partition with more than
    ``limit`` rows is a group of its own.
    """
    groups: list[tuple[int, int, int]] = []
    for p in sorted(counts):
        n = counts[p]
        if groups and groups[-1][2] + n <= limit:
            lo, _, rows = groups[-1]
            groups[-1] = (lo, p, rows + n)
        else:
            groups.append((p, p, n))
    return groups


def check_rows(received: int, counted: int) -> None:
    """Refuse a result whose rows on the driver differ from Spark's count of them.

    The message holds only the two row counts of an intermediate result (cells or
    groups), not of any cell; it never reaches a published file.
    """
    if received != counted:
        from eree.errors import EngineError

        raise EngineError(
            f"a Spark result did not reach the driver whole ({received} rows received, Spark "
            f"counted {counted}); nothing was released: run again, and report it if it recurs"
        )


def _arrow_frame(sdf: SparkDataFrame) -> pl.DataFrame:
    """A (bounded) Spark DataFrame collected through Arrow, as a Polars frame."""
    if hasattr(sdf, "toArrow"):
        table: pa.Table = sdf.toArrow()
        out = pl.from_arrow(table)
        assert isinstance(out, pl.DataFrame)
        return out
    return pl.from_pandas(sdf.toPandas())  # pragma: no cover - Spark 3.5


def read_text_columns(
    spark: SparkSession,
    path: DataPath,
    required: Sequence[str],
    optional: Sequence[str],
    format: str | None,
    key: str | None = None,
    *,
    every_column: bool = False,
    numbers: Sequence[str] = (),
) -> SparkDataFrame:
    """Read ``required`` (+ ``optional`` when present) columns of a table, as strings.

    ``path`` is a local path or a URI (read by Spark alone: :mod:`eree.engine.spark.uri`);
    ``key`` is its ``[data]`` key, named when a URI cannot be reached. With
    ``every_column``, every named column of the table is read (``optional`` then only
    tells a CSV header from a data row). The columns in ``numbers`` may also be stored as
    any number (a Parquet double): read as its text, to be parsed as the Polars loader
    parses it (:func:`eree.engine.spark.checks.number_from_text`).
    """
    from pyspark.sql import functions as sf
    from pyspark.sql.types import (
        IntegralType,
        NumericType,
        StringType,
        StructField,
        StructType,
    )

    from eree.engine.spark import uri as by_uri

    uri = str(path) if is_uri(path) else None
    if uri is not None:
        fmt = format or ("csv" if by_uri.is_csv_name(uri) else "parquet")
    else:
        path = Path(path)
        fmt = format or ("csv" if path.name.lower().endswith((".csv", ".csv.gz")) else "parquet")
    split_small_files(spark)
    if fmt == "csv":
        from eree.data.io import csv_records, read_header

        records: int | None = None
        if uri is not None:  # Spark reads the header and checks the lines
            header = by_uri.uri_csv_header(spark, uri, [*required, *optional], key)
        else:
            assert isinstance(path, Path)
            header = read_header(path, expected=[*required, *optional])  # the Polars path's
            # a file (not a partitioned directory): the Polars reader's checks of its records
            records = csv_records(path, header) if path.is_file() else None
        schema = StructType(
            [StructField(c, StringType()) for c in header] + [StructField(_CORRUPT, StringType())]
        )
        df = (
            spark.read.option("header", True)
            .option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", _CORRUPT)
            .option("enforceSchema", True)
            .schema(schema)
            .csv(str(path))
        )
        # the parser only sees a ragged row when it parses every column: check them all
        counts = df.agg(
            sf.count(sf.col(_CORRUPT)),
            sf.count(sf.lit(1)),
            *[sf.count(sf.col(c)) for c in header],
        ).first()
        assert counts is not None
        if records == 0 or (uri is not None and not counts[1]):
            raise DataValidationError(
                "file has a header but no data rows", file=str(path), rule="no-rows"
            )
        # Spark skips blank lines, which the Polars reader reads as rows of missing values
        if counts[0] or (records is not None and counts[1] != records):
            raise DataValidationError(
                "a row has a different number of fields than the header, or is blank",
                file=str(path),
                rule="unparseable",
            )
    elif fmt == "parquet" and uri is not None:
        df = by_uri.read_uri_parquet(spark, uri, key)
    elif fmt == "parquet":
        from eree.engine.spark.checks import parquet_rows

        assert isinstance(path, Path)
        if path.is_file() and parquet_rows(path) == 0:  # the Polars loader's checks of the file
            raise DataValidationError(
                "file has a header but no data rows", file=str(path), rule="no-rows"
            )
        try:
            df = spark.read.parquet(str(path))
        except Exception as exc:
            raise DataValidationError(
                f"not a readable Parquet file or directory ({type(exc).__name__})",
                file=str(path),
                rule="unparseable",
            ) from None
    else:
        raise SpecError(f"format must be 'parquet' or 'csv', not {fmt!r}")
    present = [c for c in df.columns if c != _CORRUPT]
    missing = [c for c in required if c not in present]
    if missing:
        from eree.data.io import missing_column_error

        raise missing_column_error(str(path), missing, present)  # as the Polars loader
    cols = [*required, *(c for c in optional if c in present and c not in required)]
    if every_column:
        cols = [*required, *(c for c in present if c and c not in required)]
    types = {f.name: f.dataType for f in df.schema.fields}
    out = []
    for c in cols:
        t = types[c]
        if c in numbers and isinstance(t, NumericType):
            out.append(sf.col(c).cast("string").alias(c))
            continue
        if not isinstance(t, StringType | IntegralType):
            raise DataValidationError(
                f"column is stored as {t.simpleString()}, expected text or integer codes",
                file=str(path),
                column=c,
                rule="type",
            )
        out.append(sf.col(c).cast("string").alias(c))
    return df.select(*out)


#: Spark's estimated cost of opening a file, lowered from its 4 MiB default for eree's
#: reads (see :func:`split_small_files`)
OPEN_COST_BYTES = 1 << 20


def split_small_files(spark: SparkSession) -> None:
    """Let Spark split a small input file across the cores.

    Spark sizes file splits at no less than ``spark.sql.files.openCostInBytes`` (4 MiB by
    default), so a well-compressed 4 MB Parquet table with 5.6M jobs was read, and its
    rows shuffled, by one task on a 2-core machine. The session's setting is lowered to
    :data:`OPEN_COST_BYTES` (never raised); large inputs split as before.
    """
    key = "spark.sql.files.openCostInBytes"
    current = str(spark.conf.get(key, None) or "4194304")
    try:
        value = int(current.lower().removesuffix("b"))
    except ValueError:  # a size with a unit ("4m"): leave the user's setting alone
        return
    if value > OPEN_COST_BYTES:
        spark.conf.set(key, str(OPEN_COST_BYTES))
