"""The data fingerprint of Spark-side data, computed in Spark (see :mod:`eree.data.fingerprint`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column
    from pyspark.sql import DataFrame as SparkDataFrame

__all__ = ["WORD_PREFIX", "spark_fingerprint", "text_word"]


#: prefix of a column that holds, per row, the fingerprint word of the text column named
#: after it (see :func:`text_word` and ``SparkJobTables.hashed``)
WORD_PREFIX = "__eree_word:"


def text_word(c: str) -> Column:
    """The fingerprint word of text column ``c`` (see :mod:`eree.data.fingerprint`).

    The first 8 bytes of the value's SHA-256, big-endian, as Spark's signed long; SHA-256
    dominates the cost (the hex conversion is a few percent of it).
    """
    from pyspark.sql import functions as sf

    h = sf.sha2(sf.col(c).cast("string"), 256)
    hi = sf.conv(sf.substring(h, 1, 8), 16, 10).cast("long")
    lo = sf.conv(sf.substring(h, 9, 8), 16, 10).cast("long")
    return sf.shiftleft(hi, 32).bitwiseOR(lo)


def spark_fingerprint(data: Any, *, structure: bool) -> str:
    """The fingerprint of Spark-side data, computed in Spark (no row reaches the driver).

    The same value as :func:`eree.data.fingerprint.content_fingerprint` (or, with
    ``structure``, :func:`~eree.data.fingerprint.structure_fingerprint`) of the same rows
    loaded by Polars: every step of that definition is a Spark SQL expression (SHA-256
    through ``sha2``, the binary64 bits of a double through ``Double.doubleToLongBits``,
    64-bit wrapping multiplication with ANSI overflow checks off for this query), and the
    lane sums are added as two exact 32-bit halves. So changing engines does not look
    like changed content to the ledger.

    SHA-256 is most of the cost, so text values are hashed once where possible: the
    values of a declared domain on the driver (a literal map looked up per row; a value
    outside the domain is still hashed in Spark), and the jobs' workplace ids once per
    workplace when the data carry them hashed (``SparkJobTables.hashed``).
    """
    from pyspark.sql import functions as sf
    from pyspark.sql.types import BooleanType, DecimalType, FractionalType, IntegralType

    from eree.data.fingerprint import (
        LANES,
        MASK,
        family_name,
        salt,
        summary_digest,
        value_salts,
    )

    if hasattr(data, "jobs"):
        # jobs with their workplace ids' words hashed once per workplace, when available
        hashed = getattr(data, "hashed", None)
        jobs = hashed if hashed is not None else data.jobs
        tables = [("workplaces", data.workplaces), ("jobs", jobs)]
        ids = {"workplaces": ["workplace_id"], "jobs": ["workplace_id"]}
    else:
        tables = [("establishments", data.frame)]
        ids = {"establishments": [data.config.id]}

    def lit(u: int) -> Column:  # an unsigned 64-bit constant as Spark's signed long
        return sf.lit(u - (1 << 64) if u >= 1 << 63 else u).cast("long")

    domains: dict[str, Sequence[str]] = dict(getattr(data, "domains", None) or {})
    current: set[str] = set()  # the columns of the table being hashed

    def word(c: str, kind: str) -> Column:
        x = sf.col(c)
        if kind == "text":
            if WORD_PREFIX + c in current:  # hashed once per distinct value upstream
                return sf.col(f"`{WORD_PREFIX}{c}`")
            hashed = text_word(c)
            if c not in domains or not domains[c]:
                return hashed
            # a declared domain: its values' words hashed once, here, and looked up per
            # row; a value outside it (refused by validation) is still hashed in Spark
            known = sf.create_map(*[a for v in domains[c] for a in (sf.lit(v), lit(salt(v)))])
            return sf.coalesce(known[x.cast("string")], hashed)
        if kind == "float":  # NaN → 0x7FF8000000000000, as the definition
            bits = sf.expr(
                f"java_method('java.lang.Double', 'doubleToLongBits', cast(`{c}` as double) + 0.0D)"
            )
            return bits.cast("long")
        return x.cast("long")

    def fmix_steps(df: SparkDataFrame, names: list[str]) -> SparkDataFrame:
        """``fmix`` of each column in ``names``, one projection per step.

        Separate projections keep Spark from inlining a step into an expression that
        repeats its input (exponential growth of the plan).
        """
        keep = [c for c in df.columns if c not in names]
        for shift, mult in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB), (31, None)):
            cols = []
            for n in names:
                z = sf.col(n).bitwiseXOR(sf.shiftrightunsigned(sf.col(n), shift))
                cols.append((z * lit(mult) if mult is not None else z).alias(n))
            df = df.select(*keep, *cols)
        return df

    spark = tables[0][1].sparkSession
    ansi = spark.conf.get("spark.sql.ansi.enabled", None)
    spark.conf.set("spark.sql.ansi.enabled", "false")  # 64-bit multiplication wraps
    summary = []
    try:
        for label, df in tables:
            current.clear()
            current.update(df.columns)
            data_cols = [c for c in df.columns if not c.startswith(WORD_PREFIX)]
            cols = sorted(ids[label] if structure else data_cols)
            types = {f.name: f.dataType for f in df.schema.fields}
            kinds = []
            for c in cols:
                t = types[c]
                if isinstance(t, IntegralType | BooleanType):
                    kinds.append((c, "int"))
                elif isinstance(t, FractionalType | DecimalType):
                    kinds.append((c, "float"))
                else:
                    kinds.append((c, "text"))
            acc = [f"__acc{j}" for j in range(LANES)]
            work = df.select(
                *[sf.col(c).isNull().alias(f"__null{i}") for i, c in enumerate(cols)],
                *[word(c, k).alias(f"__w{i}") for i, (c, k) in enumerate(kinds)],
                *[sf.lit(0).cast("long").alias(a) for a in acc],
            )
            for i, (c, k) in enumerate(kinds):
                salts = [value_salts(label, c, k, j) for j in range(LANES)]
                v = [f"__v{j}" for j in range(LANES)]
                work = work.select(
                    *work.columns,
                    *[sf.col(f"__w{i}").bitwiseXOR(lit(salts[j][0])).alias(v[j])
                      for j in range(LANES)],
                )  # fmt: skip
                work = fmix_steps(work, v)
                rest = [x for x in work.columns if x not in acc and x not in v]
                work = work.select(
                    *rest,
                    *[
                        sf.col(acc[j])
                        .bitwiseXOR(
                            sf.when(sf.col(f"__null{i}"), lit(salts[j][1])).otherwise(sf.col(v[j]))
                        )
                        .alias(acc[j])
                        for j in range(LANES)
                    ],
                )
                work = fmix_steps(work, acc)
            aggs = [sf.count(sf.lit(1))]
            for a in acc:
                aggs.append(sf.sum(sf.col(a).bitwiseAND(sf.lit(0xFFFFFFFF).cast("long"))))
                aggs.append(sf.sum(sf.shiftrightunsigned(sf.col(a), 32)))
            row = work.agg(*aggs).first()
            assert row is not None
            n = int(row[0])
            sums = [
                (int(row[1 + 2 * j] or 0) + (int(row[2 + 2 * j] or 0) << 32)) & MASK
                for j in range(LANES)
            ]
            summary.append((label, n, kinds, sums))
    finally:
        if ansi is None:
            spark.conf.unset("spark.sql.ansi.enabled")
        else:
            spark.conf.set("spark.sql.ansi.enabled", ansi)
    return summary_digest(family_name(data, structure), summary)
