"""The recommended starting releases: no query warning (docs/recommended-releases.md).

The ER-EE spec's total (ε = 13) carries ``guarantee-weak`` and nothing else: at that total
a test at 5% false positives reaches power 1 − e^−13·0.95 > 99%; the GEDP spec's
μ = 2.39 gives Φ(Φ⁻¹(0.05) + 2.39) ≈ 77% and no warning.
"""

from __future__ import annotations

import math
import re

from tests.docs.blocks import REPO, fresh_clone, run_document


def test_recommended_specs_validate_without_query_warnings(tmp_path, shared_data):
    repo = fresh_clone(tmp_path, shared_data)
    doc = (REPO / "docs" / "recommended-releases.md").read_text(encoding="utf-8")
    results = run_document(doc, repo)
    out = "".join(r.stdout + r.stderr for r in results)
    assert out.count("valid: examples/") == 2
    codes = re.findall(r"warning \[([\w-]+)\]", out)
    assert codes == ["guarantee-weak"], codes
    assert "total epsilon = 13," in out and "power up to 100.0%" in out
    assert 1 - math.exp(-13) * 0.95 >= 0.99
    # the remedy: e^ε·0.05 ≤ 0.5 at ε ≤ ln 10 = 2.3026 (δ = 0), rounded down
    assert f"a total epsilon of at most {math.floor(math.log(10) * 100) / 100:g} " in out
