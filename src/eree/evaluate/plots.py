"""Figures in the style of Haney et al. Figures 1–5 (matplotlib, Agg backend).

One figure per experiment: a grid of panels, one row per algorithm (Log-Laplace, Smooth
Gamma, Smooth Laplace, Truncated Laplace) and one column per population stratum (all
cells, then the non-empty bins); ε on the x axis (log scale), one line per α (per θ for
Truncated Laplace, with the edge-DP Laplace baseline dashed). L1 figures plot the error
ratio to input noise infusion on a log axis with the parity line at 1; ranking figures
plot the Spearman correlation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import polars as pl
from matplotlib.ticker import FuncFormatter, NullFormatter

from eree.evaluate.metrics import ALL, POPULATION_BINS
from eree.mechanisms.baselines import EdgeLaplace, TruncatedLaplace
from eree.mechanisms.er_ee import LogLaplace, SmoothGamma, SmoothLaplace
from eree.mechanisms.noise_infusion import NoiseInfusion

NAMES = {
    LogLaplace.name: "Log-Laplace",
    SmoothGamma.name: "Smooth Gamma",
    SmoothLaplace.name: "Smooth Laplace",
    TruncatedLaplace.name: "Truncated Laplace",
    EdgeLaplace.name: "edge-DP Laplace",
    "log_laplace_unbiased": "Log-Laplace (bias-corrected)",
    NoiseInfusion.name: "noise infusion (SDL)",
}
ROWS = (LogLaplace.name, SmoothGamma.name, SmoothLaplace.name, TruncatedLaplace.name)
METRIC_LABEL = {
    "l1_ratio": "L1 error ratio to SDL",
    "spearman_sdl": "Spearman vs SDL ranking",
    "spearman_truth": "Spearman vs true ranking",
    "l1": "average L1 error per cell",
}
FIGURE_OF = {
    "haney-workload1": ("Figure 1", "l1_ratio"),
    "haney-ranking1": ("Figure 2", "spearman_sdl"),
    "haney-workload2": ("Figure 3", "l1_ratio"),
    "haney-workload3": ("Figure 4", "l1_ratio"),
    "haney-ranking2": ("Figure 5", "spearman_sdl"),
}


def _theta(label: str) -> float:
    return float(label.split("theta=")[1].rstrip(")"))


def plot_experiment(
    results: pl.DataFrame, experiment: str, metric: str, path: Path, title: str
) -> Path | None:
    """Draw one figure; returns its path (None if there is nothing to draw)."""
    df = results.filter(pl.col("experiment") == experiment, pl.col("metric") == metric)
    if df.is_empty():
        return None
    strata = [ALL] + [
        b[2] for b in POPULATION_BINS if not df.filter(pl.col("stratum") == b[2]).is_empty()
    ]
    cells = (
        results.filter(
            pl.col("experiment") == experiment,
            pl.col("mechanism") == NoiseInfusion.name,
            pl.col("metric") == "cells",
        )
        .select("stratum", "value")
        .to_dict(as_series=False)
    )
    ncells = dict(zip(cells["stratum"], cells["value"], strict=True))
    fig, axes = plt.subplots(
        len(ROWS), len(strata), figsize=(3.0 * len(strata) + 1.2, 2.4 * len(ROWS)),
        sharex=True, sharey="row" if metric != "l1_ratio" else False, squeeze=False,
    )  # fmt: skip
    alphas = sorted(df.filter(pl.col("alpha").is_not_null())["alpha"].unique().to_list())
    a_col = {a: plt.cm.viridis(i / max(len(alphas) - 1, 1)) for i, a in enumerate(alphas)}
    trunc = sorted(
        {
            m
            for m in df["mechanism"].unique().to_list()
            if m.startswith(TruncatedLaplace.name) and "/" not in m  # not a variant
        },
        key=_theta,
    )
    t_col = {m: plt.cm.plasma(i / max(len(trunc) - 1, 1) * 0.9) for i, m in enumerate(trunc)}
    epsilons = sorted(df["epsilon"].drop_nulls().unique().to_list())
    for r, mech in enumerate(ROWS):
        for c, stratum in enumerate(strata):
            ax = axes[r][c]
            sub = df.filter(pl.col("stratum") == stratum)
            if mech == TruncatedLaplace.name:
                series: list[tuple[str, str, Any, str]] = [
                    (m, f"θ={_theta(m):g}", t_col[m], "-") for m in trunc
                ]
                series.append((EdgeLaplace.name, "edge-DP Lap", "black", "--"))
                for m, lab, col, ls in series:
                    s = sub.filter(pl.col("mechanism") == m).sort("epsilon")
                    if not s.is_empty():
                        ax.plot(s["epsilon"], s["value"], ls, color=col, marker=".", label=lab)
            else:
                for a in alphas:
                    s = sub.filter(pl.col("mechanism") == mech, pl.col("alpha") == a).sort(
                        "epsilon"
                    )
                    if not s.is_empty():
                        ax.plot(
                            s["epsilon"], s["value"], "-", color=a_col[a], marker=".",
                            label=f"α={a:g}",
                        )  # fmt: skip
            ax.set_xscale("log")
            ax.set_xticks(epsilons)
            ax.set_xticklabels([f"{e:g}" for e in epsilons], fontsize=6, rotation=45)
            ax.minorticks_off()
            if metric == "l1_ratio":
                ax.set_yscale("log")
                ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
                ax.yaxis.set_minor_formatter(NullFormatter())
                ax.axhline(1.0, color="grey", lw=0.8, ls=":")
            else:
                ax.axhline(1.0, color="grey", lw=0.8, ls=":")
                ax.set_ylim(-0.1, 1.05)
            ax.tick_params(labelsize=7)
            if r == 0:
                k = ncells.get(stratum)
                head = "all cells" if stratum == ALL else f"population {stratum}"
                ax.set_title(head + (f" ({int(k):,} cells)" if k else ""), fontsize=8)
            if c == 0:
                ax.set_ylabel(f"{NAMES[mech]}\n{METRIC_LABEL.get(metric, metric)}", fontsize=7)
            if r == len(ROWS) - 1:
                ax.set_xlabel("ε", fontsize=8)
            if c == len(strata) - 1 and ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_all(results: pl.DataFrame, out_dir: Path) -> dict[str, Path]:
    """Figures 1–5 (those whose experiment is in ``results``) plus truth-ranking variants."""
    out: dict[str, Path] = {}
    present = set(results["experiment"].unique().to_list())
    for exp, (fig, metric) in FIGURE_OF.items():
        if exp not in present:
            continue
        title = f"{fig} (eree): {METRIC_LABEL[metric]} — {exp}"
        p = plot_experiment(results, exp, metric, out_dir / f"{exp}.png", title)
        if p is not None:
            out[exp] = p
        if metric == "spearman_sdl":
            title = f"{fig} variant: {METRIC_LABEL['spearman_truth']} — {exp}"
            p = plot_experiment(results, exp, "spearman_truth", out_dir / f"{exp}-truth.png", title)
            if p is not None:
                out[f"{exp}-truth"] = p
    return out
