"""Proofs about id columns without a join: order, and lanes of hashes (Spark).

:func:`ids_in_order` proves the ids of a column present and distinct from their order in
the files, as Spark reads the rows; :func:`files_in_order` proves the same from the
Parquet files themselves, read by PyArrow in Spark tasks (no row passes through Spark's
JVM), and :func:`twin_files_in_order` compares in the same pass another table's files
with them, id for id; :func:`id_lanes` sums keyed 64-bit hashes of a column's ids (its *lanes*):
two multisets of ids of the same size with equal lanes are equal but by chance (about
2⁻⁶⁴ per key for ids not crafted against xxHash64 under a key they cannot know). The
ordered-id validation of :mod:`eree.engine.spark.validate` rests on the order, and on
twin files or lanes.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any, NamedTuple

from eree.engine.spark.checks import missing

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, SparkSession
    from pyspark.sql import DataFrame as SparkDataFrame

__all__ = ["MAX_RUNS_PER_FILE", "TwinProof", "files_in_order", "id_lanes", "ids_in_order",
           "lane_halves", "lane_sums", "twin_files_in_order"]  # fmt: skip

#: increasing runs of ids allowed in one file by :func:`files_in_order` (more: not in
#: order, the caller matches the ids by a join)
MAX_RUNS_PER_FILE = 10_000


def lane_halves(col: str, keys: Sequence[int]) -> list[Column]:
    """Per key, xxHash64(key, id) of column ``col`` as its low and high 32-bit halves.

    Summed over up to 2³¹ rows the halves stay below 2⁶³ (so ANSI mode raises no
    overflow); :func:`lane_sums` puts the sums back together modulo 2⁶⁴.
    """
    from pyspark.sql import functions as sf

    low = sf.lit(0xFFFFFFFF)
    out = []
    for key in keys:
        h = sf.xxhash64(sf.lit(key).cast("long"), sf.col(col).cast("string"))
        out += [h.bitwiseAND(low), sf.shiftright(h, 32).bitwiseAND(low)]
    return out


def lane_sums(row: Any, n_keys: int) -> list[int]:
    """Per key, Σ xxHash64 modulo 2⁶⁴ from a row of the half sums ``h0``, ``h1``, …."""
    return [
        (int(row[f"h{2 * j + 1}"] or 0) * (1 << 32) + int(row[f"h{2 * j}"] or 0)) % (1 << 64)
        for j in range(n_keys)
    ]


def id_lanes(
    dfs: Sequence[SparkDataFrame], col: str, keys: Sequence[int]
) -> list[tuple[int, int, list[int]]]:
    """Per table: its rows, its missing ids, and per key Σ xxHash64(key, id) modulo 2⁶⁴.

    One Spark aggregation over all tables (no shuffle but of one row per task and
    table); the hashes as in :func:`lane_halves`.
    """
    from pyspark.sql import functions as sf

    ids = None
    for t, df in enumerate(dfs):
        one = df.select(sf.col(col).cast("string").alias(col), sf.lit(t).alias("__eree_t"))
        ids = one if ids is None else ids.union(one)
    assert ids is not None
    halves = [sf.sum(h).alias(f"h{i}") for i, h in enumerate(lane_halves(col, keys))]
    counts = [sf.count(sf.lit(1)).alias("n"), sf.sum(missing(col).cast("long")).alias("miss")]
    rows = {r["__eree_t"]: r for r in ids.groupBy("__eree_t").agg(*counts, *halves).collect()}
    out = []
    for t in range(len(dfs)):
        r = rows.get(t)
        if r is None:  # an empty table
            out.append((0, 0, [0] * len(keys)))
        else:
            out.append((int(r["n"]), int(r["miss"] or 0), lane_sums(r, len(keys))))
    return out


def ids_in_order(df: SparkDataFrame, col: str) -> bool:
    """Whether the ids of ``col`` are present and in order, hence distinct.

    The ids are read in file order: within a Spark partition, each file block's rows
    come together (a partition may hold several files' blocks, packed largest first).
    Every run of rows from one block must be strictly increasing (bytewise order of the
    UTF-8 text) with no null; the runs' ranges, sorted by their first id, must not
    overlap. Then no id repeats. Where a run starts is only a hint (a hash of the file
    name and block offset): had two blocks been taken for one run, that run must still
    increase throughout, so the proof stands. Spark sends only the ids and the hint to
    Python (Arrow batches), where PyArrow compares neighbours a batch at a time.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import functions as sf

    ddl = "ok boolean, lo string, hi string, n long"
    schema = pa.schema([("ok", pa.bool_()), ("lo", pa.string()), ("hi", pa.string()),
                        ("n", pa.int64())])  # fmt: skip

    def summarise(batches):  # type: ignore[no-untyped-def]
        spans: list[list[Any]] = []  # per run: first id, last id, rows
        run = None
        ok = True
        for b in batches:
            a, n = b.column(0), b.num_rows
            if n == 0:
                continue
            if a.null_count:
                ok = False
                break
            r = b.column(1).to_numpy(zero_copy_only=False)
            same = r[1:] == r[:-1]  # neighbours from one block must increase
            if n > 1:
                up = pc.less(a.slice(0, n - 1), a.slice(1)).to_numpy(zero_copy_only=False)
                if not (up | ~same).all():
                    ok = False
                    break
            for s, e in pairwise([0, *(np.flatnonzero(~same) + 1).tolist(), n]):
                first, last = a[s].as_py(), a[e - 1].as_py()
                if spans and run == r[s]:  # the same block continues from the last batch
                    if not spans[-1][1].encode() < first.encode():
                        ok = False
                        break
                    spans[-1][1] = last
                    spans[-1][2] += e - s
                else:
                    spans.append([first, last, e - s])
                run = r[s]
            if not ok:
                break
        rows = [{"ok": ok, "lo": lo, "hi": hi, "n": n} for lo, hi, n in spans]
        rows.append({"ok": ok, "lo": None, "hi": None, "n": 0})
        yield pa.RecordBatch.from_pylist(rows, schema=schema)

    ids = df.select(
        sf.col(col).cast("string").alias(col),
        sf.hash(sf.input_file_name(), sf.input_file_block_start()).alias("__eree_run"),
    )
    rows = ids.mapInArrow(summarise, ddl).collect()
    if not all(r["ok"] for r in rows):
        return False
    spans = sorted((r["lo"].encode(), r["hi"].encode()) for r in rows if r["n"])
    return all(x[1] < y[0] for x, y in pairwise(spans))


def files_in_order(spark: SparkSession, files: Sequence[str], col: str) -> tuple[bool, int] | None:
    """Whether the ids of ``col`` in the Parquet ``files`` are present and distinct, by order.

    The proof of :func:`ids_in_order`, read from the files by PyArrow instead of from
    Spark's rows: one Spark task per file (up to four per core) reads the column a batch
    at a time and cuts it into runs of strictly increasing ids (bytewise order of the
    UTF-8 text; integer ids as their decimal text, as Spark casts them); no id may be
    null; the runs' ranges, sorted by their first id, must not overlap. Then no id
    repeats. Only the runs' first and last ids and row counts reach the driver.

    Returns:
        ``(proven, rows)``: whether the ids are proven distinct (``False``: not in
        order, or a null id, or more than :data:`MAX_RUNS_PER_FILE` runs in a file),
        and the rows read. ``None`` when a file is not Parquet that PyArrow can open
        (its file system, its type of ``col``): prove it with :func:`ids_in_order`.

    The caller checks that the rows are the ones Spark reads (``files`` from
    ``DataFrame.inputFiles`` of a plain read, and ``rows`` equal to Spark's count).
    """
    got = twin_files_in_order(spark, files, col, (), col)
    return None if got is None else (got.proven, got.rows)


class TwinProof(NamedTuple):
    """What :func:`twin_files_in_order` proved."""

    #: the ids of ``col`` are present and distinct (as :func:`files_in_order`)
    proven: bool
    #: the rows read from ``files``
    rows: int
    #: each twin file holds, in its column ``twin_col``, the ids of its file row for row
    #: (every file has its twin, none blank); only meaningful when ``proven``
    same: bool


def twin_files_in_order(
    spark: SparkSession,
    files: Sequence[str],
    col: str,
    twins: Sequence[str],
    twin_col: str,
) -> TwinProof | None:
    """:func:`files_in_order`, and whether the ``twins`` hold the same ids, in the same pass.

    ``files`` and ``twins`` are paired in the order of their names (the ``i``-th of each
    sorted list); each Spark task reads one file's column ``col`` and, when there are
    as many twins as files, its twin's column ``twin_col``, both a batch at a time,
    and compares them id for id (text, integers as their decimal text). ``same`` is
    true when every pair holds the same ids in the same order, every twin ends where its
    file ends, and no id is blank (empty or white space only: docs/design.md#validation
    calls a blank id missing). Then, with ``proven``, the twins' ids (over all twin
    files) are exactly the files' ids, each once. A twin that PyArrow cannot read, or
    any difference, makes ``same`` false, never ``proven``.

    ``None`` as for :func:`files_in_order` (the files, not the twins, unreadable).
    """
    if not files or not all(f.lower().endswith(".parquet") for f in [*files, *twins]):
        return None
    files = sorted(files)
    pairs: list[tuple[str, str | None]] = (
        list(zip(files, sorted(twins), strict=True))
        if len(twins) == len(files)
        else [(f, None) for f in files]
    )

    def runs(pair: tuple[str, str | None]) -> tuple[bool, int, list[list[bytes]], bool] | None:
        # in a Spark task
        from contextlib import ExitStack

        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.fs as pafs
        import pyarrow.parquet as pq

        def texts(fh: Any, name: str) -> Any:  # the column as large_string batches
            for b in pq.ParquetFile(fh).iter_batches(columns=[name], batch_size=1 << 20):
                a = b.column(0)
                if pa.types.is_integer(a.type) or pa.types.is_string(a.type):
                    a = pc.cast(a, pa.large_string())
                elif not pa.types.is_large_string(a.type):
                    raise TypeError(a.type)
                yield a

        uri, twin = pair
        with ExitStack() as stack:
            same = twin is not None
            pending: Any = None  # the twin's ids read but not yet compared
            twin_ids: Any = iter(())

            def matches(a: Any) -> bool:  # the twin's next len(a) ids are a's
                nonlocal pending
                off, m = 0, len(a)
                try:
                    while off < m:
                        if pending is None or len(pending) == 0:
                            pending = next(twin_ids, None)
                            if pending is None or pending.null_count:
                                return False  # the twin ends early, or a null id
                            continue
                        k = min(m - off, len(pending))
                        if not pc.all(pc.equal(a.slice(off, k), pending.slice(0, k))).as_py():
                            return False
                        pending, off = pending.slice(k), off + k
                    return True
                except Exception:  # the twin is not readable here: not proven the same
                    return False

            try:
                if twin is not None:
                    try:
                        tfs, tpath = pafs.FileSystem.from_uri(twin)
                        twin_ids = texts(stack.enter_context(tfs.open_input_file(tpath)), twin_col)
                    except Exception:
                        same = False
                fs, path = pafs.FileSystem.from_uri(uri)
                spans: list[list[bytes]] = []  # per run: first id, last id
                n = 0
                fh = stack.enter_context(fs.open_input_file(path))
                for a in texts(fh, col):
                    m = len(a)
                    if a.null_count:
                        return (False, n + m, [], False)
                    if m == 0:
                        continue
                    up = pc.less(a.slice(0, m - 1), a.slice(1)).to_numpy(zero_copy_only=False)
                    cuts = (np.flatnonzero(~up) + 1).tolist()
                    for s, e in pairwise([0, *cuts, m]):
                        first, last = a[s].as_py().encode(), a[e - 1].as_py().encode()
                        if s == 0 and spans and spans[-1][1] < first:  # the run goes on
                            spans[-1][1] = last
                        else:
                            spans.append([first, last])
                    if len(spans) > MAX_RUNS_PER_FILE:
                        return (False, n + m, [], False)
                    n += m
                    if same:  # a blank id (empty or white space only) is a missing one
                        blank = pc.or_(pc.equal(pc.binary_length(a), 0), pc.ascii_is_space(a))
                        same = not pc.any(blank).as_py() and matches(a)
                if same:  # the twin ends here too
                    try:
                        same = (pending is None or len(pending) == 0) and all(
                            len(rest) == 0 for rest in twin_ids
                        )
                    except Exception:  # the twin is not readable here
                        same = False
            except Exception:  # not readable here (file system, format, column): Spark proves it
                return None
        return (True, n, spans, same)

    sc = spark.sparkContext
    slices = min(len(pairs), 4 * max(1, sc.defaultParallelism))
    results = sc.parallelize(pairs, slices).map(runs).collect()
    if any(r is None for r in results):
        return None
    done = [r for r in results if r is not None]
    rows = sum(r[1] for r in done)
    if not all(r[0] for r in done):
        return TwinProof(False, rows, False)
    spans = sorted(tuple(x) for r in done for x in r[2])
    proven = all(x[1] < y[0] for x, y in pairwise(spans))
    return TwinProof(proven, rows, proven and len(twins) == len(files) and all(r[3] for r in done))
