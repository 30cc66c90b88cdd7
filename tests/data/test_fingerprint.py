"""Content fingerprint of validated data: order- and format-independent (DESIGN.md §3.4)."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import polars as pl

from eree.data.config import EreeDataConfig, EstablishmentDataConfig
from eree.data.eree_tables import load_eree
from eree.data.establishments import load_establishments
from eree.data.fingerprint import content_fingerprint
from eree.privacy.ledger import keyed_fingerprint
from tests.release.conftest import write_small_eree
from tests.release.test_gedp import write_small

PUBLIC = ("cnty", "own", "naics", "naics3", "naics4", "naics5", "naics_sector", "super_sector")


def _eree(root: Path, ext: str) -> EreeDataConfig:
    return EreeDataConfig(
        workplace=root / f"workplace.{ext}", worker=root / f"worker.{ext}", job=root / f"job.{ext}"
    )


def _convert(src: Path, dst: Path, ext: str, seed: int) -> None:
    """Every table of ``src`` written to ``dst`` as ``ext`` with its rows shuffled."""
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("workplace", "worker", "job"):
        df = pl.read_parquet(src / f"{name}.parquet").sample(fraction=1.0, shuffle=True, seed=seed)
        df = df.select(list(reversed(df.columns)))  # column order must not matter either
        if ext == "csv":
            df.write_csv(dst / f"{name}.csv")
        else:
            df.write_parquet(dst / f"{name}.parquet")


def test_eree_fingerprint_ignores_format_row_and_column_order(tmp_path):
    write_small_eree(tmp_path / "a")
    _convert(tmp_path / "a", tmp_path / "b", "csv", seed=1)
    _convert(tmp_path / "a", tmp_path / "c", "parquet", seed=2)
    fps = {
        content_fingerprint(load_eree(_eree(tmp_path / "a", "parquet"))),
        content_fingerprint(load_eree(_eree(tmp_path / "b", "csv"))),
        content_fingerprint(load_eree(_eree(tmp_path / "c", "parquet"))),
    }
    assert len(fps) == 1
    assert len(next(iter(fps))) == 64


def test_eree_fingerprint_changes_with_one_record(tmp_path):
    write_small_eree(tmp_path / "a")
    before = content_fingerprint(load_eree(_eree(tmp_path / "a", "parquet")))
    w = pl.read_parquet(tmp_path / "a" / "worker.parquet")
    sex = w["sex"].to_list()
    sex[17] = "F" if sex[17] == "M" else "M"  # one worker's sex flipped
    w.with_columns(pl.Series("sex", sex)).write_parquet(tmp_path / "a" / "worker.parquet")
    assert content_fingerprint(load_eree(_eree(tmp_path / "a", "parquet"))) != before


def test_establishment_fingerprint_csv_vs_parquet_shuffled(tmp_path):
    csv = write_small(tmp_path / "e.csv", n=80)
    df = pl.read_csv(csv, infer_schema_length=0).sample(fraction=1.0, shuffle=True, seed=5)
    df = df.with_columns(  # Parquet with numeric types, as a statistical office would store it
        pl.col("m1emp", "m2emp", "m3emp").cast(pl.Int64), pl.col("wage").cast(pl.Float64)
    )
    df.write_parquet(tmp_path / "e.parquet")
    fa = content_fingerprint(load_establishments(EstablishmentDataConfig(csv, public=PUBLIC)))
    fb = content_fingerprint(
        load_establishments(EstablishmentDataConfig(tmp_path / "e.parquet", public=PUBLIC))
    )
    assert fa == fb
    # one wage changed by 0.1: a different dataset
    df2 = df.with_columns(
        pl.when(pl.col("primary_key") == "E0007").then(pl.col("wage") + 0.1)
        .otherwise(pl.col("wage")).alias("wage")
    )  # fmt: skip
    df2.write_parquet(tmp_path / "f.parquet")
    fc = content_fingerprint(
        load_establishments(EstablishmentDataConfig(tmp_path / "f.parquet", public=PUBLIC))
    )
    assert fc != fa


def test_keyed_fingerprint_is_hmac_sha256():
    fp = "ab" * 32
    key = b"k" * 32
    assert keyed_fingerprint(fp, key) == hmac.new(key, fp.encode(), hashlib.sha256).hexdigest()
    assert keyed_fingerprint(fp, b"j" * 32) != keyed_fingerprint(fp, key)


def test_structure_fingerprint_ignores_column_selection(tmp_path):
    from eree.data.fingerprint import structure_fingerprint

    write_small_eree(tmp_path / "a")
    full = load_eree(_eree(tmp_path / "a", "parquet"))
    cfg = _eree(tmp_path / "a", "parquet")
    sub = load_eree(EreeDataConfig(workplace=cfg.workplace, worker=cfg.worker, job=cfg.job,
                                   worker_attributes=("sex",),
                                   domains={"sex": ("M", "F")}))  # fmt: skip
    assert content_fingerprint(sub) != content_fingerprint(full)
    assert structure_fingerprint(sub) == structure_fingerprint(full)
    # one job moved to another workplace: another structure
    job = pl.read_parquet(tmp_path / "a" / "job.parquet")
    wids = job["workplace_id"].to_list()
    wids[0] = "w039" if wids[0] != "w039" else "w038"
    job.with_columns(pl.Series("workplace_id", wids)).write_parquet(tmp_path / "a" / "job.parquet")
    assert structure_fingerprint(load_eree(cfg)) != structure_fingerprint(full)
