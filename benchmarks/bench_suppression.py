"""Cell-suppression benchmarks (issue: cell suppression baseline with an attack audit).

1. One state: Rhode Island synthesised from the real QCEW by-area files (36,506
   establishments, all ownerships; 10,706 linked cells), four attributes: tabulation,
   primary, complementary suppression, audit.
2. Delaware, the same way (31,374 establishments).
3. Larger single-state inputs from the parametric generator (``--sizes``).
4. The audit of BLS's own RI publication (no microdata).

Each measurement runs in a fresh process (wall time, CPU time, peak RSS).

    python benchmarks/bench_suppression.py [--sizes 30000:10,100000:30]
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import SHARED_DATA, machine, run_child

_RUN = """
import json, time
import polars as pl
from eree.suppression import (PrimaryRules, SecondaryConfig, SuppressionConfig,
    suppress_establishments)
t0 = time.perf_counter(); c0 = time.process_time()
{load}
cfg = SuppressionConfig(rules=PrimaryRules(exempt={{"own": ("1",)}}),
                        secondary=SecondaryConfig(keep_tables=("50", "51", "70")))
res = suppress_establishments(est, cfg)
s = res.summary()
print(json.dumps({{"establishments": est.height, "cells": s["cells"], "primary": s["primary"],
    "suppressed": s["suppressed"], "witness_lps": s["witness_lps"], "ok": s["audit"]["ok"],
    **{{k + "_s": v for k, v in s["timings_s"].items()}},
    "cpu_s": time.process_time() - c0, "total_s": time.perf_counter() - t0}}))
"""

_FROM_AREA = """
from eree.synth.qcew import synth_qcew_from_area
est = synth_qcew_from_area({path!r}, seed=1).establishments.filter(pl.col("state") == {st})
"""

_PARAMETRIC = """
from eree.synth.qcew import synth_qcew_parametric
est = synth_qcew_parametric(seed=1, n_establishments={n}, n_counties={nc}).establishments
"""

_BLS = """
import json, time
from eree.suppression import audit
from eree.suppression.bls import bls_linked_tables
t0 = time.perf_counter(); c0 = time.process_time()
t, s = bls_linked_tables({path!r}, "44")
r = audit(t, s, values_known=False)
print(json.dumps({{"cells": t.n_cells, "suppressed": int(s.sum()),
    "pinned": {{a: v["pinned"] for a, v in r.summary()["attributes"].items()}},
    "cpu_s": time.process_time() - c0, "total_s": time.perf_counter() - t0}}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="30000:10,100000:30", help="establishments:counties,...")
    args = ap.parse_args()
    print(json.dumps(machine()))
    area = SHARED_DATA / "qcew_2016_by_area"
    runs: list[tuple[str, str]] = []
    if area.is_dir():
        for name, st in (("RI (from BLS files)", 44), ("DE (from BLS files)", 10)):
            runs.append((name, _RUN.format(load=_FROM_AREA.format(path=str(area), st=st))))
    for item in args.sizes.split(","):
        n, nc = (int(x) for x in item.split(":"))
        runs.append((f"parametric {n:,} / {nc} counties",
                     _RUN.format(load=_PARAMETRIC.format(n=n, nc=nc))))  # fmt: skip
    if area.is_dir():
        runs.append(("audit of BLS's RI publication", _BLS.format(path=str(area))))
    for name, code in runs:
        wall, rss, out = run_child(textwrap.dedent(code))
        print(json.dumps({"run": name, "wall_s": round(wall, 1), "peak_rss_mib": round(rss)}
                         | {k: round(v, 1) if isinstance(v, float) else v
                            for k, v in out.items()}))  # fmt: skip


if __name__ == "__main__":
    main()
