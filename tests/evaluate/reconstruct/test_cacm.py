"""Known answer: the CACM toy block (Garfinkel, Abowd & Martindale 2019) rebuilt as published."""

from __future__ import annotations

import pytest

from eree.evaluate.reconstruct.cacm import (
    CACM_SOLUTION,
    CACM_STATISTICS,
    rebuild_block,
    statistics_of,
)


def test_the_statistics_are_those_of_the_published_solution() -> None:
    """The recalled Table 1 is what Table 2's seven persons give (count, median, mean)."""
    got = statistics_of(CACM_SOLUTION, CACM_STATISTICS)
    for g, s in zip(CACM_STATISTICS, got, strict=True):
        if g.count is None:
            assert s is None
            continue
        assert s == (g.count, g.median, g.mean), g.label


def test_the_block_is_rebuilt_uniquely_as_published() -> None:
    persons, certain, total = rebuild_block()
    assert persons == sorted(CACM_SOLUTION)
    assert certain == total == 7  # every solution of the program is this one


@pytest.mark.slow
def test_without_the_married_adults_rule_one_person_stays_uncertain() -> None:
    """Weakened attacker: without "married ⇒ adult", the 8-year-old may be married."""
    _, certain, total = rebuild_block(married_adults=False)
    assert total == 7 and certain == 6
