"""The full cell frame on the driver, from the two small results a Spark query collects.

The public workplace combinations × the full declared worker domain (docs/design.md#cells) are
assembled in Polars/NumPy, exactly as the Polars engine does it: the output has to be on
the driver anyway and is no larger than what was collected plus its zero cells, so a
Spark cross join would only add a shuffle and a larger collect; assembling it here also
guarantees the Polars engine's row order (workplace keys sorted by Polars, worker
attributes in declared-domain order) and dtypes by construction.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from eree.engine.cell_frame import cell_keys
from eree.engine.spark.coding import WORKER_CODE
from eree.errors import SpecError

__all__ = ["assemble"]

_F = "__eree_f"  # a workplace combination's row in the frame


def assemble(
    cells: pl.DataFrame,
    est: pl.DataFrame,
    wkeys: list[str],
    kkeys: list[str],
    domains: Mapping[str, tuple[str, ...]],
    D: int,
    full_frame: pl.DataFrame | None,
    truncated: bool,
    categorical: bool = False,
) -> pl.DataFrame:
    """Scatter the collected non-empty cells into the full frame (as the Polars engine)."""
    est = est.cast({a: pl.Utf8 for a in wkeys}).with_columns(
        pl.col("establishments").cast(pl.Int64)
    )
    if wkeys:
        if full_frame is not None:
            outside = est.join(full_frame, on=wkeys, how="anti")
            if outside.height:
                raise SpecError(f"workplace values outside the declared domains of {wkeys}")
            frame = full_frame.join(est, on=wkeys, how="left", maintain_order="left")
            frame = frame.with_columns(pl.col("establishments").fill_null(0))
        else:
            frame = est.sort(wkeys)
        frame = frame.with_row_index(_F)
        cells = cells.cast({a: pl.Utf8 for a in wkeys}).join(
            frame.select(*wkeys, _F), on=wkeys, how="left"
        )
        if cells[_F].null_count():  # pragma: no cover - every job's workplace is in est
            raise SpecError("a job's workplace combination is missing from the frame")
    else:
        # one combination (the total); no workplace means zero establishments
        frame = pl.DataFrame({"establishments": [int(est["establishments"].sum())]}).with_row_index(
            _F
        )
        cells = cells.with_columns(pl.lit(0, dtype=pl.UInt32).alias(_F))
    n_frame = frame.height
    idx = cells[_F].cast(pl.Int64).to_numpy() * D + cells[WORKER_CODE].cast(pl.Int64).to_numpy()

    def scatter(col: str) -> np.ndarray:
        out = np.zeros(n_frame * D, dtype=np.int64)
        out[idx] = cells[col].cast(pl.Int64).to_numpy()
        return out

    cols: dict[str, pl.Series | np.ndarray] = {}
    cols.update(cell_keys(frame, wkeys, kkeys, domains, D, categorical=categorical))
    n_est = frame["establishments"].to_numpy().astype(np.int64)
    cols["count"] = scatter("count")
    cols["x_v"] = scatter("x_v")
    cols["establishments"] = np.repeat(n_est, D)
    cols["has_establishment"] = np.repeat(n_est > 0, D)
    if truncated:
        cols["count_truncated"] = scatter("count_truncated")
    return pl.DataFrame(cols)
