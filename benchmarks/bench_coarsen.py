"""Coarsening vs cell suppression at the same audited risk (docs/coarsening.md).

One attribute (default ``m1emp``), the QCEW linked tables, the suppression package's
primary rules (BLS: federal ownership exempt). Cell suppression (primary +
complementary) and the greedy coarsening are both checked by the same disclosure check
(the interval LP over all published tables, :func:`eree.suppression.coarsening.disclosure_check`);
printed: cells, cells published, information loss (docs/coarsening.md), violations,
cells pinned, seconds. Counts only.

    python benchmarks/bench_coarsen.py syn_ri      # ../shared/data/syn_ri (synthetic RI)
    python benchmarks/bench_coarsen.py DE          # synthesised from the DE by-area files
    python benchmarks/bench_coarsen.py RI          # ... the RI by-area files
    python benchmarks/bench_coarsen.py NY          # ... the NY by-area files

``--skip-suppression`` runs the coarsening only (``--skip-coarsening`` the suppression);
``--audit`` re-audits the output with the reconstruction audit's own reader and LP, and
a weakened coarsening (every cell that is not sensitive put back to exact), which must be
flagged. Time the whole process with
``/usr/bin/time``; the seconds printed are each method's own (wall; the coarsening's CPU
seconds — this process's, and with its LP worker process — the process's peak memory so
far and the load average after it, too).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def establishments(source: str) -> pl.DataFrame:
    """The establishments of ``source``: ``syn_ri`` or a state of the by-area files."""
    if source == "syn_ri":
        from eree.data.config import EstablishmentDataConfig
        from eree.data.establishments import load_establishments

        public = ("cnty", "own", "naics", "naics3", "naics4", "naics5", "super_sector")
        cfg = EstablishmentDataConfig(
            path=DATA / "syn_ri" / "ri44_qbp_2016_1.csv.gz",
            id="primary_key",
            public=public,
            confidential=("m1emp",),
        )
        return load_establishments(cfg).frame
    from eree.synth.qcew import synth_qcew_from_area

    fips = {"DE": "10", "RI": "44", "DC": "11", "NY": "36"}[source]
    folder = "qcew_2016_by_area_ny" if source == "NY" else "qcew_2016_by_area"
    est = synth_qcew_from_area(DATA / folder, seed=1).establishments
    return est.filter(pl.col("state").cast(pl.Int64) == int(fips)).drop("state")


def main() -> None:
    """Run the comparison and print one JSON object."""
    from eree.suppression import PrimaryRules, primary_suppression, qcew_tables
    from eree.suppression.coarsening import greedy_coarsen

    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("--attribute", default="m1emp")
    ap.add_argument("--max-rounds", type=int, default=400)
    ap.add_argument("--skip-suppression", action="store_true")
    ap.add_argument("--skip-coarsening", action="store_true")
    ap.add_argument("--no-tightening", action="store_true")
    ap.add_argument(
        "--verdict-only",
        action="store_true",
        help="final check: the proven verdict only (no bounds: no tightening, no pinned count)",
    )
    ap.add_argument("--audit", action="store_true", help="re-audit the output and a weakened one")
    args = ap.parse_args()
    a = args.attribute
    est = establishments(args.source)
    tables = qcew_tables(est, (a,), top=2)
    rules = PrimaryRules(exempt={"own": ("1",)})
    prim = primary_suppression(tables, rules, (a,))
    t = tables.values(a).astype(np.float64)
    out: dict[str, object] = {
        "source": args.source,
        "attribute": a,
        "establishments": est.height,
        "cells": tables.n_cells,
        "sensitive": int(prim.primary.sum()),
    }
    t0 = time.perf_counter()
    if args.skip_suppression:
        pass
    else:
        _suppression(tables, prim, a, t, out, t0)
    if args.skip_coarsening:
        print(json.dumps(out, indent=2))
        return
    t0 = time.perf_counter()
    c0 = time.process_time()
    k0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = greedy_coarsen(
        tables,
        a,
        prim,
        max_rounds=args.max_rounds,
        tightening=not args.no_tightening,
        full_check=not args.verdict_only,
        progress=lambda r, v: print(f"round {r}: {v} violations", file=sys.stderr, flush=True),
    )
    s = res.summary()
    s["seconds"] = round(time.perf_counter() - t0, 1)
    s["cpu_seconds"] = round(time.process_time() - c0, 1)
    k1 = resource.getrusage(resource.RUSAGE_CHILDREN)  # the LP worker, reaped by now
    worker = k1.ru_utime + k1.ru_stime - k0.ru_utime - k0.ru_stime
    s["cpu_seconds_with_worker"] = round(time.process_time() - c0 + worker, 1)
    s["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    s["load_after"] = list(os.getloadavg())
    out["coarsening"] = s
    if args.audit:
        out["audit"] = _audits(tables, res.publication, prim, a, t)
    print(json.dumps(out, indent=2))


def _audits(tables, pub, prim, a, t) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """The reconstruction audit (its own reader and LP) on the output, and on a weakened
    coarsening: every cell that is not sensitive put back to exact."""
    from eree.evaluate.reconstruct import from_frame, interval_audit
    from eree.suppression.coarsening import disclosure_check
    from eree.suppression.coarsening.publication import Publication

    def independent(q: Publication) -> int:
        frame = q.to_frame(tables, a).drop("attribute")
        res = interval_audit(from_frame(frame, relations=tables.relations, integer=q.integer))
        u = prim.protection[a]
        ok = (res.lower <= t - np.minimum(u, t) + 1e-9) & (res.upper >= t + u - 1e-9)
        return int((prim.primary & ~ok).sum())

    t0 = time.perf_counter()
    out: dict[str, object] = {"output_violations": independent(pub)}
    out["output_seconds"] = round(time.perf_counter() - t0, 1)
    keep = prim.primary | (pub.status == "suppressed")
    weak = Publication(
        np.where(keep, pub.status, "exact").astype("<U16"),
        np.where(keep, pub.value, t),
        np.where(keep, pub.base, np.nan),
        np.where(keep, pub.lower, np.nan),
        np.where(keep, pub.upper, np.nan),
        pub.integer,
    )
    out["weakened_cells_made_exact"] = int((~keep & (pub.status != "exact")).sum())
    out["weakened_violations_check"] = int(disclosure_check(tables, weak, a, prim).violated.sum())
    out["weakened_violations_audit"] = independent(weak)
    return out


def _suppression(tables, prim, a, t, out, t0) -> None:  # type: ignore[no-untyped-def]
    """Cell suppression (primary + complementary), judged by the same check."""
    from eree.suppression import SecondaryConfig, secondary_suppression
    from eree.suppression.coarsening import cell_loss, disclosure_check
    from eree.suppression.coarsening.publication import Publication

    sec = secondary_suppression(
        tables, prim, SecondaryConfig(keep_tables=("50", "51", "70")), attributes=(a,)
    )
    sup = sec.suppressed
    nan = np.full(t.size, np.nan)
    pub = Publication(
        np.where(sup, "suppressed", "exact").astype("<U16"),
        np.where(sup, np.nan, t),
        nan,
        nan.copy(),
        nan.copy(),
        bool(np.all(t == np.round(t))),
    )
    chk = disclosure_check(tables, pub, a, prim)
    out["suppression"] = {
        "cells_published": int((~sup).sum()),
        "information_loss": float(cell_loss(pub, t).mean()),
        **chk.summary(),
        "seconds": round(time.perf_counter() - t0, 1),
    }


if __name__ == "__main__":
    main()
