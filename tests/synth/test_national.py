"""National synthetic data written in chunks (issue 12), on tiny sizes.

See docs/design.md#synthetic-data.
"""

from __future__ import annotations

import polars as pl
import pytest

from eree.engine.polars.engine import PolarsEngine
from eree.synth.national import STATE_JOBS_WEIGHT, _shares, national_lodes, national_qcew


def test_shares_split_the_total_exactly_by_weight() -> None:
    got = _shares(1000, ["06", "56"])
    assert sum(got.values()) == 1000
    w = STATE_JOBS_WEIGHT
    assert abs(got["06"] - 1000 * w["06"] / (w["06"] + w["56"])) < 1


def test_national_lodes_chunks_are_one_valid_dataset(tmp_path, shared_data) -> None:
    wac = shared_data / "lodes" / "pa_wac_S000_JT00_2015.csv.gz"
    cfg, summary = national_lodes(
        tmp_path / "lodes", wac, seed=2, jobs=60_000, max_chunk_jobs=25_000,
        states=["10", "44"],
    )  # fmt: skip
    # Delaware and Rhode Island have equal weights: 30,000 jobs each, in 2 chunks each
    assert summary.chunks == 4
    assert sorted(p.name for p in cfg.job.iterdir()) == [
        "part-10-00.parquet",
        "part-10-01.parquet",
        "part-44-00.parquet",
        "part-44-01.parquet",
    ]
    assert summary.rows["job"] == summary.rows["worker"]
    # each chunk keeps every template block with probability p = 15,000 / template jobs:
    # the expected total is 60,000, with variance 4 · Σ p(1-p) b² over the blocks' jobs b
    from eree.synth.lodes import read_wac

    b = read_wac(wac)[1].sum(axis=1).astype(float)
    p = 15_000 / b.sum()
    sd = (4 * (p * (1 - p) * b**2).sum()) ** 0.5
    assert abs(summary.rows["job"] - 60_000) < 5 * sd
    # the partitioned tables pass every rule of docs/design.md#validation as one dataset
    data = PolarsEngine().load_job_tables(cfg, ["state", "county", "age"])
    assert data.jobs.height == summary.rows["job"]
    assert data.workplaces.height == summary.rows["workplace"]
    assert sorted(data.workplaces.get_column("state").unique()) == ["10", "44"]
    assert (data.workplaces.get_column("county").str.slice(0, 2)
            == data.workplaces.get_column("state")).all()  # fmt: skip


def test_national_qcew_scales_the_template_state(tmp_path, shared_data) -> None:
    area = shared_data / "qcew_2016_by_area"  # DE, DC and RI: small and quick
    cfg, summary = national_qcew(
        tmp_path / "qcew", area, seed=3, establishments=20_000, states=["01", "02"]
    )
    frame = pl.read_parquet(sorted(cfg.path.iterdir()))
    assert frame.height == summary.rows["establishments"]
    assert abs(frame.height - 20_000) < 0.03 * 20_000
    assert frame.get_column("primary_key").is_unique().all()
    assert sorted(frame.get_column("state").unique().to_list()) == [1, 2]
    assert (frame.select(["m1emp", "m2emp", "m3emp", "wage"]) >= 0).to_numpy().all()


def test_unknown_state_is_refused(tmp_path, shared_data) -> None:
    with pytest.raises(ValueError, match="unknown state"):
        national_qcew(tmp_path / "q", shared_data, seed=1, states=["99"])
