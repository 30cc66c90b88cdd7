"""Category merges in the linked tables: a group is one new category, its relations hold.

The expectations are the tables' own arithmetic: a merged tabulation still adds up
(every relation holds), and each group's cell is the sum of its members' cells in the
unmerged tabulation of the same establishments (every table, every attribute); the
members appear nowhere, and every other cell is unchanged.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from eree.errors import DataValidationError
from eree.suppression import CategoryMerges, check_merges, merge_categories, qcew_tables
from eree.suppression.merges import group_code
from tests.suppression.helpers import random_qcew

ATTRS = ("m1emp", "wage")


def _keyed(tables) -> dict[tuple[str, ...], int]:
    rows = tables.cells.select(pl.col("table_code", "area", "own", "industry").cast(pl.Utf8))
    return {r: i for i, r in enumerate(rows.iter_rows())}


@pytest.mark.parametrize("seed", [3, 11])
def test_a_group_is_the_sum_of_its_members_in_every_table(seed):
    df = random_qcew(seed, 400)
    merges = CategoryMerges(areas=(("1", "3"),), industries=(("236115", "236116"),))
    plain, merged = qcew_tables(df, ATTRS), qcew_tables(df, ATTRS, merges=merges)
    for a in ATTRS:
        assert merged.check_additivity(a) < 1e-12
    before, after = _keyed(plain), _keyed(merged)
    members = {"1": "1+3", "3": "1+3", "236115": "236115+236116", "236116": "236115+236116"}
    sums: dict[tuple[str, ...], np.ndarray] = {}
    for key, i in before.items():
        code, area, own, ind = key
        new = (code, members.get(area, area), own, members.get(ind, ind))
        vals = np.array([plain.values(a)[i] for a in ATTRS])
        if new == key:
            j = after[key]  # a cell no merge touches is the same cell
            assert np.allclose([merged.values(a)[j] for a in ATTRS], vals)
        else:
            sums[new] = sums.get(new, 0.0) + vals
    assert not set(members) & ({k[1] for k in after} | {k[3] for k in after})
    assert len(sums) > 20
    for new, total in sums.items():
        j = after[new]
        assert np.allclose([merged.values(a)[j] for a in ATTRS], total), new


def test_only_the_finest_codes_change():
    df = random_qcew(3, 200)
    merges = CategoryMerges(areas=(("5", "1"),), industries=(("236116", "236115"),))
    out = merge_categories(df.with_columns(pl.col("naics").str.slice(0, 5).alias("naics5")), merges)
    assert set(out["cnty"]) == {"1+5", "3"} and group_code(("5", "1")) == "1+5"
    assert "236115+236116" in set(out["naics"])
    assert out["naics5"].to_list() == out["naics"].str.slice(0, 5).to_list()


@pytest.mark.parametrize(
    "areas,industries,named",
    [
        ((("1",),), (), "at least two"),
        ((("1", "1"),), (), "twice"),
        ((("1", "3"), ("3", "5")), (), "groups 1 and 2"),
        ((("1+3", "5"),), (), "'+'"),
        ((), (("236115", "541211"),), "five-digit NAICS parent"),
        ((), (("23611", "236115"),), "six-digit"),
    ],
)
def test_a_bad_group_is_refused(areas, industries, named):
    with pytest.raises(ValueError, match=named.replace("+", r"\+")):
        CategoryMerges(areas=areas, industries=industries)


def test_the_data_must_hold_every_member_and_not_the_group_code():
    df = random_qcew(3, 200)
    with pytest.raises(DataValidationError, match="names '7'"):
        check_merges(df, CategoryMerges(areas=(("1", "7"),)))
    clash = df.with_columns(pl.lit("1+3").alias("cnty"))
    with pytest.raises(DataValidationError, match="already a code"):
        check_merges(pl.concat([df, clash]), CategoryMerges(areas=(("1", "3"),)))
    check_merges(df, CategoryMerges(areas=(("1", "3"),)))
