"""Workload 2 / 3 on PA with and without the cells whose true count is 0.

Noise infusion publishes a true zero exactly; every formal mechanism perturbs it. This
script measures how many Workload-2/3 cells are true zeros (an establishment combination
with no worker of that sex × education) and the L1 ratio to noise infusion over all cells
and over the non-zero cells only, α = 0.1, ε ∈ {1, 2, 4}, 20 trials, seed 0 (the evaluation's
streams, so the all-cells numbers equal ``eree evaluate``'s).

    python benchmarks/haney_zero_cells.py --data /tmp/pa
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from eree.engine.polars.engine import PolarsEngine
from eree.evaluate.datasets import load_dataset
from eree.evaluate.haney import (
    ESTABLISHMENT_ATTRIBUTES,
    WORKER_ATTRIBUTES,
    Point,
    derive_seed,
    marginal_cells,
    mechanism_for,
    omission_reason,
    run_point,
)
from eree.mechanisms.noise import SeededNoise
from eree.mechanisms.noise_infusion import draw_distortion_factors, noise_infusion


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("/tmp/pa"))
    ap.add_argument("--trials", type=int, default=20)
    args = ap.parse_args()
    data = load_dataset(args.data).data
    cells = marginal_cells(data, PolarsEngine(), ESTABLISHMENT_ATTRIBUTES, WORKER_ATTRIBUTES)
    T = args.trials
    factors = draw_distortion_factors(
        data.n_workplaces, SeededNoise(derive_seed(0, "noise_infusion/factors")), trials=T
    )
    src = SeededNoise(derive_seed(0, f"noise_infusion/small_cells/{'*'.join(WORKER_ATTRIBUTES)}"))
    ni = noise_infusion(cells.n, cells.pair_cell, cells.pair_est, cells.pair_h, factors, src).noisy
    zero = cells.n == 0
    out: dict = {"cells": int(cells.cells), "true_zero_cells": int(zero.sum()),
                 "share": float(zero.mean())}  # fmt: skip
    ni_all = np.abs(ni - cells.n).mean()
    ni_nz = np.abs(ni[:, ~zero] - cells.n[~zero]).mean()
    for run, whole in (("workload2", False), ("workload3", True)):
        for m in ("log_laplace", "smooth_gamma", "smooth_laplace"):
            for eps in (1.0, 2.0, 4.0):
                p = Point(m, eps, 0.1)
                if omission_reason(p, cells.d, whole, 0.05) is not None:
                    continue
                mech = mechanism_for(p, cells.d, whole, 0.05)
                name = "single" if not whole else "marginal"
                s = SeededNoise(derive_seed(0, f"{name}/{p.label}/{p.alpha}/{p.epsilon}"))
                noisy = run_point(p, mech, cells, T, s)[p.label]
                r_all = np.abs(noisy - cells.n).mean() / ni_all
                r_nz = np.abs(noisy[:, ~zero] - cells.n[~zero]).mean() / ni_nz
                out[f"{run} {m} eps={eps:g}"] = [round(r_all, 3), round(r_nz, 3)]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
