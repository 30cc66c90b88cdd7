"""Spark helpers shared by the ER-EE and establishment halves of the Spark engine.

Reading tables as text (:func:`_read`), running the rules of DESIGN.md §2.3 as one Spark
aggregation (:class:`_Check`, :func:`_run_checks`), and moving small frames between
Polars and Spark through Arrow. PySpark is imported inside the functions.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from eree.errors import DataValidationError, SpecError

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import Column, SparkSession
    from pyspark.sql import DataFrame as SparkDataFrame

_CORRUPT = "__eree_corrupt_record"


_LOCAL_RELATION_THRESHOLD = "spark.sql.execution.arrow.localRelationThreshold"


def _polars_to_spark(spark: SparkSession, df: pl.DataFrame) -> SparkDataFrame:
    """A Polars frame as a Spark DataFrame, through Arrow, in about 2 partitions per core.

    Spark 4 embeds Arrow data below ``localRelationThreshold`` (48 MiB) in the query
    plan itself (a ``LocalRelation``); every later query plan, and the cache lookups
    that compare plans, then carry all of its rows, which made each query seconds
    slower on a 351K-establishment table. The threshold is set to 0 for this call so
    the data always live in an RDD.
    """
    table = df.to_arrow(compat_level=pl.CompatLevel.oldest())
    if _spark_major() >= 4:
        old = spark.conf.get(_LOCAL_RELATION_THRESHOLD, None)
        spark.conf.set(_LOCAL_RELATION_THRESHOLD, "0")
        try:
            sdf = spark.createDataFrame(table)
        finally:
            if old is None:
                spark.conf.unset(_LOCAL_RELATION_THRESHOLD)
            else:
                spark.conf.set(_LOCAL_RELATION_THRESHOLD, old)
    else:  # pragma: no cover - Spark 3.5: through pandas (Arrow-enabled)
        sdf = spark.createDataFrame(table.to_pandas())
    # Spark makes one partition per Arrow batch (10,000 rows): merge them (no shuffle;
    # a no-op when there are fewer)
    return sdf.coalesce(max(1, 2 * spark.sparkContext.defaultParallelism))


def _spark_major() -> int:
    import pyspark

    return int(pyspark.__version__.split(".")[0])


def _to_polars(sdf: SparkDataFrame) -> pl.DataFrame:
    """A Spark DataFrame's rows on the driver, as a Polars frame.

    Spark writes the rows as Parquet into a temporary local directory, each task its own
    partition, and Polars reads the files: no result is gathered in the JVM's heap (a
    collect holds every row there at once and is capped by
    ``spark.driver.maxResultSize``), so results as large as a national table's cells
    arrive in bounded JVM memory. Local mode (the driver reads what the tasks wrote).
    """
    tmp = Path(tempfile.mkdtemp(prefix="eree-spark-result-"))
    try:
        sdf.write.mode("overwrite").parquet(str(tmp))
        files = sorted(tmp.glob("*.parquet"))
        if files:
            return pl.read_parquet(files)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _collect(sdf)  # no part file (no rows): the schema through Arrow


def _collect(sdf: SparkDataFrame) -> pl.DataFrame:
    """Collect a (small) Spark DataFrame through Arrow."""
    if hasattr(sdf, "toArrow"):
        table: pa.Table = sdf.toArrow()
        out = pl.from_arrow(table)
        assert isinstance(out, pl.DataFrame)
        return out
    return pl.from_pandas(sdf.toPandas())  # pragma: no cover - Spark 3.5


def _read(
    spark: SparkSession,
    path: Path,
    required: Sequence[str],
    optional: Sequence[str],
    format: str | None,
) -> SparkDataFrame:
    """Read ``required`` (+ ``optional`` when present) columns of a table, as strings."""
    from pyspark.sql import functions as sf
    from pyspark.sql.types import IntegralType, StringType, StructField, StructType

    fmt = format or ("csv" if path.name.lower().endswith((".csv", ".csv.gz")) else "parquet")
    _split_small_files(spark)
    if fmt == "csv":
        from eree.data.io import read_header

        header = read_header(path, expected=[*required, *optional])  # the Polars path's check
        schema = StructType(
            [StructField(c, StringType()) for c in header] + [StructField(_CORRUPT, StringType())]
        )
        df = (
            spark.read.option("header", True)
            .option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", _CORRUPT)
            .option("enforceSchema", True)
            .schema(schema)
            .csv(str(path))
        )
        # the parser only sees a ragged row when it parses every column: check them all
        counts = df.agg(sf.count(sf.col(_CORRUPT)), *[sf.count(sf.col(c)) for c in header]).first()
        if counts is not None and counts[0]:
            raise DataValidationError(
                "a row has a different number of fields than the header",
                file=str(path),
                rule="unparseable",
            )
    elif fmt == "parquet":
        try:
            df = spark.read.parquet(str(path))
        except Exception as exc:
            raise DataValidationError(
                f"not a readable Parquet file or directory ({type(exc).__name__})",
                file=str(path),
                rule="unparseable",
            ) from None
    else:
        raise SpecError(f"format must be 'parquet' or 'csv', not {fmt!r}")
    present = [c for c in df.columns if c != _CORRUPT]
    missing = [c for c in required if c not in present]
    if missing:
        raise DataValidationError(
            f"required column(s) missing: {', '.join(repr(m) for m in missing)}; the file "
            f"has: {', '.join(repr(c) for c in present)}",
            file=str(path),
            column=missing[0],
            rule="missing-column",
        )
    cols = [*required, *(c for c in optional if c in present and c not in required)]
    types = {f.name: f.dataType for f in df.schema.fields}
    out = []
    for c in cols:
        t = types[c]
        if not isinstance(t, StringType | IntegralType):
            raise DataValidationError(
                f"column is stored as {t.simpleString()}, expected text or integer codes",
                file=str(path),
                column=c,
                rule="type",
            )
        out.append(sf.col(c).cast("string").alias(c))
    return df.select(*out)


#: Spark's estimated cost of opening a file, lowered from its 4 MiB default for eree's
#: reads (see :func:`_split_small_files`)
OPEN_COST_BYTES = 1 << 20


def _split_small_files(spark: SparkSession) -> None:
    """Let Spark split a small input file across the cores.

    Spark sizes file splits at no less than ``spark.sql.files.openCostInBytes`` (4 MiB by
    default), so a well-compressed 4 MB Parquet table with 5.6M jobs was read, and its
    rows shuffled, by one task on a 2-core machine. The session's setting is lowered to
    :data:`OPEN_COST_BYTES` (never raised); large inputs split as before.
    """
    key = "spark.sql.files.openCostInBytes"
    current = str(spark.conf.get(key, None) or "4194304")
    try:
        value = int(current.lower().removesuffix("b"))
    except ValueError:  # a size with a unit ("4m"): leave the user's setting alone
        return
    if value > OPEN_COST_BYTES:
        spark.conf.set(key, str(OPEN_COST_BYTES))


def _missing(c: str) -> Column:
    from pyspark.sql import functions as sf

    return sf.col(c).isNull() | (sf.trim(sf.col(c)) == "")


def _outside(c: str, domain: Sequence[str]) -> Column:
    from pyspark.sql import functions as sf

    return sf.col(c).isNull() | ~sf.col(c).isin(list(domain))


@dataclass(frozen=True)
class _Check:
    """A §2.3 rule as a row condition: ``violation`` true on an offending row.

    ``message`` may contain ``{id}``, filled with the ``id_col`` value of one offending
    row (ids are not confidential; values are never printed).
    """

    violation: Column
    column: str
    rule: str
    message: str
    id_col: str | None = None


def _run_checks(
    df: SparkDataFrame,
    file: Path,
    checks: Sequence[_Check],
    *,
    unique: str | None = None,
    unique_rule: str = "duplicate-id",
    unique_message: str = "id {id!r} appears more than once",
) -> int:
    """Count every check's violations in one Spark aggregation; raise on the first one.

    Order: the ``missing-id`` checks, then uniqueness of ``unique`` (if given), then the
    other checks in the order given. Only on failure is a second query run, to name an
    offending id.

    Returns:
        The number of rows of ``df``.
    """
    from pyspark.sql import functions as sf

    aggs = [sf.sum(sf.when(c.violation, 1).otherwise(0)) for c in checks]
    aggs.append(sf.count(sf.lit(1)))
    if unique is not None:
        aggs.append(sf.countDistinct(sf.col(unique)))
    row = df.agg(*aggs).first()
    assert row is not None
    vals = [int(v or 0) for v in row]
    n_rows = vals[len(checks)]

    def fail(c: _Check) -> None:
        msg = c.message
        if c.id_col is not None:
            found = df.filter(c.violation).select(c.id_col).limit(1).collect()
            msg = msg.format(id=found[0][0] if found else "?")
        raise DataValidationError(msg, file=str(file), column=c.column, rule=c.rule)

    for i, c in enumerate(checks):
        if c.rule == "missing-id" and vals[i]:
            fail(c)
    if unique is not None and vals[len(checks) + 1] != n_rows:
        dup = df.groupBy(unique).count().filter(sf.col("count") > 1).limit(1).collect()
        raise DataValidationError(
            unique_message.format(id=dup[0][0] if dup else "?"),
            file=str(file),
            column=unique,
            rule=unique_rule,
        )
    for i, c in enumerate(checks):
        if c.rule != "missing-id" and vals[i]:
            fail(c)
    return n_rows


#: prefix of a column that holds, per row, the fingerprint word of the text column named
#: after it (see :func:`text_word` and ``SparkEreeData.hashed``)
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
    workplace when the data carry them hashed (``SparkEreeData.hashed``).
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
