"""Reading a table given by URI (``file://``, ``hdfs://``, ``s3a://``, …) with Spark alone.

See docs/spark-cluster.md#inputs-by-uri.

A URI names data the executors read through a Hadoop file system; the driver may not
see it at all, so nothing of it is read by Python: the CSV header is the first line as
Spark reads it (:func:`uri_csv_header`), checked by the rules of a local file
(:func:`eree.data.io.csv_header`), and the record checks Python makes of a local CSV
(blank lines, UTF-8) are Spark aggregations over the file's lines. A failure to reach
the data (no such path, no file system for the scheme, an unknown host) is one line
naming the ``[data]`` key, the URI and the remedy (:func:`uri_read_error`); Spark's own
message is never shown. PySpark is imported inside the functions.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from eree.data.location import uri_name, uri_scheme
from eree.errors import DataValidationError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame as SparkDataFrame
    from pyspark.sql import SparkSession

__all__ = ["is_csv_name", "read_uri_parquet", "uri_csv_header", "uri_read_error"]

_CSV_NAMES = (".csv", ".csv.gz")

#: what a cluster needs to read each scheme (docs/spark-cluster.md#inputs-by-uri)
_REMEDY = {
    "s3a": "add org.apache.hadoop:hadoop-aws (the version of Spark's Hadoop) to [spark.conf] "
    '"spark.jars.packages" (or spark-submit --packages), with S3 credentials in the '
    "cluster's configuration",
    "s3": "on open-source Spark use s3a:// with org.apache.hadoop:hadoop-aws in [spark.conf] "
    '"spark.jars.packages" (s3:// is the scheme of EMR\'s own file system)',
    "gs": "add the Cloud Storage connector (com.google.cloud.bigdataoss:gcs-connector) to "
    '[spark.conf] "spark.jars.packages" or run where it is installed (Dataproc)',
    "abfss": 'add org.apache.hadoop:hadoop-azure to [spark.conf] "spark.jars.packages" or '
    "run where it is installed (Azure Databricks, HDInsight)",
    "hdfs": "run where HDFS is configured (HADOOP_CONF_DIR, or under spark-submit on the cluster)",
}
_REMEDY["abfs"] = _REMEDY["wasbs"] = _REMEDY["wasb"] = _REMEDY["abfss"]
_REMEDY["s3n"] = _REMEDY["s3"]

#: Hadoop's errors for a scheme it has no file system for: no class configured for the
#: scheme, or the configured class (Hadoop's defaults name S3A's, GCS's, …) not on the
#: classpath
_NO_FILESYSTEM = re.compile(r'No FileSystem for scheme "?([A-Za-z0-9+.\-]+)"?')
_FILESYSTEM_CLASS = re.compile(r"ClassNotFoundException: Class [\w.$]+FileSystem not found")


def is_csv_name(uri: str) -> bool:
    """Whether a URI names CSV by its suffix (else it is read as Parquet)."""
    return uri_name(uri).lower().endswith(_CSV_NAMES)


def _java_text(exc: BaseException) -> str:
    """The exception's text with its Java cause chain (never shown: matched only)."""
    parts = [str(exc)]
    java = getattr(exc, "java_exception", None)
    try:
        while java is not None:
            parts.append(f"{java.getClass().getName()}: {java.getMessage()}")
            java = java.getCause()
    except Exception:  # pragma: no cover - a gateway gone: the text so far
        pass
    return "\n".join(parts)


def uri_read_error(exc: BaseException, uri: str, key: str | None) -> DataValidationError:
    """The one-line error for Spark failing to reach ``uri``; Spark's message never shown.

    Args:
        exc: what Spark raised.
        uri: the input (or the inputs, comma-separated) the error names.
        key: the ``[data]`` key of the input, or ``None`` when it is not known.
    """
    text = _java_text(exc)
    where = f"{key}: " if key else ""
    m = _NO_FILESYSTEM.search(text)
    missing_class = _FILESYSTEM_CLASS.search(text)
    if m or missing_class:
        scheme = m.group(1).lower() if m else (uri_scheme(uri) or "?")
        remedy = _REMEDY.get(scheme, f"add the Hadoop file system of {scheme}:// to Spark's "
                             'classpath ([spark.conf] "spark.jars.packages")')  # fmt: skip
        why = f"{where}Spark has no file system for {scheme}:// on its classpath: {remedy}"
        return DataValidationError(why, file=uri, rule="uri-scheme")
    if "PATH_NOT_FOUND" in text or "FileNotFoundException" in text:
        return DataValidationError(f"{where}not found", file=uri, rule="file-missing")
    if "UnknownHostException" in text:
        return DataValidationError(
            f"{where}the URI's host is unknown to Spark (check the name, or run where "
            "the cluster's configuration names it)",
            file=uri,
            rule="uri-host",
        )
    if "ConnectException" in text or "ConnectTimeoutException" in text:
        return DataValidationError(
            f"{where}Spark cannot connect to the URI's host (check the host and port)",
            file=uri,
            rule="uri-host",
        )
    if "AccessDenied" in text or "AccessControlException" in text or "403" in text:
        return DataValidationError(
            f"{where}Spark was refused access (check the cluster's credentials)",
            file=uri,
            rule="file-missing",
        )
    return DataValidationError(
        f"{where}Spark could not read it ({type(exc).__name__}); check the URI and that "
        "every executor can reach it",
        file=uri,
        rule="spark-read",
    )


def read_uri_parquet(spark: SparkSession, uri: str, key: str | None) -> SparkDataFrame:
    """The Parquet table (file or directory of parts) at ``uri``, as Spark reads it.

    Raises:
        DataValidationError: the data cannot be reached (:func:`uri_read_error`).
    """
    try:
        return spark.read.parquet(uri)
    except Exception as exc:
        raise uri_read_error(exc, uri, key) from None


def uri_csv_header(
    spark: SparkSession, uri: str, expected: Sequence[str], key: str | None
) -> list[str]:
    """The header of the CSV at ``uri`` read by Spark, checked as a local file's is.

    The header is the first line as Spark reads it, parsed as a CSV record and checked
    by :func:`eree.data.io.csv_header`. Then what Python checks of a local CSV's lines is
    counted by Spark over every line: a blank line (Spark's CSV reader skips it, the
    local reader reads it as a row and refuses it) and text that is not UTF-8 (Spark
    reads it as U+FFFD, the local reader refuses it).

    Args:
        spark: the session.
        uri: the file (or a directory of part files, each with its header line).
        expected: the columns the caller needs (a first line naming none of them is not
            taken for a header, and none of its fields is shown).
        key: the ``[data]`` key, named by a failure to reach the data.

    Raises:
        DataValidationError: the data cannot be reached (:func:`uri_read_error`); the
            header errors of a local file; a blank line; text that is not UTF-8.
    """
    from pyspark.sql import functions as sf

    from eree.data.io import csv_header

    try:
        lines = spark.read.text(uri)
        first = lines.limit(1).collect()
    except Exception as exc:
        raise uri_read_error(exc, uri, key) from None
    record = None
    if first:
        line = str(first[0][0] or "").removeprefix("\ufeff")  # as the local reader, utf-8-sig
        try:
            record = next(csv.reader([line], strict=True), [])
        except csv.Error:
            raise DataValidationError(
                "malformed CSV (check quoting)", file=uri, rule="unparseable"
            ) from None
    header = csv_header(record, uri, expected)
    value = sf.col("value")
    counts = lines.agg(
        sf.sum(sf.when(value.rlike(r"^[\x00-\x20]*$"), 1).otherwise(0)),
        sf.sum(sf.when(value.contains("\ufffd"), 1).otherwise(0)),
    ).first()
    assert counts is not None
    if counts[1]:
        raise DataValidationError("not UTF-8 text", file=uri, rule="unparseable")
    if counts[0]:
        raise DataValidationError(
            "a row has a different number of fields than the header, or is blank",
            file=uri,
            rule="unparseable",
        )
    return header
