"""The report a disclosure review board reads: one self-contained HTML page per release.

Built from public information only — the manifest and the published tables (and the
published microdata, when there are any) — so the page may go wherever the release goes.
It says what was released, what privacy was spent and what that means in words, every
warning with its remedy, and how uncertain the published values are (summaries and
charts of the published standard errors and confidence intervals). Explanations common
to several tables are said once per page.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from eree.htmlpage import (
    bullets,
    charts,
    definitions,
    esc,
    num,
    page,
    slug,
    svg_histogram,
    svg_scatter,
    table,
)
from eree.release.tables import CLAMP_NOTE, QueryTable

#: the report's file name inside a release directory
REPORT_FILE = "report.html"

#: rows of each table shown in the report (the files hold them all)
PREVIEW_ROWS = 10

#: tables with fewer cells get the summary table only (a chart of a few points says little)
MIN_CHART_CELLS = 10

#: false-positive rate at which a GEDP query's hypothesis-test bound is quoted
FPR = 0.05

_SUFFIXES = ("_std", "_ci_low", "_ci_high")


# --------------------------------------------------------------------------------------
# Privacy, in words
# --------------------------------------------------------------------------------------


def _bayes(eps: float) -> str:
    return f"e^{num(eps, 4)} = {num(math.exp(eps), 4)}" if eps < 700 else f"e^{num(eps, 4)}"


def _meaning(cost: Mapping[str, Any] | None) -> str:
    """One query's (or the total's) cost in words."""
    if not cost:
        return "—"
    eps, delta, mu = cost.get("epsilon"), cost.get("delta"), cost.get("mu")
    if mu is not None:
        from eree.privacy.gedp import power_bound

        return f"power ≤ {power_bound(FPR, mu):.1%} at {FPR:.0%} false positives"
    if eps is not None:
        s = f"odds change by ≤ {_bayes(eps)}"
        if delta:
            s += f" (but for probability {num(delta, 3)})"
        return s
    return "no formal guarantee"


def _cost_rows(manifest: Mapping[str, Any]) -> tuple[list[str], list[list[Any]]]:
    priv = manifest["privacy"]
    tot = priv["total"]
    keys = [k for k in ("epsilon", "delta", "mu") if tot.get(k) is not None] or ["epsilon"]
    sym = {"epsilon": "ε", "delta": "δ", "mu": "μ"}
    headers = [
        "query",
        "grouped by",
        "mechanism",
        "cells",
        *(sym[k] for k in keys),
        "what it means",
    ]
    rows: list[list[Any]] = []
    for q in manifest["queries"]:
        c = q.get("cost") or {}
        by = q["by"] if isinstance(q["by"], str) else (", ".join(q["by"]) or "(total)")
        rows.append(
            [
                esc(q["name"]),
                esc(by),
                esc(q["mechanism"]),
                num(q["cells"]),
                *(num(c.get(k)) for k in keys),
                esc(_meaning(c)),
            ]
        )
    cells = sum(int(q["cells"]) for q in manifest["queries"])
    rows.append(
        [
            "<b>total</b>",
            "",
            "",
            f"<b>{num(cells)}</b>",
            *(f"<b>{num(tot.get(k))}</b>" for k in keys),
            f"<b>{esc(_meaning(tot))}</b>",
        ]
    )
    return headers, rows


def _semantics_html(manifest: Mapping[str, Any]) -> str:
    sem = manifest.get("semantics") or {}
    parts = []
    if sem.get("intervals"):  # GEDP: the structured tables below say it all, once
        mu = sem.get("mu")
        parts.append(
            f"<p>The whole release is μ-GEDP with μ = {num(mu)} (Webb et al. Def 5.6): "
            "it hides each establishment's confidential values within its uncertainty "
            "interval, in the sense of the hypothesis-test bound below.</p>"
        )
    elif sem.get("statements"):
        parts.append(bullets(sem["statements"]))
    if sem.get("size_protection"):
        rows = [
            [
                f"y ≤ {num(r['size_ratio'], 3)}·x",
                num(r["k"]),
                f"e^{num(r['log_bayes_factor_bound'], 4)}",
                num(r.get("bayes_factor_bound"), 3)
                if r.get("bayes_factor_bound")
                else "beyond 10^300",
            ]
            for r in sem["size_protection"]
        ]
        parts.append(
            "<p>How well an establishment's size is hidden: telling a size x from a size y "
            "changes an attacker's odds by at most this Bayes factor (k steps of the factor "
            "(1+α)).</p>"
            + table(["sizes", "steps k", "Bayes-factor bound", "as a number"], rows, raw=True)
        )
    ht = sem.get("hypothesis_test")
    if isinstance(ht, Mapping) and ht.get("examples"):
        rows = [
            [
                f"{r['false_positive_rate']:.0%}"
                if r["false_positive_rate"] >= 0.01
                else num(r["false_positive_rate"], 2),
                f"{r['max_power']:.1%}",
            ]
            for r in ht["examples"]
        ]
        parts.append(
            f"<p>Hypothesis tests: {esc(ht['statement'])}.</p>"
            + table(["false-positive rate", "largest possible power"], rows, raw=True)
        )
    firms = sem.get("firms")
    if isinstance(firms, Mapping) and firms.get("examples"):
        rows = [
            [num(r["establishments"]), num(r["mu"], 4), f"{r['max_power_at_5pct']:.1%}"]
            for r in firms["examples"]
        ]
        parts.append(
            f"<p>Firms: {esc(firms['statement'])}.</p>"
            + table(
                ["establishments of the firm", "μ", "power at 5% false positives"], rows, raw=True
            )
        )
    persons = sem.get("persons")
    for t in sem.get("tables") or []:
        if t["title"].startswith("Persons") and isinstance(persons, Mapping):
            parts.append(f"<p>Persons: {esc(persons.get('statement', ''))}.</p>")
        parts.append(f"<p>{esc(t['title'])}:</p>" + table(t["columns"], t["rows"]))
    return "".join(parts)


# --------------------------------------------------------------------------------------
# Warnings
# --------------------------------------------------------------------------------------


def warnings_html(warnings: Sequence[Mapping[str, Any]]) -> str:
    """Every warning of a manifest, each with its remedy."""
    if not warnings:
        return '<p class="ok">No warnings.</p>'
    out = []
    for w in warnings:
        where = f"query <b>{esc(w['query'])}</b>: " if w.get("query") else ""
        out.append(
            f'<div class="warn"><b>Warning</b> <code>{esc(w.get("code", ""))}</code> — {where}'
            f"{esc(w['message'])}"
            f'<div class="remedy"><b>What to change:</b> {esc(w.get("remedy") or "—")}</div></div>'
        )
    return "".join(out)


# --------------------------------------------------------------------------------------
# Published tables: uncertainty summaries and charts
# --------------------------------------------------------------------------------------


def statistics_of(frame: pl.DataFrame) -> list[str]:
    """The published statistics of a table: columns s with s_std, s_ci_low, s_ci_high."""
    cols = set(frame.columns)
    return [c for c in frame.columns if all(c + s in cols for s in _SUFFIXES)]


def _floats(frame: pl.DataFrame, col: str) -> np.ndarray:
    return frame.get_column(col).cast(pl.Float64).fill_null(float("nan")).to_numpy()


def _q(v: np.ndarray, p: float) -> float | None:
    v = v[np.isfinite(v)]
    return float(np.quantile(v, p)) if v.size else None


def uncertainty_summary(frame: pl.DataFrame) -> tuple[list[str], list[list[Any]]]:
    """Per statistic: cells, cells with a published std / CI, and their quantiles.

    Everything is computed from published columns: the estimate, its std and CI.
    The relative CI half-width is half the CI's width over the published estimate
    (cells whose estimate is positive).
    """
    headers = [
        "statistic",
        "cells",
        "with std",
        "median std",
        "with CI",
        "median CI half-width",
        "90th pct. CI half-width",
        "median relative half-width",
        "published total",
    ]
    rows: list[list[Any]] = []
    for s in statistics_of(frame):
        est, std = _floats(frame, s), _floats(frame, f"{s}_std")
        half = (_floats(frame, f"{s}_ci_high") - _floats(frame, f"{s}_ci_low")) / 2
        pos = np.isfinite(half) & (est > 0)
        rel = np.where(pos, half / np.where(pos, est, 1.0), np.nan)
        rows.append(
            [
                s,
                frame.height,
                int(np.isfinite(std).sum()),
                _q(std, 0.5),
                int(np.isfinite(half).sum()),
                _q(half, 0.5),
                _q(half, 0.9),
                None if not pos.any() else f"{_q(rel, 0.5):.1%}",
                float(np.nansum(est)),
            ]
        )
    return headers, rows


def uncertainty_charts(name: str, frame: pl.DataFrame) -> str:
    """Charts of a table's published uncertainty (empty when nothing is published).

    Left: the distribution of the 95% CI half-width over cells; right: the relative CI
    half-width against the published value (both axes logarithmic).
    """
    stats = statistics_of(frame)
    if frame.height < MIN_CHART_CELLS:
        return ""
    halves: dict[str, np.ndarray] = {}
    rels: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for s in stats:
        est = _floats(frame, s)
        half = (_floats(frame, f"{s}_ci_high") - _floats(frame, f"{s}_ci_low")) / 2
        if not np.isfinite(half).any():
            continue
        halves[s] = half
        ok = np.isfinite(half) & (est >= 1)
        rels[s] = (est[ok], half[ok] / est[ok])
    if not halves:
        return ""
    n = max((len(x) for x, _ in rels.values()), default=0)
    thin = f" Scatter: 1,500 of {n:,} cells, evenly spaced by value." if n > 1500 else ""
    return charts(
        svg_histogram(
            dict(halves),
            xlabel="95% CI half-width (log scale)",
            title=f"{name}: CI half-width by cell",
        ),
        svg_scatter(
            dict(rels),
            xlabel="published value (log scale)",
            ylabel="CI half-width / value",
            title=f"{name}: relative uncertainty vs value",
        ),
        caption=(
            "Published values only. Left: how many cells have a 95% confidence "
            "interval of each half-width. Right: the half-width relative to the "
            "published value (cells with a value of at least 1); small cells are "
            "relatively the most uncertain." + thin
        ),
    )


def preview(frame: pl.DataFrame, rows: int = PREVIEW_ROWS) -> str:
    """The first rows of a published table, formatted (keys left, numbers right)."""
    stats = set(statistics_of(frame))
    num_cols = stats | {c + s for c in stats for s in _SUFFIXES}
    keys = sum(1 for c in frame.columns if c not in num_cols)
    order = [c for c in frame.columns if c not in num_cols] + [
        c for c in frame.columns if c in num_cols
    ]
    head = frame.select(order).head(rows)
    return table(order, [list(r) for r in head.iter_rows()], left=keys, digits=5)


def _rows_heading(n: int) -> str:
    if n == 1:
        return "Its one row"
    return f"All {num(n)} rows" if n <= PREVIEW_ROWS else f"First {PREVIEW_ROWS} of {num(n)} rows"


def _split_method(how: str) -> tuple[str, bool]:
    """The uncertainty method without the clamp note (said once per page)."""
    suffix = f"; {CLAMP_NOTE}"
    return (how[: -len(suffix)], True) if how.endswith(suffix) else (how, False)


class Footnotes:
    """Explanations said once per page: each distinct text gets a number."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.clamped = False

    def ref(self, text: str) -> str:
        """The footnote marker of ``text`` (added on first use)."""
        if text not in self.texts:
            self.texts.append(text)
        i = self.texts.index(text) + 1
        return f'<a href="#method-{i}">[{i}]</a>'

    def html(self) -> str:
        """The numbered explanations."""
        if not self.texts:
            return ""
        items = "".join(f'<li id="method-{i + 1}">{esc(t)}</li>' for i, t in enumerate(self.texts))
        clamp = (
            f"<p>Wherever a confidence interval is published: {esc(CLAMP_NOTE)}.</p>"
            if self.clamped
            else ""
        )
        return (
            '<h2 id="how-uncertainty">How each standard error and interval was obtained</h2>'
            f"<ol>{items}</ol>{clamp}"
        )


def _table_section(
    q: Mapping[str, Any], frame: pl.DataFrame | None, notes: Footnotes, prefix: str
) -> str:
    name = q["name"]
    parts = [f'<h3 id="{prefix}table-{slug(name)}">Table {esc(name)}</h3>']
    by = q["by"] if isinstance(q["by"], str) else (", ".join(q["by"]) or "(one total cell)")
    cells = "1 cell" if q["cells"] == 1 else f"{num(q['cells'])} cells"
    parts.append(
        f"<p>{cells} grouped by <b>{esc(by)}</b>, mechanism "
        f"<code>{esc(q['mechanism'])}</code>, file <code>{esc(q['file'])}</code>.</p>"
    )
    methods = []
    for stat, how in (q.get("uncertainty") or {}).items():
        text, clamped = _split_method(how)
        notes.clamped |= clamped
        methods.append((stat, text))
    grouped: dict[str, list[str]] = {}
    for stat, text in methods:
        grouped.setdefault(text, []).append(stat)
    if grouped:
        parts.append(
            "<p>Standard error and CI: "
            + "; ".join(
                f"{esc(', '.join(stats))} {notes.ref(text)}" for text, stats in grouped.items()
            )
            + ".</p>"
        )
    if q.get("notes"):
        parts.append('<p class="muted">Notes: ' + esc("; ".join(q["notes"])) + ".</p>")
    if frame is None:
        return "".join(parts)
    headers, rows = uncertainty_summary(frame)
    if rows and all(r[2] == 0 and r[4] == 0 for r in rows):
        totals = ", ".join(f"{r[0]} {num(r[-1])}" for r in rows)
        parts.append(
            '<p class="muted">No standard error or confidence interval is published '
            "for this table (see the method above), so there is no uncertainty to "
            f"summarise or chart. Published total: {esc(totals)}.</p>"
        )
    elif rows:
        parts.append(table(headers, rows))
        parts.append(uncertainty_charts(name, frame))
    parts.append(f"<h4>{_rows_heading(frame.height)}</h4>")
    parts.append(preview(frame))
    return "".join(parts)


# --------------------------------------------------------------------------------------
# The page
# --------------------------------------------------------------------------------------


def _random_words(rnd: Mapping[str, Any]) -> str:
    mode = rnd.get("mode")
    if mode == "seeded":
        return f"seeded (seed {esc(rnd.get('seed'))}): reproducible, NOT FOR PUBLICATION"
    s = {
        "secure": "secure: the operating system's cryptographically secure generator",
    }.get(str(mode), str(mode))
    s += (
        "; float-safe: every noisy value is the exact mechanism's output rounded to a public "
        "grid (the grids are listed with each query's parameters)"
    )
    return esc(s)


def release_section(
    manifest: Mapping[str, Any],
    tables: Mapping[str, pl.DataFrame],
    *,
    extra: Mapping[str, pl.DataFrame] | None = None,
    notes: Footnotes | None = None,
    prefix: str = "",
    title: str | None = None,
) -> str:
    """The HTML of one release (several may share a page and its footnotes).

    Args:
        manifest: the release's manifest.
        tables: query name → published table.
        extra: further published files (e.g. ``microdata.parquet``) by name.
        notes: the page's footnotes (explanations said once per page).
        prefix: a prefix of the anchors (several releases on one page).
        title: the section's heading (default: "Release NAME").
    """
    notes = notes if notes is not None else Footnotes()
    ds = manifest["dataset"]
    priv = manifest["privacy"]
    parts = [f'<h2 id="{prefix}release">{esc(title or "Release " + ds["name"])}</h2>']
    rnd = manifest.get("random") or {}
    if rnd.get("mode") == "seeded":
        parts.append(
            f'<div class="banner">NOT FOR PUBLICATION — seeded randomness (seed '
            f"{esc(rnd.get('seed'))}): anyone who knows the seed can remove the "
            "noise. For experiments only.</div>"
        )
    cells = sum(int(q["cells"]) for q in manifest["queries"])
    facts = [
        ("dataset", esc(ds["name"])),
        ("input files", esc(", ".join(ds.get("files", [])) or "—")),
        (
            "fingerprint (keyed)",
            f"<code>{esc(ds['fingerprint'])}</code> "
            '<span class="muted">(HMAC under the ledger\'s secret key: it identifies the '
            "data only to whoever holds the key)</span>"
            if ds.get("fingerprint")
            else f'none <span class="muted">({esc(ds.get("fingerprint_note", ""))})</span>',
        ),
        ("privacy definition", esc(priv.get("guarantee") or priv["definition"])),
    ]
    if priv.get("alpha") is not None:
        facts.append(("α (establishment-size protection)", num(priv["alpha"])))
    if priv.get("neighbor"):
        facts.append(("neighbor function ψ", esc(priv["neighbor"])))
    if priv.get("distance"):
        facts.append(
            (
                "distance γ per attribute",
                esc(", ".join(f"{k} = {num(v)}" for k, v in priv["distance"].items())),
            )
        )
    facts += [
        ("queries / published cells", f"{len(manifest['queries'])} / {num(cells)}"),
        ("randomness", _random_words(rnd)),
        (
            "created",
            esc(f"{manifest.get('created', '—')} by eree {manifest.get('eree_version', '')}"),
        ),
    ]
    led = manifest.get("ledger")
    if led:
        facts.append(
            (
                "budget ledger",
                esc(
                    f"row {led.get('id')}, dataset {led.get('dataset')!r}, "
                    f"version {led.get('version')}"
                ),
            )
        )
    parts.append(definitions(facts))

    warns = list(manifest.get("warnings") or [])
    parts.append(f'<h3 id="{prefix}warnings">Warnings ({len(warns)})</h3>' + warnings_html(warns))
    if led and led.get("notes"):
        parts.append(bullets(f"ledger: {n}" for n in led["notes"]))
    if led and led.get("lifetime_budget"):
        lb = led["lifetime_budget"]
        parts.append(_lifetime_budget_html(lb, str(lb.get("dataset") or led.get("dataset"))))

    headers, rows = _cost_rows(manifest)
    parts.append(f'<h3 id="{prefix}privacy">Privacy spent</h3>')
    if priv["total"].get("mu") is not None:
        parts.append(
            "<p>What it means: the most power any test has to tell whether an "
            "establishment's confidential values are x or a value inside x's "
            f"uncertainty interval, at a {FPR:.0%} false-positive rate (μ-GEDP).</p>"
        )
    elif priv["total"].get("epsilon") is not None:
        parts.append(
            "<p>What it means: the largest factor by which anything published can "
            "change an attacker's odds about one worker (a Bayes-factor bound "
            "e^ε); with δ &gt; 0 the bound may fail with probability δ.</p>"
        )
    parts.append(table(headers, rows, left=3, raw=True, wrap=[len(headers) - 1], full=True))
    if priv.get("notes"):
        parts.append(bullets(priv["notes"]))
    parts.append(f'<h3 id="{prefix}meaning">What this means</h3>' + _semantics_html(manifest))

    for key in ("postprocess", "microdata"):
        entry = manifest.get(key)
        if isinstance(entry, Mapping) and entry:
            parts.append(f"<h3>{'Post-processing' if key == 'postprocess' else 'Microdata'}</h3>")
            parts.append(_entry_html(entry))
    parts.append(f'<h3 id="{prefix}tables">Published tables</h3>')
    for q in manifest["queries"]:
        parts.append(_table_section(q, tables.get(q["name"]), notes, prefix))
    for rel, frame in (extra or {}).items():
        parts.append(
            f"<h3>{esc(rel)}</h3><p>{num(frame.height)} rows, columns "
            f"{esc(', '.join(frame.columns))}.</p>"
        )
        parts.append(f"<h4>{_rows_heading(frame.height)}</h4>" + preview(frame))
    return "".join(parts)


_BUDGET_WORDS = {"epsilon": "ε", "delta": "δ", "mu": "μ"}


def _lifetime_budget_html(lb: Mapping[str, Any], dataset: str) -> str:
    """The dataset's lifetime budget: budget, spent before, this release, after, remaining."""
    keys = [k for k in ("epsilon", "delta", "mu") if k in (lb.get("budget") or {})]
    stages = ("budget", "spent_before", "this_release", "spent_after", "remaining")

    def cell(stage: str, k: str) -> Any:
        v = (lb.get(stage) or {}).get(k)
        return "—" if v is None else float(v)

    rows = [[_BUDGET_WORDS[k], *(cell(st, k) for st in stages)] for k in keys]
    headers = ["", "lifetime budget", "spent before", "this release", "spent after",
               "remaining"]  # fmt: skip
    words = (
        f"<p>Every release of dataset {esc(dataset)} draws on one lifetime budget held in "
        "the ledger. Spent amounts are rounded up and what remains is rounded down; "
        "“remaining” is the largest cost one more release could have (for μ, whose releases "
        "add as √(μ₁² + μ₂² + …), it is √(budget² − spent²)).</p>"
    )
    return "<h3>Lifetime budget</h3>" + words + table(headers, rows, left=1, digits=6)


def _is_scalar(v: Any) -> bool:
    if isinstance(v, list | tuple):
        return all(not isinstance(x, Mapping | list | tuple) for x in v)
    return not isinstance(v, Mapping)


def _records_table(records: Sequence[Mapping[str, Any]], lead: Sequence[Any] = ()) -> str:
    keys = list(dict.fromkeys(k for r in records for k in r if _is_scalar(r[k])))
    rows = [
        [
            *lead,
            *(
                r.get(k) if isinstance(r.get(k), int | float) else _short(r.get(k, ""))
                for k in keys
            ),
        ]
        for r in records
    ]
    return table(keys, rows, wrap=[i for i, k in enumerate(keys) if k in _LONG_TEXT])


#: manifest fields whose text is long enough to wrap in a table
_LONG_TEXT = ("variance", "method", "note", "notes")


def _entry_html(entry: Mapping[str, Any]) -> str:
    """A post-processing or microdata manifest entry: facts, then its nested records.

    Per-attribute entries (``attributes``: attribute → solver facts and the measurements
    used) become one row per attribute; the measurements' variance kinds, the same for
    every attribute, are listed once.
    """
    parts = [definitions((k, esc(_short(v))) for k, v in entry.items() if _is_scalar(v))]
    for key, v in entry.items():
        if _is_scalar(v):
            continue
        if isinstance(v, Mapping) and all(isinstance(x, Mapping) for x in v.values()):
            facts = [
                k
                for k in dict.fromkeys(k for x in v.values() for k in x)
                if all(_is_scalar(x.get(k)) for x in v.values())
            ]
            rows = []
            for name, x in v.items():
                used = "; ".join(
                    f"{m.get('query')} {num(m.get('cells_used'))}/{num(m.get('cells'))}"
                    for m in x.get("measurements", [])
                )
                rows.append(
                    [
                        name,
                        *(
                            x.get(k)
                            if isinstance(x.get(k), int | float) and not isinstance(x.get(k), bool)
                            else _short(x.get(k))
                            for k in facts
                        ),
                        used,
                    ]
                )
            heads = [key.rstrip("s") if key.endswith("s") else key, *facts]
            if any(x.get("measurements") for x in v.values()):
                heads.append("measurements used (cells used / cells)")
            parts.append(table(heads, [r[: len(heads)] for r in rows], wrap=[len(heads) - 1]))
            kinds = {
                m.get("query"): m.get("variance")
                for x in v.values()
                for m in x.get("measurements", [])
                if m.get("variance")
            }
            if kinds:
                parts.append(
                    "<p>Variances used, per query:</p>"
                    + table(["query", "variance"], [[q, t] for q, t in kinds.items()], wrap=[1])
                )
        elif isinstance(v, list) and all(isinstance(x, Mapping) for x in v):
            parts.append(f"<p>{esc(key)}:</p>" + _records_table(v))
        else:
            parts.append(definitions([(key, esc(_short(v)))]))
    return "".join(parts)


def _short(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return num(v)
    if isinstance(v, list | tuple):
        return "; ".join(_short(x) for x in v)
    if isinstance(v, Mapping):
        return ", ".join(f"{k}: {_short(x)}" for k, x in v.items())
    return str(v)


READING = (
    "<p>Each published table has the query's key columns, then for every published "
    "statistic <i>s</i> (<code>jobs</code> for job counts, the attribute's name for "
    "establishment sums) four columns: <code>s</code>, the published estimate; "
    "<code>s_std</code>, its standard error; <code>s_ci_low</code> and "
    "<code>s_ci_high</code>, its 95% confidence interval. A blank (null) standard error or "
    "interval is not publishable for that mechanism; the footnotes below say why. All "
    "numbers here are computed from the published files alone: nothing in this report "
    "depends on the confidential data except through the protected values.</p>"
)


def release_report(
    manifest: Mapping[str, Any],
    tables: Sequence[QueryTable] | Mapping[str, pl.DataFrame],
    extra: Mapping[str, pl.DataFrame] | None = None,
) -> str:
    """The self-contained ``report.html`` of one release."""
    frames = tables if isinstance(tables, Mapping) else {t.name: t.table for t in tables}
    notes = Footnotes()
    body = release_section(manifest, frames, extra=extra, notes=notes)
    sections = [
        _summary_box(manifest),
        body,
        '<h2 id="reading">How to read the tables</h2>' + READING,
        notes.html(),
    ]
    return page(
        f"Release report: {manifest['dataset']['name']}",
        sections,
        subtitle="A protected release: what was published, what privacy it spent "
        "and what that means, every warning, and how uncertain the published "
        "values are.",
        toc=True,
    )


def _summary_box(manifest: Mapping[str, Any]) -> str:
    tot = manifest["privacy"]["total"]
    n = len(manifest.get("warnings") or [])
    spent = ", ".join(
        f"{s} = {num(tot[k])}"
        for k, s in (("epsilon", "ε"), ("delta", "δ"), ("mu", "μ"))
        if tot.get(k) is not None
    )
    return (
        f'<p class="info"><b>{esc(manifest["dataset"]["name"])}</b>: '
        f"{len(manifest['queries'])} tables under "
        f"{esc(manifest['privacy'].get('guarantee') or manifest['privacy']['definition'])}; "
        f"total privacy spent {spent or 'none'}; <b>{n} warning{'s' if n != 1 else ''}</b>.</p>"
    )
