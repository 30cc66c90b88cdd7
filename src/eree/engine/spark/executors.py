"""What eree's code needs on Spark executors, checked before a release reads any data.

The Python that runs on executors (the ordered-id proof of
:mod:`eree.engine.spark.id_order`, through ``mapInArrow``) is defined inside eree's
functions, so Spark ships it by value with each task: executors need neither eree nor
the driver's files. They need a Python of the driver's version (PySpark's rule) with
PyArrow and NumPy. :func:`check_executors` runs one small job that reports, per task,
what its Python lacks, and refuses the release in one line naming the remedy; without
it, a missing module surfaced only after four failing attempts of a task, deep in a
release.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from eree.errors import EngineError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ["EXECUTOR_MODULES", "check_executors"]

#: the modules eree's code imports on executors
EXECUTOR_MODULES = ("pyarrow", "numpy")

#: the applications already checked in this process (by Spark application id)
_checked: set[str] = set()

_REMEDY = (
    'install them there, or name a Python that has them with [spark.conf] "spark.pyspark.'
    'python" (or --conf spark.pyspark.python=PATH; an environment shipped with '
    "spark.archives works too)"
)


def check_executors(spark: SparkSession) -> None:
    """Refuse, in one line, executors whose Python cannot run eree's code.

    One task per default-parallelism slot imports :data:`EXECUTOR_MODULES` and reports
    the Python version and what failed; nothing of the data is involved. Run once per
    Spark application.

    Raises:
        EngineError: a module is missing on an executor, its Python's version differs
            from the driver's, or Python could not be started there at all.
    """
    sc = spark.sparkContext
    if sc.applicationId in _checked:
        return
    modules = EXECUTOR_MODULES

    def probe(_):  # type: ignore[no-untyped-def]  # shipped by value: no eree needed there
        import importlib
        import sys as s

        lacking = []
        for m in modules:
            try:
                importlib.import_module(m)
            except Exception:
                lacking.append(m)
        yield (f"{s.version_info[0]}.{s.version_info[1]}", tuple(lacking))

    n = max(1, sc.defaultParallelism)
    try:
        found = sc.parallelize(range(n), n).mapPartitions(probe).collect()
    except Exception as e:
        raise EngineError(
            f"the Spark executors could not run Python ({type(e).__name__}): they need "
            f"Python {sys.version_info.major}.{sys.version_info.minor} (the driver's) with "
            f"{', '.join(modules)}; {_REMEDY}"
        ) from None
    lacking = sorted({m for _, missing in found for m in missing})
    if lacking:
        raise EngineError(
            f"the Spark executors' Python cannot import {', '.join(lacking)} (eree's checks "
            f"run there); {_REMEDY}"
        )
    _checked.add(sc.applicationId)
