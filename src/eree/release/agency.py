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
    "qcew_levels",
    "wac_families",
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


def wac_families() -> dict[str, tuple[str, ...]]:
    """Each released WAC family → the ``by`` of its marginal (block first); C000 → (block,)."""
    return {"C000": (_GEO,), **{f: (_GEO, *a) for f, (a, _) in _WAC_SOURCE.items()}}


#: QCEW county level → the ``by`` of its released group-by sum (None: derived)
_QCEW_SOURCE: dict[int, tuple[str, ...] | None] = {
    70: ("state", "cnty"),
    71: ("state", "cnty", "own"),
    72: None,
    73: ("state", "cnty", "own", "super_sector"),
    74: ("state", "cnty", "own", "naics_sector"),
    75: ("state", "cnty", "own", "naics3"),
    76: ("state", "cnty", "own", "naics4"),
    77: ("state", "cnty", "own", "naics5"),
    78: ("state", "cnty", "own", "naics"),
}
#: the confidential attribute (Syn-RI name) of each QCEW measure
_QCEW_MEASURE = {
    "month1_emplvl": "m1emp",
    "month2_emplvl": "m2emp",
    "month3_emplvl": "m3emp",
    "total_qtrly_wages": "wage",
}


def qcew_levels() -> dict[int, tuple[str, ...]]:
    """Each released QCEW county level → the ``by`` of its group-by sum."""
    return {lv: by for lv, by in _QCEW_SOURCE.items() if by is not None}


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
        missing = [f for f, by in wac_families().items() if _query_of(plan, by) is None]
        if missing:
            need = "; ".join(f"{f}: by = {json.dumps(wac_families()[f])}" for f in missing)
            raise SpecError(f"{where}: no [[query]] releases the WAC families {need}")
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
    missing_q = [lv for lv, by in qcew_levels().items() if _query_of(plan, by) is None]
    if missing_q:
        need = "; ".join(f"{lv}: by = {json.dumps(qcew_levels()[lv])}" for lv in missing_q)
        raise SpecError(f"{where}: no [[query]] releases the county levels {need}")
    conf = plan.establishment_data.confidential
    absent = [a for a in _QCEW_MEASURE.values() if a not in conf]
    if absent:
        raise SpecError(f"{where}: [data].confidential lacks {', '.join(absent)}")
    for lv, by in qcew_levels().items():
        q = plan.query(_query_of(plan, by))
        if any(a not in q.mu for a in _QCEW_MEASURE.values()):
            raise SpecError(
                f"{where}: query {q.name!r} (level {lv}) must measure m1emp, m2emp, m3emp and wage"
            )
    if money_scale(unit_of("wage", _units(plan))) is None:
        raise SpecError(
            f'{where}: the unit of wage must be money ([data].units, e.g. wage = "dollars")'
        )


def check_wac_blocks(blocks: pl.Series, file: str) -> None:
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
                                  file=file, column=_GEO, rule="lodes-block")  # fmt: skip
    if len(states) > 1:
        raise DataValidationError(
            f"{want} of one state (a LODES file is per state); the blocks are in "
            f"{len(states)} states", file=file, column=_GEO, rule="lodes-block",
        )  # fmt: skip


#: each QCEW key column → (what its codes must be, the pattern or list they must match)
def _qcew_code_rules() -> dict[str, tuple[str, str | frozenset[str]]]:
    return {
        "state": ("a state FIPS code (1-2 digits)", r"^\d{1,2}$"),
        "cnty": ("a county FIPS code (1-3 digits)", r"^\d{1,3}$"),
        "own": ("a one-digit QCEW ownership code", r"^\d$"),
        "super_sector": (
            "a BLS supersector code (1011-1029)",
            frozenset(SUPERSECTOR_OF_SECTOR.values()),
        ),
        "naics_sector": ("a 2-digit NAICS sector of BLS's list", frozenset(QCEW_SECTOR_LABEL)),
        "naics3": ("a 3-digit NAICS code", r"^\d{3}$"),
        "naics4": ("a 4-digit NAICS code", r"^\d{4}$"),
        "naics5": ("a 5-digit NAICS code", r"^\d{5}$"),
        "naics": ("a 6-digit NAICS code", r"^\d{6}$"),
    }


def check_qcew_codes(plan: Any, groups: Callable[[Sequence[str]], pl.DataFrame], file: str) -> None:
    """The public codes of the establishment frame make QCEW files (after loading).

    The by-area files are named by the area code (``<state><county>.csv``) and every file
    keys its cells by ownership and industry codes of BLS's lists: a code outside them
    (text in an ownership, a sector BLS does not publish, HTML or a path in an area code)
    would be a traceback after the whole release, or a file name carrying the code. A spec
    cannot tell (the codes are data), so this runs once the data are loaded, before any
    noise, on the public frame's groups (``groups(by)``: one row per group of ``by``).

    Raises:
        DataValidationError: naming the file, the column and what its codes must be; never
            a code.
    """
    if plan.output.format not in ("qcew-by-area", "qcew-singlefile"):
        return
    rules = _qcew_code_rules()
    seen: set[str] = set()
    for by in qcew_levels().values():
        frame = groups(by)
        for column in by:
            if column in seen or column not in rules:
                continue
            seen.add(column)
            what, allowed = rules[column]
            codes = frame.get_column(column).cast(pl.Utf8).unique()
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
    from eree.data.schema import WORKER_DOMAINS

    fams = wac_families()
    name = {f: _query_of(plan, by) for f, by in fams.items()}
    raw_total = tables[str(name["C000"])]
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
        t = tables[q].with_columns(pl.col(_GEO).cast(pl.Utf8))
        codes = NAICS_SECTORS if attr == "naics_sector" else WORKER_DOMAINS[attr]
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
    fname = lodes_file_name("wac", state, "S000", plan.output.job_type, plan.output.year)
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
            "job_type": plan.output.job_type,
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

_STATS = tuple(_QCEW_MEASURE.values())


def _qcew_level(
    lv: int,
    t: pl.DataFrame,
    by: Sequence[str],
    counts: pl.DataFrame,
) -> pl.DataFrame:
    """One level's cells: area, own, industry, level, estabs, values and variances."""
    cols = [pl.col(s).cast(pl.Float64) for s in _STATS]
    var = [
        (pl.col(f"{s}_std").cast(pl.Float64) ** 2).alias(f"{s}_var")
        for s in _STATS
    ]  # fmt: skip
    text = [pl.col(c).cast(pl.Utf8) for c in by]
    frame = (
        t.with_columns(text)
        .join(counts.with_columns(text), on=list(by), how="left")
        .select(*by, *cols, *var, "establishments")
    )
    area = (
        pl.col("state").cast(pl.Utf8).str.zfill(2) + pl.col("cnty").cast(pl.Utf8).str.zfill(3)
    ).alias("area_fips")
    own = pl.col("own").cast(pl.Int64) if "own" in by else pl.lit(ALL_OWNERSHIPS)
    ind_col = by[-1] if len(by) > 3 else None
    if ind_col is None:
        industry = pl.lit(ALL_INDUSTRIES)
    elif lv == 74:
        industry = pl.col(ind_col).cast(pl.Utf8).replace_strict(QCEW_SECTOR_LABEL)
    else:
        industry = pl.col(ind_col).cast(pl.Utf8)
    keyed = frame.select(
        area, own.alias("own_code"), industry.alias("industry_code"),
        *_STATS, *[f"{s}_var" for s in _STATS], "establishments",
    )  # fmt: skip
    if lv in (72, 74):  # BLS aggregation: domains of supersectors, merged sector ranges
        if lv == 72:
            keyed = keyed.with_columns(
                domain_of_supersector(pl.col("industry_code")).alias("industry_code")
            )
        keyed = keyed.group_by("area_fips", "own_code", "industry_code").agg(
            pl.col(*_STATS, *[f"{s}_var" for s in _STATS]).sum(),
            pl.col("establishments").sum(),
        )
    return keyed.with_columns(pl.lit(lv).alias("agglvl_code"))


def _qcew(
    plan: Any,
    tables: Mapping[str, pl.DataFrame],
    establishments: Callable[[Sequence[str]], pl.DataFrame],
    fmt: str,
) -> AgencyOutput:
    to_dollars = money_scale(unit_of("wage", _units(plan))) or 1.0
    parts = []
    for lv, src in _QCEW_SOURCE.items():
        by = src if src is not None else _QCEW_SOURCE[73]
        assert by is not None
        t = tables[str(_query_of(plan, by))]
        counts = establishments(by).select(*by, "establishments")
        parts.append(_qcew_level(lv, t, by, counts))
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
            "levels": "county 70–78 by ownership; 72 = sum of the published supersector "
            "cells (73), 74 = sum of the published 2-digit sector cells (31-33, 44-45, "
            "48-49 merged); their standard errors the root sum of squares",
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
