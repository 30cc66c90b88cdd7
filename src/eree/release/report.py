"""A self-contained HTML report of one or more releases (public content only)."""

from __future__ import annotations

import html
from typing import Any

import polars as pl

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:0.6em 0 1.4em 0;font-size:0.9em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3} td.l,th.l{text-align:left}
.warn{background:#fff3cd;padding:0.5em 1em;border-left:4px solid #e0a800}
.note{color:#555}
"""


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:,.4g}"
    return html.escape(str(v))


def _table(headers: list[str], rows: list[list[Any]], left: int = 1) -> str:
    h = "".join(f'<th class="{"l" if i < left else ""}">{html.escape(c)}</th>'
                for i, c in enumerate(headers))  # fmt: skip
    body = "".join(
        "<tr>"
        + "".join(f'<td class="{"l" if i < left else ""}">{_fmt(v)}</td>' for i, v in enumerate(r))
        + "</tr>"
        for r in rows
    )
    return f"<table><tr>{h}</tr>{body}</table>"


def release_section(manifest: dict[str, Any], tables: dict[str, pl.DataFrame]) -> str:
    """HTML for one release: cost, semantics, and the head of each table."""
    parts = [f"<h2>Release {html.escape(manifest['dataset']['name'])}</h2>"]
    rnd = manifest["random"]
    if rnd["mode"] == "seeded":
        parts.append(
            f'<p class="warn">Seeded randomness (seed {rnd["seed"]}): NOT FOR PUBLICATION.</p>'
        )
    priv = manifest["privacy"]
    tot = priv["total"]
    parts.append(
        f"<p>Definition <b>{html.escape(priv['definition'])}</b>"
        + (f", α = {priv['alpha']}" if priv.get("alpha") is not None else "")
        + f". Total cost: ε = {_fmt(tot['epsilon'])}, δ = {_fmt(tot['delta'])}, "
        f"μ = {_fmt(tot['mu'])}.</p>"
    )
    rows = []
    for q in manifest["queries"]:
        c = q.get("cost") or {}
        rows.append(
            [q["name"], q["mechanism"], q["cells"], c.get("epsilon"), c.get("delta"),
             c.get("mu"), q.get("guarantee", "")]
        )  # fmt: skip
    parts.append(_table(["query", "mechanism", "cells", "ε", "δ", "μ", "guarantee"], rows))
    sem = manifest.get("semantics", {})
    if sem.get("statements"):
        parts.append("<h3>What this guarantees</h3><ul>")
        parts += [f"<li>{html.escape(s)}</li>" for s in sem["statements"]]
        parts.append("</ul>")
    for q in manifest["queries"]:
        df = tables.get(q["name"])
        if df is None:
            continue
        parts.append(f"<h3>{html.escape(q['name'])} (first rows of {q['cells']:,})</h3>")
        head = df.head(8)
        parts.append(_table(head.columns, [list(r) for r in head.iter_rows()],
                            left=len(head.columns)))  # fmt: skip
        for stat, how in q.get("uncertainty", {}).items():
            parts.append(f'<p class="note">{html.escape(stat)}: {html.escape(how)}</p>')
    return "\n".join(parts)


def html_page(title: str, sections: list[str]) -> str:
    """A self-contained HTML page of ``sections``."""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"
        + "\n".join(sections)
        + "</body></html>"
    )
