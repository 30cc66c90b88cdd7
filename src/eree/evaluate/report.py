"""Outputs of ``eree evaluate haney-…``.

A tidy CSV, the omitted points, the run record, figures and a self-contained HTML report
with a short reading of each figure (computed from the numbers, not written in advance).
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import polars as pl

from eree.evaluate.haney import CSV_COLUMNS, EXPERIMENTS, POSTPROCESSED, HaneyResult
from eree.evaluate.metrics import ALL, POPULATION_BINS
from eree.evaluate.plots import FIGURE_OF, NAMES, plot_all
from eree.htmlpage import img_file
from eree.htmlpage import page as html_page
from eree.mechanisms.baselines import TruncatedLaplace
from eree.mechanisms.er_ee import LogLaplace, SmoothGamma, SmoothLaplace

BASELINE_EPSILON = 2.0
BASELINE_ALPHA = 0.1
_ER_EE = (LogLaplace.name, SmoothGamma.name, SmoothLaplace.name)


def value(
    results: pl.DataFrame,
    experiment: str,
    mechanism: str,
    metric: str,
    *,
    alpha: float | None = None,
    epsilon: float | None = None,
    stratum: str = ALL,
) -> float:
    """One number from the tidy results (NaN when the point is absent or omitted)."""
    f = results.filter(
        pl.col("experiment") == experiment,
        pl.col("mechanism") == mechanism,
        pl.col("metric") == metric,
        pl.col("stratum") == stratum,
    )
    f = f.filter(pl.col("alpha").is_null() if alpha is None else pl.col("alpha") == alpha)
    if epsilon is not None:
        f = f.filter(pl.col("epsilon") == epsilon)
    return float(f["value"][0]) if f.height else math.nan


def _f(v: float, digits: int = 3) -> str:
    return "omitted" if not math.isfinite(v) else f"{v:.{digits}g}"


def _strata_present(results: pl.DataFrame, experiment: str) -> list[str]:
    f = results.filter(pl.col("experiment") == experiment, pl.col("metric") != "cells")
    have = set(f["stratum"].unique().to_list())
    return [b[2] for b in POPULATION_BINS if b[2] in have]


def reading(results: pl.DataFrame, experiment: str) -> list[str]:
    """A short reading of one experiment's figure, from its numbers."""
    _, metric = FIGURE_OF[experiment]
    eps_all = sorted(
        results.filter(pl.col("experiment") == experiment)["epsilon"].drop_nulls().unique()
    )
    if not eps_all:
        return []
    e_hi = max(eps_all)
    e0 = BASELINE_EPSILON if BASELINE_EPSILON in eps_all else e_hi
    out: list[str] = []
    base = ", ".join(
        f"{NAMES[m]} {_f(value(results, experiment, m, metric, alpha=BASELINE_ALPHA, epsilon=e0))}"
        for m in _ER_EE
    )
    what = "L1 error ratio to noise infusion" if metric == "l1_ratio" else "Spearman vs SDL"
    out.append(
        f"At the paper's baseline ε = {e0:g}, α = {BASELINE_ALPHA:g} ({what}, all cells): {base}."
    )
    trunc = results.filter(
        pl.col("experiment") == experiment,
        pl.col("metric") == metric,
        pl.col("stratum") == ALL,
        pl.col("mechanism").str.starts_with(TruncatedLaplace.name),
        ~pl.col("mechanism").str.ends_with(POSTPROCESSED),
    )
    if trunc.height:
        best = trunc.sort("value", descending=metric != "l1_ratio").row(0, named=True)
        out.append(
            f"Truncated Laplace: best {what} over all θ and ε is {_f(best['value'])} "
            f"({best['mechanism']}, ε = {best['epsilon']:g})."
        )
    if metric == "l1_ratio":
        hi = [
            (m, a, value(results, experiment, m, metric, alpha=a, epsilon=e_hi))
            for m in _ER_EE
            for a in sorted(results["alpha"].drop_nulls().unique())
        ]
        hi = [h for h in hi if math.isfinite(h[2])]
        if hi:
            m, a, v = min(hi, key=lambda h: h[2])
            below = sum(1 for h in hi if h[2] <= 1.0)
            out.append(
                f"At ε = {e_hi:g} the lowest ratio is {_f(v)} ({NAMES[m]}, α = {a:g}); "
                f"{below} of {len(hi)} plotted (mechanism, α) points are at or below parity."
            )
    pp = [
        (m, value(results, experiment, m, metric, alpha=BASELINE_ALPHA, epsilon=e),
         value(results, experiment, m + POSTPROCESSED, metric, alpha=BASELINE_ALPHA, epsilon=e),
         e)
        for e in eps_all
        for m in _ER_EE
    ]  # fmt: skip
    pp = [x for x in pp if math.isfinite(x[1]) and math.isfinite(x[2])]
    if pp:
        txt = "; ".join(
            f"ε = {e:g}: " + ", ".join(f"{NAMES[m]} {_f(a)} → {_f(b)}"
                                     for m, a, b, e2 in pp if e2 == e)
            for e in sorted({x[3] for x in pp})
        )  # fmt: skip
        out.append(
            f"Post-processed to non-negative integers (free in privacy), α = "
            f"{BASELINE_ALPHA:g}, raw → post-processed ({what}): {txt}."
        )
    strata = _strata_present(results, experiment)
    if strata:
        sl = [
            (s, value(results, experiment, SmoothLaplace.name, metric, alpha=BASELINE_ALPHA,
                      epsilon=e_hi, stratum=s))
            for s in strata
        ]  # fmt: skip
        sl_txt = ", ".join(f"{s}: {_f(v)}" for s, v in sl)
        out.append(
            f"By population of the place (tract employment), Smooth Laplace at ε = {e_hi:g}, "
            f"α = {BASELINE_ALPHA:g}: {sl_txt}."
        )
    return out


def _img(path: Path) -> str:
    """The figure embedded in the page (the report is self-contained)."""
    return img_file(path)


def _omitted_summary(omitted: pl.DataFrame, experiment: str) -> str:
    o = omitted.filter(pl.col("experiment") == experiment)
    if o.is_empty():
        return "<p>No point omitted.</p>"
    items = []
    for (mech, rule), g in o.sort("alpha", "epsilon").group_by(
        "mechanism", "rule", maintain_order=True
    ):
        pts = ", ".join(f"(α={r['alpha']:g}, ε={r['epsilon']:g})" for r in g.iter_rows(named=True))
        name = NAMES.get(str(mech), str(mech))
        items.append(
            f"<li>{html.escape(name)} — {html.escape(str(rule))}: {g.height} points {pts}</li>"
        )
    return f"<p>Omitted, as in the paper:</p><ul>{''.join(items)}</ul>"


def html_report(result: HaneyResult, figures: dict[str, Path]) -> str:
    """The HTML report of a Haney run: figures, findings and tables."""
    meta = result.meta
    ds = meta.get("dataset", {})
    secs = meta.get("seconds", {})
    intro = (
        "<h1>Haney et al. (SIGMOD 2017) §10, reproduced by eree</h1>"
        f"<p>Dataset: {html.escape(json.dumps(ds))}. Place = <b>{html.escape(meta['place'])}</b>; "
        f"population strata by {html.escape(meta['population'])}. "
        f"{meta['grid']['trials']} trials, seed {meta['seed']} (seeded randomness: NOT FOR "
        f"PUBLICATION). Smooth Laplace at δ = {meta['grid']['delta']:g} per cell; noise "
        f"infusion with s = {meta['grid']['s']:g}, t = {meta['grid']['t']:g} (eree's "
        "defaults; the Census Bureau's values are confidential). Wall time "
        f"{secs.get('total', float('nan')):.1f} s.</p>"
        "<p>Figures: one row per algorithm, one column per population stratum; lines per α "
        "(per θ for Truncated Laplace, edge-DP Laplace dashed). Missing points are the "
        "ones the paper omits (disallowed parameters, unbounded Log-Laplace expectation). "
        "Log-Laplace is the raw output ñ of Algorithm 1, as in the paper.</p>"
    )
    sections = [intro]
    for exp in meta["experiments"]:
        fig, _ = FIGURE_OF[exp]
        parts = [f"<h2>{html.escape(fig)}: {html.escape(EXPERIMENTS[exp])}</h2>"]
        parts.append(
            "<ul>" + "".join(f"<li>{html.escape(s)}</li>" for s in reading(result.results, exp))
            + "</ul>"
        )  # fmt: skip
        if exp in figures:
            parts.append(_img(figures[exp]))
        if f"{exp}-truth" in figures:
            parts.append("<p>Against the true ranking:</p>" + _img(figures[f"{exp}-truth"]))
        parts.append(_omitted_summary(result.omitted, exp))
        sections.append("".join(parts))
    return html_page("eree — Haney et al. evaluation", sections)


def write_outputs(
    result: HaneyResult, out_dir: Path, *, figures: bool = True, report: bool = True
) -> dict[str, Path]:
    """Write ``results.csv``, ``omitted.csv``, ``run.json``, ``figures/*.png``, ``report.html``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    p = out_dir / "results.csv"
    result.results.select(CSV_COLUMNS).write_csv(p)
    paths["results"] = p
    p = out_dir / "omitted.csv"
    result.omitted.write_csv(p)
    paths["omitted"] = p
    p = out_dir / "run.json"
    p.write_text(json.dumps(result.meta, indent=2, default=str))
    paths["run"] = p
    figs: dict[str, Path] = {}
    if figures or report:
        figs = plot_all(result.results, out_dir / "figures")
        paths.update({f"figure:{k}": v for k, v in figs.items()})
    if report:
        p = out_dir / "report.html"
        p.write_text(html_report(result, figs))
        paths["report"] = p
    return paths


def headline_point(result: HaneyResult) -> tuple[float, float]:
    """The (α, ε) of the console's headline table: the paper's baseline, or its nearest.

    The baseline (α = 0.1, ε = 2) when the run's grid has it; otherwise the grid's α
    nearest to 0.1 and the grid's ε nearest to 2 on a log scale (ties: the larger ε,
    which fewer mechanisms omit), so that a smaller grid (``--small-grid``) still shows
    numbers it computed.
    """
    grid = result.meta.get("grid", {})
    eps = [float(e) for e in grid.get("epsilons", ())] or [BASELINE_EPSILON]
    alphas = [float(a) for a in grid.get("alphas", ())] or [BASELINE_ALPHA]
    e = min(eps, key=lambda x: (round(abs(math.log(x / BASELINE_EPSILON)), 12), -x))
    a = min(alphas, key=lambda x: (round(abs(x - BASELINE_ALPHA), 12), -x))
    return a, e


def summary_rows(result: HaneyResult) -> list[dict[str, Any]]:
    """Headline numbers per experiment (for the console), at :func:`headline_point`."""
    alpha, epsilon = headline_point(result)
    rows = []
    for exp in result.meta["experiments"]:
        _, metric = FIGURE_OF[exp]
        for m in _ER_EE:
            rows.append(
                {
                    "experiment": exp,
                    "mechanism": m,
                    "metric": metric,
                    "value": value(result.results, exp, m, metric, alpha=alpha,
                                   epsilon=epsilon),
                    "alpha": alpha,
                    "epsilon": epsilon,
                }
            )  # fmt: skip
    return rows
