"""Scale of the publication-grade post-processing core (no I/O, no joins).

A synthetic tree with PA's shape multiplied by ``--factor``: 50,208 × factor root cells,
then fan-outs 3 (age), 2 (sex), 6 (race) — the four marginals of ``bench_publication.py``
— with Laplace-noised small counts. Times ``publication_grade`` (consistent,
non-negative, integer) in a fresh process and reports its peak memory.

    python benchmarks/bench_publication_scale.py --factor 10
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import run_child


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--factor", type=float, default=1.0)
    args = ap.parse_args()
    code = textwrap.dedent(f"""
        import json, resource, time
        import numpy as np
        from eree.postprocess.hierarchy import MarginalInput, publication_grade
        rng = np.random.default_rng(0)
        n = int(50208 * {args.factor})
        truth = rng.poisson(2.0, n * 36).astype(float)      # finest cells
        ms = []
        # build the chain explicitly: finest (race) -> sex -> age -> root
        race = truth
        sex = race.reshape(-1, 6).sum(axis=1)
        age = sex.reshape(-1, 2).sum(axis=1)
        root = age.reshape(-1, 3).sum(axis=1)
        names = ["root", "age", "sex", "race"]
        vals = [root, age, sex, race]
        parents = [None, "root", "age", "sex"]
        fans = [None, 3, 2, 6]
        for nm, v, p, f in zip(names, vals, parents, fans):
            idx = None if p is None else np.repeat(np.arange(v.size // f), f)
            ms.append(MarginalInput(nm, v + rng.laplace(0, 2.0, v.size), np.full(v.size, 8.0),
                                    p, idx))
        del truth
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        t0 = time.perf_counter()
        out = publication_grade(ms, consistent=True, nonnegative=True, integer=True)
        dt = time.perf_counter() - t0
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        cells = sum(m.estimate.size for m in ms)
        print(json.dumps({{"cells": cells, "seconds": dt, "rss_before_mib": rss0,
                           "rss_after_mib": rss1}}))
    """)
    up = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    wall, rss, p = run_child(code)
    print(
        json.dumps({**p, "factor": args.factor, "wall_s": wall, "peak_rss_mib": rss, "uptime": up})
    )


if __name__ == "__main__":
    main()
