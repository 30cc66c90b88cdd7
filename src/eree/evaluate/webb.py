r"""Experiments of the QCEW paper (Webb et al., ``papers/004_*``, §8 and Appendices C, H).

``eree evaluate webb-…`` (DESIGN.md §7.1, §9):

* ``webb-table11`` — Appendix H, Table 11: the WLS ablation (Est / Act / Hybrid, ψ = √
  and log), by :func:`eree.evaluate.webb_ablation.webb_table11`, run in chunks of
  50,000 trials up to ``table11_trials`` (the paper used 1,000,000); each cell with the
  paper's value, eree's value, its Monte Carlo standard error and the distance between
  the two in standard errors (:func:`table11`).
* ``webb-table3`` — Table 3: quartiles and mean of the signed differences
  (reconstructed − true) of group-by answers computed from the protected microdata, at
  state and county × total, supersector and NAICS-5, for both workflows.
* ``webb-figures`` — Figures 2 and 3 (absolute error per group, averaged over the
  replicates, by county, NAICS-3 and NAICS-5; absolute error of the state total per
  replicate) and Figure 8 (per-group relative error |x − x̃|/(x + 1) against the true
  value, NAICS-3, NAICS-5, county × NAICS-5), employment (month 3) and wages.
* ``webb-figure9`` — Figure 9: median relative error as the overall budget μ varies
  (every per-query μ scaled by the same factor, Table 7's shares kept).
* ``webb-all`` — all of the above (one set of replicates for Tables 3 and Figures 2, 3, 8).

**The two workflows** compared (§8): *pnc* — the identity query by the √-mechanism
(ψ-mechanism with ψ = √x; Thm 6.6 estimates and estimated variances), every other query
by the pnc-mechanism (ζ = 0.01, bounds from the identity answers, public variances); *sqrt*
— every query by the √-mechanism. Both with the Table 7 budgets (:data:`TABLE7`: per query
μ for each month of employment and for wages; μ ≈ 2.31 in all), γ_emp = 0.5,
γ_wage = 50. Each replicate runs the real release path
(:func:`eree.release.gedp.release_gedp`) and the real microdata post-processing
(:func:`eree.release.microdata.build_microdata`, WLS of Eq. 1 from the published tables,
no non-negativity), then tabulates the microdata at the QCEW aggregation levels
(:data:`GROUPINGS`: state and county × total, supersector, sector, NAICS-3 … NAICS-6). The
truth is the same tabulation of the confidential microdata, computed once. Replicate r uses
the same seed in both workflows (and at every budget of the sweep): the identity query,
drawn first in both, gets the same noise — common random numbers, so differences between
workflows are not noise in the noise.

Outputs (:func:`write_webb_outputs`): ``results.csv`` (tidy: experiment, workload = the
attribute or Table 11 query, mechanism = workflow, alpha, epsilon, mu = overall μ, stratum
= grouping, metric, value, trials), ``cells.csv`` (one row per workflow, attribute,
grouping and cell: true value, mean absolute, relative and signed error over the
replicates), ``run.json``, ``figures/*.png`` and ``report.html`` with a short reading of each
table and figure computed from the numbers.

Evaluation code sees the confidential (synthetic) values: that is its job; nothing here is
on the release path.
"""

from __future__ import annotations

import html
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import polars as pl
import typer

from eree.data.config import EstablishmentDataConfig
from eree.data.establishments import EstablishmentData, load_establishments
from eree.evaluate.haney import CSV_COLUMNS, derive_seed
from eree.evaluate.metrics import TIDY_SCHEMA
from eree.evaluate.webb_ablation import PAPER_TABLE11, QUERIES, STRATEGIES, webb_table11
from eree.mechanisms.gedp import Pnc, PsiMechanism
from eree.mechanisms.noise import SeededNoise
from eree.postprocess.wls import group_ids
from eree.release.gedp import account_gedp_plan, release_gedp
from eree.release.microdata import build_microdata, public_frame
from eree.release.spec import Plan, parse_spec

__all__ = [
    "BUDGETS",
    "EXPERIMENTS",
    "GROUPINGS",
    "SECTION_8_2",
    "TABLE7",
    "Replicates",
    "WebbResult",
    "budget_rows",
    "evaluate_webb",
    "load_webb_data",
    "run_replicates",
    "run_webb",
    "table11",
    "webb_plan",
    "write_webb_outputs",
]

EXPERIMENTS: dict[str, str] = {
    "webb-table11": "Table 11 (Appendix H): WLS with estimated vs true variances",
    "webb-table3": "Table 3: quartiles of signed differences, protected microdata vs truth",
    "webb-figures": "Figures 2, 3, 8: absolute and relative error by grouping",
    "webb-figure9": "Figure 9: relative error as the overall budget varies",
    "webb-all": "all of the above",
}

#: the default dataset, relative to the working directory or to the repository
SYN_RI = Path("../shared/data/syn_ri/ri44_qbp_2016_1.csv.gz")

EMPLOYMENT = ("m1emp", "m2emp", "m3emp")
WAGE = "wage"
ATTRIBUTES = (*EMPLOYMENT, WAGE)
#: the attributes of the figures: month-3 employment (as in Appendix C) and wages
FIGURE_ATTRIBUTES = ("m3emp", WAGE)
WORKFLOWS = ("pnc", "sqrt")
GAMMA_EMP = 0.5
GAMMA_WAGE = 50.0
ZETA = 0.01
TRIALS = 34
TABLE11_TRIALS = 200_000
TABLE11_CHUNK = 50_000

#: the measurement queries of §8 (name → group-by columns)
QUERY_BY: dict[str, str | tuple[str, ...]] = {
    "identity": "identity",
    "state": (),
    "naics5": ("naics5",),
    "county": ("cnty",),
    "county_naics5": ("cnty", "naics5"),
}
#: Table 7: query → (μ per month of employment, μ of wages); μ_total ≈ 2.31
TABLE7: dict[str, tuple[float, float]] = {
    "identity": (0.70, 0.15),
    "state": (0.20, 0.10),
    "naics5": (0.60, 0.15),
    "county": (0.60, 0.15),
    "county_naics5": (0.70, 0.15),
}
#: the budgets stated in the text of §8.2 (the same μ for each month and for wages;
#: μ_total ≈ 2.31 too) — they differ from Table 7; kept to explain differences
SECTION_8_2: dict[str, tuple[float, float]] = {
    "identity": (0.611, 0.611),
    "state": (0.179, 0.179),
    "naics5": (0.525, 0.525),
    "county": (0.525, 0.525),
    "county_naics5": (0.611, 0.611),
}
BUDGETS: dict[str, dict[str, tuple[float, float]]] = {
    "table7": TABLE7,
    "section8.2": SECTION_8_2,
}

#: evaluation groupings (QCEW aggregation levels, ownership ignored; one state):
#: name → columns
GROUPINGS: dict[str, tuple[str, ...]] = {
    "state": (),
    "supersector": ("super_sector",),
    "sector": ("naics_sector",),
    "naics3": ("naics3",),
    "naics4": ("naics4",),
    "naics5": ("naics5",),
    "naics6": ("naics",),
    "county": ("cnty",),
    "county_supersector": ("cnty", "super_sector"),
    "county_sector": ("cnty", "naics_sector"),
    "county_naics3": ("cnty", "naics3"),
    "county_naics4": ("cnty", "naics4"),
    "county_naics5": ("cnty", "naics5"),
    "county_naics6": ("cnty", "naics"),
}
#: the QCEW aggregation level code of each grouping (Tables 8 and 9 of the paper)
LEVEL_OF = {
    "state": 50,
    "supersector": 53,
    "sector": 54,
    "naics3": 55,
    "naics4": 56,
    "naics5": 57,
    "naics6": 58,
    "county": 70,
    "county_supersector": 73,
    "county_sector": 74,
    "county_naics3": 75,
    "county_naics4": 76,
    "county_naics5": 77,
    "county_naics6": 78,
}
#: Table 3's evaluation groupings, with the paper's values (employment, confidential QCEW
#: data): grouping → workflow → (1st quartile, median, mean, 3rd quartile)
PAPER_TABLE3: dict[str, dict[str, tuple[float, float, float, float]]] = {
    "state": {"sqrt": (-6198, -6198, -6198, -6198), "pnc": (-118, -118, -118, -118)},
    "supersector": {"sqrt": (-1083, -293, -563, -233), "pnc": (-100, -48, -11, 24)},
    "naics5": {"sqrt": (-32, -9, -9, 8), "pnc": (-14, -1, -0, 12)},
    "county": {"sqrt": (-420, -252, -4604, -143), "pnc": (-64, -11, -4331, 27)},
    "county_supersector": {"sqrt": (-69, -18, -419, 16), "pnc": (-43, -4, -394, 30)},
    "county_naics5": {"sqrt": (-7, -1, -10, 4), "pnc": (-6, -1, -9, 5)},
}
FIGURE2_GROUPINGS = ("county", "naics3", "naics5")
FIGURE8_GROUPINGS = ("naics3", "naics5", "county_naics5")
FIGURE9_GROUPINGS = ("state", "county", "naics3", "naics5", "county_naics5")
#: Figure 9's overall budgets μ (every query's μ scaled by μ / μ_Table7)
FIGURE9_MU = (0.5, 1.0, 2.0, 4.0, 8.0)

Progress = Callable[[str], None]


def _noop(_: str) -> None:
    return None


# --------------------------------------------------------------------------------------
# plans and data
# --------------------------------------------------------------------------------------


def total_mu(
    budget: Mapping[str, tuple[float, float]], attributes: Sequence[str] = ATTRIBUTES
) -> float:
    """μ_total = sqrt(Σ μ²) over every (query, attribute) measurement (Thm 5.7)."""
    s = 0.0
    for emp, wage in budget.values():
        for a in attributes:
            s += (wage if a == WAGE else emp) ** 2
    return math.sqrt(s)


def webb_plan(
    config: EstablishmentDataConfig,
    workflow: str,
    *,
    budget: Mapping[str, tuple[float, float]] = TABLE7,
    scale: float = 1.0,
    attributes: Sequence[str] = ATTRIBUTES,
    gamma_emp: float = GAMMA_EMP,
    gamma_wage: float = GAMMA_WAGE,
    zeta: float = ZETA,
) -> Plan:
    """The release plan of one workflow (``pnc`` or ``sqrt``) with the §8 queries.

    Args:
        config: the establishment data configuration (path, id, public, confidential).
        workflow: ``pnc`` (identity by the √-mechanism, group-bys by pnc) or ``sqrt``
            (every query by the √-mechanism).
        budget: query → (μ per month of employment, μ of wages).
        scale: multiplies every μ (Figure 9).
        attributes: the confidential attributes released.
    """
    if workflow not in WORKFLOWS:
        raise ValueError(f"workflow must be one of {WORKFLOWS}, not {workflow!r}")
    if not scale > 0:
        raise ValueError("scale must be > 0")
    queries = []
    for name, by in QUERY_BY.items():
        emp, wage = budget[name]
        mu = {a: scale * (wage if a == WAGE else emp) for a in attributes}
        mech = PsiMechanism.name if (workflow == "sqrt" or by == "identity") else Pnc.name
        queries.append(
            {
                "name": name,
                "by": by if isinstance(by, str) else list(by),
                "mechanism": mech,
                "mu": mu,
            }
        )
    raw: dict[str, Any] = {
        "name": f"webb-{workflow}",
        "data": {
            "kind": "establishments",
            "path": str(Path(config.path).resolve()),
            "id": config.id,
            "public": list(config.public),
            "confidential": list(attributes),
        },
        "privacy": {
            "definition": "gedp",
            "neighbor": "sqrt",
            "distance": {a: (gamma_wage if a == WAGE else gamma_emp) for a in attributes},
        },
        "query": queries,
        "postprocess": {"microdata": True, "nonnegative": False},
    }
    if workflow == "pnc":
        raw["pnc"] = {"zeta": zeta, "bounds_from": "identity"}
    return parse_spec(raw, Path("."))


def _default_data() -> Path:
    for base in (Path.cwd(), Path(__file__).resolve().parents[3]):
        p = (base / SYN_RI).resolve()
        if p.exists():
            return p
    raise FileNotFoundError(
        f"Syn-RI not found at {SYN_RI} (relative to the working directory or the "
        "repository); pass --data FILE"
    )


def load_webb_data(
    path: str | Path | None = None, attributes: Sequence[str] = ATTRIBUTES
) -> EstablishmentData:
    """Load an establishment file in the Syn-RI schema (default: Syn-RI)."""
    p = Path(path) if path is not None else _default_data()
    return load_establishments(EstablishmentDataConfig(p, confidential=tuple(attributes)))


# --------------------------------------------------------------------------------------
# replicates
# --------------------------------------------------------------------------------------


@dataclass
class Replicates:
    """Tabulations of the protected microdata of every replicate, and the truth.

    Attributes:
        estimates: workflow → attribute → grouping → ``(trials, cells)`` array.
        truth: attribute → grouping → ``(cells,)`` true values.
        establishments: grouping → ``(cells,)`` number of establishments per cell.
        keys: grouping → the cells' key columns (as text).
        mu: the overall μ.
        trials: number of replicates.
        seconds: wall time per workflow (releases + microdata + tabulation).
    """

    estimates: dict[str, dict[str, dict[str, np.ndarray]]]
    truth: dict[str, dict[str, np.ndarray]]
    establishments: dict[str, np.ndarray]
    keys: dict[str, pl.DataFrame]
    mu: float
    trials: int
    seconds: dict[str, float] = field(default_factory=dict)


def replicate_seed(seed: int, r: int) -> int:
    """The seed of replicate r (shared by the workflows and the budgets of the sweep)."""
    return derive_seed(seed, f"webb-replicate-{r}")


def run_replicates(
    data: EstablishmentData,
    *,
    trials: int = TRIALS,
    seed: int = 0,
    budget: Mapping[str, tuple[float, float]] = TABLE7,
    scale: float = 1.0,
    workflows: Sequence[str] = WORKFLOWS,
    groupings: Mapping[str, tuple[str, ...]] = GROUPINGS,
    progress: Progress = _noop,
) -> Replicates:
    """Run ``trials`` releases per workflow, reconstruct the microdata, tabulate it.

    Each replicate: :func:`~eree.release.gedp.release_gedp` (seeded noise) →
    :func:`~eree.release.microdata.build_microdata` (WLS from the published tables) →
    group sums of the microdata by every grouping (one ``bincount`` each; group ids and
    the truth are computed once).
    """
    if trials < 1:
        raise ValueError("trials must be ≥ 1")
    attrs = [a for a in data.confidential]
    public = public_frame(data)
    ids: dict[str, tuple[np.ndarray, int]] = {}
    keys: dict[str, pl.DataFrame] = {}
    estabs: dict[str, np.ndarray] = {}
    for g, cols in groupings.items():
        gid, k = group_ids(public, cols)
        m = max(k.height, 1)
        ids[g] = (gid, m)
        keys[g] = k
        estabs[g] = np.bincount(gid, minlength=m).astype(np.float64)
    true_vals = {a: data.frame.get_column(a).to_numpy().astype(np.float64) for a in attrs}
    truth = {
        a: {g: np.bincount(gid, true_vals[a], m) for g, (gid, m) in ids.items()} for a in attrs
    }
    plans = {
        w: webb_plan(data.config, w, budget=budget, scale=scale, attributes=attrs)
        for w in workflows
    }
    reports = {w: account_gedp_plan(p) for w, p in plans.items()}
    est = {
        w: {a: {g: np.empty((trials, m)) for g, (_, m) in ids.items()} for a in attrs}
        for w in workflows
    }
    secs = dict.fromkeys(workflows, 0.0)
    for r in range(trials):
        s = replicate_seed(seed, r)
        for w in workflows:
            t0 = time.perf_counter()
            tables = release_gedp(plans[w], data, SeededNoise(s), reports[w])
            md = build_microdata(plans[w], tables, public)
            for a in attrs:
                x = md.frame.get_column(a).to_numpy()
                for g, (gid, m) in ids.items():
                    est[w][a][g][r] = np.bincount(gid, x, m)
            secs[w] += time.perf_counter() - t0
        progress(f"replicate {r + 1}/{trials} (μ = {total_mu(budget, attrs) * scale:.3g})")
    mu = total_mu(budget, attrs) * scale
    return Replicates(est, truth, estabs, keys, mu, trials, secs)


# --------------------------------------------------------------------------------------
# metrics
# --------------------------------------------------------------------------------------


def _row(
    experiment: str,
    workload: str,
    mechanism: str,
    mu: float,
    stratum: str,
    metric: str,
    value: float,
    trials: int,
) -> dict[str, Any]:
    return {
        "experiment": experiment,
        "workload": workload,
        "mechanism": mechanism,
        "alpha": None,
        "epsilon": None,
        "mu": mu,
        "stratum": stratum,
        "metric": metric,
        "value": float(value),
        "trials": trials,
    }


def _q(x: np.ndarray, p: float) -> float:
    return float(np.quantile(x, p)) if x.size else math.nan


def error_rows(
    rep: Replicates,
    experiment: str,
    groupings: Sequence[str] | None = None,
    *,
    signed: bool = False,
) -> list[dict[str, Any]]:
    """Tidy rows of the error metrics of one set of replicates.

    Per workflow, attribute and grouping (over the cells' errors averaged across
    replicates): ``mean_abs_error``, ``q1/median/q3_abs_error``, ``mean_rel_error``,
    ``median_rel_error``, ``cells``; with ``signed`` (Table 3): ``signed_q1``,
    ``signed_median``, ``signed_mean``, ``signed_q3`` (pooled over cells and replicates)
    and ``signed_mean_se`` (standard error of the mean over replicates). And the
    comparison (mechanism ``pnc-vs-sqrt``): ``share_pnc_better`` (share of cells whose
    mean absolute error is smaller with pnc), ``abs_error_ratio`` (mean absolute error,
    pnc / sqrt), ``abs_error_diff`` and ``abs_error_diff_se`` (pnc − sqrt mean absolute
    error, paired over replicates).
    """
    rows: list[dict[str, Any]] = []
    gs = list(groupings) if groupings is not None else list(rep.establishments)
    t = rep.trials
    for a in rep.truth:
        for g in gs:
            truth = rep.truth[a][g]
            per_rep_abs: dict[str, np.ndarray] = {}
            cell_abs: dict[str, np.ndarray] = {}
            for w, by_attr in rep.estimates.items():
                d = by_attr[a][g] - truth
                ad = np.abs(d)
                cabs = ad.mean(axis=0)
                crel = (ad / (truth + 1.0)).mean(axis=0)
                per_rep_abs[w] = ad.mean(axis=1)
                cell_abs[w] = cabs
                vals = {
                    "cells": float(truth.size),
                    "mean_abs_error": float(cabs.mean()),
                    "q1_abs_error": _q(cabs, 0.25),
                    "median_abs_error": _q(cabs, 0.5),
                    "q3_abs_error": _q(cabs, 0.75),
                    "mean_rel_error": float(crel.mean()),
                    "median_rel_error": _q(crel, 0.5),
                }
                if signed:
                    flat = d.ravel()
                    per_rep = d.mean(axis=1)
                    vals.update(
                        signed_q1=_q(flat, 0.25),
                        signed_median=_q(flat, 0.5),
                        signed_mean=float(flat.mean()),
                        signed_q3=_q(flat, 0.75),
                        signed_mean_se=float(per_rep.std(ddof=1) / math.sqrt(t)) if t > 1 else 0.0,
                    )
                for k, v in vals.items():
                    rows.append(_row(experiment, a, w, rep.mu, g, k, v, t))
            if "pnc" in cell_abs and "sqrt" in cell_abs:
                diff = per_rep_abs["pnc"] - per_rep_abs["sqrt"]
                sq = float(cell_abs["sqrt"].mean())
                cmp = {
                    "share_pnc_better": float(np.mean(cell_abs["pnc"] < cell_abs["sqrt"])),
                    "abs_error_ratio": float(cell_abs["pnc"].mean()) / sq if sq > 0 else math.nan,
                    "abs_error_diff": float(diff.mean()),
                    "abs_error_diff_se": float(diff.std(ddof=1) / math.sqrt(t)) if t > 1 else 0.0,
                }
                for k, v in cmp.items():
                    rows.append(_row(experiment, a, "pnc-vs-sqrt", rep.mu, g, k, v, t))
    return rows


def cell_frame(rep: Replicates, groupings: Sequence[str] | None = None) -> pl.DataFrame:
    """One row per workflow, attribute, grouping and cell: truth and mean errors."""
    gs = list(groupings) if groupings is not None else list(rep.establishments)
    parts = []
    for g in gs:
        k = rep.keys[g]
        label = (
            k.select(pl.concat_str([pl.col(c).cast(pl.Utf8) for c in k.columns], separator="|"))
            .to_series()
            .to_list()
            if k.width
            else ["total"]
        )
        for w, by_attr in rep.estimates.items():
            for a, by_g in by_attr.items():
                truth = rep.truth[a][g]
                d = by_g[g] - truth
                parts.append(
                    pl.DataFrame(
                        {
                            "workflow": w,
                            "attribute": a,
                            "grouping": g,
                            "cell": label,
                            "establishments": rep.establishments[g].astype(np.int64),
                            "truth": truth,
                            "mean_abs_error": np.abs(d).mean(axis=0),
                            "mean_rel_error": (np.abs(d) / (truth + 1.0)).mean(axis=0),
                            "mean_signed_error": d.mean(axis=0),
                        }
                    )
                )
    return pl.concat(parts) if parts else pl.DataFrame()


# --------------------------------------------------------------------------------------
# Table 11
# --------------------------------------------------------------------------------------


def table11(
    trials: int = TABLE11_TRIALS,
    seed: int = 0,
    *,
    chunk: int = TABLE11_CHUNK,
    progress: Progress = _noop,
) -> pl.DataFrame:
    """Table 11 with Monte Carlo standard errors, in chunks of ``chunk`` trials.

    Returns:
        One row per (psi, strategy, query): ``mse`` (eree), ``se`` (its Monte Carlo
        standard error), ``paper``, ``trials``, ``z`` — the distance from eree's value to
        the paper's, in standard errors of the difference: the paper's value is rounded to
        0.1 (so the distance is to the interval paper ± 0.05) and has its own Monte Carlo
        error over 1,000,000 trials (estimated as ``se·sqrt(trials/1e6)``).
    """
    if trials < 2:
        raise ValueError("Table 11 needs at least 2 trials")
    sizes = [chunk] * (trials // chunk) + ([trials % chunk] if trials % chunk else [])
    rows = []
    for psi in ("sqrt", "log"):
        parts: list[Any] = []
        for c, n in enumerate(sizes):
            parts.append(webb_table11(psi, trials=n, seed=derive_seed(seed, f"t11-{psi}-{c}")))
            progress(f"Table 11 ψ = {psi}: {sum(sizes[: c + 1]):,}/{trials:,} trials")
        w = np.array(sizes, dtype=np.float64)
        for s in STRATEGIES:
            for q in QUERIES:
                m = np.array([p.mse[s][q] for p in parts])
                se = np.array([p.se[s][q] for p in parts])
                mean = float((w * m).sum() / w.sum())
                # per-trial variance of each chunk, pooled (within + between chunks)
                var_i = se**2 * w  # each chunk's per-trial variance
                ss = ((w - 1) * var_i + w * (m - mean) ** 2).sum()
                se_all = math.sqrt(ss / (w.sum() - 1) / w.sum())
                paper = PAPER_TABLE11[psi][s][q]
                gap = max(abs(mean - paper) - 0.05, 0.0)
                se_paper = se_all * math.sqrt(trials / 1_000_000)
                rows.append(
                    {
                        "psi": psi,
                        "strategy": s,
                        "query": q,
                        "paper": paper,
                        "mse": mean,
                        "se": se_all,
                        "z": gap / math.hypot(se_all, se_paper),
                        "trials": trials,
                    }
                )
    return pl.DataFrame(rows)


def _table11_rows(t11: pl.DataFrame) -> list[dict[str, Any]]:
    rows = []
    for r in t11.iter_rows(named=True):
        for metric, key in (("mse", "mse"), ("mse_se", "se"), ("paper_mse", "paper"), ("z", "z")):
            rows.append(
                _row(
                    "webb-table11",
                    r["query"],
                    r["psi"],
                    1.0,
                    r["strategy"],
                    metric,
                    r[key],
                    r["trials"],
                )
            )
    return rows


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


def experiments_of(experiment: str) -> list[str]:
    """The experiments an argument runs (``webb-all`` → all)."""
    if experiment not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {experiment!r}; available: {', '.join(EXPERIMENTS)}")
    if experiment == "webb-all":
        return [e for e in EXPERIMENTS if e != "webb-all"]
    return [experiment]


def run_webb(
    experiment: str,
    data: EstablishmentData | None = None,
    *,
    trials: int = TRIALS,
    seed: int = 0,
    budget: str = "table7",
    table11_trials: int = TABLE11_TRIALS,
    sweep_mu: Sequence[float] = FIGURE9_MU,
    progress: Progress = _noop,
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
    exps = experiments_of(experiment)
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
        meta["seconds_per_workflow"] = rep.seconds
        if "webb-figures" in exps:
            rows += error_rows(rep, "webb-figures")
        if "webb-table3" in exps:
            rows += error_rows(rep, "webb-table3", list(PAPER_TABLE3), signed=True)
        cells = cell_frame(rep)
    if "webb-figure9" in exps:
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
        secs["figure9"] = time.perf_counter() - t0
    if "webb-table11" in exps:
        t0 = time.perf_counter()
        t11 = table11(table11_trials, seed, progress=progress)
        rows += _table11_rows(t11)
        secs["table11"] = time.perf_counter() - t0
        meta["table11"] = {
            "trials": table11_trials,
            "setting": "50 counties × 2 establishments of 10, γ = 0.5 (sqrt and log), μ = 1 "
            "(DESIGN.md §6, §10 errata)",
        }
    secs["total"] = time.perf_counter() - t_start
    meta["seconds"] = secs
    results = pl.DataFrame(rows, schema=_SCHEMA) if rows else pl.DataFrame(schema=_SCHEMA)
    return WebbResult(results, cells, rep, sweep, t11, meta)


_SCHEMA = TIDY_SCHEMA


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
# figures
# --------------------------------------------------------------------------------------

_COLOR = {"pnc": "tab:blue", "sqrt": "tab:orange"}
_LABEL = {
    "pnc": "pnc-mechanism",
    "sqrt": "√-mechanism",
    "m3emp": "employment (month 3)",
    "wage": "wages",
    "m1emp": "employment (month 1)",
    "m2emp": "employment (month 2)",
}


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _attrs(rep: Replicates) -> list[str]:
    return [a for a in FIGURE_ATTRIBUTES if a in rep.truth] or list(rep.truth)[:2]


def plot_figure2(rep: Replicates, path: Path) -> Path:
    """Figure 2: box plots of the per-cell absolute error averaged over the replicates."""
    plt = _plt()
    attrs = _attrs(rep)
    gs = [g for g in FIGURE2_GROUPINGS if g in rep.establishments]
    fig, axes = plt.subplots(
        len(attrs), len(gs), figsize=(4 * len(gs), 3.4 * len(attrs)), squeeze=False
    )
    for i, a in enumerate(attrs):
        for j, g in enumerate(gs):
            ax = axes[i][j]
            data = [
                np.abs(rep.estimates[w][a][g] - rep.truth[a][g]).mean(axis=0)
                for w in WORKFLOWS
                if w in rep.estimates
            ]
            ws = [w for w in WORKFLOWS if w in rep.estimates]
            bp = ax.boxplot(data, patch_artist=True, widths=0.6)
            for patch, w in zip(bp["boxes"], ws, strict=True):
                patch.set_facecolor(_COLOR[w])
                patch.set_alpha(0.6)
            ax.set_xticks(range(1, len(ws) + 1), [_LABEL[w] for w in ws])
            ax.set_yscale("log")
            ax.set_title(f"{_LABEL.get(a, a)} by {g} ({rep.truth[a][g].size} cells)", fontsize=9)
            if j == 0:
                ax.set_ylabel("absolute error (mean over replicates)")
    fig.suptitle(
        f"Figure 2 — absolute error by grouping, {rep.trials} replicates, μ ≈ {rep.mu:.2f}"
    )
    fig.tight_layout()
    return _save(fig, path)


def plot_figure3(rep: Replicates, path: Path) -> Path:
    """Figure 3: absolute error of the state total, one value per replicate."""
    plt = _plt()
    attrs = _attrs(rep)
    fig, axes = plt.subplots(1, len(attrs), figsize=(4.2 * len(attrs), 3.6), squeeze=False)
    ws = [w for w in WORKFLOWS if w in rep.estimates]
    for j, a in enumerate(attrs):
        ax = axes[0][j]
        data = [np.abs(rep.estimates[w][a]["state"][:, 0] - rep.truth[a]["state"][0]) for w in ws]
        bp = ax.boxplot(data, patch_artist=True, widths=0.6)
        for patch, w in zip(bp["boxes"], ws, strict=True):
            patch.set_facecolor(_COLOR[w])
            patch.set_alpha(0.6)
        for k, d in enumerate(data, start=1):
            ax.plot(
                np.full(d.size, k) + np.linspace(-0.15, 0.15, d.size),
                d,
                ".",
                color="k",
                ms=3,
                alpha=0.5,
            )
        ax.set_xticks(range(1, len(ws) + 1), [_LABEL[w] for w in ws])
        ax.set_title(
            f"state total, {_LABEL.get(a, a)} (true {rep.truth[a]['state'][0]:,.0f})", fontsize=9
        )
        ax.set_ylabel("absolute error per replicate")
    fig.suptitle(f"Figure 3 — state total, {rep.trials} replicates")
    fig.tight_layout()
    return _save(fig, path)


def plot_figure8(rep: Replicates, path: Path) -> Path:
    """Figure 8: per-cell relative error |x − x̃|/(x+1) (mean over replicates) vs truth."""
    plt = _plt()
    attrs = _attrs(rep)
    gs = [g for g in FIGURE8_GROUPINGS if g in rep.establishments]
    fig, axes = plt.subplots(
        len(attrs), len(gs), figsize=(4 * len(gs), 3.4 * len(attrs)), squeeze=False
    )
    for i, a in enumerate(attrs):
        for j, g in enumerate(gs):
            ax = axes[i][j]
            t = rep.truth[a][g]
            for w in WORKFLOWS:
                if w not in rep.estimates:
                    continue
                rel = (np.abs(rep.estimates[w][a][g] - t) / (t + 1.0)).mean(axis=0)
                ax.scatter(t + 1.0, rel, s=6, alpha=0.5, color=_COLOR[w], label=_LABEL[w])
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{_LABEL.get(a, a)} by {g}", fontsize=9)
            ax.set_xlabel("true value + 1")
            if j == 0:
                ax.set_ylabel("relative error |x−x̃|/(x+1)")
            if i == 0 and j == 0:
                ax.legend(fontsize=8)
    fig.suptitle(f"Figure 8 — relative error against the truth, {rep.trials} replicates")
    fig.tight_layout()
    return _save(fig, path)


def plot_figure9(results: pl.DataFrame, path: Path, attrs: Sequence[str]) -> Path:
    """Figure 9: median relative error per grouping as the overall μ varies."""
    plt = _plt()
    f9 = results.filter(
        pl.col("experiment") == "webb-figure9", pl.col("metric") == "median_rel_error"
    )
    fig, axes = plt.subplots(1, len(attrs), figsize=(5 * len(attrs), 3.8), squeeze=False)
    markers = dict(zip(FIGURE9_GROUPINGS, "osD^v", strict=True))
    for j, a in enumerate(attrs):
        ax = axes[0][j]
        for g in FIGURE9_GROUPINGS:
            for w, ls in (("pnc", "-"), ("sqrt", "--")):
                s = f9.filter(
                    pl.col("workload") == a, pl.col("stratum") == g, pl.col("mechanism") == w
                ).sort("mu")
                if s.height:
                    ax.plot(
                        s["mu"],
                        s["value"],
                        ls,
                        marker=markers[g],
                        color=_COLOR[w],
                        ms=4,
                        label=f"{g} ({'pnc' if w == 'pnc' else '√'})",
                    )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticks: list[float] = []
        for m in sorted(set(f9["mu"].to_list())):  # thin labels that would overlap
            if ticks and m / ticks[-1] < 1.3:
                if math.isclose(m, total_mu(TABLE7), rel_tol=1e-3):
                    ticks[-1] = m  # keep the baseline's label
                continue
            ticks.append(m)
        ax.set_xticks(ticks, [f"{m:.3g}" for m in ticks])
        ax.minorticks_off()
        ax.set_xlabel("overall μ")
        ax.set_ylabel("median relative error")
        ax.set_title(_LABEL.get(a, a), fontsize=9)
        if j == len(attrs) - 1:
            ax.legend(fontsize=6, ncol=2)
    fig.suptitle("Figure 9 — relative error as the overall budget varies (Table 7 shares)")
    fig.tight_layout()
    return _save(fig, path)


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    _plt().close(fig)
    return path


# --------------------------------------------------------------------------------------
# readings and report
# --------------------------------------------------------------------------------------


def _fmt(v: float, digits: int = 3) -> str:
    if not math.isfinite(v):
        return "—"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def reading_figures(results: pl.DataFrame, attrs: Sequence[str]) -> list[str]:
    """Where pnc beats sqrt and where it does not (from the numbers)."""
    out = []
    for a in attrs:
        better, worse, tie = [], [], []
        for g in (*FIGURE2_GROUPINGS, "state", "county_naics5"):
            r = value(results, "webb-figures", a, "pnc-vs-sqrt", g, "abs_error_ratio")
            d = value(results, "webb-figures", a, "pnc-vs-sqrt", g, "abs_error_diff")
            se = value(results, "webb-figures", a, "pnc-vs-sqrt", g, "abs_error_diff_se")
            sh = value(results, "webb-figures", a, "pnc-vs-sqrt", g, "share_pnc_better")
            if not math.isfinite(r):
                continue
            txt = f"{g} (error ratio pnc/√ {r:.2f}, pnc better in {sh:.0%} of cells)"
            if abs(d) <= 2 * se:
                tie.append(txt)
            elif d < 0:
                better.append(txt)
            else:
                worse.append(txt)
        name = _LABEL.get(a, a)
        if better:
            out.append(
                f"{name}: pnc has the smaller mean absolute error for " + "; ".join(better) + "."
            )
        if worse:
            out.append(
                f"{name}: the √-mechanism has the smaller mean absolute error for "
                + "; ".join(worse)
                + "."
            )
        if tie:
            out.append(
                f"{name}: no difference beyond 2 standard errors for " + "; ".join(tie) + "."
            )
    return out


def reading_table3(results: pl.DataFrame, attrs: Sequence[str]) -> list[str]:
    out = []
    for a in attrs:
        for g in ("state", "county", "naics5"):
            ms = {
                w: (
                    value(results, "webb-table3", a, w, g, "signed_mean"),
                    value(results, "webb-table3", a, w, g, "signed_mean_se"),
                )
                for w in WORKFLOWS
            }
            if not all(math.isfinite(m) for m, _ in ms.values()):
                continue
            parts = [
                f"{'pnc' if w == 'pnc' else '√'} {_fmt(m)} ± {_fmt(s)}" for w, (m, s) in ms.items()
            ]
            out.append(f"{_LABEL.get(a, a)}, {g}: mean signed difference " + ", ".join(parts) + ".")
    return out


def reading_figure9(results: pl.DataFrame, attrs: Sequence[str]) -> list[str]:
    f9 = results.filter(pl.col("experiment") == "webb-figure9")
    if f9.is_empty():
        return []
    mus = sorted(set(f9["mu"].to_list()))
    out = []
    for a in attrs:
        for g in ("state", "naics5"):
            parts = []
            for w in WORKFLOWS:
                lo = value(results, "webb-figure9", a, w, g, "median_rel_error", mus[0])
                hi = value(results, "webb-figure9", a, w, g, "median_rel_error", mus[-1])
                parts.append(f"{'pnc' if w == 'pnc' else '√'} {_fmt(lo)} → {_fmt(hi)}")
            out.append(
                f"{_LABEL.get(a, a)}, {g}: median relative error from μ = {mus[0]:.2g} to "
                f"μ = {mus[-1]:.2g}: " + ", ".join(parts) + "."
            )
    return out


def reading_table11(t11: pl.DataFrame) -> list[str]:
    worst = t11.sort("z", descending=True).row(0, named=True)
    n_ok = int((t11["z"] <= 3).sum())
    return [
        f"{n_ok} of {t11.height} cells are within 3 standard errors of the paper's value "
        "(the paper's rounding to 0.1 and its own Monte Carlo error over 1,000,000 trials "
        "included).",
        f"Largest distance: ψ = {worst['psi']}, {worst['strategy']}, {worst['query']}: eree "
        f"{worst['mse']:.1f} ± {worst['se']:.1f} vs paper {worst['paper']:.1f} "
        f"({worst['z']:.1f} standard errors).",
        "Est vs Act: estimated variances inflate the Total MSE "
        f"(√: ×{_ratio(t11, 'sqrt')}; log: ×{_ratio(t11, 'log')}), as in the paper.",
    ]


def _ratio(t11: pl.DataFrame, psi: str) -> str:
    f = t11.filter(pl.col("psi") == psi, pl.col("query") == "Total")
    est = float(f.filter(pl.col("strategy") == "Est")["mse"][0])
    act = float(f.filter(pl.col("strategy") == "Act")["mse"][0])
    return f"{est / act:.2f}"


def _img(path: Path) -> str:
    """The figure embedded in the page (the report is self-contained)."""
    import base64

    b64 = base64.b64encode(path.read_bytes()).decode("ascii")
    alt = html.escape(path.stem)
    return f'<img alt="{alt}" style="max-width:100%" src="data:image/png;base64,{b64}">'


def _table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    th = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows
    )
    return f"<table><tr>{th}</tr>{body}</table>"


def _ul(items: Sequence[str]) -> str:
    return "<ul>" + "".join(f"<li>{html.escape(s)}</li>" for s in items) + "</ul>"


def html_report(res: WebbResult, figures: Mapping[str, Path]) -> str:
    from eree.release.report import html_page

    meta = res.meta
    attrs = list(FIGURE_ATTRIBUTES)
    if res.replicates is not None:
        attrs = _attrs(res.replicates)
    secs = meta.get("seconds", {})
    sections = [
        "<p>Webb et al., the QCEW paper, §8 and Appendices C, H, reproduced by eree. "
        f"Budgets: {html.escape(meta['budget'])}; γ_emp = {GAMMA_EMP}, γ_wage = {GAMMA_WAGE:g}, "
        f"ζ = {ZETA}; {meta['trials']} replicates; seed {meta['seed']} (seeded randomness: NOT "
        f"FOR PUBLICATION). Dataset: {html.escape(json.dumps(meta.get('dataset', {})))}. "
        f"Wall time {secs.get('total', math.nan):.1f} s.</p>"
    ]
    if "dataset" in meta:
        sections.append(
            "<h2>Budgets</h2>"
            + _table(
                [
                    [
                        r["query"],
                        f"{r['mu_q']:.2f}",
                        f"{r['share']:.3f}",
                        r["mu_emp"],
                        r["mu_wage"],
                        f"{r['wage_share']:.3f}",
                    ]
                    for r in budget_rows(meta["budget"])
                ],
                ["query", "μ_q", "μ_q²/μ²", "μ per month of employment", "μ wages", "μ_w²/μ_q²"],
            )
            + f"<p>μ_total = {meta.get('mu_total', math.nan):.3f}</p>"
        )
    r = res.results
    if res.table11 is not None:
        t = res.table11
        sections.append(
            "<h2>Table 11 (Appendix H)</h2>"
            + _ul(reading_table11(t))
            + _table(
                [
                    [
                        x["psi"],
                        x["strategy"],
                        x["query"],
                        f"{x['paper']:,.1f}",
                        f"{x['mse']:,.2f}",
                        f"{x['se']:.2f}",
                        f"{x['z']:.1f}",
                    ]
                    for x in t.iter_rows(named=True)
                ],
                ["ψ", "strategy", "query", "paper", "eree", "MC s.e.", "distance (s.e.)"],
            )
            + f"<p>{int(t['trials'][0]):,} trials; 50 counties × 2 establishments, γ = 0.5, μ = 1 "
            "(DESIGN.md §10 errata).</p>"
        )
    if "webb-table3" in meta["experiments"]:
        rows = []
        for a in attrs:
            for g in PAPER_TABLE3:
                for w in WORKFLOWS:
                    v = [
                        value(r, "webb-table3", a, w, g, m)
                        for m in (
                            "signed_q1",
                            "signed_median",
                            "signed_mean",
                            "signed_q3",
                            "signed_mean_se",
                        )
                    ]
                    p = PAPER_TABLE3[g][w] if a in EMPLOYMENT else (math.nan,) * 4
                    rows.append(
                        [
                            _LABEL.get(a, a),
                            g,
                            w,
                            *(_fmt(x) for x in v),
                            " / ".join(_fmt(x) for x in p),
                        ]
                    )
        sections.append(
            "<h2>Table 3 — signed differences (microdata − truth)</h2>"
            + _ul(reading_table3(r, attrs))
            + _table(
                rows,
                [
                    "attribute",
                    "grouping",
                    "workflow",
                    "1st",
                    "median",
                    "mean",
                    "3rd",
                    "s.e. of mean",
                    "paper 1st / median / mean / 3rd (QCEW, employment)",
                ],
            )
            + "<p>Quartiles pooled over cells and replicates (the state total: over replicates). "
            "The paper's numbers come from the confidential QCEW data of an undisclosed state, "
            "one run, employment only: compare signs and the pnc-vs-√ ordering, not values.</p>"
        )
    if "webb-figures" in meta["experiments"]:
        parts = ["<h2>Figures 2, 3 and 8 — pnc vs √</h2>", _ul(reading_figures(r, attrs))]
        for k in ("figure2", "figure3", "figure8"):
            if k in figures:
                parts.append(_img(figures[k]))
        rows = []
        for a in attrs:
            for g in GROUPINGS:
                rows.append(
                    [
                        _LABEL.get(a, a),
                        g,
                        str(int(value(r, "webb-figures", a, "pnc", g, "cells"))),
                        _fmt(value(r, "webb-figures", a, "pnc", g, "mean_abs_error")),
                        _fmt(value(r, "webb-figures", a, "sqrt", g, "mean_abs_error")),
                        _fmt(value(r, "webb-figures", a, "pnc-vs-sqrt", g, "abs_error_ratio")),
                        _fmt(value(r, "webb-figures", a, "pnc-vs-sqrt", g, "share_pnc_better")),
                        _fmt(value(r, "webb-figures", a, "pnc", g, "median_rel_error")),
                        _fmt(value(r, "webb-figures", a, "sqrt", g, "median_rel_error")),
                    ]
                )
        parts.append(
            _table(
                rows,
                [
                    "attribute",
                    "grouping",
                    "cells",
                    "mean abs. error pnc",
                    "mean abs. error √",
                    "ratio pnc/√",
                    "share of cells pnc better",
                    "median rel. error pnc",
                    "median rel. error √",
                ],
            )
        )
        sections.append("".join(parts))
    if "webb-figure9" in meta["experiments"]:
        parts = ["<h2>Figure 9 — budget sweep</h2>", _ul(reading_figure9(r, attrs))]
        if "figure9" in figures:
            parts.append(_img(figures["figure9"]))
        sections.append("".join(parts))
    return html_page("eree — Webb et al. (QCEW) evaluation", sections)


def write_webb_outputs(res: WebbResult, out_dir: Path) -> dict[str, Path]:
    """Write ``results.csv``, ``cells.csv``, ``table11.csv``, ``run.json``, figures, report."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    p = out_dir / "results.csv"
    res.results.select(CSV_COLUMNS).write_csv(p)
    paths["results"] = p
    if res.cells is not None:
        p = out_dir / "cells.csv"
        res.cells.write_csv(p)
        paths["cells"] = p
    if res.table11 is not None:
        p = out_dir / "table11.csv"
        res.table11.write_csv(p)
        paths["table11"] = p
    figs: dict[str, Path] = {}
    fd = out_dir / "figures"
    if res.replicates is not None and "webb-figures" in res.meta["experiments"]:
        figs["figure2"] = plot_figure2(res.replicates, fd / "figure2_abs_error_by_grouping.png")
        figs["figure3"] = plot_figure3(res.replicates, fd / "figure3_state_total.png")
        figs["figure8"] = plot_figure8(res.replicates, fd / "figure8_relative_error.png")
    if res.sweep:
        attrs = _attrs(next(iter(res.sweep.values())))
        figs["figure9"] = plot_figure9(res.results, fd / "figure9_budget_sweep.png", attrs)
    paths.update({f"figure:{k}": v for k, v in figs.items()})
    p = out_dir / "run.json"
    p.write_text(json.dumps(res.meta, indent=2, default=str))
    paths["run"] = p
    p = out_dir / "report.html"
    p.write_text(html_report(res, figs), encoding="utf-8")
    paths["report"] = p
    return paths


# --------------------------------------------------------------------------------------
# command
# --------------------------------------------------------------------------------------


def evaluate_webb(
    experiment: Annotated[
        str,
        typer.Argument(help="webb-table11 | webb-table3 | webb-figures | webb-figure9 | webb-all"),
    ],
    out: Annotated[Path, typer.Option("--out", help="output directory")],
    trials: Annotated[int, typer.Option(help="replicates per workflow (the paper: 34)")] = TRIALS,
    seed: Annotated[int, typer.Option(help="root seed (seeded noise: NOT FOR PUBLICATION)")] = 0,
    data: Annotated[
        Path | None,
        typer.Option("--data", help="establishment file in the Syn-RI schema (default: Syn-RI)"),
    ] = None,
    table11_trials: Annotated[
        int, typer.Option(help="trials of the Table 11 ablation (the paper: 1,000,000)")
    ] = TABLE11_TRIALS,
    budget: Annotated[
        str,
        typer.Option(help="table7 (Table 7, default) | section8.2 (the budgets in §8.2's text)"),
    ] = "table7",
) -> None:
    """Reproduce Webb et al. (QCEW paper) §8: Tables 3 and 11, Figures 2, 3, 8 and 9.

    pnc-mechanism vs √-mechanism workflows on Syn-RI with the Table 7 budgets, γ_emp = 0.5,
    γ_wage = 50, ζ = 0.01: protected microdata by WLS from the published tables, tabulated at
    QCEW aggregation levels and compared with the truth. Writes results.csv (tidy),
    cells.csv, table11.csv, run.json, figures/*.png and report.html to OUT.

    Example: eree evaluate webb-all --out webb-ri --trials 34
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import Progress as Bar
    from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console()
    t0 = time.perf_counter()
    try:
        exps = experiments_of(experiment)
        ds = None
        if any(e != "webb-table11" for e in exps):
            with console.status("loading data…"):
                ds = load_webb_data(data)
            console.print(f"dataset: {ds.n:,} establishments ({escape(str(ds.config.path))})")
        with Bar(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as bar:
            task = bar.add_task(experiment)
            res = run_webb(
                experiment,
                ds,
                trials=trials,
                seed=seed,
                budget=budget,
                table11_trials=table11_trials,
                progress=lambda m: bar.update(task, description=escape(m)),
            )
        paths = write_webb_outputs(res, out)
    except (ValueError, OSError) as e:
        Console(stderr=True).print(f"[bold red]error:[/] {escape(str(e))}")
        raise typer.Exit(code=2) from None
    except Exception as e:  # EreeError and friends
        from eree.errors import EreeError

        if not isinstance(e, EreeError):
            raise
        Console(stderr=True).print(f"[bold red]error:[/] {escape(str(e))}")
        raise typer.Exit(code=2) from None
    console.print(f"[bold yellow]seeded randomness (seed {seed}): NOT FOR PUBLICATION[/]")
    attrs = _attrs(res.replicates) if res.replicates is not None else []
    for line in reading_figures(res.results, attrs) + reading_table3(res.results, attrs):
        console.print("• " + escape(line))
    if res.table11 is not None:
        for line in reading_table11(res.table11):
            console.print("• " + escape(line))
    console.print(f"results: {paths['results']}")
    console.print(f"report:  {paths['report']}")
    console.print(f"done in {time.perf_counter() - t0:.1f} s")
