"""Composition objects against the theorems (Haney et al. Thm 7.3; Webb et al. Thm 5.7)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eree.errors import BudgetExceededError, PrivacyParameterError
from eree.privacy.composition import (
    Cost,
    EpsilonDeltaComposition,
    GaussianComposition,
    NoGuarantee,
    composition_for,
    float_down,
    float_up,
)

pos = st.floats(1e-6, 50, allow_nan=False, allow_infinity=False)


@given(st.lists(st.tuples(pos, st.floats(0, 1e-3)), min_size=1, max_size=30))
def test_epsilon_and_delta_add_exactly(costs):
    total = EpsilonDeltaComposition(0.1).compose([Cost(e, d) for e, d in costs])
    assert total.exact_epsilon == sum(Fraction(e) for e, _ in costs)
    assert total.exact_delta == sum(Fraction(d) for _, d in costs)
    # the float shown never understates the loss, and is within one ulp of it
    assert Fraction(total.epsilon) >= total.exact_epsilon
    assert total.epsilon <= math.nextafter(float(total.exact_epsilon), math.inf)


@given(st.lists(pos, min_size=1, max_size=30))
def test_mu_is_root_sum_of_squares(mus):
    total = GaussianComposition().compose([Cost(mu=m) for m in mus])
    assert total.exact_mu_squared == sum(Fraction(m) ** 2 for m in mus)
    assert Fraction(total.mu) ** 2 >= total.exact_mu_squared  # rounded up
    assert Fraction(math.nextafter(total.mu, 0)) ** 2 < total.exact_mu_squared
    assert total.mu == pytest.approx(math.sqrt(sum(m * m for m in mus)), rel=1e-12)


def test_hand_computed_totals():
    assert GaussianComposition().compose([Cost(mu=3), Cost(mu=4)]).mu == 5.0
    e = EpsilonDeltaComposition(0.1).compose([Cost(0.1, 0), Cost(0.2, 0)])
    assert e.exact_epsilon == Fraction(0.1) + Fraction(0.2)  # not the float sum 0.30000000000000004
    assert e.epsilon >= 0.3
    assert EpsilonDeltaComposition().repeat(Cost(0.5, 1e-6), 6) == Cost(3.0, 6 * Fraction(1e-6))


def test_families_do_not_mix():
    with pytest.raises(PrivacyParameterError):
        EpsilonDeltaComposition().compose([Cost(mu=1.0)])
    with pytest.raises(PrivacyParameterError):
        GaussianComposition().compose([Cost(1.0, 0.0)])
    assert NoGuarantee().compose([Cost()]) == Cost()


@pytest.mark.parametrize(
    ("definition", "family"),
    [("eree", "epsilon-delta"), ("eree-weak", "epsilon-delta"), ("edge-dp", "epsilon-delta"),
     ("node-dp", "epsilon-delta"), ("blowfish", "epsilon-delta"), ("gedp", "gedp"),
     ("none", "none")],
)  # fmt: skip
def test_one_family_per_definition(definition, family):
    assert composition_for(definition, 0.1).family == family


def test_budget_checks_every_key_and_refuses_foreign_keys():
    eree = EpsilonDeltaComposition(0.1)
    eree.check("d", Cost(1.0, 0.0), Cost(1.0, 1e-6), {"epsilon": 2.0, "delta": 1e-5})
    with pytest.raises(BudgetExceededError, match="epsilon"):
        eree.check("d", Cost(1.5, 0.0), Cost(1.0, 0.0), {"epsilon": 2.0})
    with pytest.raises(BudgetExceededError, match="delta"):
        eree.check("d", Cost(0.1, 1e-5), Cost(0.1, 1e-5), {"epsilon": 2.0, "delta": 1e-5})
    with pytest.raises(BudgetExceededError, match="alpha"):  # α = 0.1 hides less than 0.2
        eree.check("d", Cost(0.1, 0), Cost(0.1, 0), {"alpha": 0.2})
    eree.check("d", Cost(0.1, 0), Cost(0.1, 0), {"alpha": 0.05})
    with pytest.raises(PrivacyParameterError, match="'mu'"):
        eree.check("d", Cost(0.1, 0), Cost(0.1, 0), {"epsilon": 2.0, "mu": 1.0})
    gedp = GaussianComposition()
    gedp.check("d", Cost(mu=3.0), Cost(mu=4.0), {"mu": 5.0})  # exactly at the budget
    with pytest.raises(BudgetExceededError, match="mu"):
        gedp.check("d", Cost(mu=3.0), Cost(mu=4.0000001), {"mu": 5.0})
    with pytest.raises(PrivacyParameterError, match="'epsilon'"):
        gedp.check("d", Cost(mu=1.0), Cost(mu=1.0), {"epsilon": 1.0, "mu": 5.0})


@given(st.fractions(min_value=Fraction(1, 10**9), max_value=10**6))
def test_float_rounding_directions(x):
    assert Fraction(float_up(x)) >= x
    assert Fraction(float_down(x)) <= x


def test_cost_is_immutable_and_exact_roundtrip():
    c = Cost(0.1, 1e-7, None)
    with pytest.raises(AttributeError):
        c.epsilon = 2.0  # type: ignore[misc]
    assert Cost.from_exact_dict(c.exact_dict()) == c
    assert Cost.from_exact_dict(Cost(mu=0.3).exact_dict()) == Cost(mu=0.3)
