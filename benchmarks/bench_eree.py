"""ER-EE release benchmarks (issue: ER-EE release path).

1. Generating the LODES-like Pennsylvania dataset from the real WAC file.
2. Releasing four marginals with Smooth Laplace: tract×industry×ownership, + age,
   + age×sex, + age×sex×race — wall time and peak memory of the whole `protect`.
3. The engine's cell statistics next to a plain Polars group-by computing the same
   counts (join jobs to workplaces, group by the keys, count).

Each measurement runs in a fresh process; the median of ``--runs`` runs is reported.

    python benchmarks/bench_eree.py --runs 3 [--scale 1.0] [--workdir /tmp/eree-bench]
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import SHARED_DATA, machine, median_of, run_child

MARGINALS = {
    "tract_industry_ownership": ["tract", "naics_sector", "ownership"],
    "plus_age": ["tract", "naics_sector", "ownership", "age"],
    "plus_age_sex": ["tract", "naics_sector", "ownership", "age", "sex"],
    "plus_age_sex_race": ["tract", "naics_sector", "ownership", "age", "sex", "race"],
}


def spec_text(data_dir: Path) -> str:
    lines = [
        'name = "pa-2015-bench"',
        "[data]",
        f'workplace = "{data_dir / "workplace.parquet"}"',
        f'worker = "{data_dir / "worker.parquet"}"',
        f'job = "{data_dir / "job.parquet"}"',
        "[privacy]",
        'definition = "eree-weak"',
        "alpha = 0.1",
    ]
    for name, by in MARGINALS.items():
        d = {"tract_industry_ownership": 1, "plus_age": 3, "plus_age_sex": 6,
             "plus_age_sex_race": 36}[name]  # fmt: skip
        lines += [
            "[[query]]",
            f'name = "{name}"',
            f"by = {json.dumps(by)}",
            'mechanism = "smooth_laplace"',
            f"epsilon = {float(d)}  # 1.0 per cell",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/eree-bench"))
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "eree.json")
    args = ap.parse_args()
    wac = SHARED_DATA / "lodes" / "pa_wac_S000_JT00_2015.csv.gz"
    if not wac.exists():
        sys.exit(f"needs {wac}")
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    data_dir = work / "pa"
    results: dict = {"machine": machine(), "scale": args.scale, "runs": args.runs}

    gen = textwrap.dedent(f"""
        import json, time
        from eree.synth.lodes import synth_from_wac
        t = time.perf_counter()
        s = synth_from_wac({str(wac)!r}, seed=1, scale={args.scale})
        t_gen = time.perf_counter() - t
        s.write({str(data_dir)!r})
        print(json.dumps({{"generate_s": t_gen, "total_s": time.perf_counter() - t,
                           "jobs": s.job.height, "workplaces": s.workplace.height}}))
    """)
    runs = []
    for _ in range(args.runs):
        wall, rss, p = run_child(gen)
        runs.append({"wall_s": wall, "peak_rss_mib": rss, "generate_s": p["generate_s"]})
        results["dataset"] = {"jobs": p["jobs"], "workplaces": p["workplaces"]}
    results["generate"] = median_of(runs)
    print("generate:", results["generate"], results["dataset"], flush=True)

    spec = work / "bench.toml"
    spec.write_text(spec_text(data_dir))
    rel = textwrap.dedent(f"""
        import json, shutil, time
        from eree.release.spec import load_spec
        from eree.release.protect import protect
        from eree.mechanisms.noise import SecureNoise
        out = {str(work / "release")!r}
        shutil.rmtree(out, ignore_errors=True)
        t = time.perf_counter()
        r = protect(load_spec({str(spec)!r}), out, SecureNoise())
        print(json.dumps({{"protect_s": time.perf_counter() - t,
                           "cells": {{q["name"]: q["cells"] for q in r.manifest["queries"]}}}}))
    """)
    runs = []
    for _ in range(args.runs):
        wall, rss, p = run_child(rel)
        runs.append({"wall_s": wall, "peak_rss_mib": rss, "protect_s": p["protect_s"]})
        results["cells"] = p["cells"]
    results["release"] = median_of(runs)
    print("release:", results["release"], results["cells"], flush=True)

    eng = textwrap.dedent(f"""
        import json, time
        import polars as pl
        from eree.release.spec import load_spec
        from eree.data.job_tables import load_job_tables
        from eree.engine.polars.engine import PolarsEngine
        plan = load_spec({str(spec)!r})
        t = time.perf_counter(); data = load_job_tables(plan.data); t_load = time.perf_counter() - t
        e = PolarsEngine(); out = {{"load_s": t_load}}
        t = time.perf_counter(); e._prepare(data); out["engine_prepare_s"] = time.perf_counter() - t
        marg = {json.dumps(MARGINALS)}
        wpa = set(plan.data.workplace_attributes)
        for name, by in marg.items():
            wp = [a for a in by if a in wpa]; wk = [a for a in by if a not in wpa]
            t = time.perf_counter(); s = e.cell_statistics(data, wp, wk)
            out[name + "_engine_s"] = time.perf_counter() - t
            t = time.perf_counter()
            b = (data.jobs.lazy().join(data.workplaces.lazy(), on="workplace_id")
                 .group_by(by).agg(pl.len()).collect())
            out[name + "_plain_s"] = time.perf_counter() - t
            assert int(s["count"].sum()) == int(b["len"].sum())
        print(json.dumps(out))
    """)
    runs = []
    for _ in range(args.runs):
        _, _, p = run_child(eng)
        runs.append(p)
    results["engine"] = median_of(runs)
    print("engine:", results["engine"], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
