"""A local Spark session for a small machine, and what a Spark failure becomes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from eree.errors import DataValidationError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ["is_spark_failure", "spark_input_error", "spark_session"]


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


def is_spark_failure(e: BaseException) -> bool:
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
