"""WLS microdata benchmark (issue 5): Eq. 1 of the QCEW paper at scale.

See docs/design.md#post-processing.

Data: the parametric QCEW-like generator (:func:`eree.synth.qcew.synth_qcew_parametric`)
at two sizes —

* **Syn-NJ size**: 208,868 establishments in 21 counties of one state (the paper's
  Synthetic New Jersey);
* **national size**: 10,000,000 establishments, 51 states, ≈ 3,100 counties.

Measurements: the QCEW paper's §8.2 workload, 5 queries × 4 attributes (m1emp, m2emp,
m3emp, wage): identity, state total, state × NAICS-5, county, county × NAICS-5, each
answered by the √-mechanism (ψ-mechanism with ψ = √, Thm 6.6 estimates and estimated
variances v̂) with the paper's budgets (0.611, 0.179, 0.525, 0.525, 0.611) and
γ = 0.5 (employment) / 50 (wages, in $1000). County and NAICS-5 are not nested, so the
solver is the preconditioned CG of :mod:`eree.postprocess.wls`.

Each measurement runs in a fresh process (wall time, peak RSS via ``os.wait4``); the
time reported as ``solve_s`` covers :func:`~eree.postprocess.wls.solve_wls` for the four
attributes only (data generation and noise are timed separately), and
``rss_before_solve_mib`` is the process's peak before the solve started. Median of
``--runs`` runs for the Syn-NJ size, ``--big-runs`` (default 1) for 10M.

    python benchmarks/bench_wls.py --runs 3 [--big 10000000] [--skip-big] [--nonnegative]
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, median_of, run_child

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, resource, time
import numpy as np
from eree.synth.qcew import synth_qcew_parametric
from eree.postprocess.wls import GroupSumObservation, group_ids, solve_wls

N, COUNTIES, NONNEG = {n}, {counties}, {nonneg}
t0 = time.perf_counter()
est = synth_qcew_parametric(1, N, n_counties=COUNTIES).establishments
t_gen = time.perf_counter() - t0
t0 = time.perf_counter()
queries = {{
    "identity": None,
    "state": group_ids(est, ["state"])[0],
    "state_naics5": group_ids(est, ["state", "naics5"])[0],
    "county": group_ids(est, ["state", "cnty"])[0],
    "county_naics5": group_ids(est, ["state", "cnty", "naics5"])[0],
}}
mu = {{"identity": 0.611, "state": 0.179, "state_naics5": 0.525, "county": 0.525,
      "county_naics5": 0.611}}
gamma = {{"m1emp": 0.5, "m2emp": 0.5, "m3emp": 0.5, "wage": 50.0}}
rng = np.random.default_rng(2)
meas = {{}}
for attr, g in gamma.items():
    x = est[attr].to_numpy().astype(np.float64)
    ms = []
    for q, grp in queries.items():
        truth = x if grp is None else np.bincount(grp, x)
        sigma = g / mu[q]
        omega = np.sqrt(truth) + rng.normal(0.0, sigma, truth.size)
        xt = omega * omega - sigma * sigma                              # Thm 6.6
        vhat = 2 * sigma * sigma * (2 * np.maximum(xt, 0) + sigma * sigma)
        ms.append(GroupSumObservation(q, grp, xt, vhat, attr))
    meas[attr] = ms
del est
t_prep = time.perf_counter() - t0
rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
out = {{"n": N, "groups": {{q: (N if g is None else int(g.max()) + 1)
                              for q, g in queries.items()}},
        "generate_s": t_gen, "prepare_s": t_prep, "rss_before_solve_mib": rss_before}}
t_all = time.perf_counter()
for attr, ms in meas.items():
    t = time.perf_counter()
    r = solve_wls(N, ms, nonnegative=NONNEG)
    out[attr + "_s"] = time.perf_counter() - t
    out[attr + "_iterations"] = r.iterations
    out[attr + "_method"] = r.method
    out[attr + "_converged"] = r.converged
    out[attr + "_relres"] = r.relative_residual
    if NONNEG:
        out[attr + "_rounds"] = r.nonnegative_rounds
out["solve_s"] = time.perf_counter() - t_all
print(json.dumps(out))
"""


def _run(n: int, counties: int | None, nonneg: bool, runs: int) -> dict:
    code = textwrap.dedent(CHILD.format(n=n, counties=counties, nonneg=nonneg))
    rows = []
    detail: dict = {}
    for _ in range(runs):
        wall, rss, p = run_child(code)
        rows.append(
            {
                "wall_s": wall,
                "peak_rss_mib": rss,
                "solve_s": p["solve_s"],
                "generate_s": p["generate_s"],
                "prepare_s": p["prepare_s"],
                "rss_before_solve_mib": p["rss_before_solve_mib"],
                **{k: float(v) for k, v in p.items() if k.endswith(("_s", "_iterations"))},
            }
        )
        detail = p
    return {"median": median_of(rows), "last": detail, "runs": runs}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--big", type=int, default=10_000_000)
    ap.add_argument("--big-runs", type=int, default=1)
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--nonnegative", action="store_true")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "wls.json")
    args = ap.parse_args()
    results: dict = {"machine": machine(), "nonnegative": args.nonnegative}
    results["syn_nj"] = _run(208_868, 21, args.nonnegative, args.runs)
    print("Syn-NJ size:", json.dumps(results["syn_nj"]["median"]), flush=True)
    if not args.skip_big:
        results["national"] = _run(args.big, None, args.nonnegative, args.big_runs)
        print("national:", json.dumps(results["national"]["median"]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
