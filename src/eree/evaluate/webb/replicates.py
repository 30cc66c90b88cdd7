"""Replicates of the two workflows on one dataset, their error metrics, and Table 11."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from eree.data.establishments import EstablishmentData
from eree.engine.polars.engine import PolarsEngine
from eree.evaluate.haney import derive_seed
from eree.evaluate.interrupt import absorb_echo
from eree.evaluate.metrics import tidy_row
from eree.evaluate.webb.ablation import PAPER_TABLE11, QUERIES, STRATEGIES, webb_table11
from eree.evaluate.webb.plans import (
    ADAPTIVE,
    GROUPINGS,
    PNC,
    SQRT,
    TABLE7,
    TABLE11_CHUNK,
    TABLE11_TRIALS,
    TRIALS,
    WORKFLOWS,
    Progress,
    noop,
    total_mu,
    webb_plan,
)
from eree.mechanisms.noise import SeededNoise
from eree.postprocess.wls import group_ids
from eree.release.build import build
from eree.release.gedp import release_gedp
from eree.release.microdata import build_microdata, public_frame

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
        interrupted: Ctrl-C stopped the run; ``trials`` counts the finished replicates.
    """

    estimates: dict[str, dict[str, dict[str, np.ndarray]]]
    truth: dict[str, dict[str, np.ndarray]]
    establishments: dict[str, np.ndarray]
    keys: dict[str, pl.DataFrame]
    mu: float
    trials: int
    seconds: dict[str, float] = field(default_factory=dict)
    interrupted: bool = False


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
    progress: Progress = noop,
) -> Replicates:
    """Run ``trials`` releases per workflow, reconstruct the microdata, tabulate it.

    Each replicate: :func:`~eree.release.gedp.release_gedp` (seeded noise) →
    :func:`~eree.release.microdata.build_microdata` (WLS from the published tables) →
    group sums of the microdata by every grouping (one ``bincount`` each; group ids and
    the truth are computed once). Ctrl-C after at least one replicate keeps the finished
    ones (``interrupted`` is then set).
    """
    if trials < 1:
        raise ValueError("trials must be ≥ 1")
    attrs = [a for a in data.confidential]
    public = public_frame(data, PolarsEngine())
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
    reports = {w: build(p).report() for w, p in plans.items()}
    est = {
        w: {a: {g: np.empty((trials, m)) for g, (_, m) in ids.items()} for a in attrs}
        for w in workflows
    }
    secs = dict.fromkeys(workflows, 0.0)
    done = 0
    stopped = False
    try:
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
            done = r + 1
            progress(f"replicate {r + 1}/{trials} (μ = {total_mu(budget, attrs) * scale:.3g})")
    except KeyboardInterrupt:
        if done == 0:
            raise
        stopped = True
    while stopped:  # one Ctrl-C can raise twice (see absorb_echo)
        try:
            absorb_echo()
            break
        except KeyboardInterrupt:
            continue
    if stopped:  # Ctrl-C: keep the finished replicates (docs/design.md#command-line)
        est = {w: {a: {g: v[:done] for g, v in by_g.items()} for a, by_g in by_a.items()}
               for w, by_a in est.items()}  # fmt: skip
    mu = total_mu(budget, attrs) * scale
    return Replicates(est, truth, estabs, keys, mu, done, secs, interrupted=done < trials)


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
    return tidy_row(experiment, workload, mechanism, stratum, metric, value, trials, mu=mu)


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
    error, paired over replicates). Each workflow's ``mean_abs_error_se`` is the Monte
    Carlo standard error of its mean absolute error (over replicates). With the adaptive
    workflow (mechanism ``adaptive-vs-best``): ``best_is_pnc`` (1 if pnc has the smaller
    mean absolute error, 0 if √), ``abs_error_ratio`` (adaptive / best), ``abs_error_diff``
    and ``abs_error_diff_se`` (adaptive − best, paired over replicates).
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
                    "mean_abs_error_se": (
                        float(per_rep_abs[w].std(ddof=1) / math.sqrt(t)) if t > 1 else 0.0
                    ),
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
            if PNC in cell_abs and "sqrt" in cell_abs:
                diff = per_rep_abs[PNC] - per_rep_abs["sqrt"]
                sq = float(cell_abs["sqrt"].mean())
                cmp = {
                    "share_pnc_better": float(np.mean(cell_abs[PNC] < cell_abs["sqrt"])),
                    "abs_error_ratio": float(cell_abs[PNC].mean()) / sq if sq > 0 else math.nan,
                    "abs_error_diff": float(diff.mean()),
                    "abs_error_diff_se": float(diff.std(ddof=1) / math.sqrt(t)) if t > 1 else 0.0,
                }
                for k, v in cmp.items():
                    rows.append(_row(experiment, a, "pnc-vs-sqrt", rep.mu, g, k, v, t))
            if ADAPTIVE in cell_abs and PNC in cell_abs and SQRT in cell_abs:
                best = min((PNC, SQRT), key=lambda w: float(cell_abs[w].mean()))
                diff = per_rep_abs[ADAPTIVE] - per_rep_abs[best]
                bm = float(cell_abs[best].mean())
                cmp = {
                    "best_is_pnc": float(best == PNC),
                    "abs_error_ratio": (
                        float(cell_abs[ADAPTIVE].mean()) / bm if bm > 0 else math.nan
                    ),
                    "abs_error_diff": float(diff.mean()),
                    "abs_error_diff_se": float(diff.std(ddof=1) / math.sqrt(t)) if t > 1 else 0.0,
                }
                for k, v in cmp.items():
                    rows.append(_row(experiment, a, "adaptive-vs-best", rep.mu, g, k, v, t))
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
    progress: Progress = noop,
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
                        "neighbor": psi,
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


def table11_rows(t11: pl.DataFrame) -> list[dict[str, Any]]:
    """Table 11 as rows of the tidy result table (MSE, its s.e., the paper's MSE, z)."""
    rows = []
    for r in t11.iter_rows(named=True):
        for metric, key in (("mse", "mse"), ("mse_se", "se"), ("paper_mse", "paper"), ("z", "z")):
            rows.append(
                _row(
                    "webb-table11",
                    r["query"],
                    r["neighbor"],
                    1.0,
                    r["strategy"],
                    metric,
                    r[key],
                    r["trials"],
                )
            )
    return rows
