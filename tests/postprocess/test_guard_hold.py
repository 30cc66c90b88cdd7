"""Which doubted marginals are held as invariants (eree.postprocess.guard.choose_held)."""

from eree.postprocess.guard import choose_held

# the lattice of issue 39: county ⊃ tract ⊃ tract × industry, tract × sex ⊃ the finest
PAIRS = [
    ("tract", "county"),
    ("tract_ind", "tract"),
    ("tract_sex", "tract"),
    ("finest", "tract_ind"),
    ("finest", "tract_sex"),
]


def test_one_held_per_group_the_one_of_least_total_variance():
    var = {"county": 4e6, "tract": 3e6, "tract_ind": 2e6, "tract_sex": 4e5, "finest": 1e6}
    h = choose_held(["county", "tract_sex"], PAIRS, var)
    assert h.held == ["tract_sex"]
    assert h.conflicts == {"county": "tract_sex"}
    # the other way round when the county's own values are the more precise in all
    h = choose_held(["county", "tract_sex"], PAIRS, var | {"county": 1e5})
    assert h.held == ["county"] and h.conflicts == {"tract_sex": "county"}


def test_groups_not_joined_by_a_pair_each_hold_one():
    pairs = [("b", "a"), ("d", "c")]
    var = {"a": 1.0, "b": 2.0, "c": 5.0, "d": 3.0}
    h = choose_held(["a", "b", "c", "d"], pairs, var)
    assert h.held == ["a", "d"]
    assert h.conflicts == {"b": "a", "c": "d"}


def test_a_chain_joins_marginals_that_are_not_a_pair():
    # county and the finest are joined only through tract: they conflict all the same
    pairs = [("tract", "county"), ("finest", "tract")]
    h = choose_held(["finest", "county"], pairs, {"county": 9.0, "tract": 1.0, "finest": 2.0})
    assert h.held == ["finest"] and h.conflicts == {"county": "finest"}


def test_ties_go_by_name_and_nothing_flagged_holds_nothing():
    h = choose_held(["tract_sex", "county"], PAIRS, dict.fromkeys(["county", "tract_sex"], 1.0))
    assert h.held == ["county"]
    assert choose_held([], PAIRS, {}).held == []
