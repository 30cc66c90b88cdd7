"""Spark engine vs Polars engine: cell statistics on the PA-derived LODES-like dataset.

The four marginals of ``bench_eree.py`` (tract×naics_sector×ownership, + age, + age×sex,
+ age×sex×race), each timed ``--runs`` times (median reported) with:

* ``polars``: :class:`PolarsEngine` on the loaded :class:`JobTables` (its one-off integer
  coding of the jobs, ``prepare``, is timed separately);
* ``spark_mem``: :class:`SparkEngine` on the same :class:`JobTables` (its one-off Arrow
  hand-over to Spark, ``to_spark``, and its coding of the dataset, ``prepare``, are
  timed separately);
* ``spark_parquet``: :class:`SparkEngine` on a :class:`SparkJobTables` read by Spark from
  the Parquet files — the path for data that do not fit in memory (``from_parquet``
  with input validation, and ``prepare``, which joins job to worker once, are timed
  separately).

Each Spark result is checked to equal the Polars one. Generates the dataset first when
``<workdir>/pa`` does not exist.

    python benchmarks/bench_spark.py [--runs 3] [--cores 2] [--workdir /tmp/eree-bench]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import SHARED_DATA, machine

MARGINALS = {
    "tract_industry_ownership": (["tract", "naics_sector", "ownership"], []),
    "plus_age": (["tract", "naics_sector", "ownership"], ["age"]),
    "plus_age_sex": (["tract", "naics_sector", "ownership"], ["age", "sex"]),
    "plus_age_sex_race": (["tract", "naics_sector", "ownership"], ["age", "sex", "race"]),
}


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/eree-bench"))
    ap.add_argument("--out", type=Path, default=None, help="JSON file (default: print only)")
    args = ap.parse_args()

    from polars.testing import assert_frame_equal

    from eree.data.config import JobTablesConfig
    from eree.data.job_tables import JobTables, load_job_tables
    from eree.engine.polars.engine import PolarsEngine
    from eree.engine.spark.data import SparkJobTables
    from eree.engine.spark.engine import SparkEngine
    from eree.engine.spark.session import spark_session
    from eree.synth.lodes import synth_parametric

    data_dir = args.workdir / "pa"
    files = {n: data_dir / f"{n}.parquet" for n in ("workplace", "worker", "job")}
    results: dict[str, Any] = {"machine": machine(), "runs": args.runs, "cores": args.cores}
    if not all(p.exists() for p in files.values()):
        from eree.synth.lodes import synth_from_wac

        wac = SHARED_DATA / "lodes" / "pa_wac_S000_JT00_2015.csv.gz"
        if not wac.exists():
            sys.exit(f"needs {wac}")
        t, _ = timed(lambda: synth_from_wac(wac, seed=1).write(data_dir))
        results["generate_s"] = t
    config = JobTablesConfig(workplace=files["workplace"], worker=files["worker"], job=files["job"])

    t_load, data = timed(lambda: load_job_tables(config))
    results["dataset"] = {"jobs": data.n_jobs, "workplaces": data.n_workplaces}
    results["polars_load_s"] = t_load
    print("dataset:", results["dataset"], f"load_job_tables {t_load:.2f}s", flush=True)

    pe = PolarsEngine()
    results["polars_prepare_s"], _ = timed(lambda: pe._prepare(data))

    t_start, spark = timed(
        lambda: spark_session("eree-bench", cores=args.cores, driver_memory=args.driver_memory)
    )
    results["spark_start_s"] = t_start
    # one engine per dataset: an engine keeps the coding of one dataset at a time
    se = SparkEngine(spark)
    sp = SparkEngine(spark)
    results["spark_to_spark_s"], _ = timed(lambda: se.to_spark(data))
    results["spark_from_parquet_validate_s"], sdata = timed(
        lambda: SparkJobTables.from_parquet(
            spark, files["workplace"], files["worker"], files["job"]
        )
    )
    # JVM warm-up (class loading, code generation) is paid once per session: not timed
    small = synth_parametric(seed=0, n_jobs=2_000)
    warm = JobTables(
        workplaces=small.workplace,
        jobs=small.job.join(small.worker, on="worker_id").drop("worker_id"),
        domains=dict(data.domains),
    )
    se.cell_statistics(warm, ["county"], ["age", "sex"], truncate_below=10)
    se.unpersist()
    results["spark_mem_prepare_s"], _ = timed(lambda: se.prepare(data))
    results["spark_parquet_prepare_s"], _ = timed(lambda: sp.prepare(sdata))
    print(
        f"polars prepare {results['polars_prepare_s']:.2f}s; spark start {t_start:.1f}s, "
        f"to_spark {results['spark_to_spark_s']:.2f}s + prepare "
        f"{results['spark_mem_prepare_s']:.2f}s; from_parquet+validate "
        f"{results['spark_from_parquet_validate_s']:.2f}s + prepare "
        f"{results['spark_parquet_prepare_s']:.2f}s",
        flush=True,
    )

    per: dict[str, dict[str, float]] = {}
    for name, (wp, wk) in MARGINALS.items():
        times: dict[str, list[float]] = {"polars": [], "spark_mem": [], "spark_parquet": []}
        ref = None
        for _ in range(args.runs):
            t, ref = timed(partial(pe.cell_statistics, data, wp, wk))
            times["polars"].append(t)
            t, got = timed(partial(se.cell_statistics, data, wp, wk))
            times["spark_mem"].append(t)
            assert_frame_equal(got, ref)
            t, got = timed(partial(sp.cell_statistics, sdata, wp, wk))
            times["spark_parquet"].append(t)
            assert_frame_equal(got, ref)
        assert ref is not None
        per[name] = {k: statistics.median(v) for k, v in times.items()}
        per[name]["cells"] = ref.height
        print(
            f"{name:26s} cells {ref.height:>9,d}  polars {per[name]['polars']:6.2f}s  "
            f"spark(mem) {per[name]['spark_mem']:6.2f}s  "
            f"spark(parquet) {per[name]['spark_parquet']:6.2f}s",
            flush=True,
        )
    results["marginals"] = per
    results["load_average"] = os.getloadavg()
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2))
        print(f"wrote {args.out}")
    else:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
