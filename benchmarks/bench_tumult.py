"""eree on Spark local against Tumult Analytics on Spark local: one marginal, same cores.

Both sides run in fresh processes, alternately (same machine load), on the same Parquet
tables (``workplace``, ``worker``, ``job``: files or partitioned directories), with a
local Spark of the same cores and driver memory. Each side starts its SparkSession
first (and runs one trivial job); the timed work starts after that, so Spark start-up
is excluded on both sides. Imports happen before the timer on both sides too.

* eree: :func:`eree.release.protect.protect` with the Spark engine on a spec with one
  marginal (``tract × naics_sector × ownership``, Smooth Laplace, ε = 1, α = 0.1,
  weak ER-EE): Spark reads and validates the tables, computes the cell statistics;
  the tables and the manifest are written.
* Tumult Analytics (its own virtual environment, which pins its own PySpark): Spark
  reads the job and workplace tables and joins them (one row per job with its
  workplace's keys), a :class:`Session` protects ``AddRowsWithID("workplace_id")``
  (pure DP, ε = 1), the query ``enforce(MaxRowsPerID(k))`` then a group-by count over
  the KeySet of the public workplace combinations (from the workplace table), and the
  result is written to Parquet.

Reported per run: the work time after Spark start-up, the start-up itself, the process
tree's peak memory (the JVM included); medians and the Tumult/eree ratio. ``--timeout``
stops a side that runs longer (the run is then reported as stopped at that time).

Setup (once)::

    python -m venv /tmp/tumult-venv && /tmp/tumult-venv/bin/pip install tmlt.analytics

    python benchmarks/bench_tumult.py --data /tmp/pa --runs 3
    python benchmarks/bench_tumult.py --data /tmp/nat/lodes --runs 1 --timeout 3600 \\
        --driver-memory 12g --max-cells 100000000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_release import ONE, guard, spec_text
from common import machine

BY = ONE["tract_industry_ownership"]


def spark_start(args: argparse.Namespace) -> str:
    """The child's session start (:data:`SPARK_START` for ``args``), indented for a body
    of ``textwrap.dedent`` code at 8 spaces."""
    start = SPARK_START.format(
        cores=args.cores, mem=args.driver_memory, parts=2 * args.cores, local_dir=args.local_dir
    )
    return start.strip().replace(chr(10), chr(10) + " " * 8)


def side_envs(tumult_python: str) -> tuple[dict[str, str], dict[str, str]]:
    """The environments of the eree (and floor) side and of the Tumult side.

    eree: this checkout's ``src`` first on ``PYTHONPATH``; Tumult: its own venv's Python
    for the executors, and no ``PYTHONPATH`` (its venv pins another PySpark).
    """
    env = dict(os.environ)
    src = Path(__file__).resolve().parent.parent / "src"
    eree_env = {**env, "PYTHONPATH": f"{src}{os.pathsep}{env.get('PYTHONPATH', '')}"}
    tumult_env = {**env, "PYSPARK_PYTHON": tumult_python}
    tumult_env.pop("PYTHONPATH", None)
    return eree_env, tumult_env


def require_tumult(tumult_python: str) -> None:
    """Exit with the setup line when ``tumult_python`` cannot import Tumult Analytics.

    Tumult is no extra of eree's: it pins a PySpark, pandas and NumPy that the ``dev``
    extra's cannot share, so it lives in a virtual environment of its own (the setup line
    of this module's docstring) and only its child processes import it.
    """
    try:
        ok = (
            subprocess.run(
                [tumult_python, "-c", "import tmlt.analytics"], capture_output=True, timeout=120
            ).returncode
            == 0
        )
    except OSError:
        ok = False
    if not ok:
        sys.exit(
            f"{tumult_python} cannot import tmlt.analytics; make Tumult's own environment "
            "with: python -m venv /tmp/tumult-venv && /tmp/tumult-venv/bin/pip install "
            "tmlt.analytics (or pass --tumult-python; --skip-tumult runs eree alone)"
        )


def path_of(data: Path, name: str) -> str:
    return str(data / name) if (data / name).is_dir() else str(data / f"{name}.parquet")


SPARK_START = """
import time, json, sys
t0 = time.perf_counter()
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[{cores}]").appName("bench")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.driver.memory", "{mem}").config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.sql.shuffle.partitions", "{parts}")
         .config("spark.default.parallelism", "{parts}")
         .config("spark.local.dir", "{local_dir}")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
spark.range(1).count()
startup = time.perf_counter() - t0
"""


def tumult_code(data: Path, out: Path, args: argparse.Namespace) -> str:
    start = spark_start(args)
    return textwrap.dedent(f"""
        from tmlt.analytics import (AddRowsWithID, KeySet, MaxRowsPerID, PureDPBudget,
                                    QueryBuilder, Session)
        from pyspark.sql import functions as sf
        from pyspark.sql.types import IntegralType
        {start}
        t1 = time.perf_counter()
        by = {BY!r}

        def longs(df):  # Tumult rejects small integer types
            return df.select(*[sf.col(f.name).cast("long") if isinstance(f.dataType, IntegralType)
                               else sf.col(f.name) for f in df.schema.fields])

        wp = longs(spark.read.parquet({path_of(data, "workplace")!r}).select("workplace_id", *by))
        job = longs(spark.read.parquet({path_of(data, "job")!r}).select("workplace_id"))
        jobs = job.join(wp, on="workplace_id", how="inner")
        keys = KeySet.from_dataframe(wp.select(*by).distinct())
        session = Session.from_dataframe(
            privacy_budget=PureDPBudget({args.epsilon}), source_id="jobs", dataframe=jobs,
            protected_change=AddRowsWithID("workplace_id"))
        query = QueryBuilder("jobs").enforce(MaxRowsPerID({args.max_rows})).groupby(keys).count()
        result = session.evaluate(query, PureDPBudget({args.epsilon}))
        result.write.mode("overwrite").parquet({str(out)!r})
        work = time.perf_counter() - t1
        cells = spark.read.parquet({str(out)!r}).count()
        print(json.dumps({{"startup_s": startup, "work_s": work, "cells": cells}}))
    """)


def eree_code(spec: Path, out: Path, args: argparse.Namespace) -> str:
    start = spark_start(args)
    return textwrap.dedent(f"""
        import shutil
        from eree.engine.spark.engine import SparkEngine
        from eree.mechanisms.noise import make_noise_source
        from eree.release.protect import protect
        from eree.release.spec import load_spec
        {start}
        t1 = time.perf_counter()
        shutil.rmtree({str(out)!r}, ignore_errors=True)
        result = protect(load_spec({str(spec)!r}), {str(out)!r}, make_noise_source(),
                         engine=SparkEngine(spark))
        work = time.perf_counter() - t1
        cells = result.manifest["queries"][0]["cells"]
        print(json.dumps({{"startup_s": startup, "work_s": work, "cells": cells}}))
    """)


def run(
    python: str, code: str, env: dict[str, str], timeout: float | None, limit: float | None
) -> dict[str, float | str]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [python, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
    )
    peak = guard(proc, limit)  # type: ignore[arg-type]
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"stopped_after_s": round(time.perf_counter() - t0, 1),
                "peak_mib": round(peak[0] * 1024)}  # fmt: skip
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{python} failed:\n{err[-4000:]}")
    res = json.loads(out.strip().splitlines()[-1])
    res["wall_s"] = wall
    res["peak_mib"] = round(peak[0] * 1024)
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, required=True, help="dir with workplace/worker/job")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--max-rows", type=int, default=100, help="Tumult's MaxRowsPerID")
    ap.add_argument("--max-cells", type=int, default=None, help="[output] max_cells (eree)")
    ap.add_argument("--timeout", type=float, default=None, help="stop a side after this (s)")
    ap.add_argument("--rss-limit-gib", type=float, default=16.0)
    ap.add_argument("--tumult-python", default="/tmp/tumult-venv/bin/python")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/eree-bench-tumult"))
    ap.add_argument("--local-dir", default="/tmp/eree-bench-tumult/spark-local")
    ap.add_argument("--skip-tumult", action="store_true")
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    data = args.data.resolve()
    spec = args.workdir / "spec.toml"
    spec.write_text(spec_text(data, ONE, "spark", args.max_cells))
    if not args.skip_tumult:
        require_tumult(args.tumult_python)
    eree_env, tumult_env = side_envs(args.tumult_python)
    rows = []
    for _ in range(args.runs):
        row: dict[str, object] = {"load": [round(x, 2) for x in os.getloadavg()]}
        code = eree_code(spec, args.workdir / "eree-release", args)
        row["eree"] = run(sys.executable, code, eree_env, args.timeout, args.rss_limit_gib)
        print(json.dumps(row), flush=True)
        if not args.skip_tumult:
            code = tumult_code(data, args.workdir / "tumult-out", args)
            row["tumult"] = run(
                args.tumult_python, code, tumult_env, args.timeout, args.rss_limit_gib
            )
        row["load_after"] = [round(x, 2) for x in os.getloadavg()]
        rows.append(row)
        print(json.dumps(row), flush=True)
    summary: dict[str, object] = {"data": str(data), "cores": args.cores,
                                  "driver_memory": args.driver_memory, "runs": rows}  # fmt: skip
    for side in ("eree", "tumult"):
        done = [r[side] for r in rows if side in r and "work_s" in r[side]]  # type: ignore[operator]
        if done:
            summary[f"{side}_work_s_median"] = statistics.median(d["work_s"] for d in done)  # type: ignore[index]
    if "eree_work_s_median" in summary and "tumult_work_s_median" in summary:
        summary["ratio_tumult_over_eree"] = (
            summary["tumult_work_s_median"] / summary["eree_work_s_median"]  # type: ignore[operator]
        )
    summary["machine"] = machine()
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
