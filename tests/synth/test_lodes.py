"""Tests of the LODES-like generator (docs/design.md#synthetic-data)."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from eree.data.config import JobTablesConfig
from eree.data.job_tables import load_job_tables
from eree.data.schema import NAICS_SECTORS, WORKER_DOMAINS, WORKPLACE_ATTRIBUTES
from eree.errors import DataValidationError
from eree.synth.lodes import (
    WAC_ATTRIBUTE_COLUMNS,
    WAC_SECTOR_COLUMNS,
    SynthLodes,
    _allocate,
    _split_cells,
    synth_from_wac,
    synth_parametric,
)

WAC_FILE = "lodes/pa_wac_S000_JT00_2015.csv.gz"


# ---------------------------------------------------------------- helpers


def _fake_wac(seed: int, n_blocks: int = 60) -> pl.DataFrame:
    """A consistent WAC-like block table (LODES column names) with heavy-tailed blocks."""
    rng = np.random.default_rng(seed)
    total = np.maximum(1, np.round(rng.lognormal(2.5, 1.5, n_blocks))).astype(np.int64)
    cols: dict[str, object] = {
        "w_geocode": [f"42{c:03d}{t:06d}{b:04d}" for c, t, b in zip(
            rng.integers(1, 4, n_blocks) * 2 - 1, rng.integers(1, 5, n_blocks) * 100,
            np.arange(n_blocks) + 1000, strict=True)],
        "C000": total,
    }  # fmt: skip

    def split(n: np.ndarray, k: int) -> np.ndarray:
        return rng.multinomial(n, rng.dirichlet(np.ones(k), n.size))

    for a, names in WAC_ATTRIBUTE_COLUMNS.items():
        if a == "education":
            continue
        m = split(total, len(names))
        cols.update({c: m[:, i] for i, c in enumerate(names)})
    older = np.asarray(cols["CA02"]) + np.asarray(cols["CA03"])
    m = split(older, 4)
    cols.update({c: m[:, i] for i, c in enumerate(WAC_ATTRIBUTE_COLUMNS["education"])})
    m = split(total, 20)
    cols.update({c: m[:, i] for i, c in enumerate(WAC_SECTOR_COLUMNS)})
    cols["createdate"] = [20170919] * n_blocks
    return pl.DataFrame(cols)


def _jobs_with_block(s: SynthLodes) -> pl.DataFrame:
    return s.job.join(s.worker, on="worker_id", how="left", maintain_order="left").join(
        s.workplace.select("workplace_id", "block", "naics_sector"),
        on="workplace_id",
        how="left",
        maintain_order="left",
    )


def _counts(df: pl.DataFrame, attr: str) -> pl.DataFrame:
    return df.group_by("block", attr).agg(pl.len().cast(pl.Int64).alias("n")).sort("block", attr)


def _expected(wac: pl.DataFrame, attr: str, cols: tuple[str, ...], codes: tuple[str, ...]):
    return (
        wac.unpivot(index="w_geocode", on=list(cols), variable_name="col", value_name="n")
        .filter(pl.col("n") > 0)
        .select(
            pl.col("w_geocode").alias("block"),
            pl.col("col").replace_strict(dict(zip(cols, codes, strict=True))).alias(attr),
            pl.col("n").cast(pl.Int64),
        )
        .sort("block", attr)
    )


def assert_block_margins_exact(s: SynthLodes, wac: pl.DataFrame) -> None:
    """Every attribute's block margin, every block x sector count and every total."""
    jobs = _jobs_with_block(s)
    assert jobs.height == wac["C000"].sum()
    for attr, cols in WAC_ATTRIBUTE_COLUMNS.items():
        got = jobs.filter(pl.col("age") != "A01") if attr == "education" else jobs
        expected = _expected(wac, attr, cols, WORKER_DOMAINS[attr])
        assert _counts(got, attr).equals(expected), attr
    expected = _expected(wac, "naics_sector", WAC_SECTOR_COLUMNS, NAICS_SECTORS)
    assert _counts(jobs, "naics_sector").equals(expected)
    totals = jobs.group_by("block").len().sort("block")
    assert totals["len"].to_list() == wac.sort("w_geocode")["C000"].to_list()


def _write_csv_gz(df: pl.DataFrame, path: Path) -> Path:
    with gzip.open(path, "wb") as fh:
        df.write_csv(fh)
    return path


# ---------------------------------------------------------------- parametric


def test_parametric_is_deterministic() -> None:
    a, b = synth_parametric(seed=7, n_jobs=5_000), synth_parametric(seed=7, n_jobs=5_000)
    for name in ("workplace", "worker", "job"):
        assert getattr(a, name).equals(getattr(b, name)), name
    c = synth_parametric(seed=8, n_jobs=5_000)
    assert not a.job.equals(c.job) or not a.worker.equals(c.worker)


def test_parametric_shape_and_validity(tmp_path: Path) -> None:
    s = synth_parametric(seed=1)  # the demo's default size
    assert s.n_jobs == 50_000 and s.worker.height == 50_000
    assert s.workplace.columns == ["workplace_id", *WORKPLACE_ATTRIBUTES]
    assert s.worker.columns == ["worker_id", *WORKER_DOMAINS]
    assert s.job.columns == ["worker_id", "workplace_id"]
    data = load_job_tables(s.write(tmp_path))  # passes every validation rule
    assert data.n_jobs == 50_000 and data.n_workplaces == s.n_workplaces
    wp = s.workplace
    assert wp["county"].n_unique() == 4 and wp["tract"].n_unique() > 20
    geo_ok = wp.select(
        (pl.col("county").str.starts_with(pl.col("state")))
        & (pl.col("tract").str.starts_with(pl.col("county")))
        & (pl.col("block").str.starts_with(pl.col("tract")))
        & (pl.col("block").str.len_chars() == 15)
    ).to_series()
    assert geo_ok.all()
    sizes = s.job.group_by("workplace_id").len()["len"].to_numpy()
    assert sizes.min() >= 1 and sizes.sum() == 50_000
    assert (sizes <= 10).mean() > 0.5  # many small establishments ...
    assert sizes.max() >= 30 * np.median(sizes)  # ... and a heavy tail
    # public administration is never private; most other establishments are
    own = wp.group_by(pl.col("naics_sector") == "92").agg((pl.col("ownership") == "A05").mean())
    shares = dict(zip(own[:, 0].to_list(), own[:, 1].to_list(), strict=True))
    assert shares[True] == 0.0 and shares[False] > 0.8
    # realistic-ish skews of worker attributes
    race = s.worker["race"].value_counts(normalize=True)
    assert race.filter(pl.col("race") == "A1")["proportion"].item() > 0.6


def test_parametric_write_csv_and_joined_form(tmp_path: Path) -> None:
    s = synth_parametric(seed=3, n_jobs=3_000)
    three = load_job_tables(s.write(tmp_path / "csv", format="csv"))
    assert (tmp_path / "csv" / "worker.csv").is_file()
    p = tmp_path / "jobs.parquet"
    s.joined().write_parquet(p)
    joined = load_job_tables(JobTablesConfig(jobs=p))
    assert joined.jobs.equals(three.jobs)
    assert joined.workplaces.equals(three.workplaces)  # every establishment has a job


# ---------------------------------------------------------------- from a WAC file


def test_from_wac_reproduces_block_margins_exactly(tmp_path: Path) -> None:
    wac = _fake_wac(seed=11)
    p = _write_csv_gz(wac, tmp_path / "wac.csv.gz")
    s = synth_from_wac(p, seed=5)
    assert_block_margins_exact(s, wac)
    # attributes are shuffled within a block, not laid out in code order
    big = wac.sort("C000")["w_geocode"][-1]
    ages = _jobs_with_block(s).filter(pl.col("block") == big)["age"]
    assert ages.n_unique() > 1 and not ages.equals(ages.sort())
    load_job_tables(s.write(tmp_path / "out"))
    again = synth_from_wac(p, seed=5)
    assert again.worker.equals(s.worker) and again.workplace.equals(s.workplace)


def test_from_wac_real_slice(tmp_path: Path, shared_data: Path) -> None:
    src = shared_data / WAC_FILE
    wac = pl.read_csv(src, n_rows=200, schema_overrides={"w_geocode": pl.Utf8})
    p = _write_csv_gz(wac, tmp_path / "pa_slice.csv.gz")
    s = synth_from_wac(p, seed=2015)
    assert_block_margins_exact(s, wac)
    sizes = s.job.group_by("workplace_id").len()["len"]
    assert sizes.min() >= 1
    assert s.workplace["state"].unique().to_list() == ["42"]
    assert set(s.workplace["county"].unique()) <= set(wac["w_geocode"].str.slice(0, 5))
    load_job_tables(s.write(tmp_path / "out"))


def test_scale_two_doubles_every_margin(tmp_path: Path) -> None:
    wac = _fake_wac(seed=12, n_blocks=30)
    p = _write_csv_gz(wac, tmp_path / "wac.csv.gz")
    s = synth_from_wac(p, seed=1, scale=2.0)
    counts = [c for cols in WAC_ATTRIBUTE_COLUMNS.values() for c in cols]
    doubled = wac.with_columns(pl.col(["C000", *counts, *WAC_SECTOR_COLUMNS]) * 2)
    assert_block_margins_exact(s, doubled)


@pytest.mark.parametrize("scale", [0.5, 1.7])
def test_fractional_scale_is_consistent(tmp_path: Path, scale: float) -> None:
    wac = _fake_wac(seed=13, n_blocks=80)
    p = _write_csv_gz(wac, tmp_path / "wac.csv.gz")
    s = synth_from_wac(p, seed=2, scale=scale)
    n = wac["C000"].to_numpy()
    # stochastic rounding per block: variance <= n_blocks / 4
    assert abs(s.n_jobs - scale * n.sum()) <= 5 * np.sqrt(len(n) / 4)
    load_job_tables(s.write(tmp_path / "out"))
    jobs = _jobs_with_block(s)
    per_block = jobs.group_by("block").agg(pl.len(), (pl.col("age") != "A01").sum().alias("older"))
    expected = wac.select(pl.col("w_geocode").alias("block"), pl.col("C000") * scale)
    cmp = per_block.join(expected, on="block", how="left")
    assert (cmp["len"] - cmp["C000"]).abs().max() < 1  # floor or ceil of scale * C000


def test_wac_inconsistent_margins_rejected(tmp_path: Path) -> None:
    wac = _fake_wac(seed=14, n_blocks=10)
    bad = wac.with_columns(
        pl.when(pl.int_range(pl.len()) == 6).then(pl.col("CR01") + 1).otherwise(pl.col("CR01"))
    )
    p = _write_csv_gz(bad, tmp_path / "wac.csv.gz")
    with pytest.raises(DataValidationError) as ei:
        synth_from_wac(p, seed=0)
    assert (ei.value.file, ei.value.row, ei.value.column) == (str(p), 7, "CR01")
    assert ei.value.rule == "inconsistent-margins"


def test_wac_education_must_match_older_workers(tmp_path: Path) -> None:
    wac = _fake_wac(seed=15, n_blocks=10)
    bad = wac.with_columns(pl.col("CD01") + (pl.int_range(pl.len()) == 2).cast(pl.Int64))
    p = _write_csv_gz(bad, tmp_path / "wac.csv.gz")
    with pytest.raises(DataValidationError) as ei:
        synth_from_wac(p, seed=0)
    assert (ei.value.row, ei.value.column, ei.value.rule) == (3, "CD01", "inconsistent-margins")


def _set_text(df: pl.DataFrame, column: str, row: int, value: str) -> pl.DataFrame:
    s = df.get_column(column).cast(pl.Utf8).to_list()
    s[row - 1] = value
    return df.with_columns(pl.Series(column, s))


@pytest.mark.parametrize(
    ("mutate", "row", "column", "rule"),
    [
        (lambda d: d.drop("CE02"), None, "CE02", "missing-column"),
        (lambda d: _set_text(d, "CS01", 2, "x"), 2, "CS01", "type"),
        (lambda d: _set_text(d, "CNS05", 3, "-1000"), 3, "CNS05", "negative"),
        (lambda d: _set_text(d, "w_geocode", 4, "4200"), 4, "w_geocode", "domain"),
        (lambda d: _set_text(d, "w_geocode", 5, d["w_geocode"][0]), 5, "w_geocode", "duplicate-id"),
    ],
)
def test_wac_malformed(
    tmp_path: Path,
    mutate: Callable[[pl.DataFrame], pl.DataFrame],
    row: int | None,
    column: str,
    rule: str,
) -> None:
    wac = _fake_wac(seed=16, n_blocks=10)
    p = _write_csv_gz(mutate(wac), tmp_path / "wac.csv.gz")
    with pytest.raises(DataValidationError) as ei:
        synth_from_wac(p, seed=0)
    e = ei.value
    assert (e.file, e.row, e.column, e.rule) == (str(p), row, column, rule)


def test_bad_parameters() -> None:
    with pytest.raises(ValueError):
        synth_parametric(seed=0, n_jobs=0)
    with pytest.raises(ValueError):
        synth_parametric(seed=0, size_tail=-1.0)


# ---------------------------------------------------------------- building blocks


def test_split_cells_exact_and_positive() -> None:
    rng = np.random.default_rng(0)
    n = np.array([1, 2, 7, 40, 1000, 25_000, 3])
    est_cell, size = _split_cells(n, rng, jobs_per_establishment=35.0, size_tail=0.8)
    assert size.min() >= 1
    assert np.array_equal(np.bincount(est_cell, weights=size, minlength=n.size), n)
    k = np.bincount(est_cell, minlength=n.size)
    assert k[0] == 1 and k[-2] > 300  # a big cell splits into many establishments
    assert size[est_cell == 5].max() > 20 * np.median(size[est_cell == 5])  # heavy tail


def test_allocate_exact_sums_and_unbiased() -> None:
    rng = np.random.default_rng(0)
    w = np.array([[1, 1, 1, 0], [5, 0, 3, 2], [4, 4, 0, 0]])
    t = np.array([1, 7, 8])  # the last row already sums to its target
    draws = np.stack([_allocate(rng, w, t) for _ in range(3000)])
    assert (draws.sum(axis=2) == t).all()
    assert (draws[:, :, 3][:, [0, 2]] == 0).all() and (draws[:, 1, 1] == 0).all()
    assert (draws[:, 2] == w[2]).all()
    share = w * (t / w.sum(axis=1))[:, None]
    assert (np.abs(draws - share) < 1).all()
    # E[entry] = share: 3000 draws, sd of a mean <= 0.5/sqrt(3000) ~ 0.009
    assert np.abs(draws.mean(axis=0) - share).max() < 0.05


@pytest.mark.slow
def test_full_pennsylvania(tmp_path: Path, shared_data: Path) -> None:
    s = synth_from_wac(shared_data / WAC_FILE, seed=1)
    assert s.n_jobs == 5_649_077
    sizes = s.job.group_by("workplace_id").len()["len"].to_numpy()
    assert 10 < sizes.mean() < 25 and (sizes < 10).mean() > 0.5 and sizes.max() >= 1000
    data = load_job_tables(s.write(tmp_path))
    assert data.n_jobs == s.n_jobs
