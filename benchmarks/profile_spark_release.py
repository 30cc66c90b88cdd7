"""Where an eree-Spark release spends its time: phase times of one ``protect`` run.

One fresh process: Spark starts with the settings of ``bench_tumult.py`` (``SPARK_START``),
then :func:`eree.release.protect.protect` runs the spec of ``bench_release.py`` (one
marginal, or the demo's four with ``--four``) with the Spark engine, with timers around
its phases (wall seconds; a phase nested in another is counted in both):

* ``load``: reading and input validation, coding included
  (:meth:`SparkEngine.load_job_tables`), of which ``validate+code``
  (:func:`~eree.engine.spark.validate.validate_and_code_three`), of which the id-order
  proof (from the Parquet files, ``twin_files_in_order`` with the jobs' twin files
  compared in the same pass, or from Spark's rows, ``ids_in_order``) and the workers'
  lanes (``id_lanes``, when the files are not twins);
* ``queries``: every query's cells and mechanism (``measure_marginal``), of which ``cells``
  (:meth:`SparkEngine.cell_statistics`), of which ``to_driver`` (Spark jobs bringing
  results to the driver, :func:`~eree.engine.spark.io.to_polars`) and ``assemble`` (the
  full cell frame on the driver); ``queries`` minus ``cells`` is the mechanism;
* ``write``: the tables written (``ReleaseWriter.write_table``), ``report`` (the
  release report), ``establishments`` (the count for the manifest's warnings).

    python benchmarks/profile_spark_release.py --data /tmp/nat/lodes --driver-memory 12g \\
        --max-cells 100000000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_release import FOUR, ONE, spec_text
from bench_tumult import run, spark_start

PHASES = """
import functools
from collections import defaultdict
import eree.engine.spark.data as sdata
import eree.engine.spark.engine as seng
import eree.engine.spark.validate as sval
import eree.release.counts as rcounts
import eree.release.family as fam
import eree.release.output as rout
import eree.release.report as rrep
times = defaultdict(float)

def timer(owner, attr, label):
    fn = getattr(owner, attr, None)
    if fn is None:  # a phase this version of eree does not have
        return
    @functools.wraps(fn)
    def wrapped(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            times[label] += time.perf_counter() - t
    setattr(owner, attr, wrapped)

timer(seng.SparkEngine, "load_job_tables", "load")
timer(sdata, "validate_and_code_three", "validate+code")
timer(sval, "files_in_order", "id_order_proof_files")
timer(sval, "twin_files_in_order", "id_order_proof_files")
timer(sval, "ids_in_order", "id_order_proof_rows")
timer(sval, "id_lanes", "worker_lanes")
timer(seng.SparkEngine, "cell_statistics", "cells")
timer(seng, "to_polars", "to_driver")
timer(seng, "assemble", "assemble")
timer(rcounts, "measure_marginal", "queries")
timer(rout.ReleaseWriter, "write_table", "write")
timer(rrep, "release_report", "report")
"""


def profile_code(spec: Path, out: Path, args: argparse.Namespace) -> str:
    start = spark_start(args)
    return textwrap.dedent(f"""
        import shutil
        from eree.engine.spark.engine import SparkEngine
        from eree.mechanisms.noise import make_noise_source
        from eree.release.protect import protect
        from eree.release.spec import load_spec
        {start}
        {PHASES.strip().replace(chr(10), chr(10) + " " * 8)}
        fam_cls = type(fam.family_of(load_spec({str(spec)!r})))
        timer(fam_cls, "n_establishments", "establishments")
        t1 = time.perf_counter()
        shutil.rmtree({str(out)!r}, ignore_errors=True)
        source = make_noise_source(seed={args.seed!r})
        result = protect(load_spec({str(spec)!r}), {str(out)!r}, source, engine=SparkEngine(spark))
        work = time.perf_counter() - t1
        print(json.dumps({{"startup_s": startup, "work_s": work,
                          "phases_s": {{k: round(v, 1) for k, v in times.items()}}}}))
    """)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, required=True, help="dir with workplace/worker/job")
    ap.add_argument("--four", action="store_true", help="the four marginals of the demo")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--max-cells", type=int, default=None, help="[output] max_cells")
    ap.add_argument("--seed", type=int, default=None, help="seeded noise (to compare releases)")
    ap.add_argument("--rss-limit-gib", type=float, default=16.0)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/eree-profile-spark"))
    ap.add_argument("--local-dir", default="/tmp/eree-profile-spark/spark-local")
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    spec = args.workdir / "spec.toml"
    spec.write_text(spec_text(args.data.resolve(), FOUR if args.four else ONE, "spark",
                              args.max_cells))  # fmt: skip
    env = dict(os.environ)
    src = Path(__file__).resolve().parent.parent / "src"
    env["PYTHONPATH"] = f"{src}{os.pathsep}{env.get('PYTHONPATH', '')}"
    load = [round(x, 2) for x in os.getloadavg()]
    code = profile_code(spec, args.workdir / "release", args)
    res = run(sys.executable, code, env, None, args.rss_limit_gib)
    res["load_before"] = load
    res["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
