"""``eree demo``: the main job end to end on built-in synthetic data (DESIGN.md §7.1).

It synthesises a small LODES-like dataset, writes a release spec for it, releases four
marginals under weak ER-EE privacy, measures the error against the (synthetic, hence
shareable) truth, and writes an HTML report. (The GEDP half is added by
:func:`_gedp_half` when the establishment path is available.)
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from rich.console import Console

from eree.errors import EreeError

LODES_SPEC = """\
# Demo release of LODES-like job counts under weak (alpha, epsilon)-ER-EE privacy.
name = "demo-lodes"

[data]
kind = "eree"
workplace = "../data/lodes/workplace.parquet"
worker = "../data/lodes/worker.parquet"
job = "../data/lodes/job.parquet"

[privacy]
definition = "eree-weak"
alpha = 0.1

[[query]]
name = "tract_industry_ownership"
by = ["tract", "naics_sector", "ownership"]
mechanism = "smooth_laplace"
epsilon = 1.0

[[query]]
name = "county_industry"
by = ["county", "naics_sector"]
mechanism = "log_laplace"
epsilon = 1.0

[[query]]
name = "county_sex"
by = ["county", "sex"]
mechanism = "smooth_gamma"
epsilon = 2.0                 # whole cost: d = 2 sexes, so 1.0 per cell

[[query]]
name = "county_age_sex"
by = ["county", "age", "sex"]
mechanism = "smooth_laplace"
epsilon = 6.0                 # whole cost: d = 6 age x sex combinations, so 1.0 per cell
"""


def _lodes_half(out: Path, seed: int | None, console: Console) -> dict[str, Any]:
    from eree.data.eree_tables import load_eree
    from eree.engine.polars_engine import PolarsEngine
    from eree.mechanisms.noise import make_noise_source
    from eree.release.counts import split_by
    from eree.release.protect import protect
    from eree.release.spec import load_spec
    from eree.synth.lodes import synth_parametric

    data_dir = out / "data" / "lodes"
    synth = synth_parametric(seed=2017)
    synth.write(data_dir)
    console.print(
        f"synthesised {synth.workplace.height:,} workplaces and {synth.job.height:,} jobs "
        f"→ {data_dir}"
    )
    spec_path = out / "specs" / "lodes.toml"
    spec_path.parent.mkdir(parents=True, exist_ok=True)
    spec_path.write_text(LODES_SPEC, encoding="utf-8")
    plan = load_spec(spec_path)
    result = protect(plan, out / "releases" / "lodes", make_noise_source(seed=seed))
    # accuracy against the synthetic truth (shareable only because the data are synthetic)
    data = load_eree(plan.data)  # type: ignore[arg-type]
    engine = PolarsEngine()
    accuracy = []
    for qt in result.tables:
        q = plan.query(qt.name)
        wp, wk = split_by(q, plan.data)  # type: ignore[arg-type]
        truth = engine.cell_statistics(data, wp, wk)["count"].to_numpy()
        err = np.abs(qt.table["jobs"].to_numpy() - truth)
        accuracy.append(
            {"query": qt.name, "cells": qt.cells, "mean_abs_error": float(err.mean()),
             "median_abs_error": float(np.median(err))}
        )  # fmt: skip
    return {"spec": spec_path, "result": result, "accuracy": accuracy}


def run_demo(out: str | Path, *, seed: int | None = None, console: Console | None = None) -> dict:
    """Run the demo into ``out`` (must not exist or be empty); return a summary."""
    from eree.release.report import html_page, release_section

    console = console or Console()
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise EreeError(f"{out} exists and is not empty; choose another --out")
    t0 = time.perf_counter()
    lodes = _lodes_half(out, seed, console)
    res = lodes["result"]
    from eree.cli import _print_release

    _print_release(res.manifest, res.out_dir)
    sections = [
        release_section(res.manifest, {t.name: t.table for t in res.tables}),
        "<h3>Accuracy against the synthetic truth</h3>"
        + pl.DataFrame(lodes["accuracy"])._repr_html_(),
    ]
    outputs: dict[str, Any] = {
        "ER-EE spec": lodes["spec"],
        "ER-EE release": res.out_dir,
    }
    report = out / "report.html"
    report.write_text(html_page("eree demo", sections), encoding="utf-8")
    outputs["report"] = report
    acc = pl.DataFrame(lodes["accuracy"])
    console.print(acc)
    return {"seconds": time.perf_counter() - t0, "outputs": outputs}
