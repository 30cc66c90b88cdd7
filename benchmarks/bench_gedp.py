"""GEDP release benchmark: `protect` on Syn-RI with the QCEW paper's Table 7 configuration.

psi identity query, pnc for state total, NAICS-5, county and county×NAICS-5, four
confidential attributes. Each run is a fresh process; median of ``--runs``.

    python benchmarks/bench_gedp.py --runs 3
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import SHARED_DATA, machine, median_of, run_child

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/eree-bench"))
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "gedp.json")
    args = ap.parse_args()
    if not (SHARED_DATA / "syn_ri" / "ri44_qbp_2016_1.csv.gz").exists():
        sys.exit("needs ../shared/data/syn_ri")
    spec = ROOT / "examples" / "syn-ri-table7.toml"
    out = args.workdir / "gedp-release"
    code = textwrap.dedent(f"""
        import json, shutil, time
        from eree.release.spec import load_spec
        from eree.release.protect import protect
        from eree.mechanisms.noise import SecureNoise
        shutil.rmtree({str(out)!r}, ignore_errors=True)
        t = time.perf_counter()
        r = protect(load_spec({str(spec)!r}), {str(out)!r}, SecureNoise())
        print(json.dumps({{"protect_s": time.perf_counter() - t,
                           "cells": {{q["name"]: q["cells"] for q in r.manifest["queries"]}}}}))
    """)
    runs, cells = [], {}
    for _ in range(args.runs):
        wall, rss, p = run_child(code)
        runs.append({"wall_s": wall, "peak_rss_mib": rss, "protect_s": p["protect_s"]})
        cells = p["cells"]
    res = {"machine": machine(), "runs": args.runs, "release": median_of(runs), "cells": cells}
    print(json.dumps(res, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
