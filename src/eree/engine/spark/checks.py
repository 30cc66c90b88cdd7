"""The rules of docs/design.md#validation as Spark row conditions, counted in one aggregation.

A :class:`Check` is a rule as a condition true on an offending row; :func:`run_checks`
counts every check's violations in one Spark aggregation and raises the first one, naming
the file, column, rule and, where allowed, an offending id (ids are not confidential;
values are never printed). :func:`attr_checks` gives the checks of attribute columns.
PySpark is imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from eree.data.location import DataPath
from eree.errors import DataValidationError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column
    from pyspark.sql import DataFrame as SparkDataFrame

__all__ = [
    "ID_MISSING",
    "Check",
    "attr_checks",
    "missing",
    "number_from_text",
    "outside",
    "parquet_rows",
    "run_checks",
]

#: the message of a missing id
ID_MISSING = "missing id (null or blank)"


def missing(c: str) -> Column:
    """Column ``c``'s value is missing: null or blank."""
    from pyspark.sql import functions as sf

    return sf.col(c).isNull() | (sf.trim(sf.col(c)) == "")


def outside(c: str, domain: Sequence[str]) -> Column:
    """Column ``c``'s value is missing (null) or not in ``domain``."""
    from pyspark.sql import functions as sf

    return sf.col(c).isNull() | ~sf.col(c).isin(list(domain))


#: the numbers the Polars loader parses from text (Polars' float syntax: no blanks, no
#: Java suffix such as ``1d``, no hexadecimal), as a Java regular expression
_NUMBER_SYNTAX = r"(?i)^[+-]?(([0-9]+[.]?[0-9]*|[.][0-9]+)(e[+-]?[0-9]+)?|inf(inity)?|nan)$"


def number_from_text(c: str) -> tuple[Column, Column]:
    """Column ``c`` (text) as a number, and whether it is text that does not parse.

    Exactly the Polars loader's parse (:func:`eree.data.io.read_table`): Spark's own cast
    also accepts surrounding blanks, ``1d``/``1f`` and hexadecimal numbers and reads
    ``+nan`` as missing, so it is gated by Polars' syntax. A value that does not parse is
    null in the number; a blank or missing value is null in both (a missing value).
    """
    from pyspark.sql import functions as sf

    v = sf.col(c)
    parses = v.rlike(_NUMBER_SYNTAX)
    is_nan = sf.lower(v).rlike(r"^[+-]?nan$")
    number = (
        sf.when(~parses, sf.lit(None).cast("double"))
        .when(is_nan, sf.lit(float("nan")))
        .otherwise(sf.expr(f"try_cast(`{c}` as double)"))
    )
    bad = v.isNotNull() & (v != "") & ~parses
    return number, bad


def parquet_rows(path: Path) -> int:
    """The rows of a Parquet file, from its footer, read as the Polars loader reads it.

    Spark reads some files the Polars loader refuses (a footer whose key-value metadata
    is corrupt); both engines must refuse the same inputs, with the same errors, so the
    footer is read here (:func:`eree.data.io.read_header`).

    Raises:
        DataValidationError: the Polars loader's error for the file.
    """
    import polars as pl

    from eree.data.io import read_header

    read_header(path)
    try:
        return int(pl.scan_parquet(path).select(pl.len()).collect().item())
    except Exception as exc:  # polars raises various types
        raise DataValidationError(
            f"not a readable Parquet file ({type(exc).__name__})",
            file=str(path),
            rule="unparseable",
        ) from None


@dataclass(frozen=True)
class Check:
    """An input rule as a row condition: ``violation`` true on an offending row.

    See docs/design.md#validation.

    ``message`` names the rule, never a value of an offending row (not even its id:
    an error message repeats no data value). Spark does not number rows: this error
    names file and column, and the engine gives the Polars loader's line for the same
    input instead, row included, where that loader reads the files
    (:func:`eree.engine.spark.session.spark_input_error`).
    """

    violation: Column
    column: str
    rule: str
    message: str


def run_checks(
    df: SparkDataFrame,
    file: DataPath,
    checks: Sequence[Check],
    *,
    unique: str | None = None,
    unique_rule: str = "duplicate-id",
    unique_message: str = "id appears more than once",
) -> int:
    """Count every check's violations in one Spark aggregation; raise on the first one.

    Order: the ``missing-id`` checks, then uniqueness of ``unique`` (if given), then the
    other checks in the order given.

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

    def fail(c: Check) -> None:
        raise DataValidationError(c.message, file=str(file), column=c.column, rule=c.rule)

    for i, c in enumerate(checks):
        if c.rule == "missing-id" and vals[i]:
            fail(c)
    if unique is not None and vals[len(checks) + 1] != n_rows:
        raise DataValidationError(
            unique_message,
            file=str(file),
            column=unique,
            rule=unique_rule,
        )
    for i, c in enumerate(checks):
        if c.rule != "missing-id" and vals[i]:
            fail(c)
    return n_rows


def attr_checks(attrs: Sequence[str], doms: Mapping[str, Sequence[str]]) -> list[Check]:
    """Attributes with a declared domain must be in it; the others must be present."""
    out = []
    for a in attrs:
        if a in doms:
            listed = ", ".join(doms[a])
            msg = f"value missing or not in declared domain of {a!r} ({listed})"
            out.append(Check(outside(a, doms[a]), a, "domain", msg))
        else:
            msg = "missing value (null or blank)"
            out.append(Check(missing(a), a, "missing-value", msg))
    return out
