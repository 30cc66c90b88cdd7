"""Category merges next to coarsening alone, on the same data and rules (docs/coarsening.md).

One attribute of one state's QCEW linked tables, coarsened by the optimizer
(:func:`eree.suppression.coarsening.greedy_coarsen`) four ways: no merge; the small
six-digit industries merged; the small counties merged; both. The merges are chosen from
establishment counts only (QCEW publishes them):

* industries: under each five-digit parent, the six-digit codes with fewer than
  ``--threshold`` establishments in the state (all ownerships) form one group (with the
  parent's smallest other code when only one is small);
* areas: the ``--areas`` counties with the fewest establishments form one group.

Printed per arm (counts only, no confidential value): cells, sensitive cells, cells by
status, the mean loss over its own cells, the final check's violations and pinned cells,
seconds; and **the loss over the original cells** (the unmerged tables' cells): a cell
the arm publishes under its own key keeps its loss, a merged member — not published —
counts 1 (what suppression costs), so the arms are compared on the same cells.

    python benchmarks/bench_merges.py RI --attribute wage
    python benchmarks/bench_merges.py DE --attribute m1emp
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_coarsen import establishments


def industry_groups(frame: pl.DataFrame, threshold: int) -> tuple[tuple[str, ...], ...]:
    """Under each NAICS-5 parent: its six-digit codes with < ``threshold`` establishments."""
    counts = (
        frame.group_by(pl.col("naics").cast(pl.Utf8))
        .len()
        .with_columns(pl.col("naics").str.slice(0, 5).alias("parent"))
        .sort("naics")
    )
    groups = []
    for (_,), part in counts.group_by(["parent"], maintain_order=True):
        if part.height < 2:
            continue
        small = part.filter(pl.col("len") < threshold)["naics"].to_list()
        if len(small) == 1:
            others = part.filter(pl.col("len") >= threshold).sort(["len", "naics"])
            small.append(others["naics"][0])
        if len(small) >= 2:
            groups.append(tuple(sorted(small)))
    return tuple(groups)


def area_groups(frame: pl.DataFrame, k: int) -> tuple[tuple[str, ...], ...]:
    """The ``k`` counties with the fewest establishments, as one group (none when the
    state has fewer; QCEW's 999, establishments of no one county, is not a county)."""
    counts = (
        frame.group_by(pl.col("cnty").cast(pl.Utf8))
        .len()
        .filter(pl.col("cnty") != "999")
        .sort(["len", "cnty"])
    )
    if k < 2 or counts.height < k:
        return ()
    return (tuple(sorted(counts["cnty"].head(k).to_list())),)


def keyed(tables) -> pl.DataFrame:  # type: ignore[no-untyped-def]
    keys = ["table_code", *[d.name for d in tables.layout.dimensions]]
    return tables.cells.select(pl.col(k).cast(pl.Utf8) for k in keys)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("source", help="syn_ri, DE, RI, DC or NY")
    ap.add_argument("--attribute", default="m1emp")
    ap.add_argument("--threshold", type=int, default=3)
    ap.add_argument("--areas", type=int, default=2)
    args = ap.parse_args()

    from eree.suppression import (
        CategoryMerges,
        PrimaryRules,
        check_merges,
        primary_suppression,
        qcew_tables,
    )
    from eree.suppression.coarsening import cell_loss, greedy_coarsen

    frame = establishments(args.source)
    rules = PrimaryRules(threshold=args.threshold, dominance_n=1, dominance_k=80.0,
                         p_percent=10.0, min_protection=1.0, exempt={"own": ("1",)})  # fmt: skip
    ind = industry_groups(frame, args.threshold)
    area = area_groups(frame, args.areas)
    arms = {"none": CategoryMerges(), "industries": CategoryMerges(industries=ind)}
    if area:  # a state of one county has nothing to merge
        arms["areas"] = CategoryMerges(areas=area)
        arms["both"] = CategoryMerges(areas=area, industries=ind)
    print(json.dumps({"industry_groups": len(ind),
                      "industry_codes_merged": sum(len(g) for g in ind),
                      "area_group": list(area[0]) if area else []}), flush=True)  # fmt: skip
    original = None
    out = {}
    for name, merges in arms.items():
        check_merges(frame, merges)
        t0 = time.perf_counter()
        tables = qcew_tables(frame, (args.attribute,), top=rules.top_needed, merges=merges)
        prim = primary_suppression(tables, rules, (args.attribute,))
        res = greedy_coarsen(tables, args.attribute, prim)
        seconds = time.perf_counter() - t0
        loss = cell_loss(res.publication, tables.values(args.attribute))
        keys = keyed(tables).with_columns(pl.Series("loss", loss))
        if original is None:
            original = keyed(tables)
        on = list(original.columns)
        joined = original.join(keys, on=on, how="left")
        s = res.summary()
        out[name] = {
            "cells": tables.n_cells,
            "sensitive": int(prim.primary.sum()),
            "by_status": res.publication.counts(),
            "loss_own_cells": round(float(loss.mean()), 4),
            "original_cells_published": int(joined["loss"].is_not_null().sum()),
            "loss_original_cells": round(float(joined["loss"].fill_null(1.0).mean()), 4),
            "violations": s["audit"]["violations"],
            "pinned": s["audit"]["cells_pinned"],
            "seconds": round(seconds, 1),
        }
        print(json.dumps({name: out[name]}), flush=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
