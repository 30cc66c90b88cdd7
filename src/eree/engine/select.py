"""Choosing an engine by name (``[engine] kind`` or ``eree protect --engine``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eree.errors import SpecError

if TYPE_CHECKING:  # pragma: no cover
    from eree.engine.base import Engine

__all__ = ["ENGINES", "make_engine"]

#: engine names
ENGINES = ("polars", "spark")


def make_engine(kind: str, *, cores: int = 2, driver_memory: str = "4g") -> Engine:
    """A new engine of ``kind``.

    Args:
        kind: ``"polars"`` or ``"spark"``.
        cores, driver_memory: settings of the local Spark session started when no
            session is active (Spark only).

    Raises:
        SpecError: an unknown kind, or Spark asked for but not installed.
    """
    if kind == "polars":
        from eree.engine.polars.engine import PolarsEngine

        return PolarsEngine()
    if kind == "spark":
        try:
            from pyspark.sql import SparkSession
        except ImportError:
            raise SpecError('engine "spark" needs PySpark (install the "spark" extra)') from None
        from eree.engine.spark.engine import SparkEngine
        from eree.engine.spark.session import spark_session

        active = SparkSession.getActiveSession()
        return SparkEngine(active or spark_session(cores=cores, driver_memory=driver_memory))
    raise SpecError(f"unknown engine {kind!r}; choose one of {', '.join(ENGINES)}")
