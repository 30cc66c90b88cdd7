"""The release report's "Budget and accuracy" section: each query's error against its budget.

Drawn from the manifest's ``accuracy_tradeoff``
(:func:`eree.release.preview.accuracy_tradeoffs`):
public parameters and, after the release, each table's median published cell (public once
published) — no confidential value. One chart per query and statistic: the expected
relative error (E|error| / size)
of a cell of the representative size at multiples of the budget the release spent, with
the release's own point drawn apart, and, where the query has a target, whether it is met.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eree.htmlpage import charts, esc, svg_scatter
from eree.release.units import amount, unit_of, units_of

__all__ = ["tradeoff_html"]


def _size_words(e: Mapping[str, Any], units: Mapping[str, str] | None = None) -> str:
    where = " (the table's median published cell)" if e.get("published_median") else ""
    if e.get("x_v") is not None:
        return (f"a cell of {e['at']:,.0f} jobs{where} (largest establishment "
                f"{e['x_v']:,.0f}, the public variance model's)")  # fmt: skip
    if e["statistic"] == "jobs":
        return f"a cell of {e['at']:,.0f} jobs{where}"
    unit = unit_of(str(e["statistic"]), units)
    return f"a group of {esc(amount(float(e['at']), unit))} ({esc(e['statistic'])}){where}"


def tradeoff_html(manifest: Mapping[str, Any], prefix: str = "") -> str:
    """The section, or "" when the manifest has no trade-off (e.g. noise infusion only)."""
    entries = manifest.get("accuracy_tradeoff") or []
    if not entries:
        return ""
    units = units_of(manifest)
    parts = [
        f'<h3 id="{prefix}tradeoff">Budget and accuracy</h3>',
        "<p>For each table: how the expected error of its median published cell "
        "falls as the privacy budget grows, at the budget this release spent and at "
        "multiples of it (public parameters and published values only). A point further "
        "right costs more privacy. <code>eree plan</code> chooses budgets from accuracy "
        "targets.</p>",
    ]
    svgs = []
    lines = []
    for e in entries:
        sym = "ε" if e["parameter"] == "epsilon" else "μ"
        pts = e["points"]
        here = [(x, y) for x, y in pts if abs(x - e["value"]) <= 1e-12 * max(1.0, e["value"])]
        other = [(x, y) for x, y in pts if (x, y) not in here]
        name = f"{e['query']}" + ("" if e["statistic"] == "jobs" else f": {e['statistic']}")
        svgs.append(svg_scatter(
            {"other budgets": ([p[0] for p in other], [p[1] for p in other]),
             "this release": ([p[0] for p in here], [p[1] for p in here])},
            xlabel=f"{sym} of the query (log scale)",
            ylabel="E|error| / size (log scale)",
            title=name, width=360, height=230,
        ))  # fmt: skip
        t = e.get("target")
        words = f"{esc(name)}: {_size_words(e, units)}; {sym} = {e['value']:g}"
        if here:
            words += f", expected relative error {100 * here[0][1]:.3g}%"
        if t is not None:
            verdict = "met" if t["met"] else "<b>not met</b>"
            words += f"; target {esc(t['words'])}: {verdict}"
        lines.append(f"<li>{words}</li>")
    parts.append(charts(*svgs, caption="Expected relative error against budget, per table."))
    parts.append(f"<ul>{''.join(lines)}</ul>")
    return "".join(parts)
