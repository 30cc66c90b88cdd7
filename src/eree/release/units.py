"""The unit of each published statistic, for the people who read a release.

eree never converts units (docs/design.md#establishment-data): every number is used in
the unit it has in the file. A reader still needs to know that unit, so the release
report writes it next to every number. The unit of a statistic is known, in this order:

1. the spec's ``[data].units`` table (establishment data): ``attribute = "unit"``, e.g.
   ``wage = "thousands of dollars"``; it wins over everything below;
2. a known column name: the ER-EE job counts (``jobs``), the QCEW-like columns eree's
   own data use (``m1emp``, ``m2emp``, ``m3emp``: persons; ``wage``: thousands of
   dollars, as eree's synthetic data and the paper's file write it) and the column
   names of the published QCEW files (``month1_emplvl``…: persons;
   ``total_qtrly_wages``, ``taxable_qtrly_wages``, ``qtrly_contributions``: dollars);
3. otherwise the unit is not known: the report says "unit not stated" and asks for
   ``[data].units``.

Money units (``dollars``, ``thousands of dollars``, ``millions of dollars``) are also
written in dollars ("$3.2 billion") so that no reader has to multiply.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from eree.htmlpage import num

__all__ = ["KNOWN_UNITS", "MONEY", "UNKNOWN", "amount", "money_scale", "unit_of", "units_of"]

#: the unit of a column, by its name (used when the spec does not state one)
KNOWN_UNITS: Mapping[str, str] = {
    "jobs": "jobs",
    "m1emp": "persons",
    "m2emp": "persons",
    "m3emp": "persons",
    "month1_emplvl": "persons",
    "month2_emplvl": "persons",
    "month3_emplvl": "persons",
    "emplvl": "persons",
    "employment": "persons",
    "wage": "thousands of dollars",
    "wages": "thousands of dollars",
    "total_qtrly_wages": "dollars",
    "taxable_qtrly_wages": "dollars",
    "qtrly_contributions": "dollars",
}

#: money units: dollars per unit
MONEY: Mapping[str, float] = {
    "dollars": 1.0,
    "$": 1.0,
    "thousands of dollars": 1e3,
    "thousand dollars": 1e3,
    "millions of dollars": 1e6,
    "million dollars": 1e6,
}

#: what the report says when a unit is not known
UNKNOWN = "unit not stated"


def unit_of(stat: str, declared: Mapping[str, str] | None = None) -> str:
    """The unit of statistic ``stat``: declared, else known by name, else :data:`UNKNOWN`."""
    if declared and stat in declared:
        return str(declared[stat])
    return KNOWN_UNITS.get(stat, KNOWN_UNITS.get(stat.lower(), UNKNOWN))


def units_of(manifest: Mapping[str, Any]) -> dict[str, str]:
    """The declared units of a release (its spec's ``[data].units``; empty when none)."""
    data = (manifest.get("spec") or {}).get("data") or {}
    units = data.get("units") or {}
    return {str(k): str(v) for k, v in units.items()} if isinstance(units, Mapping) else {}


def money_scale(unit: str) -> float | None:
    """Dollars per unit of a money unit; None when ``unit`` is not money."""
    return MONEY.get(unit.strip().lower())


def _dollars(d: float) -> str:
    a = abs(d)
    sign = "−" if d < 0 else ""
    for div, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if a >= div:
            return f"{sign}${a / div:.3g} {word}"
    if a >= 100:
        return f"{sign}${a:,.0f}"
    return f"{sign}${a:.3g}"


def amount(v: float | None, unit: str, *, plain: str | None = None) -> str:
    """``v`` with its unit, for people: "52 jobs", "$3.2 billion", "7 (unit not stated)".

    Args:
        v: the number (in ``unit``).
        unit: its unit.
        plain: how ``v`` itself is written (default: 4 significant digits).
    """
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    text = plain if plain is not None else num(v)
    scale = money_scale(unit)
    if scale is not None:
        return _dollars(v * scale)
    if unit == UNKNOWN:
        return f"{text} ({UNKNOWN})"
    return f"{text} {unit}"
