"""Haney Workload 3 (Finding 3) on PA: L1 error ratio to noise infusion, raw vs
post-processed (non-negative integers), ε ∈ {1, 2, 4}, α = 0.1, 20 trials.

    python benchmarks/haney_w3_postprocessed.py --data /tmp/pa --out /tmp/eree-w3
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from eree.evaluate.datasets import load_dataset
from eree.evaluate.haney import POSTPROCESSED, HaneyGrid, run_haney
from eree.evaluate.report import value, write_outputs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("/tmp/pa"))
    ap.add_argument("--out", type=Path, default=Path("/tmp/eree-w3"))
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    ds = load_dataset(args.data)
    grid = HaneyGrid(epsilons=(1.0, 2.0, 4.0), alphas=(0.1,), thetas=(20, 200),
                     trials=args.trials)  # fmt: skip
    for exp in ("haney-workload1", "haney-workload2", "haney-workload3"):
        res = run_haney(exp, ds, grid=grid, seed=0, workers=args.workers)
        write_outputs(res, args.out / exp, figures=False, report=False)
        out = {}
        for m in ("log_laplace", "smooth_gamma", "smooth_laplace"):
            for e in grid.epsilons:
                a = value(res.results, exp, m, "l1_ratio", alpha=0.1, epsilon=e)
                b = value(res.results, exp, m + POSTPROCESSED, "l1_ratio", alpha=0.1, epsilon=e)
                out[f"{m} eps={e:g}"] = [round(a, 3), round(b, 3)]
        print(exp, json.dumps(out), f"{res.meta['seconds']['total']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
