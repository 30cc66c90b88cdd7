"""Choosing an engine by name (``[engine] kind`` or ``eree protect --engine``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from eree.errors import SpecError

if TYPE_CHECKING:  # pragma: no cover
    from eree.engine.base import Engine

__all__ = ["ENGINES", "make_engine"]

#: engine names
ENGINES = ("polars", "spark")


def make_engine(
    kind: str,
    *,
    cores: int = 2,
    driver_memory: str = "4g",
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
) -> Engine:
    """A new engine of ``kind``.

    Args:
        kind: ``"polars"`` or ``"spark"``.
        cores, driver_memory, master, conf: the Spark session's settings (Spark only; see
            :func:`~eree.engine.spark.session.spark_session`: under spark-submit, or with
            a session already active, that session is used).

    Raises:
        SpecError: an unknown kind, or Spark asked for but not installed.
        EngineError: a Spark setting the session cannot take, Spark Connect, executors
            that cannot run eree's code.
    """
    if kind == "polars":
        from eree.engine.polars.engine import PolarsEngine

        return PolarsEngine()
    if kind == "spark":
        try:
            import pyspark  # noqa: F401
        except ImportError:
            raise SpecError('engine "spark" needs PySpark (install the "spark" extra)') from None
        from eree.engine.spark.engine import SparkEngine
        from eree.engine.spark.session import spark_session

        return SparkEngine(
            spark_session(cores=cores, driver_memory=driver_memory, master=master, conf=conf)
        )
    raise SpecError(f"unknown engine {kind!r}; choose one of {', '.join(ENGINES)}")
