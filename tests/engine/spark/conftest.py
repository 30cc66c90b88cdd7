"""The Spark session the engine's tests share (one local JVM per test process)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def spark():
    """A local Spark session, or the test skipped where Spark cannot start.

    The session is left running: other modules may use it; the JVM ends with pytest.
    """
    pytest.importorskip("pyspark")
    from eree.engine.spark.session import spark_session

    try:
        return spark_session(app="eree-tests", cores=2)
    except Exception as exc:  # no Java, no loopback, ...
        pytest.skip(f"Spark cannot start here: {type(exc).__name__}")
