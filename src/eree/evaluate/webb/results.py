"""The results of the QCEW paper's experiments: one tidy table, and lookups into it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import polars as pl

from eree.evaluate.webb.plans import (
    BUDGETS,
    total_mu,
)
from eree.evaluate.webb.replicates import (
    Replicates,
)

# --------------------------------------------------------------------------------------
# running experiments
# --------------------------------------------------------------------------------------


@dataclass
class WebbResult:
    """Everything an experiment produced (before writing)."""

    results: pl.DataFrame
    cells: pl.DataFrame | None
    replicates: Replicates | None
    sweep: dict[float, Replicates]
    table11: pl.DataFrame | None
    meta: dict[str, Any]


def value(
    results: pl.DataFrame,
    experiment: str,
    workload: str,
    mechanism: str,
    stratum: str,
    metric: str,
    mu: float | None = None,
) -> float:
    """One number of the tidy results (NaN if absent); ``mu`` picks a point of Figure 9."""
    f = results.filter(
        pl.col("experiment") == experiment,
        pl.col("workload") == workload,
        pl.col("mechanism") == mechanism,
        pl.col("stratum") == stratum,
        pl.col("metric") == metric,
    )
    if mu is not None:
        f = f.filter((pl.col("mu") - mu).abs() < 1e-9)
    return float(f["value"][0]) if f.height else math.nan


def budget_rows(budget: str = "table7") -> list[dict[str, Any]]:
    """Table 7 (or the §8.2 budgets) with μ_q and the shares, for the report."""
    bud = BUDGETS[budget]
    tot = total_mu(bud)
    out = []
    for q, (e, w) in bud.items():
        mq = math.sqrt(3 * e * e + w * w)
        out.append(
            {
                "query": q,
                "mu_q": mq,
                "share": mq * mq / tot**2,
                "mu_emp": e,
                "mu_wage": w,
                "wage_share": w * w / (mq * mq),
            }
        )
    return out


# --------------------------------------------------------------------------------------
# command
# --------------------------------------------------------------------------------------
