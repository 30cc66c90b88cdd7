"""Agency formats from the agency's own columns and codes (``[output] columns, codes, levels``).

A QCEW-like file as an agency keeps it — ``uiacct, fips, own_code, ind2, emp_m1..3,
qtr_wages`` in dollars — written as ``qcew-by-area`` with the county levels 70–74 only,
and read back by ``eree check-format`` and by a reader written from the public layout.
Expected keys come from the data written here and BLS's published hierarchy (the few
sectors used, mapped below by hand), never from eree's code.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from eree.cli import app
from tests.release.layout_reader import read_qcew

runner = CliRunner()

#: the 2-digit sectors used → (QCEW sector label, BLS supersector) (BLS QCEW industry codes)
SECTORS = {
    "23": ("23", "1012"),
    "31": ("31-33", "1013"),
    "33": ("31-33", "1013"),
    "44": ("44-45", "1021"),
    "52": ("52", "1023"),
    "62": ("62", "1025"),
    "72": ("72", "1026"),
}
GOODS = {"1011", "1012", "1013"}  # domain 101; the others 102

SPEC = """
name = "agency-own-columns"
[data]
kind = "establishments"
path = "qcew_like.csv"
id = "uiacct"
public = ["fips", "own_code", "ind2"]
confidential = ["emp_m1", "emp_m2", "emp_m3", "qtr_wages"]
[data.units]
emp_m1 = "persons"
emp_m2 = "persons"
emp_m3 = "persons"
qtr_wages = "dollars"
[privacy]
definition = "gedp"
neighbor = "sqrt"
distance = { emp_m1 = 0.5, emp_m2 = 0.5, emp_m3 = 0.5, qtr_wages = 50.0 }
[[query]]
name = "identity"
by = "identity"
mechanism = "psi"
mu = { emp_m1 = 0.7, emp_m2 = 0.7, emp_m3 = 0.7, qtr_wages = 0.7 }
publish = false
[[query]]
name = "county"
by = ["fips"]
mechanism = "pnc"
mu = { emp_m1 = 0.3, emp_m2 = 0.3, emp_m3 = 0.3, qtr_wages = 0.3 }
[[query]]
name = "ownership"
by = ["fips", "own_code"]
mechanism = "pnc"
mu = { emp_m1 = 0.3, emp_m2 = 0.3, emp_m3 = 0.3, qtr_wages = 0.3 }
[[query]]
name = "sector"
by = ["fips", "own_code", "ind2"]
mechanism = "pnc"
mu = { emp_m1 = 0.3, emp_m2 = 0.3, emp_m3 = 0.3, qtr_wages = 0.3 }
[pnc]
bounds_from = "identity"
[output]
format = "qcew-by-area"
year = 2016
quarter = 1
levels = [70, 71, 72, 73, 74]
[output.columns]
area = "fips"
ownership = "own_code"
sector = "ind2"
month1_emplvl = "emp_m1"
month2_emplvl = "emp_m2"
month3_emplvl = "emp_m3"
total_qtrly_wages = "qtr_wages"
"""


def _data(n: int = 600, seed: int = 8) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    emp = rng.integers(1, 120, n)
    return pl.DataFrame(
        {
            "uiacct": [f"{1000000 + i}" for i in range(n)],
            "fips": rng.choice(["44001", "44003", "44007"], n).tolist(),
            "own_code": rng.choice(["5", "5", "5", "3", "1"], n).tolist(),
            "ind2": rng.choice(list(SECTORS), n).tolist(),
            "emp_m1": emp,
            "emp_m2": emp + rng.integers(0, 3, n),
            "emp_m3": emp + rng.integers(0, 3, n),
            "qtr_wages": emp * rng.integers(8_000, 20_000, n),  # dollars
        }
    )


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("agency_columns")
    data = _data()
    data.write_csv(root / "qcew_like.csv")
    (root / "spec.toml").write_text(SPEC)
    out = root / "rel"
    r = runner.invoke(app, ["protect", str(root / "spec.toml"), "--out", str(out), "--seed", "4"])
    assert r.exit_code == 0, r.output
    return {"data": data, "out": out}


def _expected_keys(data: pl.DataFrame) -> set[tuple[str, int, str, int]]:
    keys: set[tuple[str, int, str, int]] = set()
    for fips, own, ind in data.select("fips", "own_code", "ind2").iter_rows():
        label, supersector = SECTORS[ind]
        keys |= {
            (fips, 0, "10", 70),
            (fips, int(own), "10", 71),
            (fips, int(own), "101" if supersector in GOODS else "102", 72),
            (fips, int(own), supersector, 73),
            (fips, int(own), label, 74),
        }
    return keys


def test_each_county_file_passes_check_format(release: dict) -> None:
    files = sorted((release["out"] / "agency" / "2016" / "1" / "area").glob("*.csv"))
    values = [f for f in files if "_moe." not in f.name]
    # a seeded release: the names carry the mark before the extension
    assert [f.name for f in values] == [f"{c}.NOT-FOR-PUBLICATION.csv" for c in
                                        ("44001", "44003", "44007")]  # fmt: skip
    for f in files:
        args = ["check-format", str(f), "--format", "qcew-by-area"]
        if "_moe." in f.name:
            args.append("--moe")
        r = runner.invoke(app, args)
        assert r.exit_code == 0, r.output


def test_levels_70_to_74_only_with_the_data_cells(release: dict) -> None:
    area = release["out"] / "agency" / "2016" / "1" / "area"
    rows = [r for f in sorted(area.glob("44*.csv")) if "_moe" not in f.name
            for r in read_qcew(f)]  # fmt: skip
    keys = {(r["area_fips"], int(r["own_code"]), r["industry_code"], int(r["agglvl_code"]))  # type: ignore[arg-type]
            for r in rows}  # fmt: skip
    assert keys == _expected_keys(release["data"])
    assert len(keys) == len(rows)  # one row per cell
    # qtrly_estabs: the public frame's count per cell
    data = release["data"]
    for r in rows:
        if r["agglvl_code"] == "70":
            assert r["qtrly_estabs"] == data.filter(pl.col("fips") == r["area_fips"]).height
    # 73 sums the published sector cells of its supersector (each rounded: ± ½ per cell)
    by_key = {(r["area_fips"], r["own_code"], r["industry_code"], r["agglvl_code"]): r
              for r in rows}  # fmt: skip
    for (a, o, ind, lv), r in by_key.items():
        if lv != "73":
            continue
        parts = [x for (a2, o2, ind2, lv2), x in by_key.items()
                 if (a2, o2, lv2) == (a, o, "74")
                 and any(lab == ind2 and ss == ind for lab, ss in SECTORS.values())]  # fmt: skip
        total = sum(int(x["month1_emplvl"]) for x in parts)  # type: ignore[call-overload]
        assert abs(int(r["month1_emplvl"]) - total) <= len(parts) / 2 + 1e-9  # type: ignore[call-overload]


def test_the_manifest_records_the_mapping(release: dict) -> None:
    m = json.loads((release["out"] / "manifest.json").read_text())
    files = m["agency_files"]
    assert files["columns"]["area"] == "fips" and files["columns"]["sector"] == "ind2"
    assert "70, 71, 72, 73, 74" in files["levels"]


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("levels = [70, 71, 72, 73, 74]", "levels = [70, 79]", "levels must list"),
        ('sector = "ind2"', 'industry = "ind2"', "'industry' is not a QCEW layout field"),
        ('sector = "ind2"', 'sector = "naics6"', '74: by = ["fips", "own_code", "naics6"]'),
        ('total_qtrly_wages = "qtr_wages"', 'total_qtrly_wages = "wages"', "lacks wages"),
    ],
)
def test_the_mapping_is_checked_before_any_data_are_read(
    tmp_path: Path, old: str, new: str, words: str
) -> None:
    spec = SPEC.replace(old, new)
    assert spec != SPEC
    (tmp_path / "spec.toml").write_text(spec)  # no data file: nothing is read
    r = runner.invoke(app, ["protect", str(tmp_path / "spec.toml"), "--out",
                            str(tmp_path / "o"), "--seed", "1"])  # fmt: skip
    assert r.exit_code == 2, r.output
    assert words in r.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("column", "bad", "words"),
    [
        ("fips", "44<img src=x onerror=alert(5)>", "5-digit county FIPS"),
        ("own_code", "private", "one-digit QCEW ownership"),
        ("ind2", "07", "2-digit NAICS sector"),
    ],
)
def test_the_agencys_own_columns_are_checked_for_layout_codes(
    tmp_path: Path, column: str, bad: str, words: str
) -> None:
    """A code no QCEW file can carry, in a mapped column, is refused naming that column."""
    data = _data(n=60)
    data = data.with_columns(
        pl.when(pl.int_range(pl.len()) == 7)
        .then(pl.lit(bad))
        .otherwise(pl.col(column))
        .alias(column)
    )
    data.write_csv(tmp_path / "qcew_like.csv")
    (tmp_path / "spec.toml").write_text(SPEC)
    out = tmp_path / "o"
    r = runner.invoke(
        app, ["protect", str(tmp_path / "spec.toml"), "--out", str(out), "--seed", "1"]
    )
    assert r.exit_code == 2, r.output
    # the value is not echoed; the temporary folder's name may hold it (pytest-707: "07")
    shown = r.output.replace(str(tmp_path), "")
    assert words in shown and column in shown and bad not in shown
    assert not out.exists()
