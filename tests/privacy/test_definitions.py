"""Definitions as value objects and their composition rules."""

import dataclasses

import pytest

from eree.errors import PrivacyParameterError
from eree.privacy.definitions import EdgeDP, EreePrivacy, NodeDP


def test_frozen():
    g = EreePrivacy(0.1, 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.epsilon = 2.0  # type: ignore[misc]


def test_sequential_composition_same_alpha():
    g = EreePrivacy(0.1, 1.0, 0.01) + EreePrivacy(0.1, 0.5)
    assert g == EreePrivacy(0.1, 1.5, 0.01)
    with pytest.raises(PrivacyParameterError, match="same alpha"):
        EreePrivacy(0.1, 1.0) + EreePrivacy(0.2, 1.0)


def test_weak_is_contagious_and_times_d():
    g = EreePrivacy(0.1, 1.0) + EreePrivacy(0.1, 1.0, weak=True)
    assert g.weak and "weak" in str(g)
    assert EreePrivacy(0.1, 0.5, 0.001, weak=True).times(6) == EreePrivacy(0.1, 3.0, 0.006, True)


@pytest.mark.parametrize(
    "args,match",
    [((0.0, 1.0), "alpha"), ((0.1, 0.0), "epsilon"), ((0.1, 1.0, 1.0), "delta")],
)
def test_invalid(args, match):
    with pytest.raises(PrivacyParameterError, match=match):
        EreePrivacy(*args)


def test_dp_baselines_compose_only_with_themselves():
    assert EdgeDP(1.0) + EdgeDP(0.5) == EdgeDP(1.5)
    assert NodeDP(1.0) + NodeDP(1.0) == NodeDP(2.0)
    with pytest.raises(TypeError):
        EdgeDP(1.0) + NodeDP(1.0)  # type: ignore[operator]
