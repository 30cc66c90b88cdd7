"""Proofs about id columns without a join: order, and lanes of hashes (Spark).

:func:`ids_in_order` proves the ids of a column present and distinct from their order in
the files; :func:`id_lanes` sums keyed 64-bit hashes of a column's ids (its *lanes*):
two multisets of ids of the same size with equal lanes are equal but by chance (about
2⁻⁶⁴ per key for ids not crafted against xxHash64 under a key they cannot know). The
ordered-id validation of :mod:`eree.engine.spark.validate` rests on both.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from eree.engine.spark.checks import missing

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column
    from pyspark.sql import DataFrame as SparkDataFrame

__all__ = ["id_lanes", "ids_in_order", "lane_halves", "lane_sums"]


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
