"""The establishment (QCEW-like) half of the engine protocol on PySpark.

See docs/design.md#core-objects.

:class:`SparkEstablishmentData` is the Spark-side twin of
:class:`~eree.data.establishments.EstablishmentData`: the establishment table as a Spark
DataFrame, read and validated by Spark (:func:`load_establishments_spark`), so that the
microdata never pass through the driver. The query functions give frames identical to
the Polars engine's (:mod:`eree.engine.polars.establishments`): same columns, dtypes, row order
and values. Sums are exact (integer and 2⁻³² fractional parts summed as 64-bit
integers, :func:`~eree.engine.exact_sums.exact_parts`), so they do not depend on how
Spark partitions the data. Only group results (at most one row per group) and the
identity answers (one row per establishment: they are the published table) are
collected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from eree.data.config import EstablishmentDataConfig
from eree.data.establishments import NAICS_DERIVED, EstablishmentData
from eree.data.io import CSV_SUFFIXES, missing_column_error
from eree.data.location import DataPath, data_path, is_uri, uri_name
from eree.data.qcew import SUPERSECTOR_OF_SECTOR
from eree.engine.base import ESTABLISHMENTS, bound_column, result_order
from eree.engine.exact_sums import FRACTION_BITS, MAX_EXACT_TOTAL, exact_sums
from eree.engine.spark.checks import (
    Check,
    missing,
    number_from_text,
    outside,
    parquet_rows,
    run_checks,
)
from eree.engine.spark.io import polars_to_spark, read_text_columns, to_polars
from eree.errors import DataValidationError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, SparkSession
    from pyspark.sql import DataFrame as SparkDataFrame

__all__ = [
    "SparkEstablishmentData",
    "clipped_group_sums",
    "group_max_bounds",
    "group_sums",
    "identity_values",
    "load_establishments_spark",
]


@dataclass(frozen=True)
class SparkEstablishmentData:
    """Establishment microdata as a Spark DataFrame.

    Attributes:
        frame: the id column, the public attributes (strings) and the confidential
            attributes (doubles).
        config: the configuration it was read with.
    """

    frame: SparkDataFrame
    config: EstablishmentDataConfig

    @property
    def id_column(self) -> str:
        """The establishment id column."""
        return self.config.id

    @property
    def n(self) -> int:
        """Number of establishments (a Spark count; public)."""
        return int(self.frame.count())

    @property
    def columns(self) -> tuple[str, ...]:
        """The names of the loaded columns (the DataFrame's schema; no Spark job)."""
        return tuple(self.frame.columns)

    @classmethod
    def from_polars(cls, spark: SparkSession, data: EstablishmentData) -> SparkEstablishmentData:
        """Hand an in-memory :class:`EstablishmentData` to Spark (through Arrow)."""
        return cls(polars_to_spark(spark, data.frame), data.config)


def _read_frame(spark: SparkSession, path: DataPath, expected: Sequence[str]) -> SparkDataFrame:
    from eree.errors import SpecError

    if is_uri(path):  # read by Spark alone (docs/spark-cluster.md#inputs-by-uri)
        from eree.engine.spark import uri as by_uri

        uri = str(path)
        if not uri_name(uri).lower().endswith(CSV_SUFFIXES):
            return by_uri.read_uri_parquet(spark, uri, "[data].path")
        # the columns the release names, as text (the header is checked as a local one's)
        return read_text_columns(spark, uri, [], expected, "csv", "[data].path", every_column=True)
    path = Path(path)
    name = path.name.lower()
    if name.endswith(CSV_SUFFIXES):
        from eree.data.io import read_header

        header = [c for c in read_header(path) if c != ""]
        return read_text_columns(spark, path, header, [], "csv")
    if path.is_file() and parquet_rows(path) == 0:  # the Polars loader's checks of the file
        raise DataValidationError(
            "file has a header but no data rows", file=str(path), rule="no-rows"
        )
    try:
        return spark.read.parquet(str(path))
    except Exception as exc:
        if isinstance(exc, SpecError):  # pragma: no cover
            raise
        raise DataValidationError(
            f"not a readable Parquet file or directory ({type(exc).__name__})",
            file=str(path),
            rule="unparseable",
        ) from None


def load_establishments_spark(
    spark: SparkSession, config: EstablishmentDataConfig
) -> SparkEstablishmentData:
    """Read and validate establishment input with Spark.

    See docs/design.md#establishment-data, #validation.

    The rules of :func:`eree.data.establishments.load_establishments`, as Spark
    aggregations (one pass for all row rules, one for uniqueness): required columns
    present, text/number types, ids present and unique, public values present (and in
    their declared domain), NAICS codes of 6 digits with a known sector when columns
    are derived from them, confidential values that parse and are not missing,
    negative, NaN or infinite. Errors name file, column, rule and, for id problems, an
    id; never a confidential value, and no row number (Spark has no row order).

    Returns:
        The Spark-side dataset (lazy).
    """
    from pyspark.sql import functions as sf
    from pyspark.sql.types import DecimalType, FractionalType, IntegralType, StringType

    from eree.data.establishments import role_errors

    path = data_path(config.path)
    file = str(path)
    role_errors(config, file)
    raw = _read_frame(spark, path, [config.id, *config.public, *config.confidential])
    present = set(raw.columns)
    to_derive = tuple(c for c in config.public if c in NAICS_DERIVED and c not in present)
    text = [config.id, *(c for c in config.public if c not in to_derive)]
    if to_derive and "naics" not in text:
        text.append("naics")
    absent = [c for c in [*text, *config.confidential] if c not in present]
    if absent:
        raise missing_column_error(file, absent, raw.columns)  # as the Polars loader
    types = {f.name: f.dataType for f in raw.schema.fields}
    cols = []
    for c in text:
        if not isinstance(types[c], StringType | IntegralType):
            raise DataValidationError(
                f"column is stored as {types[c].simpleString()}, expected text or integer codes",
                file=file,
                column=c,
                rule="type",
            )
        cols.append(sf.col(c).cast("string").alias(c))
    parse_checks: list[Check] = []
    for c in config.confidential:
        t = types[c]
        if isinstance(t, IntegralType | FractionalType | DecimalType):
            cols.append(sf.col(c).cast("double").alias(c))
        elif isinstance(t, StringType):
            raw_c = f"__raw_{c}"
            number, _ = number_from_text(c)
            cols += [sf.col(c).alias(raw_c), number.alias(c)]
            parse_checks.append(
                Check(
                    number_from_text(raw_c)[1],
                    c,
                    "type",
                    "value does not parse as a number",
                )
            )
        else:
            raise DataValidationError(
                f"column is stored as {t.simpleString()}, expected a number",
                file=file,
                column=c,
                rule="type",
            )
    df = raw.select(*cols)
    checks = [Check(missing(config.id), config.id, "missing-id", "missing id (null or blank)")]
    for c in text[1:]:
        msg = "missing value (null or blank)"
        checks.append(Check(missing(c), c, "missing-value", msg))
    for attr, domain in config.domains.items():
        if attr in text:
            listed = ", ".join(domain)
            msg = f"value missing or not in declared domain of {attr!r} ({listed})"
            checks.append(Check(outside(attr, domain), attr, "domain", msg))
    if to_derive:
        fmt = ~sf.coalesce(sf.col("naics").rlike(r"^[0-9]{6}$"), sf.lit(False))
        msg = "NAICS code must have exactly 6 digits to derive " + ", ".join(to_derive)
        checks.append(Check(fmt, "naics", "naics-format", msg))
        if "super_sector" in to_derive:
            unknown = ~sf.substring("naics", 1, 2).isin(list(SUPERSECTOR_OF_SECTOR))
            msg = "NAICS sector (the first two digits) has no BLS supersector"
            checks.append(Check(unknown, "naics", "naics-sector", msg))
    checks += parse_checks
    for c in config.confidential:
        v = sf.col(c)
        checks += [
            Check(v.isNull(), c, "missing-value", "missing value"),
            Check(sf.isnan(v), c, "not-finite", "value is NaN"),
            Check(v.isin(float("inf"), float("-inf")), c, "not-finite", "value is infinite"),
            Check(v < 0, c, "negative", "negative value"),
        ]
    run_checks(df, path, checks, unique=config.id)
    derived: list[Column] = []
    for c in to_derive:
        if c == "naics_sector":
            derived.append(sf.substring("naics", 1, 2).alias(c))
        elif c == "super_sector":
            mapping = sf.create_map(
                *[sf.lit(x) for kv in SUPERSECTOR_OF_SECTOR.items() for x in kv]
            )
            derived.append(mapping[sf.substring("naics", 1, 2)].alias(c))
        else:
            derived.append(sf.substring("naics", 1, int(c[-1])).alias(c))
    frame = df.select(*df.columns[: len(text)], *derived, *config.confidential).select(
        config.id, *config.public, *config.confidential
    )
    return SparkEstablishmentData(frame, config)


# --------------------------------------------------------------------------------------
# queries
# --------------------------------------------------------------------------------------


def _parts(value: Column, a: str) -> list[Column]:
    """Summed exact integer and fractional parts, and the largest value.

    Exact integer and 2⁻³² fractional parts (as
    :func:`~eree.engine.exact_sums.exact_parts`), summed, and the largest value (for the
    overflow check of :func:`~eree.engine.exact_sums.exact_sums`).
    """
    from pyspark.sql import functions as sf

    v = sf.when(value < sf.lit(float(MAX_EXACT_TOTAL)), value).otherwise(sf.lit(0.0))
    hi = sf.floor(v)
    lo = sf.floor((v - hi) * sf.lit(float(2**FRACTION_BITS)))
    return [
        sf.sum(hi.cast("long")).alias(f"__hi_{a}"),
        sf.sum(lo.cast("long")).alias(f"__lo_{a}"),
        sf.max(value).alias(f"__max_{a}"),
    ]


def _finish(
    out: pl.DataFrame, by: Sequence[str], attrs: Sequence[str], extra: Sequence[str]
) -> pl.DataFrame:
    """The Polars engine's layout: keys (Utf8, sorted), sums, ``extra``, establishments."""
    if by:
        out = out.with_columns([pl.col(k).cast(pl.Utf8) for k in by]).sort(list(by))
    cols = [out.get_column(k) for k in by]
    for a in attrs:
        hi = out.get_column(f"__hi_{a}").fill_null(0).cast(pl.Int64).to_numpy()
        lo = out.get_column(f"__lo_{a}").fill_null(0).cast(pl.Int64).to_numpy()
        n = out.get_column(ESTABLISHMENTS).cast(pl.Int64).to_numpy()
        mx = out.get_column(f"__max_{a}").cast(pl.Float64).to_numpy()
        cols.append(pl.Series(a, exact_sums(hi, lo, a, count=n, largest=mx)))
    cols += [out.get_column(e).cast(pl.Float64) for e in extra]
    cols.append(out.get_column(ESTABLISHMENTS).cast(pl.Int64))
    names = [*attrs, *(e.removesuffix("__ustar") for e in extra)]
    return pl.DataFrame(cols).select(result_order(by, list(dict.fromkeys(names)), cols))


def _aggregate(df: SparkDataFrame, by: Sequence[str], aggs: list[Column]) -> pl.DataFrame:
    from pyspark.sql import functions as sf

    aggs = [*aggs, sf.count(sf.lit(1)).alias(ESTABLISHMENTS)]
    res = df.groupBy(*by).agg(*aggs) if by else df.agg(*aggs)
    return to_polars(res)


def identity_values(data: SparkEstablishmentData, attributes: Sequence[str]) -> pl.DataFrame:
    """Identity answers: the id and each attribute (Float64), sorted by id."""
    from pyspark.sql import functions as sf

    sdf = data.frame.select(
        sf.col(data.id_column).cast("string"), *[sf.col(a).cast("double") for a in attributes]
    )
    out = to_polars(sdf)
    out = out.with_columns(
        pl.col(data.id_column).cast(pl.Utf8), *[pl.col(a).cast(pl.Float64) for a in attributes]
    )
    return out.sort(data.id_column)


def group_sums(
    data: SparkEstablishmentData, by: Sequence[str], attributes: Sequence[str]
) -> pl.DataFrame:
    """Exact group sums, identical to the Polars engine's."""
    from pyspark.sql import functions as sf

    aggs = [p for a in attributes for p in _parts(sf.col(a).cast("double"), a)]
    return _finish(_aggregate(data.frame, by, aggs), by, attributes, [])


def _with_bounds(
    spark: SparkSession,
    data: SparkEstablishmentData,
    by: Sequence[str],
    bounds: pl.DataFrame,
    attributes: Sequence[str],
) -> SparkDataFrame:
    from pyspark.sql import functions as sf

    idc = data.id_column
    b = bounds.select(
        pl.col(idc).cast(pl.Utf8),
        *[pl.col(a).cast(pl.Float64).alias(bound_column(a)) for a in attributes],
    )
    sb = polars_to_spark(spark, b)
    df = data.frame.select(*by, sf.col(idc).cast("string").alias(idc), *attributes)
    joined = df.join(sb, on=idc, how="left")
    if attributes:
        n_missing = joined.filter(sf.col(bound_column(attributes[0])).isNull()).count()
        if n_missing:
            raise KeyError(f"clipped_group_sums: {n_missing} establishment(s) have no bound")
    return joined


def group_max_bounds(
    spark: SparkSession,
    data: SparkEstablishmentData,
    by: Sequence[str],
    bounds: pl.DataFrame,
    attributes: Sequence[str],
) -> pl.DataFrame:
    """Per group, the largest bound of each attribute, identical to the Polars engine's."""
    from pyspark.sql import functions as sf

    joined = _with_bounds(spark, data, by, bounds, attributes)
    aggs = [sf.max(bound_column(a)).alias(bound_column(a)) for a in attributes]
    out = _aggregate(joined, by, aggs)
    return _finish(out, by, [], [bound_column(a) for a in attributes])


def clipped_group_sums(
    spark: SparkSession,
    data: SparkEstablishmentData,
    by: Sequence[str],
    bounds: pl.DataFrame,
    attributes: Sequence[str],
) -> pl.DataFrame:
    """Exact clipped sums T_ℓ = Σ min(r_j, u*_ℓ), identical to the Polars engine's."""
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    joined = _with_bounds(spark, data, by, bounds, attributes)
    if by:
        w = Window.partitionBy(*by)
        ustar = [sf.max(bound_column(a)).over(w).alias(bound_column(a)) for a in attributes]
    else:  # one group: its maxima are one small aggregation (no single-partition window)
        row = joined.agg(*[sf.max(bound_column(a)) for a in attributes]).first()
        ustar = [
            sf.lit(None if row is None else row[i]).cast("double").alias(bound_column(a))
            for i, a in enumerate(attributes)
        ]
    joined = joined.select(*by, *[sf.col(a).cast("double").alias(a) for a in attributes], *ustar)
    aggs: list[Column] = []
    for a in attributes:
        aggs += _parts(sf.least(sf.col(a), sf.col(bound_column(a))), a)
    aggs += [sf.first(bound_column(a)).alias(bound_column(a)) for a in attributes]
    out = _aggregate(joined, by, aggs)
    return _finish(out, by, attributes, [bound_column(a) for a in attributes])
