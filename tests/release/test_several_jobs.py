"""A LODES WAC release of data where about 5% of workers hold two or three jobs.

docs/privacy.md#several-jobs-per-worker, black-box through the command: real PA blocks
(one county of the public WAC file) → ``eree synth lodes`` → 5% of the workers made to
hold 2–3 jobs (others' jobs reassigned to them, each at another workplace) →
``eree protect`` of the WAC product with ``[data] max_jobs_per_worker = 3`` →
``eree check-format``. Expected values come from the data written here and the formulas
of the page, never from eree's code.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from eree.cli import app
from tests.release.layout_reader import read_lodes_wac

runner = CliRunner()
_WAC = "lodes/pa_wac_S000_JT00_2015.csv.gz"
ALPHA = 0.1


def _several_jobs(job: pl.DataFrame, worker: pl.DataFrame, share: float, seed: int) -> tuple:
    """``share`` of the final workers hold 2 or 3 jobs: each takes over the jobs of one or
    two other workers at other workplaces; those workers leave the worker table."""
    rng = np.random.default_rng(seed)
    ids = job["worker_id"].to_list()
    wps = job["workplace_id"].to_list()
    order = rng.permutation(len(ids))
    n_multi = int(share * len(ids) / (1 + 1.5 * share))
    owner = {w: w for w in ids}
    free = list(order[n_multi:])
    holders: dict[str, set[str]] = {}
    for i in order[:n_multi]:
        extra = int(rng.integers(1, 3))  # 1 or 2 more jobs: 2–3 in all
        held = {wps[i]}
        while extra and free:
            j = free.pop()
            if wps[j] in held:
                continue
            owner[ids[j]] = ids[i]
            held.add(wps[j])
            extra -= 1
        holders[ids[i]] = held
    new_ids = [owner[w] for w in ids]
    kept = set(new_ids)
    return (
        job.with_columns(pl.Series("worker_id", new_ids)),
        worker.filter(pl.col("worker_id").is_in(list(kept))),
    )


@pytest.fixture(scope="module")
def several(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("several_jobs")
    real = pl.read_csv(shared_data / _WAC, infer_schema_length=0)
    county = real.filter(pl.col("w_geocode").str.starts_with("42001"))  # Adams County
    src = root / "pa_wac_S000_JT00_2015.csv.gz"
    src.write_bytes(gzip.compress(county.write_csv().encode()))
    pa = root / "pa"
    r = runner.invoke(app, ["synth", "lodes", "--wac", str(src), "--out", str(pa), "--seed", "1"])
    assert r.exit_code == 0, r.output
    job, worker = _several_jobs(
        pl.read_parquet(pa / "job.parquet"), pl.read_parquet(pa / "worker.parquet"), 0.05, 4
    )
    job.write_parquet(pa / "job.parquet")
    worker.write_parquet(pa / "worker.parquet")
    spec = (pa / "product.toml").read_text()
    assert "[privacy]" in spec
    spec = spec.replace("[privacy]", "max_jobs_per_worker = 3\n\n[privacy]", 1)
    (pa / "product.toml").write_text(spec)
    rel = root / "rel"
    r = runner.invoke(app, ["protect", str(pa / "product.toml"), "--out", str(rel), "--seed", "2"])
    assert r.exit_code == 0, r.output
    return {"job": job, "worker": worker, "rel": rel}


def test_the_data_hold_workers_with_two_or_three_jobs(several: dict) -> None:
    per = several["job"].group_by("worker_id").len()["len"]
    assert per.max() == 3 and per.min() == 1
    multi = float((per >= 2).mean())
    assert 0.04 < multi < 0.06  # about 5% of workers hold 2–3 jobs


def test_the_wac_file_passes_and_states_the_guarantee_for_k_jobs(several: dict) -> None:
    rel = several["rel"]
    f = rel / "agency" / "pa_wac_S000_JT00_2015.NOT-FOR-PUBLICATION.csv.gz"
    r = runner.invoke(app, ["check-format", str(f), "--format", "lodes-wac"])
    assert r.exit_code == 0, r.output
    manifest = json.loads((rel / "manifest.json").read_text())
    assert manifest["dataset"]["jobs"]["max_jobs_per_worker"] == 3
    # the product's queries: ε as written (30 in all), now covering a worker with 3 jobs
    assert manifest["privacy"]["total"]["epsilon"] == 30.0
    c000 = next(q for q in manifest["queries"] if q["name"] == "wac_c000")
    # Log-Laplace, d = 1, k = 3: λ = max(2d, k)·ln(1+α)/ε (docs/privacy.md)
    assert c000["params"]["lambda"] == pytest.approx(3 * math.log1p(ALPHA) / 1.0, rel=1e-12)
    assert "a worker with up to k = 3 jobs: ε=1" in c000["guarantee"]
    # CD: d = 12 ≥ k/2, the worker bound adds no noise: λ = 2·12·ln(1+α)/12
    cd = next(q for q in manifest["queries"] if q["name"] == "wac_cd")
    assert cd["params"]["lambda"] == pytest.approx(2 * math.log1p(ALPHA), rel=1e-12)
    report = (rel / "report.html").read_text()
    assert "at most k = 3 of each worker" in report


def test_the_c000_total_beside_the_true_job_total(several: dict) -> None:
    rows = read_lodes_wac(
        several["rel"] / "agency" / "pa_wac_S000_JT00_2015.NOT-FOR-PUBLICATION.csv.gz"
    )
    published = sum(int(r["C000"]) for r in rows)  # type: ignore[arg-type]
    true = several["job"].height  # no worker holds more than 3: every job is counted
    published_tables = pl.read_parquet(several["rel"] / "tables" / "wac_c000.parquet")
    assert published == int(published_tables["jobs"].sum())  # the file is the tables
    print(f"C000 total: published {published}, true {true} ({published / true - 1:+.2%})")


def test_the_order_key_is_written_nowhere(several: dict) -> None:
    """The seeded release's job-order key (derived from --seed 2) is in no file it wrote,
    as hex or as bytes, compressed files read decompressed; the manifest names the rule."""
    from eree.mechanisms.noise import SeededNoise

    key = SeededNoise(2).order_key()
    rel = several["rel"]
    files = [p for p in rel.rglob("*") if p.is_file()]
    assert len(files) > 5
    for p in files:
        data = p.read_bytes()
        if p.suffix == ".gz":
            data = gzip.decompress(data)
        assert key not in data and key.hex().encode() not in data, p
    manifest = json.loads((rel / "manifest.json").read_text())
    assert "keyed random order" in manifest["dataset"]["jobs"]["rule"]
