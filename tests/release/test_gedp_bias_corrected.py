"""GEDP ``consistent = true`` through ``protect``: biased totals anchored, every table adds up.

Data: thousands of wages far below the ψ-mechanism's σ² (≈ 1.1e5 at Table 7's γ = 50,
μ = 0.15), a few large ones, three counties — the case where the plain non-negative
least squares piles its bias into the state and county wage totals
(docs/publication-grade.md, section 5). The statistical expectation (the least-squares
posterior variance of the anchored totals, with a power check) is tested on the solver
in tests/postprocess/test_bias_corrected.py; here the release path: the manifest names
the anchored tables, no table keeps its own values, every table is a tabulation of one
non-negative microdata (every released pair adds up), and the state total is unbiased
to within what the published variances allow.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from eree.mechanisms.noise import SeededNoise
from eree.release.protect import protect
from eree.release.spec import parse_spec

GAMMA = 50.0
N = 6000


def _write(path: Path, seed: int = 3) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    wage = rng.uniform(0, 200, N) + np.where(rng.random(N) < 0.05, rng.uniform(2e4, 2e5, N), 0)
    df = pl.DataFrame({
        "id": [f"E{i:05d}" for i in range(N)],
        "cnty": [f"{c:03d}" for c in rng.integers(0, 3, N)],
        "wage": np.round(wage, 1),
    })  # fmt: skip
    df.write_csv(path)
    return df


def _spec(path: Path) -> dict[str, Any]:
    return {
        "name": "bias-corrected",
        "data": {"kind": "establishments", "path": str(path), "id": "id",
                 "public": ["cnty"], "confidential": ["wage"]},
        "privacy": {"definition": "gedp", "neighbor": "sqrt", "distance": {"wage": GAMMA}},
        "query": [
            {"name": "identity", "by": "identity", "mechanism": "psi", "mu": {"wage": 0.15}},
            {"name": "state", "by": [], "mechanism": "pnc", "mu": {"wage": 0.10}},
            {"name": "county", "by": ["cnty"], "mechanism": "pnc", "mu": {"wage": 0.15}},
        ],
        "pnc": {"zeta": 0.01, "bounds_from": "identity"},
        "postprocess": {"microdata": True, "nonnegative": True, "consistent": True},
        "output": {"csv": False},
    }  # fmt: skip


@pytest.mark.parametrize("seed", [0, 1])
def test_biased_wage_totals_are_anchored_and_every_table_adds_up(tmp_path, seed):
    df = _write(tmp_path / "e.csv")
    protect(parse_spec(_spec(tmp_path / "e.csv"), tmp_path), tmp_path / "out", SeededNoise(seed))
    out = tmp_path / "out"
    m = json.loads((out / "manifest.json").read_text())
    bc = m["microdata"]["attributes"]["wage"]["bias_corrected"]
    assert "state" in bc["anchored"]  # the plain solve's state total is evidently biased
    assert bc["checks"]["state"]["bias_ratio"] > 1.0
    assert bc["largest_relative_gap"] <= 1e-9
    assert "kept_own_values" not in m["postprocess"]  # nothing left out of the sums
    t = {n: pl.read_parquet(out / "tables" / f"{n}.parquet") for n in ("identity", "state",
                                                                       "county")}  # fmt: skip
    md = pl.read_parquet(out / "microdata.parquet")
    assert md["wage"].min() >= 0 and t["county"]["wage"].min() >= 0
    state = float(t["state"]["wage"][0])
    # every released pair adds up: identity → county → state
    by_c = (
        t["identity"]
        .join(md.select("id", "cnty"), on="id")
        .group_by("cnty")
        .agg(pl.col("wage").sum().alias("s"))
    )
    j = t["county"].join(by_c, on="cnty")
    np.testing.assert_allclose(j["wage"].to_numpy(), j["s"].to_numpy(), rtol=1e-9)
    assert t["county"]["wage"].sum() == pytest.approx(state, rel=1e-9)
    assert t["identity"]["wage"].sum() == pytest.approx(state, rel=1e-9)
    # unbiased to within the state's own published noise (the plain solve's bias is
    # several times that: the check above); sd from the raw state table's published std
    raw = protect(parse_spec({**_spec(tmp_path / "e.csv"), "postprocess": {}}, tmp_path),
                  tmp_path / "raw", SeededNoise(seed))  # fmt: skip
    assert raw.out_dir
    sd = float(pl.read_parquet(tmp_path / "raw" / "tables" / "state.parquet")["wage_std"][0])
    assert abs(state - float(df["wage"].sum())) <= 3 * sd
