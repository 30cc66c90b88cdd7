"""The release's report.html: what a review board reads, from public information only.

Expectations come from the papers' formulas computed here by hand (sequential composition
of ε and δ for ER-EE, μ_total = √Σμ² and the power bound Φ(Φ⁻¹(x)+μ) for GEDP, Smooth
Laplace's δ_min = exp(−ε/(2 ln(1+α)))), never from the code under test.
"""

from __future__ import annotations

import copy
import html
import itertools
import json
import math
import re
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import polars as pl
import pytest

from eree.data.job_tables import load_job_tables
from eree.engine.polars.engine import PolarsEngine
from eree.mechanisms.noise import SeededNoise
from eree.release.build import split_by
from eree.release.protect import protect
from eree.release.spec import load_spec, parse_spec

from .conftest import write_small_job_tables
from .test_gedp import paper_spec, write_small

#: α = 0.2 makes Smooth Laplace's δ_min at ε = 1 larger than 1/40 (40 establishments)
ERE_SPEC = """
name = "small-report"
[data]
kind = "eree"
workplace = "data/workplace.parquet"
worker = "data/worker.parquet"
job = "data/job.parquet"
[privacy]
definition = "eree-weak"
alpha = 0.2
[[query]]
name = "county_industry"
by = ["county", "naics_sector"]
mechanism = "smooth_laplace"
epsilon = 1.0
[[query]]
name = "tract_industry"
by = ["tract", "naics_sector"]
mechanism = "log_laplace"
epsilon = 1.0
[[query]]
name = "county_sex"
by = ["county", "sex"]
mechanism = "smooth_gamma"
epsilon = 2.0
"""

N_ESTABLISHMENTS = 40  # write_small_job_tables's public frame


def eree_release(tmp_path: Path, seed: int = 5) -> tuple[Any, Path]:
    write_small_job_tables(tmp_path / "data")
    spec = tmp_path / "spec.toml"
    spec.write_text(ERE_SPEC)
    plan = load_spec(spec)
    out = tmp_path / "out"
    protect(plan, out, SeededNoise(seed))
    return plan, out


def gedp_release(tmp_path: Path, seed: int = 6) -> tuple[Any, Path, pl.DataFrame]:
    """The Table 7 structure on 300 establishments, with microdata; one planted wage."""
    path = write_small(tmp_path / "e.csv", n=300)
    df = pl.read_csv(path, schema_overrides={"cnty": pl.Utf8, "naics": pl.Utf8, "own": pl.Utf8})
    wage = df["wage"].to_list()
    wage[7] = 987_654.3  # a distinctive confidential value
    df = df.with_columns(pl.Series("wage", wage))
    df.write_csv(path)
    raw = paper_spec(str(path), wages=True)
    raw["postprocess"] = {"microdata": True}
    plan = parse_spec(copy.deepcopy(raw), path.parent)
    out = tmp_path / "gout"
    protect(plan, out, SeededNoise(seed))
    return plan, out, df


# --------------------------------------------------------------------------------------
# A leak scanner for formatted text: numbers with thousands separators, x10^k notation
# --------------------------------------------------------------------------------------

_NUMBER = re.compile(r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?:×10\^([−-]?\d+))?")


def report_numbers(text: str) -> list[tuple[float, float]]:
    """Every number of a page's visible text, with the half-unit of its last digit.

    ``1,103`` → (1103, 0.5); ``2.054`` → (2.054, 0.0005); ``9.877×10^5`` → (987700, 50).
    """
    # chart axes carry round tick labels (1, 10, 100, 1k), not data: left out
    text = re.sub(r"<svg.*?</svg>", " ", text, flags=re.S)
    text = re.sub(r"<[^>]+>", " ", text)  # markup (attributes, data URIs) is not text
    text = html.unescape(text)
    text = re.sub(r"\b[0-9a-f]{64}\b", " ", text)  # the keyed fingerprint
    out = []
    for m in _NUMBER.finditer(text):
        mant, exp = m.group(1).replace(",", ""), m.group(2)
        decimals = len(mant.split(".")[1]) if "." in mant else 0
        scale = 10.0 ** (int(exp.replace("−", "-")) if exp else 0)
        out.append((float(mant) * scale, 0.5 * 10.0**-decimals * scale))
    return out


def leaked_in_report(page: Path, secret: list[float]) -> list[float]:
    """Secret values (> 100) that a number of the page equals at its printed precision."""
    nums = report_numbers(page.read_text(encoding="utf-8"))
    return sorted(
        {s for s in secret if s > 100 for v, half in nums if abs(v - s) <= half and v > 100}
    )


def page_text(page: str) -> str:
    """A page's text: markup out (``<bdi>`` isolates a name, it adds no space)."""
    return html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"</?bdi>", "", page)))


def test_scanner_reads_formatted_numbers():
    got = report_numbers("<td>1,103</td> μ = 2.054 and 9.877×10^5 <b>42</b>")
    want = [(1103.0, 0.5), (2.054, 0.0005), (987700.0, 50.0), (42.0, 0.5)]
    assert len(got) == len(want)
    for (v, h), (wv, wh) in zip(got, want, strict=True):
        assert v == pytest.approx(wv) and h == pytest.approx(wh)


# --------------------------------------------------------------------------------------
# ER-EE
# --------------------------------------------------------------------------------------


def _eree_secrets(plan: Any) -> list[float]:
    """True counts and x_v of every cell of every query (confidential)."""
    data = load_job_tables(plan.data)
    eng = PolarsEngine()
    vals: set[float] = set()
    for q in plan.queries:
        wp, wk = split_by(q, plan.data)
        st = eng.cell_statistics(data, wp, wk)
        vals.update(float(v) for v in st["count"].to_numpy())
        vals.update(float(v) for v in st["x_v"].to_numpy())
    return sorted(vals)


def test_eree_report_states_cost_warnings_and_remedies(tmp_path):
    _plan, out = eree_release(tmp_path)
    page = (out / "report.html").read_text(encoding="utf-8")
    text = page_text(page)
    manifest = json.loads((out / "manifest.json").read_text())
    # sequential composition (Haney et al. Thm 7.3): ε adds; δ is Smooth Laplace's δ_min
    alpha = 0.2
    dmin = math.exp(-1.0 / (2 * math.log1p(alpha)))
    assert dmin >= 1 / N_ESTABLISHMENTS  # the plan is built to trigger the warning
    assert manifest["privacy"]["total"]["epsilon"] == pytest.approx(4.0)
    # the summary at the top states the total spent, on both scales: odds and test power
    summary = text[text.index("In brief") : text.index("About this release")]
    assert f"ε = 4, δ = {dmin:.4g} in total" in summary  # δ = 0.06442
    # (ε, δ) as a test at 5% false positives: power ≤ 1 − e^−ε (0.95 − δ)
    assert f"power ≤ {1 - math.exp(-4) * (0.95 - dmin):.1%} at 5% false positives" in summary
    assert "Not charged to a budget ledger" in summary
    # per query, the Bayes-factor bound e^ε in words
    assert "e^1 = 2.718" in text and "e^2 = 7.389" in text
    assert "NOT FOR PUBLICATION" in text
    # the δ warning: in the manifest's list, with a remedy, and every warning on the page
    warns = manifest["warnings"]
    delta = [w for w in warns if w["code"].startswith("delta")]
    assert [w["query"] for w in delta] == ["county_industry"]
    w = delta[0]
    assert set(w) >= {"code", "query", "message", "remedy"}
    assert f"{1 / N_ESTABLISHMENTS:.3g}" in w["message"]
    # the remedy asks for a per-cell δ of 0.1/N; δ_min ≤ 0.1/N needs ε ≥ 2 ln(1+α) ln(10 N)
    assert "delta to 0.0025" in w["remedy"]
    need_eps = 2 * math.log1p(alpha) * math.log(10 * N_ESTABLISHMENTS)  # 2.1847
    m = re.search(r"epsilon >= ([0-9.]+)", w["remedy"])
    assert m and abs(float(m.group(1)) - need_eps) <= 0.01 * need_eps, w["remedy"]
    assert "log_laplace" in w["remedy"]
    for warning in warns:  # the message without its paper citation (kept in the manifest)
        message = re.sub(r" \(Haney et al\. §9; (query '[^']+')\)", r" (\1)", warning["message"])
        assert warning["remedy"] in text and message in text
        assert "§" not in text
    # each remedy states the release's total after it: ε = 4 − 1 + 1.08 for tract_industry
    assert "would spend ε = 4.08, δ = 0.06442 in total (now ε = 4, δ = 0.06442)" in text
    # the δ remedy: δ 0.0025 at ε ≥ 2.19 for county_industry: ε = 4 − 1 + 2.19
    assert "would spend ε = 5.19, δ = 0.0025 in total" in text
    assert f"Warnings ({len(warns)})" in text
    # not also repeated as a note
    assert not any("warning" in n for q in manifest["queries"] for n in q["notes"])
    # a chart for the table with published CIs; a plain statement for the others; and one
    # budget-against-error chart per query (public parameters only), the release's ε marked
    trade = manifest["accuracy_tradeoff"]
    assert [t["query"] for t in trade] == [q["name"] for q in manifest["queries"]]
    for t in trade:
        assert any(abs(x - t["value"]) < 1e-12 for x, _ in t["points"])
        errs = [y for _, y in sorted(t["points"])]
        assert all(a > b for a, b in itertools.pairwise(errs)), t  # more budget, less error
    assert "Budget and accuracy" in text
    assert page.count("<svg") == 2 + len(trade)
    assert text.count("no uncertainty to summarise or chart") == 2
    # no raw dataframe printout, explanations said once
    assert "shape: (" not in text and "dtype" not in text
    assert text.count("Each published table has the query's key columns") == 1


def test_eree_report_leaks_no_true_value(tmp_path):
    plan, out = eree_release(tmp_path)
    secret = _eree_secrets(plan)
    assert 1103.0 in secret  # the distinctive establishment (x_v and its cell's count)
    assert leaked_in_report(out / "report.html", secret) == []


def test_report_leak_scanner_fires_on_a_planted_true_value(tmp_path):
    # power of the check above: the same page with the true size printed as the report would
    plan, out = eree_release(tmp_path)
    secret = _eree_secrets(plan)
    planted = tmp_path / "planted.html"
    page = (out / "report.html").read_text(encoding="utf-8")
    planted.write_text(page.replace("</body>", "<p>x_v: 1,103</p></body>"), encoding="utf-8")
    assert leaked_in_report(planted, secret) == [1103.0]


def test_delta_warning_with_an_explicit_delta_asks_for_a_smaller_one(tmp_path):
    write_small_job_tables(tmp_path / "data")
    spec = tmp_path / "spec.toml"
    spec.write_text(ERE_SPEC.replace("alpha = 0.2", "alpha = 0.1").replace(
        'mechanism = "smooth_laplace"\nepsilon = 1.0',
        'mechanism = "smooth_laplace"\nepsilon = 1.0\ndelta = 0.05'))  # fmt: skip
    protect(load_spec(spec), tmp_path / "out", SeededNoise(1))
    warns = json.loads((tmp_path / "out" / "manifest.json").read_text())["warnings"]
    (w,) = [w for w in warns if w["code"].startswith("delta")]
    assert w["query"] == "county_industry"
    # a per-cell δ of 0.1/40 = 0.0025 needs ε ≥ 2 ln(1.1) ln(400) = 1.142 (Algorithm 3)
    assert "delta to 0.0025" in w["remedy"]
    need = 2 * math.log1p(0.1) * math.log(10 * N_ESTABLISHMENTS)
    m = re.search(r"epsilon >= ([0-9.]+)", w["remedy"])
    assert m and abs(float(m.group(1)) - need) <= 0.01 * need, w["remedy"]
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert w["remedy"] in html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_no_delta_warning_when_delta_is_small_enough(tmp_path):
    # α = 0.1: δ_min = 0.00527 < 1/40, the default δ draws no δ warning
    write_small_job_tables(tmp_path / "data")
    spec = tmp_path / "spec.toml"
    spec.write_text(ERE_SPEC.replace("alpha = 0.2", "alpha = 0.1"))
    protect(load_spec(spec), tmp_path / "out", SeededNoise(1))
    m = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert not [w for w in m["warnings"] if w["code"].startswith("delta")]
    page = (tmp_path / "out" / "report.html").read_text()
    assert f"Warnings ({len(m['warnings'])})" in page


def test_a_release_without_warnings_says_so(tmp_path):
    from eree.release.report import release_report

    _plan, out = eree_release(tmp_path)
    m = json.loads((out / "manifest.json").read_text())
    m["warnings"] = []
    tables = {q["name"]: pl.read_parquet(out / q["file"]) for q in m["queries"]}
    page = release_report(m, tables)
    assert "No warnings." in page and "Warnings (0)" in page


def test_cli_prints_the_warning_and_its_remedy(tmp_path):
    from typer.testing import CliRunner

    from eree.cli import app

    write_small_job_tables(tmp_path / "data")
    spec = tmp_path / "spec.toml"
    spec.write_text(ERE_SPEC)
    r = CliRunner().invoke(app, ["protect", str(spec), "--out", str(tmp_path / "o"),
                                 "--seed", "1"], env={"COLUMNS": "400"})  # fmt: skip
    assert r.exit_code == 0, r.output
    flat = re.sub(r"\s+", "", r.output)  # the console may wrap lines anywhere
    assert "per-celldelta" in flat and "delta-per-cell" in flat
    assert "report.html" in flat


# --------------------------------------------------------------------------------------
# GEDP
# --------------------------------------------------------------------------------------


def test_gedp_report_states_mu_power_tables_and_microdata(tmp_path):
    _plan, out, _ = gedp_release(tmp_path)
    page = (out / "report.html").read_text(encoding="utf-8")
    text = page_text(page)
    # Webb et al. Thm 5.7: μ_total = √Σμ² over every (query, attribute) of Table 7
    mus = [0.7] * 3 + [0.15] + [0.2] * 3 + [0.10] + ([0.6] * 3 + [0.15]) * 2 + [0.7] * 3 + [0.15]
    mu = math.sqrt(sum(m * m for m in mus))
    assert mu == pytest.approx(2.3065, abs=1e-4)
    assert f"μ = {mu:.4g}" in text
    nd = NormalDist()
    power = nd.cdf(nd.inv_cdf(0.05) + mu)  # Φ(Φ⁻¹(0.05) + μ)
    assert f"power ≤ {power:.1%} at 5% false positives" in text
    # per query: identity 0.7×3, 0.15 → μ = √(3·0.49 + 0.0225)
    mu_id = math.sqrt(3 * 0.49 + 0.0225)
    assert f"power ≤ {nd.cdf(nd.inv_cdf(0.05) + mu_id):.1%} at 5% false positives" in text
    # Def 5.2 interval, sqrt, γ = 0.5 at x = 36: [30.25, 42.25]
    assert "[30.25, 42.25]" in text
    # every table has its section with a summary and (≥ 10 cells) charts
    for q in ("identity", "state", "naics5", "county", "county_naics5"):
        assert f"Table {q}" in text
    assert page.count("<svg") >= 4
    assert "microdata.parquet" in text and "Microdata" in text
    assert "DES" + "IGN.md" not in text  # users do not have the design brief
    # units: wages in this data are thousands of dollars; the warning states dollars
    assert "below $1.85 billion (query" in text
    assert "wage (thousands of dollars)" in text and "m3emp (persons)" in text
    # the remedy for the identity query states the new total: μ for wage 0.15 → the μ at
    # which ψ = √'s std √(4xσ² + 2σ⁴), σ = γ/μ, equals x at the $1 million limit (x = 1,000
    # thousands): σ² = (−2x + √(4x² + 2x²))/2, μ = 50/σ = 3.335, stated rounded up, 3.34
    x = 1000.0
    need = 50 / math.sqrt((-2 * x + math.sqrt(6 * x * x)) / 2)
    assert need == pytest.approx(3.335, abs=1e-3)
    new = math.sqrt(mu**2 - 0.15**2 + 3.34**2)
    assert f"would spend μ = {new:.4g} in total (now μ = {mu:.4g})" in text
    # every warning of the manifest is on the page with its remedy: the wage of every
    # query (μ ≤ 0.2 at γ = 50 on √thousands: noise above the value far beyond $1 million),
    # the state query's included
    from eree.release.report import units_of
    from eree.release.report_words import plain_text

    m = json.loads((out / "manifest.json").read_text())
    wage = [w for w in m["warnings"] if w.get("statistic") == "wage"]
    assert sorted(w["query"] for w in wage) == sorted(
        ["identity", "state", "naics5", "county", "county_naics5"])  # fmt: skip
    assert f"Warnings ({len(m['warnings'])})" in text
    warn_text = text[text.index(f"Warnings ({len(m['warnings'])})") :]
    flat = re.sub(r" :", ":", re.sub(r"\s+", " ", warn_text))  # markup left spaces
    for w in m["warnings"]:
        said = plain_text(w["message"], units_of(m))
        assert said in warn_text, said
        assert plain_text(w["remedy"], units_of(m)) in warn_text, w["remedy"]
        if w.get("query"):  # under its own table's name
            assert f"query {w['query']}: {said}" in flat, w["query"]
    # no solver internal, no bare theorem number, no repository path on the page
    for internal in ("kkt_violation", "relative_residual", "eq1", "pcg", "docs/", ".py"):
        assert internal not in text, internal
    assert not re.search(r"(?<!, )(Def|Thm|Lemma|Remark) \d", text)


def test_gedp_report_leaks_no_true_value(tmp_path):
    _plan, out, df = gedp_release(tmp_path)
    big = df.row(7, named=True)
    w = df["wage"]
    # the planted wage and every true sum containing it (all distinctive, > 987,654)
    secret = [
        987_654.3,
        float(w.sum()),
        float(df.filter(pl.col("cnty") == big["cnty"])["wage"].sum()),
    ]
    assert leaked_in_report(out / "report.html", secret) == []
    # power: the same value, formatted as the report formats numbers, is found
    planted = tmp_path / "p.html"
    planted.write_text("<p>987,654.3 and 9.877×10^5</p>", encoding="utf-8")
    assert leaked_in_report(planted, secret) == [987_654.3]


def test_manifest_warnings_are_all_rendered(tmp_path):
    # every warning another step puts into the manifest (e.g. an accuracy preview) shows
    from eree.release.report import release_report

    _plan, out = eree_release(tmp_path)
    m = json.loads((out / "manifest.json").read_text())
    m["warnings"].append({"code": "noise-larger-than-values", "query": None,
                          "message": "noise <b>larger</b> than the values",
                          "remedy": "raise epsilon to 3"})  # fmt: skip
    tables = {q["name"]: pl.read_parquet(out / q["file"]) for q in m["queries"]}
    page = release_report(m, tables)
    assert "noise &lt;b&gt;larger&lt;/b&gt; than the values" in page  # escaped
    assert "raise epsilon to 3" in page and f"Warnings ({len(m['warnings'])})" in page


def test_numbers_are_formatted_for_people():
    from eree.htmlpage import num

    assert num(1234567.891) == "1,234,568"
    assert num(0.005268) == "0.005268"
    assert num(2.0) == "2" and num(12) == "12" and num(None) == "—"
    assert num(1e-7) == "1×10^−7"
    assert num(float("nan")) == "—"
    assert np.isclose(float(num(2.30651).replace(",", "")), 2.307)
