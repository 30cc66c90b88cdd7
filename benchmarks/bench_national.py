"""National-size synthetic data: generation wall time, peak memory and disk (issue 12).

Each generation runs in a fresh process (wall time includes start-up and imports; peak
memory is the child's max RSS). The load average of the machine is recorded next to
every timing: on a shared machine timings are upper bounds.

    python benchmarks/bench_national.py lodes --jobs 130000000 --out /tmp/nat/lodes
    python benchmarks/bench_national.py qcew --establishments 10000000 --out /tmp/nat/qcew

A GEDP release of the QCEW paper's Table 7 shape (ψ identity query, pnc national total,
NAICS-5, county, county × NAICS-5; WLS microdata) on the partitioned national QCEW-like
data, ``eree protect`` in a fresh process (wall time, peak memory of the process):

    python benchmarks/bench_national.py gedp --data /tmp/nat/qcew/establishments \
        --out /tmp/nat/gedp-release
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_release import timed
from common import SHARED_DATA, machine, run_child

TABLE7 = """name = "national-qcew-table7"

[data]
kind = "establishments"
path = "{data}"
id = "primary_key"
public = ["state", "cnty", "own", "naics", "naics3", "naics4", "naics5", "naics_sector",
          "super_sector"]
confidential = ["m1emp", "m2emp", "m3emp", "wage"]

[privacy]
definition = "gedp"
neighbor = "sqrt"
distance = {{ m1emp = 0.5, m2emp = 0.5, m3emp = 0.5, wage = 50.0 }}

[[query]]
name = "identity"
by = "identity"
mechanism = "psi"
mu = {{ m1emp = 0.7, m2emp = 0.7, m3emp = 0.7, wage = 0.15 }}

[[query]]
name = "national"
by = []
mechanism = "pnc"
mu = {{ m1emp = 0.2, m2emp = 0.2, m3emp = 0.2, wage = 0.10 }}

[[query]]
name = "naics5"
by = ["naics5"]
mechanism = "pnc"
mu = {{ m1emp = 0.6, m2emp = 0.6, m3emp = 0.6, wage = 0.15 }}

[[query]]
name = "county"
by = ["state", "cnty"]
mechanism = "pnc"
mu = {{ m1emp = 0.6, m2emp = 0.6, m3emp = 0.6, wage = 0.15 }}

[[query]]
name = "county_naics5"
by = ["state", "cnty", "naics5"]
mechanism = "pnc"
mu = {{ m1emp = 0.7, m2emp = 0.7, m3emp = 0.7, wage = 0.15 }}

[pnc]
zeta = 0.01
bounds_from = "identity"

[postprocess]
microdata = true

[engine]
kind = "{engine}"

[output]
csv = false
max_cells = {max_cells}
"""


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["lodes", "qcew", "gedp"])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--data", type=Path, help="gedp: the establishment table (file or directory)")
    ap.add_argument("--engine", default="polars", help="gedp: polars or spark")
    ap.add_argument("--noise-seed", type=int, default=None, help="gedp: seeded noise")
    ap.add_argument("--rss-limit-gib", type=float, default=16.0)
    ap.add_argument("--jobs", type=int, default=130_000_000)
    ap.add_argument("--establishments", type=int, default=10_000_000)
    ap.add_argument("--max-chunk-jobs", type=int, default=6_000_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.kind == "gedp":
        release(args)
        return
    if args.kind == "lodes":
        wac = SHARED_DATA / "lodes" / "pa_wac_S000_JT00_2015.csv.gz"
        call = (
            f"national_lodes({str(args.out)!r}, {str(wac)!r}, {args.seed}, "
            f"jobs={args.jobs}, max_chunk_jobs={args.max_chunk_jobs})"
        )
    else:
        area = SHARED_DATA / "qcew_2016_by_area_ny"
        call = (
            f"national_qcew({str(args.out)!r}, {str(area)!r}, {args.seed}, "
            f"establishments={args.establishments})"
        )
    code = textwrap.dedent(
        f"""
        import json
        from dataclasses import asdict
        from eree.synth.national import national_lodes, national_qcew
        cfg, summary = {call}
        print(json.dumps(asdict(summary)))
        """
    )
    before = load()
    wall, peak, out = run_child(code)
    result = {
        "kind": args.kind,
        "wall_s": round(wall, 1),
        "peak_mib": round(peak),
        "rows": out["rows"],
        "chunks": out["chunks"],
        "disk_mib": round(out["bytes"] / 2**20),
        "load_before": before,
        "load_after": load(),
        "machine": machine(),
    }
    print(json.dumps(result, indent=2))


def release(args: argparse.Namespace) -> None:
    """The Table 7-shaped GEDP release of ``--data``, whole process."""
    import shutil

    spec = args.out.with_name(args.out.name + ".toml")
    spec.write_text(
        TABLE7.format(data=args.data.resolve(), engine=args.engine, max_cells=20_000_000)
    )
    shutil.rmtree(args.out, ignore_errors=True)
    env = dict(os.environ)
    src = Path(__file__).resolve().parent.parent / "src"
    env["PYTHONPATH"] = f"{src}{os.pathsep}{env.get('PYTHONPATH', '')}"
    cmd = [sys.executable, "-m", "eree.cli", "protect", str(spec), "--out", str(args.out)]
    if args.noise_seed is not None:
        cmd += ["--seed", str(args.noise_seed)]
    before = load()
    wall, peak, _ = timed(cmd, env, args.rss_limit_gib)
    print(json.dumps({"kind": "gedp", "data": str(args.data), "engine": args.engine,
                      "wall_s": round(wall, 1), "peak_mib": round(peak),
                      "load_before": before, "load_after": load(), "machine": machine()},
                     indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
