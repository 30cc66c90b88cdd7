"""Definitions as value objects; their costs compose in eree.privacy.composition."""

import dataclasses

import pytest

from eree.errors import PrivacyParameterError
from eree.privacy.composition import Cost, composition_for
from eree.privacy.definitions import EdgeDP, ErEePrivacy, NodeDP


def test_frozen():
    g = ErEePrivacy(0.1, 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.epsilon = 2.0  # type: ignore[misc]


def test_weak_is_said():
    # composition lives in eree.privacy.composition; the definition only states the guarantee
    assert "weak" in str(ErEePrivacy(0.1, 1.0, weak=True))
    assert "weak" not in str(ErEePrivacy(0.1, 1.0))


@pytest.mark.parametrize(
    "args,match",
    [((0.0, 1.0), "alpha"), ((0.1, 0.0), "epsilon"), ((0.1, 1.0, 1.0), "delta")],
)
def test_invalid(args, match):
    with pytest.raises(PrivacyParameterError, match=match):
        ErEePrivacy(*args)


def test_dp_baselines_compose_through_composition_only():
    # a guarantee states, it does not add: costs compose in eree.privacy.composition alone
    assert composition_for("edge-dp").compose([Cost(1.0), Cost(0.5)]) == Cost(1.5, 0)
    assert composition_for("node-dp").compose([Cost(1.0), Cost(1.0)]) == Cost(2.0, 0)
    with pytest.raises(TypeError):
        EdgeDP(1.0) + NodeDP(1.0)  # type: ignore[operator]
    with pytest.raises(TypeError):
        EdgeDP(1.0) + EdgeDP(0.5)  # type: ignore[operator]
