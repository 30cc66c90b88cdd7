"""Establishment cell statistics: group-by sums, identity, pnc clipped sums."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from eree.data.config import EstablishmentDataConfig
from eree.data.establishments import load_establishments
from eree.engine.base import ESTABLISHMENTS, bound_column
from eree.engine.polars.establishments import clipped_group_sums, group_sums, identity_values

SHARED_DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"
SYN_RI = SHARED_DATA / "syn_ri" / "ri44_qbp_2016_1.csv.gz"


@pytest.fixture
def frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": ["e1", "e2", "e3", "e4", "e5"],
            "cnty": ["3", "1", "1", "3", "1"],
            "naics5": ["23611", "23611", "44511", "44511", "23611"],
            "emp": [10.0, 0.0, 4.0, 100.0, 6.0],
            "wage": [5.0, 1.0, 2.0, 50.0, 3.0],
        }
    )


def test_group_sums(frame: pl.DataFrame) -> None:
    out = group_sums(frame, ["cnty"], ["emp", "wage"])
    assert out.columns == ["cnty", "emp", "wage", ESTABLISHMENTS]
    assert out.to_dicts() == [
        {"cnty": "1", "emp": 10.0, "wage": 6.0, ESTABLISHMENTS: 3},
        {"cnty": "3", "emp": 110.0, "wage": 55.0, ESTABLISHMENTS: 2},
    ]
    two = group_sums(frame.lazy(), ["cnty", "naics5"], ["emp"])
    assert two.height == 4  # only combinations present in the public frame
    assert two.get_column("cnty").to_list() == ["1", "1", "3", "3"]
    total = group_sums(frame, [], ["emp", "wage"])
    assert total.to_dicts() == [{"emp": 120.0, "wage": 61.0, ESTABLISHMENTS: 5}]
    with pytest.raises(KeyError, match="nope"):
        group_sums(frame, ["nope"], ["emp"])


def test_identity_values(frame: pl.DataFrame) -> None:
    out = identity_values(frame, "id", ["emp"])
    assert out.columns == ["id", "emp"]
    assert out.get_column("id").to_list() == ["e1", "e2", "e3", "e4", "e5"]
    assert out.get_column("emp").dtype == pl.Float64


def test_clipped_group_sums(frame: pl.DataFrame) -> None:
    bounds = pl.DataFrame(
        {
            "id": ["e5", "e4", "e3", "e2", "e1"],
            "emp": [5.0, 20.0, 3.0, 2.0, 12.0],
            "wage": [100.0, 100.0, 100.0, 100.0, 100.0],
        }
    )
    out = clipped_group_sums(frame, ["cnty"], "id", bounds, ["emp", "wage"])
    assert out.columns == [
        "cnty",
        "emp",
        bound_column("emp"),
        "wage",
        bound_column("wage"),
        ESTABLISHMENTS,
    ]
    rows = {r["cnty"]: r for r in out.to_dicts()}
    # county 1: e2, e3, e5 with bounds 2, 3, 5 → u* = 5; min(0,5)+min(4,5)+min(6,5) = 9
    assert rows["1"][bound_column("emp")] == 5.0 and rows["1"]["emp"] == 9.0
    # county 3: e1, e4 with bounds 12, 20 → u* = 20; 10 + 20 = 30
    assert rows["3"][bound_column("emp")] == 20.0 and rows["3"]["emp"] == 30.0
    assert rows["3"]["wage"] == 55.0  # nothing clipped
    total = clipped_group_sums(frame, [], "id", bounds, ["emp"])
    # one group: u* = 20; 10 + 0 + 4 + min(100, 20) + 6 = 40
    assert total.to_dicts() == [{"emp": 40.0, bound_column("emp"): 20.0, ESTABLISHMENTS: 5}]
    with pytest.raises(KeyError, match="no bound"):
        clipped_group_sums(frame, ["cnty"], "id", bounds.head(3), ["emp"])


@pytest.mark.shared_data
@pytest.mark.skipif(not SYN_RI.is_file(), reason="../shared/data (Syn-RI) is absent")
def test_syn_ri_matches_table_9() -> None:
    """County and NAICS-5 summaries of the Syn-RI file are the paper's Table 9."""
    data = load_establishments(EstablishmentDataConfig(SYN_RI))
    county = group_sums(data.frame, ["cnty"], ["m3emp", "wage"])
    assert county.height == 5
    n = county.get_column(ESTABLISHMENTS).to_numpy()
    assert (n.min(), int(np.median(n)), n.max(), n.sum()) == (1102, 3354, 14414, 25_420)
    emp = county.get_column("m3emp").to_numpy()
    assert (emp.min(), np.median(emp), emp.max()) == (10955, 38191, 237653)
    wage = county.get_column("wage").to_numpy()
    assert (wage.min(), np.median(wage), wage.max()) == (699819, 1959523, 4255187)
    n5 = group_sums(data.frame, ["naics5"], ["m3emp"])
    assert n5.height == 484
    e5 = n5.get_column("m3emp").to_numpy()
    assert (e5.min(), e5.max()) == (1, 36147) and abs(np.median(e5) - 200) <= 0.5
    assert group_sums(data.frame, ["cnty", "naics5"], ["m3emp"]).height == 1620
    ident = identity_values(data.frame, "primary_key", ["m1emp"])
    assert ident.height == 25_420
    # bounds at the true values: no clipping, clipped sums are the sums
    b = identity_values(data.frame, "primary_key", ["m3emp"])
    clipped = clipped_group_sums(data.frame, ["cnty"], "primary_key", b, ["m3emp"])
    np.testing.assert_array_equal(clipped.get_column("m3emp").to_numpy(), emp)
