"""Reading published tables into the format: eree release folders and linked tables.

**An eree release folder** (``eree protect``): ``manifest.json`` lists each table's file,
its ``by``, its mechanism and public parameters, and whether post-processing changed the
published values. Each table becomes cells of the format (:mod:`.tables`):

* ``noise_infusion`` (no formal guarantee; s, t confidential): a published 0 is an exact
  0 (zeros are preserved); a published whole number up to the small-cell limit S is a
  range [1, ⌊S⌋] (a replaced small count); any other value v is a range
  [v/(1 + t), v/(1 − t)] for the attacker's assumed outer bound t of the distortion
  (``infusion_t``, default eree's public default 0.15): every establishment's factor
  lies in [1 − t, 1 + t], so does their weighted mean.
* Gaussian mechanisms (``psi``, ``pnc``, ``estab_gaussian``, ``adaptive``): ``noisy``,
  law ``gaussian``, σ = the published standard error.
* Laplace-type mechanisms (``laplace``, ``truncated_laplace``, ``smooth_laplace``,
  ``smooth_gamma``, ``log_laplace``): ``noisy``, law ``laplace``, scale = published
  std/√2; without a published std, Log-Laplace's scale is (v + γ)·λ (its first-order
  law around the published value, Haney et al. Alg 1), and any other law gets scale 1
  (equal weights; said in ``notes``). Smooth Gamma's and Log-Laplace's laws are not
  Laplace: the attacker's L1 is an approximation (said in ``notes``).
* Post-processed values (``[postprocess]``): the raw mechanism's law is used, and the
  notes say so (post-processing usually lowers the error, so the attacker under-weights
  these tables).

**Linked tables** (:func:`from_linked_tables`): the suppression package's tables with a
pattern — the published cells exact, suppressed cells unknown — with the package's own
additivity relations (the industry hierarchy is in the codes, not the keys).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from eree.errors import DataValidationError
from eree.evaluate.reconstruct.tables import PublishedTables, concat, from_frame
from eree.suppression.tables import LinkedTables

__all__ = ["GAUSSIAN_MECHANISMS", "from_linked_tables", "infusion_frame", "read_release"]

#: mechanisms whose published noise is Gaussian
GAUSSIAN_MECHANISMS = ("psi", "pnc", "estab_gaussian", "adaptive")
_LAPLACE_EXACT = ("laplace", "truncated_laplace", "smooth_laplace")


def _infusion_cells(v: np.ndarray, t: float, small: float) -> dict[str, np.ndarray]:
    k = math.floor(small)
    status = np.where(v == 0, "exact", "range")
    is_small = (v > 0) & (v <= k) & (np.abs(v - np.round(v)) < 1e-9)
    lo = np.where(is_small, 1.0, v / (1.0 + t))
    hi = np.where(is_small, float(k), v / (1.0 - t))
    lo = np.where(v == 0, 0.0, lo)
    hi = np.where(v == 0, 0.0, hi)
    return {"status": status, "lower": lo, "upper": hi}


def infusion_frame(
    keys: pl.DataFrame,
    published: np.ndarray,
    establishments: np.ndarray,
    workplace_by: list[str],
    *,
    t: float = 0.15,
    small_cell: float = 2.5,
    table: str = "noise_infusion",
) -> pl.DataFrame:
    """A noise-infused table in the format, with each lone establishment's shared factor.

    Cells are read as in :func:`read_release` (zeros exact, replaced small counts the range
    [1, ⌊S⌋], any other value v the range [v/(1 + t), v/(1 − t)]). A workplace combination
    (the ``workplace_by`` keys) whose public number of establishments is 1 has every
    infused cell (not the zeros, not the replaced small counts) published as f·x with its
    one factor f: those cells get the ``factor`` group of their combination
    (:mod:`.factors`), the encoding of Haney et al. §5.2's shape and size attacks.

    Args:
        keys: the cells' key columns (one row per cell).
        published: the published values.
        establishments: per cell, the public number of establishments of its workplace
            combination.
        workplace_by: the keys that name the workplace combination.
        t, small_cell: the attacker's assumed outer distortion bound and the small-cell
            limit S.
        table: the table's name.
    """
    v = np.asarray(published, dtype=np.float64)
    est = np.asarray(establishments, dtype=np.float64)
    cells = _infusion_cells(v, t, small_cell)
    k = math.floor(small_cell)
    infused = (v > 0) & ~((v <= k) & (np.abs(v - np.round(v)) < 1e-9))
    frame = keys.select([pl.col(c).cast(pl.Utf8) for c in keys.columns])
    group = pl.concat_str([pl.col(c) for c in workplace_by], separator="|")
    return frame.with_columns(
        pl.lit(table).alias("table"),
        pl.Series("status", cells["status"]),
        pl.Series("value", v),
        pl.Series("lower", cells["lower"]),
        pl.Series("upper", cells["upper"]),
        pl.Series("establishments", est),
        pl.when(pl.Series(infused & (est == 1))).then(group).otherwise(None).alias("factor"),
    )


def read_release(
    folder: str | Path,
    *,
    statistic: str | None = None,
    infusion_t: float = 0.15,
    tables: tuple[str, ...] | None = None,
) -> tuple[PublishedTables, list[str]]:
    """The tables of an eree release folder, in the format, and notes on the laws read.

    Args:
        folder: the release folder (``manifest.json``, ``tables/``).
        statistic: the statistic column (default: the table's first; ``jobs`` for counts).
        infusion_t: the attacker's assumed outer distortion bound of noise infusion.
        tables: only these tables (default: all).

    Raises:
        DataValidationError: no manifest, a table file missing, a column missing (named).
    """
    d = Path(folder)
    mpath = d / "manifest.json"
    if not mpath.is_file():
        raise DataValidationError("not an eree release folder (no manifest.json)", file=str(d))
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise DataValidationError("not valid JSON", file=str(mpath)) from None
    queries = manifest.get("queries")
    if not isinstance(queries, list) or not queries:
        raise DataValidationError("key 'queries' missing or empty", file=str(mpath))
    post = manifest.get("postprocess") or {}
    postprocessed = bool(post.get("consistent") or post.get("integer") or post.get("nonnegative"))
    notes: list[str] = []
    parts: list[PublishedTables] = []
    counts = True
    for q in queries:
        name = str(q.get("name"))
        if tables is not None and name not in tables:
            continue
        by = [str(b) for b in q.get("by", [])]
        f = d / str(q.get("file", f"tables/{name}.parquet"))
        if not f.is_file():
            raise DataValidationError(f"table {name!r}: its file {f} is missing", file=str(mpath))
        frame = pl.read_parquet(f)
        stats = [s for s in (q.get("uncertainty") or {}) if s in frame.columns]
        stat = statistic if statistic is not None else (stats[0] if stats else None)
        if stat is None or stat not in frame.columns:
            raise DataValidationError(
                f"missing (give the statistic; columns: {', '.join(frame.columns)})",
                file=str(f),
                column=str(stat),
            )
        if stat != "jobs":
            counts = False
        missing = [b for b in by if b not in frame.columns]
        if missing:
            raise DataValidationError("key column missing", file=str(f), column=missing[0])
        v = frame.get_column(stat).cast(pl.Float64).to_numpy()
        mech = str(q.get("mechanism", ""))
        params: dict[str, Any] = q.get("params") or {}
        cols: dict[str, Any] = {"table": [name] * frame.height}
        for b in by:
            cols[b] = frame.get_column(b).cast(pl.Utf8)
        cols["value"] = v
        std_col = f"{stat}_std"
        std = (
            frame.get_column(std_col).cast(pl.Float64).to_numpy()
            if std_col in frame.columns
            else np.full(frame.height, np.nan)
        )
        if mech == "noise_infusion":
            cols |= _infusion_cells(v, infusion_t, float(params.get("small_cell", 2.5)))
            notes.append(
                f"{name}: noise infusion read as ranges for an assumed distortion bound "
                f"t = {infusion_t:g} (zeros exact)"
            )
        else:
            gauss = mech in GAUSSIAN_MECHANISMS
            scale = std if gauss else std / math.sqrt(2.0)
            if np.isnan(scale).any():
                if mech == "log_laplace" and "lambda" in params:
                    lam, gam = float(params["lambda"]), float(params.get("gamma", 0.0))
                    fill = (np.maximum(v, 0.0) + gam) * lam
                    notes.append(f"{name}: Log-Laplace read as Laplace of scale (v + γ)·λ")
                else:
                    fill = np.ones(frame.height)
                    notes.append(f"{name}: no published std: scale 1 (equal weights)")
                scale = np.where(np.isnan(scale), fill, scale)
            if not gauss and mech not in _LAPLACE_EXACT and mech != "log_laplace":
                notes.append(f"{name}: the {mech} law read as Laplace (an approximation)")
            cols["status"] = ["noisy"] * frame.height
            cols["law"] = ["gaussian" if gauss else "laplace"] * frame.height
            cols["scale"] = np.maximum(scale, 1e-9)
            if postprocessed:
                notes.append(f"{name}: post-processed values read with the raw mechanism's law")
        parts.append(from_frame(pl.DataFrame(cols), source=str(f), integer=True))
    if not parts:
        raise DataValidationError("none of the tables asked for is in the release", file=str(mpath))
    out = concat(parts)
    if not counts:
        out = PublishedTables(out.cells, out.keys, out.tables, None, False, str(d))
    return PublishedTables(out.cells, out.keys, out.tables, None, out.integer, str(d)), notes


def from_linked_tables(
    tables: LinkedTables,
    suppressed: np.ndarray,
    attribute: str,
    *,
    integer: bool = False,
    estimate: np.ndarray | None = None,
    std: np.ndarray | None = None,
) -> PublishedTables:
    """The suppression package's tables as published: exact cells, suppressed cells unknown.

    Keys: ``table_code`` and each dimension's code path (``<dim>``); ``establishments``
    is the public count. The relations are the package's.

    With ``estimate`` and ``std`` (a GEDP release's cells,
    :func:`eree.evaluate.suppression_compare.gedp_cell_release`) the cells not suppressed
    are ``noisy``, law Gaussian with σ = the published std (the manifest's law of
    ``psi`` and ``pnc``; for ψ = √ the estimate's law is Gaussian only approximately), so
    a GEDP release gets the interval audit like any other.
    """
    c = tables.cells
    keys = ["table_code", *[d.name for d in tables.layout.dimensions]]
    sup = np.asarray(suppressed, dtype=bool)
    noisy = estimate is not None
    if noisy:
        if std is None:
            raise ValueError("a noisy release needs the cells' standard errors")
        vals = np.asarray(estimate, dtype=np.float64)
        sd = np.asarray(std, dtype=np.float64)
        sup = sup | np.isnan(vals) | ~(sd > 0)
        status = np.where(sup, "suppressed", "noisy")
    else:
        vals = tables.values(attribute)
        sd = np.full(vals.size, np.nan)
        status = np.where(sup, "suppressed", "exact")
    frame = c.select([pl.col(k).cast(pl.Utf8) for k in keys]).with_columns(
        pl.Series("table", c.get_column("table_code").cast(pl.Utf8)),
        pl.Series("status", status),
        pl.Series("value", np.where(sup, np.nan, vals)).fill_nan(None),
        pl.Series("law", ["gaussian" if x == "noisy" else None for x in status], dtype=pl.Utf8),
        pl.Series("scale", np.where(status == "noisy", sd, np.nan)).fill_nan(None),
        pl.Series("establishments", tables.counts().astype(np.float64)),
    )
    cells = frame.select(
        [
            "table",
            *keys,
            "status",
            "value",
            *[pl.lit(None, dtype=pl.Float64).alias(x) for x in ("base", "lower", "upper")],
            "law",
            "scale",
            "establishments",
            pl.lit(None, dtype=pl.Utf8).alias("factor"),
        ]
    )
    by = {str(t): tuple(keys) for t in cells.get_column("table").unique().to_list()}
    finest = (tables.levels == np.array([len(d.levels) - 1 for d in tables.layout.dimensions])).all(
        axis=1
    )
    return PublishedTables(
        cells, tuple(keys), by, tables.relations, integer, "linked tables", finest
    )
