"""Establishment microdata loading and validation.

See docs/design.md#establishment-data, #validation.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest

from eree.data.config import EstablishmentDataConfig
from eree.data.establishments import (
    NAICS_DERIVED,
    derive_naics_columns,
    load_establishments,
)
from eree.data.qcew import SUPERSECTOR_OF_SECTOR
from eree.errors import DataValidationError

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
SYN_RI = SHARED_DATA / "syn_ri" / "ri44_qbp_2016_1.csv.gz"
needs_syn_ri = pytest.mark.skipif(not SYN_RI.is_file(), reason="../shared/data (Syn-RI) is absent")

#: a confidential value that must never appear in an error message
SECRET = "987654.321"

HEADER = '"","year","cnty","own","naics","m1emp","m2emp","m3emp","wage","primary_key"'
ROWS = [
    '"1",2016,1,5,236115,3,3,3,32,1001',
    '"2",2016,1,5,445110,2,2,2,25,1002',
    '"3",2016,3,5,311811,40,41,42,900,1003',
]
PUBLIC = ("cnty", "own", "naics", "naics3", "naics4", "naics5", "naics_sector", "super_sector")
CONF = ("m1emp", "m2emp", "m3emp", "wage")


def write_csv(path: Path, rows: list[str], header: str = HEADER) -> Path:
    text = "\n".join([header, *rows]) + "\n"
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def config(path: Path, **kw: object) -> EstablishmentDataConfig:
    kw.setdefault("public", PUBLIC)
    kw.setdefault("confidential", CONF)
    return EstablishmentDataConfig(path, **kw)  # type: ignore[arg-type]


def test_loads_and_derives_naics_columns(tmp_path: Path) -> None:
    data = load_establishments(config(write_csv(tmp_path / "e.csv.gz", ROWS)))
    f = data.frame
    assert f.columns == ["primary_key", *PUBLIC, *CONF]
    assert all(f.schema[c] == pl.Utf8 for c in ["primary_key", *PUBLIC])
    assert all(f.schema[c] == pl.Float64 for c in CONF)
    assert data.derived == NAICS_DERIVED and data.n == 3
    assert "" not in f.columns and "year" not in f.columns  # row-number column ignored
    row = f.row(0, named=True)
    assert (row["naics3"], row["naics4"], row["naics5"]) == ("236", "2361", "23611")
    assert (row["naics_sector"], row["super_sector"]) == ("23", "1012")
    assert f.get_column("super_sector").to_list() == ["1012", "1021", "1013"]
    assert f.get_column("wage").to_list() == [32.0, 25.0, 900.0]


def test_parquet(tmp_path: Path) -> None:
    df = pl.DataFrame(
        {
            "primary_key": [7, 8],
            "cnty": [1, 9],
            "own": [5, 5],
            "naics": [236115, 722511],
            "m1emp": [1, 2],
            "m2emp": [1.0, 2.0],
            "m3emp": [1, 2],
            "wage": [10.5, 20.0],
        }
    )
    p = tmp_path / "e.parquet"
    df.write_parquet(p)
    data = load_establishments(config(p))
    assert data.frame.get_column("primary_key").to_list() == ["7", "8"]
    assert data.frame.get_column("super_sector").to_list() == ["1012", "1026"]
    assert data.frame.get_column("wage").to_list() == [10.5, 20.0]


def _parts(tmp_path: Path, keys: list[list[int]], wage: float = 10.0) -> Path:
    """A partitioned table: one Parquet file per list of ids (in a nested layout)."""
    d = tmp_path / "estab"
    for i, ids in enumerate(keys):
        n = len(ids)
        sub = d / f"state={i}"
        sub.mkdir(parents=True)
        pl.DataFrame(
            {
                "primary_key": ids,
                "cnty": [1] * n,
                "own": [5] * n,
                "naics": [236115] * n,
                "m1emp": [1.0] * n,
                "m2emp": [2.0] * n,
                "m3emp": [3.0] * n,
                "wage": [wage] * n,
            }
        ).write_parquet(sub / "part.parquet")
    return d


def test_partitioned_directory_is_one_table(tmp_path: Path) -> None:
    d = _parts(tmp_path, [[1, 2], [3], [4, 5, 6]])
    data = load_establishments(config(d))
    assert data.frame.get_column("primary_key").to_list() == ["1", "2", "3", "4", "5", "6"]
    assert data.frame.get_column("naics5").to_list() == ["23611"] * 6


def test_partitioned_directory_errors_name_the_part_and_its_row(tmp_path: Path) -> None:
    d = _parts(tmp_path, [[1, 2], [3, 4, 1]])  # id 1 again: row 3 of the second part
    with pytest.raises(DataValidationError) as e:
        load_establishments(config(d))
    assert e.value.file == str(d / "state=1" / "part.parquet") and e.value.row == 3
    assert e.value.rule == "duplicate-id"
    assert f"first in file {d / 'state=0' / 'part.parquet'}, row 1" in str(e.value)
    bad = _parts(tmp_path / "neg", [[1, 2], [3, 4]], wage=-1.0)
    with pytest.raises(DataValidationError) as e:
        load_establishments(config(bad))
    assert e.value.file == str(bad / "state=0" / "part.parquet") and e.value.row == 1
    # the value is not in the message (the temporary path may itself contain "-1")
    assert e.value.column == "wage" and "-1" not in str(e.value).replace(str(bad), "")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataValidationError, match="without Parquet files"):
        load_establishments(config(tmp_path / "empty"))


def test_partitioned_directory_error_in_a_later_part(tmp_path: Path) -> None:
    d = _parts(tmp_path, [[1, 2], [3, 4]])
    part = d / "state=1" / "part.parquet"
    pl.read_parquet(part).with_columns(pl.Series("m2emp", [2.0, float("nan")])).write_parquet(part)
    with pytest.raises(DataValidationError) as e:
        load_establishments(config(d))
    assert (e.value.file, e.value.row, e.value.column) == (str(part), 2, "m2emp")


def test_supersector_mapping_covers_every_sector() -> None:
    assert set(SUPERSECTOR_OF_SECTOR.values()) == {
        f"10{i}" for i in range(11, 30) if i not in range(14, 21)
    }
    assert SUPERSECTOR_OF_SECTOR["31"] == SUPERSECTOR_OF_SECTOR["33"] == "1013"
    frame = pl.DataFrame({"naics": ["921110", "999999"]})
    out = derive_naics_columns(frame, ["super_sector", "naics_sector"])
    assert out.get_column("super_sector").to_list() == ["1028", "1029"]


def expect_error(path: Path, cfg: EstablishmentDataConfig | None = None) -> DataValidationError:
    with pytest.raises(DataValidationError) as info:
        load_establishments(cfg or config(path))
    err = info.value
    assert err.file == str(path)
    assert SECRET not in str(err) and "-" + SECRET not in str(err)
    return err


@pytest.mark.parametrize(
    ("row", "column", "rule"),
    [
        ('"2",2016,1,5,445110,2,2,2,25,', "primary_key", "missing-id"),
        ('"2",2016,1,5,445110,2,2,2,25,1001', "primary_key", "duplicate-id"),
        (f'"2",2016,1,5,445110,-{SECRET},2,2,25,1002', "m1emp", "negative"),
        ('"2",2016,1,5,445110,2,nan,2,25,1002', "m2emp", "not-finite"),
        ('"2",2016,1,5,445110,2,2,inf,25,1002', "m3emp", "not-finite"),
        (f'"2",2016,1,5,445110,2,2,2,{SECRET}x,1002', "wage", "type"),
        ('"2",2016,1,5,445110,2,2,2,,1002', "wage", "missing-value"),
        ('"2",2016,,5,445110,2,2,2,25,1002', "cnty", "missing-value"),
        ('"2",2016,1,5,44511,2,2,2,25,1002', "naics", "naics-format"),
        ('"2",2016,1,5,0x5110,2,2,2,25,1002', "naics", "naics-format"),
        ('"2",2016,1,5,675110,2,2,2,25,1002', "naics", "naics-sector"),
    ],
)
def test_row_errors_name_row_and_column(tmp_path: Path, row: str, column: str, rule: str) -> None:
    rows = [ROWS[0], row, ROWS[2]]
    rows[0] = rows[0].replace(",3,3,3,32,", f",3,3,3,{SECRET},")  # a secret in a valid row
    p = write_csv(tmp_path / "e.csv", rows)
    err = expect_error(p)
    assert (err.row, err.column, err.rule) == (2, column, rule)
    assert "row 2" in str(err) and repr(column) in str(err)


def test_missing_required_column(tmp_path: Path) -> None:
    header = HEADER.replace('"wage"', '"wages"')
    err = expect_error(write_csv(tmp_path / "e.csv", ROWS, header))
    assert err.column == "wage" and err.rule == "missing-column" and "did you mean" in str(err)
    # naics needed to derive the prefixes
    header = HEADER.replace('"naics"', '"industry"')
    err = expect_error(write_csv(tmp_path / "f.csv", ROWS, header))
    assert err.column == "naics"


def test_declared_domain(tmp_path: Path) -> None:
    p = write_csv(tmp_path / "e.csv", ROWS)
    err = expect_error(p, config(p, domains={"cnty": ("1", "5")}))
    assert (err.row, err.column, err.rule) == (3, "cnty", "domain")
    ok = load_establishments(config(p, domains={"cnty": ("1", "3"), "own": ("5",)}))
    assert ok.n == 3
    err = expect_error(p, config(p, domains={"wage": ("1",)}))
    assert err.column == "wage" and err.rule == "domain"


def test_roles_must_not_overlap(tmp_path: Path) -> None:
    p = write_csv(tmp_path / "e.csv", ROWS)
    err = expect_error(p, config(p, public=("cnty", "wage")))
    assert err.column == "wage" and err.rule == "roles"


def test_missing_file(tmp_path: Path) -> None:
    err = expect_error(tmp_path / "nope.csv")
    assert err.rule == "file-missing"


def test_present_prefix_columns_are_read_not_derived(tmp_path: Path) -> None:
    header = HEADER.replace('"naics"', '"naics","naics3"')
    rows = [r.replace(",236115,", ",236115,999,") for r in ROWS[:1]]
    data = load_establishments(config(write_csv(tmp_path / "e.csv", rows, header)))
    assert data.frame.get_column("naics3").to_list() == ["999"]
    assert "naics3" not in data.derived


@pytest.mark.shared_data
@needs_syn_ri
def test_syn_ri(tmp_path: Path) -> None:
    data = load_establishments(EstablishmentDataConfig(SYN_RI))
    assert data.n == 25_420 and data.derived == ()
    assert data.frame.columns == ["primary_key", *PUBLIC, *CONF]
    assert data.frame.get_column("primary_key").n_unique() == 25_420
    # deriving the prefixes from naics reproduces the file's own columns
    raw = pl.read_csv(SYN_RI, infer_schema=False).drop([*NAICS_DERIVED])
    p = tmp_path / "no_prefixes.parquet"
    raw.write_parquet(p)
    derived = load_establishments(EstablishmentDataConfig(p))
    assert derived.derived == NAICS_DERIVED
    assert derived.frame.equals(data.frame)
