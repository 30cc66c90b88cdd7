"""`eree demo`'s page: both releases, their warnings with remedies, accuracy labelled synthetic.

Expected numbers are computed here from the demo's spec by the papers' formulas.
"""

from __future__ import annotations

import html
import json
import math
import re
from statistics import NormalDist

import polars as pl
from rich.console import Console

from eree.cli.demo import run_demo


def test_demo_report(tmp_path):
    summary = run_demo(tmp_path / "demo", seed=11, console=Console(quiet=True))
    page = summary["outputs"]["report"].read_text(encoding="utf-8")
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    # ER-EE: sequential composition, ε = 2 + 2 + 2 + 6
    assert f"ε={2 + 2 + 2 + 6}," in text  # the ER-EE guarantee, weak (α=0.1, ε=12, δ=…)
    assert "ER-EE release: job counts" in text and "GEDP release: establishment sums" in text
    # GEDP: μ_total = √Σμ² over the demo's 16 (query, attribute) measurements
    mu = math.sqrt(3 * 0.49 + 0.09 + 3 * 0.04 + 0.04 + 3 * 0.36 + 0.09 + 3 * 0.49 + 0.09)
    assert f"μ = {mu:.4g}" in text  # 2.145
    # no query warning in either release; its one Smooth Laplace query sets δ below 1/N
    # (δ_min(0.1, 2) = 2.8e-5 ≤ 1e-4 < 1/N)
    n = pl.read_parquet(tmp_path / "demo" / "data" / "lodes" / "workplace.parquet").height
    assert math.exp(-2 / (2 * math.log1p(0.1))) <= 1e-4 < 1 / n
    m = json.loads((tmp_path / "demo" / "releases" / "qcew" / "manifest.json").read_text())
    assert m["warnings"] == []  # μ = 2.11: power Φ(Φ⁻¹(0.05) + μ) = 68% < 99%
    assert NormalDist().cdf(NormalDist().inv_cdf(0.05) + mu) < 0.99
    # the ER-EE total ε = 12, δ = 1e-4 is weak: power at 5% false positives
    # min(1, e^ε·0.05 + δ, 1 − e^−ε·(0.95 − δ)) ≥ 99%; the remedy's total keeps it ≤ 50%:
    # e^ε·0.05 + δ ≤ 0.5 at ε ≤ ln(0.4999/0.05) = 2.3025
    m = json.loads((tmp_path / "demo" / "releases" / "lodes" / "manifest.json").read_text())
    (w,) = m["warnings"]
    assert w["code"] == "guarantee-weak" and w["query"] is None
    power = min(1.0, math.exp(12) * 0.05 + 1e-4, 1 - math.exp(-12) * (0.95 - 1e-4))
    assert power >= 0.99 and f"power up to {power:.1%}" in w["message"]
    assert "total epsilon = 12," in w["message"]
    assert f"at most {math.floor(math.log(0.4999 / 0.05) * 100) / 100:g} " in w["remedy"]
    assert text.count("Warnings (0)") == 1 and text.count("Warnings (1)") == 1
    assert w["remedy"].split(";")[0] in text
    # each release folder has its own report, the demo page adds the accuracy, labelled
    for rel in ("lodes", "qcew"):
        assert (tmp_path / "demo" / "releases" / rel / "report.html").is_file()
    assert text.count("Accuracy against the truth (synthetic data only)") == 2
    assert "only possible because these data are synthetic" in text.lower()
    # no raw dataframe printout; explanations said once; both kinds of chart present
    assert "shape: (" not in text and "dtype" not in text and "┌" not in text
    assert text.count("Each published table has the query's key columns") == 1
    # charts for the tables that publish an uncertainty (the GEDP identity and the
    # county x sector group-by; the others are too small or withhold it)
    assert page.count("<svg") >= 4
    assert ": CI half-width" in page and ": relative uncertainty" in page
    assert "NOT FOR PUBLICATION" in text  # seeded
