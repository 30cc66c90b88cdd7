"""Publication-grade ER-EE tables on PA (issue: publication-grade tables).

1. A seeded raw release of the four marginals of ``bench_eree.py`` (tract × industry ×
   ownership, + age, + age × sex, + age × sex × race; Smooth Laplace, weak ER-EE,
   α = 0.1, ε = 1 per cell).
2. In a fresh process, from the **written** raw tables and the public workplace frame
   only: the post-processing (consistent, non-negative, integer) — its wall time and the
   process's peak memory before and after the step.
3. Checks on the result (every value a non-negative integer; every released parent/child
   pair exactly additive) and the mean L1 error per marginal, raw vs post-processed,
   against the synthetic truth (a benchmark on synthetic data: the truth is shareable).

    python benchmarks/bench_publication.py --data /tmp/pa [--workdir /tmp/eree-pub] [--seed 1]
        [--variance-calibration]

Make the data with ``eree synth lodes --wac ../shared/data/lodes/pa_wac_S000_JT00_2015.csv.gz
--out /tmp/pa --seed 1``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_eree import spec_text
from common import machine, run_child


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("/tmp/pa"))
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/eree-pub"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--variance-calibration", action="store_true",
                    help="per-release variance calibration (an experiment)")  # fmt: skip
    ap.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "publication.json"
    )
    args = ap.parse_args()
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    spec = work / "raw.toml"
    spec.write_text(spec_text(args.data.resolve()))
    results: dict = {"machine": machine(), "seed": args.seed}
    raw_dir = work / "raw"

    rel = textwrap.dedent(f"""
        import json, shutil, time
        from eree.release.spec import load_spec
        from eree.release.protect import protect
        from eree.mechanisms.noise import SeededNoise
        shutil.rmtree({str(raw_dir)!r}, ignore_errors=True)
        t = time.perf_counter()
        r = protect(load_spec({str(spec)!r}), {str(raw_dir)!r}, SeededNoise({args.seed}))
        print(json.dumps({{"protect_s": time.perf_counter() - t,
                           "cells": {{q["name"]: q["cells"] for q in r.manifest["queries"]}}}}))
    """)
    _, _, p = run_child(rel)
    results["cells"] = p["cells"]
    print("raw release:", p, flush=True)

    post = textwrap.dedent(f"""
        import json, resource, time
        import numpy as np, polars as pl
        from dataclasses import replace
        from eree.release.spec import load_spec, PostprocessSpec
        from eree.release.build import build
        from eree.release.tables import QueryTable
        from eree.mechanisms.base import Measurement
        from eree.release.publication import publication_tables, workplace_attributes
        from eree.engine.public_frame import sorted_workplace_counts
        plan = load_spec({str(spec)!r})
        plan = replace(plan, postprocess=PostprocessSpec(
            nonnegative=True, integer=True, consistent=True,
            variance_calibration={args.variance_calibration!r}))
        built = build(plan)
        tables = []
        for q in plan.queries:   # the published files, nothing else
            df = pl.read_parquet({str(raw_dir)!r} + f"/tables/{{q.name}}.parquet")
            est = df["jobs"].to_numpy()
            m = Measurement(est, est, None, None, None, "published", "withheld",
                            q.mechanism, q.name, "jobs")
            tables.append(QueryTable(q.name, df, {{}}, (), (m,)))
        wp = workplace_attributes(plan)   # the public frame's establishments per combination
        frame = sorted_workplace_counts(
            pl.read_parquet({str(args.data / "workplace.parquet")!r}).group_by(wp)
            .agg(pl.len().alias("establishments")), wp)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        t = time.perf_counter()
        out, entry = publication_tables(built, tables, frame)
        dt = time.perf_counter() - t
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        for t_ in out:
            t_.table.write_parquet({str(work)!r} + f"/post_{{t_.name}}.parquet")
        print(json.dumps({{"postprocess_s": dt, "peak_rss_before_mib": rss0,
                           "peak_rss_after_mib": rss1, "tree": entry["tree"],
                           "variance_calibration": entry.get("variance_calibration"),
                           "variance_check": {{k: v for k, v in
                                               entry.get("variance_check", {{}}).items()
                                               if k != "method"}},
                           "cpu_s": time.process_time()}}))
    """)
    runs = []
    for _ in range(args.runs):
        up = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        wall, rss, p = run_child(post)
        runs.append({**p, "wall_s": wall, "child_peak_rss_mib": rss, "uptime": up})
        print("post-processing:", runs[-1], flush=True)
    results["postprocess_runs"] = runs

    check = textwrap.dedent(f"""
        import json
        import numpy as np, polars as pl
        from eree.release.spec import load_spec
        from eree.release.build import split_by
        from eree.data.job_tables import load_job_tables
        from eree.engine.polars.engine import PolarsEngine
        from eree.postprocess.hierarchy import marginal_forest, cell_parents
        plan = load_spec({str(spec)!r})
        data = load_job_tables(plan.data)
        eng = PolarsEngine()
        by = {{q.name: list(q.by) for q in plan.queries}}
        post = {{n: pl.read_parquet({str(work)!r} + f"/post_{{n}}.parquet") for n in by}}
        out = {{"errors": {{}}, "checks": {{}}}}
        for q in plan.queries:
            wp, wk = split_by(q, plan.data)
            st = eng.cell_statistics(data, wp, wk)
            raw = pl.read_parquet({str(raw_dir)!r} + f"/tables/{{q.name}}.parquet")
            truth = st.select(by[q.name] + ["count"])
            r = raw.join(truth, on=by[q.name], how="left")
            pp = post[q.name].join(truth, on=by[q.name], how="left")
            assert r.height == pp.height == truth.height
            out["errors"][q.name] = {{
                "raw_l1": float((r["jobs"] - r["count"]).abs().mean()),
                "post_l1": float((pp["jobs"] - pp["count"]).abs().mean()),
            }}
            v = post[q.name]["jobs"]
            out["checks"][q.name] = {{"integer_dtype": str(v.dtype), "min": int(v.min()),
                                      "negatives": int((v < 0).sum())}}
        worst = {{}}
        for child, parent in marginal_forest(by).items():
            if parent is None:
                continue
            # independent check: aggregate the child table by the parent's keys
            agg = post[child].group_by(by[parent]).agg(pl.col("jobs").sum().alias("s"))
            j = post[parent].join(agg, on=by[parent], how="left")
            worst[child + " -> " + parent] = int((j["jobs"] - j["s"].fill_null(0)).abs().max())
        out["max_abs_parent_minus_sum"] = worst
        print(json.dumps(out))
    """)
    _, _, p = run_child(check)
    results.update(p)
    print(json.dumps(p, indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
