"""Mapping one function over independent units: in this process, in worker processes, on Spark.

The record reconstruction (:mod:`eree.evaluate.reconstruct.records`) is a map: each unit's
published cells go in (``UnitCells``, plain arrays), its records come out
(``UnitRecords``), and no unit reads another's; so is the WAC coarsening
(:mod:`eree.suppression.coarsening.jobs`, chunks of blocks). A mapper is the one place
that knows where the work runs, so the per-unit function is the same whichever runs it
(the map-over-partitions shape of PipelineDP's backends):

=====================  ==========================================================
mapper                 runs ``fn`` over the items
=====================  ==========================================================
:class:`SerialMap`     in this process, in order
:class:`ProcessMap`    in ``workers`` processes (``multiprocessing``, spawn-safe:
                       ``fn`` must be picklable — a module-level function or a
                       ``functools.partial`` of one), results in the items' order
:class:`SparkMap`      as a Spark job (``sc.parallelize(items).map(fn)``) on the
                       given session's cluster; the executors import eree
=====================  ==========================================================

Every mapper yields the results in the items' order, so the output does not depend on
the mapper (a test checks the process map against the serial one).

:class:`ProcessMap` starts its workers with ``spawn``: a script that uses it must keep
its work under ``if __name__ == "__main__":`` (the ``eree`` command does). Its workers
end when the process that started them dies, even by ``kill -9``
(:mod:`eree.engine.parent_watch`). On Spark the
executors' Python must have eree and its dependencies (``PYSPARK_PYTHON``).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, TypeVar

from eree.engine.parent_watch import exit_with_parent

__all__ = ["ProcessMap", "SerialMap", "SparkMap", "UnitMapper"]

T = TypeVar("T")
R = TypeVar("R")


class UnitMapper(Protocol):
    """Maps a function over independent items, yielding results in the items' order."""

    @property
    def workers(self) -> int:
        """How many workers run the map (for the record of a run)."""
        ...

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``fn(item)`` for every item, in order."""
        ...


class SerialMap:
    """In this process."""

    workers = 1

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``fn(item)`` for every item, in order."""
        for it in items:
            yield fn(it)


class ProcessMap:
    """In ``workers`` processes of this machine (``chunksize`` items per task)."""

    def __init__(self, workers: int = 2, chunksize: int = 64) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self._workers = workers
        self.chunksize = chunksize

    @property
    def workers(self) -> int:
        """Worker processes."""
        return self._workers

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``fn(item)`` for every item, in order, computed by the worker processes."""
        ctx = multiprocessing.get_context("spawn")
        # a worker ends when this process dies, even by kill -9 (engine/parent_watch.py)
        with ctx.Pool(self._workers, exit_with_parent, (os.getpid(),)) as pool:
            yield from pool.imap(fn, items, chunksize=self.chunksize)


class SparkMap:
    """As a Spark job on ``spark``'s cluster (``slices`` partitions; default 4 per core)."""

    def __init__(self, spark: Any, slices: int | None = None) -> None:
        self.spark = spark
        self.slices = slices

    @property
    def workers(self) -> int:
        """Spark's default parallelism."""
        return int(self.spark.sparkContext.defaultParallelism)

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``fn(item)`` for every item, in order, computed by Spark's executors."""
        data = list(items)
        if not data:
            return iter(())
        n = self.slices or max(1, min(len(data), 4 * self.workers))
        rdd = self.spark.sparkContext.parallelize(data, n)
        return iter(rdd.map(fn).collect())
