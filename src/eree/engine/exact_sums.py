"""Exact, order-free sums: why every engine's establishment sums are the same bits.

A value's integer part and its fractional part in units of 2⁻³² are integers computed
exactly in IEEE arithmetic (:func:`exact_parts`); their 64-bit sums do not depend on the
order of summation, so a sum assembled from them (:func:`exact_sums`) is the same in
every run, partitioning and engine (docs/design.md#core-objects). The Polars engine sums the
expressions of :func:`exact_parts`; the Spark engine
(:mod:`eree.engine.spark.establishments`) computes the same integers in Spark SQL. Both
finish with :func:`exact_sums`.
"""

from __future__ import annotations

import numpy as np
import polars as pl

__all__ = ["FRACTION_BITS", "MAX_EXACT_TOTAL", "exact_parts", "exact_sums"]

#: fractional parts are kept in units of 2⁻³² (see :func:`exact_sums`)
FRACTION_BITS = 32
#: a group's number of values times its largest value must stay below this bound, so
#: that the 64-bit sums of :func:`exact_parts` cannot overflow
MAX_EXACT_TOTAL = 2**62


def exact_parts(value: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """Integer and fractional parts of a non-negative value, both as Int64 integers.

    ``hi = floor(v)`` and ``lo = floor((v - hi)·2³²)``: both are computed exactly in
    IEEE arithmetic, so every engine gets the same integers. Their sums are exact and
    do not depend on the order of summation (see :func:`exact_sums`). Values at or
    above :data:`MAX_EXACT_TOTAL` give 0 here (never a conversion error, whose message
    would show the value); :func:`exact_sums` refuses their groups.
    """
    v = pl.when(value < float(MAX_EXACT_TOTAL)).then(value).otherwise(0.0)
    hi = v.floor()
    lo = ((v - hi) * float(2**FRACTION_BITS)).floor()
    return hi.cast(pl.Int64), lo.cast(pl.Int64)


def exact_sums(
    hi: np.ndarray,
    lo: np.ndarray,
    what: str = "sum",
    *,
    count: np.ndarray | None = None,
    largest: np.ndarray | None = None,
) -> np.ndarray:
    """Per-group sums from the exact integer sums of :func:`exact_parts`.

    The result is ``Σhi + Σlo·2⁻³²`` as Float64: exact for values that are multiples of
    2⁻³² (in particular integers such as employment and wages in dollars) as long as
    the total is below 2⁵³; other values are rounded down to a multiple of 2⁻³² before
    summing (at most 2⁻³² per value, never up, so a clipped value stays within its
    bound). Either way the result is a function of the multiset of values: the same in
    every run, partitioning and engine.

    Args:
        hi, lo: per group, the sums of the integer and fractional parts.
        what: the attribute (for the error message).
        count, largest: per group, the number of values and the largest value; a group
            with ``count·largest`` at or above :data:`MAX_EXACT_TOTAL` is refused.

    Raises:
        DataValidationError: a group's values are too large to be summed exactly (its
            float sum could be inexact or non-finite). The message names the attribute,
            never a value.
    """
    from eree.errors import DataValidationError

    hi = np.asarray(hi)
    too_big = np.abs(hi.astype(np.float64)) >= MAX_EXACT_TOTAL
    if count is not None and largest is not None:
        bound = np.asarray(count, dtype=np.float64) * np.nan_to_num(
            np.asarray(largest, dtype=np.float64), nan=0.0
        )
        too_big |= bound >= MAX_EXACT_TOTAL
    if too_big.any():
        raise DataValidationError(
            f"the sums of {what!r} are too large to compute exactly (a group's values reach "
            "2^62 in total); its sums would be inexact or non-finite",
            file="(engine)",
            column=what,
            rule="too-large",
        )
    return hi.astype(np.float64) + np.asarray(lo).astype(np.float64) / float(2**FRACTION_BITS)
