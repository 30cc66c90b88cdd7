"""The recommended starting releases validate without a warning (docs/recommended-releases.md)."""

from __future__ import annotations

from tests.docs.blocks import REPO, fresh_clone, run_document


def test_recommended_specs_validate_without_warnings(tmp_path, shared_data):
    repo = fresh_clone(tmp_path, shared_data)
    doc = (REPO / "docs" / "recommended-releases.md").read_text(encoding="utf-8")
    results = run_document(doc, repo)
    out = "".join(r.stdout + r.stderr for r in results)
    assert out.count("valid: examples/") == 2
    assert "warning" not in out.lower().replace("no warnings", "")
