"""An ER-EE dataset coded for queries in Spark, and the flags a query raises on.

Once per dataset Spark codes the data: per establishment (keyed by its workplace id) and
combination of worker attribute indexes (each value's index in its declared domain), the
number of jobs, with the establishment's attributes and size (its jobs, for truncation)
beside it; and the workplaces with their sizes. Both are hash-partitioned by
establishment and cached (:class:`CodedData`). A query then gives each coded row its
worker code and its flags (:func:`worker_code_and_flags`): an unknown workplace or a
worker attribute outside its domain, raised as errors on the driver
(:func:`raise_on_flags`); no row is ever dropped silently.

PySpark is imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from eree.data.schema import WORKPLACE_ID
from eree.errors import SpecError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column
    from pyspark.sql import DataFrame as SparkDataFrame

__all__ = [
    "FLAGS",
    "N_JOBS",
    "SIZE",
    "WORKER_CODE",
    "WORKPLACE_KEY",
    "CodedData",
    "code_dataset",
    "code_frames",
    "code_type",
    "domain_index",
    "raise_on_flags",
    "worker_code_and_flags",
]

# internal column names (prefixed so they cannot collide with attribute names)
#: a query's worker code of a coded row
WORKER_CODE = "__eree_d"
#: the number of jobs of a coded row
N_JOBS = "__eree_n"
#: the establishment's size (its jobs)
SIZE = "__eree_size"
#: a query's flags of a coded row (see :func:`worker_code_and_flags`)
FLAGS = "__eree_flag"
#: the establishment (its workplace id)
WORKPLACE_KEY = "__eree_w"

_UNKNOWN_WORKPLACE = 1  # bit of FLAGS; bit i+1 marks worker attribute i outside its domain


@dataclass(frozen=True)
class CodedData:
    """A dataset coded for queries (the Spark twin of the Polars engine's coded jobs).

    Both frames are hash-partitioned by ``WORKPLACE_KEY`` into the same number of
    partitions, so the per-establishment group-by and the join to the workplaces need no
    shuffle.
    """

    # WORKPLACE_KEY, workplace attributes (strings), SIZE
    workplaces: SparkDataFrame
    # WORKPLACE_KEY (null: unknown workplace), per coded attribute its index, N_JOBS (jobs
    # of the row)
    jobs: SparkDataFrame
    cached: tuple[SparkDataFrame, ...] = ()  # held in Spark's cache: dropped by release()
    #: each row of ``jobs`` is one establishment's jobs, and no attribute is coded
    one_row_per_establishment: bool = False

    def unpersist(self) -> None:
        """Drop the cached frames."""
        for df in self.cached:
            df.unpersist()


def code_type(size: int) -> str:
    """The smallest Spark integer type for the indexes of a domain of ``size`` values."""
    return "byte" if size <= 127 else "short" if size <= 32767 else "int"


def domain_index(a: str, domain: Sequence[str]) -> Column:
    """Index of column ``a``'s value in ``domain``; null when outside (or missing)."""
    from pyspark.sql import functions as sf

    if not domain:
        return sf.lit(None).cast("long")
    idx = sf.when(sf.col(a) == sf.lit(domain[0]), sf.lit(0))
    for j, v in enumerate(domain[1:], start=1):
        idx = idx.when(sf.col(a) == sf.lit(v), sf.lit(j))
    return idx


def code_frames(
    workplaces: SparkDataFrame,
    contrib: SparkDataFrame,
    wattrs: Sequence[str],
    kattrs: Sequence[str],
    *,
    persist: bool = True,
    suspect: str | None = None,
) -> tuple[SparkDataFrame, SparkDataFrame]:
    """The coded dataset from workplace rows and per-establishment job counts.

    Both inputs are hash-partitioned by ``WORKPLACE_KEY`` into the same number of
    partitions (``workplaces``: ``WORKPLACE_KEY`` + attributes [+ more]; ``contrib``:
    ``WORKPLACE_KEY``, worker attribute indexes [+ ``suspect``], ``N_JOBS``), so every
    step here is local to a partition.

    Args:
        suspect: the name of ``contrib``'s boolean column marking rows that break an
            input rule (the fused validation's), or ``None``. A job whose workplace is
            missing from the workplace table is marked in it too.

    Returns:
        ``workplaces`` with ``SIZE`` (the establishment's jobs; 0 without any), and the
        contributions with each establishment's attributes and ``SIZE`` beside them
        (null: a job's workplace is missing from the workplace table). With ``persist``
        both are cached (and materialised by the caller's first action).
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as sf

    sizes = contrib.groupBy(WORKPLACE_KEY).agg(sf.sum(N_JOBS).alias(SIZE))
    coded_wp = workplaces.join(sizes.hint("shuffle_hash"), on=WORKPLACE_KEY, how="left").fillna(
        0, subset=[SIZE]
    )
    if persist:
        coded_wp = coded_wp.persist(StorageLevel.MEMORY_AND_DISK)
    wp = coded_wp.select(WORKPLACE_KEY, *wattrs, SIZE).hint("shuffle_hash")
    joined = contrib.join(wp, on=WORKPLACE_KEY, how="left")
    cols: list[str | Column] = [WORKPLACE_KEY, *wattrs, SIZE, *kattrs, N_JOBS]
    if suspect is not None:
        unknown = sf.col(SIZE).isNull()
        cols.insert(-1, (sf.col(suspect) | unknown).alias(suspect))
    coded_jobs = joined.select(*cols)
    if persist:
        coded_jobs = coded_jobs.persist(StorageLevel.MEMORY_AND_DISK)
    return coded_wp, coded_jobs


def code_dataset(
    workplaces: SparkDataFrame,
    jobs: SparkDataFrame,
    domains: Mapping[str, Sequence[str]],
    *,
    n_parts: int,
    persist: bool,
) -> CodedData:
    """Code a dataset's two tables for queries (when loading did not code them).

    Every worker attribute of ``jobs`` with a declared domain becomes its index in the
    domain (null when outside); the jobs are counted per establishment and combination
    of indexes; those counts and the workplaces are hash-partitioned by establishment
    into ``n_parts`` partitions (:func:`code_frames`). With ``persist`` the result is
    cached and materialised here.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as sf

    coded = [a for a in jobs.columns if a != WORKPLACE_ID and a in domains]
    # per establishment (keyed by its id) and worker attribute indexes, its jobs
    contrib = (
        jobs.groupBy(
            sf.col(WORKPLACE_ID).alias(WORKPLACE_KEY),
            *[domain_index(a, domains[a]).cast(code_type(len(domains[a]))).alias(a) for a in coded],
        )
        .agg(sf.count(sf.lit(1)).alias(N_JOBS))
        .repartition(n_parts, WORKPLACE_KEY)
    )
    wp = workplaces.withColumnRenamed(WORKPLACE_ID, WORKPLACE_KEY).repartition(
        n_parts, WORKPLACE_KEY
    )
    wattrs = [c for c in wp.columns if c != WORKPLACE_KEY]
    if persist:
        contrib = contrib.persist(StorageLevel.MEMORY_AND_DISK)
    coded_wp, coded_jobs = code_frames(wp, contrib, wattrs, coded, persist=persist)
    if persist:
        coded_jobs.count()
        coded_wp.count()
        contrib.unpersist()
    cached = (coded_wp, coded_jobs) if persist else ()
    return CodedData(workplaces=coded_wp, jobs=coded_jobs, cached=cached)


def worker_code_and_flags(worker_by: Sequence[str], sizes: Sequence[int]) -> tuple[Column, Column]:
    """A coded row's worker code and flags for a query over ``worker_by``.

    The worker code is the mixed-radix index of the attributes' indexes in their declared
    domains (``sizes``; the first attribute varies slowest, as in the Polars engine). The
    flags: bit 0 an unknown workplace, bit i+1 worker attribute i outside its domain
    (read by :func:`raise_on_flags`).
    """
    from pyspark.sql import functions as sf

    code: Column = sf.lit(0).cast("long")
    flag: Column = sf.when(sf.col(SIZE).isNull(), sf.lit(_UNKNOWN_WORKPLACE)).otherwise(0)
    for i, (a, size) in enumerate(zip(worker_by, sizes, strict=True)):
        code = code * sf.lit(size) + sf.coalesce(sf.col(a).cast("long"), sf.lit(0))
        flag = flag.bitwiseOR(sf.when(sf.col(a).isNull(), sf.lit(1 << (i + 1))).otherwise(0))
    return code, flag


def raise_on_flags(cells: pl.DataFrame, worker_by: Sequence[str]) -> None:
    """Raise the error of the first kind of flag set in the collected cells' ``FLAGS``."""
    flags = cells[FLAGS]
    if not (flags != 0).any():
        return
    any_flag = int(np.bitwise_or.reduce(flags.to_numpy().astype(np.int64)))
    if any_flag & _UNKNOWN_WORKPLACE:
        raise SpecError("a job points at a workplace missing from the workplace table")
    bad = [a for i, a in enumerate(worker_by) if any_flag & (1 << (i + 1))]
    raise SpecError(
        f"worker attribute(s) {bad} have values missing or outside their declared domain"
    )
