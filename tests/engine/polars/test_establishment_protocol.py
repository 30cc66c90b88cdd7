"""The establishment half of the engine protocol (docs/design.md#core-objects) on the Polars engine.

Expected values come from the definitions: a group's sum is the sum of its members'
values; u*_ℓ is the largest bound in the group; the clipped sum is Σ min(r_j, u*_ℓ)
(Webb et al. Def 6.8); identity answers are the values themselves.
"""

from __future__ import annotations

from fractions import Fraction

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eree.data.config import EstablishmentDataConfig
from eree.data.establishments import EstablishmentData
from eree.engine.base import bound_column
from eree.engine.exact_sums import exact_sums
from eree.engine.polars.engine import PolarsEngine
from eree.errors import DataValidationError

ROWS = [  # id, cnty, own, emp, wage
    ("e3", "001", "5", 4.0, 1000.0),
    ("e1", "001", "5", 10.0, 250.5),
    ("e2", "003", "5", 1.0, 80.0),
    ("e5", "001", "1", 7.0, 0.0),
    ("e4", "003", "5", 2.0, 12.25),
]
BOUNDS = {"e1": 8.0, "e2": 3.0, "e3": 5.0, "e4": 1.5, "e5": 9.0}


def data(rows=ROWS) -> EstablishmentData:
    frame = pl.DataFrame(
        {"primary_key": [r[0] for r in rows], "cnty": [r[1] for r in rows],
         "own": [r[2] for r in rows], "emp": [r[3] for r in rows],
         "wage": [r[4] for r in rows]},
        schema={"primary_key": pl.Utf8, "cnty": pl.Utf8, "own": pl.Utf8,
                "emp": pl.Float64, "wage": pl.Float64},
    )  # fmt: skip
    cfg = EstablishmentDataConfig(
        path=__file__, public=("cnty", "own"), confidential=("emp", "wage")
    )  # type: ignore[arg-type]
    return EstablishmentData(frame, cfg)


E = PolarsEngine()


def test_group_sums_by_county() -> None:
    got = E.group_sums(data(), ["cnty"], ["emp", "wage"])
    assert got.columns == ["cnty", "emp", "wage", "establishments"]
    assert got.rows() == [("001", 21.0, 1250.5, 3), ("003", 3.0, 92.25, 2)]


def test_group_sums_total_and_two_keys() -> None:
    assert E.group_sums(data(), [], ["emp"]).rows() == [(24.0, 5)]
    got = E.group_sums(data(), ["cnty", "own"], ["emp"])
    assert got.rows() == [("001", "1", 7.0, 1), ("001", "5", 14.0, 2), ("003", "5", 3.0, 2)]


def test_identity_values_sorted_by_id() -> None:
    got = E.identity_values(data(), ["emp"])
    assert got.rows() == [("e1", 10.0), ("e2", 1.0), ("e3", 4.0), ("e4", 2.0), ("e5", 7.0)]


def test_max_bounds_and_clipped_sums() -> None:
    bounds = pl.DataFrame({"primary_key": list(BOUNDS), "emp": list(BOUNDS.values())})
    mx = E.group_max_bounds(data(), ["cnty"], bounds)
    assert mx.rows() == [("001", 9.0, 3), ("003", 3.0, 2)]
    got = E.clipped_group_sums(data(), ["cnty"], bounds, ["emp"])
    # county 001: u* = 9 -> min(4,9)+min(10,9)+min(7,9) = 20; county 003: u* = 3 -> 1+2
    assert got.select("cnty", "emp", bound_column("emp"), "establishments").rows() == [
        ("001", 20.0, 9.0, 3),
        ("003", 3.0, 3.0, 2),
    ]
    total = E.clipped_group_sums(data(), [], bounds, ["emp"])
    assert total.select("emp", bound_column("emp")).rows() == [(4 + 9 + 1 + 7 + 2, 9.0)]


def test_missing_bound_is_refused() -> None:
    bounds = pl.DataFrame({"primary_key": ["e1", "e2"], "emp": [1.0, 2.0]})
    with pytest.raises(KeyError, match="no bound"):
        E.clipped_group_sums(data(), ["cnty"], bounds, ["emp"])


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 2**40)),
        min_size=1,
        max_size=60,
    ),
    st.randoms(use_true_random=False),
)
def test_sums_are_exact_and_order_free(pairs, rnd) -> None:
    # values are multiples of 2^-32 below 2^8: exactly representable, so the exact
    # (rational) sum is what the engine must return, whatever the row order
    rows = [(f"e{i}", g, "5", v / 2**32, 0.0) for i, (g, v) in enumerate(pairs)]
    shuffled = rows[:]
    rnd.shuffle(shuffled)
    want: dict[str, Fraction] = {}
    for _, g, _, v, _ in rows:
        want[g] = want.get(g, Fraction(0)) + Fraction(v)
    for rs in (rows, shuffled):
        got = E.group_sums(data(rs), ["cnty"], ["emp"])
        assert got.rows() == [
            (g, float(want[g]), sum(1 for r in rows if r[1] == g)) for g in sorted(want)
        ]


def test_exact_sums_refuses_overflowing_totals() -> None:
    import numpy as np

    with pytest.raises(DataValidationError, match="too large"):
        exact_sums(np.array([2**62]), np.array([0]))
    with pytest.raises(DataValidationError, match="too large"):
        exact_sums(np.array([5]), np.array([0]), count=np.array([4]), largest=np.array([2.0**61]))
