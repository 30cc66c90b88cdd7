"""A coarsened WAC publication in the LODES WAC layout: values and bound companions.

The truth in the layout is computed here from the job records (not by the writer's
mapping); every file passes ``check-format``; every true value lies within its bounds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from eree.cli import app
from eree.data.schema import NAICS_SECTORS, WORKER_DOMAINS
from eree.errors import DataValidationError
from eree.evaluate.reconstruct import job_truth
from eree.evaluate.reconstruct.frontier import ATTRIBUTES, exact_tables
from eree.release.coarsened_wac import wac_coarsened_files, write_files
from eree.release.layouts import LODES_FAMILIES, check_format
from eree.suppression.coarsening.jobs import coarsen_jobs
from eree.synth.lodes import synth_parametric

NAME = "pa_wac_S000_JT00_2015"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pl.DataFrame, pl.DataFrame]:
    d = tmp_path_factory.mktemp("wac")
    s = synth_parametric(7, 150, n_counties=1, tracts_per_county=2, blocks_per_tract=8, state="42")
    for name in ("workplace", "worker", "job"):
        getattr(s, name).write_parquet(d / f"{name}.parquet")
    truth = job_truth(d, "block", ATTRIBUTES)
    doms = {a: WORKER_DOMAINS[a] for a in ATTRIBUTES if a in WORKER_DOMAINS}
    doms["naics_sector"] = NAICS_SECTORS
    exact = exact_tables(truth, doms)
    pub, _ = coarsen_jobs(truth, exact)
    files = wac_coarsened_files(pub, state_fips="42", year=2015, createdate="20260101")
    write_files(files, d / "out")
    return d / "out", truth, pub


def _layout_truth(truth: pl.DataFrame) -> pl.DataFrame:
    """The true LODES WAC columns per block, from the records."""
    t = truth.rename({"unit": "w_geocode"})
    cols = [pl.col("true").sum().alias("C000")]
    spec = {
        "CA": ("age", WORKER_DOMAINS["age"]),
        "CE": ("earnings", WORKER_DOMAINS["earnings"]),
        "CNS": ("naics_sector", NAICS_SECTORS),
        "CR": ("race", WORKER_DOMAINS["race"]),
        "CT": ("ethnicity", WORKER_DOMAINS["ethnicity"]),
        "CS": ("sex", WORKER_DOMAINS["sex"]),
    }
    for fam, (attr, codes) in spec.items():
        for col, code in zip(LODES_FAMILIES[fam], codes, strict=True):
            cols.append(pl.col("true").filter(pl.col(attr) == code).sum().alias(col))
    for col, e in zip(LODES_FAMILIES["CD"], WORKER_DOMAINS["education"], strict=True):
        older = pl.col("age").is_in(["A02", "A03"]) & (pl.col("education") == e)
        cols.append(pl.col("true").filter(older).sum().alias(col))
    return t.group_by("w_geocode").agg(cols).sort("w_geocode")


def _read(path: Path) -> pl.DataFrame:
    return pl.read_csv(path, schema_overrides={"w_geocode": pl.Utf8}).sort("w_geocode")


def test_every_file_passes_check_format(written) -> None:
    out, _, _ = written
    check_format(out / f"{NAME}.csv.gz", "lodes-wac")  # the sums hold in the values file
    check_format(out / f"{NAME}_lower.csv.gz", "lodes-wac", bounds=True)
    check_format(out / f"{NAME}_upper.csv.gz", "lodes-wac", bounds=True)
    with pytest.raises(DataValidationError, match="LODES naming"):
        check_format(out / f"{NAME}_lower.csv.gz", "lodes-wac")  # a companion, not the file
    runner = CliRunner()
    r = runner.invoke(
        app,
        ["check-format", str(out / f"{NAME}_upper.csv.gz"), "--format", "lodes-wac", "--bounds"],
    )
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        app,
        ["check-format", str(out / f"{NAME}_upper.csv.gz"), "--format", "qcew-by-area", "--bounds"],
    )
    assert r.exit_code == 2 and "LODES" in r.output


def test_true_values_lie_within_the_bounds_and_the_values(written) -> None:
    out, truth, pub = written
    want = _layout_truth(truth)
    val = _read(out / f"{NAME}.csv.gz")
    lo = _read(out / f"{NAME}_lower.csv.gz")
    hi = _read(out / f"{NAME}_upper.csv.gz")
    assert val.get_column("w_geocode").to_list() == want.get_column("w_geocode").to_list()
    cols = [c for c in want.columns if c != "w_geocode"]
    t = want.select(cols).to_numpy().astype(float)
    v = val.select(cols).to_numpy().astype(float)
    lower = lo.select(cols).to_numpy().astype(float)
    upper = hi.select(cols).fill_null(np.inf).to_numpy().astype(float)
    assert (lower <= t).all() and (t <= upper).all()
    assert (lower <= v).all() and (v <= upper).all()
    # equal bounds: that value exactly; something is coarsened, and the values are not
    # the truth where it is
    fixed = lower == upper
    assert (v[fixed] == t[fixed]).all()
    assert (~fixed).sum() > 0
    assert (val.select(f"CFA0{i}" for i in range(1, 6)).to_numpy() == 0).all()
    # a withheld cell (of the layout's cells) has no upper bound
    shown = pub.filter(~((pl.col("table") == "wac_cd") & (pl.col("age") == "A01")))
    assert np.isinf(upper).any() == (shown.get_column("status") == "suppressed").any()


def test_the_values_file_keeps_the_layouts_sums(written) -> None:
    out = written[0]
    val = _read(out / f"{NAME}.csv.gz")
    for fam in ("CA", "CE", "CNS", "CR", "CT", "CS"):
        s = val.select(pl.sum_horizontal(*LODES_FAMILIES[fam])).to_series()
        assert (s == val.get_column("C000")).all()
    cd = val.select(pl.sum_horizontal(*LODES_FAMILIES["CD"])).to_series()
    assert (cd == val.get_column("CA02") + val.get_column("CA03")).all()


def test_a_bounds_companion_with_a_bad_field_is_refused(written, tmp_path: Path) -> None:
    import gzip

    out = written[0]
    for suffix, bad, why in (("_lower", "", "lower bound"), ("_upper", "x", "upper bound")):
        lines = gzip.decompress((out / f"{NAME}{suffix}.csv.gz").read_bytes()).decode().split("\n")
        f = lines[2].split(",")
        f[1] = bad  # C000 of the second block
        lines[2] = ",".join(f)
        p = tmp_path / f"{NAME}{suffix}.csv.gz"
        p.write_bytes(gzip.compress("\n".join(lines).encode()))
        with pytest.raises(DataValidationError, match=why) as e:
            check_format(p, "lodes-wac", bounds=True)
        assert "row 2" in str(e.value) and "C000" in str(e.value)


def test_a_range_midpoint_between_two_whole_numbers_still_gives_whole_sums(tmp_path) -> None:
    """A block of the first PA sample's publication (3 jobs), rebuilt by hand: the range
    [1, 4] targets 2.5, and the LP nearest the published values splits a job between two
    age cells at no cost; the files must still hold whole numbers that add up."""
    jobs = [
        ("A02", "E02", "72", "A1", "A1", "E2", "F"),
        ("A02", "E02", "72", "A1", "A1", "E3", "F"),
        ("A03", "E01", "62", "A1", "A1", "E2", "F"),
    ]
    cols = ["age", "earnings", "naics_sector", "race", "ethnicity", "education", "sex"]
    truth = pl.DataFrame([dict(zip(cols, j, strict=True)) for j in jobs]).with_columns(
        pl.lit("420370504002004").alias("unit"), pl.lit(1).alias("true")
    )
    doms = {a: WORKER_DOMAINS[a] for a in ATTRIBUTES if a in WORKER_DOMAINS}
    doms["naics_sector"] = NAICS_SECTORS
    exact = exact_tables(truth, doms)
    # (table, attribute → code) → (status, value, base, lower, upper), as published
    rnd = {"status": "rounded", "base": 2.0, "value": 4.0}
    zero5 = {"status": "rounded", "base": 5.0, "value": 0.0}
    rng = {"status": "range", "lower": 1.0, "upper": 4.0, "value": None}
    sup = {"status": "suppressed", "value": None}
    how = {
        ("wac_c000", ()): rnd, ("wac_ca", ("A02",)): rng, ("wac_ca", ("A03",)): zero5,
        ("wac_ce", ("E01",)): zero5, ("wac_ce", ("E02",)): rng, ("wac_cns", ("62",)): sup,
        ("wac_cns", ("72",)): sup, ("wac_cr", ("A1",)): rnd, ("wac_ct", ("A1",)): rnd,
        ("wac_cd", ("A02", "E2")): zero5, ("wac_cd", ("A02", "E3")): zero5,
        ("wac_cd", ("A03", "E2")): sup, ("wac_cs", ("F",)): rnd,
    }  # fmt: skip
    rows = []
    for r in exact.drop("status").to_dicts():
        key = (r["table"], tuple(r[a] for a in cols if r[a] is not None))
        h = {"status": "exact", "value": r["value"], **how.get(key, {})}
        rows.append({**r, "base": None, "lower": None, "upper": None, **h})
    pub = pl.DataFrame(rows, schema_overrides={c: pl.Float64 for c in ("value", "base",
                       "lower", "upper")})  # fmt: skip
    files = wac_coarsened_files(pub, state_fips="42", year=2015, createdate="20260101")
    write_files(files, tmp_path)
    check_format(tmp_path / f"{NAME}.csv.gz", "lodes-wac")  # whole, and the sums hold
    val = _read(tmp_path / f"{NAME}.csv.gz")
    lo, hi = _read(tmp_path / f"{NAME}_lower.csv.gz"), _read(tmp_path / f"{NAME}_upper.csv.gz")
    for c in ("C000", "CA02", "CA03", "CE01", "CE02", "CNS18", "CNS16"):
        assert lo[c][0] <= val[c][0] <= (hi[c][0] if hi[c][0] is not None else 10**9), c
    assert val["CA02"][0] + val["CA03"][0] == val["C000"][0]
