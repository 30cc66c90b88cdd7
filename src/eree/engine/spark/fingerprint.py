"""The data fingerprint of Spark-side data, computed in Spark (see :mod:`eree.data.fingerprint`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

__all__ = [
    "WORD_PREFIX",
    "lanes_query",
    "spark_fingerprint",
    "spark_fingerprints",
    "spark_structure_counts",
    "sql_identifier",
    "sql_string",
    "text_word",
]


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


def sql_identifier(name: str) -> str:
    """``name`` as a Spark SQL identifier (backticks, a backtick doubled)."""
    return "`" + name.replace("`", "``") + "`"


def _long(u: int) -> str:
    """An unsigned 64-bit constant as Spark SQL's signed long."""
    return f"CAST({u - (1 << 64) if u >= 1 << 63 else u} AS BIGINT)"


def sql_string(value: str) -> str:
    """A string constant without quoting rules (whatever the parser's escape settings)."""
    return f"CAST(unhex('{value.encode('utf-8').hex()}') AS STRING)"


def _text_word_sql(c: str) -> str:
    """:func:`text_word` as a Spark SQL expression."""
    h = f"sha2(CAST({sql_identifier(c)} AS STRING), 256)"
    hi = f"CAST(conv(substring({h}, 1, 8), 16, 10) AS BIGINT)"
    lo = f"CAST(conv(substring({h}, 9, 8), 16, 10) AS BIGINT)"
    return f"(shiftleft({hi}, 32) | {lo})"


#: the three steps of ``fmix`` (the SplitMix64 finaliser): shift, then multiplier or None
_FMIX = ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB), (31, None))


def _fmix_step(z: str, step: int) -> str:
    shift, mult = _FMIX[step]
    x = f"({z} ^ shiftrightunsigned({z}, {shift}))"
    return f"({x} * {_long(mult)})" if mult is not None else x


def lanes_query(
    label: str,
    kinds: Sequence[tuple[str, str]],
    columns: Sequence[str],
    domains: Mapping[str, Sequence[str]],
    chains: Sequence[Sequence[int]],
) -> str:
    """The row count and lane sums of one table as one Spark SQL query over ``{df}``.

    The definition of :mod:`eree.data.fingerprint`, step by step: the columns' words
    (``kinds``: (column, text / int / float) in name order; ``columns``: the table's
    columns, which may hold precomputed words, :data:`WORD_PREFIX`), every column's value
    hashes in all lanes at once (they do not depend on each other), then one accumulator
    per chain (the indices in ``kinds`` of the columns it hashes, in order: all of them
    for the content fingerprint, the ids for the structure one), column by column. Each
    ``fmix`` step is its own projection (a subquery): a step repeats its input, and Spark
    would otherwise inline it into an expression that grows exponentially. Built as text,
    so the driver sends the whole plan in one call. The result's columns: the row count,
    then per chain and lane the sums of the accumulators' low and high 32 bits.
    """
    from eree.data.fingerprint import LANES, value_salts

    def word(c: str, kind: str) -> str:
        if kind == "int":
            return f"CAST({sql_identifier(c)} AS BIGINT)"
        if kind == "float":  # NaN → 0x7FF8000000000000, as the definition; a null's
            # word is not used (its null hash is), but java_method refuses a null argument
            x = f"coalesce(CAST({sql_identifier(c)} AS DOUBLE), 0.0D) + 0.0D"
            return f"CAST(java_method('java.lang.Double', 'doubleToLongBits', {x}) AS BIGINT)"
        if WORD_PREFIX + c in columns:  # hashed once per distinct value upstream
            return sql_identifier(WORD_PREFIX + c)
        hashed = _text_word_sql(c)
        if not domains.get(c):
            return hashed
        # a declared domain: its values' words computed once, here, and looked up per row;
        # a value outside it (refused by validation) is still hashed in Spark
        from eree.data.fingerprint import salt

        pairs = ", ".join(f"{sql_string(v)}, {_long(salt(v))}" for v in domains[c])
        return f"coalesce(map({pairs})[CAST({sql_identifier(c)} AS STRING)], {hashed})"

    k = len(kinds)
    salts = [[value_salts(label, c, kind, j) for j in range(LANES)] for c, kind in kinds]
    nulls = [f"n{i}" for i in range(k)]
    v = [[f"v{i}_{j}" for j in range(LANES)] for i in range(k)]
    acc = [[f"a{c}_{j}" for j in range(LANES)] for c in range(len(chains))]
    # words and null flags; then each value hash: fmix(word ^ salt), one step a level
    sql = (
        "SELECT "
        + ", ".join(
            [f"({sql_identifier(c)} IS NULL) AS {nulls[i]}" for i, (c, _) in enumerate(kinds)]
            + [f"{word(c, kind)} AS w{i}" for i, (c, kind) in enumerate(kinds)]
            + ["CAST(0 AS BIGINT) AS _none"]  # a select list is never empty
        )
        + " FROM {df}"
    )
    for step in range(3):
        cols = [
            _fmix_step(f"(w{i} ^ {_long(salts[i][j][0])})" if step == 0 else v[i][j], step)
            + f" AS {v[i][j]}"
            for i in range(k)
            for j in range(LANES)
        ]
        sql = f"SELECT {', '.join([*nulls, *cols, '_none'])} FROM ({sql}) t"
    # each accumulator: acc = fmix(acc ^ (null ? null hash : value hash)), column by column
    zero = [f"CAST(0 AS BIGINT) AS {a}" for chain in acc for a in chain]
    sql = f"SELECT {', '.join([*nulls, *(x for r in v for x in r), *zero, '_none'])} FROM ({sql}) t"
    for i in range(k):
        rest = [*nulls[i + 1 :], *(x for r in v[i + 1 :] for x in r), "_none"]
        moving = [c for c, chain in enumerate(chains) if i in chain]
        still = [a for c, chain in enumerate(acc) if c not in moving for a in chain]
        if not moving:
            sql = f"SELECT {', '.join([*rest, *still])} FROM ({sql}) t"
            continue
        for step in range(3):
            cols = [
                _fmix_step(
                    f"({acc[c][j]} ^ CASE WHEN {nulls[i]} THEN {_long(salts[i][j][1])} "
                    f"ELSE {v[i][j]} END)" if step == 0 else acc[c][j],
                    step,
                ) + f" AS {acc[c][j]}"
                for c in moving
                for j in range(LANES)
            ]  # fmt: skip
            sql = f"SELECT {', '.join([*rest, *still, *cols])} FROM ({sql}) t"
    sums = [
        f"sum({a} & {_long(0xFFFFFFFF)}), sum(shiftrightunsigned({a}, 32))"
        for chain in acc
        for a in chain
    ]
    return f"SELECT count(1), {', '.join(sums)} FROM ({sql}) t"


def spark_fingerprint(data: Any, *, structure: bool) -> str:
    """One of :func:`spark_fingerprints`: the structure one with ``structure``."""
    return spark_fingerprints(data)[1 if structure else 0]


def spark_fingerprints(data: Any) -> tuple[str, str]:
    """The content and structure fingerprints of Spark-side data, computed in Spark.

    The same values as :func:`eree.data.fingerprint.content_fingerprint` and
    :func:`~eree.data.fingerprint.structure_fingerprint` of the same rows loaded by
    Polars (no row reaches the driver): every step of that definition is a Spark SQL
    expression (SHA-256 through ``sha2``, the binary64 bits of a double through
    ``Double.doubleToLongBits``, 64-bit wrapping multiplication with ANSI overflow checks
    off for this query), and the lane sums are added as two exact 32-bit halves. So
    changing engines does not look like changed content to the ledger.

    One pass over each table computes both (:func:`lanes_query`, one SQL query: the
    driver builds its plan in a handful of calls to the JVM; it was tens of thousands,
    and two passes, when each column expression was built through the DataFrame API).

    SHA-256 is most of the cost, so text values are hashed once where possible: the
    values of a declared domain on the driver (a literal map looked up per row; a value
    outside the domain is still hashed in Spark), and the jobs' workplace ids once per
    workplace when the data carry them hashed (``SparkJobTables.hashed``).
    """
    from pyspark.sql.types import BooleanType, DecimalType, FractionalType, IntegralType

    from eree.data.fingerprint import LANES, MASK, family_name, summary_digest

    if hasattr(data, "jobs"):
        # jobs with their workplace ids' words hashed once per workplace, when available
        hashed = getattr(data, "hashed", None)
        jobs = hashed if hashed is not None else data.jobs
        tables = [("workplaces", data.workplaces), ("jobs", jobs)]
        ids = {"workplaces": ["workplace_id"], "jobs": ["workplace_id"]}
    else:
        tables = [("establishments", data.frame)]
        ids = {"establishments": [data.config.id]}
    domains: dict[str, Sequence[str]] = dict(getattr(data, "domains", None) or {})

    spark = tables[0][1].sparkSession
    ansi = spark.conf.get("spark.sql.ansi.enabled", None)
    spark.conf.set("spark.sql.ansi.enabled", "false")  # 64-bit multiplication wraps
    summaries: tuple[list[Any], list[Any]] = ([], [])
    try:
        for label, df in tables:
            fields = df.schema.fields
            names = [f.name for f in fields]
            data_cols = [c for c in names if not c.startswith(WORD_PREFIX)]
            cols = sorted({*ids[label], *data_cols})
            types = {f.name: f.dataType for f in fields}
            kinds = []
            for c in cols:
                t = types[c]
                if isinstance(t, IntegralType | BooleanType):
                    kinds.append((c, "int"))
                elif isinstance(t, FractionalType | DecimalType):
                    kinds.append((c, "float"))
                else:
                    kinds.append((c, "text"))
            chains = [[cols.index(c) for c in sorted(x)] for x in (data_cols, ids[label])]
            query = lanes_query(label, kinds, names, domains, chains)
            # {df} is the one placeholder: any other brace (in a column name) is literal
            query = query.replace("{", "{{").replace("}", "}}").replace("{{df}}", "{df}")
            row = spark.sql(query, df=df).first()
            assert row is not None
            n = int(row[0])
            for c, chain in enumerate(chains):
                at = 1 + 2 * LANES * c
                sums = [
                    (int(row[at + 2 * j] or 0) + (int(row[at + 2 * j + 1] or 0) << 32)) & MASK
                    for j in range(LANES)
                ]
                summaries[c].append((label, n, [kinds[i] for i in chain], sums))
    finally:
        if ansi is None:
            spark.conf.unset("spark.sql.ansi.enabled")
        else:
            spark.conf.set("spark.sql.ansi.enabled", ansi)
    return (
        summary_digest(family_name(data, False), summaries[0]),
        summary_digest(family_name(data, True), summaries[1]),
    )


def spark_structure_counts(data: Any) -> tuple[Any, Any]:
    """Per workplace, the word of its id and its job count, computed in Spark.

    The values of :func:`eree.data.fingerprint.structure_counts` of the same rows loaded by
    Polars (in another row order): Spark hashes the ids (:func:`text_word`) and counts the
    jobs per workplace; one row per workplace reaches the driver.
    """
    import numpy as np
    from pyspark.sql import functions as sf

    if hasattr(data, "jobs"):
        per = data.jobs.groupBy("workplace_id").agg(sf.count(sf.lit(1)).alias("n"))
        rows = (
            data.workplaces.select("workplace_id")
            .join(per, on="workplace_id", how="left")
            .select(text_word("workplace_id").alias("w"), sf.coalesce("n", sf.lit(0)).alias("n"))
        )
    else:
        c = data.config.id
        rows = data.frame.select(text_word(c).alias("w"), sf.lit(0).cast("long").alias("n"))
    table = rows.toArrow() if hasattr(rows, "toArrow") else None
    if table is not None:
        w = table.column("w").to_numpy(zero_copy_only=False)
        n = table.column("n").to_numpy(zero_copy_only=False)
    else:  # (Spark before 4: through pandas)
        pdf = rows.toPandas()
        w, n = pdf["w"].to_numpy(), pdf["n"].to_numpy()
    return np.asarray(w, dtype=np.int64).view(np.uint64), np.asarray(n, dtype=np.int64)
