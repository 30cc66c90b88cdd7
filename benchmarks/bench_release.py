"""`eree protect` whole process against the plain Polars group-by beneath it (issue 12).

For each marginal set, alternately (so both see the same machine load) run in fresh
processes:

* the floor: a plain Polars lazy group-by computing the same statistics per cell
  (``count``, ``x_v`` = largest establishment contribution, establishments), reading
  only the columns it needs from the same Parquet files, no validation, no noise;
* ``eree protect`` (the CLI, whole process: start-up, imports, spec, accounting,
  loading + input validation, engine, Smooth Laplace, writing Parquet + manifest).

eree's modules are byte-compiled before the runs (as an installed package's are).

Reported: median wall time, peak memory and CPU time (user + system, all threads) of
each over ``--runs`` runs and their ratios, with the 1-minute load average before each
run (a shared machine makes every timing an upper bound). Peak memory is the larger of
the child's own peak RSS and its process tree's resident memory sampled every 0.2 s (a
Spark run's JVM is a child); ``--rss-limit-gib`` stops a run whose tree passes the limit.

    python benchmarks/bench_release.py --data /tmp/eree-bench/pa --runs 5 [--four] [--ledger]

With ``--joined`` the release reads one joined table instead of the three
(``[data] jobs``): ``WORKDIR/jobs.parquet`` is built first from the three tables in
``--data`` (:func:`write_joined`: one row per job, in job-table order, with the
workplace id, the worker id, every workplace attribute and every worker attribute, all
text columns, as an agency's job-level extract has them), and the floor is the same
group-by on that one table:

    python benchmarks/bench_release.py --data examples/pa --joined --runs 7

With ``--ledger`` the release is charged to a budget ledger made for the run: it then
reads every configured column and computes the content and structure fingerprints.

National, issue 39's lattice, publication-grade (the run of BENCHMARKS.md)::

    python benchmarks/bench_release.py --data /tmp/nat/lodes --lattice --runs 1 --skip-floor \
        --max-cells 100000000 --rss-limit-gib 16 --seed 1 --publication-grade \
        --workdir /tmp/nation/lattice

National, the demo's four marginals (the last has 82.8M cells, above the default
``[output] max_cells``, so the spec raises it), seeded so that engines can be compared
(``benchmarks/compare_releases.py``):

    python benchmarks/bench_release.py --data /tmp/nat/lodes --four --runs 1 --skip-floor \\
        --max-cells 100000000 --rss-limit-gib 16 --seed 1 --workdir /tmp/nation/polars4
    python benchmarks/bench_release.py --data /tmp/nat/lodes --four --runs 1 --skip-floor \\
        --max-cells 100000000 --rss-limit-gib 16 --seed 1 --engine spark \\
        --driver-memory 8g --workdir /tmp/nation/spark4
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine

WORKPLACE = ("tract", "naics_sector", "ownership", "county", "state")
FOUR = {
    "tract_industry_ownership": ["tract", "naics_sector", "ownership"],
    "plus_age": ["tract", "naics_sector", "ownership", "age"],
    "plus_age_sex": ["tract", "naics_sector", "ownership", "age", "sex"],
    "plus_age_sex_race": ["tract", "naics_sector", "ownership", "age", "sex", "race"],
}
ONE = dict(list(FOUR.items())[:1])  # tract × industry × ownership
#: issue 39's lattice (``--lattice``): the finest refines tract × industry and tract × sex,
#: with county and tract above; ε per marginal as the evaluation's ``lattice-tract``
LATTICE = {
    "county": ["county"],
    "tract": ["tract"],
    "tract_ind": ["tract", "naics_sector"],
    "tract_sex": ["tract", "sex"],
    "tract_ind_sex_age": ["tract", "naics_sector", "sex", "age"],
}
LATTICE_EPSILON = {"county": 1.0, "tract": 1.0, "tract_ind": 1.0, "tract_sex": 2.0,
                   "tract_ind_sex_age": 3.0}  # fmt: skip
DOMAIN_SIZE = {"age": 3, "sex": 2, "race": 6}


def write_joined(data: Path, out: Path) -> None:
    """The three tables of ``data`` joined into one Parquet table ``out``.

    One row per job, in job-table order: ``workplace_id``, ``worker_id``, the workplace
    attributes, then the worker attributes, all text (Utf8) columns. Written by a child
    process, so that this one stays small (a child's peak memory as measured includes
    its parent's resident memory at the fork).
    """

    def src(t: str) -> str:
        return str(data / t) if (data / t).is_dir() else str(data / f"{t}.parquet")

    code = textwrap.dedent(f"""
        import polars as pl
        job = pl.scan_parquet({src("job")!r}).select("workplace_id", "worker_id")
        worker = pl.scan_parquet({src("worker")!r})
        workplace = pl.scan_parquet({src("workplace")!r})
        joined = job.join(worker, on="worker_id", how="left", maintain_order="left").join(
            workplace, on="workplace_id", how="left", maintain_order="left"
        )
        wk = [c for c in worker.collect_schema().names() if c != "worker_id"]
        wp = [c for c in workplace.collect_schema().names() if c != "workplace_id"]
        cols = ["workplace_id", "worker_id", *wp, *wk]
        joined.select(pl.col(c).cast(pl.Utf8) for c in cols).sink_parquet({str(out)!r})
    """)
    subprocess.run([sys.executable, "-c", code], check=True)


def spec_text(
    data: Path,
    marginals: dict[str, list[str]],
    engine: str,
    max_cells: int | None = None,
    driver_memory: str | None = None,
    joined: Path | None = None,
    publication_grade: bool = False,
) -> str:
    def table(t: str) -> str:
        return f'{t} = "{data / t}"' if (data / t).is_dir() else f'{t} = "{data / t}.parquet"'

    lines = [
        'name = "bench"',
        "[data]",
        *([f'jobs = "{joined}"'] if joined else [table(t) for t in ("workplace", "worker", "job")]),
        "[privacy]",
        'definition = "eree-weak"',
        "alpha = 0.1",
        "[engine]",
        f'kind = "{engine}"',
        *(["[spark]", f'driver_memory = "{driver_memory}"'] if driver_memory else []),
        "[output]",
        "csv = false",
    ]  # fmt: skip
    if max_cells is not None:  # national tables: the default limit (5M cells) is raised here
        lines.append(f"max_cells = {max_cells}")
    if publication_grade:  # consistent, non-negative integer tables with the never-worse guard
        lines += ["[postprocess]", "consistent = true", "nonnegative = true", "integer = true"]
    for name, by in marginals.items():
        d = 1
        for a in by:
            d *= DOMAIN_SIZE.get(a, 1)
        if marginals is LATTICE:
            d = int(LATTICE_EPSILON[name])
        lines += [
            "[[query]]",
            f'name = "{name}"',
            f"by = {json.dumps(by)}",
            'mechanism = "smooth_laplace"',
            f"epsilon = {float(d)}",
        ]
    return "\n".join(lines) + "\n"


def joined_floor_code(jobs: Path, marginals: dict[str, list[str]]) -> str:
    """The floor on one joined table: the same cell statistics from its columns alone."""
    return textwrap.dedent(f"""
        import polars as pl
        marginals = {json.dumps(marginals)}
        workplace = {sorted(WORKPLACE)!r}
        for name, by in marginals.items():
            wp_by = [a for a in by if a in workplace]
            jobs = pl.scan_parquet({str(jobs)!r}).select("workplace_id", *by)
            per = jobs.group_by("workplace_id", *by).agg(pl.len().alias("n"))
            est = (per.select("workplace_id", *wp_by).unique()
                   .group_by(wp_by).agg(pl.len().alias("establishments")))
            cells = (per.group_by(by).agg(pl.col("n").sum().alias("count"),
                                          pl.col("n").max().alias("x_v"))
                     .join(est, on=wp_by, how="left")
                     .sort(by).collect())
            print(name, cells.height)
    """)


def floor_code(data: Path, marginals: dict[str, list[str]]) -> str:
    def src(t: str) -> str:
        return str(data / t) if (data / t).is_dir() else str(data / f"{t}.parquet")

    return textwrap.dedent(f"""
        import polars as pl
        marginals = {json.dumps(marginals)}
        workplace = {sorted(WORKPLACE)!r}
        for name, by in marginals.items():
            wp_by = [a for a in by if a in workplace]
            wk_by = [a for a in by if a not in workplace]
            jobs = pl.scan_parquet({src("job")!r}).select("worker_id", "workplace_id")
            if wk_by:
                wk = pl.scan_parquet({src("worker")!r}).select("worker_id", *wk_by)
                jobs = jobs.join(wk, on="worker_id")
            per = jobs.group_by("workplace_id", *wk_by).agg(pl.len().alias("n"))
            wp = pl.scan_parquet({src("workplace")!r}).select("workplace_id", *wp_by)
            est = wp.group_by(wp_by).agg(pl.len().alias("establishments"))
            cells = (per.join(wp, on="workplace_id")
                     .group_by(by).agg(pl.col("n").sum().alias("count"),
                                       pl.col("n").max().alias("x_v"))
                     .join(est, on=wp_by, how="left")
                     .sort(by).collect())
            print(name, cells.height)
    """)


def timed(
    cmd: list[str], env: dict[str, str], rss_limit_gib: float | None = None
) -> tuple[float, float, float]:
    """Wall seconds, peak memory (MiB) and CPU seconds (user + system) of one process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    tree_peak = guard(proc, rss_limit_gib)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise RuntimeError(f"{cmd[:4]} failed:\n{err[-3000:]}")
    # the child's own peak, or its process tree's sampled one (Spark's JVM is a child)
    peak = max(usage.ru_maxrss / 1024.0, tree_peak[0] * 1024.0)
    return wall, peak, usage.ru_utime + usage.ru_stime


def tree_rss_gib(pid: int) -> float:
    """Resident memory of ``pid`` and its descendants (a Spark run's JVM is a child)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            for t in Path(f"/proc/{p}/task").iterdir():
                kids = (t / "children").read_text().split()
                todo.extend(int(k) for k in kids)
        except OSError:
            continue
    return total / 2**20


def guard(proc: subprocess.Popen[bytes], limit_gib: float | None) -> list[float]:
    """Sample the resident memory of ``proc``'s tree every 0.2 s (peak in GiB, updated in
    the returned list); kill ``proc`` when it passes ``limit_gib``."""
    import threading

    peak = [0.0]

    def running() -> bool:
        # without reaping the child (``proc.poll()`` would, racing ``os.wait4`` in
        # :func:`timed` and losing the child's resource usage)
        try:
            return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
        except ChildProcessError:
            return False

    def watch() -> None:
        while running():
            rss = tree_rss_gib(proc.pid)
            peak[0] = max(peak[0], rss)
            if limit_gib is not None and rss > limit_gib:
                print(f"memory guard: over {limit_gib} GiB, stopping the run", flush=True)
                proc.kill()
                return
            time.sleep(0.2)

    threading.Thread(target=watch, daemon=True).start()
    return peak


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, required=True, help="dir with workplace/worker/job")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--four", action="store_true", help="the four marginals of the demo")
    ap.add_argument(
        "--marginals",
        type=int,
        choices=(1, 2, 3, 4),
        default=None,
        help="the first N of the demo's four marginals (a chain; --four is N = 4)",
    )
    ap.add_argument(
        "--lattice",
        action="store_true",
        help="issue 39's five-marginal lattice (county, tract, tract × industry, tract × sex, "
        "tract × industry × sex × age) instead of the demo's chain",
    )
    ap.add_argument("--engine", default="polars")
    ap.add_argument("--skip-floor", action="store_true")
    ap.add_argument("--max-cells", type=int, default=None, help="[output] max_cells of the spec")
    ap.add_argument("--seed", type=int, default=None, help="seeded noise (to compare engines)")
    ap.add_argument("--driver-memory", default=None, help="Spark driver heap ([spark])")
    ap.add_argument("--rss-limit-gib", type=float, default=None, help="stop a run above this")
    ap.add_argument(
        "--ledger",
        action="store_true",
        help="release with a budget ledger (every configured column read and fingerprinted)",
    )
    ap.add_argument(
        "--publication-grade",
        action="store_true",
        help="[postprocess] consistent, nonnegative and integer (with the never-worse guard)",
    )
    ap.add_argument(
        "--joined",
        action="store_true",
        help="release from one joined jobs table (WORKDIR/jobs.parquet, built from --data)",
    )
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/eree-bench-release"))
    args = ap.parse_args()
    n_marginals = args.marginals or (4 if args.four else 1)
    marginals = LATTICE if args.lattice else dict(list(FOUR.items())[:n_marginals])
    args.workdir.mkdir(parents=True, exist_ok=True)
    data = args.data.resolve()
    joined = (args.workdir / "jobs.parquet").resolve() if args.joined else None
    if joined is not None:
        write_joined(data, joined)
    spec = args.workdir / "spec.toml"
    spec.write_text(
        spec_text(
            data,
            marginals,
            args.engine,
            args.max_cells,
            args.driver_memory,
            joined,
            args.publication_grade,
        )
    )
    floor = args.workdir / "floor.py"
    floor.write_text(
        joined_floor_code(joined, marginals) if joined else floor_code(data, marginals)
    )
    env = dict(os.environ)
    src = Path(__file__).resolve().parent.parent / "src"
    env["PYTHONPATH"] = f"{src}{os.pathsep}{env.get('PYTHONPATH', '')}"
    # Byte-compile eree's modules first, as installing a package does: run from a checkout
    # with PYTHONDONTWRITEBYTECODE set (as on the machine of BENCHMARKS.md), every run
    # would otherwise compile eree's ~100 modules from source again (~0.1 s), which no
    # installed eree does; the floor's Polars is installed, hence byte-compiled.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "eree")], check=True)
    out = args.workdir / "release"
    ledger: list[str] = []
    if args.ledger:
        book = args.workdir / "ledger.sqlite"
        for f in (book, book.with_name(book.name + ".key")):
            f.unlink(missing_ok=True)
        subprocess.run(
            [sys.executable, "-m", "eree.cli", "ledger", "budget", str(book), "bench",
             "--epsilon", "1e9", "--delta", "0.99", "--alpha", "0.1"],
            env=env, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        ledger = ["--ledger", str(book)]
    rows = []
    for _ in range(args.runs):
        run: dict[str, float | list[float]] = {"load": [round(x, 2) for x in os.getloadavg()]}
        if not args.skip_floor:
            run["floor_s"], run["floor_mib"], run["floor_cpu_s"] = timed(
                [sys.executable, str(floor)], env, args.rss_limit_gib
            )
        shutil.rmtree(out, ignore_errors=True)
        cmd = [sys.executable, "-m", "eree.cli", "protect", str(spec), "--out", str(out), *ledger]
        if args.seed is not None:
            cmd += ["--seed", str(args.seed)]
        run["eree_s"], run["eree_mib"], run["eree_cpu_s"] = timed(cmd, env, args.rss_limit_gib)
        rows.append(run)
        print(json.dumps(run), flush=True)
    med = {
        k: statistics.median(float(r[k]) for r in rows)  # type: ignore[arg-type]
        for k in rows[0]
        if k != "load"
    }
    if not args.skip_floor:
        med["wall_ratio"] = med["eree_s"] / med["floor_s"]
        med["memory_ratio"] = med["eree_mib"] / med["floor_mib"]
        med["cpu_ratio"] = med["eree_cpu_s"] / med["floor_cpu_s"]
    print(json.dumps({"median": med, "engine": args.engine, "marginals": list(marginals),
                      "joined": args.joined, "ledger": args.ledger, "machine": machine()},
                     indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
