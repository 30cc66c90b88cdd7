"""``eree coarsen``: coarsening (rounding, suppression as last resort), audited by the LP.

See docs/coarsening.md. Reads an establishment file like ``eree suppress``
(:mod:`eree.cli.suppress`), applies the same primary rules, and publishes every
attribute's linked tables coarsened by the greedy optimizer
(:mod:`eree.suppression.coarsening`) until
the attacker's LP over all published tables finds no violation. There is no formal
guarantee: the output says so and states the audited risk. Screen output holds counts
only; the published tables hold what a release publishes (exact, rounded values,
ranges, suppressed flags).
"""

from __future__ import annotations

import json
import shutil
import time
from typing import Annotated, Any

import polars as pl
import typer

from eree.cli.common import (
    DEFAULT_ATTRIBUTES,
    Attributes,
    DominanceK,
    DominanceN,
    EstablishmentFile,
    ExemptOwn,
    Force,
    IdColumn,
    MinProtection,
    Out,
    PPercent,
    Quiet,
    State,
    Table,
    Threshold,
    WriteCsv,
    check_out,
    console,
    fail,
    policy_allows,
)
from eree.cli.suppress import (
    by_state,
    load_establishment_file,
    suppression_config,
)
from eree.errors import EreeError
from eree.release.coarsening import NO_GUARANTEE, coarsen_state


def coarsen(
    input: EstablishmentFile,
    out: Out,
    state: State = None,
    id_column: IdColumn = "primary_key",
    attributes: Attributes = DEFAULT_ATTRIBUTES,
    threshold: Threshold = 3,
    dominance_k: DominanceK = 80.0,
    dominance_n: DominanceN = 1,
    p_percent: PPercent = 10.0,
    min_protection: MinProtection = 1.0,
    exempt_own: ExemptOwn = "1",
    rounding: Annotated[
        str,
        typer.Option(
            help="deterministic | random (unbiased random rounding: an agency policy choice)"
        ),
    ] = "deterministic",
    seed: Annotated[
        int | None,
        typer.Option(help="seed of random rounding (EXPERIMENTS ONLY, NOT FOR PUBLICATION)"),
    ] = None,
    csv: WriteCsv = True,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    """Coarsening: round to a base, suppress only as last resort, audited by the LP.

    Same primary rules as eree suppress. Each attribute's cells start exact; the greedy
    optimizer rounds sensitive cells and the cells that pin them to larger bases until
    the attacker's LP over all published tables finds no sensitive cell narrowed below
    its protection interval. NO FORMAL GUARANTEE: the manifest states the audited risk.

    Writes OUT/<state>/: published.parquet (one row per cell and attribute: status
    exact | rounded | range | suppressed, value, base, lower, upper, establishments),
    manifest.json (method, no guarantee, audited risk: violations found by the audit),
    summary.json (counts, information loss, timings). Nothing is written when the
    optimizer leaves a violation.

    Example: eree coarsen ri/establishments.csv.gz --out ri-coarsened --attributes m1emp
    """
    from eree.data.outdir import make_temp_folder, put_in_place, write_marker

    policy_allows("coarsen", input)
    check_out(out, force)
    if rounding not in ("deterministic", "random"):
        fail("--rounding: must be deterministic or random")
    try:
        cfg = suppression_config(
            attributes=attributes,
            threshold=threshold,
            dominance_k=dominance_k,
            dominance_n=dominance_n,
            p_percent=p_percent,
            protection_percent=None,
            min_protection=min_protection,
            exempt_own=exempt_own,
            keep_tables="",
        )
        with console.status("loading establishments…"):
            frame = load_establishment_file(input, id_column, cfg.attributes)
        parts = by_state(frame, state)
    except (EreeError, OSError, ValueError) as e:
        fail(e)
    tmp = make_temp_folder(out, f".{out.name}.partial-")
    try:
        for code, part in parts:
            t0 = time.perf_counter()
            with console.status(f"state {code or '—'}: coarsening…"):
                res = coarsen_state(part, cfg, rounding, seed)
            seconds = round(time.perf_counter() - t0, 2)
            left = sum(s["audit"]["violations"] for s in res["attributes"].values())
            if left:
                raise ValueError(
                    f"state {code or '—'}: the optimizer left {left} sensitive cells narrowed "
                    "below the rule; nothing written"
                )
            d = tmp / (code or "all")
            d.mkdir(parents=True)
            pub = pl.concat(res["frames"], how="vertical_relaxed")
            pub.write_parquet(d / "published.parquet")
            if csv:
                pub.write_csv(d / "published.csv")
            manifest = {
                "protection": "coarsening",
                "formal_guarantee": None,
                "statement": NO_GUARANTEE,
                "rounding": rounding,
                "seeded": seed is not None,
                "rules": cfg.rules.describe(),
                "audited_risk": {
                    "method": "interval LP over all published tables (HiGHS), per component",
                    "violations": left,
                    "per_attribute": {a: s["audit"] for a, s in res["attributes"].items()},
                },
            }
            if seed is not None:
                manifest["warning"] = "seeded random rounding: for experiments, not for release"
            (d / "manifest.json").write_text(json.dumps(manifest, indent=2))
            summary = {
                "statement": NO_GUARANTEE,
                "sensitive_cells": res["sensitive_cells"],
                "attributes": res["attributes"],
                "seconds": seconds,
            }
            (d / "summary.json").write_text(json.dumps(summary, indent=2))
            if not quiet:
                console.print(_table(code, res["attributes"]))
        write_marker(tmp, "eree coarsen")
        put_in_place(tmp, out)
    except (EreeError, OSError, ValueError) as e:
        shutil.rmtree(tmp, ignore_errors=True)
        fail(e)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    console.print(NO_GUARANTEE)
    console.print(f"written to {out}")


def _table(code: str | None, attrs: dict[str, Any]) -> Any:
    t = Table(title=f"State {code or '—'}: coarsened (audited violations: 0)")
    for c in ("attribute", "cells", "published", "exact", "rounded", "suppressed", "loss"):
        t.add_column(c, justify="right")
    for a, s in attrs.items():
        b = s["by_status"]
        t.add_row(
            a,
            str(s["cells"]),
            str(s["cells_published"]),
            str(b["exact"]),
            str(b["rounded"] + b["random_rounded"]),
            str(b["suppressed"]),
            f"{s['information_loss']:.3f}",
        )
    return t
