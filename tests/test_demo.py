"""`eree demo`'s page: both releases, their warnings with remedies, accuracy labelled synthetic.

Expected numbers are computed here from the demo's spec by the papers' formulas.
"""

from __future__ import annotations

import html
import json
import math
import re

import polars as pl
from rich.console import Console

from eree.demo import run_demo


def test_demo_report(tmp_path):
    summary = run_demo(tmp_path / "demo", seed=11, console=Console(quiet=True))
    page = summary["outputs"]["report"].read_text(encoding="utf-8")
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    # ER-EE: sequential composition, ε = 1 + 1 + 2 + 6
    assert f"ε={1 + 1 + 2 + 6}," in text  # the ER-EE guarantee, weak (α=0.1, ε=10, δ=…)
    assert "ER-EE release: job counts" in text and "GEDP release: establishment sums" in text
    # GEDP: μ_total = √Σμ² over the demo's 16 (query, attribute) measurements
    mu = math.sqrt(3 * 0.49 + 0.0225 + 3 * 0.04 + 0.01 + 3 * 0.36 + 0.0225 + 3 * 0.49 + 0.0225)
    assert f"μ = {mu:.4g}" in text  # 2.054
    # the two Smooth Laplace queries at default δ: δ_min(0.1, 1) = 0.00527 ≥ 1/N
    n = pl.read_parquet(tmp_path / "demo" / "data" / "lodes" / "workplace.parquet").height
    dmin = math.exp(-1 / (2 * math.log1p(0.1)))
    assert dmin >= 1 / n
    m = json.loads((tmp_path / "demo" / "releases" / "lodes" / "manifest.json").read_text())
    delta = [w for w in m["warnings"] if w["code"].startswith("delta")]
    assert [w["query"] for w in delta] == ["tract_industry_ownership", "county_age_sex"]
    # remedy: per-cell δ = 0.1/N needs ε_cell ≥ 2 ln(1+α) ln(10 N); county_age_sex has d = 6
    need = 2 * math.log1p(0.1) * math.log(10 * n)
    for w, d in zip(delta, (1, 6), strict=True):
        got = re.search(r"epsilon >= ([0-9.]+)", w["remedy"])
        assert got and abs(float(got.group(1)) - d * need) <= 0.01 * d * need, w["remedy"]
    for w in m["warnings"]:
        assert w["remedy"] in text
    # each release folder has its own report, the demo page adds the accuracy, labelled
    for rel in ("lodes", "qcew"):
        assert (tmp_path / "demo" / "releases" / rel / "report.html").is_file()
    assert text.count("Accuracy against the truth (synthetic data only)") == 2
    assert "only possible because these data are synthetic" in text.lower()
    # no raw dataframe printout; explanations said once; both kinds of chart present
    assert "shape: (" not in text and "dtype" not in text and "┌" not in text
    assert text.count("Each published table has the query's key columns") == 1
    assert page.count("<svg") >= 6
    assert "NOT FOR PUBLICATION" in text  # seeded
