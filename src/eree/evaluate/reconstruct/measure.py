"""Measuring a reconstruction against the true records (the auditor's own data).

Every output here is an aggregate rate; no record, count or value of the true data.

* **records rebuilt exactly**: Σ min(x*, t) / Σ t over every (unit, combination), t the
  true count, x* the reconstructed one — the share of true records the reconstruction
  contains (a multiset match within each unit).
* **units rebuilt exactly**: units whose reconstruction equals the truth.
* **uniques inferred**: true records alone in their unit with their combination (t = 1)
  that the reconstruction contains — an attacker who knows such a person works there
  learns every attribute.
* **attacker's confidence**: the reconstructed records the attacker marks certain
  (:mod:`.records`), and the share of those that are right (for exact tables: always 1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from eree.evaluate.reconstruct.records import Reconstruction

__all__ = ["job_truth", "measure"]


def job_truth(folder: str | Path, unit: str, attributes: tuple[str, ...]) -> pl.DataFrame:
    """True records per unit and combination from LODES-like job tables.

    ``folder`` holds ``workplace.parquet``, ``worker.parquet`` and ``job.parquet`` (as
    ``eree synth lodes`` writes them). Returns ``unit``, the attributes (text) and
    ``true`` (count).

    Raises:
        ValueError: a file or column is missing (named).
    """
    d = Path(folder)
    frames = {}
    for name in ("workplace", "worker", "job"):
        p = d / f"{name}.parquet"
        if not p.is_file():
            raise ValueError(f"{p}: missing (--truth needs workplace, worker and job parquet)")
        frames[name] = pl.scan_parquet(p)
    wp = frames["workplace"].collect_schema().names()
    wk = frames["worker"].collect_schema().names()
    for c in (unit, *attributes):
        if c not in wp and c not in wk:
            raise ValueError(f"{d}: column {c!r} is in neither workplace nor worker")
    wcols = ["workplace_id", *[c for c in (unit, *attributes) if c in wp]]
    pcols = ["worker_id", *[c for c in attributes if c in wk and c not in wp]]
    j = (
        frames["job"]
        .join(frames["workplace"].select(wcols), on="workplace_id")
        .join(frames["worker"].select(pcols), on="worker_id")
        .group_by([unit, *attributes])
        .agg(pl.len().alias("true"))
        .rename({unit: "unit"})
        .with_columns([pl.col(c).cast(pl.Utf8) for c in ("unit", *attributes)])
        .collect()
    )
    return j


def measure(
    rec: Reconstruction, truth: pl.DataFrame, *, units: list[str] | None = None
) -> dict[str, Any]:
    """Aggregate rates of a reconstruction against the truth (see the module docstring).

    Args:
        rec: the reconstruction.
        truth: ``unit``, the attributes, ``true`` (from :func:`job_truth`).
        units: restrict the truth to these units (default: the reconstruction's units).
    """
    attrs = list(rec.attributes)
    keep = units if units is not None else rec.units
    t = truth.filter(pl.col("unit").is_in(keep)).select(["unit", *attrs, "true"])
    r = rec.frame().rename({"count": "rebuilt"})
    j = t.join(r, on=["unit", *attrs], how="full", coalesce=True).with_columns(
        pl.col("true").fill_null(0), pl.col("rebuilt").fill_null(0), pl.col("certain").fill_null(0)
    )
    total = int(j.get_column("true").sum())
    rebuilt = int(j.get_column("rebuilt").sum())
    hit = int(j.select(pl.min_horizontal("true", "rebuilt")).to_series().sum())
    certain = int(j.get_column("certain").sum())
    certain_hit = int(j.select(pl.min_horizontal("true", "certain")).to_series().sum())
    uniq = j.filter(pl.col("true") == 1)
    per_unit = j.group_by("unit").agg(
        (pl.col("true") == pl.col("rebuilt")).all().alias("same"), pl.col("true").sum()
    )
    with_jobs = per_unit.filter(pl.col("true") > 0)
    return {
        "units": len(keep),
        "units_with_records": with_jobs.height,
        "units_skipped_too_large": int(rec.skipped_units.size),
        "units_failed": int(rec.failed_units.size),
        "records": total,
        "records_rebuilt": rebuilt,
        "records_rebuilt_exactly": hit,
        "share_rebuilt_exactly": hit / total if total else 0.0,
        "units_rebuilt_exactly": int(with_jobs.get_column("same").sum()),
        "share_units_rebuilt_exactly": (
            float(with_jobs.get_column("same").mean()) if with_jobs.height else 0.0  # type: ignore[arg-type]
        ),
        "unique_records": uniq.height,
        "uniques_inferred": int((uniq.get_column("rebuilt") >= 1).sum()),
        "share_uniques_inferred": (
            float((uniq.get_column("rebuilt") >= 1).mean()) if uniq.height else 0.0  # type: ignore[arg-type]
        ),
        "certain_records": certain,
        "share_rebuilt_certain": certain / rebuilt if rebuilt else 0.0,
        "certain_correct": certain_hit,
        "share_certain_correct": certain_hit / certain if certain else 1.0,
        "uniques_certain": int((uniq.get_column("certain") >= 1).sum()),
    }
