"""The whole LODES WAC product release for Pennsylvania: wall time, peak memory, total ε.

Makes the PA-derived job tables with ``eree synth lodes`` (which also writes the WAC
product spec, ``product.toml``), then runs ``eree protect DATA/product.toml`` under
``/usr/bin/time -v`` several times and prints the median wall time, the median peak
resident memory (whole process) and the release's total ε from its manifest. The agency
file is checked with ``eree check-format`` and compared with the real file's blocks and
columns.

    python benchmarks/bench_wac_product.py \
        --wac ../shared/data/lodes/pa_wac_S000_JT00_2015.csv.gz --runs 3
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def _timed(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one run under /usr/bin/time -v."""
    r = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(r.stderr[-2000:])
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", r.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr)
    assert wall and rss
    h, m, s = wall.groups()
    return int(h or 0) * 3600 + int(m) * 60 + float(s), int(rss[1]) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wac", type=Path, required=True, help="pa_wac_S000_JT00_2015.csv.gz")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    eree = [sys.executable, "-m", "eree.cli"]
    work = Path(tempfile.mkdtemp(prefix="bench-wac-"))
    try:
        synth = [*eree, "synth", "lodes", "--wac", str(args.wac), "--out", str(work / "pa")]
        subprocess.run([*synth, "--seed", "1"], check=True, capture_output=True)
        walls, rss = [], []
        for i in range(args.runs):
            out = work / f"rel{i}"
            w, m = _timed([*eree, "protect", str(work / "pa" / "product.toml"), "--out",
                           str(out), "--seed", str(args.seed + i)])  # fmt: skip
            walls.append(w)
            rss.append(m)
            print(f"run {i + 1}: {w:.1f} s, peak RSS {m:,.0f} MiB, load {os.getloadavg()[0]:.1f}")
        manifest = json.loads((work / "rel0" / "manifest.json").read_text())
        name = args.wac.name
        ours = work / "rel0" / "agency" / name
        subprocess.run([*eree, "check-format", str(ours), "--format", "lodes-wac"], check=True)
        with gzip.open(ours, "rt") as a, gzip.open(args.wac, "rt") as b:
            ha, hb = a.readline(), b.readline()
            blocks_a = [line.split(",", 1)[0] for line in a]
            blocks_b = [line.split(",", 1)[0] for line in b]
        print(f"same columns as the real file: {ha == hb}; same blocks: {blocks_a == blocks_b} "
              f"({len(blocks_a):,})")  # fmt: skip
        priv = manifest["privacy"]
        print(f"median wall {statistics.median(walls):.1f} s (runs: "
              f"{', '.join(f'{w:.1f}' for w in walls)}); median peak RSS "
              f"{statistics.median(rss):,.0f} MiB; total epsilon {priv['total']['epsilon']} "
              f"(definition {priv['definition']}, alpha {priv['alpha']})")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
