"""Self-contained HTML pages: escaping, number formatting, tables, figures, the page shell.

Every report eree writes (a release's ``report.html``, the demo's, the evaluation and
audit reports) is built from these pieces, so that all of them look alike and all are
self-contained: CSS inline, charts as inline SVG, figures as base64 PNG, no external
file and no network access. Wide tables scroll horizontally inside their own box.

This module imports nothing of eree: every layer may use it.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

#: the page's style sheet (inline; the page needs no other file)
CSS = """
:root{--fg:#1d2430;--muted:#5b6472;--line:#d5dae1;--head:#eef1f5;--accent:#2457a6}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
  max-width:1120px;margin:0 auto;padding:1.5em 1.2em 4em;line-height:1.45;font-size:15px}
h1{font-size:1.7em;margin:0.2em 0 0.4em} h2{font-size:1.35em;margin:1.8em 0 0.5em;
  border-bottom:2px solid var(--line);padding-bottom:0.2em}
h3{font-size:1.12em;margin:1.4em 0 0.4em} h4{font-size:1em;margin:1em 0 0.3em}
p,li{max-width:78ch;overflow-wrap:break-word} .muted{color:var(--muted)} code{font-size:0.92em}
.scroll{overflow-x:auto;width:fit-content;max-width:100%;margin:0.5em 0 1.2em;
  border:1px solid var(--line);border-radius:4px} .scroll.full{width:auto}
.scroll.full table{width:100%}
.scroll table{margin:0;border:none}
table{border-collapse:collapse;font-size:0.88em;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid var(--line);padding:4px 10px;text-align:right;white-space:nowrap}
th{background:var(--head);font-weight:600;position:sticky;top:0}
td.l,th.l{text-align:left} td.wrap,th.wrap{white-space:normal;min-width:16em;text-align:left}
tr:nth-child(even) td{background:#fafbfc}
.banner{background:#b00020;color:#fff;font-weight:700;font-size:1.25em;padding:0.7em 1em;
  border-radius:4px;margin:0.8em 0;letter-spacing:0.02em}
.warn{background:#fff4ce;border-left:5px solid #d29b00;padding:0.6em 1em;margin:0.7em 0;
  border-radius:3px}
.warn .remedy{margin-top:0.35em} .ok{background:#e7f5ea;border-left:5px solid #2e7d32;
  padding:0.6em 1em;border-radius:3px}
.info{background:#eef4fb;border-left:5px solid var(--accent);padding:0.6em 1em;margin:0.7em 0;
  border-radius:3px}
.kv{display:grid;grid-template-columns:max-content 1fr;gap:0.25em 1.2em;margin:0.6em 0}
.kv dt{color:var(--muted)} .kv dd{margin:0;overflow-wrap:anywhere}
img{max-width:100%;height:auto} figure{margin:0.6em 0 1.2em}
figcaption{color:var(--muted);font-size:0.88em;max-width:90ch}
nav.toc{background:#f6f8fa;border:1px solid var(--line);padding:0.5em 1em;border-radius:4px}
nav.toc ul{margin:0.2em 0;padding-left:1.2em}
.charts svg{max-width:100%;height:auto} .charts .chart{min-width:0;max-width:100%}
.summary li{margin:0.25em 0} .gloss dt{font-weight:600;color:var(--fg)}
@media (max-width:640px){body{padding:1em 0.7em 3em;font-size:14px}
  .kv{grid-template-columns:1fr;gap:0 0} .kv dd{margin:0 0 0.5em}}
"""

#: records script errors into the page itself, so a headless browser's DOM dump shows them
ERROR_PROBE = (
    "<script>window.addEventListener('error',function(e){"
    "var d=document.getElementById('page-errors');if(d){d.textContent+=String(e.message)+'\\n';}"
    "});</script>"
)


def esc(text: Any) -> str:
    """``text`` as HTML-escaped text."""
    return html.escape(str(text))


def num(v: Any, digits: int = 4) -> str:
    """A number for people: thousands separators, ``digits`` significant digits.

    Integers (and floats that are whole and below 10^15) print in full with separators;
    other floats with ``digits`` significant digits (scientific notation below 10^-4 or
    at 10^15 and above). None and NaN print as an em dash; infinities as ∞.
    """
    if v is None:
        return "—"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if not isinstance(v, float):
        try:
            v = float(v)
        except (TypeError, ValueError):
            return esc(v)
    if math.isnan(v):
        return "—"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    a = abs(v)
    if v == 0:
        return "0"
    if a >= 1e15 or a < 1e-4:
        mant, exp = f"{v:.{max(digits - 1, 0)}e}".split("e")
        if "." in mant:
            mant = mant.rstrip("0").rstrip(".")
        return f"{mant}×10^{int(exp)}".replace("-", "−")
    if a >= 10 ** (digits - 1):  # as many integer digits as significant ones: no decimals
        return f"{v:,.0f}".replace("-", "−")
    decimals = digits - 1 - math.floor(math.log10(a))
    text = f"{v:,.{decimals}f}"
    if "." in text:  # no trailing zeros: 1.000 → 1, 0.005270 → 0.00527
        text = text.rstrip("0").rstrip(".")
    return text.replace("-", "−")


def cell(v: Any, digits: int = 4) -> str:
    """A table cell's text: numbers via :func:`num`, anything else escaped."""
    if v is None or isinstance(v, int | float):
        return num(v, digits)
    return esc(v)


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    left: int = 1,
    digits: int = 4,
    raw: bool = False,
    wrap: Sequence[int] = (),
    full: bool = False,
) -> str:
    """A table in its own horizontally scrolling box.

    Args:
        headers: column titles (escaped).
        rows: cell values; numbers are formatted with :func:`num`.
        left: the first ``left`` columns are left-aligned (keys, names).
        digits: significant digits of floats.
        raw: cells are already HTML (not escaped, not formatted).
        wrap: indices of columns whose text may wrap (long explanations).
        full: the table takes the page's width (its wrapping columns use it).
    """
    wraps = set(wrap)

    def cls(i: int) -> str:
        if i in wraps:
            return ' class="wrap"'
        return ' class="l"' if i < left else ""

    head = "".join(f"<th{cls(i)}>{esc(h)}</th>" for i, h in enumerate(headers))
    body = "".join(
        "<tr>"
        + "".join(f"<td{cls(i)}>{v if raw else cell(v, digits)}</td>" for i, v in enumerate(r))
        + "</tr>"
        for r in rows
    )
    box = "scroll full" if full else "scroll"
    return (
        f'<div class="{box}"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
        "</table></div>"
    )


def bullets(items: Iterable[str], *, raw: bool = False) -> str:
    """An unordered list (items escaped unless ``raw``)."""
    return "<ul>" + "".join(f"<li>{i if raw else esc(i)}</li>" for i in items) + "</ul>"


def definitions(pairs: Iterable[tuple[str, str]]) -> str:
    """A two-column key/value list; values are HTML (escape them first)."""
    return '<dl class="kv">' + "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in pairs) + "</dl>"


def png_img(data: bytes, alt: str) -> str:
    """A PNG embedded in the page (base64 data URI)."""
    b64 = base64.b64encode(data).decode("ascii")
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{b64}">'


def img_file(path: Path, alt: str | None = None) -> str:
    """A PNG file embedded in the page (the page does not refer to the file)."""
    return png_img(Path(path).read_bytes(), alt or path.stem)


#: a section may place the table of contents here (default: under the title)
TOC_HERE = "<!--toc-->"


def page(title: str, sections: Sequence[str], *, subtitle: str = "", toc: bool = False) -> str:
    """A self-contained HTML page of ``sections`` (HTML strings).

    With ``toc``, a table of contents links every ``<h2 id=...>`` of the sections (under
    the title, or where a section wrote :data:`TOC_HERE`). The
    page carries a tiny script that writes any script error into an element with id
    ``page-errors`` (empty on a healthy page), so a headless browser's DOM dump shows it.
    """
    import re

    body = "\n".join(sections)
    nav = ""
    if toc:
        links = re.findall(r'<h2 id="([^"]+)">(.*?)</h2>', body)
        if links:
            nav = (
                '<nav class="toc"><b>Contents</b>'
                + bullets((f'<a href="#{i}">{t}</a>' for i, t in links), raw=True)
                + "</nav>"
            )
    sub = f'<p class="muted">{esc(subtitle)}</p>' if subtitle else ""
    if TOC_HERE in body:  # the contents go where a section asked for them
        body, nav = body.replace(TOC_HERE, nav, 1), ""
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{esc(title)}</title><style>{CSS}</style>{ERROR_PROBE}</head><body>"
        f"<h1>{esc(title)}</h1>{sub}{nav}\n{body}\n"
        '<pre id="page-errors" hidden></pre></body></html>'
    )


def slug(text: str) -> str:
    """An id for an anchor: lower-case letters, digits and dashes."""
    import re

    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


# --------------------------------------------------------------------------------------
# Inline SVG charts (no plotting library: fast enough for every release)
# --------------------------------------------------------------------------------------

#: colours of the series of a chart (colour-blind safe)
PALETTE = ("#2457a6", "#d0641e", "#2e8b57", "#a23b72", "#6b6b6b", "#c9a227")


def _nice_ticks(lo: float, hi: float, log: bool, integer: bool = False) -> list[float]:
    try:
        lo, hi = float(lo), float(hi)
    except OverflowError:  # a whole number beyond a float (an ε of 1e308 times a count)
        return []
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if log:
        a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        step = max(1, math.ceil((b - a) / 6))
        # powers of ten a float holds (a range up to 1e308 has its top tick beyond)
        return [10.0**k for k in range(a, b + 1, step) if -307 <= k <= 308]
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / 5
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=10 * mag)
    if integer:
        step = max(1.0, math.ceil(step))
    first = math.ceil(lo / step) * step
    ticks, t = [], first
    while t <= hi + step * 1e-9:
        ticks.append(0.0 if abs(t) < step * 1e-9 else t)
        t += step
    return ticks


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def tick(v: float) -> str:
    """A compact axis label: 0.01, 1, 100, 10k, 1M, 10⁻⁶."""
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e9 or a < 1e-3:
        k = math.floor(math.log10(a) + 1e-9)
        m = v / 10**k
        head = "" if abs(m - 1) < 1e-9 else f"{m:g}×"
        return head + "10" + str(k).translate(_SUPERSCRIPT)
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if a >= div:
            return f"{v / div:g}{suffix}"
    return f"{v:g}"


class _Axis:
    def __init__(
        self, lo: float, hi: float, log: bool, a: float, b: float, integer: bool = False
    ) -> None:
        if log:
            lo, hi = max(lo, 1e-300), max(hi, 1e-300)
            if hi <= lo:
                lo, hi = lo / 2, hi * 2
            lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
        elif hi <= lo:
            lo, hi = lo - 1, hi + 1
        else:
            pad = 0.04 * (hi - lo)
            lo, hi = lo - pad, hi + pad
        self.lo, self.hi, self.log, self.a, self.b = lo, hi, log, a, b
        self.ticks = [t for t in _nice_ticks(lo, hi, log, integer) if lo <= t <= hi]

    def __call__(self, v: float) -> float:
        if self.log:
            f = (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            f = (v - self.lo) / (self.hi - self.lo)
        return self.a + f * (self.b - self.a)


def _frame(x: _Axis, y: _Axis, w: int, h: int, xlabel: str, ylabel: str, title: str) -> list[str]:
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" role="img" font-family="system-ui,sans-serif" font-size="11">',
        f"<title>{esc(title)}</title>",
        f'<rect x="{x.a}" y="{y.b}" width="{x.b - x.a}" height="{y.a - y.b}" fill="#fff" '
        'stroke="#9aa3ad"/>',
    ]
    for t in x.ticks:
        px = x(t)
        out.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{y.b}" y2="{y.a}" stroke="#eceff3"/>')
        out.append(f'<text x="{px:.1f}" y="{y.a + 14}" text-anchor="middle">{tick(t)}</text>')
    for t in y.ticks:
        py = y(t)
        out.append(f'<line x1="{x.a}" x2="{x.b}" y1="{py:.1f}" y2="{py:.1f}" stroke="#eceff3"/>')
        out.append(f'<text x="{x.a - 5}" y="{py + 4:.1f}" text-anchor="end">{tick(t)}</text>')
    out.append(
        f'<text x="{(x.a + x.b) / 2:.0f}" y="{h - 6}" text-anchor="middle">{esc(xlabel)}</text>'
    )
    out.append(
        f'<text transform="translate(13,{(y.a + y.b) / 2:.0f}) rotate(-90)" '
        f'text-anchor="middle">{esc(ylabel)}</text>'
    )
    out.append(f'<text x="{x.a}" y="13" font-weight="600">{esc(title)}</text>')
    return out


def _legend(labels: Sequence[str], x0: float, y0: float) -> list[str]:
    """One row of legend entries above the plot (never over the data)."""
    out, x = [], x0
    for i, lab in enumerate(labels):
        c = PALETTE[i % len(PALETTE)]
        out.append(
            f'<rect x="{x:.0f}" y="{y0:.0f}" width="10" height="10" fill="{c}"/>'
            f'<text x="{x + 14:.0f}" y="{y0 + 9:.0f}">{esc(lab)}</text>'
        )
        x += 30 + 7.5 * len(lab)
    return out


def svg_histogram(
    series: dict[str, Any],
    *,
    xlabel: str,
    title: str,
    log: bool = True,
    bins: int = 30,
    width: int = 500,
    height: int = 270,
) -> str:
    """Histograms of one or more series on shared bins (outlined steps), as inline SVG.

    With ``log``, bins are equal on a log scale and only positive values are counted;
    with 100 values or more, the smallest 1% are counted in the first bar.
    Returns an empty string when no series has a value to draw.
    """
    import numpy as np

    clean: dict[str, Any] = {}
    for k, vs in series.items():
        a = np.asarray(vs, dtype=np.float64).ravel()
        a = a[np.isfinite(a) & ((a > 0) if log else True)]
        if a.size:
            clean[k] = a
    if not clean:
        return ""
    pooled = np.concatenate(list(clean.values()))
    lo, hi = float(pooled.min()), float(pooled.max())
    if log and pooled.size >= 100:  # a few tiny values would squash the rest: pool them
        lo = float(np.partition(pooled, pooled.size // 100)[pooled.size // 100])
    if log:
        llo, lhi = math.log10(lo), math.log10(hi)
        if lhi - llo < 1e-9:
            llo, lhi = llo - 0.5, lhi + 0.5
        edges = [10 ** (llo + (lhi - llo) * i / bins) for i in range(bins + 1)]
    else:
        if hi - lo < 1e-12:
            lo, hi = lo - 0.5, hi + 0.5
        llo, lhi = lo, hi
        edges = [lo + (hi - lo) * i / bins for i in range(bins + 1)]
    counts: dict[str, list[int]] = {}
    for k, a in clean.items():
        t = (np.log10(a) if log else a) - llo
        idx = np.clip((t / (lhi - llo) * bins).astype(np.int64), 0, bins - 1)
        counts[k] = np.bincount(idx, minlength=bins).tolist()
    top = max(max(c) for c in counts.values())
    x = _Axis(edges[0], edges[-1], log, 58, width - 28)
    y = _Axis(0, top * 1.08, False, height - 36, 40 if len(counts) > 1 else 22, integer=True)
    y.lo = 0.0
    out = _frame(x, y, width, height, xlabel, "cells", title)
    for j, c in enumerate(counts.values()):
        col = PALETTE[j % len(PALETTE)]
        pts = [f"{x(edges[0]):.1f},{y(0):.1f}"]
        for i, n in enumerate(c):
            pts += [f"{x(edges[i]):.1f},{y(n):.1f}", f"{x(edges[i + 1]):.1f},{y(n):.1f}"]
        pts.append(f"{x(edges[-1]):.1f},{y(0):.1f}")
        out.append(
            f'<polyline points="{" ".join(pts)}" fill="{col}" fill-opacity="0.18" '
            f'stroke="{col}" stroke-width="1.4"/>'
        )
    if len(counts) > 1:
        out += _legend(list(counts), x.a, 21)
    out.append("</svg>")
    return "".join(out)


def svg_scatter(
    series: dict[str, tuple[Any, Any]],
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    logx: bool = True,
    logy: bool = True,
    max_points: int = 1500,
    width: int = 500,
    height: int = 270,
) -> str:
    """A scatter plot of one or more (x, y) series, as inline SVG.

    Points that cannot be drawn (non-finite, or ≤ 0 on a log axis) are left out. A series
    longer than ``max_points`` is thinned to evenly spaced points in x order (the caption
    should say so). Returns an empty string when nothing can be drawn.
    """
    import numpy as np

    clean: dict[str, list[tuple[float, float]]] = {}
    for k, (xs, ys) in series.items():
        a = np.asarray(xs, dtype=np.float64).ravel()
        b = np.asarray(ys, dtype=np.float64).ravel()
        ok = np.isfinite(a) & np.isfinite(b)
        if logx:
            ok &= a > 0
        if logy:
            ok &= b > 0
        a, b = a[ok], b[ok]
        if a.size > max_points:  # evenly spaced in x order
            order = np.argsort(a, kind="stable")
            keep = order[(np.arange(max_points) * (a.size / max_points)).astype(np.int64)]
            a, b = a[keep], b[keep]
        if a.size:
            clean[k] = list(zip(a.tolist(), b.tolist(), strict=True))
    if not clean:
        return ""
    xs_all = [p[0] for v in clean.values() for p in v]
    ys_all = [p[1] for v in clean.values() for p in v]
    x = _Axis(min(xs_all), max(xs_all), logx, 58, width - 28)
    y = _Axis(min(ys_all), max(ys_all), logy, height - 36, 40 if len(clean) > 1 else 22)
    out = _frame(x, y, width, height, xlabel, ylabel, title)
    for j, (_, pts) in enumerate(clean.items()):
        col = PALETTE[j % len(PALETTE)]
        out.append(f'<g fill="{col}" fill-opacity="0.55">')
        out += [f'<circle cx="{x(a):.1f}" cy="{y(b):.1f}" r="2.2"/>' for a, b in pts]
        out.append("</g>")
    if len(clean) > 1:
        out += _legend(list(clean), x.a, 21)
    out.append("</svg>")
    return "".join(out)


def charts(*svgs: str, caption: str = "") -> str:
    """Charts side by side (wrapping on narrow screens), with one caption."""
    body = "".join(f'<div class="chart">{s}</div>' for s in svgs if s)
    if not body:
        return ""
    cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    return (
        f'<figure class="charts"><div style="display:flex;flex-wrap:wrap;gap:12px">'
        f"{body}</div>{cap}</figure>"
    )
