"""National-size synthetic data: generation wall time, peak memory and disk (issue 12).

Each generation runs in a fresh process (wall time includes start-up and imports; peak
memory is the child's max RSS). The load average of the machine is recorded next to
every timing: on a shared machine timings are upper bounds.

    python benchmarks/bench_national.py lodes --jobs 130000000 --out /tmp/nat/lodes
    python benchmarks/bench_national.py qcew --establishments 10000000 --out /tmp/nat/qcew
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import SHARED_DATA, machine, run_child


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["lodes", "qcew"])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--jobs", type=int, default=130_000_000)
    ap.add_argument("--establishments", type=int, default=10_000_000)
    ap.add_argument("--max-chunk-jobs", type=int, default=6_000_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
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


if __name__ == "__main__":
    main()
