"""Shared helpers of the cell-suppression tests: the Appendix E example of the QCEW
paper, small hand-solvable tables and a random QCEW-like frame."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from eree.suppression import PrimaryRules, tabulate
from eree.suppression.tables import Dimension, TableLayout

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
QCEW_DIR = SHARED / "qcew_2016_by_area"
SYN_RI = SHARED / "syn_ri" / "ri44_qbp_2016_1.csv.gz"


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent (needs ../shared/data)")
    return path


# --------------------------------------------------------------------------------------
# Appendix E: five establishments, three counties, three sectors
# --------------------------------------------------------------------------------------

B, C, G, F, A = 50.0, 30.0, 20.0, 40.0, 25.0  # wages of Bob, Carlos, Green, Isaac, Alice


def appendix_e() -> pl.DataFrame:
    """Table 10 of the QCEW paper (the wages are symbols there; any values do)."""
    return pl.DataFrame(
        {
            "establishment": [
                "Bob's Building",
                "Carlos's Construction",
                "Green Hills Farming",
                "Isaac's Foundations",
                "Alice's Apples",
            ],
            "county": ["X", "Y", "Y", "Z", "Z"],
            "sector": ["52", "23", "11", "23", "11"],
            "wage": [B, C, G, F, A],
        }
    )


#: "directly disclosive because they only contain one establishment": fewer than 2
E_RULES = PrimaryRules(threshold=2, dominance_k=None, p_percent=None)


def cell_of(tables, county: str = "total", sector: str = "total") -> int:
    c = tables.cells
    return int(c.filter((pl.col("county") == county) & (pl.col("sector") == sector))["cell"][0])


def two_by_two() -> tuple:
    """Rows r ∈ {a, b}, columns c ∈ {u, v}: interior 10, 20 / 30, 40."""
    df = pl.DataFrame(
        {"r": ["a", "a", "b", "b"], "c": ["u", "v", "u", "v"], "x": [10.0, 20.0, 30.0, 40.0]}
    )
    dims = (
        Dimension("r", (("total", None), ("r", "r"))),
        Dimension("c", (("total", None), ("c", "c"))),
    )
    layout = TableLayout(dims, (("total", "total"), ("r", "total"), ("total", "c"), ("r", "c")))
    t = tabulate(df, layout, ["x"])
    idx = {(r, c): i for i, (r, c) in enumerate(zip(t.cells["r"], t.cells["c"], strict=True))}
    return t, idx


def brute_bounds(a: sp.csr_matrix, s: np.ndarray, x: np.ndarray) -> tuple:
    idx = np.flatnonzero(s)
    a_s = a.tocsc()[:, idx]
    b = -(a.tocsc()[:, ~s] @ x[~s])
    lo, hi = np.full(len(x), np.nan), np.full(len(x), np.nan)
    for k, i in enumerate(idx):
        c = np.zeros(idx.size)
        c[k] = 1.0
        r = linprog(c, A_eq=a_s, b_eq=b, bounds=(0, None), method="highs")
        lo[i] = r.x[k]
        r = linprog(-c, A_eq=a_s, b_eq=b, bounds=(0, None), method="highs")
        hi[i] = np.inf if r.status == 3 else r.x[k]
    return lo, hi


def random_qcew(seed: int, n: int = 120) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    codes = ["236115", "236116", "236220", "238110", "311811", "541110", "541211", "722511"]
    emp = rng.integers(0, 60, n).astype(float) * (rng.random(n) < 0.95)
    return pl.DataFrame(
        {
            "primary_key": [str(i) for i in range(n)],
            "cnty": rng.choice(["1", "3", "5"], n).tolist(),
            "own": rng.choice(["5", "5", "5", "3"], n).tolist(),
            "naics": rng.choice(codes, n).tolist(),
            "m1emp": emp,
            "wage": emp * rng.uniform(5, 15, n),
        }
    )
