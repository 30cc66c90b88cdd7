"""Cell-suppression benchmarks (issue 17: cell suppression at the scale of a large state).

Every run: establishments synthesised from real QCEW by-area files
(``synth_qcew_from_area``, seed 1), the QCEW linked tables, four measures, primary +
complementary suppression + the full attacker audit, in a fresh process (wall time, CPU
time, peak RSS, LP counts, and the load average before and after — on a shared machine
timings are upper bounds).

1. Rhode Island, Delaware, DC (``qcew_2016_by_area``); with ``--baseline COMMIT`` also
   with the implementation of that commit (extracted with ``git archive``), side by
   side; Rhode Island as the median of ``--repeat`` runs.
2. Scaling: New York (``qcew_2016_by_area_ny``) restricted to its first counties (by
   FIPS) up to about 25K, 100K and 300K establishments, and the whole state (623,628).
3. The audit of BLS's own RI publication (no microdata).

    python benchmarks/bench_suppression.py [--repeat 3] [--baseline f8a1572]
        [--sizes 25000,100000,300000] [--skip-ny]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import SHARED_DATA, machine, run_child

_RUN = """
import json, resource, time
import polars as pl
from {pkg} import (PrimaryRules, SecondaryConfig, SuppressionConfig,
    suppress_establishments)
from eree.synth.qcew import synth_qcew_from_area
est = synth_qcew_from_area({path!r}, seed=1).establishments.filter(pl.col("state") == {st})
{subset}
t0 = time.perf_counter(); c0 = time.process_time()
cfg = SuppressionConfig(rules=PrimaryRules(exempt={{"own": ("1",)}}),
                        secondary=SecondaryConfig(keep_tables=("50", "51", "70")))
res = suppress_establishments(est, cfg)
s = res.summary()
aud = s["audit"]
out = {{"establishments": est.height, "cells": s["cells"], "primary": s["primary"],
    "suppressed": s["suppressed"], "witness_lps": s["witness_lps"], "ok": aud["ok"],
    "pinned": sum(a["pinned"] for a in aud["attributes"].values()),
    "narrowed_primary": sum(a["narrowed_primary"] for a in aud["attributes"].values()),
    "audit_lps": aud.get("how", {{}}).get("lp"),
    "audit_certified": aud.get("how", {{}}).get("certified"),
    "workers": s.get("witness_lp_counts", {{}}).get("workers", 1),
    **{{k + "_s": v for k, v in s["timings_s"].items()}},
    "cpu_s": time.process_time() - c0,
    "cpu_workers_s": resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime,
    "suppress_and_audit_s": time.perf_counter() - t0}}
print(json.dumps(out))
"""

_SUBSET = """
cnty = est.group_by("cnty").len().sort(pl.col("cnty").cast(pl.Int64))
keep, n = [], 0
for c, k in cnty.iter_rows():
    if n >= {target}:
        break
    keep.append(c); n += k
est = est.filter(pl.col("cnty").is_in(keep))
"""

_BLS = """
import json, time
from eree.suppression import audit
from eree.suppression.bls import bls_linked_tables
from eree.data.qcew import read_qcew_area_files
t0 = time.perf_counter(); c0 = time.process_time()
t, s = bls_linked_tables(read_qcew_area_files({path!r}), "44")
r = audit(t, s, values_known=False)
print(json.dumps({{"cells": t.n_cells, "suppressed": int(s.sum()),
    "pinned": {{a: v["pinned"] for a, v in r.summary()["attributes"].items()}},
    "audit_lps": r.stats["lp"],
    "cpu_s": time.process_time() - c0, "total_s": time.perf_counter() - t0}}))
"""


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _run(name: str, code: str, env_src: Path | None = None) -> dict[str, Any]:
    before = _load()
    if env_src is not None:
        code = f"import sys; sys.path.insert(0, {str(env_src)!r})\n" + code
    wall, rss, out = run_child(textwrap.dedent(code))
    rec = {"run": name, "wall_s": round(wall, 1), "peak_rss_mib": round(rss)}
    rec |= {k: round(v, 1) if isinstance(v, float) else v for k, v in out.items()}
    rec["load_before"], rec["load_after"] = before, _load()
    print(json.dumps(rec), flush=True)
    return rec


def _baseline_src(commit: str) -> Path:
    """The ``src`` folder of ``commit``, extracted to a temporary directory."""
    root = Path(__file__).resolve().parent.parent
    dest = Path(tempfile.mkdtemp(prefix="eree-baseline-"))
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", commit, "src"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / "src"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3, help="runs per RI measurement")
    ap.add_argument("--baseline", default=None, help="commit of the implementation to compare")
    ap.add_argument("--sizes", default="25000,100000,300000", help="NY subsets (establishments)")
    ap.add_argument("--skip-ny", action="store_true")
    ap.add_argument("--only-ri", action="store_true")
    ap.add_argument("--skip-ri", action="store_true", help="no RI/DE/DC runs")
    ap.add_argument("--skip-ny-whole", action="store_true", help="NY subsets only")
    args = ap.parse_args()
    print(json.dumps(machine() | {"load": _load()}))
    area = SHARED_DATA / "qcew_2016_by_area"
    ny = SHARED_DATA / "qcew_2016_by_area_ny"
    ri = _RUN.format(pkg="eree.suppression", path=str(area), st=44, subset="")
    if area.is_dir() and not args.skip_ri:
        src = _baseline_src(args.baseline) if args.baseline else None
        old = _RUN.format(pkg="eree.evaluate.suppression", path=str(area), st=44, subset="")
        runs, old_runs = [], []
        for _ in range(args.repeat):  # interleaved: both see the same load, on average
            runs.append(_run("RI (this version)", ri))
            if src is not None:
                old_runs.append(_run(f"RI (baseline {args.baseline})", old, src))
        line: dict[str, Any] = {"run": "RI median (this version)"}
        for key in ("wall_s", "cpu_s"):
            med = statistics.median(r[key] for r in runs)
            line[key] = med
            if old_runs:
                old_med = statistics.median(r[key] for r in old_runs)
                line[f"baseline_{key}"] = old_med
                line[f"ratio_{key}"] = round(old_med / med, 2)
        print(json.dumps(line), flush=True)
        if args.only_ri:
            return
        for name, st in (("DE", 10), ("DC", 11)):
            _run(name, _RUN.format(pkg="eree.suppression", path=str(area), st=st, subset=""))
            if args.baseline:
                old = _RUN.format(pkg="eree.evaluate.suppression", path=str(area), st=st, subset="")
                _run(f"{name} (baseline {args.baseline})", old, src)
    if ny.is_dir() and not args.skip_ny:
        for target in (int(x) for x in args.sizes.split(",") if x):
            sub = _SUBSET.format(target=target)
            _run(
                f"NY first counties, ~{target:,}",
                _RUN.format(pkg="eree.suppression", path=str(ny), st=36, subset=sub),
            )
        if not args.skip_ny_whole:
            whole = _RUN.format(pkg="eree.suppression", path=str(ny), st=36, subset="")
            _run("NY (whole state)", whole)
    if area.is_dir() and not args.skip_ri:
        _run("audit of BLS's RI publication", _BLS.format(path=str(area)))


if __name__ == "__main__":
    main()
