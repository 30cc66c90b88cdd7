"""A coarsening release in the QCEW by-area layout, with its disclosure codes.

See docs/coarsening.md#agency-files. ``[output] format = "qcew-by-area"`` writes, under
``agency/<year>/<qtr>/area/``, one file per area (``SS000`` for the state's tables 50–58,
``SSCCC`` for each county's 70–78) in the QCEW open-data layout
(:data:`eree.release.layouts.QCEW_COLUMNS`), and two companions in the same layout:

* ``<area>.csv``: the published value of every cell — exact, or rounded to its base
  (deterministic or random rounding). ``disclosure_code`` is ``"N"`` (not disclosable:
  values 0, as BLS writes it) when any of the row's four measures is suppressed, else
  ``""``. A cell published as a range has no one value: its midpoint, rounded half to
  even, is written, and its range is in the companions.
* ``<area>_lower.csv`` and ``<area>_upper.csv``: each published measure's interval, the
  bounds a reader may rely on (``lower ≤ true value ≤ upper``): equal to the value for an
  exact cell; value ∓ base/2 (deterministic) or value ∓ base (random rounding, exclusive)
  for a rounded one, rounded outward to whole units; a range's class bounds. ``"N"`` rows
  as in the main file. ``avg_wkly_wage`` is empty in both (a ratio of bounds is not a
  bound).

So the layout keeps its meaning — one row per cell, one disclosure code, the numbers a
reader expects — and a reader who wants to know how coarse a value is reads the same row
of the companions. ``qtrly_estabs`` is the public count of establishments;
``avg_wkly_wage`` is computed from the written values (as BLS does). Every file passes
``eree check-format FILE --format qcew-by-area``.
"""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
import polars as pl

from eree.release.layouts import QCEW_COLUMNS, QCEW_TEXT_COLUMNS, avg_wkly_wage
from eree.release.spec_coarsening import QCEW_ATTRIBUTES, CoarseningPlan
from eree.release.units import money_scale, unit_of

__all__ = ["COMPANIONS", "qcew_files"]

#: the companion files of each area file: (suffix, which bound)
COMPANIONS = (("_lower", "lower"), ("_upper", "upper"))
_AGENCY_DIR = "agency"


def _area_fips(state: str, area: pl.Series) -> list[str]:
    st = state.zfill(2)
    return [f"{st}000" if a == "state" else st + str(a).zfill(3) for a in area.to_list()]


def _cells(plan: CoarseningPlan, state: str, tables: Any, pubs: dict[str, Any]) -> pl.DataFrame:
    """One row per cell: keys, public count, then per measure its status, value and bounds."""
    units = dict((plan.raw.get("data") or {}).get("units") or {})
    to_dollars = money_scale(unit_of("wage", units)) or 1.0
    c = tables.cells
    cols: dict[str, Any] = {
        "area_fips": _area_fips(state, c.get_column("area")),
        "own_code": c.get_column("own").cast(pl.Utf8),
        "industry_code": c.get_column("industry").cast(pl.Utf8),
        "agglvl_code": c.get_column("table_code").cast(pl.Utf8),
        "establishments": tables.counts().astype(np.int64),
    }
    suppressed = np.zeros(c.height, dtype=bool)
    for a in QCEW_ATTRIBUTES:
        p = pubs[a]
        scale = to_dollars if a == "wage" else 1.0
        lo, hi = p.own_bounds()
        value = np.where(p.status == "range", (lo + hi) / 2.0, p.value) * scale
        suppressed |= p.status == "suppressed"
        cols[a] = value
        cols[f"{a}_lower"] = lo * scale
        cols[f"{a}_upper"] = hi * scale
    cols["suppressed"] = suppressed
    return pl.DataFrame(cols)


def _whole(v: float, how: str) -> int:
    if how == "lower":
        return max(0, math.floor(v + 1e-9))
    if how == "upper":
        return max(0, math.ceil(v - 1e-9))
    return max(0, round(v))


def _csv(cells: pl.DataFrame, year: int, qtr: int, which: str) -> bytes:
    """Cells in the QCEW open-data layout: codes quoted, numbers bare."""
    out = io.StringIO()
    out.write(",".join(f'"{c}"' for c in QCEW_COLUMNS) + "\n")
    n_rest = len(QCEW_COLUMNS) - QCEW_COLUMNS.index("avg_wkly_wage") - 1
    rest = ['""' if c in QCEW_TEXT_COLUMNS else "" for c in QCEW_COLUMNS[-n_rest:]]
    for r in cells.iter_rows(named=True):
        estabs = str(r["establishments"])
        if r["suppressed"]:
            code, nums = '"N"', [estabs, "0", "0", "0", "0", "", "", ""]
        else:
            key = "" if which == "value" else f"_{which}"
            v = [_whole(r[f"{a}{key}"], which) for a in QCEW_ATTRIBUTES]
            wk = avg_wkly_wage(v[3], v[0], v[1], v[2]) if which == "value" else None
            code = '""'
            nums = [estabs, *(str(x) for x in v), "", "", "" if wk is None else str(wk)]
        keys = [r["area_fips"], r["own_code"], r["industry_code"], r["agglvl_code"], 0, year, qtr]
        out.write(",".join([*(f'"{k}"' for k in keys), code, *nums, *rest]) + "\n")
    return out.getvalue().encode("utf-8")


def qcew_files(
    plan: CoarseningPlan, states: dict[str, tuple[Any, dict[str, Any]]]
) -> tuple[dict[str, bytes], dict[str, Any]]:
    """The by-area files of a coarsening release and what the manifest says of them.

    Args:
        plan: the release's plan (``[output] year, quarter``; ``[data] units``).
        states: state code → (its linked tables, attribute → its publication).
    """
    year, qtr = plan.output.year, plan.output.quarter
    assert year is not None and qtr is not None  # the spec requires them with a format
    files: dict[str, bytes] = {}
    for state, (tables, pubs) in states.items():
        cells = _cells(plan, state, tables, pubs).sort(
            "area_fips", "agglvl_code", "own_code", "industry_code"
        )
        for (area,), part in cells.group_by(["area_fips"], maintain_order=True):
            stem = f"{_AGENCY_DIR}/{year}/{qtr}/area/{area}"
            files[f"{stem}.csv"] = _csv(part, year, qtr, "value")
            for suffix, which in COMPANIONS:
                files[f"{stem}{suffix}.csv"] = _csv(part, year, qtr, which)
    about = {
        "format": "qcew-by-area",
        "files": sorted(files),
        "values": "<area>.csv: each cell's published value (exact, or rounded to its base; "
        "a range's midpoint); wages in dollars; qtrly_estabs the public count; "
        "avg_wkly_wage from the written values",
        "disclosure": 'disclosure_code "N" (not disclosable, values 0) where any of the '
        'row\'s measures is suppressed (the last resort), else ""',
        "bounds": "<area>_lower.csv and <area>_upper.csv: each published measure's interval "
        "(lower ≤ true value ≤ upper) in the same layout, rounded outward to whole units; "
        "equal bounds: published exactly",
        "empty_columns": "taxable_qtrly_wages, qtrly_contributions, lq_*, oty_* (not "
        "published); avg_wkly_wage in the bounds files",
    }
    return files, about
