"""Haney et al. §10 full grid (``eree evaluate haney-all``) on the Pennsylvania dataset.

1. Synthesise the LODES-like PA dataset from the real WAC file
   (``synth_from_wac(pa_wac_S000_JT00_2015.csv.gz, seed=1)``; 5.65M jobs, 351K
   establishments).
2. Run Workloads 1–3 and Rankings 1–2 on the paper's grid (ε × α = 6 × 5, θ ∈ 6 values,
   20 trials; 141 parameter points per noise run, 3 runs) and write the CSV, figures and
   report.

Each step is timed in a fresh process (wall time and peak RSS).

    python benchmarks/bench_haney.py [--out /tmp/eree-haney] [--trials 20] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import SHARED_DATA, machine, run_child

WAC = SHARED_DATA / "lodes" / "pa_wac_S000_JT00_2015.csv.gz"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("/tmp/eree-haney"))
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not WAC.exists():
        sys.exit(f"needs {WAC}")
    code = textwrap.dedent(
        f"""
        import json, time
        t0 = time.perf_counter()
        from eree.evaluate.datasets import load_dataset
        from eree.evaluate.haney import HaneyGrid, run_haney
        from eree.evaluate.report import write_outputs
        ds = load_dataset(wac={str(WAC)!r}, seed=1)
        t1 = time.perf_counter()
        r = run_haney("haney-all", ds, grid=HaneyGrid(trials={args.trials}),
                      seed={args.seed}, workers={args.workers})
        t2 = time.perf_counter()
        write_outputs(r, {str(args.out)!r})
        t3 = time.perf_counter()
        print(json.dumps({{"synthesise_s": t1 - t0, "evaluate_s": t2 - t1,
                           "write_s": t3 - t2, "phases": r.meta["seconds"],
                           "dataset": r.meta["dataset"], "cells": r.meta["cells"],
                           "rows": r.results.height, "omitted": r.omitted.height}}))
        """
    )
    wall, rss, payload = run_child(code)
    print(
        json.dumps(
            {"machine": machine(), "wall_s": wall, "peak_rss_mib": rss, **payload},
            indent=2,
            default=str,
        )
    )


if __name__ == "__main__":
    main()
