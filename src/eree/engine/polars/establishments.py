r"""Cell statistics of establishment (QCEW-like) data for the GEDP mechanisms (Polars).

The only code that scans establishment rows. Functions take the establishment frame
(id + public + confidential columns, as loaded by
:func:`eree.data.establishments.load_establishments`) as a Polars DataFrame or LazyFrame
and return small Polars frames keyed by the group columns, sorted by the keys (the
columns of :mod:`eree.engine.base`):

* :func:`group_sums` — per group of public attributes (``by``; ``[]`` = one total row):
  the sum of each confidential attribute and the (public) number of establishments.
  Groups come from the public frame: every combination that occurs, none other
  (docs/design.md#cells).
* :func:`identity_values` — the identity query: one row per establishment, sorted by id.
* :func:`clipped_group_sums` — for the pnc-mechanism (Def 6.8): per group ℓ and attribute
  i, the group's largest bound :math:`u^*_\ell=\max_{j\in\ell}u_{j,i}` and the clipped
  sum :math:`T_\ell=\sum_{j\in\ell}\min(r_j[C_i],u^*_\ell)`.

* :func:`group_max_bounds` — per group, u*_ℓ alone.

Sums are exact and do not depend on row order (:mod:`eree.engine.exact_sums`), so the
Spark engine (:mod:`eree.engine.spark.establishments`) returns the same bits. Sums and
clipped sums are confidential; the key columns, establishment counts and the u*
(functions of public bounds) are public.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from eree.engine.base import ESTABLISHMENTS, bound_column, result_order
from eree.engine.exact_sums import exact_parts, exact_sums

__all__ = [
    "clipped_group_sums",
    "group_max_bounds",
    "group_sums",
    "identity_values",
]


def _check_columns(names: Sequence[str], need: Sequence[str], what: str) -> None:
    missing = [c for c in need if c not in names]
    if missing:
        raise KeyError(f"{what}: column(s) {missing} not in the establishment frame")


def _lazy(frame: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    return frame.lazy() if isinstance(frame, pl.DataFrame) else frame


def _names(frame: pl.DataFrame | pl.LazyFrame) -> list[str]:
    return frame.columns if isinstance(frame, pl.DataFrame) else frame.collect_schema().names()


def _exact_group_sums(
    lf: pl.LazyFrame, by: Sequence[str], values: Mapping[str, pl.Expr], extra: Sequence[pl.Expr]
) -> pl.DataFrame:
    """Group ``lf`` by ``by`` (sorted keys; ``[]``: one row) with exact sums of ``values``."""
    aggs: list[pl.Expr] = []
    for a, v in values.items():
        hi, lo = exact_parts(v)
        aggs += [
            hi.sum().alias(f"__hi_{a}"),
            lo.sum().alias(f"__lo_{a}"),
            v.max().alias(f"__max_{a}"),
        ]
    aggs += [*extra, pl.len().cast(pl.Int64).alias(ESTABLISHMENTS)]
    if by:
        out = lf.group_by(list(by)).agg(aggs).sort(list(by)).collect()
    else:
        out = lf.select(aggs).collect()
    cols = [out.get_column(k) for k in by]
    cols += [
        pl.Series(
            a,
            exact_sums(
                out[f"__hi_{a}"].to_numpy(),
                out[f"__lo_{a}"].to_numpy(),
                a,
                count=out[ESTABLISHMENTS].to_numpy(),
                largest=out[f"__max_{a}"].to_numpy(),
            ),
        )
        for a in values
    ]
    cols += [out.get_column(e.meta.output_name()) for e in extra]
    cols.append(out.get_column(ESTABLISHMENTS))
    return pl.DataFrame(cols).select(result_order(by, list(values), cols))


def identity_values(
    frame: pl.DataFrame | pl.LazyFrame, id_column: str, attributes: Sequence[str]
) -> pl.DataFrame:
    """Identity answers: ``id_column`` (Utf8) and each attribute (Float64), sorted by id."""
    _check_columns(_names(frame), [id_column, *attributes], "identity_values")
    return (
        _lazy(frame)
        .select(
            [pl.col(id_column).cast(pl.Utf8), *[pl.col(a).cast(pl.Float64) for a in attributes]]
        )
        .sort(id_column)
        .collect()
    )


def group_sums(
    frame: pl.DataFrame | pl.LazyFrame, by: Sequence[str], attributes: Sequence[str]
) -> pl.DataFrame:
    """Group sums of the confidential attributes per combination of ``by`` keys.

    Columns: ``by`` keys (sorted), one exact Float64 sum per attribute, then
    :data:`ESTABLISHMENTS` (Int64). Groups are the key combinations that occur.
    """
    _check_columns(_names(frame), [*by, *attributes], "group_sums")
    values = {a: pl.col(a).cast(pl.Float64) for a in attributes}
    return _exact_group_sums(_lazy(frame), by, values, [])


def _with_bounds(
    frame: pl.DataFrame | pl.LazyFrame,
    by: Sequence[str],
    id_column: str,
    bounds: pl.DataFrame,
    attributes: Sequence[str],
    what: str,
) -> pl.LazyFrame:
    """The frame's ``by``, id and attributes with each attribute's bound and group max."""
    _check_columns(_names(frame), [*by, id_column, *attributes], what)
    _check_columns(bounds.columns, [id_column, *attributes], f"{what} bounds")
    b = bounds.lazy().select(
        pl.col(id_column).cast(pl.Utf8),
        *[pl.col(a).cast(pl.Float64).alias(bound_column(a)) for a in attributes],
    )
    lf = (
        _lazy(frame)
        .select([*by, id_column, *attributes])
        .with_columns(pl.col(id_column).cast(pl.Utf8))
        .join(b, on=id_column, how="left")
    )
    if attributes:
        n_missing = lf.select(pl.col(bound_column(attributes[0])).null_count()).collect().item()
        if n_missing:
            raise KeyError(f"{what}: {n_missing} establishment(s) have no bound")
    return lf


def group_max_bounds(
    frame: pl.DataFrame | pl.LazyFrame,
    by: Sequence[str],
    id_column: str,
    bounds: pl.DataFrame,
    attributes: Sequence[str],
) -> pl.DataFrame:
    """Per group, the largest public bound u*_ℓ = max_{j∈ℓ} u_{j,i} of each attribute.

    Returns:
        ``by`` keys (sorted), :func:`bound_column` ``(a)`` per attribute (Float64), then
        :data:`ESTABLISHMENTS` (Int64).
    """
    lf = _with_bounds(frame, by, id_column, bounds, attributes, "group_max_bounds")
    aggs = [pl.col(bound_column(a)).max() for a in attributes]
    aggs.append(pl.len().cast(pl.Int64).alias(ESTABLISHMENTS))
    if by:
        return lf.group_by(list(by)).agg(aggs).sort(list(by)).collect()
    return lf.select(aggs).collect()


def clipped_group_sums(
    frame: pl.DataFrame | pl.LazyFrame,
    by: Sequence[str],
    id_column: str,
    bounds: pl.DataFrame,
    attributes: Sequence[str],
) -> pl.DataFrame:
    """Clipped sums for the pnc-mechanism (Def 6.8): T_ℓ = Σ_{j∈ℓ} min(r_j, u*_ℓ).

    Returns:
        ``by`` keys (sorted); per attribute ``a`` the exact clipped sum (column ``a``,
        Float64); per attribute u*_ℓ (:func:`bound_column` ``(a)``); then
        :data:`ESTABLISHMENTS` (Int64).
    """
    lf = _with_bounds(frame, by, id_column, bounds, attributes, "clipped_group_sums")
    if by:
        lf = lf.with_columns([pl.col(bound_column(a)).max().over(list(by)) for a in attributes])
    else:
        lf = lf.with_columns([pl.col(bound_column(a)).max() for a in attributes])
    values = {
        a: pl.min_horizontal(pl.col(a).cast(pl.Float64), pl.col(bound_column(a)))
        for a in attributes
    }
    extra = [pl.col(bound_column(a)).first() for a in attributes]
    return _exact_group_sums(lf, by, values, extra)
