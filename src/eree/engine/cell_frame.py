"""The keys of the full cell frame, shared by both engines (docs/design.md#cells).

Cells are every combination of the queried workplace attributes in the public workplace
frame (F rows) crossed with the full declared domain of the queried worker attributes
(D combinations). Both engines build the key columns here, so their row order and dtypes
are the same by construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import product

import numpy as np
import polars as pl

from eree.errors import SpecError

__all__ = ["cell_keys", "domain_frame"]


def domain_frame(domains: Mapping[str, tuple[str, ...]], attrs: Sequence[str]) -> pl.DataFrame:
    """All combinations of the declared domains of ``attrs``, as a frame of Utf8 columns."""
    missing = [a for a in attrs if a not in domains]
    if missing:
        raise SpecError(f"attributes {missing} have no declared domain")
    rows = list(product(*(domains[a] for a in attrs)))
    return pl.DataFrame(
        {a: [r[i] for r in rows] for i, a in enumerate(attrs)},
        schema={a: pl.Utf8 for a in attrs},
    )


def cell_keys(
    frame: pl.DataFrame,
    workplace_by: Sequence[str],
    worker_by: Sequence[str],
    domains: Mapping[str, tuple[str, ...]],
    D: int,
    *,
    categorical: bool = False,
) -> dict[str, pl.Series]:
    """The key columns of the full F × D cell frame, in the engines' row order.

    Row ``f·D + d``: the ``f``-th workplace combination of ``frame`` (F rows of the
    ``workplace_by`` keys) and the ``d``-th combination of the worker attributes'
    declared domains (the first attribute varies slowest). With ``categorical`` the
    columns are :class:`polars.Enum` (categories: the values of ``frame``, or the
    declared domain), otherwise text.
    """
    n_frame = max(frame.height, 1) if workplace_by else 1
    cols: dict[str, pl.Series] = {}
    if workplace_by:
        rep = pl.Series(np.repeat(np.arange(n_frame, dtype=np.int64), D))
        for a in workplace_by:
            s = frame[a]
            if categorical:
                s = s.cast(pl.Enum(s.unique(maintain_order=True).drop_nulls()))
            cols[a] = s.gather(rep)
        del rep
    if worker_by:
        worker_frame = domain_frame(domains, worker_by)
        tile = pl.Series(np.tile(np.arange(D, dtype=np.int64), n_frame))
        for a in worker_by:
            s = worker_frame[a]
            if categorical:
                s = s.cast(pl.Enum(list(domains[a])))
            cols[a] = s.gather(tile)
    return cols
