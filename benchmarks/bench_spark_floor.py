"""eree on Spark against the plain Spark group-by beneath it (the Spark floor), and Tumult.

Three sides, each in a fresh process, run alternately (floor, eree, Tumult, floor, eree,
…) so that they see the same machine load, on the same Parquet tables (``workplace``,
``worker``, ``job``: files or partitioned directories) and the same Spark settings
(``local[cores]``, driver memory, shuffle partitions, local dir: ``SPARK_START`` of
``bench_tumult.py``). Each side starts its SparkSession and runs one trivial job before
its timer starts (Spark start-up excluded on every side; imports before the timer too).

* **floor**: the plain Spark group-by of the cell statistics eree computes for a query
  with no truncation (``count``: the jobs of the cell; ``x_v``: the largest
  establishment contribution to it; ``establishments``: the establishments of the
  cell's workplace combination). Per marginal: Spark reads only the columns it needs,
  joins job → worker when a worker attribute is in the marginal, counts the jobs per
  (establishment, worker attributes), joins the workplaces, groups by the marginal's
  attributes (sum and max of those counts), joins the establishments per workplace
  combination, and writes the cells to Parquet. No input rule is checked, no zero cell
  is added, no noise.
* **eree**: :func:`eree.release.protect.protect` with the Spark engine on the session
  (``bench_tumult.eree_code``): the spec of ``bench_release.py`` (one marginal, or the
  demo's four with ``--four``; Smooth Laplace, weak ER-EE, α = 0.1): Spark reads and
  checks every input rule of docs/design.md#validation, codes the dataset, computes
  the cells; the driver adds the zero cells, draws the noise and writes the tables and
  manifest.
* **tumult** (one marginal only; ``--tumult``): ``bench_tumult.tumult_code``, Tumult
  Analytics in its own virtual environment.

In local mode the driver and the executors are one JVM (a child of the Python process):
the peak memory reported is the process tree's resident memory (Python + JVM), sampled
every 0.2 s; ``--rss-limit-gib`` stops a side whose tree passes it.

    python benchmarks/bench_spark_floor.py --data /tmp/pa --runs 3 --tumult
    python benchmarks/bench_spark_floor.py --data /tmp/nat/lodes --runs 1 --tumult \\
        --driver-memory 12g --max-cells 100000000 --timeout 1800
    python benchmarks/bench_spark_floor.py --data /tmp/nat/lodes --runs 1 --four \\
        --driver-memory 12g --max-cells 100000000 --timeout 3600
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_release import FOUR, ONE, WORKPLACE, spec_text
from bench_tumult import (
    eree_code,
    path_of,
    require_tumult,
    run,
    side_envs,
    spark_start,
    tumult_code,
)
from common import machine


def floor_code(
    data: Path, marginals: dict[str, list[str]], out: Path, args: argparse.Namespace
) -> str:
    """The Spark floor: per marginal, the plain group-by of eree's cell statistics."""
    start = spark_start(args)
    return textwrap.dedent(f"""
        import shutil
        from pyspark.sql import functions as sf
        {start}
        t1 = time.perf_counter()
        shutil.rmtree({str(out)!r}, ignore_errors=True)
        marginals = {json.dumps(marginals)}
        workplace = {sorted(WORKPLACE)!r}
        cells = {{}}
        for name, by in marginals.items():
            wp_by = [a for a in by if a in workplace]
            wk_by = [a for a in by if a not in workplace]
            jobs = spark.read.parquet({path_of(data, "job")!r}).select("worker_id", "workplace_id")
            if wk_by:
                wk = spark.read.parquet({path_of(data, "worker")!r}).select("worker_id", *wk_by)
                jobs = jobs.join(wk, on="worker_id")
            per = jobs.groupBy("workplace_id", *wk_by).agg(sf.count(sf.lit(1)).alias("n"))
            wp = spark.read.parquet({path_of(data, "workplace")!r}).select("workplace_id", *wp_by)
            est = wp.groupBy(*wp_by).agg(sf.count(sf.lit(1)).alias("establishments"))
            result = (per.join(wp, on="workplace_id")
                      .groupBy(*by).agg(sf.sum("n").alias("count"), sf.max("n").alias("x_v"))
                      .join(est, on=wp_by, how="left"))
            path = {str(out)!r} + "/" + name
            result.write.mode("overwrite").parquet(path)
            cells[name] = spark.read.parquet(path).count()  # from the files' metadata
        work = time.perf_counter() - t1
        print(json.dumps({{"startup_s": startup, "work_s": work, "cells": cells}}))
    """)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, required=True, help="dir with workplace/worker/job")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--four", action="store_true", help="the four marginals of the demo")
    ap.add_argument("--tumult", action="store_true", help="also Tumult (one marginal only)")
    ap.add_argument("--skip-floor", action="store_true")
    ap.add_argument("--skip-eree", action="store_true")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--epsilon", type=float, default=1.0, help="Tumult's pure-DP ε")
    ap.add_argument("--max-rows", type=int, default=100, help="Tumult's MaxRowsPerID")
    ap.add_argument("--max-cells", type=int, default=None, help="[output] max_cells (eree)")
    ap.add_argument("--timeout", type=float, default=None, help="stop a side after this (s)")
    ap.add_argument("--rss-limit-gib", type=float, default=16.0)
    ap.add_argument("--tumult-python", default="/tmp/tumult-venv/bin/python")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/eree-bench-spark-floor"))
    ap.add_argument("--local-dir", default="/tmp/eree-bench-spark-floor/spark-local")
    args = ap.parse_args()
    if args.four and args.tumult:
        ap.error("--tumult runs one marginal (Tumult's side has no worker attribute)")
    marginals = FOUR if args.four else ONE
    args.workdir.mkdir(parents=True, exist_ok=True)
    data = args.data.resolve()
    spec = args.workdir / "spec.toml"
    spec.write_text(spec_text(data, marginals, "spark", args.max_cells))
    if args.tumult:
        require_tumult(args.tumult_python)
    eree_env, tumult_env = side_envs(args.tumult_python)
    sides: list[tuple[str, str, str, dict[str, str]]] = []
    if not args.skip_floor:
        code = floor_code(data, marginals, args.workdir / "floor-out", args)
        sides.append(("floor", sys.executable, code, eree_env))
    if not args.skip_eree:
        code = eree_code(spec, args.workdir / "eree-release", args)
        sides.append(("eree", sys.executable, code, eree_env))
    if args.tumult:
        code = tumult_code(data, args.workdir / "tumult-out", args)
        sides.append(("tumult", args.tumult_python, code, tumult_env))
    rows = []
    for _ in range(args.runs):
        row: dict[str, object] = {}
        for side, python, code, side_env in sides:
            load = [round(x, 2) for x in os.getloadavg()]
            res = run(python, code, side_env, args.timeout, args.rss_limit_gib)
            row[side] = {**res, "load_before": load}
            print(json.dumps({side: row[side]}), flush=True)
        rows.append(row)
    summary: dict[str, object] = {"data": str(data), "marginals": list(marginals),
                                  "cores": args.cores, "driver_memory": args.driver_memory,
                                  "runs": rows}  # fmt: skip
    med: dict[str, float] = {}
    for side, *_ in sides:
        done = [r[side] for r in rows if "work_s" in r[side]]  # type: ignore[operator]
        if done:
            med[side] = statistics.median(d["work_s"] for d in done)  # type: ignore[index]
            summary[f"{side}_work_s_median"] = med[side]
            summary[f"{side}_peak_mib_median"] = statistics.median(d["peak_mib"] for d in done)  # type: ignore[index]
    if "floor" in med and "eree" in med:
        summary["eree_over_floor"] = med["eree"] / med["floor"]
    if "tumult" in med and "eree" in med:
        summary["tumult_over_eree"] = med["tumult"] / med["eree"]
    summary["machine"] = machine()
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
