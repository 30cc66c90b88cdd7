"""A tiny ER-EE dataset on disk with distinctive confidential numbers."""

from pathlib import Path

import numpy as np
import polars as pl
import pytest


def write_small_job_tables(root: Path, seed: int = 0) -> Path:
    """Three tables: 40 establishments in 4 counties, sizes drawn heavy-tailed."""
    rng = np.random.default_rng(seed)
    n_est = 40
    sizes = np.minimum((rng.pareto(1.2, n_est) * 15).astype(int) + 1, 3000)
    sizes[0] = 1103  # a distinctive, large establishment
    wp = pl.DataFrame(
        {
            "workplace_id": [f"w{i:03d}" for i in range(n_est)],
            "state": ["42"] * n_est,
            "county": [f"42{c:03d}" for c in rng.integers(1, 5, n_est)],
            "tract": [f"t{c}" for c in rng.integers(0, 8, n_est)],
            "block": [f"b{i}" for i in range(n_est)],
            "naics_sector": rng.choice(["11", "23", "52", "62"], n_est).tolist(),
            "ownership": rng.choice(["A05", "A00"], n_est, p=[0.8, 0.2]).tolist(),
        }
    )
    wid = np.repeat(wp["workplace_id"].to_numpy(), sizes)
    n_jobs = wid.size
    worker = pl.DataFrame(
        {
            "worker_id": [f"p{i}" for i in range(n_jobs)],
            "age": rng.choice(["A01", "A02", "A03"], n_jobs).tolist(),
            "sex": rng.choice(["M", "F"], n_jobs).tolist(),
            "race": rng.choice(["A1", "A2", "A4"], n_jobs).tolist(),
            "ethnicity": rng.choice(["A1", "A2"], n_jobs).tolist(),
            "education": rng.choice(["E1", "E2", "E3", "E4"], n_jobs).tolist(),
            "earnings": rng.choice(["E01", "E02", "E03"], n_jobs).tolist(),
        }
    )
    job = pl.DataFrame({"worker_id": worker["worker_id"], "workplace_id": wid.tolist()})
    root.mkdir(parents=True, exist_ok=True)
    wp.write_parquet(root / "workplace.parquet")
    worker.write_parquet(root / "worker.parquet")
    job.write_parquet(root / "job.parquet")
    return root


SPEC = """
name = "small"
[data]
kind = "eree"
workplace = "data/workplace.parquet"
worker = "data/worker.parquet"
job = "data/job.parquet"
[privacy]
definition = "eree-weak"
alpha = 0.1
[[query]]
name = "county_industry"
by = ["county", "naics_sector"]
mechanism = "smooth_laplace"
epsilon = 1.0
[[query]]
name = "county"
by = ["county"]
mechanism = "log_laplace"
epsilon = 1.0
[[query]]
name = "county_sex"
by = ["county", "sex"]
mechanism = "smooth_gamma"
epsilon = 2.0
[[query]]
name = "county_age_sex"
by = ["county", "age", "sex"]
mechanism = "smooth_laplace"
epsilon = 6.0
"""


@pytest.fixture
def small_spec(tmp_path):
    write_small_job_tables(tmp_path / "data")
    p = tmp_path / "spec.toml"
    p.write_text(SPEC)
    return p
