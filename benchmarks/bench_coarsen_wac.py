"""WAC tables coarsened vs suppressed under the same small-cell rule, audited by the interval LP.

Usage (from the repository root, after ``eree synth lodes --wac … --out pa --seed 1``)::

    python benchmarks/bench_coarsen_wac.py pa [--only 42023,42053] [--workers 2] [--chunk 100]
        [--methods coarsened,suppressed] [--bases wac|qcew] [--weakened] [--no-per-block]
        [--zero-unaware]

For each method: the release is built (``coarsen_jobs`` or ``frontier.suppress_small``,
threshold 3: cells of 1–2 jobs sensitive, protection ±1 job; both in chunks of
``--chunk`` blocks mapped over ``--workers`` processes, one chunk per task), then audited
by the reconstruction audit's reader and interval LP (``rule_audit``: the attacker who
uses what the exact zeros disclose): cells published, informative, information loss,
violations, cells pinned; the seconds of each step, the process's CPU time and peak
memory, and the load. ``--weakened`` also audits the coarsened publication with every
cell that is not sensitive put back to exact (it must be flagged). ``--zero-unaware``
builds both against the attacker who ignores the zeros (as before; the audit is the
same). Counts and rates only.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine

from eree.data.schema import WORKER_DOMAINS
from eree.engine.unitmap import ProcessMap
from eree.evaluate.reconstruct.coarsen_wac import WAC_BASES, coarsen_jobs, rule_audit
from eree.evaluate.reconstruct.frontier import (
    ATTRIBUTES,
    exact_tables,
    subset_blocks,
    suppress_small,
)
from eree.evaluate.reconstruct.measure import job_truth
from eree.suppression.coarsening import BASES


def _cpu() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def main() -> None:
    """Build, audit, print one JSON line per method."""
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--only", default=None)
    ap.add_argument("--methods", default="coarsened,suppressed")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--bases", default="wac", choices=("wac", "qcew"))
    ap.add_argument("--chunk", type=int, default=500)
    ap.add_argument("--weakened", action="store_true")
    ap.add_argument("--no-per-block", action="store_true", help="never the suppression pattern")
    ap.add_argument("--no-hub", action="store_true", help="neighbour cost without hub factor")
    ap.add_argument(
        "--zero-unaware",
        action="store_true",
        help="build against the attacker who ignores the exact zeros (the audit still uses them)",
    )
    a = ap.parse_args()
    print(json.dumps(machine() | {"load_1min": os.getloadavg()[0]}), flush=True)
    with tempfile.TemporaryDirectory() as d:
        t0, c0 = time.perf_counter(), _cpu()
        only = a.only.split(",") if a.only else None
        src = subset_blocks(Path(a.data), only, Path(d) / "data")
        truth = job_truth(src, "block", ATTRIBUTES)
        domains = {x: WORKER_DOMAINS[x] for x in ATTRIBUTES if x in WORKER_DOMAINS}
        sectors = pl.read_parquet(src / "workplace.parquet", columns=["naics_sector"])
        domains["naics_sector"] = sorted(sectors.get_column("naics_sector").unique().to_list())
        exact = exact_tables(truth, domains)
        print(
            json.dumps(
                {
                    "step": "tables",
                    "blocks": truth.get_column("unit").n_unique(),
                    "jobs": int(truth.get_column("true").sum()),
                    "cells": exact.height,
                    "seconds": round(time.perf_counter() - t0, 1),
                    "cpu_seconds": round(_cpu() - c0, 1),
                }
            ),
            flush=True,
        )
        for method in a.methods.split(","):
            t1, c1, load = time.perf_counter(), _cpu(), os.getloadavg()[0]
            extra: dict[str, object] = {}
            if method == "coarsened":
                mapper = ProcessMap(a.workers, chunksize=1) if a.workers > 1 else None
                bases = WAC_BASES if a.bases == "wac" else BASES
                pub, st = coarsen_jobs(
                    truth,
                    exact,
                    bases=bases,
                    blocks_per_chunk=a.chunk,
                    mapper=mapper,
                    hub_cost=not a.no_hub,
                    per_block=not a.no_per_block,
                    zero_aware=not a.zero_unaware,
                )
                extra = {
                    "optimizer": st,
                    "bases": a.bases,
                    "hub_cost": not a.no_hub,
                    "per_block": not a.no_per_block,
                }
            elif method == "suppressed":
                # per chunk of blocks, on the workers (no relation links two blocks)
                mapper = ProcessMap(a.workers, chunksize=1) if a.workers > 1 else None
                pub = suppress_small(
                    truth,
                    exact,
                    blocks_per_chunk=a.chunk,
                    mapper=mapper,
                    zero_aware=not a.zero_unaware,
                )
            elif method == "exact":
                pub = exact
            else:
                raise SystemExit(f"unknown method {method!r}")
            t2, c2 = time.perf_counter(), _cpu()
            res = rule_audit(pub, exact)
            row = {
                "method": method,
                **res,
                **extra,
                "seconds_release": round(t2 - t1, 1),
                "cpu_seconds_release": round(c2 - c1, 1),
                "seconds_audit": round(time.perf_counter() - t2, 1),
                "cpu_seconds_audit": round(_cpu() - c2, 1),
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                "load_1min": load,
            }
            print(json.dumps(row), flush=True)
            if method == "coarsened" and a.weakened:
                sens = (pl.col("_t") >= 1) & (pl.col("_t") <= 2)
                keys = ["table", "block", *ATTRIBUTES]
                w = pub.join(
                    exact.select(*keys, pl.col("value").alias("_t")),
                    on=keys,
                    how="left",
                    nulls_equal=True,
                )
                made = w.filter(~sens & (pl.col("status") != "exact")).height
                w = w.with_columns(
                    pl.when(sens).then(pl.col("status")).otherwise(pl.lit("exact")).alias("status"),
                    pl.when(sens).then(pl.col("value")).otherwise(pl.col("_t")).alias("value"),
                    *[
                        pl.when(sens).then(pl.col(c)).otherwise(None).alias(c)
                        for c in ("base", "lower", "upper")
                    ],
                ).drop("_t")
                wres = rule_audit(w, exact)
                print(
                    json.dumps({"method": "coarsened, weakened", "made_exact": made} | wres),
                    flush=True,
                )


if __name__ == "__main__":
    main()
