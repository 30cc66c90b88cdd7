"""The spec's ``[data.units]`` key: a stated unit wins over the known column names in the
report, and only confidential attributes may be given one."""

from __future__ import annotations

import html
import re

import pytest

from eree.errors import SpecError
from eree.mechanisms.noise import SeededNoise
from eree.release.protect import protect
from eree.release.spec import load_spec

from .test_gedp import write_small

SPEC = """
name = "ri"
[data]
kind = "establishments"
path = "e.csv"
id = "primary_key"
public = ["cnty", "own", "naics"]
confidential = ["m1emp", "m2emp"]
{units}
[privacy]
definition = "gedp"
neighbor = "sqrt"
distance = {{ m1emp = 0.5, m2emp = 0.5 }}
[[query]]
name = "county"
by = ["cnty"]
mechanism = "psi"
mu = {{ m1emp = 1.0, m2emp = 1.0 }}
"""


def _page_text(tmp_path, units: str) -> str:
    tmp_path.mkdir()
    write_small(tmp_path / "e.csv", n=60)
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(units=units))
    out = tmp_path / "out"
    protect(load_spec(spec), out, SeededNoise(1))
    page = (out / "report.html").read_text(encoding="utf-8")
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_a_stated_unit_wins_over_the_known_column_name(tmp_path):
    known = _page_text(tmp_path / "a", "")
    assert "persons" in known and "full-time equivalents" not in known  # m1emp: persons
    stated = _page_text(tmp_path / "b", '[data.units]\nm1emp = "full-time equivalents"')
    assert "full-time equivalents" in stated


def test_a_unit_for_a_public_attribute_is_refused(tmp_path):
    write_small(tmp_path / "e.csv", n=10)
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(units='[data.units]\ncnty = "counties"'))
    with pytest.raises(SpecError, match=r"\[data.units\].cnty"):
        load_spec(spec)
