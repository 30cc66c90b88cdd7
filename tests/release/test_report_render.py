"""report.html as a review board sees it: headless Chromium at a desktop and a phone width.

Each page is opened by ``chromium --headless`` with ``--screenshot`` and ``--dump-dom``, at
1280 px and at 420 px. A copy of the page carries a layout probe that writes into the DOM
what the browser laid out: the box of every chart (``<svg>``), every chart that is
clipped (it reaches past the screen's width or past a box that hides or scrolls its
overflow), whether the page itself is wider than the screen, and the page's visible text.
What the page must show, checked on what the browser drew:

* no console message and nothing in the page's own error record (``#page-errors``);
* not blank, and a chart is drawn where the probe says one is;
* no clipped chart and no horizontal overflow of the page, at either width;
* no repository path (``src/``, ``.py``) in the visible text;
* no theorem, definition or section number without its plain-language gloss: each one is
  written "Theorem 7.3: what it says in words" (at least four words after the colon);
* the plain-language summary ("In brief") is the page's first section.

The check is run on pages that break each rule and must reject each. Skipped when Chromium
is not installed (``.ci/run`` installs it).
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

#: a desktop and a phone width (CSS pixels), and the height of the screenshots
DESKTOP, PHONE, HEIGHT = 1280, 420, 10000

#: runs at the end of the report's body and posts what the browser laid out to the frame
LAYOUT_PROBE = """<script>(function(){
var vw=document.documentElement.clientWidth,boxes=[],clipped=[],wide=[];
document.querySelectorAll('svg').forEach(function(s,i){
  var r=s.getBoundingClientRect();
  boxes.push([r.left+window.scrollX,r.top+window.scrollY,r.width,r.height].map(Math.round).join(','));
  var bad=(r.right>vw+1||r.left<-1);
  for(var e=s.parentElement;e&&e!==document.body;e=e.parentElement){
    var st=getComputedStyle(e),c=e.getBoundingClientRect();
    if(st.overflowX!=='visible'&&(r.right>c.right+1||r.left<c.left-1)){bad=true;}
  }
  if(bad){clipped.push(i+':'+Math.round(r.left)+'-'+Math.round(r.right)+'/'+vw);}
});
var sw=document.documentElement.scrollWidth;
if(sw>vw+1){document.querySelectorAll('body *').forEach(function(e){
  if(e.getBoundingClientRect().right>vw+1&&wide.length<3){wide.push(e.tagName+'.'+e.className);}});}
var h=document.querySelector('h2'),err=document.getElementById('page-errors');
parent.postMessage({layout:boxes.join(';'),clipped:clipped.join(';'),
  overflow:sw>vw+1?(sw+'>'+vw+' '+wide.join(' ')):'',firsth2:h?h.id:'',
  text:document.body.innerText,errors:err?err.textContent:null},'*');
})();</script>"""

#: the page the browser opens: the report in a frame of the tested width (a headless
#: window is at least 500 px wide, so a phone's 420 px need a frame), and what it posts
FRAME = """<!doctype html><html><head><meta charset='utf-8'><style>body{margin:0}
iframe{border:0;display:block}</style></head><body>
<iframe src="REPORT" style="width:WIDTHpx;height:HEIGHTpx"></iframe>
<script>window.addEventListener('message',function(m){
for(var k in m.data){var p=document.createElement('pre');p.id='probe-'+k;
p.textContent=m.data[k]===null?'(none)':m.data[k];p.hidden=true;document.body.appendChild(p);}
});</script></body></html>"""

#: a numbered result of a paper: Theorem 7.3, Def 5.6, Lemma 8.2, §5.4.2, Eq. 1, …
NUMBERED = re.compile(
    r"(?:Thm|Theorem|Def|Definition|Lemma|Remark|Corollary|Proposition|Algorithm|Eq\.|"
    r"Equation|§)\s*\d+(?:\.\d+)*"
)
#: its gloss: right after it, a colon and at least four words
GLOSSED = re.compile(r"\s*:\s*(?:[^\s]+\s+){3,}[^\s]+")


def render(page: Path, tmp: Path, width: int, script: str = LAYOUT_PROBE) -> dict:
    """Open ``page`` (with the layout probe, or ``script``, added) in headless Chromium."""
    probe = tmp / f"{page.stem}-{width}-probe.html"
    text = page.read_text(encoding="utf-8")
    probe.write_text(text.replace("</body>", script + "</body>"), encoding="utf-8")
    frame = tmp / f"{page.stem}-{width}-frame.html"
    frame.write_text(FRAME.replace("REPORT", probe.name).replace("WIDTH", str(width))
                     .replace("HEIGHT", str(HEIGHT)), encoding="utf-8")  # fmt: skip
    png = tmp / f"{page.stem}-{width}.png"
    profile = tmp / f"profile-{page.stem}-{width}"
    r = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={profile}", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000",
         f"--window-size={max(width, 500)},{HEIGHT}", f"--screenshot={png}", "--dump-dom",
         frame.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    shutil.rmtree(profile, ignore_errors=True)
    return {"png": png, "dom": r.stdout, "log": r.stderr, "code": r.returncode, "width": width}


def _probe(dom: str, name: str) -> str | None:
    import html

    m = re.search(rf'<pre id="probe-{name}"[^>]*>(.*?)</pre>', dom, re.S)
    return None if m is None else html.unescape(m.group(1))


def problems(result: dict) -> list[str]:
    """What is wrong with a rendered page (empty when it rendered as a report should)."""
    out = []
    if result["code"] != 0 or not result["png"].is_file():
        return [f"chromium failed (exit {result['code']})"]
    console = [ln for ln in result["log"].splitlines() if ":CONSOLE" in ln]
    if console:
        out.append(f"console messages: {console[:3]}")
    errors = _probe(result["dom"], "errors")
    if errors is None or errors == "(none)":
        out.append("no #page-errors record: not an eree page")
    elif errors.strip():
        out.append(f"script errors: {errors.strip()[:200]}")
    img = np.asarray(PIL.open(result["png"]).convert("RGB"), dtype=np.int32)
    ink = img.sum(axis=2) < 3 * 235  # not (near-)white background
    if ink.mean() < 0.02:
        out.append(f"blank page: {ink.mean():.2%} of pixels drawn")
    boxes = _probe(result["dom"], "layout")
    charts = [tuple(map(int, b.split(","))) for b in boxes.split(";")] if boxes else []
    charts = [c for c in charts if c[1] + c[3] <= img.shape[0] and c[2] > 100 and c[3] > 100]
    if not charts:
        out.append("no chart within the screenshot")
    else:
        x, y, w, h = charts[0]
        region = ink[y : y + h, x : x + w]
        if region.mean() < 0.03:
            out.append(f"the chart region is empty: {region.mean():.2%} drawn")
    if clipped := _probe(result["dom"], "clipped"):
        out.append(f"clipped charts at {result['width']} px: {clipped}")
    if over := _probe(result["dom"], "overflow"):
        out.append(f"page wider than the screen at {result['width']} px: {over}")
    text = _probe(result["dom"], "text") or ""
    paths = sorted(set(re.findall(r"\S*(?:src/|\.py\b)\S*", text)))
    if paths:
        out.append(f"repository paths: {paths[:3]}")
    bare = [m.group(0) for m in NUMBERED.finditer(text) if not GLOSSED.match(text, m.end())]
    if bare:
        out.append(f"numbers without their gloss: {bare[:5]}")
    if _probe(result["dom"], "firsth2") != "summary" or "In brief" not in text:
        out.append("the summary is not the first section")
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


def _charged_release(tmp: Path) -> Path:
    """The ER-EE release of test_report, charged to a ledger (secure noise)."""
    from eree.mechanisms.noise import SecureNoise
    from eree.privacy.ledger import Ledger
    from eree.release.protect import protect
    from eree.release.spec import load_spec

    from .conftest import write_small_job_tables
    from .test_report import ERE_SPEC

    write_small_job_tables(tmp / "data")
    (tmp / "spec.toml").write_text(ERE_SPEC)
    led = tmp / "ledger.sqlite"
    Ledger(led).set_budget("small-report", epsilon=20.0, delta=0.5, alpha=0.2)
    protect(load_spec(tmp / "spec.toml"), tmp / "first", SecureNoise(), ledger=led)
    protect(load_spec(tmp / "spec.toml"), tmp / "out", SecureNoise(), ledger=led)
    return tmp / "out"


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    """report.html of an ER-EE release, a GEDP release and a charged ER-EE release."""
    base = tmp_path_factory.mktemp("reports")
    for d in ("e", "g", "c", "shots"):
        (base / d).mkdir()
    _, eout = eree_release(base / "e")
    _, gout, _ = gedp_release(base / "g")
    cout = _charged_release(base / "c")
    out = {}
    for kind, src in (("eree", eout), ("gedp", gout), ("charged", cout)):
        (base / "shots" / kind).mkdir()
        out[kind] = base / "shots" / kind / "report.html"
        shutil.copy(src / "report.html", out[kind])
    return out


@pytest.mark.parametrize("width", [DESKTOP, PHONE])
def test_reports_render_for_the_board_at_desktop_and_phone_width(reports, width):
    for kind, page in reports.items():
        if kind == "charged" and width == DESKTOP:
            continue  # the charged page adds the budget table: its phone layout is the test
        res = render(page, page.parent, width)
        assert problems(res) == [], (kind, width)
    text = _probe(render(reports["charged"], reports["charged"].parent, PHONE)["dom"], "text")
    assert text is not None
    summary = text[text.index("In brief") : text.index("About this release")]
    assert "lifetime budget 20" in summary and "remaining" in summary  # the ledger's budget


def _variant(page: Path, name: str, old: str, new: str, *, regex: bool = False) -> Path:
    text = page.read_text(encoding="utf-8")
    changed = re.sub(old, new, text, count=1, flags=re.S) if regex else text.replace(old, new, 1)
    assert changed != text, name
    out = page.parent.parent / name / "report.html"
    out.parent.mkdir(exist_ok=True)
    out.write_text(changed, encoding="utf-8")
    return out


@pytest.mark.slow
def test_the_check_rejects_pages_that_break_each_rule(reports, tmp_path):
    # a broken page: script error, nothing drawn
    bad = problems(render(_broken(tmp_path), tmp_path, DESKTOP))
    assert any("console" in p for p in bad) and any("script errors" in p for p in bad)
    assert any("blank page" in p for p in bad) and any("no chart" in p for p in bad)
    page = reports["gedp"]
    # a chart of fixed width that does not shrink: clipped at a phone's width only
    wide = _variant(page, "wide", "<svg ", '<svg style="min-width:900px" ')
    assert problems(render(wide, wide.parent, DESKTOP)) == []
    bad = problems(render(wide, wide.parent, PHONE))
    assert any(p.startswith("clipped charts at 420 px") for p in bad), bad
    # a chart inside a box that hides its overflow
    boxed = _variant(page, "boxed", '<figure class="charts">',
                     '<figure class="charts" style="width:200px;overflow:hidden">'
                     "<style>.charts svg{max-width:none}</style>")  # fmt: skip
    assert any(p.startswith("clipped charts") for p in problems(render(boxed, boxed.parent,
                                                                        DESKTOP)))  # fmt: skip
    # a repository path and a bare theorem number in the text
    path = _variant(page, "path", "<h4>", "<p>see src/eree/release/report.py</p><h4>")
    assert any(p.startswith("repository paths") for p in problems(render(path, path.parent,
                                                                          PHONE)))  # fmt: skip
    thm = _variant(page, "thm", "<h4>", "<p>composition (Thm 6.7) applies</p><h4>")
    bad = problems(render(thm, thm.parent, PHONE))
    assert any("numbers without their gloss: ['Thm 6.7']" in p for p in bad), bad
    # the summary moved away from the top
    moved = _variant(page, "moved", r'<h2 id="summary">In brief</h2>.*?this page</a>\.</p></div>',
                     "", regex=True)  # fmt: skip
    assert "the summary is not the first section" in problems(render(moved, moved.parent,
                                                                     DESKTOP))  # fmt: skip
    # and the report with its charts gone
    nochart = _variant(reports["eree"], "nochart", r"<svg.*?</svg>", "", regex=True)
    nochart.write_text(re.sub(r"<svg.*?</svg>", "", nochart.read_text(), flags=re.S))
    assert problems(render(nochart, nochart.parent, DESKTOP)) == ["no chart within the screenshot"]


#: where the browser drew the privacy table's ε / μ column (the first table after the
#: "Privacy spent" heading): its header cell's box against the screen's width
COST_PROBE = """<script>(function(){
var vw=document.documentElement.clientWidth,h=document.getElementById('privacy'),out=[];
var e=h;while(e&&e.tagName!=='TABLE'){e=e.nextElementSibling;
  if(e&&e.tagName!=='TABLE'&&e.querySelector){var t=e.querySelector('table');if(t){e=t;}}}
if(e){e.querySelectorAll('th').forEach(function(c){var x=c.textContent.trim();
  if(x==='ε'||x==='μ'||x==='δ'){var r=c.getBoundingClientRect();
    out.push(x+':'+Math.round(r.left)+'-'+Math.round(r.right)+'/'+vw);}});}
parent.postMessage({cost:out.join(';'),errors:''},'*');
})();</script>"""


@pytest.mark.parametrize("kind", ["eree", "gedp", "charged"])
def test_the_privacy_tables_epsilon_or_mu_column_is_on_screen_at_phone_width(reports, kind):
    """At 420 px a review board sees each query's ε (or μ) without scrolling the table."""
    page = reports[kind]
    cost = _probe(render(page, page.parent, PHONE, COST_PROBE)["dom"], "cost")
    assert cost, "no ε/μ column found in the privacy table"
    for col in cost.split(";"):
        name, box = col.split(":")
        span, vw = box.split("/")
        left, right = (int(v) for v in span.rsplit("-", 1))
        if name in ("ε", "μ"):
            assert left >= 0 and right <= int(vw), (kind, cost)
