"""The interval audit of a whole state's small-cell-suppressed WAC tables (time, memory).

Usage (from the repository root, after ``eree synth lodes --wac … --out pa --seed 1``)::

    /usr/bin/time -v python benchmarks/bench_reconstruction_intervals.py pa

Prints counts only (docs/reconstruction-audit.md, "The whole state's interval audit").
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import polars as pl

from eree.data.schema import WORKER_DOMAINS
from eree.evaluate.reconstruct import from_frame, interval_audit, job_truth
from eree.evaluate.reconstruct.frontier import ATTRIBUTES, exact_tables, suppress_small


def main(folder: str) -> None:
    """Tabulate, suppress and audit the job tables in ``folder``."""
    t0 = time.perf_counter()
    truth = job_truth(folder, "block", ATTRIBUTES)
    domains = {a: WORKER_DOMAINS[a] for a in ATTRIBUTES if a in WORKER_DOMAINS}
    sectors = pl.read_parquet(Path(folder) / "workplace.parquet", columns=["naics_sector"])
    domains["naics_sector"] = sorted(sectors.get_column("naics_sector").unique().to_list())
    published = from_frame(suppress_small(truth, exact_tables(truth, domains)))
    print("cells by status:", published.status_counts(), flush=True)
    t1 = time.perf_counter()
    summary = interval_audit(published).summary()
    summary["seconds_audit"] = round(time.perf_counter() - t1, 1)
    summary["seconds_total"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "pa")
