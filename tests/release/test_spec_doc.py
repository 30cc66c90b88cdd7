"""docs/spec-reference.md is generated from the spec schema, which is what the parser reads."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from eree.errors import SpecError
from eree.release import spec_schema as schema
from eree.release.spec import parse_spec
from eree.release.spec_coarsening import parse_coarsening_spec
from eree.release.spec_doc import reference

DOC = Path(__file__).resolve().parents[2] / "docs" / "spec-reference.md"

EREE = {
    "name": "x",
    "data": {"kind": "eree", "jobs": "jobs.parquet"},
    "privacy": {"definition": "eree-weak", "alpha": 0.1},
    "query": [{"name": "q", "by": ["county"], "mechanism": "log_laplace", "epsilon": 1.0}],
}
ESTAB = {
    "name": "y",
    "data": {"kind": "establishments", "path": "e.csv"},
    "privacy": {"definition": "gedp", "distance": {"m1emp": 0.5}},
    "query": [{"name": "q", "by": ["cnty"], "mechanism": "psi", "mu": {"m1emp": 1.0}}],
}

COARSENING = {
    "name": "z",
    "data": {
        "kind": "establishments",
        "path": "e.csv",
        "public": ["cnty", "own", "naics"],
        "confidential": ["m1emp"],
    },
    "protection": {"mode": "coarsening"},
}


def test_committed_reference_is_the_generated_one():
    assert DOC.read_text(encoding="utf-8") == reference(), (
        "docs/spec-reference.md is stale: run "
        "`python -m eree.release.spec_doc > docs/spec-reference.md`"
    )


def _where(spec: dict, section: schema.Section) -> dict:
    """The dict of ``spec`` that holds ``section``'s keys (created when absent)."""
    name = section.name
    if name == "top level":
        return spec
    if name == "[[query]]":
        return spec["query"][0]
    return spec.setdefault(name.strip("[]"), {})


def _error(spec: dict) -> str:
    try:
        if "protection" in spec:
            parse_coarsening_spec(spec, Path("/nonexistent"))
        else:
            parse_spec(spec, Path("/nonexistent"))
    except SpecError as e:
        return str(e)
    except Exception as e:  # a later check (values, paths) is not the key check
        return f"{type(e).__name__}: {e}"
    return ""


@pytest.mark.parametrize(
    "section", schema.SECTIONS, ids=lambda s: f"{s.name}-{s.family}".replace(" ", "_")
)
def test_every_documented_key_is_accepted_and_no_other(section):
    base = {"establishments": ESTAB, "coarsening": COARSENING}.get(section.family, EREE)
    for key in section.keys:
        spec = copy.deepcopy(base)
        where = _where(spec, section)
        if key.name not in where:
            where[key.name] = "?"  # a wrong value: refused, but not as an unknown key
        assert "unknown key" not in _error(spec), (section.name, key.name)
    spec = copy.deepcopy(base)
    _where(spec, section)["zzz_not_a_key"] = 1
    assert "unknown key 'zzz_not_a_key'" in _error(spec)


def test_defaults_are_the_parsers():
    plan = parse_spec(copy.deepcopy(ESTAB), Path("/nonexistent"))
    assert plan.pnc.zeta == schema.default("[pnc]", "zeta") == 0.01
    assert plan.output.confidence == schema.default("[output]", "confidence") == 0.95
    assert plan.output.csv is schema.default("[output]", "csv") is True
    assert plan.output.max_cells == schema.default("[output]", "max_cells") == 5_000_000
    assert plan.engine.kind == "polars" and plan.spark.cores == 2
    assert plan.spark.driver_memory == "4g" and plan.spark.given == ()
    assert plan.postprocess.microdata_fit == "eq1"
    assert not any(v for k, v in vars(plan.postprocess).items() if k != "microdata_fit")
    assert plan.data.id == schema.default("[data]", "id", "establishments")


def test_the_reference_lists_every_key_and_mechanism():
    text = reference()
    for section in schema.SECTIONS:
        for key in section.keys:
            assert f"| `{key.name}` |" in text
    for name in ("log_laplace", "smooth_laplace", "psi", "pnc", "adaptive", "noise_infusion"):
        assert f"| `{name}` |" in text
    assert "DES" + "IGN" not in text  # users do not have the design brief
