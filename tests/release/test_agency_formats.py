"""Releases in the agencies' own layouts (docs/product-lodes-wac.md, docs/product-qcew.md).

Black-box through the command: ``eree check-format`` on the real public files, ``eree synth
… `` + ``eree protect`` on data derived from them, every written file loaded by a reader
written from the public layout alone (:mod:`tests.release.layout_reader`). Expected values
come from the layouts (column lists, family sums, BLS's average weekly wage) and from the
real files (their blocks and cells), never from eree's code.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from pathlib import Path
from unittest import mock

import polars as pl
import pytest
from typer.testing import CliRunner

from eree.cli import app
from tests.release.layout_reader import (
    LODES_WAC_FIELDS,
    QCEW_FIELDS,
    read_lodes_wac,
    read_qcew,
)

runner = CliRunner()
_WAC = "lodes/pa_wac_S000_JT00_2015.csv.gz"
_QCEW_KEY = ("area_fips", "own_code", "industry_code", "agglvl_code")
#: WAC column families that add up to C000 (LODES technical documentation)
_TO_C000 = {
    "CA": ["CA01", "CA02", "CA03"],
    "CE": ["CE01", "CE02", "CE03"],
    "CNS": [f"CNS{i:02d}" for i in range(1, 21)],
    "CR": ["CR01", "CR02", "CR03", "CR04", "CR05", "CR07"],
    "CT": ["CT01", "CT02"],
    "CS": ["CS01", "CS02"],
}


def _check(path: Path, fmt: str, *extra: str) -> object:
    return runner.invoke(app, ["check-format", str(path), "--format", fmt, *extra])


# --------------------------------------------------------------------------------------
# the validator on the real public files
# --------------------------------------------------------------------------------------


def test_real_pa_wac_file_passes(shared_data: Path) -> None:
    r = _check(shared_data / _WAC, "lodes-wac")
    assert r.exit_code == 0, r.output
    assert "101,427 rows, 53 columns" in r.output


def test_real_qcew_by_area_files_pass(shared_data: Path) -> None:
    files = sorted((shared_data / "qcew_2016_by_area").glob("*.csv.gz"))
    assert len(files) == 14
    for f in files:
        r = _check(f, "qcew-by-area")
        assert r.exit_code == 0, (f.name, r.output)


def _wac_text(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(LODES_WAC_FIELDS)
    w.writerows(rows)
    return gzip.compress(out.getvalue().encode())


def _good_wac_row(block: str) -> list[str]:
    # 10 jobs: every family adds up to 10, CD to CA02 + CA03 = 7, firm columns 0
    v = {c: 0 for c in LODES_WAC_FIELDS[1:-1]}
    v.update(C000=10, CA01=3, CA02=4, CA03=3, CE01=5, CE02=5, CNS05=10, CR01=9, CR02=1,
             CT01=10, CD01=2, CD04=5, CS01=6, CS02=4)  # fmt: skip
    return [block, *(str(v[c]) for c in LODES_WAC_FIELDS[1:-1]), "20170919"]


@pytest.mark.parametrize(
    ("column", "delta", "row_text"),
    [("CA01", 1, "CA01"), ("CD01", 1, "CD01"), ("CNS07", 1, "CNS01"), ("C000", -1, "CA01")],
)
def test_wac_validator_names_row_and_column_of_a_broken_sum(
    tmp_path: Path, column: str, delta: int, row_text: str
) -> None:
    rows = [_good_wac_row("420010301011013"), _good_wac_row("420010301011016")]
    i = LODES_WAC_FIELDS.index(column)
    rows[1][i] = str(int(rows[1][i]) + delta)
    f = tmp_path / "pa_wac_S000_JT00_2015.csv.gz"
    f.write_bytes(_wac_text(rows[:1]))
    assert _check(f, "lodes-wac").exit_code == 0  # the good row alone passes
    f.write_bytes(_wac_text(rows))
    r = _check(f, "lodes-wac")
    assert r.exit_code == 2
    assert f"row 2, column '{row_text}'" in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_wac_validator_refuses_name_state_order_and_header(tmp_path: Path) -> None:
    good = [_good_wac_row("420010301011013"), _good_wac_row("420010301011016")]
    cases = {
        "pa_wac_S000_JT00_15.csv.gz": (good, "LODES naming"),
        "ri_wac_S000_JT00_2015.csv.gz": (good, "state of the file name"),
        "pa_wac_S000_JT00_2016.csv.gz": (good[::-1], "ascending order"),
        "pa_wac_SA01_JT01_2014.csv.gz": ([["4200103010110", *good[0][1:]]], "15-digit"),
    }
    for name, (rows, words) in cases.items():
        f = tmp_path / name
        f.write_bytes(_wac_text(rows))
        r = _check(f, "lodes-wac")
        assert r.exit_code == 2 and words in r.output, (name, r.output)
    f = tmp_path / "pa_rac_S000_JT00_2015.csv.gz"
    f.write_bytes(_wac_text(good))  # a WAC header under a RAC name
    r = _check(f, "lodes-rac")
    assert r.exit_code == 2 and "column 'h_geocode'" in r.output
    # the RAC layout: h_geocode, no firm age or size
    keep = [i for i, c in enumerate(LODES_WAC_FIELDS) if not c.startswith(("CFA", "CFS"))]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["h_geocode", *(LODES_WAC_FIELDS[i] for i in keep[1:])])
    w.writerows([[row[i] for i in keep] for row in good])
    f.write_bytes(gzip.compress(out.getvalue().encode()))
    assert _check(f, "lodes-rac").exit_code == 0


def _qcew_line(fields: list[str], quoted: set[int]) -> str:
    return ",".join(f'"{v}"' if i in quoted else v for i, v in enumerate(fields))


def test_qcew_validator_quoting_and_average_weekly_wage(tmp_path: Path) -> None:
    n = len(QCEW_FIELDS)
    text_idx = {i for i, c in enumerate(QCEW_FIELDS) if c.endswith("_code") or c in
                ("area_fips", "industry_code", "year", "qtr")}  # fmt: skip
    # 13,219 average employment, $129,796,826: 129796826 / 13219 / 13 = 755.3 → 755
    row = ["44001", "0", "10", "70", "0", "2016", "1", "", "1418", "12898", "13313", "13446",
           "129796826", "72775673", "2439298", "755"] + [""] * (n - 16)  # fmt: skip
    header = ",".join(f'"{c}"' for c in QCEW_FIELDS)
    f = tmp_path / "44001.csv"
    f.write_text(header + "\n" + _qcew_line(row, text_idx) + "\n")
    assert _check(f, "qcew-by-area").exit_code == 0
    assert read_qcew(f)[0]["avg_wkly_wage"] == 755
    own5 = [row[0], "5", "10", "71", *row[4:]]  # another cell: private ownership, level 71
    for broken, words in [
        (_qcew_line(own5, text_idx - {0}), "not quoted"),
        (_qcew_line(own5, text_idx | {9}), "number is quoted"),
        (_qcew_line([*own5[:15], "800", *own5[16:]], text_idx), "avg_wkly_wage"),
        (_qcew_line([*own5[:7], "N", *own5[8:]], text_idx), "suppressed"),
        (_qcew_line([*own5[:9], "-5", *own5[10:]], text_idx), "non-negative"),
        (_qcew_line(row, text_idx), "appears twice"),
    ]:
        f.write_text(header + "\n" + _qcew_line(row, text_idx) + "\n" + broken + "\n")
        r = _check(f, "qcew-by-area")
        assert r.exit_code == 2 and words in r.output and "row 2" in r.output, r.output
    x0 = [row[0], "5", *row[2:]]
    f.write_text(header + "\n" + _qcew_line(x0, text_idx) + "\n")
    assert "x0 level" in _check(f, "qcew-by-area").output  # own 5 at level 70
    two_areas = [*row]
    two_areas[0] = "44003"
    f.write_text(header + "\n" + _qcew_line(row, text_idx) + "\n" +
                 _qcew_line(two_areas, text_idx) + "\n")  # fmt: skip
    assert "more than one area" in _check(f, "qcew-by-area").output
    assert _check(f, "qcew-singlefile").exit_code == 0


# --------------------------------------------------------------------------------------
# the LODES WAC product
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wac_release(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One county of the real PA WAC file → synthetic job tables → the WAC product."""
    root = tmp_path_factory.mktemp("wac")
    real = pl.read_csv(shared_data / _WAC, infer_schema_length=0)
    county = real.filter(pl.col("w_geocode").str.starts_with("42001"))  # Adams County
    src = root / "pa_wac_S000_JT00_2015.csv.gz"
    src.write_bytes(gzip.compress(county.write_csv().encode()))
    r = runner.invoke(app, ["synth", "lodes", "--wac", str(src), "--out", str(root / "pa"),
                            "--seed", "1"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert (root / "pa" / "product.toml").is_file()
    r = runner.invoke(app, ["protect", str(root / "pa" / "product.toml"), "--out",
                            str(root / "rel"), "--seed", "2"])  # fmt: skip
    assert r.exit_code == 0, r.output
    return {"root": root, "real": county, "rel": root / "rel"}


def test_wac_product_passes_the_layout_and_has_the_real_blocks(wac_release: dict) -> None:
    agency = wac_release["rel"] / "agency"
    # a seeded release: every file name carries the mark (docs/design.md#release-outputs)
    f = agency / "pa_wac_S000_JT00_2015.NOT-FOR-PUBLICATION.csv.gz"
    moe = agency / "pa_wac_S000_JT00_2015_moe.NOT-FOR-PUBLICATION.csv.gz"
    assert sorted(p.name for p in agency.iterdir()) == [f.name, moe.name]
    r = _check(f, "lodes-wac")
    assert r.exit_code == 0, r.output
    assert "NOT FOR PUBLICATION" in r.output  # checked as the LODES name, and flagged
    r = _check(f, "lodes-wac", "--for-publication")
    assert r.exit_code == 2 and "NOT FOR PUBLICATION" in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1
    assert f.read_bytes()[10:30].startswith(b"NOT-FOR-PUBLICATION\x00")  # the gzip FNAME
    unmarked = wac_release["root"] / "copy" / "pa_wac_S000_JT00_2015.csv.gz"
    unmarked.parent.mkdir(exist_ok=True)
    unmarked.write_bytes(f.read_bytes())  # the same content under the plain name passes
    r = _check(unmarked, "lodes-wac", "--for-publication")
    assert r.exit_code == 0 and "NOT FOR PUBLICATION" not in r.output, r.output
    rows = read_lodes_wac(f)
    real = wac_release["real"]
    assert [row["w_geocode"] for row in rows] == real.get_column("w_geocode").to_list()
    with gzip.open(f, "rt") as fp:
        assert fp.readline().strip().split(",") == real.columns
    for row in rows:
        for fam, cols in _TO_C000.items():
            assert sum(row[c] for c in cols) == row["C000"], fam  # type: ignore[misc]
        assert sum(row[f"CD0{i}"] for i in range(1, 5)) == row["CA02"] + row["CA03"]  # type: ignore[misc]
        assert all(row[f"CF{k}0{i}"] == 0 for k in "AS" for i in range(1, 6))
    assert _check(moe, "lodes-wac", "--moe").exit_code == 0
    moe_rows = read_lodes_wac(moe)
    assert len(moe_rows) == len(rows) and all(m["C000"] >= 0 for m in moe_rows)  # type: ignore[operator]


def test_wac_file_is_the_published_tables(wac_release: dict) -> None:
    """Every number comes from the published tables: C000 is the published block total,
    CNS the published block × sector cells (0 where the frame has no establishment)."""
    rel = wac_release["rel"]
    rows = {
        r["w_geocode"]: r
        for r in read_lodes_wac(rel / "agency" / "pa_wac_S000_JT00_2015.NOT-FOR-PUBLICATION.csv.gz")
    }
    c000 = pl.read_parquet(rel / "tables" / "wac_c000.parquet")
    assert {b: rows[b]["C000"] for b in c000["block"]} == dict(
        zip(c000["block"], c000["jobs"], strict=True)
    )
    cns = pl.read_parquet(rel / "tables" / "wac_cns.parquet")
    sectors = ["11", "21", "22", "23", "31-33", "42", "44-45", "48-49", "51", "52", "53",
               "54", "55", "56", "61", "62", "71", "72", "81", "92"]  # fmt: skip
    published = {(b, s): v for b, s, v in cns.select("block", "naics_sector", "jobs").iter_rows()}
    for b, row in rows.items():
        for i, s in enumerate(sectors, start=1):
            assert row[f"CNS{i:02d}"] == published.get((b, s), 0)
    manifest = json.loads((rel / "manifest.json").read_text())
    assert manifest["agency_files"]["format"] == "lodes-wac"
    assert manifest["privacy"]["total"]["epsilon"] == 30.0  # 1 + 3 + 3 + 1 + 6 + 2 + 12 + 2


def test_wac_margin_file_may_leave_a_margin_empty_and_nothing_else(tmp_path: Path) -> None:
    """A companion's empty field is a margin the mechanism withholds; an empty count, or a
    margin that is not a whole number, is refused naming its row and column."""
    rows = [_good_wac_row("420010301011013"), _good_wac_row("420010301011016")]
    rows[1][1] = ""  # C000
    f = tmp_path / "pa_wac_S000_JT00_2015_moe.csv.gz"
    f.write_bytes(_wac_text(rows))
    assert _check(f, "lodes-wac", "--moe").exit_code == 0
    rows[1][2] = "1.5"  # CA01
    f.write_bytes(_wac_text(rows))
    r = _check(f, "lodes-wac", "--moe")
    assert r.exit_code == 2 and "row 2, column 'CA01'" in r.output, r.output
    rows[1][2] = "1"
    g = tmp_path / "pa_wac_S000_JT00_2015.csv.gz"
    g.write_bytes(_wac_text(rows))
    r = _check(g, "lodes-wac")
    assert r.exit_code == 2 and "row 2, column 'C000'" in r.output, r.output


def _census_block_frames(root: Path) -> dict[str, pl.DataFrame]:
    """The small ER-EE tables of tests/cli/inputs.py with census codes: tract 11 digits
    (county + 6), block 15 (tract + 4), as LODES writes them; written under ``root``."""
    from tests.cli.inputs import eree_frames

    frames = eree_frames()
    tract = pl.col("county") + pl.col("tract").str.strip_prefix("t").str.zfill(6)
    frames["workplace"] = (
        frames["workplace"].with_columns(tract.alias("tract"))
        .with_columns((pl.col("tract") + pl.col("block").str.strip_prefix("b").str.zfill(4))
                      .alias("block"))
    )  # fmt: skip
    for name, frame in frames.items():
        frame.write_parquet(root / f"{name}.parquet")
    return frames


def test_wac_product_of_a_mechanism_that_withholds_its_variance(tmp_path: Path) -> None:
    """The WAC product under node-DP (truncated Laplace, which publishes no standard error:
    its truncation bias is confidential): one row per block of the frame in both files,
    the families adding up, every margin of error empty. Was a ShapeError traceback (the
    withheld margins made a one-row frame beside the blocks)."""
    frames = _census_block_frames(tmp_path)
    spec = (
        _preset("lodes-wac", "2016")
        .replace('definition = "eree-weak"\nalpha = 0.1', 'definition = "node-dp"')
        .replace('mechanism = "log_laplace"', 'mechanism = "truncated_laplace"\ntheta = 50.0')
    )
    assert spec.count("truncated_laplace") == 8 and "eree-weak" not in spec
    (tmp_path / "spec.toml").write_text(spec)
    out = tmp_path / "rel"
    r = runner.invoke(app, ["protect", str(tmp_path / "spec.toml"), "--out", str(out),
                            "--seed", "3"])  # fmt: skip
    assert r.exit_code == 0, r.output
    blocks = sorted(frames["workplace"].get_column("block").unique().to_list())
    f = out / "agency" / "pa_wac_S000_JT00_2016.NOT-FOR-PUBLICATION.csv.gz"
    moe = out / "agency" / "pa_wac_S000_JT00_2016_moe.NOT-FOR-PUBLICATION.csv.gz"
    assert _check(f, "lodes-wac").exit_code == 0
    rows = read_lodes_wac(f)
    assert [row["w_geocode"] for row in rows] == blocks
    for row in rows:
        for fam, cols in _TO_C000.items():
            assert sum(row[c] for c in cols) == row["C000"], fam  # type: ignore[misc]
    r = _check(moe, "lodes-wac", "--moe")
    assert r.exit_code == 0, r.output
    moe_rows = read_lodes_wac(moe)
    assert [row["w_geocode"] for row in moe_rows] == blocks
    counted = [c for c in LODES_WAC_FIELDS[1:-1] if not c.startswith("CF")]
    assert all(row[c] is None for row in moe_rows for c in counted)
    notes = json.loads((out / "manifest.json").read_text())["agency_files"]["notes"]
    assert {n.split(":")[0] for n in notes} == {"C000", "CA", "CE", "CNS", "CR", "CT", "CD", "CS"}


_BAD_BLOCKS = {
    "not-census": (lambda b: "b" + b.str.slice(11), "12 of 12 blocks are not"),
    "14-digit": (lambda b: b.str.slice(1), "12 of 12 blocks are not"),
    "no-state": (lambda b: "99" + b.str.slice(2), "does not start with a state FIPS code"),
    "two-states": (
        lambda b: pl.when(b.str.ends_with("0")).then("44" + b.str.slice(2)).otherwise(b),
        "of one state (a LODES file is per state); the blocks are in 2 states",
    ),
}


@pytest.mark.parametrize(
    ("engine", "bad"),
    [*(("polars", k) for k in _BAD_BLOCKS), ("spark", "not-census"), ("spark", "two-states")],
)
def test_wac_blocks_that_make_no_lodes_file_are_refused(
    tmp_path: Path, engine: str, bad: str
) -> None:
    """A LODES file lists 15-digit block codes of one state and is named by that state:
    other codes are refused in one line naming the file and the block column, before any
    noise is drawn (was a KeyError traceback in the file name). Both engines."""
    from tests.cli.inputs import assert_clean_failure

    if engine == "spark":
        pytest.importorskip("pyspark")
    blocks, words = _BAD_BLOCKS[bad]
    frames = _census_block_frames(tmp_path)
    wp = frames["workplace"].with_columns(blocks(pl.col("block")).alias("block"))
    assert wp.get_column("block").n_unique() == wp.height
    wp.write_parquet(tmp_path / "workplace.parquet")
    (tmp_path / "spec.toml").write_text(_preset("lodes-wac", "2016"))
    out = tmp_path / "rel"
    r = runner.invoke(app, ["protect", str(tmp_path / "spec.toml"), "--out", str(out),
                            "--seed", "3", "--engine", engine])  # fmt: skip
    line = assert_clean_failure(r, out, "needs 15-digit census block codes", words)
    assert "workplace.parquet" in line and "column 'block'" in line, line


# --------------------------------------------------------------------------------------
# the QCEW county product
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ri_area(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ri_area")
    for f in (shared_data / "qcew_2016_by_area").glob("*Rhode_Island*.csv.gz"):
        (d / f.name).symlink_to(f)
    return d


@pytest.fixture(scope="module")
def ri_synth(ri_area: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ri") / "ri"
    r = runner.invoke(app, ["synth", "qcew", "--qcew-area", str(ri_area), "--out", str(out),
                            "--seed", "1"])  # fmt: skip
    assert r.exit_code == 0, r.output
    return out


def _real_cells(ri_area: Path) -> pl.DataFrame:
    frames = [pl.read_csv(f, infer_schema_length=0) for f in sorted(ri_area.iterdir())]
    return pl.concat(frames).filter(
        (pl.col("qtr") == "1") & pl.col("agglvl_code").is_in([str(i) for i in range(70, 79)])
    )


def _protect(spec: Path, out: Path) -> None:
    r = runner.invoke(app, ["protect", str(spec), "--out", str(out), "--seed", "3"])
    assert r.exit_code == 0, r.output


def test_qcew_product_has_the_real_rhode_island_cells(ri_area: Path, ri_synth: Path) -> None:
    spec = ri_synth / "by_area.toml"  # [output] is the product spec's last section
    spec.write_text((ri_synth / "product.toml").read_text() + f'cells_from = "{ri_area}"\n')
    _protect(spec, ri_synth.parent / "rel")
    files = sorted((ri_synth.parent / "rel" / "agency" / "2016" / "1" / "area").glob("*.csv"))
    values = [f for f in files if "_moe." not in f.name]
    assert [f.name.split(".")[0] for f in values] == ["44001", "44003", "44005", "44007", "44009",
                                                      "44999"]  # fmt: skip
    rows = []
    for f in files:
        assert _check(f, "qcew-by-area", *(["--moe"] if "moe" in f.name else [])).exit_code == 0
        loaded = read_qcew(f)
        if f in values:
            rows += loaded
    ours = pl.DataFrame(rows, infer_schema_length=None)
    real = _real_cells(ri_area)
    key = list(_QCEW_KEY)
    assert ours.height == real.height
    assert ours.select(key).join(real.select(key), on=key, how="anti").height == 0
    assert real.select(key).join(ours.select(key), on=key, how="anti").height == 0
    # no suppression: every cell published, except those with no establishment ("-")
    merged = ours.join(real.select(*key, pl.col("disclosure_code").alias("bls")), on=key)
    assert set(merged.filter(pl.col("bls") == "-")["disclosure_code"]) == {"-"}
    assert set(merged.filter(pl.col("bls") != "-")["disclosure_code"]) == {""}
    # the average weekly wage is BLS's formula on the published values
    for r in rows:
        emp = (r["month1_emplvl"] + r["month2_emplvl"] + r["month3_emplvl"]) / 3
        if r["disclosure_code"] == "" and emp > 0:
            assert r["avg_wkly_wage"] == int(r["total_qtrly_wages"] / emp / 13 + 0.5)


def test_qcew_without_cells_from_lacks_only_the_empty_cells(ri_area: Path, ri_synth: Path) -> None:
    spec = ri_synth.parent / "single.toml"
    text = (ri_synth / "product.toml").read_text().replace('path = "', f'path = "{ri_synth}/')
    spec.write_text(text.replace('"qcew-by-area"', '"qcew-singlefile"'))
    _protect(spec, ri_synth.parent / "single")
    f = ri_synth.parent / "single" / "agency" / "2016.q1-q1.singlefile.NOT-FOR-PUBLICATION.csv"
    assert _check(f, "qcew-singlefile").exit_code == 0
    ours = pl.DataFrame(read_qcew(f), infer_schema_length=None)
    real = _real_cells(ri_area)
    key = list(_QCEW_KEY)
    missing = real.join(ours.select(key), on=key, how="anti")
    assert set(missing["disclosure_code"]) == {"-"} and set(missing["qtrly_estabs_count"]) == {"0"}
    assert ours.join(real.select(key), on=key, how="anti").height == 0
    # level 70 (county total) employment is the published county sum rounded, clamped at 0
    county = pl.read_parquet(ri_synth.parent / "single" / "tables" / "agglvl_70.parquet")
    for cnty, m1 in county.select("cnty", "m1emp").iter_rows():
        cell = ours.filter((pl.col("agglvl_code") == "70") &
                           (pl.col("area_fips") == f"44{int(cnty):03d}"))  # fmt: skip
        assert cell["month1_emplvl"].item() == max(0, round(m1))


# --------------------------------------------------------------------------------------
# spec keys and presets
# --------------------------------------------------------------------------------------


def _spec_error(tmp_path: Path, text: str) -> str:
    p = tmp_path / "spec.toml"
    p.write_text(text)
    r = runner.invoke(app, ["explain", str(p)])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
    return r.output


def _preset(name: str, year: str = "2015") -> str:
    r = runner.invoke(app, ["spec", "preset", name, "--year", year])
    assert r.exit_code == 0, r.output
    return r.output


def test_presets_parse_and_cost_what_they_say(tmp_path: Path) -> None:
    p = tmp_path / "wac.toml"
    p.write_text(_preset("lodes-wac"))
    r = runner.invoke(app, ["explain", str(p), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["privacy"]["total"]["epsilon"] == 30.0
    q = tmp_path / "qcew.toml"
    q.write_text(_preset("qcew-county", "2016"))
    r = runner.invoke(app, ["explain", str(q), "--json"])
    assert r.exit_code == 0, r.output
    # μ = √(4·0.7² + 8 levels · 4 · 0.3²) (Webb et al. Thm 5.7)
    assert json.loads(r.output)["privacy"]["total"]["mu"] == pytest.approx(
        (4 * 0.49 + 32 * 0.09) ** 0.5
    )
    assert runner.invoke(app, ["spec", "preset", "nope", "--year", "2015"]).exit_code == 2


def test_output_format_keys_are_checked_before_any_data(tmp_path: Path) -> None:
    wac = _preset("lodes-wac")
    assert "[output].year" in _spec_error(tmp_path, wac.replace("year = 2015\n", ""))
    assert "residence" in _spec_error(tmp_path, wac.replace('"lodes-wac"', '"lodes-rac"'))
    assert "[output].format must be one of" in _spec_error(
        tmp_path, wac.replace('"lodes-wac"', '"wac"')
    )
    no_cr = wac.replace('by = ["block", "race"]', 'by = ["block", "race", "sex"]')
    assert 'CR: by = ["block", "race"]' in _spec_error(tmp_path, no_cr)
    assert "integer = true" in _spec_error(
        tmp_path, wac.replace("integer = true", "integer = false")
    )
    assert "[output].quarter" in _spec_error(
        tmp_path, wac.replace("job_type", "quarter = 5\njob_type")
    )
    plain = wac.split("[output]")[0] + "[output]\nyear = 2015\n"
    assert "only with [output].format" in _spec_error(tmp_path, plain)
    qcew = _preset("qcew-county", "2016")
    assert "[output].quarter" in _spec_error(tmp_path, qcew.replace("quarter = 1\n", ""))
    assert "76: by" in _spec_error(tmp_path, qcew.replace('"naics4"]', '"naics3", "naics4"]'))


def test_output_job_type_names_the_wac_file_and_is_checked(tmp_path: Path) -> None:
    """LODES file names carry the job type JT00–JT05 (LODES technical documentation)."""
    from eree.release.layouts import lodes_file_name
    from eree.release.spec import load_spec

    wac = _preset("lodes-wac")
    assert "[output].job_type must be one of" in _spec_error(
        tmp_path, wac.replace('job_type = "JT00"', 'job_type = "JT9"')
    )
    # the file is named for the jobs the release counts: [data] job_type must agree
    jt01 = wac.replace('job_type = "JT00"', 'job_type = "JT01"')
    assert "names the file for other jobs than the release counts" in _spec_error(tmp_path, jt01)
    p = tmp_path / "jt01.toml"
    p.write_text(jt01.replace("[privacy]", 'job_type = "JT01"\njob_earnings = "pay"\n\n[privacy]'))
    out = load_spec(p).output
    assert out.job_type == "JT01"
    assert lodes_file_name("wac", "42", "S000", out.job_type, out.year) == (
        "pa_wac_S000_JT01_2015.csv.gz"
    )


# --------------------------------------------------------------------------------------
# public codes that make no QCEW file: refused before the release is computed
# --------------------------------------------------------------------------------------

#: (column, hostile code, words of the error): each code is one BLS's layout has not
_BAD_QCEW_CODES = {
    "own-text": ("own", "X5", "a one-digit QCEW ownership code"),
    "sector-outside": ("naics_sector", "98", "a 2-digit NAICS sector of BLS's list"),
    "cnty-html": ("cnty", "1<img src=x onerror=alert(5)>", "a county FIPS code"),
    "state-html": ("state", "<b>", "a state FIPS code"),
    "state-traversal": ("state", "../../x", "a state FIPS code"),
    "naics-newline": ("naics", "11\n1110", "a 6-digit NAICS code"),
}


@pytest.fixture(scope="module")
def synth_qcew(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("qcew-codes")
    r = runner.invoke(app, ["synth", "qcew", "--out", str(root / "q"), "--establishments",
                            "600", "--seed", "1", "--format", "parquet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    return root / "q"


@pytest.mark.parametrize("fmt", ["qcew-by-area", "qcew-singlefile"])
@pytest.mark.parametrize("bad", sorted(_BAD_QCEW_CODES))
def test_public_codes_that_make_no_qcew_file_are_refused_before_the_release(
    synth_qcew: Path, tmp_path: Path, bad: str, fmt: str
) -> None:
    """A code outside the QCEW layout's lists (an ownership that is not a digit, a sector
    outside BLS's list, an area code with HTML or a path in it) is refused in one line
    naming the file and the column, never the code, before any noise is drawn and with
    nothing written (was a traceback after the whole release, or a file named
    ``011<img src=x onerror=alert(5)>.csv``)."""
    from tests.cli.inputs import assert_clean_failure

    column, code, words = _BAD_QCEW_CODES[bad]
    frame = pl.read_parquet(synth_qcew / "establishments.parquet")
    frame = frame.with_columns(pl.col(column).cast(pl.Utf8)).with_columns(
        pl.when(pl.int_range(pl.len()) == 5).then(pl.lit(code)).otherwise(pl.col(column))
        .alias(column)
    )  # fmt: skip
    frame.write_parquet(tmp_path / "establishments.parquet")
    r = runner.invoke(app, ["spec", "preset", "qcew-county", "--year", "2016"])
    assert r.exit_code == 0, r.output
    spec = r.output.replace("establishments.csv.gz", "establishments.parquet")
    spec = spec.replace('format = "qcew-by-area"', f'format = "{fmt}"')
    (tmp_path / "spec.toml").write_text(spec)
    out = tmp_path / "rel"
    with mock.patch("eree.release.family.EstablishmentRelease.answer_queries") as answer:
        r = runner.invoke(app, ["protect", str(tmp_path / "spec.toml"), "--out", str(out),
                                "--seed", "3"])  # fmt: skip
    line = assert_clean_failure(r, out, words, f"column '{column}'", "establishments.parquet")
    assert code not in line and "<" not in line, line
    assert not answer.called  # refused before any query is answered


@pytest.mark.parametrize("fmt", ["lodes-wac", "qcew-by-area", "qcew-singlefile"])
@pytest.mark.parametrize("damage", ["flipped", "truncated", "not-gzip"])
def test_check_format_of_a_corrupt_gzip_file_is_one_line(tmp_path: Path, fmt: str, damage: str):
    """A .csv.gz whose deflate stream is damaged (was a zlib.error traceback), cut short or
    not gzip at all: one line naming the file, exit 2."""
    header = ",".join(f'"{c}"' for c in QCEW_FIELDS).encode() + b"\n"
    data = gzip.compress(header + b'"44001","0"\n' * 2000, mtime=0)
    body = {
        "flipped": data[:30] + b"\x00" * 50 + data[30:],  # inside the deflate stream
        "truncated": data[:40],
        "not-gzip": b"zq9x not a gzip file",
    }[damage]
    name = "pa_wac_S000_JT00_2015.csv.gz" if fmt == "lodes-wac" else "44001.csv.gz"
    path = tmp_path / name
    path.write_bytes(body)
    r = _check(path, fmt)
    assert r.exit_code == 2, r.output  # type: ignore[attr-defined]
    lines = r.output.strip().splitlines()  # type: ignore[attr-defined]
    assert len(lines) == 1 and name in lines[0], r.output  # type: ignore[attr-defined]
    assert "cannot read" in lines[0] or damage == "not-gzip", lines  # (Polars reads it as text)
    assert "zq9x" not in r.output  # type: ignore[attr-defined]


def test_wac_of_what_synth_lodes_writes_without_a_wac_file_is_one_line(tmp_path: Path) -> None:
    """`eree synth lodes` without --wac writes blocks of state 99 (no state): the WAC
    product of them is refused in one line naming the block column, nothing written."""
    from tests.cli.inputs import assert_clean_failure

    r = runner.invoke(app, ["synth", "lodes", "--out", str(tmp_path / "syn"), "--jobs", "2000",
                            "--seed", "1"])  # fmt: skip
    assert r.exit_code == 0, r.output
    (tmp_path / "syn" / "product.toml").write_text(_preset("lodes-wac", "2016"))
    out = tmp_path / "rel"
    r = runner.invoke(app, ["protect", str(tmp_path / "syn" / "product.toml"), "--out",
                            str(out), "--seed", "3"])  # fmt: skip
    line = assert_clean_failure(r, out, "does not start with a state FIPS code")
    assert "workplace.parquet" in line and "column 'block'" in line, line


def test_qcew_margin_file_may_leave_a_margin_empty(shared_data: Path, tmp_path: Path) -> None:
    """A QCEW companion's empty employment or wage margin is one its mechanism withholds
    (a combined ψ publishes no variance): accepted with --moe, as for LODES; in a values
    file it is still an empty number, refused by row and column."""
    real = sorted((shared_data / "qcew_2016_by_area").glob("*.csv.gz"))[0]
    lines = gzip.decompress(real.read_bytes()).decode().splitlines()
    header = next(csv.reader([lines[0]]))
    # the field's text as written (quoted codes and titles, bare numbers), then blanked
    spans = [m.group(1) for m in re.finditer(r'("(?:[^"]|"")*"|[^,]*)(?:,|$)', lines[1])]
    spans = spans[: len(header)]
    spans[header.index("month1_emplvl")] = ""
    f = tmp_path / "44001.csv"
    f.write_text("\n".join([lines[0], ",".join(spans), *lines[2:]]) + "\n")
    r = _check(f, "qcew-by-area", "--moe")
    assert r.exit_code == 0, r.output
    r = _check(f, "qcew-by-area")
    assert r.exit_code == 2 and "row 1, column 'month1_emplvl'" in r.output, r.output
