"""The Spark session eree runs on (local, a cluster, or spark-submit's); Spark failures.

:func:`spark_session` gives the session; :func:`is_spark_failure` and
:func:`spark_input_error` turn a Spark failure into eree's one-line error.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from eree.data.location import DataPath, is_uri
from eree.errors import DataValidationError, EngineError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = [
    "is_local",
    "is_spark_failure",
    "refuse_spark_connect",
    "spark_input_error",
    "spark_session",
]

#: log4j's configuration for a session eree starts: nothing from Spark on the console
QUIET_LOGGING = Path(__file__).with_name("log4j2-quiet.properties")

#: settings eree gives every session it starts (the SQL ones also to a session it reuses)
_ALWAYS = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
}


def is_local(master: str) -> bool:
    """Whether ``master`` runs the executors inside the driver's process (``local…``)."""
    return master == "local" or master.startswith("local[")


def spark_session(
    app: str = "eree",
    cores: int = 2,
    *,
    driver_memory: str = "2g",
    shuffle_partitions: int | None = None,
    conf: Mapping[str, str] | None = None,
    master: str | None = None,
) -> SparkSession:
    """The session a release runs on: spark-submit's or the active one, else a new one.

    * Under ``spark-submit`` (the production path on a cluster) or when this process has
      an active session, that session is used: its master and settings are the ones it
      was started with. A ``master`` that differs from it is refused; of ``conf``, only
      settings Spark lets a running session change are applied, the others refused.
    * Otherwise a new session is started with ``master`` (default ``local[cores]``).
      Local: Spark UI off, driver bound to 127.0.0.1, ``spark.sql.shuffle.partitions =
      2·cores`` (Spark's default of 200 is meant for clusters; adaptive query execution
      stays on and coalesces further). A cluster: Spark's defaults and ``conf``.
      ``spark.pyspark.python`` in ``conf`` names the executors' Python (as spark-submit
      reads it: this process's ``PYSPARK_PYTHON`` is set to it); a local master without
      it (and without ``PYSPARK_PYTHON``) runs this interpreter. Its log4j configuration
      (``log4j2-quiet.properties`` beside this module) prints nothing from the JVM's first
      line on, so a failed release's stderr is eree's one line (the JVM's own notice of
      its incubator module aside).

    Always: console progress bars off, Arrow transfers on, UTC session time zone, the
    log level OFF (Spark's logs of a failed task quote input values; eree turns every
    failure into its own one-line error), ``conf`` applied last. On a cluster the
    executors' Python is checked once (:func:`~eree.engine.spark.executors.check_executors`).
    Spark Connect is refused (:func:`refuse_spark_connect`).

    Args:
        app: application name.
        cores: local worker threads (local masters).
        driver_memory: JVM heap of the driver (which, in local mode, runs the tasks too).
        shuffle_partitions: overrides ``2·cores`` (local masters).
        conf: further Spark settings (checked by
            :func:`~eree.engine.spark.settings.check_conf`), applied last.
        master: Spark master URL (:func:`~eree.engine.spark.settings.check_master`).

    Returns:
        The session.

    Raises:
        EngineError: Spark Connect; a master or setting the running session cannot take;
            executors that cannot run eree's code.
    """
    from pyspark.sql import SparkSession

    from eree.engine.spark.executors import check_executors

    if cores < 1:
        raise ValueError("cores must be at least 1")
    refuse_spark_connect()
    conf = dict(conf or {})
    active = SparkSession.getActiveSession()
    if active is not None or "PYSPARK_GATEWAY_PORT" in os.environ:  # spark-submit's JVM
        spark = active or SparkSession.builder.appName(app).getOrCreate()
        refuse_spark_connect(spark)
        running = str(spark.sparkContext.master)
        if master is not None and master != running:
            raise EngineError(
                f"the master is {master} but this process already runs Spark with master "
                f"{running} (spark-submit or an earlier session): drop the master setting "
                "or make it equal"
            )
        for key, value in {**_ALWAYS, **conf}.items():
            if spark.conf.isModifiable(key):
                spark.conf.set(key, value)
            elif key in conf and spark.conf.get(key, None) != value:
                raise EngineError(
                    f'the Spark setting "{key}" cannot change in the running session '
                    "(spark-submit or an earlier session): give it to spark-submit --conf"
                )
    else:
        url = master or f"local[{cores}]"
        settings = {"spark.driver.memory": driver_memory, **_ALWAYS}
        if is_local(url):
            settings.update({
                "spark.ui.enabled": "false",
                "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1",
                "spark.sql.shuffle.partitions": str(shuffle_partitions or 2 * cores),
                "spark.default.parallelism": str(2 * cores),
            })  # fmt: skip
        settings.update(conf)
        if "spark.pyspark.python" in conf:
            # PySpark reads the executors' Python from the environment, as spark-submit
            # sets it from this setting; a session started here does the same
            os.environ["PYSPARK_PYTHON"] = conf["spark.pyspark.python"]
        elif is_local(url) and "PYSPARK_PYTHON" not in os.environ:
            # local Python workers run on this machine: this interpreter, which has eree's
            # dependencies (PySpark's default, `python3` on the PATH, need not: a virtual
            # environment run without activating it)
            os.environ["PYSPARK_PYTHON"] = sys.executable
        builder = SparkSession.builder.master(url).appName(app)
        for k, v in settings.items():
            builder = builder.config(k, v)
        # quiet from the JVM's first line: without a configuration of its own, log4j prints
        # Spark's start-up warnings before setLogLevel below can act. Given through the
        # launcher's environment (spark.driver.extraJavaOptions would make the JVM warn
        # about its incubator modules); a user's own -Dlog4j2.configurationFile in
        # spark.driver.extraJavaOptions comes later on the command line and wins.
        before = os.environ.get("SPARK_SUBMIT_OPTS")
        quiet = f"-Dlog4j2.configurationFile={QUIET_LOGGING.as_uri()}"
        os.environ["SPARK_SUBMIT_OPTS"] = f"{before} {quiet}" if before else quiet
        if not is_local(url):  # Spark waits a minute and more for a silent master
            from eree.engine.spark.settings import check_master_reachable

            check_master_reachable(url)
        try:
            with _jvm_stderr_silenced():
                spark = builder.getOrCreate()
        except Exception as e:  # the JVM did not start, or stopped at once
            why = "the JVM refused the settings or exited"
            if not is_local(url):
                why = f"the master did not take the application, or {why}"
            raise EngineError(
                f"Spark could not start with master {url} ({type(e).__name__}): {why}; "
                "check [spark] master, driver_memory, [spark.conf] and Java 17"
            ) from None
        finally:
            if before is None:
                os.environ.pop("SPARK_SUBMIT_OPTS", None)
            else:
                os.environ["SPARK_SUBMIT_OPTS"] = before
    spark.sparkContext.setLogLevel("OFF")
    import logging

    logging.getLogger("DataFrameQueryContextLogger").disabled = True
    if not is_local(str(spark.sparkContext.master)):
        check_executors(spark)
    return spark


@contextlib.contextmanager
def _jvm_stderr_silenced() -> Iterator[None]:
    """Start the JVM with its standard error on the null device.

    The JVM inherits the process's standard error when it starts: its own messages ("Could
    not create the Java Virtual Machine", its notice of incubator modules, a crash
    report, what the Python workers it starts print) would come before or instead of
    eree's one line, and a worker's message may quote input. eree reports every Spark
    failure in its own line; this process's standard error is restored at once.
    """
    sys.stderr.flush()
    null = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(2)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def refuse_spark_connect(spark: SparkSession | None = None) -> None:
    """Refuse Spark Connect (``SPARK_REMOTE``, or a Connect session), in one line.

    eree's engine drives Spark through the classic API (its own session, the executors'
    check, Spark's result channel); a Connect client has none of these.
    """
    connect = spark is not None and type(spark).__module__.startswith("pyspark.sql.connect")
    if connect or os.environ.get("SPARK_REMOTE") or os.environ.get("SPARK_CONNECT_MODE_ENABLED"):
        raise EngineError(
            "Spark Connect (SPARK_REMOTE) is not supported by eree's Spark engine: unset "
            "SPARK_REMOTE and give the cluster's master ([spark] master or --master), or "
            "run eree under spark-submit"
        )


def is_spark_failure(e: BaseException) -> bool:
    """An exception raised by Spark itself (PySpark or the JVM through py4j)."""
    return type(e).__module__.split(".")[0] in ("pyspark", "py4j")


def spark_input_error(
    e: BaseException, exact_check: Callable[[], object], paths: Sequence[DataPath]
) -> Exception:
    """The error to raise when Spark fails, or finds a fault, reading and checking input.

    Spark's messages quote the offending value (confidential), so they are never shown.
    The Polars loader checks the same input and names file, row and column without the
    value, so an input fault reads the same on both engines: its error is the one raised
    (only on this failure path; for partitioned directories, which it does not read, the
    Spark check's own error stays). If it finds nothing, a generic line says so. Input
    given by URI is never read by Python: the Spark check's own error stays, and a
    failure of Spark's is translated by :func:`~eree.engine.spark.uri.uri_read_error`.
    """
    from eree.errors import EreeError

    files = ", ".join(str(p) for p in paths)
    if any(is_uri(p) for p in paths):  # read by Spark alone: Python reads nothing of it
        if isinstance(e, EreeError):
            return e
        from eree.engine.spark.uri import uri_read_error

        return uri_read_error(e, files, None)
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
