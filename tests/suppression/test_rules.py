"""Primary suppression: threshold, dominance and p% rules, protection levels."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from eree.suppression import (
    PrimaryRules,
    marginals_layout,
    primary_suppression,
    qcew_tables,
    tabulate,
)
from tests.suppression.helpers import (
    E_RULES,
    B,
    cell_of,
)


def test_appendix_e_primary_is_county_x_and_sector_52(e_tables) -> None:
    prim = primary_suppression(e_tables, E_RULES)
    expected = {cell_of(e_tables, county="X"), cell_of(e_tables, sector="52")}
    assert set(np.flatnonzero(prim.primary)) == expected
    assert prim.protection["wage"][cell_of(e_tables, county="X")] == pytest.approx(0.1 * B)


def _groups(values: dict[str, list[float]]) -> pl.DataFrame:
    rows = [(g, v) for g, vs in values.items() for v in vs]
    return pl.DataFrame({"g": [r[0] for r in rows], "x": [r[1] for r in rows]})


def _rules_on(values: dict[str, list[float]], rules: PrimaryRules):
    t = tabulate(_groups(values), marginals_layout(["g"]), ["x"], top=3)
    prim = primary_suppression(t, rules)
    by = dict(zip(t.cells["g"].to_list(), range(t.n_cells), strict=True))
    return t, prim, by


def test_threshold_rule() -> None:
    vals = {"one": [5.0], "two": [5.0, 5.0], "three": [5.0, 5.0, 5.0]}
    only = {"dominance_k": None, "p_percent": None}
    _, p, by = _rules_on(vals, PrimaryRules(threshold=3, **only))
    assert p.primary[by["one"]] and p.primary[by["two"]] and not p.primary[by["three"]]
    _, p, by = _rules_on(vals, PrimaryRules(threshold=2, **only))
    assert p.primary[by["one"]] and not p.primary[by["two"]]
    # protection of threshold cells: protection_percent of the largest contribution
    _, p, by = _rules_on(vals, PrimaryRules(threshold=3, protection_percent=20, **only))
    assert p.protection["x"][by["two"]] == pytest.approx(1.0)


def test_dominance_rule_and_protection() -> None:
    only = {"threshold": None, "p_percent": None, "min_protection": 0.0}
    vals = {"dominated": [90.0, 5.0, 5.0], "balanced": [70.0, 20.0, 10.0]}
    _, p, by = _rules_on(vals, PrimaryRules(dominance_k=80, **only))
    assert p.dominance[by["dominated"]] and not p.dominance[by["balanced"]]
    # the cell total must grow to 90/0.8 = 112.5 for the rule to pass
    assert p.protection["x"][by["dominated"]] == pytest.approx(12.5)
    assert p.protection["x"][by["balanced"]] == 0.0
    # (2, 85): the two largest exceed 85 %
    _, p, by = _rules_on(vals, PrimaryRules(dominance_n=2, dominance_k=85, **only))
    assert p.primary[by["dominated"]] and p.primary[by["balanced"]]
    assert p.protection["x"][by["balanced"]] == pytest.approx(90 / 0.85 - 100)


def test_p_percent_rule_and_protection() -> None:
    only = {"threshold": None, "dominance_k": None, "min_protection": 0.0}
    vals = {"close": [50.0, 45.0, 2.0], "safe": [50.0, 30.0, 20.0]}
    _, p, by = _rules_on(vals, PrimaryRules(p_percent=10, **only))
    assert p.p_rule[by["close"]] and not p.p_rule[by["safe"]]
    # remainder 2 < 10 % of 50: the total must move by 5 − 2 = 3
    assert p.protection["x"][by["close"]] == pytest.approx(3.0)
    _, p, by = _rules_on(vals, PrimaryRules(p_percent=50, **only))
    assert p.p_rule[by["safe"]]  # 20 < 25


def test_min_protection_lower_cap_and_zero_cells() -> None:
    vals = {"zero": [0.0], "small": [0.4]}
    t, p, by = _rules_on(vals, PrimaryRules())
    assert p.primary[by["zero"]] and p.primary[by["small"]]  # threshold
    assert p.protection["x"][by["zero"]] == 1.0  # min_protection
    lo = p.lower_protection("x", t.values("x"))
    assert lo[by["zero"]] == 0.0 and lo[by["small"]] == pytest.approx(0.4)


def test_exempt_cells_are_never_suppressed() -> None:
    df = pl.DataFrame(
        {
            "cnty": ["1", "1", "3"],
            "own": ["1", "5", "5"],
            "naics": ["921110", "236115", "236115"],
            "m1emp": [10.0, 3.0, 4.0],
        }
    )
    t = qcew_tables(df, ["m1emp"])
    p = primary_suppression(t, PrimaryRules(exempt={"own": ("1",)}))
    own = t.cells["own"].to_numpy()
    assert not p.primary[own == "1"].any() and p.exempt[own == "1"].all()
    assert p.primary[own == "5"].any()


def test_rules_reject_bad_parameters() -> None:
    with pytest.raises(ValueError):
        PrimaryRules(dominance_k=120)
    with pytest.raises(ValueError):
        PrimaryRules(threshold=0)
    t = tabulate(_groups({"a": [1.0]}), marginals_layout(["g"]), ["x"], top=1)
    with pytest.raises(ValueError):
        primary_suppression(t, PrimaryRules())  # the p% rule needs x2
