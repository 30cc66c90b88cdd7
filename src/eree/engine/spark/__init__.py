"""The Spark engine: the engine contract on PySpark (:mod:`eree.engine.spark.engine`).

PySpark is imported lazily (inside functions), so :mod:`eree` works without it; install
the ``spark`` extra to use these modules.
"""
