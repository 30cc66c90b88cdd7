"""Spark release of CSV input by plain path vs by ``file://`` URI, whole process.

A plain path's CSV files are checked by Python on the driver (header, records) before
Spark reads them; a URI's are read by Spark alone (the header's first line, then one
Spark pass over the lines for blank lines and text that is not UTF-8;
docs/spark-cluster.md#inputs-by-uri). This times ``eree protect SPEC --out DIR --seed 1
--engine spark`` on the same synthetic LODES-like CSV files named both ways, the two
runs alternating (plain, URI, plain, URI, …), and reports each one's median wall time
(the whole process: Python, JVM start, read, validation, release). The tables of every
run are checked identical.

    python benchmarks/bench_uri_inputs.py [--jobs 200000] [--runs 3] [--workdir /tmp/eree-uri-bench]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine

SPEC = """name = "uri-bench"
[data]
kind = "eree"
workplace = "{workplace}"
worker = "{worker}"
job = "{job}"
[privacy]
definition = "eree-weak"
alpha = 0.1
[[query]]
name = "county_sex"
by = ["county", "sex"]
mechanism = "smooth_laplace"
epsilon = 1.0
[[query]]
name = "county_industry_age"
by = ["county", "naics_sector", "age"]
mechanism = "log_laplace"
epsilon = 1.0
"""


def _eree(*args: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "eree.cli", *args], env=env, capture_output=True,
                       text=True)  # fmt: skip
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"eree {' '.join(args)} failed:\n{r.stderr[-2000:]}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/eree-uri-bench"))
    args = ap.parse_args()
    work = args.workdir
    shutil.rmtree(work, ignore_errors=True)
    synth = work / "synth"
    _eree("synth", "lodes", "--out", str(synth), "--jobs", str(args.jobs), "--seed", "1")
    data = work / "data"
    data.mkdir()
    for t in ("workplace", "worker", "job"):
        pl.read_parquet(synth / f"{t}.parquet").write_csv(data / f"{t}.csv")
    specs = {
        "plain": {t: f"data/{t}.csv" for t in ("workplace", "worker", "job")},
        "uri": {t: (data / f"{t}.csv").as_uri() for t in ("workplace", "worker", "job")},
    }
    for name, paths in specs.items():
        (work / f"{name}.toml").write_text(SPEC.format(**paths))
    times: dict[str, list[float]] = {"plain": [], "uri": []}
    reference: dict[str, pl.DataFrame] | None = None
    for i in range(args.runs):
        for name in ("plain", "uri"):
            out = work / f"out-{name}-{i}"
            times[name].append(_eree("protect", str(work / f"{name}.toml"), "--out", str(out),
                                     "--seed", "1", "--engine", "spark"))  # fmt: skip
            tables = {
                p.name: pl.read_parquet(p) for p in sorted((out / "tables").glob("*.parquet"))
            }
            if reference is None:
                reference = tables
            assert tables.keys() == reference.keys()
            assert all(tables[k].equals(reference[k]) for k in tables), "tables differ"
            print(f"run {i + 1} {name}: {times[name][-1]:.1f} s  (load {os.getloadavg()[0]:.1f})")
    print(f"machine: {machine()}")
    print(f"jobs: {args.jobs:,}; CSV bytes: {sum(f.stat().st_size for f in data.iterdir()):,}")
    for name, ts in times.items():
        print(f"{name}: median {statistics.median(ts):.1f} s over {len(ts)} runs "
              f"({', '.join(f'{t:.1f}' for t in ts)})")  # fmt: skip
    print("tables identical across all runs: yes")


if __name__ == "__main__":
    main()
