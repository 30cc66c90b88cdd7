"""Cell statistics of the Polars engine against a brute-force count."""

from collections import Counter, defaultdict
from itertools import product

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eree.data.job_tables import JobTables
from eree.engine.polars.engine import PolarsEngine
from eree.errors import SpecError

DOMAINS = {"sex": ("M", "F"), "age": ("A01", "A02", "A03"), "county": ("c1", "c2", "c3")}


def make_data(estabs, jobs):
    """estabs: list of (id, county, sector); jobs: list of (workplace_id, sex, age)."""
    wp = pl.DataFrame(
        {"workplace_id": [e[0] for e in estabs], "county": [e[1] for e in estabs],
         "naics_sector": [e[2] for e in estabs]},
        schema={"workplace_id": pl.Utf8, "county": pl.Utf8, "naics_sector": pl.Utf8},
    )  # fmt: skip
    jb = pl.DataFrame(
        {"workplace_id": [j[0] for j in jobs], "sex": [j[1] for j in jobs],
         "age": [j[2] for j in jobs]},
        schema={"workplace_id": pl.Utf8, "sex": pl.Utf8, "age": pl.Utf8},
    )  # fmt: skip
    return JobTables(workplaces=wp, jobs=jb, domains=dict(DOMAINS))


def brute(estabs, jobs, wp_by, wk_by, theta=None):
    attrs = {e[0]: {"county": e[1], "naics_sector": e[2]} for e in estabs}
    size = Counter(j[0] for j in jobs)
    per = defaultdict(Counter)  # cell -> establishment -> n
    for w, sex, age in jobs:
        a = {**attrs[w], "sex": sex, "age": age}
        per[tuple(a[k] for k in [*wp_by, *wk_by])][w] += 1
    n_est = Counter(tuple(attrs[e[0]][k] for k in wp_by) for e in estabs)
    out = {}
    for wkey, ne in n_est.items():
        for wk in product(*(DOMAINS[a] for a in wk_by)):
            key = (*wkey, *wk)
            c = per.get(key, Counter())
            trunc = sum(n for w, n in c.items() if theta is not None and size[w] < theta)
            out[key] = (sum(c.values()), max(c.values(), default=0), ne, trunc)
    return out


ESTABS = [("e1", "c1", "11"), ("e2", "c1", "11"), ("e3", "c2", "23"), ("e4", "c2", "11")]
JOBS = (
    [("e1", "M", "A01")] * 5 + [("e1", "F", "A02")] * 2 + [("e2", "M", "A01")] * 3
    + [("e3", "F", "A03")] * 7 + [("e4", "M", "A02")]
)  # fmt: skip


@pytest.mark.parametrize(
    "wp_by,wk_by",
    [([], []), (["county"], []), (["county", "naics_sector"], []), (["county"], ["sex"]),
     (["county", "naics_sector"], ["age", "sex"]), ([], ["age"])],
)  # fmt: skip
def test_cell_statistics_match_brute_force(wp_by, wk_by):
    stats = PolarsEngine().cell_statistics(make_data(ESTABS, JOBS), wp_by, wk_by, truncate_below=4)
    expected = brute(ESTABS, JOBS, wp_by, wk_by, theta=4)
    keys = [*wp_by, *wk_by]
    got = {
        tuple(r[k] for k in keys): (r["count"], r["x_v"], r["establishments"], r["count_truncated"])
        for r in stats.iter_rows(named=True)
    }
    assert got == expected
    assert stats["has_establishment"].all()
    assert stats.columns[: len(keys)] == keys


def test_worked_example():
    stats = PolarsEngine().cell_statistics(make_data(ESTABS, JOBS), ["county"], ["sex"])
    row = stats.filter((pl.col("county") == "c1") & (pl.col("sex") == "M")).row(0, named=True)
    # e1 has 5 men, e2 has 3: n = 8, x_v = 5, two establishments
    assert (row["count"], row["x_v"], row["establishments"]) == (8, 5, 2)
    # a cell with establishments but no matching worker is listed with a zero count
    row = stats.filter((pl.col("county") == "c2") & (pl.col("sex") == "M")).row(0, named=True)
    assert (row["count"], row["x_v"]) == (1, 1)
    assert stats.height == 2 * 2  # 2 counties in the frame × 2 sexes


def test_complete_lists_public_zeros():
    data = make_data(ESTABS, JOBS)
    stats = PolarsEngine().cell_statistics(data, ["county"], ["sex"], complete=True)
    assert stats.height == 3 * 2
    c3 = stats.filter(pl.col("county") == "c3")
    assert c3["count"].to_list() == [0, 0] and not c3["has_establishment"].any()
    with pytest.raises(SpecError, match="no declared domain"):
        PolarsEngine().cell_statistics(data, ["naics_sector"], [], complete=True)


def test_unknown_attribute_is_refused():
    with pytest.raises(SpecError, match="not a workplace attribute"):
        PolarsEngine().cell_statistics(make_data(ESTABS, JOBS), ["tract"], [])
    with pytest.raises(SpecError, match="not a worker attribute"):
        PolarsEngine().cell_statistics(make_data(ESTABS, JOBS), [], ["race"])


def test_establishment_cells():
    ec = PolarsEngine().establishment_cells(make_data(ESTABS, JOBS), ["county"], ["sex"])
    got = {(r["workplace_id"], r["county"], r["sex"]): r["n"] for r in ec.iter_rows(named=True)}
    assert got == {("e1", "c1", "M"): 5, ("e1", "c1", "F"): 2, ("e2", "c1", "M"): 3,
                   ("e3", "c2", "F"): 7, ("e4", "c2", "M"): 1}  # fmt: skip


estab_st = st.lists(
    st.tuples(st.sampled_from(["c1", "c2", "c3"]), st.sampled_from(["11", "23"])),
    min_size=1, max_size=6,
)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(estab_st, st.data())
def test_property_matches_brute_force(estab_attrs, data):
    estabs = [(f"e{i}", c, s) for i, (c, s) in enumerate(estab_attrs)]
    jobs = data.draw(
        st.lists(
            st.tuples(st.sampled_from([e[0] for e in estabs]), st.sampled_from(DOMAINS["sex"]),
                      st.sampled_from(DOMAINS["age"])),
            max_size=40,
        )
    )  # fmt: skip
    wp_by = data.draw(st.sampled_from([[], ["county"], ["naics_sector", "county"]]))
    wk_by = data.draw(st.sampled_from([[], ["sex"], ["age", "sex"]]))
    stats = PolarsEngine().cell_statistics(make_data(estabs, jobs), wp_by, wk_by, truncate_below=3)
    keys = [*wp_by, *wk_by]
    got = {
        tuple(r[k] for k in keys): (r["count"], r["x_v"], r["establishments"], r["count_truncated"])
        for r in stats.iter_rows(named=True)
    }
    assert got == brute(estabs, jobs, wp_by, wk_by, theta=3)


def test_values_outside_domain_and_missing_domains_are_spec_errors():
    data = make_data(ESTABS, [("e1", "X", "A01")])  # "X" is not a declared sex
    with pytest.raises(SpecError, match="outside its declared domain"):
        PolarsEngine().cell_statistics(data, ["county"], ["sex"])
    bare = JobTables(data.workplaces, make_data(ESTABS, JOBS).jobs, {"age": DOMAINS["age"]})
    with pytest.raises(SpecError, match="no declared domain"):
        PolarsEngine().cell_statistics(bare, [], ["sex"])


def test_many_wide_workplace_keys_count_like_a_plain_group_by():
    # six keys of ~4,500 distinct values each: their combinations (> 4,000^6 > 2^64) do
    # not fit one integer, so the frame's codes are made dense along the way
    import numpy as np

    rng = np.random.default_rng(4)
    n = 6_000
    keys = [f"k{i}" for i in range(6)]
    wp = pl.DataFrame(
        {"workplace_id": [f"w{i}" for i in range(n)]}
        | {k: [f"v{x}" for x in rng.integers(0, 5_000, n)] for k in keys}
    )
    jobs = pl.DataFrame({"workplace_id": [f"w{x}" for x in rng.integers(0, n, 3 * n)]})
    got = PolarsEngine().cell_statistics(JobTables(wp, jobs, {}), keys, [])
    per = jobs.group_by("workplace_id").agg(pl.len().alias("n"))
    want = (
        wp.join(per, on="workplace_id", how="left")
        .group_by(keys)
        .agg(
            pl.col("n").sum().alias("count"),
            pl.col("n").max().fill_null(0).alias("x_v"),
            pl.len().alias("establishments"),
        )
        .sort(keys)
    )
    assert got.select(keys).equals(want.select(keys))
    assert got["count"].to_list() == want["count"].to_list()
    assert got["x_v"].to_list() == want["x_v"].to_list()
    assert got["establishments"].to_list() == want["establishments"].to_list()
