"""The agencies' public file layouts, and a validator that reads a file back against them.

See docs/design.md#release-outputs; the products: docs/product-lodes-wac.md and
docs/product-qcew.md.

Written from the public layout documentation, and checked against real files in tests:

**LODES** (LEHD Origin-Destination Employment Statistics, technical documentation of
LODES 7 and 8). Workplace Area Characteristics ``[st]_wac_[SEG]_[JT]_[year].csv.gz``:
``w_geocode, C000, CA01–CA03, CE01–CE03, CNS01–CNS20, CR01–CR05, CR07, CT01–CT02,
CD01–CD04, CS01–CS02, CFA01–CFA05, CFS01–CFS05, createdate`` (:data:`WAC_COLUMNS`);
Residence Area Characteristics ``[st]_rac_…`` the same by ``h_geocode`` without the
firm columns (:data:`RAC_COLUMNS`). ``[st]`` is the state's lower-case postal code,
``SEG`` one of :data:`LODES_SEGMENTS`, ``JT`` ``JT00``–``JT05``; the geocode is the
15-digit census block (state FIPS first), one row per block, sorted; every count a
non-negative integer; each family (age CA, earnings CE, industry CNS, race CR, ethnicity
CT, sex CS) adds up to C000, education (CD) to CA02 + CA03 (education is tabulated for
workers aged 30 or older), the firm families (CFA, CFS) to at most C000 (firm age and
size are tabulated only where the firm is known, else 0); ``createdate`` is the file's
date, YYYYMMDD.

**QCEW** (BLS QCEW open data, "CSV data slice" layout): ``area_fips, own_code,
industry_code, agglvl_code, size_code, year, qtr, disclosure_code, qtrly_estabs,
month1_emplvl, month2_emplvl, month3_emplvl, total_qtrly_wages, taxable_qtrly_wages,
qtrly_contributions, avg_wkly_wage``, then the location quotients ``lq_*`` and the
over-the-year changes ``oty_*`` (:data:`QCEW_COLUMNS`, 42 fields). The "by area" CSV
files of the bulk download carry the five titles (``area_title``, ``own_title``,
``industry_title``, ``agglvl_title``, ``size_title``) after ``disclosure_code``, and
files of 2016 and earlier name the establishment count ``qtrly_estabs_count``
(``lq_qtrly_estabs_count``, ``oty_qtrly_estabs_count_chg``, …): both are accepted.
Text fields (codes, titles, disclosure codes) are quoted, numbers are not; a
``disclosure_code`` is ``""`` (published), ``"N"`` (not disclosable: values shown as 0)
or ``"-"`` (no establishment this quarter); ``avg_wkly_wage`` is the total wages over
the average monthly employment over 13 weeks, rounded. A by-area file holds one area.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import polars as pl

from eree.errors import DataValidationError

__all__ = [
    "FORMATS",
    "LODES_FAMILIES",
    "LODES_SEGMENTS",
    "QCEW_COLUMNS",
    "QCEW_TEXT_COLUMNS",
    "QCEW_TITLES",
    "RAC_COLUMNS",
    "STATE_POSTAL",
    "WAC_COLUMNS",
    "LayoutCheck",
    "avg_wkly_wage",
    "check_format",
    "lodes_file_name",
]

#: the agency layouts eree reads and writes (``[output] format``, ``eree check-format``)
FORMATS: tuple[str, ...] = ("lodes-wac", "lodes-rac", "qcew-by-area", "qcew-singlefile")


def _cols(prefix: str, numbers: range | tuple[int, ...]) -> tuple[str, ...]:
    return tuple(f"{prefix}{i:02d}" for i in numbers)


#: LODES column families in file order: family → its columns (C000 is the total)
LODES_FAMILIES: dict[str, tuple[str, ...]] = {
    "CA": _cols("CA", range(1, 4)),
    "CE": _cols("CE", range(1, 4)),
    "CNS": _cols("CNS", range(1, 21)),
    "CR": _cols("CR", (1, 2, 3, 4, 5, 7)),
    "CT": _cols("CT", range(1, 3)),
    "CD": _cols("CD", range(1, 5)),
    "CS": _cols("CS", range(1, 3)),
    "CFA": _cols("CFA", range(1, 6)),
    "CFS": _cols("CFS", range(1, 6)),
}
#: the workplace (WAC) layout
WAC_COLUMNS: tuple[str, ...] = (
    "w_geocode",
    "C000",
    *(c for cols in LODES_FAMILIES.values() for c in cols),
    "createdate",
)
#: the residence (RAC) layout: no firm age or size
RAC_COLUMNS: tuple[str, ...] = (
    "h_geocode",
    "C000",
    *(c for f, cols in LODES_FAMILIES.items() if f not in ("CFA", "CFS") for c in cols),
    "createdate",
)
#: LODES segments: all jobs, by age, by earnings, by industry group
LODES_SEGMENTS: tuple[str, ...] = (
    "S000", "SA01", "SA02", "SA03", "SE01", "SE02", "SE03", "SI01", "SI02", "SI03",
)  # fmt: skip
#: lower-case postal code of each state FIPS code (the ``[st]`` of a LODES file name)
STATE_POSTAL: dict[str, str] = {
    "01": "al", "02": "ak", "04": "az", "05": "ar", "06": "ca", "08": "co", "09": "ct",
    "10": "de", "11": "dc", "12": "fl", "13": "ga", "15": "hi", "16": "id", "17": "il",
    "18": "in", "19": "ia", "20": "ks", "21": "ky", "22": "la", "23": "me", "24": "md",
    "25": "ma", "26": "mi", "27": "mn", "28": "ms", "29": "mo", "30": "mt", "31": "ne",
    "32": "nv", "33": "nh", "34": "nj", "35": "nm", "36": "ny", "37": "nc", "38": "nd",
    "39": "oh", "40": "ok", "41": "or", "42": "pa", "44": "ri", "45": "sc", "46": "sd",
    "47": "tn", "48": "tx", "49": "ut", "50": "vt", "51": "va", "53": "wa", "54": "wv",
    "55": "wi", "56": "wy", "72": "pr",
}  # fmt: skip
_LODES_NAME = re.compile(
    r"^(?P<st>[a-z]{2})_(?P<kind>wac|rac)_(?P<seg>S000|SA0[1-3]|SE0[1-3]|SI0[1-3])_"
    r"(?P<jt>JT0[0-5])_(?P<year>\d{4})(?P<moe>_moe|_lower|_upper)?\.csv(\.gz)?$"
)


def lodes_file_name(kind: str, state_fips: str, segment: str, job_type: str, year: int) -> str:
    """``[st]_[wac|rac]_[SEG]_[JT]_[year].csv.gz`` for a state FIPS code."""
    return f"{STATE_POSTAL[state_fips]}_{kind}_{segment}_{job_type}_{year}.csv.gz"


_ESTABS = "qtrly_estabs"
_MEASURES = (
    _ESTABS, "month1_emplvl", "month2_emplvl", "month3_emplvl", "total_qtrly_wages",
    "taxable_qtrly_wages", "qtrly_contributions", "avg_wkly_wage",
)  # fmt: skip
_KEYS = ("area_fips", "own_code", "industry_code", "agglvl_code", "size_code", "year", "qtr")
#: the QCEW open-data layout (42 fields, the newer naming of the establishment count)
QCEW_COLUMNS: tuple[str, ...] = (
    *_KEYS,
    "disclosure_code",
    *_MEASURES,
    "lq_disclosure_code",
    *(f"lq_{m}" for m in _MEASURES),
    "oty_disclosure_code",
    *(f"oty_{m}_{s}" for m in _MEASURES for s in ("chg", "pct_chg")),
)
#: the titles the bulk "by area" files carry after ``disclosure_code``
QCEW_TITLES: tuple[str, ...] = (
    "area_title", "own_title", "industry_title", "agglvl_title", "size_title",
)  # fmt: skip
#: QCEW fields written in quotes (codes, titles and disclosure codes)
QCEW_TEXT_COLUMNS: frozenset[str] = frozenset(
    (*_KEYS, "disclosure_code", "lq_disclosure_code", "oty_disclosure_code", *QCEW_TITLES)
)
_DISCLOSURE = ("", "N", "-")
_COUNTS = frozenset(_MEASURES)  # non-negative integers
_OPTIONAL = frozenset(  # may be empty: not measured, or derived from what is not given
    ("taxable_qtrly_wages", "qtrly_contributions")
)


def _qcew_header_variants() -> list[tuple[str, ...]]:
    old = tuple(c.replace(_ESTABS, "qtrly_estabs_count") for c in QCEW_COLUMNS)
    out = []
    for cols in (QCEW_COLUMNS, old):
        i = cols.index("disclosure_code") + 1
        out += [cols, (*cols[:i], *QCEW_TITLES, *cols[i:])]
    return out


@dataclass(frozen=True)
class LayoutCheck:
    """A file that passed its layout check.

    Attributes:
        path: the file.
        format: the layout (:data:`FORMATS`).
        rows: data rows.
        columns: the header, in order.
        notes: what the layout allows and this file does (e.g. empty derived columns).
        seeded: the file's name carries the seeded release's mark (``NOT-FOR-PUBLICATION``
            before the extension, :func:`eree.privacy.release_check.seeded_name`): its
            layout is checked as the name without the mark, and it must not be published.
    """

    path: Path
    format: str
    rows: int
    columns: tuple[str, ...]
    notes: tuple[str, ...] = ()
    seeded: bool = False


def check_format(
    path: str | Path, fmt: str, *, companion: bool = False, bounds: bool = False
) -> LayoutCheck:
    """Read ``path`` back against the public layout ``fmt`` (:data:`FORMATS`).

    ``companion``: a margin-of-error file in the same layout (LODES: named ``…_moe``;
    margins do not add up, so the family sums and the average weekly wage are not
    checked; an empty LODES margin is one the mechanism withholds).
    ``bounds`` (LODES): a coarsened publication's bounds companion, named ``…_lower`` or
    ``…_upper`` (docs/coarsening.md): bounds do not add up, so the sums are not
    checked; an upper bound may be empty (a withheld cell: unbounded), a lower may not.

    Raises:
        DataValidationError: the first violation, naming file, row (1-based, header
            excluded) and column; never a value of the file.
        ValueError: an unknown format.
    """
    from dataclasses import replace

    from eree.privacy.release_check import unmarked_name

    path = Path(path)
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    if not path.is_file():
        raise DataValidationError("file not found", file=str(path), rule="missing-file")
    name, seeded = unmarked_name(path.name)
    if bounds and not fmt.startswith("lodes"):
        raise ValueError("bounds companions are checked for the LODES layouts only")
    if fmt.startswith("lodes"):
        result = _check_lodes(path, fmt, companion, name, bounds)
    else:
        result = _check_qcew(path, fmt, companion)
    return replace(result, seeded=seeded)


# --------------------------------------------------------------------------------------
# LODES
# --------------------------------------------------------------------------------------


def _fail(path: Path, message: str, row: int | None = None, column: str | None = None) -> None:
    raise DataValidationError(message, file=str(path), row=row, column=column, rule="layout")


def _first(mask: pl.Series) -> int:
    return int(mask.arg_max() or 0) + 1


def _check_lodes(
    path: Path, fmt: str, companion: bool, name: str, bounds: bool = False
) -> LayoutCheck:
    kind = fmt.split("-")[1]
    expected = WAC_COLUMNS if kind == "wac" else RAC_COLUMNS
    m = _LODES_NAME.match(name)
    want = ("_lower", "_upper") if bounds else ("_moe",) if companion else (None,)
    if m is None or m["kind"] != kind or m["moe"] not in want:
        moe = "_lower|_upper" if bounds else "_moe" if companion else ""
        _fail(path, f"file name is not [st]_{kind}_[SEG]_[JT]_[year]{moe}.csv.gz (LODES naming)")
    assert m is not None
    upper = m["moe"] == "_upper"
    companion = companion or bounds
    try:
        df = pl.read_csv(path, infer_schema_length=0)
    except (pl.exceptions.PolarsError, OSError, EOFError, zlib.error) as e:
        raise DataValidationError(
            f"cannot read as CSV ({type(e).__name__})", file=str(path), rule="parse"
        ) from e
    if tuple(df.columns) != expected:
        at = next(
            (i for i, (a, b) in enumerate(zip(df.columns, expected, strict=False)) if a != b),
            min(len(df.columns), len(expected)),
        )
        col = expected[at] if at < len(expected) else df.columns[at]
        _fail(path, f"header differs from the LODES {kind.upper()} layout "
              f"({len(expected)} columns) at field {at + 1}", column=col)  # fmt: skip
    if df.height == 0:
        _fail(path, "no data rows")
    geo = expected[0]
    g = df.get_column(geo)
    bad = g.is_null() | ~g.str.contains(r"^\d{15}$")
    if bad.any():
        _fail(path, "not a 15-digit census block code", _first(bad), geo)
    wrong_state = g.str.slice(0, 2) != _fips_of(m["st"])
    if wrong_state.any():
        _fail(path, f"block is not in the state of the file name ({m['st']})",
              _first(wrong_state), geo)  # fmt: skip
    unsorted = g.slice(1) <= g.slice(0, g.len() - 1)
    if unsorted.any():
        _fail(path, "blocks are not unique and in ascending order", _first(unsorted) + 1, geo)
    counts: dict[str, pl.Series] = {}
    for c in expected[1:-1]:
        s = df.get_column(c)
        if bounds and not upper:
            bad = s.is_null() | ~s.str.contains(r"^\d+$")
            what = "not a non-negative integer lower bound"
        elif bounds:  # an empty upper bound: a withheld cell, unbounded
            bad = s.is_not_null() & ~s.str.contains(r"^\d+$")
            what = "not a non-negative integer upper bound (or empty)"
        elif companion:  # an empty margin: the mechanism withholds its variance
            bad = s.is_not_null() & ~s.str.contains(r"^\d+$")
            what = "not a non-negative integer margin of error (or empty)"
        else:
            bad = s.is_null() | ~s.str.contains(r"^\d+$")
            what = "not a non-negative integer count"
        if bad.any():
            _fail(path, what, _first(bad), c)
        counts[c] = s.cast(pl.Int64)
    total = counts["C000"]
    for fam, cols in LODES_FAMILIES.items():
        if cols[0] not in counts or companion:
            continue
        s = pl.DataFrame(counts).select(pl.sum_horizontal(*cols)).to_series()
        if fam == "CD":
            bad = s != counts["CA02"] + counts["CA03"]
            why = "CD01–CD04 do not add up to CA02 + CA03 (education of workers aged 30+)"
        elif fam in ("CFA", "CFS"):
            bad = s > total
            why = f"{fam}01–{fam}05 add up to more than C000"
        else:
            bad = s != total
            why = f"{cols[0]}–{cols[-1]} do not add up to C000"
        if bad.any():
            _fail(path, why, _first(bad), cols[0])
    cd = df.get_column("createdate")
    bad = cd.is_null() | ~cd.str.contains(r"^\d{8}$")
    if not bad.any():
        bad = ~cd.map_elements(_is_date, return_dtype=pl.Boolean)
    if bad.any():
        _fail(path, "createdate is not a date YYYYMMDD", _first(bad), "createdate")
    return LayoutCheck(path, fmt, df.height, tuple(df.columns))


def _fips_of(postal: str) -> str:
    for fips, st in STATE_POSTAL.items():
        if st == postal:
            return fips
    return "??"


def _is_date(text: str) -> bool:
    try:
        date(int(text[:4]), int(text[4:6]), int(text[6:]))
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------------------
# QCEW
# --------------------------------------------------------------------------------------


def _fields(line: str) -> Iterator[tuple[str, bool]]:
    """The fields of one CSV line: (text, was it quoted). Doubled quotes inside quotes."""
    i, n = 0, len(line)
    while True:
        if i < n and line[i] == '"':
            j, buf = i + 1, []
            while True:
                k = line.find('"', j)
                if k < 0:
                    raise ValueError("unterminated quote")
                buf.append(line[j:k])
                if k + 1 < n and line[k + 1] == '"':
                    buf.append('"')
                    j = k + 2
                    continue
                i = k + 1
                break
            yield "".join(buf), True
        else:
            k = line.find(",", i)
            k = n if k < 0 else k
            yield line[i:k], False
            i = k
        if i >= n:
            return
        if line[i] != ",":
            raise ValueError("text after a closing quote")
        i += 1
        if i == n:
            yield "", False
            return


_INT = re.compile(r"^\d+$")
_NUM = re.compile(r"^-?\d+(\.\d+)?$")


def avg_wkly_wage(wages: float, m1: float, m2: float, m3: float) -> int | None:
    """BLS average weekly wage: quarterly wages / average monthly employment / 13, rounded.

    None where the average employment is not positive.
    """
    emp = (m1 + m2 + m3) / 3
    if emp <= 0:
        return None
    return int(wages / emp / 13 + 0.5)


def _open_text(path: Path) -> Iterator[str]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as fp:
        for line in fp:
            yield line.rstrip("\r\n")


def _check_qcew(path: Path, fmt: str, companion: bool) -> LayoutCheck:
    try:
        lines = _open_text(path)
        header_line = next(lines, None)
        if header_line is None:
            _fail(path, "empty file")
        assert header_line is not None
        header = list(_fields(header_line))
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError) as e:
        raise DataValidationError(
            f"cannot read as CSV ({type(e).__name__})", file=str(path), rule="parse"
        ) from e
    names = tuple(h for h, _ in header)
    variants = _qcew_header_variants()
    if fmt == "qcew-singlefile":
        variants = [v for v in variants if "area_title" not in v]
    if names not in variants:
        bad = next((i for i, (a, b) in enumerate(zip(names, QCEW_COLUMNS, strict=False))
                    if a != b and a != b.replace(_ESTABS, "qtrly_estabs_count")),
                   min(len(names), len(QCEW_COLUMNS)))  # fmt: skip
        _fail(path, f"header is not the QCEW {fmt[5:]} layout ({len(QCEW_COLUMNS)} fields, "
              "or the by-area files' titles after disclosure_code)",
              column=names[bad] if bad < len(names) else None)  # fmt: skip
    if not all(q for _, q in header):
        _fail(path, "header fields are not quoted")
    at = {c: i for i, c in enumerate(names)}
    seen: set[tuple[str, ...]] = set()
    areas: set[str] = set()
    rows = 0
    empty_derived: set[str] = set()
    try:
        for rows, line in enumerate(lines, start=1):
            fields = list(_fields(line))
            if len(fields) != len(names):
                _fail(path, f"{len(fields)} fields, the header has {len(names)}", rows)
            for c, (text, quoted) in zip(names, fields, strict=True):
                _check_qcew_field(path, rows, c, text, quoted, empty_derived, companion)
            key = tuple(fields[at[c]][0] for c in _KEYS)
            if key in seen:
                _fail(path, "the cell (area, ownership, industry, level, size, year, "
                      "quarter) appears twice", rows, "area_fips")  # fmt: skip
            seen.add(key)
            areas.add(key[0])
            if fmt == "qcew-by-area" and len(areas) > 1:
                _fail(path, "a by-area file holds more than one area", rows, "area_fips")
            _check_qcew_row(path, rows, {c: fields[at[c]][0] for c in at}, companion)
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as e:
        raise DataValidationError(
            f"cannot read as CSV ({type(e).__name__})", file=str(path), row=rows + 1,
            rule="parse",
        ) from e  # fmt: skip
    except ValueError as e:
        raise DataValidationError(
            f"not a CSV line ({e})", file=str(path), row=rows, rule="parse"
        ) from e
    if rows == 0:
        _fail(path, "no data rows")
    allowed = "empty in some rows (allowed: not measured, derived, or a withheld margin)"
    notes = (f"{allowed}: {', '.join(sorted(empty_derived))}",) if empty_derived else ()
    return LayoutCheck(path, fmt, rows, names, notes)


#: the measures whose margin a companion leaves empty where the mechanism withholds it
_QCEW_MARGINS = ("month1_emplvl", "month2_emplvl", "month3_emplvl", "total_qtrly_wages")


def _check_qcew_field(
    path: Path, row: int, c: str, text: str, quoted: bool, empty_derived: set[str],
    companion: bool = False,
) -> None:  # fmt: skip
    if c in QCEW_TEXT_COLUMNS:
        if not quoted:
            _fail(path, "a code or title field is not quoted", row, c)
        return
    if quoted:
        _fail(path, "a number is quoted", row, c)
    if text == "":
        if c.startswith(("lq_", "oty_")) or c in _OPTIONAL or c == "avg_wkly_wage":
            empty_derived.add(c)
            return
        if companion and c in _QCEW_MARGINS:  # a margin the mechanism withholds
            empty_derived.add(c)
            return
        _fail(path, "empty number", row, c)
    base = c.replace("_count", "")
    if base in _COUNTS:
        if not _INT.match(text):
            _fail(path, "not a non-negative integer", row, c)
    elif not _NUM.match(text):
        _fail(path, "not a number", row, c)


def _check_qcew_row(path: Path, row: int, f: dict[str, str], companion: bool) -> None:
    if not re.match(r"^[0-9A-Z]{5}$", f["area_fips"]):
        _fail(path, "area_fips is not a 5-character area code", row, "area_fips")
    for c in ("own_code", "agglvl_code", "size_code", "qtr", "year"):
        if not _INT.match(f[c]):
            _fail(path, "not an integer code", row, c)
    if f["own_code"] not in ("0", "1", "2", "3", "4", "5", "8", "9"):
        _fail(path, "own_code is not a QCEW ownership code (0–5, 8, 9)", row, "own_code")
    if f["qtr"] not in ("1", "2", "3", "4") or len(f["year"]) != 4:
        _fail(path, "year is not 4 digits or qtr not 1–4", row, "qtr")
    level = int(f["agglvl_code"])
    if not 10 <= level <= 99:
        _fail(path, "agglvl_code is not a 2-digit aggregation level", row, "agglvl_code")
    if level % 10 == 0 and level <= 80 and (f["own_code"] != "0" or f["industry_code"] != "10"):
        _fail(path, "an x0 level is the total of all ownerships and industries (own 0, "
              "industry 10)", row, "agglvl_code")  # fmt: skip
    for c in ("disclosure_code", "lq_disclosure_code", "oty_disclosure_code"):
        if f[c] not in _DISCLOSURE:
            _fail(path, 'disclosure code is not "", "N" or "-"', row, c)
    values = [f[c] for c in ("month1_emplvl", "month2_emplvl", "month3_emplvl",
                             "total_qtrly_wages")]  # fmt: skip
    if f["disclosure_code"] == "N" and any(v not in ("0", "") for v in values):
        _fail(path, 'a suppressed cell ("N") shows a value other than 0', row,
              "month1_emplvl")  # fmt: skip
    if f["disclosure_code"] == "" and f["avg_wkly_wage"] != "" and not companion:
        m1, m2, m3, w = (int(v) for v in values)
        expected = avg_wkly_wage(w, m1, m2, m3)
        if expected is not None and abs(int(f["avg_wkly_wage"]) - expected) > 1:
            _fail(path, "avg_wkly_wage is not total_qtrly_wages / average monthly "
                  "employment / 13", row, "avg_wkly_wage")  # fmt: skip
