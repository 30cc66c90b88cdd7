"""report.html renders in a real browser (headless Chromium): drawn, with charts, no errors.

Each page is opened once by ``chromium --headless`` with ``--screenshot`` and
``--dump-dom``. A copy of the page carries a small probe that writes the position of every
chart (``<svg>``) into the DOM, so the screenshot can be checked where the charts are:

* no console message and nothing in the page's own error record (``#page-errors``);
* the screenshot is not blank: enough pixels differ from the white background;
* a chart is drawn: inside the first chart's box, enough pixels are not background.

The same check is run on a broken page (a script error, no content) and on the report with
its charts removed, and must reject both. Skipped when Chromium is not installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from .test_report import eree_release, gedp_release

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"))
                 if p), None)  # fmt: skip
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed")

PIL = pytest.importorskip("PIL.Image")

WIDTH, HEIGHT = 1200, 5000

LAYOUT_PROBE = (
    "<pre id='probe-layout'></pre><script>(function(){var b=[];"
    "document.querySelectorAll('svg').forEach(function(s){var r=s.getBoundingClientRect();"
    "b.push([r.left+window.scrollX,r.top+window.scrollY,r.width,r.height].map(Math.round)"
    ".join(','));});document.getElementById('probe-layout').textContent=b.join(';');})();"
    "</script>"
)


def render(page: Path, tmp: Path) -> dict:
    """Open ``page`` (with the layout probe added) in headless Chromium."""
    probe = tmp / f"{page.stem}-probe.html"
    text = page.read_text(encoding="utf-8")
    probe.write_text(text.replace("</body>", LAYOUT_PROBE + "</body>"), encoding="utf-8")
    png = tmp / f"{page.stem}.png"
    r = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0", f"--window-size={WIDTH},{HEIGHT}",
         f"--screenshot={png}", "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return {"png": png, "dom": r.stdout, "log": r.stderr, "code": r.returncode}


def problems(result: dict) -> list[str]:
    """What is wrong with a rendered page (empty when it rendered as a report should)."""
    out = []
    if result["code"] != 0 or not result["png"].is_file():
        return [f"chromium failed (exit {result['code']})"]
    console = [ln for ln in result["log"].splitlines() if ":CONSOLE" in ln]
    if console:
        out.append(f"console messages: {console[:3]}")
    m = re.search(r'<pre id="page-errors"[^>]*>(.*?)</pre>', result["dom"], re.S)
    if m is None:
        out.append("no #page-errors record: not an eree page")
    elif m.group(1).strip():
        out.append(f"script errors: {m.group(1).strip()[:200]}")
    img = np.asarray(PIL.open(result["png"]).convert("RGB"), dtype=np.int32)
    ink = img.sum(axis=2) < 3 * 235  # not (near-)white background
    if ink.mean() < 0.02:
        out.append(f"blank page: {ink.mean():.2%} of pixels drawn")
    boxes = re.search(r"<pre id=\"probe-layout\">([^<]*)</pre>", result["dom"])
    charts = [tuple(map(int, b.split(","))) for b in boxes.group(1).split(";")] if (
        boxes and boxes.group(1)) else []  # fmt: skip
    charts = [c for c in charts if c[1] + c[3] <= img.shape[0] and c[2] > 100 and c[3] > 100]
    if not charts:
        out.append("no chart within the screenshot")
    else:
        x, y, w, h = charts[0]
        region = ink[y : y + h, x : x + w]
        if region.mean() < 0.03:
            out.append(f"the chart region is empty: {region.mean():.2%} drawn")
    return out


def _broken(tmp: Path) -> Path:
    p = tmp / "broken.html"
    p.write_text(
        "<!doctype html><html><head><script>window.addEventListener('error',function(e){"
        "document.getElementById('page-errors').textContent+=e.message;});</script></head>"
        '<body><pre id="page-errors" hidden></pre><script>undefinedFunction();</script>'
        "</body></html>",
        encoding="utf-8",
    )
    return p


def test_reports_render_in_chromium_and_broken_pages_do_not(tmp_path):
    (tmp_path / "e").mkdir()
    (tmp_path / "g").mkdir()
    _, eout = eree_release(tmp_path / "e")
    _, gout, _ = gedp_release(tmp_path / "g")
    shots = tmp_path / "shots"
    shots.mkdir()
    (shots / "eree").mkdir()
    (shots / "gedp").mkdir()
    shutil.copy(eout / "report.html", shots / "eree" / "report.html")
    shutil.copy(gout / "report.html", shots / "gedp" / "report.html")
    for kind in ("eree", "gedp"):
        res = render(shots / kind / "report.html", shots / kind)
        assert problems(res) == [], kind
    # the check rejects a broken page (script error, nothing drawn) ...
    bad = problems(render(_broken(tmp_path), tmp_path))
    assert any("console" in p for p in bad) and any("script errors" in p for p in bad)
    assert any("blank page" in p for p in bad) and any("no chart" in p for p in bad)
    # ... and a report whose charts are gone
    page = (eout / "report.html").read_text(encoding="utf-8")
    nochart = tmp_path / "nochart" / "report.html"
    nochart.parent.mkdir()
    nochart.write_text(re.sub(r"<svg.*?</svg>", "", page, flags=re.S), encoding="utf-8")
    bad = problems(render(nochart, nochart.parent))
    assert bad == ["no chart within the screenshot"]
