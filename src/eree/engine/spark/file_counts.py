"""Rows per value of a column, counted from Parquet files by PyArrow in Spark tasks.

:func:`value_counts` is the job table's count of jobs per workplace id for the
ordered-id validation (:mod:`eree.engine.spark.validate`): one Spark task per file
reads the column with PyArrow as a dictionary (Parquet stores such ids dictionary
encoded, so no id's text is decoded per row) and counts the rows of each value; Spark
sums the partial counts. Each value is counted as the text Spark reads: a text column's
value as it is, an integer as its decimal text (Spark's cast), a null as null.
PySpark is imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame as SparkDataFrame
    from pyspark.sql import SparkSession

__all__ = ["value_counts"]


def value_counts(
    spark: SparkSession, files: Sequence[str], col: str, value: str, count: str
) -> SparkDataFrame:
    """Per value of column ``col`` of the Parquet ``files``, its rows (one row per value).

    Columns: ``value`` (text, null for the null value) and ``count`` (long). Every row
    of every file is counted once: the counts sum to the files' rows. The caller knows
    that PyArrow can read the files (:func:`~eree.engine.spark.id_order.twin_files_in_order`
    read them); a column of another type than text or integers fails the Spark job.
    """
    from pyspark.sql import functions as sf

    schema = f"`{value}` string, `{count}` long"

    def counts(batches: Any) -> Any:  # in a Spark task: one file per input row
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.fs as pafs
        import pyarrow.parquet as pq

        out = pa.schema([(value, pa.large_string()), (count, pa.int64())])
        for b in batches:
            for uri in b.column(0).to_pylist():
                fs, path = pafs.FileSystem.from_uri(uri)
                with fs.open_input_file(path) as fh:
                    pf = pq.ParquetFile(fh, read_dictionary=[col])
                    for rows in pf.iter_batches(columns=[col], batch_size=1 << 20):
                        a = rows.column(0)
                        if not pa.types.is_dictionary(a.type):  # e.g. integers
                            a = pc.dictionary_encode(a)
                        words = a.dictionary
                        if pa.types.is_integer(words.type) or pa.types.is_string(words.type):
                            words = pc.cast(words, pa.large_string())
                        elif not pa.types.is_large_string(words.type):
                            raise TypeError(f"column {col!r} is not text or integers")
                        nulls = a.null_count
                        idx = a.indices.drop_null().to_numpy(zero_copy_only=False)
                        per = np.bincount(idx, minlength=len(words))
                        seen = np.flatnonzero(per)
                        vals, ns = words.take(pa.array(seen)), per[seen]
                        if nulls:
                            vals = pa.concat_arrays([vals, pa.nulls(1, pa.large_string())])
                            ns = np.append(ns, nulls)
                        yield pa.RecordBatch.from_arrays([vals, pa.array(ns, pa.int64())],
                                                         schema=out)  # fmt: skip

    n = min(len(files), 4 * max(1, spark.sparkContext.defaultParallelism))
    paths = spark.sparkContext.parallelize([(f,) for f in files], max(1, n)).toDF("uri string")
    return paths.mapInArrow(counts, schema).groupBy(value).agg(sf.sum(count).alias(count))
