"""The one registry: read by the spec parser; documented in docs/spec.md; complete."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import eree.mechanisms.adaptive
import eree.mechanisms.baselines
import eree.mechanisms.er_ee
import eree.mechanisms.gedp
import eree.mechanisms.noise_infusion
import eree.mechanisms.workshop
from eree.errors import SpecError
from eree.mechanisms.base import Mechanism
from eree.mechanisms.registry import REGISTRY
from eree.release.spec import parse_spec

DOCS = Path(__file__).resolve().parents[2] / "docs" / "spec.md"


def test_every_concrete_mechanism_class_is_registered_once():
    modules = (
        eree.mechanisms.er_ee,
        eree.mechanisms.baselines,
        eree.mechanisms.workshop,
        eree.mechanisms.noise_infusion,
        eree.mechanisms.gedp,
        eree.mechanisms.adaptive,
    )
    classes = {
        c
        for mod in modules
        for _, c in inspect.getmembers(mod, inspect.isclass)
        if issubclass(c, Mechanism)
        and c.__module__ == mod.__name__
        and not c.__name__.startswith("_")
        and not c.__subclasses__()  # shared bases (CountMechanism, …) are not mechanisms
    }
    registered = [e.cls for e in REGISTRY]
    assert sorted(c.__name__ for c in classes) == sorted(c.__name__ for c in registered)
    assert len(set(registered)) == len(registered)
    assert len({(e.name, e.variant) for e in REGISTRY}) == len(REGISTRY)
    for e in REGISTRY:  # the registry line names the class
        assert (e.cls.name, e.cls.variant) == (e.name, e.variant)


def test_docs_table_matches_the_registry():
    rows = re.findall(
        r"^\| `(\w+)` \|\s*(\w*)\s*\| ([\w\-, ]+) \| ([\w, ]+?)(?: \(.*\))? \|$",
        DOCS.read_text(),
        flags=re.MULTILINE,
    )
    documented = {(n, v): (tuple(d.split(", ")), tuple(s.split(", "))) for n, v, d, s in rows}
    assert documented == {(e.name, e.variant): (e.definitions, e.settings) for e in REGISTRY}


def _spec(query: dict, definition: str = "eree-weak") -> dict:
    return {
        "name": "t",
        "data": {"kind": "eree", "jobs": "jobs.parquet"},
        "privacy": {"definition": definition, "alpha": 0.1},
        "query": [{"name": "q", "by": ["county"], **query}],
    }


@pytest.mark.parametrize(
    ("query", "match"),
    [
        ({"mechanism": "log_laplace", "epsilon": 1.0, "theta": 5},
         "theta does not apply to log_laplace; it applies to: truncated_laplace"),
        ({"mechanism": "smooth_gamma", "epsilon": 1.0, "delta": 0.1},
         "delta does not apply to smooth_gamma"),
        ({"mechanism": "smooth_laplce", "epsilon": 1.0}, "did you mean 'smooth_laplace'"),
        ({"mechanism": "laplace", "epsilon": 1.0, "variant": "workshop"},
         "variant does not apply to laplace"),
        ({"mechanism": "psi", "epsilon": 1.0}, "epsilon does not apply to psi"),
        ({"mechanism": "log_laplace", "epsilon": 1.0, "additive": 2},
         "additive does not apply to log_laplace"),
    ],
)  # fmt: skip
def test_settings_that_do_not_apply_are_refused(query, match):
    with pytest.raises(SpecError, match=match):
        parse_spec(_spec(query), Path("."))
