"""A coarsening release of job records: the LODES WAC tables coarsened per block.

See docs/coarsening.md#lodes-wac-the-job-tables-coarsened-per-block. A spec with
``[protection] mode = "coarsening"`` whose data are job records (``[data] kind = "eree"``,
the tables ``eree synth lodes`` writes) is released here, on the path of every coarsening
release (:func:`eree.release.coarsening.coarsening_release` checks the policy, the ledger
and the output folder before any data are read, then calls :func:`jobs_release`):

1. The engine (Polars or Spark) loads and validates the job records (every worker
   attribute in its declared domain, ``naics_sector`` in LODES's NAICS sectors unless
   declared otherwise; a bad value is one line naming file, row and column) and counts
   the jobs per block and combination of the WAC attributes
   (:meth:`~eree.engine.base.Engine.establishment_cells`); with ``[output] format =
   "lodes-wac"`` the blocks must be 15-digit census codes of one state.
2. The eight WAC families by block (C000, CA, CE, CNS, CR, CT, CD = age × education, CS;
   zero cells included, every block of the workplace frame listed) are coarsened by
   :func:`eree.suppression.coarsening.jobs.coarsen_jobs` under the small-cell rule:
   a cell with 1 … ``threshold`` − 1 jobs is sensitive, and the attacker's interval over
   all of its block's tables (knowing that every zero is published exactly) must cover
   [max(T − p, P), T + p], p = ``min_protection`` jobs, P the least the cell can hold
   given which cells are non-zero (1 for a cell with a job): the count is protected, the
   presence the exact zeros disclose is not. The optimizer's exact check of the final
   publication gives the audited risk; a violation left is an error (nothing written).
3. Written through the release transaction (:class:`~eree.release.output.ReleaseWriter`):
   ``tables/coarsened.parquet`` (and ``.csv``), ``manifest.json``, ``report.html`` and,
   with the format, the three LODES WAC files under ``agency/``
   (:func:`eree.release.coarsened_wac.wac_coarsened_files`: the values, and each cell's
   interval in ``_lower``/``_upper`` companions).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from eree.data.config import JobTablesConfig
from eree.engine.base import Engine
from eree.engine.unitmap import ProcessMap, UnitMapper
from eree.errors import EreeError
from eree.release.coarsening_common import (
    TABLE_FILE,
    CoarseningRelease,
    coarsening_report,
    common_manifest,
)
from eree.release.output import ReleaseWriter
from eree.release.spec_coarsening import WAC_WORKER, WAC_WORKPLACE, CoarseningPlan

__all__ = ["AGENCY_DIR", "WAC_ROUNDING_NOTE", "job_truth_from_engine", "jobs_release"]

#: where the LODES WAC files go, relative to the release folder (as a privacy release's)
AGENCY_DIR = "agency"
#: the rounding kinds of the WAC path, in words (the agency's choice)
WAC_ROUNDING_NOTE = {
    "deterministic": "deterministic: each coarsened cell rounded to the nearest multiple of "
    "its base (|published − true| ≤ base/2; bases 2, 3, 5, 10, 25, … chosen per cell), or "
    "published as its size class; per block, the suppression pattern of the same rule "
    "where it loses less information (suppression as the last resort)",
    "random": "unbiased random rounding: up or down to a multiple of each cell's base with "
    "the probabilities that keep the expected value (|published − true| < base), written "
    "as its range; whether the agency may use it is its own policy choice",
}
#: what the manifest says is sensitive when ``[protection] threshold`` is 0 or 1
_RULE_OFF = "none: the threshold rule is off (threshold 0 or 1), every cell is published exactly"
#: the table's columns, in words
_COLUMNS = (
    "table (wac_c000, wac_ca, wac_ce, wac_cns, wac_cr, wac_ct, wac_cd, wac_cs), block, age, "
    "earnings, naics_sector, race, ethnicity, education, sex (null where the family totals "
    "over it), status (exact | rounded | range | suppressed; random rounding written as its "
    "range), value, base, lower, upper"
)
_KEYS = ("table", "block", "age", "earnings", "naics_sector", "race", "ethnicity",
         "education", "sex")  # fmt: skip


def chunk_map(chunks: int) -> UnitMapper | None:
    """Where the chunks of blocks run: this machine's cores (at most two), one chunk a task.

    Chunks are independent programs and the map keeps their order, and a chunk's seed is
    fixed by its place (``coarsen_jobs``), so the publication is the same in one process
    or in several (tested) and on either engine: the engine loads and counts the records;
    the coarsening runs beside its driver, in memory, as the QCEW coarsening does.
    """
    workers = min(2, os.cpu_count() or 1, chunks)
    return ProcessMap(workers, chunksize=1) if workers > 1 else None


def job_truth_from_engine(
    plan: CoarseningPlan, engine: Engine, seed: int | None
) -> tuple[pl.DataFrame, list[str], dict[str, tuple[str, ...]]]:
    """The jobs per block and WAC combination, the blocks, and the attributes' domains.

    Loaded and validated by ``engine``; the counts come back as a Polars frame (``unit``
    the block, the WAC attributes, ``true``), confidential. The blocks are the workplace
    frame's (public). ``seed`` (experiments only) keys the order in which a worker's jobs
    beyond ``max_jobs_per_worker`` are dropped; otherwise a fresh secret key.
    """
    from eree.data.location import input_label
    from eree.mechanisms.noise import SeededNoise
    from eree.release.agency import check_wac_blocks

    cfg = plan.data
    assert isinstance(cfg, JobTablesConfig)  # an establishment plan: eree.release.coarsening
    if cfg.selects_jobs and seed is not None:
        cfg = replace(cfg, order_key=SeededNoise(seed).order_key())
    data = engine.load_job_tables(cfg, [*WAC_WORKPLACE, *WAC_WORKER])
    blocks = engine.workplace_counts(data, ["block"]).get_column("block").cast(pl.Utf8)
    if plan.output.format is not None:
        where = cfg.workplace if cfg.workplace is not None else cfg.jobs
        check_wac_blocks(blocks, input_label(where) if where is not None else "[data]")
    cells = engine.establishment_cells(data, list(WAC_WORKPLACE), list(WAC_WORKER))
    attrs = list(_KEYS[2:])
    truth = (
        cells.group_by(["block", *attrs])
        .agg(pl.col("n").sum().cast(pl.Int64).alias("true"))
        .rename({"block": "unit"})
        .with_columns(pl.col(c).cast(pl.Utf8) for c in ("unit", *attrs))
        .sort("unit", *attrs)
    )
    domains = {a: tuple(cfg.domains[a]) for a in attrs}
    return truth, blocks.to_list(), domains


def _measures(published: pl.DataFrame, exact: pl.DataFrame) -> dict[str, Any]:
    """Counts and the information loss of the publication (aggregates only, no cell).

    A cell's loss is the width of its own published interval (whole jobs) relative to
    max(T, 1), at most 1; suppressed 1 (docs/coarsening.md, the measure ``rule_audit``
    states).
    """
    from eree.release.coarsened_wac import own_bounds

    keys = list(_KEYS)
    t = (
        published.select(keys)
        .join(
            exact.select(*keys, pl.col("value").alias("_t")), on=keys, how="left", nulls_equal=True
        )
        .get_column("_t")
        .to_numpy()
        .astype(np.float64)
    )
    lo, hi = own_bounds(published)
    width = np.where(np.isfinite(hi), hi - lo, np.inf)
    loss = np.minimum(1.0, width / np.maximum(t, 1.0))
    status = published.get_column("status").to_numpy().astype(str)
    by_status = {s: int((status == s).sum()) for s in ("exact", "rounded", "range", "suppressed")}
    by_status["random_rounded"] = 0  # written as its range
    nz = t > 0
    return {
        "cells": int(t.size),
        "cells_with_jobs": int(nz.sum()),
        "cells_published": int((status != "suppressed").sum()),
        "cells_informative": int((loss < 1.0).sum()),
        "by_status": by_status,
        "information_loss": float(loss.mean()) if t.size else 0.0,
        "information_loss_cells_with_jobs": float(loss[nz].mean()) if nz.any() else 0.0,
    }


def jobs_release(
    plan: CoarseningPlan,
    out: Path,
    *,
    seed: int | None,
    engine: Engine,
    force: bool,
    progress: Callable[[str], None] | None = None,
) -> CoarseningRelease:
    """Coarsen the WAC tables of ``plan``'s job records and write the release (module doc).

    Called by :func:`eree.release.coarsening.coarsening_release` once the policy, the
    ledger and the output folder are checked.

    Raises:
        DataValidationError: from the engine's checks, or block codes that cannot name a
            LODES file (with the format).
        EreeError: the optimizer left a violation (nothing written).
    """
    from eree.suppression.coarsening.jobs import BLOCKS_PER_CHUNK, WAC_BASES, coarsen_jobs
    from eree.suppression.wac import exact_tables

    p = plan.protection
    say = progress or (lambda _m: None)
    say("loading the job records…")
    truth, blocks, domains = job_truth_from_engine(plan, engine, seed)
    exact = exact_tables(truth, dict(domains), blocks=blocks)
    say(f"coarsening the WAC tables of {len(blocks):,} blocks…")
    published, stats = coarsen_jobs(
        truth,
        exact,
        threshold=max(p.threshold, 1),  # 0 (off) is 1: no cell holds 1 to 0 jobs
        rounding=p.rounding,
        seed=seed,
        protection=p.min_protection,
        mapper=chunk_map(-(-len(blocks) // BLOCKS_PER_CHUNK)),
    )
    for k in ("sensitive", "violations_check", "pinned_check", "blocks_suppression_cheaper",
              "last_resort", "tightened"):  # fmt: skip
        stats.setdefault(k, 0)  # no block with a job: no chunk
    if stats["violations_check"]:
        raise EreeError(
            "the optimizer left sensitive cells narrowed below the rule (an internal error; "
            "their number is not printed); nothing written"
        )
    label = blocks[0][:2] if plan.output.format is not None and blocks else "all"
    measures = _measures(published, exact)
    manifest = _manifest(plan, engine, seed, label, stats, measures, len(blocks), WAC_BASES)
    with ReleaseWriter(out, csv=plan.output.csv, seeded=seed is not None, force=force) as w:
        extra = {f"{TABLE_FILE}.parquet": published}
        if plan.output.csv:
            extra[f"{TABLE_FILE}.csv"] = published
        if plan.output.format is not None:
            manifest["agency_files"] = _write_wac(w, plan, published, label)
        w.finish(manifest, extra, {"report.html": coarsening_report(manifest)})
    return CoarseningRelease(out, manifest)


def _write_wac(w: ReleaseWriter, plan: CoarseningPlan, published: pl.DataFrame, state: str) -> Any:
    """The three LODES WAC files under ``agency/``; what the manifest says of them."""
    from eree.release.coarsened_wac import wac_coarsened_files

    year = plan.output.year
    assert year is not None  # the spec requires it with the format
    stamp = datetime.now(UTC).strftime("%Y%m%d")
    files = wac_coarsened_files(
        published, state_fips=state, year=year, createdate=stamp, job_type=plan.output.job_type
    )
    names = []
    for name, body in files.items():
        names.append(w.write_bytes(f"{AGENCY_DIR}/{name}", body))
    return {
        "format": "lodes-wac",
        "files": names,
        "values": f"{names[0]}: one consistent set of whole numbers within every published "
        "interval (per block the point nearest the published values under the layout's sums, "
        "computed from the published intervals only)",
        "bounds": f"{names[1]} and {names[2]}: each cell's published interval (lower ≤ true "
        "≤ upper; equal: published exactly; a suppressed cell: lower 0, upper empty); CD "
        "the sums over ages A02 and A03; check with eree check-format --bounds",
        "not_tabulated": "CFA01–CFA05 and CFS01–CFS05 are 0: the job tables carry no firm "
        "age or size (LODES writes 0 where it does not tabulate them)",
        "segment": "S000",
        "job_type": plan.output.job_type,
    }


def _manifest(
    plan: CoarseningPlan,
    engine: Engine,
    seed: int | None,
    label: str,
    stats: dict[str, int],
    measures: dict[str, Any],
    n_blocks: int,
    bases: tuple[float, ...],
) -> dict[str, Any]:
    p = plan.protection
    thr, prot = p.threshold, p.min_protection
    rules = {
        "rule": "small-cell rule on jobs: every job is a contributor",
        "threshold": thr,
        "sensitive": f"a cell with 1 to {thr - 1} jobs" if thr > 1 else _RULE_OFF,
        "min_protection": prot,
        "protection_interval": "[max(T − p, P), T + p] with p = min_protection jobs and P "
        "the least the cell can hold given which cells are non-zero (1 for a cell with a "
        "job): the attacker's interval for a sensitive cell with T jobs must cover it",
        "zero_cells": "published exactly: every cell not published exactly is thereby known "
        "to hold a job (presence disclosed); the rule protects the count",
    }
    m = common_manifest(
        plan,
        engine,
        seed,
        {
            "rounding": p.rounding,
            "rounding_meaning": WAC_ROUNDING_NOTE[p.rounding],
            "bases": list(bases),
            "rules": rules,
            "attributes": ["jobs"],
            "tables": "the eight LODES WAC families by block (C000, CA, CE, CNS, CR, CT, "
            "CD = age × education, CS), zero cells included",
        },
    )
    if isinstance(plan.data, JobTablesConfig):
        m["dataset"]["jobs"] = {"job_type": plan.data.job_type,
                                "max_jobs_per_worker": plan.data.max_jobs_per_worker}  # fmt: skip
    audit = {"violations": stats["violations_check"], "cells_pinned": stats["pinned_check"]}
    m["audited_risk"] = {
        "method": "the attacker's interval LP over all of a block's published tables "
        "together (HiGHS; no relation links two blocks), the optimizer's exact check of the "
        "final publication, against the small-cell rule's protection intervals",
        **audit,
        "attacker_knows": "every zero cell is published exactly, so a cell not published "
        "exactly holds at least one job (the attacker's lower bound 1)",
        "violations_meaning": "sensitive cells whose attacker's interval does not cover "
        "[max(T − p, P), T + p], P the least the cell can hold given which cells are "
        "non-zero (1 for a cell with a job): the count protected, presence disclosed "
        "(narrowed below the rule or pinned)",
        "cells_pinned_meaning": "cells the attacker pins to one value though they were "
        "published coarsened or withheld (not a violation of the rule: counted)",
        "per_state": {label: {"jobs": audit}},
    }
    m["tables"] = [
        {
            "file": f"{TABLE_FILE}.parquet",
            "rows": measures["cells"],
            "cells": measures["cells"],
            "cells_published": measures["cells_published"],
            "columns": _COLUMNS,
        }
    ]
    m["summary"] = {
        label: {
            "sensitive_cells": stats["sensitive"],
            "blocks": n_blocks,
            "attributes": {"jobs": measures},
        }
    }
    m["optimizer"] = {
        "blocks_suppression_cheaper": stats["blocks_suppression_cheaper"],
        "suppressed_as_last_resort": stats["last_resort"],
        "tightened": stats["tightened"],
        "chunks": stats["chunks"],
    }
    return m
