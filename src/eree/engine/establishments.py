"""Cell statistics of establishment (QCEW-like) data for the GEDP mechanisms (Polars).

The only code that scans establishment rows. Functions take the establishment frame
(id + public + confidential columns, as loaded by
:func:`eree.data.establishments.load_establishments`) as a Polars DataFrame or LazyFrame
and return small Polars frames keyed by the group columns, sorted by the keys:

* :func:`group_sums` — per group of public attributes (``by``; ``[]`` = one total row):
  the sum of each confidential attribute and the (public) number of establishments.
  Groups come from the public frame: every combination that occurs, none other
  (DESIGN.md §4).
* :func:`identity_values` — the identity query: one row per establishment.
* :func:`clipped_group_sums` — for the pnc-mechanism (Def 6.8): per group ℓ and attribute
  i, the group's largest bound :math:`u^*_\\ell=\\max_{j\\in\\ell}u_{j,i}` and the clipped
  sum :math:`T_\\ell=\\sum_{j\\in\\ell}\\min(r_j[C_i],u^*_\\ell)`.

Sums and clipped sums are confidential; the key columns, establishment counts and the u*
(functions of public bounds) are public.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

__all__ = [
    "ESTABLISHMENTS",
    "bound_column",
    "clipped_group_sums",
    "group_sums",
    "identity_values",
]

#: name of the public establishment-count column in group results
ESTABLISHMENTS = "establishments"


def bound_column(attribute: str) -> str:
    """Column of :func:`clipped_group_sums` holding u*_ℓ for ``attribute``."""
    return f"{attribute}__ustar"


def _collect(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    return frame if isinstance(frame, pl.DataFrame) else frame.collect()


def _check_columns(names: Sequence[str], need: Sequence[str], what: str) -> None:
    missing = [c for c in need if c not in names]
    if missing:
        raise KeyError(f"{what}: column(s) {missing} not in the establishment frame")


def _groups(df: pl.DataFrame, by: Sequence[str]) -> tuple[pl.DataFrame, np.ndarray]:
    """The sorted distinct key combinations and each row's group index (row order kept)."""
    if not by:
        return pl.DataFrame(), np.zeros(df.height, dtype=np.int64)
    keys = df.select(list(by)).unique().sort(list(by))
    idx = (
        df.select(list(by))
        .join(keys.with_row_index("__g"), on=list(by), how="left", maintain_order="left")
        .get_column("__g")
        .to_numpy()
        .astype(np.int64)
    )
    return keys, idx


def _sums(idx: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Per-group sums accumulated sequentially in row order.

    Deterministic (Polars' parallel group-by float sums can differ in the last bits from
    run to run, which would break seeded reproducibility and engine parity) and exact for
    integer-valued data below 2⁵³.
    """
    return np.bincount(idx, weights=values, minlength=n_groups).astype(np.float64)


def group_sums(
    frame: pl.DataFrame | pl.LazyFrame, by: Sequence[str], attributes: Sequence[str]
) -> pl.DataFrame:
    """Group-by sums of ``attributes`` over the groups of ``by`` (``[]``: one total row).

    Returns:
        ``by`` columns (sorted), one Float64 sum per attribute, and
        :data:`ESTABLISHMENTS` (Int64).
    """
    df = _collect(frame)
    _check_columns(df.columns, [*by, *attributes], "group_sums")
    keys, idx = _groups(df, by)
    n_groups = keys.height if by else 1
    cols: dict[str, Any] = {}
    for a in attributes:
        cols[a] = _sums(idx, df.get_column(a).cast(pl.Float64).to_numpy(), n_groups)
    cols[ESTABLISHMENTS] = np.bincount(idx, minlength=n_groups).astype(np.int64)
    return (
        keys.with_columns(**{k: pl.Series(v) for k, v in cols.items()})
        if by
        else pl.DataFrame(cols)
    )


def identity_values(
    frame: pl.DataFrame | pl.LazyFrame, id_column: str, attributes: Sequence[str]
) -> pl.DataFrame:
    """The identity query: ``id_column`` and each attribute (Float64), in the frame's order."""
    df = _collect(frame)
    _check_columns(df.columns, [id_column, *attributes], "identity_values")
    return df.select([pl.col(id_column), *[pl.col(a).cast(pl.Float64) for a in attributes]])


def clipped_group_sums(
    frame: pl.DataFrame | pl.LazyFrame,
    by: Sequence[str],
    id_column: str,
    bounds: pl.DataFrame,
    attributes: Sequence[str],
) -> pl.DataFrame:
    """Per-group clipped sums for the pnc-mechanism (Def 6.8 steps 1 and 3).

    Args:
        frame: the establishment frame.
        by: grouping attributes (``[]``: one total group).
        id_column: the establishment id column.
        bounds: ``id_column`` and, per attribute, a column named like the attribute with
            the per-establishment upper bounds u_{j,i} (Thm 6.7); every establishment needs
            a bound.
        attributes: the attributes to sum.

    Returns:
        ``by`` columns (sorted); per attribute ``a`` the clipped sum T_ℓ (column ``a``) and
        u*_ℓ (column :func:`bound_column` ``(a)``); and :data:`ESTABLISHMENTS`.

    Raises:
        KeyError: a column is missing, or an establishment has no bound.
    """
    df = _collect(frame)
    _check_columns(df.columns, [*by, id_column, *attributes], "clipped_group_sums")
    _check_columns(bounds.columns, [id_column, *attributes], "clipped_group_sums bounds")
    b = bounds.select(
        [
            pl.col(id_column).cast(pl.Utf8),
            *[pl.col(a).cast(pl.Float64).alias(bound_column(a)) for a in attributes],
        ]
    )
    joined = (
        df.select([*by, id_column, *attributes])
        .with_columns(pl.col(id_column).cast(pl.Utf8))
        .join(b, on=id_column, how="left", maintain_order="left")
    )
    if attributes:
        n_missing = joined.get_column(bound_column(attributes[0])).null_count()
        if n_missing:
            raise KeyError(f"clipped_group_sums: {n_missing} establishment(s) have no bound")
    keys, idx = _groups(joined, by)
    n_groups = keys.height if by else 1
    cols: dict[str, Any] = {}
    for a in attributes:
        u = joined.get_column(bound_column(a)).to_numpy().astype(np.float64)
        u_star = np.full(n_groups, -np.inf)
        np.maximum.at(u_star, idx, u)
        r = joined.get_column(a).cast(pl.Float64).to_numpy()
        cols[a] = _sums(idx, np.minimum(r, u_star[idx]), n_groups)
        cols[bound_column(a)] = u_star
    cols[ESTABLISHMENTS] = np.bincount(idx, minlength=n_groups).astype(np.int64)
    return (
        keys.with_columns(**{k: pl.Series(v) for k, v in cols.items()})
        if by
        else pl.DataFrame(cols)
    )
