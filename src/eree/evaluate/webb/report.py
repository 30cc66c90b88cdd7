"""Readings of each table and figure, computed from the numbers, and the HTML report."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from eree.evaluate.haney import CSV_COLUMNS
from eree.evaluate.webb.figures import (
    LABEL,
    attrs_of,
    plot_figure2,
    plot_figure3,
    plot_figure8,
    plot_figure9,
)
from eree.evaluate.webb.plans import (
    ADAPTIVE,
    EMPLOYMENT,
    FIGURE2_GROUPINGS,
    FIGURE_ATTRIBUTES,
    GAMMA_EMP,
    GAMMA_WAGE,
    GROUPINGS,
    PAPER_TABLE3,
    PNC,
    SHORT,
    WORKFLOWS,
    ZETA,
)
from eree.evaluate.webb.results import WebbResult, budget_rows, value

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
        name = LABEL.get(a, a)
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
    """Sentences reading Table 3 (signed differences) from the results."""
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
            parts = [f"{SHORT[w]} {_fmt(m)} ± {_fmt(s)}" for w, (m, s) in ms.items()]
            out.append(f"{LABEL.get(a, a)}, {g}: mean signed difference " + ", ".join(parts) + ".")
    return out


def _adaptive_rows(results: pl.DataFrame, attrs: Sequence[str]) -> list[list[str]]:
    rows = []
    for a in attrs:
        for g in GROUPINGS:
            d = value(results, "webb-figures", a, "adaptive-vs-best", g, "abs_error_diff")
            if not math.isfinite(d):
                continue
            se = value(results, "webb-figures", a, "adaptive-vs-best", g, "abs_error_diff_se")

            def mae(w: str, a: str = a, g: str = g) -> str:
                m = value(results, "webb-figures", a, w, g, "mean_abs_error")
                s = value(results, "webb-figures", a, w, g, "mean_abs_error_se")
                return f"{_fmt(m)} ± {_fmt(s)}"

            rows.append(
                [LABEL.get(a, a), g, mae("sqrt"), mae(PNC), mae(ADAPTIVE),
                 f"{_fmt(d)} ± {_fmt(se)}", "yes" if d <= 2 * se else "no"]
            )  # fmt: skip
    return rows


def reading_adaptive(results: pl.DataFrame, attrs: Sequence[str]) -> list[str]:
    """Sentences: where the adaptive workflow is (not) as good as the better of √ and pnc."""
    out = []
    for a in attrs:
        good: list[str] = []
        bad: list[str] = []
        for g in GROUPINGS:
            d = value(results, "webb-figures", a, "adaptive-vs-best", g, "abs_error_diff")
            se = value(results, "webb-figures", a, "adaptive-vs-best", g, "abs_error_diff_se")
            r = value(results, "webb-figures", a, "adaptive-vs-best", g, "abs_error_ratio")
            if not math.isfinite(d):
                continue
            (good if d <= 2 * se else bad).append(f"{g} (×{r:.2f})")
        if good or bad:
            out.append(
                f"{LABEL.get(a, a)}: adaptive MAE within 2 MC s.e. of the better of √ and pnc, "
                f"or below it (adaptive/best), at {', '.join(good) or 'no grouping'}; worse at "
                f"{', '.join(bad) or 'no grouping'}."
            )
    return out


def reading_figure9(results: pl.DataFrame, attrs: Sequence[str]) -> list[str]:
    """Sentences reading Figure 9 (the budget sweep) from the results."""
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
                parts.append(f"{SHORT[w]} {_fmt(lo)} → {_fmt(hi)}")
            out.append(
                f"{LABEL.get(a, a)}, {g}: median relative error from μ = {mus[0]:.2g} to "
                f"μ = {mus[-1]:.2g}: " + ", ".join(parts) + "."
            )
    return out


def reading_table11(t11: pl.DataFrame) -> list[str]:
    """Sentences reading Table 11 (the WLS ablation) against the paper."""
    worst = t11.sort("z", descending=True).row(0, named=True)
    n_ok = int((t11["z"] <= 3).sum())
    return [
        f"{n_ok} of {t11.height} cells are within 3 standard errors of the paper's value "
        "(the paper's rounding to 0.1 and its own Monte Carlo error over 1,000,000 trials "
        "included).",
        f"Largest distance: ψ = {worst['neighbor']}, {worst['strategy']}, {worst['query']}: eree "
        f"{worst['mse']:.1f} ± {worst['se']:.1f} vs paper {worst['paper']:.1f} "
        f"({worst['z']:.1f} standard errors).",
        "Est vs Act: estimated variances inflate the Total MSE "
        f"(√: ×{_ratio(t11, 'sqrt')}; log: ×{_ratio(t11, 'log')}), as in the paper.",
    ]


def summary_readings(res: WebbResult) -> list[str]:
    """The readings shown when a run ends: Figures 2, 3 and 8, Table 3, then Table 11."""
    attrs = attrs_of(res.replicates) if res.replicates is not None else []
    lines = reading_figures(res.results, attrs) + reading_table3(res.results, attrs)
    if res.table11 is not None:
        lines += reading_table11(res.table11)
    return lines


def _ratio(t11: pl.DataFrame, psi: str) -> str:
    f = t11.filter(pl.col("neighbor") == psi, pl.col("query") == "Total")
    est = float(f.filter(pl.col("strategy") == "Est")["mse"][0])
    act = float(f.filter(pl.col("strategy") == "Act")["mse"][0])
    return f"{est / act:.2f}"


def _img(path: Path) -> str:
    """The figure embedded in the page (the report is self-contained)."""
    from eree.htmlpage import img_file

    return img_file(path)


def _table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    from eree.htmlpage import table

    return table([str(h) for h in header], [[str(c) for c in r] for r in rows])


def _ul(items: Sequence[str]) -> str:
    return "<ul>" + "".join(f"<li>{html.escape(s)}</li>" for s in items) + "</ul>"


def html_report(res: WebbResult, figures: Mapping[str, Path]) -> str:
    """The HTML report: each table and figure with its reading."""
    from eree.htmlpage import page as html_page

    meta = res.meta
    attrs = list(FIGURE_ATTRIBUTES)
    if res.replicates is not None:
        attrs = attrs_of(res.replicates)
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
                        x["neighbor"],
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
            "(docs/errata.md).</p>"
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
                    paper = PAPER_TABLE3[g]  # the paper has no adaptive workflow
                    p = paper[w] if a in EMPLOYMENT and w in paper else (math.nan,) * 4
                    rows.append(
                        [
                            LABEL.get(a, a),
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
                        LABEL.get(a, a),
                        g,
                        str(int(value(r, "webb-figures", a, PNC, g, "cells"))),
                        _fmt(value(r, "webb-figures", a, PNC, g, "mean_abs_error")),
                        _fmt(value(r, "webb-figures", a, "sqrt", g, "mean_abs_error")),
                        _fmt(value(r, "webb-figures", a, "pnc-vs-sqrt", g, "abs_error_ratio")),
                        _fmt(value(r, "webb-figures", a, "pnc-vs-sqrt", g, "share_pnc_better")),
                        _fmt(value(r, "webb-figures", a, PNC, g, "median_rel_error")),
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
        adaptive = _adaptive_rows(r, attrs)
        if adaptive:
            parts.append(
                "<h3>Adaptive (ψ or pnc per group, docs/privacy.md) against the better "
                "workflow</h3>"
                + _ul(reading_adaptive(r, attrs))
                + _table(
                    adaptive,
                    [
                        "attribute",
                        "grouping",
                        "MAE √",
                        "MAE pnc",
                        "MAE adaptive",
                        "adaptive − best (± MC s.e.)",
                        "within 2 s.e. of the best or better",
                    ],
                )
                + "<p>MAE ± its Monte Carlo standard error over replicates; the difference is "
                "paired over replicates (same seeds).</p>"
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
        attrs = attrs_of(next(iter(res.sweep.values())))
        figs["figure9"] = plot_figure9(res.results, fd / "figure9_budget_sweep.png", attrs)
    paths.update({f"figure:{k}": v for k, v in figs.items()})
    p = out_dir / "run.json"
    p.write_text(json.dumps(res.meta, indent=2, default=str))
    paths["run"] = p
    p = out_dir / "report.html"
    p.write_text(html_report(res, figs), encoding="utf-8")
    paths["report"] = p
    return paths
