"""One reconstruction audit of published tables: intervals, records, rates (aggregate only).

What :func:`reconstruction_audit` returns — and ``eree audit reconstruct`` prints and
writes — is counts and rates: cells pinned, records rebuilt, uniques inferred, the
attacker's confidence, time and peak memory. No cell value, record or interval of the
confidential data leaves it.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from eree.engine.unitmap import UnitMapper
from eree.evaluate.reconstruct.intervals import interval_audit
from eree.evaluate.reconstruct.measure import job_truth, measure
from eree.evaluate.reconstruct.records import ReconstructConfig, reconstruct
from eree.evaluate.reconstruct.tables import PublishedTables

__all__ = ["peak_memory_mb", "reconstruction_audit", "restrict_units", "summary_lines"]


def peak_memory_mb() -> float:
    """Peak resident memory of this process so far, in MB."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024.0 / (1024.0 if sys.platform == "darwin" else 1.0)


def restrict_units(published: PublishedTables, unit: str, prefix: str) -> PublishedTables:
    """Only the cells of units whose code starts with ``prefix`` (and no coarser table)."""
    if unit not in published.keys:
        raise ValueError(f"the tables have no key {unit!r}")
    keep = published.cells.get_column(unit).str.starts_with(prefix).fill_null(False)
    cells = published.cells.filter(keep)
    if cells.height == 0:
        raise ValueError(f"no unit code starts with {prefix!r}")
    tables = {t: b for t, b in published.tables.items() if unit in b}
    return PublishedTables(cells, published.keys, tables, None, published.integer, published.source)


def reconstruction_audit(
    published: PublishedTables,
    cfg: ReconstructConfig,
    *,
    truth: str | Path | pl.DataFrame | None = None,
    intervals: bool = True,
    records: bool = True,
    level: float = 0.95,
    progress: Callable[[int, int], None] | None = None,
    mapper: UnitMapper | None = None,
) -> dict[str, Any]:
    """The audit: (a) intervals, (b) records, (c) rates against the truth when given.

    Args:
        published: the tables.
        cfg: the attacker's settings.
        truth: the auditor's true records: a folder of job tables (``workplace``,
            ``worker``, ``job`` parquet) or a frame (``unit``, attributes, ``true``).
        intervals, records: which parts to run.
        level: noise bands' probability for the interval audit.
        progress: (units done, units) of the record reconstruction.
        mapper: where the units are solved (default: this process; see :mod:`.unitmap`).
    """
    t0 = time.perf_counter()
    out: dict[str, Any] = {
        "tables": {t: list(b) for t, b in published.tables.items()},
        "cells": published.n_cells,
        "status": published.status_counts(),
    }
    if intervals:
        t1 = time.perf_counter()
        ia = interval_audit(published, level=level)
        out["intervals"] = ia.summary() | {"seconds": round(time.perf_counter() - t1, 2)}
    if records:
        rec = reconstruct(published, cfg, progress=progress, mapper=mapper)
        r: dict[str, Any] = {
            "unit": cfg.unit,
            "attributes": list(rec.attributes),
            "tables_used": list(rec.tables_used),
            "tables_unused": list(rec.tables_unused),
            "threshold": cfg.threshold,
            "records_rebuilt": int(rec.count.sum()),
            "records_certain": int(rec.certain.sum()),
            "share_certain": (
                float(rec.certain.sum() / rec.count.sum()) if rec.count.sum() else 0.0
            ),
            "units_skipped_too_large": int(rec.skipped_units.size),
            "units_failed": int(rec.failed_units.size),
        } | {"how": rec.stats}
        if truth is not None:
            tf = (
                truth
                if isinstance(truth, pl.DataFrame)
                else job_truth(truth, cfg.unit, rec.attributes)
            )
            r["against_truth"] = measure(rec, tf)
        out["records"] = r
    out["seconds"] = round(time.perf_counter() - t0, 2)
    out["peak_memory_mb"] = round(peak_memory_mb(), 1)
    return out


def summary_lines(result: dict[str, Any]) -> list[str]:
    """A short human summary of :func:`reconstruction_audit`'s result."""
    lines = [
        f"{result['cells']:,} cells in {len(result['tables'])} tables "
        f"({', '.join(f'{k} {v:,}' for k, v in sorted(result['status'].items()))})"
    ]
    iv = result.get("intervals")
    if iv is not None:
        band = " (noisy cells: confidence bands)" if iv["noise_bands"] else ""
        lines.append(f"interval audit: {iv['cells_pinned']:,} cells pinned{band}")
        if "establishment_contributions" in iv:
            lines.append(
                f"  establishments' contributions pinned: "
                f"{iv['establishment_contributions_pinned']:,} of "
                f"{iv['establishment_contributions']:,}"
            )
    r = result.get("records")
    if r is not None:
        lines.append(
            f"reconstruction by {r['unit']}: {r['records_rebuilt']:,} records rebuilt, "
            f"{r['records_certain']:,} certain ({r['share_certain']:.1%})"
        )
        t = r.get("against_truth")
        if t is not None:
            lines.append(
                f"  against the truth: {t['share_rebuilt_exactly']:.1%} of "
                f"{t['records']:,} records rebuilt exactly; "
                f"{t['share_units_rebuilt_exactly']:.1%} of units exactly; "
                f"{t['share_uniques_inferred']:.1%} of {t['unique_records']:,} unique records "
                f"inferred; certain records right: {t['share_certain_correct']:.1%}"
            )
        if r["units_skipped_too_large"] or r["units_failed"]:
            lines.append(
                f"  units not rebuilt: {r['units_skipped_too_large']:,} too large, "
                f"{r['units_failed']:,} without a solution"
            )
        if r["tables_unused"]:
            lines.append(f"  tables not used (not by {r['unit']}): {', '.join(r['tables_unused'])}")
    lines.append(f"{result['seconds']:.1f} s, peak memory {result['peak_memory_mb']:,.0f} MB")
    return lines
