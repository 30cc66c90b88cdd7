"""The reconstruction audit of a written coarsening release (docs/coarsening.md).

Reads the release's ``tables/coarsened.parquet`` as published and the spec's own data,
and for every state and attribute runs the reconstruction audit's reader and LP
(:func:`eree.evaluate.reconstruct.from_frame` + :func:`~eree.evaluate.reconstruct.interval_audit`:
every cell's tightest interval from all published tables together, none of the
optimizer's shortcuts) against the same primary rules as the release. Printed (counts
only, no cell value): the sensitive cells narrowed below their protection interval
(``violations``) and the cells published coarsened that the attacker pins to one value
(``pinned``, the audit's own count); with ``--weakened``, the same for a deliberately
weakened publication — every cell that is neither sensitive nor suppressed put back to
exact — which must be flagged.

    python benchmarks/audit_coarsened_release.py ny4.toml ny4 --weakened
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import polars as pl


def _audit(part: pl.DataFrame, tables, prim, attribute: str, integer: bool) -> dict[str, int]:  # type: ignore[no-untyped-def]
    from eree.evaluate.reconstruct import from_frame, interval_audit

    res = interval_audit(from_frame(part, relations=tables.relations, integer=integer))
    t = tables.values(attribute).astype(np.float64)
    u = prim.protection[attribute]
    ok = (res.lower <= t - np.minimum(u, t) + 1e-6) & (res.upper >= t + u - 1e-6)
    return {"violations": int((prim.primary & ~ok).sum()), "pinned": int(res.pinned.sum())}


def _weakened(part: pl.DataFrame, prim, t: np.ndarray) -> tuple[pl.DataFrame, int]:  # type: ignore[no-untyped-def]
    """Every cell neither sensitive nor suppressed published exactly."""
    status = part["status"].to_numpy()
    make = ~prim.primary & (status != "suppressed") & (status != "exact")
    nan = pl.lit(None, dtype=pl.Float64)
    m = pl.Series(make)
    weak = part.with_columns(
        pl.when(m).then(pl.lit("exact")).otherwise(pl.col("status")).alias("status"),
        pl.when(m).then(pl.Series(t)).otherwise(pl.col("value")).alias("value"),
        *(
            pl.when(m).then(nan).otherwise(pl.col(c)).alias(c)
            for c in ("base", "lower", "upper")
            if c in part.columns
        ),
    )
    return weak, int(make.sum())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec", type=Path)
    ap.add_argument("release", type=Path)
    ap.add_argument("--attribute", action="append", help="only these (default: every one)")
    ap.add_argument("--weakened", action="store_true", help="audit a weakened publication too")
    args = ap.parse_args()

    from eree.release.coarsening import establishment_frame, suppression_config_of
    from eree.release.coarsening_common import release_engine
    from eree.release.spec_coarsening import CoarseningPlan, load_release_spec
    from eree.suppression import primary_suppression, qcew_tables

    plan = load_release_spec(args.spec)
    if not isinstance(plan, CoarseningPlan) or plan.kind == "jobs":
        raise SystemExit(f"{args.spec}: not a coarsening spec of establishments")
    cfg = suppression_config_of(plan)
    frame = establishment_frame(plan, release_engine(plan, None))
    published = pl.read_parquet(args.release / "tables" / "coarsened.parquet")
    attributes = tuple(args.attribute or cfg.attributes)
    out: dict[str, dict[str, object]] = {}
    states = sorted(frame["state"].unique().to_list()) if "state" in frame.columns else [None]
    for code in states:
        part = frame if code is None else frame.filter(pl.col("state") == code).drop("state")
        label = code or "all"
        tables = qcew_tables(
            part,
            cfg.attributes,
            domain=cfg.domain,
            top=cfg.rules.top_needed,
            merges=plan.protection.merges,
        )
        keys = ["table_code", *[d.name for d in tables.layout.dimensions]]
        want = tables.cells.select(pl.col(k).cast(pl.Utf8) for k in keys)
        prim = primary_suppression(tables, cfg.rules, cfg.attributes)
        for a in attributes:
            cells = published.filter((pl.col("state") == label) & (pl.col("attribute") == a))
            cells = cells.drop("attribute", "state")
            if not cells.select(keys).equals(want):
                raise SystemExit(f"{args.release}: state {label}, {a}: not the spec's cells")
            integer = bool(np.all(np.mod(tables.values(a), 1) == 0))
            t0 = time.perf_counter()
            got: dict[str, object] = {"sensitive": int(prim.primary.sum())}
            got["output"] = _audit(cells, tables, prim, a, integer)
            got["output_seconds"] = round(time.perf_counter() - t0, 1)
            if args.weakened:
                t = tables.values(a).astype(np.float64)
                weak, made = _weakened(cells, prim, t)
                got["weakened_cells_made_exact"] = made
                got["weakened"] = _audit(weak, tables, prim, a, integer)
            out[f"{label}/{a}"] = got
            print(json.dumps({f"{label}/{a}": got}), flush=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
