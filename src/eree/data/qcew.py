"""The QCEW catalogue: industry codes, aggregation levels, their titles, and the BLS files.

The facts of the BLS Quarterly Census of Employment and Wages that the synthesiser
(:mod:`eree.synth`), the suppression tables (:mod:`eree.suppression.tables`), the
tabulation of microdata (:func:`eree.postprocess.wls.tabulate`) and the establishment
loader (:mod:`eree.data.establishments`) share, written once.

**Industry codes** are text, as in the files' ``industry_code`` column:

* 2-digit NAICS sector → BLS NAICS-based supersector (:data:`SUPERSECTOR_OF_SECTOR`,
  https://www.bls.gov/sae/additional-resources/naics-supersectors-for-ces-program.htm):
  1011 natural resources and mining (11, 21), 1012 construction (23), 1013 manufacturing
  (31–33), 1021 trade, transportation and utilities (22, 42, 44, 45, 48, 49),
  1022 information (51), 1023 financial activities (52, 53), 1024 professional and
  business services (54, 55, 56), 1025 education and health services (61, 62),
  1026 leisure and hospitality (71, 72), 1027 other services (81), 1028 public
  administration (92), 1029 unclassified (99). This is the mapping of the Syn-RI file.
* the QCEW sector label of a 2-digit sector (:data:`QCEW_SECTOR_LABEL`): QCEW publishes
  manufacturing, retail trade and transportation as the ranges ``31-33``, ``44-45``,
  ``48-49``;
* the domain of a supersector (:func:`domain_of_supersector`): ``101`` goods-producing
  (supersectors 1011–1013), ``102`` service-providing;
* ``10``: all industries (:data:`ALL_INDUSTRIES`); own code 0: all ownerships
  (:data:`ALL_OWNERSHIPS`).

**Aggregation levels** (BLS ``agglvl_code``): the area's base (10 national, 50 state, 70
county) plus 0 for the total of all ownerships at the industry total ("Total Covered"),
or 1 + the industry level (:data:`INDUSTRY_LEVELS`: total, domain, supersector, sector,
NAICS-3 … NAICS-6) by ownership: x1 total by ownership, x2 domain, x3 supersector, x4
sector, x5–x8 NAICS-3 … NAICS-6 (:func:`aggregation_level`). :data:`QCEW_AGGREGATION_LEVELS`
gives each code's group-by columns in establishment microdata (Syn-RI column names),
:data:`LEVEL_TITLES` its title as in the QCEW paper's Tables 8 and 9.

**Reading** (:func:`read_qcew_area_files`). One row per cell of the BLS open-data
"by area" files (a directory of ``*.csv``/``*.csv.gz`` or one file), for one year and
quarter, at the aggregation levels 50–58 (state) and 70–78 (county): ``area_fips``,
``own_code``, ``industry_code``, ``agglvl_code``, ``disclosure_code`` (``""`` published,
``"N"`` suppressed — values shown as 0 —, ``"-"`` no establishment this quarter), the
establishment count (``qtrly_estabs_count`` or, in newer files, ``qtrly_estabs``:
published for every cell, suppressed or not), ``month1_emplvl``, ``month2_emplvl``,
``month3_emplvl`` and ``total_qtrly_wages``.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from eree.errors import DataValidationError

__all__ = [
    "ALL_INDUSTRIES",
    "ALL_OWNERSHIPS",
    "AREAS",
    "CELL_KEY",
    "CELL_VALUES",
    "CELL_VALUE_OF_ATTRIBUTE",
    "GOODS_PRODUCING",
    "GOODS_PRODUCING_SUPERSECTORS",
    "INDUSTRY_LEVELS",
    "LEVEL_TITLES",
    "QCEW_AGGREGATION_LEVELS",
    "QCEW_SECTOR_LABEL",
    "SERVICE_PROVIDING",
    "SUPERSECTOR_OF_QCEW_SECTOR",
    "SUPERSECTOR_OF_SECTOR",
    "aggregation_level",
    "domain_of_supersector",
    "read_qcew_area_files",
]

# --------------------------------------------------------------------------------------
# industry codes
# --------------------------------------------------------------------------------------

#: BLS supersector code of each 2-digit NAICS sector
SUPERSECTOR_OF_SECTOR: dict[str, str] = {
    "11": "1011",
    "21": "1011",
    "23": "1012",
    "31": "1013",
    "32": "1013",
    "33": "1013",
    "22": "1021",
    "42": "1021",
    "44": "1021",
    "45": "1021",
    "48": "1021",
    "49": "1021",
    "51": "1022",
    "52": "1023",
    "53": "1023",
    "54": "1024",
    "55": "1024",
    "56": "1024",
    "61": "1025",
    "62": "1025",
    "71": "1026",
    "72": "1026",
    "81": "1027",
    "92": "1028",
    "99": "1029",
}

#: QCEW sector label (agglvl 54/74 industry_code) of each 2-digit NAICS prefix
QCEW_SECTOR_LABEL: dict[str, str] = {
    **{s: s for s in SUPERSECTOR_OF_SECTOR},
    "31": "31-33",
    "32": "31-33",
    "33": "31-33",
    "44": "44-45",
    "45": "44-45",
    "48": "48-49",
    "49": "48-49",
}

#: BLS supersector (agglvl 53/73) of each QCEW sector label (agglvl 54/74)
SUPERSECTOR_OF_QCEW_SECTOR: dict[str, str] = {
    QCEW_SECTOR_LABEL[s]: ss for s, ss in SUPERSECTOR_OF_SECTOR.items()
}

#: the supersectors of the goods-producing domain
GOODS_PRODUCING_SUPERSECTORS: tuple[str, ...] = ("1011", "1012", "1013")
#: domain code of the goods-producing supersectors
GOODS_PRODUCING = "101"
#: domain code of every other supersector
SERVICE_PROVIDING = "102"
#: industry code of all industries (the industry total)
ALL_INDUSTRIES = "10"
#: own code of all ownerships (the ownership total)
ALL_OWNERSHIPS = 0


def domain_of_supersector(supersector: pl.Expr) -> pl.Expr:
    """The domain code (text) of a text supersector code: goods-producing or service-providing."""
    return (
        pl.when(supersector.is_in(list(GOODS_PRODUCING_SUPERSECTORS)))
        .then(pl.lit(GOODS_PRODUCING))
        .otherwise(pl.lit(SERVICE_PROVIDING))
    )


# --------------------------------------------------------------------------------------
# aggregation levels
# --------------------------------------------------------------------------------------

#: per area: the base of its aggregation level codes, its title, and its group-by columns
#: in establishment microdata
AREAS: dict[str, tuple[int, str, tuple[str, ...]]] = {
    "national": (10, "National", ()),
    "state": (50, "State", ("state",)),
    "county": (70, "County", ("state", "cnty")),
}

#: the industry levels, coarsest first: (name, column in establishment microdata — the
#: Syn-RI names; the total has none —, title of the level by ownership). The sector level
#: reads Syn-RI's 2-digit ``naics_sector``; QCEW's own sector codes merge 31–33, 44–45
#: and 48–49 (:data:`QCEW_SECTOR_LABEL`).
INDUSTRY_LEVELS: tuple[tuple[str, str | None, str], ...] = (
    ("total", None, "Total -- by ownership"),
    ("domain", "domain", "by Domain"),
    ("supersector", "super_sector", "by Supersector"),
    ("sector", "naics_sector", "NAICS Sector"),
    ("naics3", "naics3", "NAICS 3-digit"),
    ("naics4", "naics4", "NAICS 4-digit"),
    ("naics5", "naics5", "NAICS 5-digit"),
    ("naics6", "naics", "NAICS 6-digit"),
)
_TOTAL_COVERED = "Total Covered"
_INDUSTRY_INDEX = {name: k for k, (name, _, _) in enumerate(INDUSTRY_LEVELS)}


def aggregation_level(area: str, industry: str = "total", *, by_ownership: bool = True) -> int:
    """The BLS aggregation level code of an area and industry level, by ownership or not.

    Only the industry total exists across all ownerships (x0, "Total Covered").

    Raises:
        KeyError: an unknown area or industry level.
        ValueError: an industry level other than the total across all ownerships.
    """
    base = AREAS[area][0]
    k = _INDUSTRY_INDEX[industry]
    if not by_ownership:
        if k:
            raise ValueError("only the industry total is published across all ownerships")
        return base
    return base + 1 + k


#: QCEW aggregation level code → group-by columns in establishment microdata (BLS agglvl
#: codes 10–18 national, 50–58 state, 70–78 county; x0 = total all ownerships, x1 = by
#: ownership, x2 domain, x3 supersector, x4 sector, x5–x8 NAICS-3 … NAICS-6, each by
#: ownership)
QCEW_AGGREGATION_LEVELS: dict[int, tuple[str, ...]] = {}
#: QCEW aggregation level code → title (as in the paper's Tables 8 and 9)
LEVEL_TITLES: dict[int, str] = {}
for _area, (_base, _title, _geo) in AREAS.items():
    QCEW_AGGREGATION_LEVELS[_base] = _geo
    LEVEL_TITLES[_base] = f"{_title} {_TOTAL_COVERED}"
    for _name, _column, _level_title in INDUSTRY_LEVELS:
        _code = aggregation_level(_area, _name)
        QCEW_AGGREGATION_LEVELS[_code] = (*_geo, "own", *([_column] if _column else []))
        LEVEL_TITLES[_code] = f"{_title} {_level_title}"

# --------------------------------------------------------------------------------------
# the BLS open-data by-area files
# --------------------------------------------------------------------------------------

#: the four measures of a QCEW cell, in the order month 1, 2, 3, wages
CELL_VALUES: tuple[str, ...] = (
    "month1_emplvl",
    "month2_emplvl",
    "month3_emplvl",
    "total_qtrly_wages",
)
#: the cell measure of each confidential attribute of establishment microdata (Syn-RI
#: names): an establishment's attribute adds up to its cell's measure
CELL_VALUE_OF_ATTRIBUTE: dict[str, str] = dict(
    zip(("m1emp", "m2emp", "m3emp", "wage"), CELL_VALUES, strict=True)
)
#: the columns that identify a cell of the files
CELL_KEY: tuple[str, ...] = ("area_fips", "own_code", "industry_code", "agglvl_code")

_ESTABS_COLUMNS = ("qtrly_estabs_count", "qtrly_estabs")
#: the levels read: every state and county level
_READ_LEVELS = tuple(code for code in QCEW_AGGREGATION_LEVELS if code >= AREAS["state"][0])


def _area_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise DataValidationError(
            "QCEW by-area input not found (expected a directory of CSV files or one file)",
            file=str(path),
            rule="missing-file",
        )
    files = sorted(p for p in path.iterdir() if p.name.lower().endswith((".csv", ".csv.gz")))
    if not files:
        raise DataValidationError(
            "no QCEW by-area files (*.csv, *.csv.gz) in this directory",
            file=str(path),
            rule="missing-file",
        )
    return files


def read_qcew_area_files(path: str | Path, year: int = 2016, qtr: int = 1) -> pl.DataFrame:
    """Read BLS QCEW open-data "by area" files: the cells of one year and quarter.

    Args:
        path: a directory of ``*.csv``/``*.csv.gz`` by-area files (all are read, e.g.
            every county and the statewide file of one or several states), or one file.
        year, qtr: the year and quarter to keep.

    Returns:
        One row per cell at agglvl 50–58 and 70–78 (all establishment sizes):
        ``area_fips`` (Utf8, 5 digits), ``own_code`` (Int64), ``industry_code`` (Utf8),
        ``agglvl_code`` (Int64), ``disclosure_code`` (Utf8: ``""`` published, ``"N"``
        suppressed, ``"-"`` no establishment), ``establishments`` (from
        ``qtrly_estabs_count`` or ``qtrly_estabs``), ``month1_emplvl``,
        ``month2_emplvl``, ``month3_emplvl``, ``total_qtrly_wages`` (Int64), sorted by
        agglvl, area, ownership and industry.

    Raises:
        DataValidationError: a missing file or column, a value that does not parse, a
            negative value, or a cell listed twice (file and column named).
    """
    frames = []
    for f in _area_files(Path(path)):
        file = str(f)
        try:
            raw = pl.read_csv(f, infer_schema_length=0)
        except (pl.exceptions.PolarsError, OSError) as e:
            raise DataValidationError(
                f"cannot read as CSV ({type(e).__name__})", file=file, rule="parse"
            ) from e
        estabs = next((c for c in _ESTABS_COLUMNS if c in raw.columns), None)
        need = [*CELL_KEY, "year", "qtr", "disclosure_code", *CELL_VALUES]
        missing = [c for c in need if c not in raw.columns]
        if estabs is None or missing:
            col = missing[0] if missing else "qtrly_estabs_count"
            raise DataValidationError(
                "required QCEW column is missing (the establishment count may be named "
                "qtrly_estabs_count or qtrly_estabs)",
                file=file,
                column=col,
                rule="missing-column",
            )
        df = raw.select(
            [*need, pl.col(estabs).alias("establishments")]
            + (["size_code"] if "size_code" in raw.columns else [])
        )
        ints = ["own_code", "agglvl_code", "year", "qtr", "establishments", *CELL_VALUES]
        for c in ints:
            parsed = df.get_column(c).str.strip_chars().cast(pl.Int64, strict=False)
            bad = parsed.is_null() | (parsed < 0)
            if bad.any():
                row = int(bad.arg_max() or 0)
                raise DataValidationError(
                    "value is missing, not an integer, or negative",
                    file=file,
                    row=row + 1,
                    column=c,
                    rule="parse",
                )
            df = df.with_columns(parsed.alias(c))
        keep = (pl.col("year") == year) & (pl.col("qtr") == qtr)
        keep = keep & pl.col("agglvl_code").is_in(list(_READ_LEVELS))
        if "size_code" in df.columns:
            keep = keep & (pl.col("size_code").str.strip_chars() == "0")
        frames.append(df.filter(keep))
    cells = (
        pl.concat(frames)
        .with_columns(
            pl.col("area_fips").str.strip_chars().str.zfill(5),
            pl.col("industry_code").str.strip_chars(),
            pl.col("disclosure_code").fill_null("").str.strip_chars(),
        )
        .select(*CELL_KEY, "disclosure_code", "establishments", *CELL_VALUES)
        .sort("agglvl_code", "area_fips", "own_code", "industry_code")
    )
    dup = cells.select(CELL_KEY).is_duplicated()
    if dup.any():
        raise DataValidationError(
            f"a cell (area, ownership, industry, agglvl) appears twice for {year} Q{qtr}",
            file=str(path),
            row=int(dup.arg_max() or 0) + 1,
            rule="duplicate-cell",
        )
    return cells
