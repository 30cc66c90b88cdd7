"""Figures 2, 3, 8 and 9 of the QCEW paper, drawn from the replicates."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from eree.evaluate.webb.plans import (
    ADAPTIVE,
    FIGURE2_GROUPINGS,
    FIGURE8_GROUPINGS,
    FIGURE9_GROUPINGS,
    FIGURE_ATTRIBUTES,
    PNC,
    SHORT,
    TABLE7,
    WORKFLOWS,
    total_mu,
)
from eree.evaluate.webb.replicates import Replicates

# --------------------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------------------

_COLOR = {PNC: "tab:blue", "sqrt": "tab:orange", ADAPTIVE: "tab:green"}
LABEL = {
    PNC: "pnc-mechanism",
    ADAPTIVE: ADAPTIVE,
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


def attrs_of(rep: Replicates) -> list[str]:
    """The confidential attributes a figure shows: the figures' own, else the first two."""
    return [a for a in FIGURE_ATTRIBUTES if a in rep.truth] or list(rep.truth)[:2]


def plot_figure2(rep: Replicates, path: Path) -> Path:
    """Figure 2: box plots of the per-cell absolute error averaged over the replicates."""
    plt = _plt()
    attrs = attrs_of(rep)
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
            ax.set_xticks(range(1, len(ws) + 1), [LABEL[w] for w in ws])
            ax.set_yscale("log")
            ax.set_title(f"{LABEL.get(a, a)} by {g} ({rep.truth[a][g].size} cells)", fontsize=9)
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
    attrs = attrs_of(rep)
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
        ax.set_xticks(range(1, len(ws) + 1), [LABEL[w] for w in ws])
        ax.set_title(
            f"state total, {LABEL.get(a, a)} (true {rep.truth[a]['state'][0]:,.0f})", fontsize=9
        )
        ax.set_ylabel("absolute error per replicate")
    fig.suptitle(f"Figure 3 — state total, {rep.trials} replicates")
    fig.tight_layout()
    return _save(fig, path)


def plot_figure8(rep: Replicates, path: Path) -> Path:
    """Figure 8: per-cell relative error |x − x̃|/(x+1) (mean over replicates) vs truth."""
    plt = _plt()
    attrs = attrs_of(rep)
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
                ax.scatter(t + 1.0, rel, s=6, alpha=0.5, color=_COLOR[w], label=LABEL[w])
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{LABEL.get(a, a)} by {g}", fontsize=9)
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
            for w, ls in ((PNC, "-"), ("sqrt", "--"), (ADAPTIVE, ":")):
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
                        label=f"{g} ({SHORT[w]})",
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
        ax.set_title(LABEL.get(a, a), fontsize=9)
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
