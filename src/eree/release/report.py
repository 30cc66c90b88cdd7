"""The report a disclosure review board reads: one self-contained HTML page per release.

Built from public information only — the manifest and the published tables (and the
published microdata, when there are any) — so the page may go wherever the release goes.
Written for the board, not for the release's authors (docs/design.md#release-outputs):

* a summary at the top, in plain words: what was protected, how much privacy was spent
  (and, for a charged release, what the dataset's lifetime budget has left), how
  accurate the tables are, how many warnings;
* every number with its unit (:mod:`eree.release.units`: from the spec's
  ``[data].units``, else from known column names), money also in dollars;
* ε and μ both translated into the power of an attacker's test, so that releases of
  either family can be compared; a glossary of the few symbols that stay;
* every warning with its remedy and what the release would spend after the remedy;
* no theorem number without its plain-language gloss, no solver diagnostics and no
  repository path (those stay in ``manifest.json``): manifest texts pass through
  :func:`plain_text`;
* charts that fit a phone's screen; one chart per unit (persons and dollars never
  share an axis).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np
import polars as pl

from eree.htmlpage import (
    TOC_HERE,
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
from eree.release.report_tradeoff import tradeoff_html
from eree.release.report_words import (
    FPR,
    ODDS_DELTA,
    READING,
    bayes,
    epsilon_of_mu,
    glossary_html,
    identity_words,
    jobs_words,
    lifetime_budget_html,
    meaning,
    meaning_long,
    percent,
    plain_text,
    power_of_epsilon,
    power_of_mu,
    user_text,
)
from eree.release.tables import CLAMP_NOTE, QueryTable
from eree.release.units import UNKNOWN, amount, unit_of, units_of

#: the report's file name inside a release directory
REPORT_FILE = "report.html"

#: rows of each table shown in the report (the files hold them all)
PREVIEW_ROWS = 10

#: tables with fewer cells get the summary table only (a chart of a few points says little)
MIN_CHART_CELLS = 10


#: a published value is "accurate" when its 95% CI half-width is at most this share of it
GOOD_RELATIVE = 0.10

_SUFFIXES = ("_std", "_ci_low", "_ci_high")
_ND = NormalDist()


def _is_gedp(manifest: Mapping[str, Any]) -> bool:
    return manifest["privacy"]["total"].get("mu") is not None


def _cost_rows(manifest: Mapping[str, Any]) -> tuple[list[str], list[list[Any]]]:
    priv = manifest["privacy"]
    tot = priv["total"]
    keys = [k for k in ("epsilon", "delta", "mu") if tot.get(k) is not None] or ["epsilon"]
    sym = {"epsilon": "ε", "delta": "δ", "mu": "μ"}
    # the cost right after the query's name: on a phone's screen without scrolling
    headers = ["query", *(sym[k] for k in keys), "grouped by", "mechanism", "cells",
               "what it means"]  # fmt: skip
    rows: list[list[Any]] = []
    for q in manifest["queries"]:
        c = q.get("cost") or {}
        by = q["by"] if isinstance(q["by"], str) else (", ".join(q["by"]) or "(total)")
        rows.append([user_text(q["name"]), *(num(c.get(k)) for k in keys), user_text(by),
                     esc(q["mechanism"]), num(q["cells"]), esc(meaning(c))])  # fmt: skip
    cells = sum(int(q["cells"]) for q in manifest["queries"])
    rows.append(["<b>total</b>", *(f"<b>{num(tot.get(k))}</b>" for k in keys), "", "",
                 f"<b>{num(cells)}</b>", f"<b>{esc(meaning_long(tot))}</b>"])  # fmt: skip
    return headers, rows


def _label(stat: str, units: Mapping[str, str]) -> str:
    return f"{stat} ({unit_of(stat, units)})"


def _semantics_html(manifest: Mapping[str, Any]) -> str:
    units = units_of(manifest)
    sem = manifest.get("semantics") or {}
    parts = []
    if sem.get("intervals"):  # GEDP: the structured tables below say it all, once
        mu = sem.get("mu")
        parts.append(
            f"<p>The whole release is μ-GEDP with μ = {num(mu)}: it hides each "
            "establishment's confidential values within its uncertainty interval, in the "
            "sense of the hypothesis-test bound below.</p>"
        )
    elif sem.get("statements"):
        parts.append(bullets(plain_text(t, units) for t in sem["statements"]))
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
            "<p>How well an employer's size is hidden: telling a size x (in jobs) from a "
            "size y changes an attacker's odds by at most this factor (k steps of the "
            "factor 1+α).</p>"
            + table(["sizes", "steps k", "odds-change bound", "as a number"], rows, raw=True)
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
            f"<p>Hypothesis tests: {esc(plain_text(ht['statement'], units))}.</p>"
            + table(["false-positive rate", "largest possible power"], rows, raw=True)
        )
    firms = sem.get("firms")
    if isinstance(firms, Mapping) and firms.get("examples"):
        rows = [
            [num(r["establishments"]), num(r["mu"], 4), f"{r['max_power_at_5pct']:.1%}"]
            for r in firms["examples"]
        ]
        parts.append(
            f"<p>Firms: {esc(plain_text(firms['statement'], units))}.</p>"
            + table(
                ["establishments of the firm", "μ", "power at 5% false positives"], rows, raw=True
            )
        )
    persons = sem.get("persons")
    for t in sem.get("tables") or []:
        title = plain_text(t["title"], units)
        if t["title"].startswith("Persons") and isinstance(persons, Mapping):
            parts.append(f"<p>Persons: {esc(plain_text(persons.get('statement', ''), units))}.</p>")
        cols = [t["columns"][0], *(_label(c, units) for c in t["columns"][1:])]
        parts.append(
            f"<p>{esc(title)} (each attribute in its own unit):</p>" + table(cols, t["rows"])
        )
    return "".join(parts)


# --------------------------------------------------------------------------------------
# Warnings, with what the release would spend after the remedy
# --------------------------------------------------------------------------------------

_NUMBER = r"([0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)"
_EPS_TO = re.compile(r"raise the query's epsilon to " + _NUMBER)
_DELTA_TO = re.compile(r"set the query's delta to " + _NUMBER + r".*?epsilon >= " + _NUMBER)
_MU_TO = re.compile(r"raise mu for (\S+) to " + _NUMBER)
_MU_BY = re.compile(r"raise mu for (\S+) here and in query '([^']+)'.*?by a factor of " + _NUMBER)


def _spec_query(manifest: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    for q in (manifest.get("spec") or {}).get("query") or []:
        if isinstance(q, Mapping) and q.get("name") == name:
            return q
    return {}


def _query(manifest: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    return next((q for q in manifest["queries"] if q["name"] == name), {})


def after_remedy(w: Mapping[str, Any], manifest: Mapping[str, Any]) -> dict[str, float] | None:
    """The release's total cost if only warning ``w``'s remedy were applied (None: unknown).

    ε and δ of ER-EE queries add (sequential composition): the query's cost scales with
    its ε (δ); μ of GEDP measurements combine as √(Σ μ²), over the manifest's list of
    (query, attribute, μ) measurements.
    """
    tot = manifest["privacy"]["total"]
    remedy = str(w.get("remedy") or "")
    q = _query(manifest, str(w.get("query")))
    cost = q.get("cost") or {}
    spec = _spec_query(manifest, str(w.get("query")))

    def scaled(key: str, new: float) -> float | None:
        now, given = cost.get(key), spec.get(key)
        if now is None or tot.get(key) is None:
            return None
        new_cost = (
            float(now) * new / float(given) if isinstance(given, int | float) and given else new
        )
        return float(tot[key]) - float(now) + new_cost

    if (m := _DELTA_TO.search(remedy)) is not None:
        delta = scaled("delta", float(m.group(1)))
        given = spec.get("epsilon")
        eps_new = max(float(m.group(2)), float(given) if isinstance(given, int | float) else 0.0)
        eps = scaled("epsilon", eps_new)
        return None if eps is None or delta is None else {"epsilon": eps, "delta": delta}
    if (m := _EPS_TO.search(remedy)) is not None:
        eps = scaled("epsilon", float(m.group(1)))
        out = {"epsilon": eps} if eps is not None else None
        if out is not None and tot.get("delta") is not None:
            out["delta"] = float(tot["delta"])
        return out
    meas = (manifest.get("privacy") or {}).get("measurements") or []
    mu_of = {(r.get("query"), r.get("attribute")): float(r.get("mu") or 0.0) for r in meas}
    if tot.get("mu") is None or not mu_of:
        return None
    sq = float(tot["mu"]) ** 2
    if (m := _MU_BY.search(remedy)) is not None:
        attr, other, factor = m.group(1), m.group(2), float(m.group(3))
        parts = {(q.get("name"), attr), (other, attr)}
        if not all(p in mu_of for p in parts):
            return None
        return {"mu": math.sqrt(sq + (factor**2 - 1) * sum(mu_of[p] ** 2 for p in parts))}
    if (m := _MU_TO.search(remedy)) is not None:
        key = (q.get("name"), m.group(1))
        if key not in mu_of:
            return None
        return {"mu": math.sqrt(max(sq - mu_of[key] ** 2 + float(m.group(2)) ** 2, 0.0))}
    return None


def _available(manifest: Mapping[str, Any]) -> dict[str, float]:
    """What the lifetime budget allowed this release (budget less what was spent before)."""
    lb = (manifest.get("ledger") or {}).get("lifetime_budget") or {}
    budget, before = lb.get("budget") or {}, lb.get("spent_before") or {}
    out = {}
    for k, b in budget.items():
        if b is None:
            continue
        s = float(before.get(k) or 0.0)
        out[k] = math.sqrt(max(b * b - s * s, 0.0)) if k == "mu" else max(float(b) - s, 0.0)
    return out


def _after_words(after: Mapping[str, float], manifest: Mapping[str, Any]) -> str:
    tot = manifest["privacy"]["total"]
    sym = {"epsilon": "ε", "delta": "δ", "mu": "μ"}
    said = ", ".join(f"{sym[k]} = {num(v)}" for k, v in after.items())
    now = ", ".join(f"{sym[k]} = {num(tot.get(k))}" for k in after)
    s = f"With this change alone the release would spend {said} in total (now {now}): "
    s += meaning_long(after)
    avail = _available(manifest)
    over = [sym[k] for k, v in after.items() if k in avail and v > avail[k] * (1 + 1e-12)]
    if over:
        s += f" — more {' and '.join(over)} than the dataset's lifetime budget had left"
    return s + "."


def warnings_html(
    warnings: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any] | None = None
) -> str:
    """Every warning of a manifest, each with its remedy (and, with the manifest, its cost)."""
    if not warnings:
        return '<p class="ok">No warnings.</p>'
    units = units_of(manifest) if manifest is not None else {}
    out = []
    for w in warnings:
        where = f"query <b>{user_text(w['query'])}</b>: " if w.get("query") else ""
        after = after_remedy(w, manifest) if manifest is not None else None
        cost = f'<div class="after">{esc(_after_words(after, manifest))}</div>' if (
            after and manifest is not None) else ""  # fmt: skip
        out.append(
            f'<div class="warn"><b>Warning</b> <code>{esc(w.get("code", ""))}</code> — {where}'
            f"{esc(plain_text(w['message'], units))}"
            f'<div class="remedy"><b>What to change:</b> '
            f"{esc(plain_text(w.get('remedy') or '—', units))}</div>{cost}</div>"
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


def _half_widths(frame: pl.DataFrame, s: str) -> tuple[np.ndarray, np.ndarray]:
    """The published estimate and the half-width of its 95% CI (NaN where none)."""
    est = _floats(frame, s)
    return est, (_floats(frame, f"{s}_ci_high") - _floats(frame, f"{s}_ci_low")) / 2


def _relative(est: np.ndarray, half: np.ndarray) -> np.ndarray:
    pos = np.isfinite(half) & (est > 0)
    return np.where(pos, half / np.where(pos, est, 1.0), np.nan)


def uncertainty_summary(
    frame: pl.DataFrame, units: Mapping[str, str] | None = None
) -> tuple[list[str], list[list[Any]]]:
    """Per statistic: its unit, cells, cells with a published std / CI, and their quantiles.

    Everything is computed from published columns: the estimate, its std and CI.
    The relative CI half-width is half the CI's width over the published estimate
    (cells whose estimate is positive).
    """
    headers = ["statistic", "unit", "cells", "with std", "median std", "with CI",
               "median CI half-width", "90th pct. CI half-width",
               "median relative half-width", f"cells with CI within ±{GOOD_RELATIVE:.0%}",
               "published total"]  # fmt: skip
    rows: list[list[Any]] = []
    for s in statistics_of(frame):
        est, half = _half_widths(frame, s)
        std = _floats(frame, f"{s}_std")
        rel = _relative(est, half)
        has = np.isfinite(half)
        rows.append([
            s, unit_of(s, units or {}), frame.height, int(np.isfinite(std).sum()),
            _q(std, 0.5), int(has.sum()), _q(half, 0.5), _q(half, 0.9),
            None if not np.isfinite(rel).any() else f"{_q(rel, 0.5):.1%}",
            None if not has.any() else f"{np.mean(rel[has] <= GOOD_RELATIVE):.0%}",
            float(np.nansum(est)),
        ])  # fmt: skip
    return headers, rows


def _axis_unit(unit: str) -> str:
    return "unit not stated" if unit == UNKNOWN else unit


def uncertainty_charts(
    name: str, frame: pl.DataFrame, units: Mapping[str, str] | None = None
) -> str:
    """Charts of a table's published uncertainty (empty when nothing is published).

    One pair of charts per unit (persons and dollars never share an axis). Left: the
    distribution of the 95% CI half-width over cells; right: the relative CI half-width
    against the published value (both axes logarithmic).
    """
    if frame.height < MIN_CHART_CELLS:
        return ""
    groups: dict[str, list[str]] = {}
    for s in statistics_of(frame):
        groups.setdefault(unit_of(s, units or {}), []).append(s)
    out = []
    for unit, stats in groups.items():
        halves: dict[str, np.ndarray] = {}
        rels: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for s in stats:
            est, half = _half_widths(frame, s)
            if not np.isfinite(half).any():
                continue
            halves[s] = half
            ok = np.isfinite(half) & (est >= 1)
            rels[s] = (est[ok], half[ok] / est[ok])
        if not halves:
            continue
        n = max((len(x) for x, _ in rels.values()), default=0)
        thin = f" Scatter: 1,500 of {n:,} cells, evenly spaced by value." if n > 1500 else ""
        u = _axis_unit(unit)
        what = ", ".join(stats)
        out.append(
            charts(
                svg_histogram(dict(halves), xlabel=f"95% CI half-width, {u} (log scale)",
                              title=f"{name} ({u}): CI half-width"),
                svg_scatter(dict(rels), xlabel=f"published value, {u} (log scale)",
                            ylabel="CI half-width / value",
                            title=f"{name} ({u}): relative uncertainty"),
                caption=(
                    f"{what}, in {u}; published values only. Left: how many cells have a "
                    "95% confidence interval of each half-width. Right: the half-width "
                    "relative to the published value (cells with a value of at least 1); "
                    "small cells are relatively the most uncertain." + thin
                ),
            )
        )  # fmt: skip
    return "".join(out)


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


def _units_line(stats: Sequence[str], units: Mapping[str, str]) -> str:
    by: dict[str, list[str]] = {}
    for s in stats:
        by.setdefault(unit_of(s, units), []).append(s)
    said = "; ".join(f"{', '.join(v)} (and their std and CI) in {k}" for k, v in by.items())
    return f'<p class="muted">Units: {esc(said)}.</p>' if said else ""


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
        #: the families of the releases on the page (for the glossary)
        self.families: set[str] = set()

    def ref(self, text: str) -> str:
        """The footnote marker of ``text`` (added on first use)."""
        text = plain_text(text)
        if text not in self.texts:
            self.texts.append(text)
        i = self.texts.index(text) + 1
        return f'<a href="#method-{i}">[{i}]</a>'

    def html(self) -> str:
        """The numbered explanations, then the glossary and the sources."""
        parts = []
        if self.texts:
            items = "".join(
                f'<li id="method-{i + 1}">{esc(t)}</li>' for i, t in enumerate(self.texts)
            )
            clamp = (
                f"<p>Wherever a confidence interval is published: {esc(CLAMP_NOTE)}.</p>"
                if self.clamped
                else ""
            )
            parts.append(
                '<h2 id="how-uncertainty">How each standard error and interval was obtained</h2>'
                f"<ol>{items}</ol>{clamp}"
            )
        parts.append(glossary_html(self.families))
        return "".join(parts)


def _table_section(
    q: Mapping[str, Any],
    frame: pl.DataFrame | None,
    notes: Footnotes,
    prefix: str,
    units: Mapping[str, str],
) -> str:
    name = q["name"]
    parts = [f'<h3 id="{prefix}table-{slug(name)}">Table {user_text(name)}</h3>']
    by = q["by"] if isinstance(q["by"], str) else (", ".join(q["by"]) or "(one total cell)")
    cells = "1 cell" if q["cells"] == 1 else f"{num(q['cells'])} cells"
    if q.get("published") is False:  # publish = false
        parts.append(
            f"<p>{cells} grouped by <b>{user_text(by)}</b>, mechanism "
            f"<code>{esc(q['mechanism'])}</code>: <b>not written</b> (publish = false). Its "
            "answers gave the bounds of the pnc mechanism and exist in no file; its privacy "
            "cost is charged like any other table's.</p>"
        )
        return "".join(parts)
    parts.append(
        f"<p>{cells} grouped by <b>{user_text(by)}</b>, mechanism "
        f"<code>{esc(q['mechanism'])}</code>, file <code>{user_text(q['file'])}</code>.</p>"
    )
    grouped: dict[str, list[str]] = {}
    for stat, how in (q.get("uncertainty") or {}).items():
        text, clamped = _split_method(how)
        notes.clamped |= clamped
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
        said = "; ".join(plain_text(n, units) for n in q["notes"])
        parts.append(f'<p class="muted">Notes: {esc(said)}.</p>')
    if frame is None:
        return "".join(parts)
    headers, rows = uncertainty_summary(frame, units)
    if rows and all(r[3] == 0 and r[5] == 0 for r in rows):
        totals = ", ".join(amount(r[-1], r[1], plain=f"{r[0]} {num(r[-1])}") for r in rows)
        parts.append(
            '<p class="muted">No standard error or confidence interval is published '
            "for this table (see the method above), so there is no uncertainty to "
            f"summarise or chart. Published total: {esc(totals)}.</p>"
        )
    elif rows:
        parts.append(table(headers, rows, left=2))
        parts.append(uncertainty_charts(name, frame, units))
    parts.append(f"<h4>{_rows_heading(frame.height)}</h4>")
    parts.append(_units_line(statistics_of(frame), units))
    parts.append(preview(frame))
    return "".join(parts)


# --------------------------------------------------------------------------------------
# The summary at the top
# --------------------------------------------------------------------------------------

_DEFINITIONS = {
    "gedp": "μ-Gaussian Establishment Differential Privacy (μ-GEDP)",
    "eree": "strong ER-EE privacy (employer–employee privacy)",
    "eree-weak": "weak ER-EE privacy (employer–employee privacy)",
    "blowfish": "Blowfish privacy (a policy-graph variant of ER-EE)",
    "edge-dp": "edge differential privacy (protects each job)",
    "node-dp": "node differential privacy (protects each employer with all its jobs)",
    "none": "none: input noise infusion, no formal privacy guarantee",
}


def _definition_words(priv: Mapping[str, Any]) -> str:
    d = str(priv.get("definition"))
    return plain_text(priv.get("guarantee") or _DEFINITIONS.get(d, d))


def _budget_words(manifest: Mapping[str, Any]) -> str:
    led = manifest.get("ledger")
    if not led:
        return (
            "Not charged to a budget ledger: no lifetime budget counts this release, so "
            "nothing here shows what earlier releases of these data spent."
        )
    lb = led.get("lifetime_budget") or {}
    if not lb:
        return f"Charged to the budget ledger (dataset {user_text(led.get('dataset'))})."
    sym = {"epsilon": "ε", "delta": "δ", "mu": "μ"}
    parts = []
    for k in ("epsilon", "delta", "mu"):
        if (lb.get("budget") or {}).get(k) is None:
            continue

        def v(stage: str, key: str = k) -> str:
            return num((lb.get(stage) or {}).get(key))

        parts.append(f"{sym[k]}: lifetime budget {v('budget')}, spent before {v('spent_before')}, "
                     f"this release {v('this_release')}, remaining {v('remaining')}")  # fmt: skip
    ds = lb.get("dataset") or led.get("dataset")
    return (
        f"Charged to the budget ledger of dataset {user_text(ds)}, whose releases share one "
        f"lifetime budget — {esc('; '.join(parts))}."
    )


def _accuracy_words(
    manifest: Mapping[str, Any], frames: Mapping[str, pl.DataFrame], units: Mapping[str, str]
) -> list[str]:
    """Per table and statistic (never pooled across tables): the accuracy it states.

    From the manifest's ``accuracy`` (:func:`eree.release.accuracy.published_accuracy`:
    published values and the mechanisms' error laws); ``eree audit claims`` checks each
    figure against realised errors. Tables without a stated accuracy are named.
    """
    stated = {(a["query"], a["statistic"]): a for a in manifest.get("accuracy") or []}
    out = []
    for q in manifest["queries"]:
        frame = frames.get(q["name"])
        if frame is None:
            continue
        for s in statistics_of(frame) or ([] if "jobs" not in frame.columns else ["jobs"]):
            unit = unit_of(s, units)
            name = user_text(q["name"]) + ("" if s == "jobs" else f", {user_text(s)}")
            a = stated.get((q["name"], s))
            if a is None or a.get("median_relative_error") is None:
                out.append(
                    f"<b>{name}</b> ({esc(unit)}): its accuracy cannot be stated (how much "
                    "noise it carries depends on confidential values); see the warnings."
                )
                continue
            cells = f"{num(a['cells'])} cell{'s' if a['cells'] != 1 else ''}"
            med = esc(amount(a["median_cell"], unit, plain=num(a["median_cell"], 3)))
            text = (
                f"<b>{name}</b> ({esc(unit)}): of {cells} (median published value {med}), "
                f"half are expected within ±{percent(a['median_relative_error'])} of their "
                "true value"
            )
            if a.get("share_within_10") is not None:
                text += (
                    f" and {percent(a['share_within_10'], share=True)} within ±{GOOD_RELATIVE:.0%}"
                )
            if a.get("interval") is not None:
                text += f"; each cell has a published {a['interval']:.0%} interval"
            out.append(text + ".")
    return out


def summary_html(
    manifest: Mapping[str, Any],
    frames: Mapping[str, pl.DataFrame],
    *,
    heading: str = "h2",
    prefix: str = "",
) -> str:
    """The plain-language summary: what was protected, what it spent, how accurate."""
    units = units_of(manifest)
    priv = manifest["privacy"]
    tot = priv["total"]
    queries = manifest["queries"]
    cells = sum(int(q["cells"]) for q in queries)
    stats = list(dict.fromkeys(s for f in frames.values() for s in statistics_of(f)))
    said = ", ".join(f"{user_text(s)} ({esc(unit_of(s, units))})" for s in stats) or "—"
    name = user_text(manifest["dataset"]["name"])
    tables = f"{len(queries)} table{'s' if len(queries) != 1 else ''} ({num(cells)} cells)"
    if _is_gedp(manifest):
        micro = " and synthetic establishment microdata" if manifest.get("microdata") else ""
        what = (
            f"Sums of {said} over establishments of dataset {name}: {tables}{micro}. Each "
            "establishment's confidential values are hidden within an uncertainty interval "
            "around them; its existence and public attributes (place, industry, ownership) "
            "are public."
        )
        spent = f"μ = {num(tot['mu'])} in total: {esc(meaning_long(tot))}."
    else:
        alpha = priv.get("alpha")
        size = (
            f" and each employer's size within a factor 1+α = {num(1 + float(alpha))}"
            if alpha is not None
            else ""
        )
        what = (
            f"Job counts (in jobs) of dataset {name}: {tables}. Each worker's presence, "
            f"absence and attributes{size} are protected; that an employer exists, and its "
            "place and industry, are public." + jobs_words(manifest)
        )
        keys = [(k, s) for k, s in (("epsilon", "ε"), ("delta", "δ")) if tot.get(k) is not None]
        spent = (
            ", ".join(f"{s} = {num(tot[k])}" for k, s in keys) + " in total: "
            + esc(meaning_long(tot)) + "."
        ) if keys else "no formal privacy guarantee."  # fmt: skip
    n = len(manifest.get("warnings") or [])
    warn = (
        f'<a href="#{prefix}warnings">{n} warning{"s" if n != 1 else ""}</a>, each with what '
        "to change and what the change would spend."
        if n
        else "No warnings."
    )
    items = [
        f"<b>Protected:</b> {what} Definition: {esc(_definition_words(priv))}.",
        f"<b>Privacy spent:</b> {spent} {_budget_words(manifest)}",
        "<b>Accuracy:</b> " + (" ".join(_accuracy_words(manifest, frames, units)) or "—"),
        f"<b>Warnings:</b> {warn}",
    ]
    if identity_words(queries):  # values per establishment: said plainly, second
        items.insert(1, identity_words(queries))
    if (manifest.get("random") or {}).get("mode") == "seeded":
        items.append("<b>NOT FOR PUBLICATION:</b> seeded randomness (see the banner).")
    unknown = [s for s in stats if unit_of(s, units) == UNKNOWN]
    if unknown:
        items.append(
            f"<b>Units:</b> the unit of {esc(', '.join(unknown))} is not stated; give it in "
            "the spec's [data].units so that this report can show it."
        )
    hid = f' id="{prefix}summary"'
    return (
        f"<{heading}{hid}>In brief</{heading}>"
        f'<div class="info summary">{bullets(items, raw=True)}'
        f'<p class="muted">Symbols are explained under <a href="#glossary">Terms used on '
        "this page</a>.</p></div>"
    )


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
        "grid (the grids are listed with each query's parameters in the manifest)"
    )
    return esc(s)


def _privacy_words(manifest: Mapping[str, Any]) -> str:
    tot = manifest["privacy"]["total"]
    if tot.get("mu") is not None:
        mu = float(tot["mu"])
        odds = esc(bayes(epsilon_of_mu(mu)))
        return (
            "<p>What it means: μ bounds the power of any test that tries to tell whether an "
            "establishment's confidential values are x or a value inside x's uncertainty "
            f"interval: at a {FPR:.0%} false-positive rate, its power is at most "
            f"{power_of_mu(mu):.1%}. On the odds scale of ε used by job-count releases, the "
            f"same guarantee means an attacker's odds change by at most {odds} "
            f"(ε = {num(epsilon_of_mu(mu))}), except with probability {num(ODDS_DELTA)}.</p>"
        )
    if tot.get("epsilon") is not None:
        eps, delta = float(tot["epsilon"]), float(tot.get("delta") or 0.0)
        return (
            "<p>What it means: the largest factor by which anything published can change "
            "an attacker's odds about one worker is e^ε; with δ &gt; 0 the bound may fail "
            "with probability δ. On the test scale of μ used by establishment releases: a "
            f"test that raises false alarms {FPR:.0%} of the time has power at most "
            f"{power_of_epsilon(eps, delta):.1%}.</p>"
        )
    return ""


def release_section(
    manifest: Mapping[str, Any],
    tables: Mapping[str, pl.DataFrame],
    *,
    extra: Mapping[str, pl.DataFrame] | None = None,
    notes: Footnotes | None = None,
    prefix: str = "",
    title: str | None = None,
    summary: bool = True,
) -> str:
    """The HTML of one release (several may share a page and its footnotes).

    Args:
        manifest: the release's manifest.
        tables: query name → published table.
        extra: further published files (e.g. ``microdata.parquet``) by name.
        notes: the page's footnotes (explanations said once per page).
        prefix: a prefix of the anchors (several releases on one page).
        title: the section's heading (default: "Release NAME").
        summary: start with the plain-language summary.
    """
    notes = notes if notes is not None else Footnotes()
    notes.families.add("gedp" if _is_gedp(manifest) else "eree")
    units = units_of(manifest)
    ds = manifest["dataset"]
    priv = manifest["privacy"]
    name = esc(title) if title else "Release " + user_text(ds["name"])
    head = f'<h2 id="{prefix}release">{name}</h2>'
    parts = [head, _banner(manifest)]
    if summary:
        parts.append(summary_html(manifest, tables, heading="h3", prefix=prefix))
    parts.append(f'<h3 id="{prefix}about">About this release</h3>')
    cells = sum(int(q["cells"]) for q in manifest["queries"])
    facts = [
        ("dataset", user_text(ds["name"])),
        ("input files", user_text(", ".join(ds.get("files", [])) or "—")),
        (
            "fingerprint (keyed)",
            f"<code>{esc(ds['fingerprint'])}</code> "
            '<span class="muted">(a keyed hash under the ledger\'s secret key: it '
            "identifies the data only to whoever holds the key)</span>"
            if ds.get("fingerprint")
            else 'none <span class="muted">('
            + esc(plain_text(ds.get("fingerprint_note", "")))
            + ")</span>",
        ),
        ("privacy definition", esc(_definition_words(priv))),
    ]
    if priv.get("alpha") is not None:
        facts.append(("α (employer-size protection)", num(priv["alpha"])))
    if priv.get("neighbor"):
        facts.append(("ψ (scale of nearby values)", esc(priv["neighbor"])))
    if priv.get("distance"):
        facts.append((
            "γ per attribute (in ψ of its unit)",
            esc(", ".join(f"{k} = {num(v)} (√ of {unit_of(k, units)})"
                          if priv.get("neighbor") == "sqrt" else f"{k} = {num(v)}"
                          for k, v in priv["distance"].items())),
        ))  # fmt: skip
    rnd = manifest.get("random") or {}
    facts += [
        ("queries / published cells", f"{len(manifest['queries'])} / {num(cells)}"),
        ("randomness", _random_words(rnd)),
        ("created",
         esc(f"{manifest.get('created', '—')} by eree {manifest.get('eree_version', '')}")),
    ]  # fmt: skip
    led = manifest.get("ledger")
    if led:
        where = f"dataset {led.get('dataset')!r}, release {led.get('id')}"
        facts.append(("budget ledger", esc(f"{where}, version {led.get('version')}")))
    parts.append(definitions(facts))

    warns = list(manifest.get("warnings") or [])
    parts.append(
        f'<h3 id="{prefix}warnings">Warnings ({len(warns)})</h3>' + warnings_html(warns, manifest)
    )
    if led and led.get("notes"):
        parts.append(bullets(f"ledger: {plain_text(n)}" for n in led["notes"]))

    headers, rows = _cost_rows(manifest)
    parts.append(f'<h3 id="{prefix}privacy">Privacy spent</h3>' + _privacy_words(manifest))
    parts.append(table(headers, rows, left=3, raw=True, wrap=[len(headers) - 1], full=True))
    if priv.get("notes"):
        parts.append(bullets(plain_text(n, units) for n in priv["notes"]))
    if led and led.get("lifetime_budget"):
        lb = led["lifetime_budget"]
        parts.append(lifetime_budget_html(lb, str(lb.get("dataset") or led.get("dataset"))))
    parts.append(f'<h3 id="{prefix}meaning">What this means</h3>' + _semantics_html(manifest))

    for key in ("postprocess", "microdata"):
        entry = manifest.get(key)
        if isinstance(entry, Mapping) and entry:
            parts.append(f"<h3>{'Post-processing' if key == 'postprocess' else 'Microdata'}</h3>")
            parts.append(_entry_html(key, entry))
    parts.append(tradeoff_html(manifest, prefix))
    parts.append(f'<h3 id="{prefix}tables">Published tables</h3>')
    for q in manifest["queries"]:
        parts.append(_table_section(q, tables.get(q["name"]), notes, prefix, units))
    for rel, frame in (extra or {}).items():
        parts.append(
            f"<h3>{user_text(rel)}</h3><p>{num(frame.height)} rows, columns "
            f"{user_text(', '.join(frame.columns))}.</p>"
        )
        stats = [c for c in frame.columns if c in (units or {}) or unit_of(c, units) != UNKNOWN]
        parts.append(f"<h4>{_rows_heading(frame.height)}</h4>" + _units_line(stats, units))
        parts.append(preview(frame))
    return "".join(parts)


def _banner(manifest: Mapping[str, Any]) -> str:
    rnd = manifest.get("random") or {}
    if rnd.get("mode") != "seeded":
        return ""
    return (
        f'<div class="banner">NOT FOR PUBLICATION — seeded randomness (seed '
        f"{esc(rnd.get('seed'))}): anyone who knows the seed can remove the "
        "noise. For experiments only.</div>"
    )


def _entry_html(key: str, entry: Mapping[str, Any]) -> str:
    """A post-processing or microdata manifest entry, in words.

    The method's formula, the solver, its iterations, residuals and optimality checks stay
    in the manifest; the page says what was built, from what, and whether the fit
    succeeded.
    """
    parts = []
    file = entry.get("file")
    rows = entry.get("rows")
    if key == "microdata":
        parts.append(
            f"<p>{user_text(file or 'microdata')}: {num(rows)} synthetic establishment records "
            "whose confidential columns were fitted so that their sums agree as closely as "
            "possible with the published tables, each published value weighted by its "
            "precision. They are not any establishment's confidential values.</p>"
        )
    else:
        parts.append(
            "<p>The published tables were adjusted to agree with one another as closely as "
            "possible, each published value weighted by its precision.</p>"
        )
    nw = entry.get("never_worse") or {}
    k = "the adjusted tables do not have to add up to these"
    h = "the others were adjusted to add up to them: every table adds up"
    for key, pk, lead in (("kept_own_values", "predicted", k),
                          ("held", "predicted_before_holding", h)):  # fmt: skip
        preds = nw.get(pk) or {}
        if not (isinstance(own := entry.get(key), Mapping) and own):
            continue
        rows = []
        for name in own:
            ratio = (preds.get(name) or {}).get("predicted_ratio")
            why = (
                f"adjusting it was not predicted to make it more accurate (predicted error "
                f"after adjustment: {ratio:.0%} of its own)"
                if isinstance(ratio, int | float)
                else "no other released table to agree with"
            )
            rows.append(f"{user_text(name)}: published as its own values; {esc(why)}")
        parts.append(
            "<p>Tables that were <b>not</b> adjusted, because adjustment could make them less "
            f"accurate (each still a non-negative whole number where asked; {lead}):</p>"
            + bullets(rows, raw=True)
        )
    add = entry.get("additivity")
    if isinstance(add, Mapping) and add.get("pairs"):
        d = add.get("largest_discrepancy")
        parts.append(f"<p>Checked in the published values: every one of the {num(add['pairs'])}"
                     " released pairs of a finer and a coarser table adds up "
                     + ("exactly.</p>" if d == 0 else f"to within {esc(str(d))}.</p>"))  # fmt: skip
    if entry.get("inputs"):
        parts.append(f"<p>Built from: {esc(plain_text(entry['inputs']))}.</p>")
    if "nonnegative" in entry:
        parts.append(
            "<p>Values are constrained to be at least 0.</p>"
            if entry["nonnegative"]
            else "<p>Values are not constrained to be at least 0: a fitted value may be "
            "negative where the tables allow it.</p>"
        )
    attrs = entry.get("attributes")
    if isinstance(attrs, Mapping) and attrs:
        failed = [
            a for a, x in attrs.items() if isinstance(x, Mapping) and x.get("converged") is False
        ]
        parts.append(
            f"<p>The fit did not reach its accuracy target for {user_text(', '.join(failed))}: "
            "those values may disagree with the tables more than necessary.</p>"
            if failed
            else f"<p>The fit reached its accuracy target for every attribute "
            f"({user_text(', '.join(attrs))}).</p>"
        )
    parts.append(
        '<p class="muted">The exact method and the fit\'s numerical diagnostics are recorded '
        "in the release's manifest.json.</p>"
    )
    return "".join(parts)


def release_report(
    manifest: Mapping[str, Any],
    tables: Sequence[QueryTable] | Mapping[str, pl.DataFrame],
    extra: Mapping[str, pl.DataFrame] | None = None,
) -> str:
    """The self-contained ``report.html`` of one release."""
    frames = tables if isinstance(tables, Mapping) else {t.name: t.table for t in tables}
    notes = Footnotes()
    body = release_section(manifest, frames, extra=extra, notes=notes, summary=False)
    sections = [
        _banner(manifest),
        summary_html(manifest, frames),
        TOC_HERE,
        body.replace(_banner(manifest), "", 1) if _banner(manifest) else body,
        '<h2 id="reading">How to read the tables</h2>' + READING,
        notes.html(),
    ]
    return page(
        f"Release report: {manifest['dataset']['name']}",
        sections,
        subtitle="For the review board: what was published, what privacy it spent and "
        "what that means, every warning with its remedy, and how uncertain the published "
        "values are.",
        toc=True,
    )
