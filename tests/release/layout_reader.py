"""A reader of the agencies' public layouts written from their documentation only.

It imports nothing from eree: the column lists below are typed from the public layout
documentation (LEHD's LODES technical documentation; BLS's QCEW "CSV data slice"
layout), so a file eree writes is loaded the way a downstream user's script would load it.
"""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path

#: LODES Workplace Area Characteristics, as documented (53 fields)
LODES_WAC_FIELDS = (
    ["w_geocode", "C000", "CA01", "CA02", "CA03", "CE01", "CE02", "CE03"]
    + [f"CNS{i:02d}" for i in range(1, 21)]
    + ["CR01", "CR02", "CR03", "CR04", "CR05", "CR07", "CT01", "CT02"]
    + ["CD01", "CD02", "CD03", "CD04", "CS01", "CS02"]
    + [f"CFA{i:02d}" for i in range(1, 6)]
    + [f"CFS{i:02d}" for i in range(1, 6)]
    + ["createdate"]
)

#: QCEW open-data CSV slice, as documented (42 fields)
QCEW_FIELDS = [
    "area_fips", "own_code", "industry_code", "agglvl_code", "size_code", "year", "qtr",
    "disclosure_code", "qtrly_estabs", "month1_emplvl", "month2_emplvl", "month3_emplvl",
    "total_qtrly_wages", "taxable_qtrly_wages", "qtrly_contributions", "avg_wkly_wage",
    "lq_disclosure_code", "lq_qtrly_estabs", "lq_month1_emplvl", "lq_month2_emplvl",
    "lq_month3_emplvl", "lq_total_qtrly_wages", "lq_taxable_qtrly_wages",
    "lq_qtrly_contributions", "lq_avg_wkly_wage", "oty_disclosure_code",
    "oty_qtrly_estabs_chg", "oty_qtrly_estabs_pct_chg", "oty_month1_emplvl_chg",
    "oty_month1_emplvl_pct_chg", "oty_month2_emplvl_chg", "oty_month2_emplvl_pct_chg",
    "oty_month3_emplvl_chg", "oty_month3_emplvl_pct_chg", "oty_total_qtrly_wages_chg",
    "oty_total_qtrly_wages_pct_chg", "oty_taxable_qtrly_wages_chg",
    "oty_taxable_qtrly_wages_pct_chg", "oty_qtrly_contributions_chg",
    "oty_qtrly_contributions_pct_chg", "oty_avg_wkly_wage_chg", "oty_avg_wkly_wage_pct_chg",
]  # fmt: skip
QCEW_TEXT = {"area_fips", "own_code", "industry_code", "agglvl_code", "size_code", "year",
             "qtr", "disclosure_code", "lq_disclosure_code", "oty_disclosure_code"}  # fmt: skip


def _text(path: Path) -> str:
    raw = path.read_bytes()
    if path.name.endswith(".gz"):
        raw = gzip.decompress(raw)
    return raw.decode("utf-8")


def read_lodes_wac(path: Path) -> list[dict[str, object]]:
    """Rows of a WAC file: ``w_geocode`` and ``createdate`` as text, counts as int (an
    empty field, a margin of error withheld in a companion file: None)."""
    reader = csv.reader(io.StringIO(_text(path)))
    header = next(reader)
    if header != LODES_WAC_FIELDS:
        raise ValueError(f"{path.name}: not the WAC header")
    rows = []
    for fields in reader:
        if len(fields) != len(header):
            raise ValueError(f"{path.name}: row of {len(fields)} fields")
        row: dict[str, object] = dict(zip(header, fields, strict=True))
        for c in header[1:-1]:
            f = fields[header.index(c)]
            row[c] = None if f == "" else int(f)
        rows.append(row)
    return rows


def read_qcew(path: Path) -> list[dict[str, object]]:
    """Rows of a QCEW open-data file: codes as text, numbers as int/float, empty as None.

    Checks the documented quoting: text fields quoted, numbers bare.
    """
    lines = _text(path).splitlines()
    header = next(csv.reader([lines[0]]))
    if header != QCEW_FIELDS:
        raise ValueError(f"{path.name}: not the QCEW open-data header")
    rows = []
    for line in lines[1:]:
        # a field is quoted when the raw text between commas starts with a quote
        raw_fields = line.split(",")
        fields = next(csv.reader([line]))
        if len(fields) != len(header) or len(raw_fields) != len(header):
            raise ValueError(f"{path.name}: row of {len(fields)} fields")
        row: dict[str, object] = {}
        for name, value, raw in zip(header, fields, raw_fields, strict=True):
            if name in QCEW_TEXT:
                if not raw.startswith('"'):
                    raise ValueError(f"{path.name}: {name} not quoted")
                row[name] = value
            elif value == "":
                row[name] = None
            else:
                if raw.startswith('"'):
                    raise ValueError(f"{path.name}: {name} quoted")
                row[name] = float(value) if "." in value else int(value)
        rows.append(row)
    return rows
