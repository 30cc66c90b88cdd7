"""Running the QCEW paper's experiments (``eree evaluate webb-…``): tidy results and meta."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import polars as pl

from eree.data.establishments import EstablishmentData
from eree.evaluate.experiments import experiments_of
from eree.evaluate.metrics import TIDY_SCHEMA
from eree.evaluate.webb.plans import (
    BUDGETS,
    EXPERIMENTS,
    FIGURE9_GROUPINGS,
    FIGURE9_MU,
    GAMMA_EMP,
    GAMMA_WAGE,
    GROUPINGS,
    PAPER_TABLE3,
    TABLE11_CHUNK,
    TABLE11_TRIALS,
    TRIALS,
    ZETA,
    Progress,
    load_webb_data,
    noop,
    total_mu,
)
from eree.evaluate.webb.replicates import (
    Replicates,
    cell_frame,
    error_rows,
    run_replicates,
    table11,
    table11_rows,
)
from eree.evaluate.webb.results import WebbResult

# --------------------------------------------------------------------------------------
# running experiments
# --------------------------------------------------------------------------------------


def run_webb(
    experiment: str,
    data: EstablishmentData | None = None,
    *,
    trials: int = TRIALS,
    seed: int = 0,
    budget: str = "table7",
    table11_trials: int = TABLE11_TRIALS,
    sweep_mu: Sequence[float] = FIGURE9_MU,
    progress: Progress = noop,
) -> WebbResult:
    """Run one ``webb-…`` experiment (or ``webb-all``).

    Args:
        experiment: a key of :data:`EXPERIMENTS`.
        data: the establishments (default: Syn-RI; not needed for ``webb-table11``).
        trials: replicates per workflow (the paper: 34).
        seed: root seed (seeded noise: NOT FOR PUBLICATION).
        budget: ``table7`` (default) or ``section8.2`` (:data:`BUDGETS`).
        table11_trials: trials of the Table 11 ablation.
        sweep_mu: Figure 9's overall budgets (the baseline μ ≈ 2.31 is added).
    """
    exps = experiments_of(experiment, EXPERIMENTS)
    if budget not in BUDGETS:
        raise ValueError(f"budget must be one of {', '.join(BUDGETS)}, not {budget!r}")
    bud = BUDGETS[budget]
    t_start = time.perf_counter()
    secs: dict[str, float] = {}
    rows: list[dict[str, Any]] = []
    meta: dict[str, Any] = {
        "experiments": exps,
        "trials": trials,
        "seed": seed,
        "budget": budget,
        "budgets": {q: {"employment_month": e, "wage": w} for q, (e, w) in bud.items()},
        "gamma": {"employment": GAMMA_EMP, "wage": GAMMA_WAGE},
        "zeta": ZETA,
        "random": "seeded (NOT FOR PUBLICATION)",
    }
    rep: Replicates | None = None
    cells: pl.DataFrame | None = None
    sweep: dict[float, Replicates] = {}
    t11: pl.DataFrame | None = None
    needs_data = any(e != "webb-table11" for e in exps)
    if needs_data:
        if data is None:
            data = load_webb_data()
        meta["dataset"] = {
            "file": str(data.config.path),
            "establishments": data.n,
            "attributes": list(data.confidential),
        }
        meta["mu_total"] = total_mu(bud, data.confidential)
    if "webb-table3" in exps or "webb-figures" in exps:
        assert data is not None
        t0 = time.perf_counter()
        rep = run_replicates(data, trials=trials, seed=seed, budget=bud, progress=progress)
        secs["replicates"] = time.perf_counter() - t0
        if rep.interrupted:
            meta["interrupted"] = (
                f"interrupted (Ctrl-C) after {rep.trials} of {trials} replicates: the results "
                "are partial and the later experiments did not run"
            )
        meta["seconds_per_workflow"] = rep.seconds
        if "webb-figures" in exps:
            rows += error_rows(rep, "webb-figures")
        if "webb-table3" in exps:
            rows += error_rows(rep, "webb-table3", list(PAPER_TABLE3), signed=True)
        cells = cell_frame(rep)
    if "webb-figure9" in exps and "interrupted" not in meta:
        assert data is not None
        t0 = time.perf_counter()
        base = total_mu(bud, data.confidential)
        mus = sorted({*(float(m) for m in sweep_mu), base})
        for mu in mus:
            if rep is not None and math.isclose(mu, base):
                r = rep
            else:
                r = run_replicates(
                    data,
                    trials=trials,
                    seed=seed,
                    budget=bud,
                    scale=mu / base,
                    groupings={g: GROUPINGS[g] for g in FIGURE9_GROUPINGS},
                    progress=progress,
                )
            sweep[mu] = r
            rows += error_rows(r, "webb-figure9", FIGURE9_GROUPINGS)
            if r.interrupted:
                meta["interrupted"] = (
                    f"interrupted (Ctrl-C) in Figure 9's sweep at μ = {mu:.3g} after "
                    f"{r.trials} of {trials} replicates: the results are partial"
                )
                break
        secs["figure9"] = time.perf_counter() - t0
    if "webb-table11" in exps and "interrupted" not in meta:
        t0 = time.perf_counter()
        t11 = table11(table11_trials, seed, progress=progress)
        rows += table11_rows(t11)
        secs["table11"] = time.perf_counter() - t0
        meta["table11"] = {
            "trials": table11_trials,
            "setting": "50 counties × 2 establishments of 10, γ = 0.5 (sqrt and log), μ = 1 "
            "(docs/errata.md)",
        }
    secs["total"] = time.perf_counter() - t_start
    meta["seconds"] = secs
    results = pl.DataFrame(rows, schema=TIDY_SCHEMA) if rows else pl.DataFrame(schema=TIDY_SCHEMA)
    return WebbResult(results, cells, rep, sweep, t11, meta)


def count_steps(
    exps: Sequence[str],
    trials: int,
    table11_trials: int,
    data: EstablishmentData | None,
    budget: str = "table7",
    sweep_mu: Sequence[float] = FIGURE9_MU,
) -> int:
    """How many progress messages :func:`run_webb` sends for these experiments (for an ETA)."""
    steps = 0
    rep = "webb-table3" in exps or "webb-figures" in exps
    if rep:
        steps += trials
    if "webb-figure9" in exps and data is not None and budget in BUDGETS:
        base = total_mu(BUDGETS[budget], data.confidential)
        mus = sorted({*(float(m) for m in sweep_mu), base})
        reused = rep and any(math.isclose(m, base) for m in mus)
        steps += trials * (len(mus) - (1 if reused else 0))
    if "webb-table11" in exps:
        steps += 2 * math.ceil(table11_trials / TABLE11_CHUNK)
    return steps
