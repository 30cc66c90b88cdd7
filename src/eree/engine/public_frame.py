"""What the release path learns of the public workplace frame, the same from every engine.

Two facts, both public (docs/design.md#er-ee-data: the workplace frame is public):

* each workplace's *establishment index*: its position among all workplace ids in sorted
  order — an order no file layout or partitioning changes, so that a mechanism drawing one
  value per establishment (noise infusion's distortion factors) gives the same table on
  every engine;
* the *workplace counts*: the frame's establishments per combination of workplace
  attributes (establishments per cell, and which tract lies in which county), without
  the frame itself.

The engines compute the inputs (the ids; the counts per combination) their own way and
finish here, so the two results are the same frames by construction.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from eree.data.schema import WORKPLACE_ID
from eree.engine.base import ESTABLISHMENT_INDEX, ESTABLISHMENTS

__all__ = ["establishment_index", "sorted_workplace_counts"]


def establishment_index(workplace_ids: pl.Series) -> pl.DataFrame:
    """``workplace_id`` (Utf8) → :data:`~eree.engine.base.ESTABLISHMENT_INDEX` (UInt32).

    The index is the id's rank among ``workplace_ids`` (every workplace of the public
    frame, each once) in sorted order, 0 … n − 1.
    """
    ids = workplace_ids.cast(pl.Utf8).sort()
    return pl.DataFrame({WORKPLACE_ID: ids}).with_row_index(ESTABLISHMENT_INDEX)


def sorted_workplace_counts(counts: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    """Per-combination counts as the engine contract gives them: keys Utf8, sorted.

    ``counts`` has the columns ``by`` and :data:`~eree.engine.base.ESTABLISHMENTS`, one
    row per combination (any key dtype, any order).
    """
    out = counts.select(
        *[pl.col(a).cast(pl.Utf8) for a in by], pl.col(ESTABLISHMENTS).cast(pl.Int64)
    )
    return out.sort(list(by)) if by else out
