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


def _result(flagged, excess):
    """A guard run: every marginal in ``excess`` predicted (post − own) / own = excess."""
    from eree.postprocess.guard import GuardResult, Prediction

    preds = {n: Prediction(1.0 + e, 1.0, 1.0 + e, 0.01, e, 0.001, 6) for n, e in excess.items()}
    return GuardResult(consistent=[n for n in excess if n not in flagged], own=list(flagged),
                       predictions=preds)  # fmt: skip


def test_the_least_harmful_configuration_is_published():
    from eree.postprocess.guard import decide_holding, predicted_harm

    var = {"county": 4e6, "tract": 3e6, "tract_ind": 2e6, "tract_sex": 4e5, "finest": 1e6}
    runs = {
        (): _result(["tract_sex"], {"tract_sex": 0.2, "county": -0.5}),
        # holding tract × sex makes the county evidently worse by 30%: worse than 20%
        ("tract_sex",): _result(["county"], {"tract_sex": 0.0, "county": 0.3}),
    }
    d = decide_holding(lambda held: runs[tuple(held)], PAIRS, var)
    assert d.holding.held == [] and d.guard is runs[()]
    assert d.tried == {(): 0.2, ("tract_sex",): 0.3}
    assert d.holding.conflicts == {"tract_sex": ""}  # flagged, not held: holding harms more
    # a hold that harms no one is published
    runs[("tract_sex",)] = _result([], {"tract_sex": 0.0, "county": 0.05})
    d = decide_holding(lambda held: runs[tuple(held)], PAIRS, var)
    assert d.holding.held == ["tract_sex"] and d.guard is runs[("tract_sex",)]
    assert predicted_harm(runs[()]) == 0.2 and predicted_harm(runs[()], ["tract_sex"]) == 0.0


def test_nothing_flagged_runs_the_guard_once():
    from eree.postprocess.guard import decide_holding

    calls = []

    def run(held):
        calls.append(tuple(held))
        return _result([], {"a": -0.1, "b": -0.2})

    d = decide_holding(run, [("b", "a")], {"a": 1.0, "b": 1.0})
    assert calls == [()] and d.holding.held == []
