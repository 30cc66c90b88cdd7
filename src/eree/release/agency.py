"""A release in the agency's own file layouts: LODES WAC and QCEW open-data files.

See docs/design.md#release-outputs, docs/product-lodes-wac.md and docs/product-qcew.md.

``[output] format`` (:data:`eree.release.layouts.FORMATS`) adds, next to the tidy tables
and the manifest (never instead of them), files in an agency layout
(:mod:`eree.release.layouts`) under ``agency/``, and a companion ``*_moe`` file in the
same layout for the uncertainty the layout has no column for. Every number comes from the
published tables, their published (or the mechanisms' published raw) standard errors and
the public frame (which blocks and cells have an establishment, and how many) — never from
a confidential value.

* **lodes-wac**: one row per block of the public workplace frame, each column family
  from the released marginal by block and that family's attribute; C000 from the marginal
  by block; CD (education, workers aged 30+ as LODES tabulates it) from the marginal by
  block × age × education, summed over A02 and A03; CNS cells with no establishment in the
  frame are public zeros; CFA/CFS are 0 (the job tables carry no firm age or size: LODES
  writes 0 where it does not tabulate them). The companion ``*_moe.csv.gz`` holds 90%
  margins of error, 1.645 × the standard error of each cell's noisy measurement (for a
  post-processed table: the mechanism's published standard error of the raw measurement,
  before post-processing), rounded up; empty where the mechanism withholds its variance.
* **lodes-rac**: refused by the spec check: the job tables carry no residence geography.
* **qcew-by-area** (one file per area, named as the BLS API names them,
  ``<year>/<qtr>/area/<area_fips>.csv``) and **qcew-singlefile** (``<year>.q<q>-q<q>.
  singlefile.csv``): the county levels 70–78 by ownership. Levels 70, 71, 73, 75–78 are
  the released group-by sums; 72 (domain) is the sum of the published supersector cells,
  74 (QCEW sectors, 31-33, 44-45 and 48-49 merged) the sum of the published 2-digit
  sector cells, their standard errors the root sum of squares. Employment and wages are
  the published values rounded half to even and clamped at 0; ``qtrly_estabs`` is the
  public frame's count; ``avg_wkly_wage`` is computed from these published values; every
  cell gets ``disclosure_code`` "" (published: a formally private release suppresses no
  cell); ``taxable_qtrly_wages``, ``qtrly_contributions``, ``lq_*`` and ``oty_*`` are
  empty (not measured; the location quotients need the national release and the
  over-the-year changes last year's, neither given), their disclosure codes "".
"""

from __future__ import annotations

import gzip
import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import numpy as np
import polars as pl

from eree.data.qcew import (
    ALL_INDUSTRIES,
    ALL_OWNERSHIPS,
    QCEW_SECTOR_LABEL,
    SUPERSECTOR_OF_QCEW_SECTOR,
    SUPERSECTOR_OF_SECTOR,
    domain_of_supersector,
)
from eree.data.schema import NAICS_SECTORS
from eree.errors import DataValidationError, SpecError
from eree.mechanisms.base import Measurement
from eree.release.layouts import (
    LODES_FAMILIES,
    QCEW_COLUMNS,
    QCEW_TEXT_COLUMNS,
    WAC_COLUMNS,
    avg_wkly_wage,
    lodes_file_name,
)
from eree.release.units import money_scale, unit_of

__all__ = [
    "AGENCY_DIR",
    "MOE_Z",
    "AgencyOutput",
    "agency_output",
    "check_agency_plan",
    "check_qcew_codes",
    "check_wac_blocks",
    "check_wac_codes",
    "layout_mapping",
    "qcew_levels",
    "wac_families",
    "wac_mapping",
]

#: the release's folder of agency-layout files
AGENCY_DIR = "agency"
#: the normal quantile of a 90% margin of error (the Census Bureau's convention)
MOE_Z = 1.645
_COUNT = "jobs"
_GEO = "block"

#: WAC family → the worker or workplace attributes of its marginal by block, and the
#: codes (in column order) of the attribute that names its columns
_WAC_SOURCE: dict[str, tuple[tuple[str, ...], str]] = {
    "CA": (("age",), "age"),
    "CE": (("earnings",), "earnings"),
    "CNS": (("naics_sector",), "naics_sector"),
    "CR": (("race",), "race"),
    "CT": (("ethnicity",), "ethnicity"),
    "CD": (("age", "education"), "education"),
    "CS": (("sex",), "sex"),
}
#: ages whose education LODES tabulates (CD: workers aged 30 or older)
_CD_AGES = ("A02", "A03")
_NOT_TABULATED = ("CFA", "CFS")


#: WAC layout field → the data column it is read from by default (eree's names): the
#: workplace block and the attributes whose codes name the WAC columns
WAC_DEFAULT_COLUMNS: dict[str, str] = {
    _GEO: _GEO,
    **{a: a for a in ("age", "earnings", "naics_sector", "race", "ethnicity", "education",
                      "sex")},
}  # fmt: skip
#: the WAC layout fields ``[output.columns]`` may map
WAC_FIELDS: tuple[str, ...] = tuple(WAC_DEFAULT_COLUMNS)
#: the WAC fields whose codes ``[output.codes]`` may map to eree's (the layout's) codes
WAC_CODED_FIELDS: tuple[str, ...] = WAC_FIELDS[1:]


@dataclass(frozen=True)
class WacMapping:
    """Which data columns and codes fill the WAC layout's fields ([output] columns, codes).

    Attributes:
        columns: layout field → data column.
        codes: layout field → {data code: layout code}; codes not listed pass unchanged.
    """

    columns: dict[str, str]
    codes: dict[str, dict[str, str]]


def wac_mapping(plan: Any) -> WacMapping:
    """The ``[output]`` columns and codes of the LODES WAC format, checked (no data read)."""
    return WacMapping(*layout_mapping(plan, "LODES WAC", WAC_FIELDS, WAC_CODED_FIELDS,
                                      WAC_DEFAULT_COLUMNS))  # fmt: skip


def wac_codes(field: str) -> tuple[str, ...]:
    """The layout's codes of a WAC field, in the order of its columns."""
    from eree.data.schema import WORKER_DOMAINS

    return tuple(NAICS_SECTORS) if field == "naics_sector" else tuple(WORKER_DOMAINS[field])


def wac_families(m: WacMapping | None = None) -> dict[str, tuple[str, ...]]:
    """Each released WAC family → the ``by`` of its marginal (block first); C000 → (block,).

    Under eree's names, or the data's columns of ``m``.
    """
    col = (m or WacMapping(dict(WAC_DEFAULT_COLUMNS), {})).columns
    geo = col[_GEO]
    return {"C000": (geo,), **{f: (geo, *(col[x] for x in a)) for f, (a, _) in _WAC_SOURCE.items()}}


#: QCEW county level → the layout fields of its released group-by sum (None: derived).
#: ``area`` is the 5-digit county FIPS: one data column (``[output.columns] area``) or
#: the state and county columns
_QCEW_ROLES: dict[int, tuple[str, ...] | None] = {
    70: ("area",),
    71: ("area", "ownership"),
    72: None,
    73: ("area", "ownership", "supersector"),
    74: ("area", "ownership", "sector"),
    75: ("area", "ownership", "naics3"),
    76: ("area", "ownership", "naics4"),
    77: ("area", "ownership", "naics5"),
    78: ("area", "ownership", "naics6"),
}
#: QCEW layout field → the data column it is read from by default (eree's Syn-RI names)
QCEW_DEFAULT_COLUMNS: dict[str, str] = {
    "state": "state",
    "county": "cnty",
    "ownership": "own",
    "supersector": "super_sector",
    "sector": "naics_sector",
    "naics3": "naics3",
    "naics4": "naics4",
    "naics5": "naics5",
    "naics6": "naics",
    "month1_emplvl": "m1emp",
    "month2_emplvl": "m2emp",
    "month3_emplvl": "m3emp",
    "total_qtrly_wages": "wage",
}
#: the QCEW layout fields ``[output.columns]`` may map (besides ``area``)
QCEW_FIELDS: tuple[str, ...] = ("area", *QCEW_DEFAULT_COLUMNS)
#: fields whose codes ``[output.codes]`` may map to the layout's
QCEW_CODED_FIELDS: tuple[str, ...] = ("area", "ownership", "supersector", "sector")
#: the measures, in the layout's order
_MEASURE_FIELDS = ("month1_emplvl", "month2_emplvl", "month3_emplvl", "total_qtrly_wages")
#: the frame's column names of the measures and the level's keys (internal)
_STATS = ("m1emp", "m2emp", "m3emp", "wage")


@dataclass(frozen=True)
class QcewMapping:
    """Which data columns and codes fill the QCEW layout's fields ([output] columns, codes).

    Attributes:
        columns: layout field → data column (``area`` only when the data have one).
        codes: layout field → {data code: layout code}; codes not listed pass unchanged.
        levels: the county aggregation levels written (subset of 70–78).
    """

    columns: dict[str, str]
    codes: dict[str, dict[str, str]]
    levels: tuple[int, ...]

    def by(self, level: int) -> tuple[str, ...] | None:
        """The data columns a level's group-by sum is over (None: derived)."""
        roles = _QCEW_ROLES[level]
        if roles is None:
            return None
        area = ([self.columns["area"]] if "area" in self.columns
                else [self.columns["state"], self.columns["county"]])  # fmt: skip
        return (*area, *(self.columns[r] for r in roles[1:]))

    def measures(self) -> tuple[str, ...]:
        """The data columns of month1–3 employment and the quarter's wages."""
        return tuple(self.columns[m] for m in _MEASURE_FIELDS)


def layout_mapping(
    plan: Any, layout: str, fields: Sequence[str], coded: Sequence[str], defaults: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """``[output.columns]`` and ``[output.codes]`` for a layout, checked (no data read).

    One mechanism for every agency format: each layout field's data column (``defaults``
    unless ``[output.columns]`` names another) and, for the ``coded`` fields, the data's
    codes mapped to the layout's (codes not listed pass unchanged).

    Raises:
        SpecError: naming the ``[output]`` key at fault.
    """
    out = (plan.raw.get("output") or {}) if hasattr(plan, "raw") else {}
    given = out.get("columns", {})
    if not isinstance(given, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in given.items()
    ):
        raise SpecError("[output.columns] must be a table of layout field = data column")
    unknown = [k for k in given if k not in fields]
    if unknown:
        raise SpecError(
            f"[output.columns]: {', '.join(map(repr, unknown))} is not a {layout} layout field "
            f"(fields: {', '.join(fields)})"
        )
    codes = out.get("codes", {})
    if not isinstance(codes, dict) or not all(
        isinstance(k, str) and isinstance(v, dict) for k, v in codes.items()
    ):
        raise SpecError('[output.codes] must be tables: field = { "data code" = "layout code" }')
    bad = [k for k in codes if k not in coded]
    if bad:
        raise SpecError(
            f"[output.codes]: {', '.join(map(repr, bad))} has no codes to map (fields: "
            f"{', '.join(coded)})"
        )
    for f, m in codes.items():
        if not all(isinstance(a, str) and isinstance(b, str | int) for a, b in m.items()):
            raise SpecError(f"[output.codes].{f}: each data code (text) = a layout code")
    cols = {**defaults, **given}
    return cols, {f: {a: str(b) for a, b in m.items()} for f, m in codes.items()}


def qcew_mapping(plan: Any) -> QcewMapping:
    """The ``[output]`` columns, codes and levels of a QCEW format, checked (no data read).

    Raises:
        SpecError: naming the ``[output]`` key at fault.
    """
    cols, codes = layout_mapping(plan, "QCEW", QCEW_FIELDS, QCEW_CODED_FIELDS,
                                 QCEW_DEFAULT_COLUMNS)  # fmt: skip
    out = (plan.raw.get("output") or {}) if hasattr(plan, "raw") else {}
    levels = out.get("levels", list(_QCEW_ROLES))
    if (
        not isinstance(levels, list)
        or not levels
        or not all(isinstance(x, int) and not isinstance(x, bool) for x in levels)
        or any(x not in _QCEW_ROLES for x in levels)
        or len(set(levels)) != len(levels)
    ):
        raise SpecError(
            "[output].levels must list county aggregation levels from 70 to 78, each once "
            f"(got {levels!r})"
        )
    return QcewMapping(cols, codes, tuple(sorted(levels)))


def _sources(m: QcewMapping, has_query: Callable[[Sequence[str]], bool]) -> dict[int, str]:
    """How each written level (and each level it needs) is made.

    "query": its group-by sum; "derived": 72 from 73's cells, 73 from 74's when no query
    is by supersector (post-processing of published cells).
    """
    src: dict[int, str] = {}

    def need(lv: int) -> bool:
        by = m.by(lv)
        if by is not None and has_query(by):
            src[lv] = "query"
            return True
        if lv == 72:
            ok = need(73)
        elif lv == 73:
            ok = need(74)
        else:
            return False
        if ok:
            src[lv] = "derived"
        return ok

    for lv in m.levels:
        need(lv)
    return src


def qcew_levels() -> dict[int, tuple[str, ...]]:
    """Each QCEW county level made from a group-by sum → its ``by`` under eree's names."""
    m = QcewMapping(dict(QCEW_DEFAULT_COLUMNS), {}, tuple(_QCEW_ROLES))
    return {lv: by for lv in _QCEW_ROLES if (by := m.by(lv)) is not None}


@dataclass(frozen=True)
class AgencyOutput:
    """The agency-layout files of a release and what the manifest says of them.

    Attributes:
        files: path inside the release → content.
        manifest: the manifest's ``agency_files`` entry.
    """

    files: dict[str, bytes]
    manifest: dict[str, Any] = field(default_factory=dict)


def _query_of(plan: Any, by: Sequence[str]) -> str | None:
    for q in plan.queries:
        if not isinstance(q.by, str) and set(q.by) == set(by) and len(q.by) == len(by):
            return str(q.name)
    return None


def _units(plan: Any) -> dict[str, str]:
    """``[data].units`` as given (docs/spec-reference.md)."""
    return dict((plan.raw.get("data") or {}).get("units") or {})


def wac_job_type(plan: Any) -> str:
    """The job type a LODES file is named for.

    ``[output] job_type`` when given, else the ``[data] job_type`` the release counts
    (docs/privacy.md#several-jobs-per-worker).
    """
    given = (plan.raw.get("output") or {}).get("job_type")
    return str(given) if given is not None else str(getattr(plan.data, "job_type", "JT00"))


def check_agency_plan(plan: Any) -> None:
    """Refuse, before any data is read, an ``[output] format`` the plan cannot fill.

    Raises:
        SpecError: naming ``[output].format`` (or the key at fault) and what is missing.
    """
    out = plan.output
    fmt = out.format
    if fmt is None:
        return
    where = f'[output].format = "{fmt}"'
    if out.year is None:
        raise SpecError(f"{where} needs [output].year (the file's reference year)")
    if fmt == "lodes-rac":
        raise SpecError(
            f"{where}: a residence (RAC) file needs each worker's home block, and the job "
            'tables carry no residence geography; use "lodes-wac"'
        )
    if fmt == "lodes-wac":
        if plan.kind != "eree":
            raise SpecError(f'{where} needs [data] kind = "eree" (LODES job tables)')
        wm = wac_mapping(plan)
        fams = wac_families(wm)
        missing = [f for f, by in fams.items() if _query_of(plan, by) is None]
        if missing:
            need = "; ".join(f"{f}: by = {json.dumps(fams[f])}" for f in missing)
            raise SpecError(f"{where}: no [[query]] releases the WAC families {need}")
        domains = getattr(plan.data, "domains", {}) or {}
        for f in WAC_CODED_FIELDS:
            col = wm.columns[f]
            if col not in domains:  # a workplace attribute without one: checked on loading
                continue
            mapped = {wm.codes.get(f, {}).get(c, c) for c in domains[col]}
            if not mapped <= set(wac_codes(f)):
                raise SpecError(
                    f"{where}: the declared codes of {col!r} ([data.domains]) are not all "
                    f"LODES {f} codes ({', '.join(wac_codes(f))}); map them with "
                    f"[output.codes].{f}"
                )
        counted = getattr(plan.data, "job_type", "JT00")
        if wac_job_type(plan) != counted:
            raise SpecError(
                f"[output].job_type = {wac_job_type(plan)!r} names the file for other jobs than "
                f"the release counts ([data].job_type = {counted!r}); leave [output].job_type "
                "out or make them agree"
            )
        p = plan.postprocess
        if not (p.consistent and p.nonnegative and p.integer):
            raise SpecError(
                f"{where} publishes non-negative whole counts whose families add up to "
                "C000: set [postprocess] consistent = true, nonnegative = true, integer = "
                "true"
            )
        return
    if plan.kind != "establishments":
        raise SpecError(f'{where} needs [data] kind = "establishments" (QCEW-like data)')
    if out.quarter is None:
        raise SpecError(f"{where} needs [output].quarter (1–4)")
    m = qcew_mapping(plan)
    src = _sources(m, lambda by: _query_of(plan, by) is not None)
    missing_q = [lv for lv in m.levels if lv not in src]
    if missing_q:
        need = "; ".join(
            f"{lv}: by = {json.dumps(m.by(lv) or m.by(73))}"
            + (" (or level 73's or 74's query: 72 is summed from them)" if lv == 72 else "")
            + (" (or level 74's query: 73 is summed from its sectors)" if lv == 73 else "")
            for lv in missing_q
        )
        raise SpecError(f"{where}: no [[query]] releases the county levels {need}")
    conf = plan.establishment_data.confidential
    absent = [a for a in m.measures() if a not in conf]
    if absent:
        raise SpecError(f"{where}: [data].confidential lacks {', '.join(absent)}")
    for lv, how in src.items():
        if how != "query":
            continue
        q = plan.query(_query_of(plan, m.by(lv) or ()))
        if any(a not in (q.mu or {}) for a in m.measures()):
            raise SpecError(
                f"{where}: query {q.name!r} (level {lv}) must measure {', '.join(m.measures())}"
            )
    wage = m.columns["total_qtrly_wages"]
    if money_scale(unit_of(wage, _units(plan))) is None:
        raise SpecError(
            f'{where}: the unit of {wage} must be money ([data].units, e.g. {wage} = "dollars")'
        )


def check_wac_blocks(blocks: pl.Series, file: str, column: str = _GEO) -> None:
    """The blocks of the public workplace frame make a LODES WAC file (after loading).

    LODES lists blocks as 15-digit census codes (state 2, county 3, tract 6, block 4
    digits) and writes one file per state, named by the state of its blocks (LODES
    technical documentation): the frame must hold such codes, of one state. A spec cannot
    tell (the codes are data), so this runs once the data are loaded, before any noise.

    Raises:
        DataValidationError: naming the file and the ``block`` column, and what is
            expected; never a code.
    """
    from eree.release.layouts import STATE_POSTAL

    want = ('[output] format = "lodes-wac" needs 15-digit census block codes (2-digit '
            "state FIPS, county, tract, block)")  # fmt: skip
    codes = blocks.cast(pl.Utf8)
    bad = codes.is_null() | ~codes.str.contains(r"^\d{15}$")
    if bad.any():
        n = int(bad.sum())
        raise DataValidationError(
            f"{want}; {n:,} of {codes.len():,} blocks are not", file=file, column=_GEO,
            rule="lodes-block",
        )  # fmt: skip
    states = set(codes.str.slice(0, 2).unique().to_list())
    if not states <= set(STATE_POSTAL):
        raise DataValidationError(f"{want}: a code does not start with a state FIPS code",
                                  file=file, column=column, rule="lodes-block")  # fmt: skip
    if len(states) > 1:
        raise DataValidationError(
            f"{want} of one state (a LODES file is per state); the blocks are in "
            f"{len(states)} states", file=file, column=column, rule="lodes-block",
        )  # fmt: skip


def check_wac_codes(plan: Any, groups: Callable[[Sequence[str]], pl.DataFrame], file: str) -> None:
    """The workplace codes of the frame are LODES codes (after loading; no declared domain).

    The worker attributes' codes are checked before any data are read (their domains are
    declared); a workplace attribute (``naics_sector``) without a declared domain has its
    codes checked here, on the public frame's groups, after ``[output.codes]``: a code
    outside LODES' list would have no WAC column and the families would not add up to C000.

    Raises:
        DataValidationError: naming the file and the column; never a code.
    """
    if plan.output.format != "lodes-wac":
        return
    wm = wac_mapping(plan)
    domains = getattr(plan.data, "domains", {}) or {}
    for f in WAC_CODED_FIELDS:
        col = wm.columns[f]
        if col in domains or col not in getattr(plan.data, "workplace_attributes", ()):
            continue
        codes = groups([col]).get_column(col).cast(pl.Utf8)
        if wm.codes.get(f):
            codes = codes.replace(wm.codes[f])
        bad = codes.is_null() | ~codes.is_in(list(wac_codes(f)))
        if bad.any():
            raise DataValidationError(
                f'[output] format = "lodes-wac" needs LODES {f} codes in every row '
                f"({', '.join(wac_codes(f))}, or mapped to them with [output.codes].{f}); "
                f"{int(bad.sum()):,} of {codes.len():,} codes are not",
                file=file, column=col, rule="lodes-code",
            )  # fmt: skip


#: each QCEW layout key field → (what its codes must be, the pattern or list they must match)
def _qcew_code_rules() -> dict[str, tuple[str, str | frozenset[str]]]:
    return {
        "area": ("a 5-digit county FIPS code", r"^\d{5}$"),
        "state": ("a state FIPS code (1-2 digits)", r"^\d{1,2}$"),
        "county": ("a county FIPS code (1-3 digits)", r"^\d{1,3}$"),
        "ownership": ("a one-digit QCEW ownership code", r"^\d$"),
        "supersector": (
            "a BLS supersector code (1011-1029)",
            frozenset(SUPERSECTOR_OF_SECTOR.values()),
        ),
        "sector": ("a 2-digit NAICS sector of BLS's list", frozenset(QCEW_SECTOR_LABEL)),
        "naics3": ("a 3-digit NAICS code", r"^\d{3}$"),
        "naics4": ("a 4-digit NAICS code", r"^\d{4}$"),
        "naics5": ("a 5-digit NAICS code", r"^\d{5}$"),
        "naics6": ("a 6-digit NAICS code", r"^\d{6}$"),
    }


def check_qcew_codes(plan: Any, groups: Callable[[Sequence[str]], pl.DataFrame], file: str) -> None:
    """The public codes of the establishment frame make QCEW files (after loading).

    The by-area files are named by the area code (``<state><county>.csv``) and every file
    keys its cells by ownership and industry codes of BLS's lists: a code outside them
    (text in an ownership, a sector BLS does not publish, HTML or a path in an area code)
    would be a traceback after the whole release, or a file name carrying the code. A spec
    cannot tell (the codes are data), so this runs once the data are loaded, before any
    noise, on the public frame's groups (``groups(by)``: one row per group of ``by``), for
    the data columns of each level written from a query (``[output.columns]``), after the
    data's codes are mapped to the layout's (``[output.codes]``).

    Raises:
        DataValidationError: naming the file, the column and what its codes must be; never
            a code.
    """
    if plan.output.format not in ("qcew-by-area", "qcew-singlefile"):
        return
    m = qcew_mapping(plan)
    rules = _qcew_code_rules()
    area = ("area",) if "area" in m.columns else ("state", "county")
    seen: set[str] = set()
    for lv in m.levels:
        roles, by = _QCEW_ROLES[lv], m.by(lv)
        if roles is None or by is None:
            continue
        fields = (*area, *roles[1:])
        todo = [(f, c) for f, c in zip(fields, by, strict=True) if c not in seen]
        if not todo:
            continue
        if _query_of(plan, by) is None:  # made from another level's cells (72, 73)
            continue
        frame = groups(by)
        for f, column in todo:
            seen.add(column)
            what, allowed = rules[f]
            codes = frame.get_column(column).cast(pl.Utf8)
            if m.codes.get(f):
                codes = codes.replace(m.codes[f])
            codes = codes.unique()
            if isinstance(allowed, str):
                bad = codes.is_null() | ~codes.str.contains(allowed)
            else:
                bad = codes.is_null() | ~codes.is_in(sorted(allowed))
            if bad.any():
                raise DataValidationError(
                    f'[output] format = "{plan.output.format}" needs {what} in every row; '
                    f"{int(bad.sum()):,} of {codes.len():,} codes are not",
                    file=file,
                    column=column,
                    rule="qcew-code",
                )


def agency_output(
    plan: Any,
    tables: Mapping[str, pl.DataFrame],
    measurements: Mapping[str, Sequence[Measurement]],
    establishments: Callable[[Sequence[str]], pl.DataFrame] | None,
    created: date,
) -> AgencyOutput | None:
    """The agency-layout files of a release (None when ``[output] format`` is not set).

    Args:
        plan: the release plan (checked by :func:`check_agency_plan`).
        tables: the published tables by query name.
        measurements: the mechanisms' Measurements by query name (their published raw
            standard errors, for the companion file of post-processed tables).
        establishments: the public frame's establishment count per group of ``by``
            (keys + ``establishments``); establishment releases only.
        created: the file date (LODES ``createdate``).
    """
    fmt = plan.output.format
    if fmt is None:
        return None
    if fmt == "lodes-wac":
        return _wac(plan, tables, measurements, created)
    assert establishments is not None
    return _qcew(plan, tables, establishments, fmt)


# --------------------------------------------------------------------------------------
# LODES WAC
# --------------------------------------------------------------------------------------


def _std(table: pl.DataFrame, ms: Sequence[Measurement]) -> pl.Series | None:
    """The table's published std, else the raw measurement's (row-aligned), else None."""
    col = f"{_COUNT}_std"
    if col in table.columns and table.get_column(col).null_count() == 0:
        return table.get_column(col)
    m = next((m for m in ms if m.statistic == _COUNT), None)
    if m is None or m.std is None or len(m.std) != table.height:
        return None
    return pl.Series(col, np.asarray(m.std, dtype=np.float64))


def _wide(
    blocks: pl.DataFrame, table: pl.DataFrame, attr: str, codes: Sequence[str],
    cols: Sequence[str], value: str,
) -> pl.DataFrame:  # fmt: skip
    """``value`` of ``table`` by block and ``attr``, one column per code (absent: 0)."""
    rename = dict(zip(codes, cols, strict=True))
    wide = (
        table.select(_GEO, pl.col(attr).cast(pl.Utf8), value)
        .group_by(_GEO, attr)
        .agg(pl.col(value).sum())
        .pivot(on=attr, index=_GEO, values=value)
    )
    wide = wide.rename({c: rename[c] for c in wide.columns if c in rename})
    out = blocks.join(wide, on=_GEO, how="left", maintain_order="left")
    return out.select(
        _GEO, *[(pl.col(c) if c in out.columns else pl.lit(0.0)).fill_null(0.0).alias(c)
                for c in cols]
    )  # fmt: skip


def _wac(
    plan: Any,
    tables: Mapping[str, pl.DataFrame],
    measurements: Mapping[str, Sequence[Measurement]],
    created: date,
) -> AgencyOutput:
    wm = wac_mapping(plan)
    fams = wac_families(wm)
    name = {f: _query_of(plan, by) for f, by in fams.items()}

    def layout(t: pl.DataFrame) -> pl.DataFrame:
        """The table under the layout's field names and codes ([output] columns, codes)."""
        t = t.rename({c: f for f, c in wm.columns.items() if c in t.columns and c != f})
        return t.with_columns(
            pl.col(f).cast(pl.Utf8).replace(m) for f, m in wm.codes.items() if f in t.columns
        )

    raw_total = layout(tables[str(name["C000"])])
    t_std = _std(raw_total, measurements.get(str(name["C000"]), ()))  # row-aligned: sort after
    total = raw_total.with_columns(
        pl.col(_GEO).cast(pl.Utf8),
        (t_std**2 if t_std is not None else pl.lit(None, dtype=pl.Float64)).alias("_var"),
    ).sort(_GEO)
    blocks = total.select(_GEO)
    values = [blocks.with_columns(total.get_column(_COUNT).cast(pl.Float64).alias("C000"))]
    var_parts = [blocks.with_columns(total.get_column("_var").alias("C000"))]
    notes = []
    if t_std is None:
        notes.append("C000: the mechanism withholds its variance; the margins of error are empty")
    for fam, (_, attr) in _WAC_SOURCE.items():
        q = str(name[fam])
        t = layout(tables[q]).with_columns(pl.col(_GEO).cast(pl.Utf8))
        codes = wac_codes(attr)
        cols = LODES_FAMILIES[fam]
        std = _std(tables[q], measurements.get(q, ()))
        t = t.with_columns(
            (std**2 if std is not None else pl.lit(None, dtype=pl.Float64)).alias("_var"),
            pl.col(_COUNT).cast(pl.Float64),
        )
        if fam == "CD":
            t = t.filter(pl.col("age").cast(pl.Utf8).is_in(list(_CD_AGES)))
        values.append(_wide(blocks, t, attr, codes, cols, _COUNT).drop(_GEO))
        v = _wide(blocks, t, attr, codes, cols, "_var").drop(_GEO)
        if std is None:
            # with_columns keeps one row per block (a select of literals alone is one row)
            v = v.with_columns(pl.lit(None, dtype=pl.Float64).alias(c) for c in cols)
            notes.append(f"{fam}: the mechanism withholds its variance; the margins of "
                         "error are empty")  # fmt: skip
        var_parts.append(v)
    firm = [c for f in _NOT_TABULATED for c in LODES_FAMILIES[f]]
    stamp = created.strftime("%Y%m%d")
    counts = pl.concat(values, how="horizontal")
    variances = pl.concat(var_parts, how="horizontal")
    state = str(blocks.item(0, _GEO))[:2]
    fname = lodes_file_name("wac", state, "S000", wac_job_type(plan), plan.output.year)
    frame = counts.with_columns(
        *[pl.col(c).round(0).cast(pl.Int64) for c in counts.columns if c != _GEO],
        *[pl.lit(0, dtype=pl.Int64).alias(c) for c in firm],
        pl.lit(stamp).alias("createdate"),
    ).select(pl.col(_GEO).alias("w_geocode"), *WAC_COLUMNS[1:])
    moe = variances.with_columns(
        *[(pl.col(c).sqrt() * MOE_Z - 1e-9).ceil().clip(0).cast(pl.Int64)
          for c in variances.columns if c != _GEO],
        *[pl.lit(0, dtype=pl.Int64).alias(c) for c in firm],
        pl.lit(stamp).alias("createdate"),
    ).select(pl.col(_GEO).alias("w_geocode"), *WAC_COLUMNS[1:])  # fmt: skip
    moe_name = fname.replace(".csv.gz", "_moe.csv.gz")
    files = {f"{AGENCY_DIR}/{fname}": _gz_csv(frame), f"{AGENCY_DIR}/{moe_name}": _gz_csv(moe)}
    return AgencyOutput(
        files,
        {
            "format": "lodes-wac",
            "files": sorted(files),
            "segment": "S000 (all jobs released)",
            "job_type": wac_job_type(plan),
            "blocks": blocks.height,
            "margins_of_error": f"{moe_name}: 90% margins of error ({MOE_Z} × the standard "
            "error of each cell's noisy measurement, before post-processing), rounded up; "
            "CD's are the root sum of squares over ages A02 and A03; C000 and the families "
            "are the post-processed (consistent, non-negative, integer) values",
            "not_tabulated": "CFA01–CFA05 and CFS01–CFS05 are 0: the job tables carry no "
            "firm age or size (LODES writes 0 where it does not tabulate them)",
            "disclosure": "no cell is suppressed or blanked: every block of the public "
            "workplace frame is listed, including blocks whose published C000 is 0",
            "notes": notes,
        },
    )


def _gz_csv(frame: pl.DataFrame) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:
        gz.write(frame.write_csv(null_value="").encode("utf-8"))
    return buf.getvalue()


# --------------------------------------------------------------------------------------
# QCEW
# --------------------------------------------------------------------------------------


def _qcew_level(
    lv: int,
    t: pl.DataFrame,
    by: Sequence[str],
    counts: pl.DataFrame,
    m: QcewMapping,
) -> pl.DataFrame:
    """One level's cells: area, own, industry, level, estabs, values and variances.

    The table's columns are the data's (``m.columns``); its codes are mapped to the
    layout's by ``m.codes`` (codes not listed pass unchanged).
    """
    stats = [pl.col(c).cast(pl.Float64).alias(s) for c, s in zip(m.measures(), _STATS,
                                                                   strict=True)]  # fmt: skip
    var = [
        (pl.col(f"{c}_std").cast(pl.Float64) ** 2).alias(f"{s}_var")
        for c, s in zip(m.measures(), _STATS, strict=True)
    ]
    text = [pl.col(c).cast(pl.Utf8) for c in by]
    frame = (
        t.with_columns(text)
        .join(counts.with_columns(text), on=list(by), how="left")
        .select(*by, *stats, *var, "establishments")
    )

    def coded(field: str, column: str) -> pl.Expr:
        e = pl.col(column).cast(pl.Utf8)
        codes = m.codes.get(field)
        return e.replace(codes) if codes else e

    roles = _QCEW_ROLES[lv] or ()
    if "area" in m.columns:
        area = coded("area", m.columns["area"]).str.zfill(5)
    else:
        area = pl.col(m.columns["state"]).cast(pl.Utf8).str.zfill(2) + pl.col(
            m.columns["county"]
        ).cast(pl.Utf8).str.zfill(3)
    own = (coded("ownership", m.columns["ownership"]).cast(pl.Int64) if "ownership" in roles
           else pl.lit(ALL_OWNERSHIPS))  # fmt: skip
    ind = roles[2] if len(roles) > 2 else None
    if ind is None:
        industry = pl.lit(ALL_INDUSTRIES)
    elif ind == "sector":  # QCEW's merged sector ranges (31-33, 44-45, 48-49)
        labels = {**QCEW_SECTOR_LABEL, **{v: v for v in QCEW_SECTOR_LABEL.values()}}
        industry = coded("sector", m.columns["sector"]).replace_strict(labels)
    else:
        industry = coded(ind, m.columns[ind]) if ind in m.codes else pl.col(
            m.columns[ind]).cast(pl.Utf8)  # fmt: skip
    keyed = frame.select(
        area.alias("area_fips"), own.alias("own_code"), industry.alias("industry_code"),
        *_STATS, *[f"{s}_var" for s in _STATS], "establishments",
    )  # fmt: skip
    if lv == 74:
        keyed = _summed(keyed)
    return keyed.with_columns(pl.lit(lv).alias("agglvl_code"))


def _summed(keyed: pl.DataFrame) -> pl.DataFrame:
    """Cells with the same key summed: values, variances (independent noises) and counts."""
    return keyed.group_by("area_fips", "own_code", "industry_code").agg(
        pl.col(*_STATS, *[f"{s}_var" for s in _STATS]).sum(),
        pl.col("establishments").sum(),
    )


def _derived(lv: int, finer: pl.DataFrame) -> pl.DataFrame:
    """Level 73 from 74's cells (supersector of each sector) or 72 from 73's (domain)."""
    code = pl.col("industry_code")
    if lv == 73:
        up = code.replace_strict(SUPERSECTOR_OF_QCEW_SECTOR)
    else:
        up = domain_of_supersector(code)
    return _summed(finer.drop("agglvl_code").with_columns(up.alias("industry_code"))).with_columns(
        pl.lit(lv).alias("agglvl_code")
    )


def _qcew(
    plan: Any,
    tables: Mapping[str, pl.DataFrame],
    establishments: Callable[[Sequence[str]], pl.DataFrame],
    fmt: str,
) -> AgencyOutput:
    m = qcew_mapping(plan)
    to_dollars = money_scale(unit_of(m.columns["total_qtrly_wages"], _units(plan))) or 1.0
    src = _sources(m, lambda by: _query_of(plan, by) is not None)
    made: dict[int, pl.DataFrame] = {}
    for lv in sorted(src, reverse=True):  # finer levels first: 73 and 72 may be sums
        if src[lv] == "query":
            by = m.by(lv)
            assert by is not None
            t = tables[str(_query_of(plan, by))]
            counts = establishments(by).select(*by, "establishments")
            made[lv] = _qcew_level(lv, t, by, counts, m)
        else:
            made[lv] = _derived(lv, made[lv + 1])
    parts = [made[lv] for lv in m.levels]
    cells = pl.concat(parts, how="vertical_relaxed").sort(
        "area_fips", "agglvl_code", "own_code", "industry_code"
    )
    cells = cells.with_columns(
        pl.col("wage") * to_dollars, pl.col("wage_var") * (to_dollars * to_dollars)
    )
    if plan.output.cells_from is not None:
        cells = _with_listed_cells(cells, plan.output.cells_from)
    year, qtr = plan.output.year, plan.output.quarter
    files: dict[str, bytes] = {}
    if fmt == "qcew-singlefile":
        stem = f"{year}.q{qtr}-q{qtr}.singlefile"
        files[f"{AGENCY_DIR}/{stem}.csv"] = _qcew_csv(cells, year, qtr, moe=False)
        files[f"{AGENCY_DIR}/{stem}_moe.csv"] = _qcew_csv(cells, year, qtr, moe=True)
    else:
        for (area,), part in cells.group_by(["area_fips"], maintain_order=True):
            stem = f"{AGENCY_DIR}/{year}/{qtr}/area/{area}"
            files[f"{stem}.csv"] = _qcew_csv(part, year, qtr, moe=False)
            files[f"{stem}_moe.csv"] = _qcew_csv(part, year, qtr, moe=True)
    return AgencyOutput(
        files,
        {
            "format": fmt,
            "files": sorted(files),
            "levels": f"county levels {', '.join(map(str, m.levels))} by ownership; 72 = sum "
            "of the published supersector cells (73), 74 = sum of the published 2-digit "
            "sector cells (31-33, 44-45, 48-49 merged), 73 = sum of the sector cells when no "
            "query is by supersector; their standard errors the root sum of squares",
            "columns": dict(m.columns),
            "values": "employment and wages: the published values rounded half to even and "
            "clamped at 0 (wages converted to dollars); qtrly_estabs: the public frame's "
            "count; avg_wkly_wage: from these published values",
            "disclosure": 'every cell has disclosure_code "" (published): a formally private '
            "release suppresses no cell; its uncertainty is in the *_moe.csv companion",
            "margins_of_error": f"*_moe.csv: 90% margins of error ({MOE_Z} × the published "
            "standard error) of month1_emplvl … total_qtrly_wages, rounded up; qtrly_estabs "
            "is exact (0); empty where a standard error is not published",
            "empty_columns": "taxable_qtrly_wages and qtrly_contributions (not measured); "
            "lq_* (needs the national release) and oty_* (needs last year's release)",
        },
    )


def _with_listed_cells(cells: pl.DataFrame, path: str) -> pl.DataFrame:
    """``cells`` plus the county cells listed in earlier by-area files that the frame lacks.

    Only the key columns of the listed files are read (public: the cells an earlier
    release listed); a listed cell with no establishment this quarter gets
    ``establishments = 0`` and no values (written with disclosure code "-").
    """
    from pathlib import Path

    p = Path(path)
    files = [p] if p.is_file() else sorted(
        f for f in p.iterdir() if f.name.lower().endswith((".csv", ".csv.gz"))
    )  # fmt: skip
    key = ["area_fips", "own_code", "industry_code", "agglvl_code"]
    try:
        listed = pl.concat(
            [pl.read_csv(f, columns=key, infer_schema_length=0) for f in files]
        ).unique()
    except (pl.exceptions.PolarsError, OSError, ValueError) as e:
        raise SpecError(
            f"[output].cells_from: {p} cannot be read as QCEW by-area files ({type(e).__name__})"
        ) from e
    listed = listed.with_columns(
        pl.col("own_code").cast(pl.Int64, strict=False),
        pl.col("agglvl_code").cast(pl.Int64, strict=False),
        pl.col("area_fips").str.strip_chars(),
        pl.col("industry_code").str.strip_chars(),
    ).filter(
        pl.col("agglvl_code").is_between(70, 78)
        & pl.col("area_fips").is_in(cells.get_column("area_fips").unique().to_list())
    )
    have = cells.with_columns(
        pl.col("own_code").cast(pl.Int64), pl.col("agglvl_code").cast(pl.Int64)
    )
    extra = listed.join(have.select(key), on=key, how="anti").with_columns(
        pl.lit(0, dtype=pl.Int64).alias("establishments")
    )
    return pl.concat([have, extra], how="diagonal_relaxed").sort(
        "area_fips", "agglvl_code", "own_code", "industry_code"
    )


def _number(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return str(int(v))


def _qcew_csv(cells: pl.DataFrame, year: int, qtr: int, *, moe: bool) -> bytes:
    """Cells in the QCEW open-data layout: codes quoted, numbers bare, CRLF-free."""
    out = io.StringIO()
    out.write(",".join(f'"{c}"' for c in QCEW_COLUMNS) + "\n")
    n_rest = len(QCEW_COLUMNS) - QCEW_COLUMNS.index("avg_wkly_wage") - 1
    for r in cells.iter_rows(named=True):
        if moe and r["m1emp"] is None:
            nums = ["0", "0", "0", "0", "0", "", "", ""]
        elif moe:
            ms = [None if r[f"{s}_var"] is None else
                  math.ceil(MOE_Z * math.sqrt(max(r[f"{s}_var"], 0.0)) - 1e-9)
                  for s in _STATS]  # fmt: skip
            nums = ["0", *(_number(m) for m in ms), "", "", ""]
        elif r["m1emp"] is None:  # listed, no establishment this quarter
            nums = ["0", "0", "0", "0", "0", "", "", ""]
        else:
            v = [max(0, round(r[s])) for s in _STATS]
            wk = avg_wkly_wage(v[3], v[0], v[1], v[2])
            nums = [str(r["establishments"] or 0), *(str(x) for x in v), "", "", _number(wk)]
        rest = ['""' if c in QCEW_TEXT_COLUMNS else ""
                for c in QCEW_COLUMNS[-n_rest:]]  # fmt: skip
        keys = [r["area_fips"], r["own_code"], r["industry_code"], r["agglvl_code"], 0, year, qtr]
        code = '"-"' if r["m1emp"] is None else '""'
        out.write(",".join([*(f'"{k}"' for k in keys), code, *nums, *rest]) + "\n")
    return out.getvalue().encode("utf-8")
