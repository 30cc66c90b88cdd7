"""Record reconstruction (b) of a state's WAC tables, one release per fresh process.

Usage (from the repository root, after ``eree synth lodes --wac … --out pa --seed 1``)::

    python benchmarks/bench_reconstruction_records.py pa --methods exact,suppressed \\
        --epsilons 0.5,1,2,4 --workers 2 --runs 3 [--only 42093,42023]

Each release (``exact``, ``suppressed``, ``noise_infusion``, ``er_ee`` at each ε per cell)
is built and attacked in a fresh interpreter (``frontier.frontier_jobs`` with the
interval audit off): the child's wall time, CPU time (its own and its worker
processes'), the largest peak resident memory of any of its processes, and the 1-minute
load average when it started. Rates only (docs/reconstruction-audit.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, run_child

CHILD = """
import json, resource, tempfile, time
from eree.evaluate.reconstruct.frontier import frontier_jobs
t0 = time.perf_counter()
with tempfile.TemporaryDirectory() as d:
    r = frontier_jobs({data!r}, d, methods=[{method!r}], epsilons={eps!r}, prefixes={only!r},
                      workers={workers}, intervals=False).to_dicts()[0]
s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
r["cpu_seconds"] = round(s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime, 1)
print(json.dumps(r))
"""


def main() -> None:
    """Run the releases and print one JSON line per run, then the medians."""
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--methods", default="exact,suppressed,noise_infusion,er_ee")
    ap.add_argument("--epsilons", default="0.5,1,2,4")
    ap.add_argument("--only", default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--runs", type=int, default=1)
    a = ap.parse_args()
    print(json.dumps(machine()), flush=True)
    only = tuple(a.only.split(",")) if a.only else None
    plan: list[tuple[str, list[float]]] = []
    for m in a.methods.split(","):
        if m == "er_ee":
            plan += [("er_ee", [float(e)]) for e in a.epsilons.split(",")]
        else:
            plan.append((m, [1.0]))
    tempfile.gettempdir()
    for method, eps in plan:
        runs = []
        for _ in range(a.runs):
            load = os.getloadavg()[0]
            code = CHILD.format(
                data=str(Path(a.data).resolve()), method=method, eps=eps, only=only,
                workers=a.workers,
            )  # fmt: skip
            wall, rss, row = run_child(code)
            row |= {"wall_seconds": round(wall, 1), "peak_rss_mib": round(rss), "load_1min": load}
            print(json.dumps(row), flush=True)
            runs.append(row)
        keys = ("wall_seconds", "cpu_seconds", "peak_rss_mib", "load_1min")
        med = {k: statistics.median(float(r[k]) for r in runs) for k in keys}
        print(json.dumps({"method": method, "epsilon": eps[0], "runs": a.runs} | med), flush=True)


if __name__ == "__main__":
    main()
