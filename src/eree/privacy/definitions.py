"""Privacy definitions as frozen value objects (DESIGN.md §3.1).

A definition instance is a *guarantee*: "this output satisfies (α, ε, δ)-ER-EE privacy".
Guarantees compose with ``+`` (sequential composition, Haney et al. Thm 7.3): ε and δ
add, only for the same α; a weak guarantee composed with anything is weak (strong
privacy implies weak privacy for the same parameters).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from eree.errors import PrivacyParameterError


def _check(epsilon: float, delta: float) -> None:
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise PrivacyParameterError(f"epsilon must be a finite number > 0 (got {epsilon!r})")
    if not (0 <= delta < 1):
        raise PrivacyParameterError(f"delta must lie in [0, 1) (got {delta!r})")


@dataclass(frozen=True)
class EreePrivacy:
    """(α, ε, δ)-ER-EE privacy (Defs 7.2, 7.4, 9.1); ``weak`` selects weak α-neighbors.

    * strong α-neighbors (Def 7.1): D, D′ differ in the workforce of one establishment,
      E ⊆ E′, |E| ≤ |E′| ≤ max((1+α)|E|, |E|+1);
    * weak α-neighbors (Def 7.3): every property φ of worker records satisfies
      φ(E) ≤ φ(E′) ≤ max((1+α)φ(E), φ(E)+1).
    δ = 0 is the pure definition; δ > 0 the approximate one (Def 9.1).
    """

    alpha: float
    epsilon: float
    delta: float = 0.0
    weak: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.alpha) and self.alpha > 0):
            raise PrivacyParameterError(f"alpha must be a finite number > 0 (got {self.alpha!r})")
        _check(self.epsilon, self.delta)

    def __str__(self) -> str:
        kind = "weak " if self.weak else ""
        params = f"α={self.alpha:g}, ε={self.epsilon:.6g}"
        if self.delta > 0:
            params += f", δ={self.delta:.6g}"
        return f"{kind}({params})-ER-EE privacy"


@dataclass(frozen=True)
class EdgeDP:
    """ε-differential privacy where neighbors differ in one job (the edge-DP baseline)."""

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        _check(self.epsilon, self.delta)

    def __add__(self, other: EdgeDP) -> EdgeDP:
        if not isinstance(other, EdgeDP):
            return NotImplemented
        return EdgeDP(self.epsilon + other.epsilon, self.delta + other.delta)

    def __str__(self) -> str:
        return f"ε={self.epsilon:.6g} edge-DP (neighbors differ in one job)"


@dataclass(frozen=True)
class NodeDP:
    """ε-differential privacy where neighbors differ in one establishment and its jobs."""

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        _check(self.epsilon, self.delta)

    def __add__(self, other: NodeDP) -> NodeDP:
        if not isinstance(other, NodeDP):
            return NotImplemented
        return NodeDP(self.epsilon + other.epsilon, self.delta + other.delta)

    def __str__(self) -> str:
        return f"ε={self.epsilon:.6g} node-DP (neighbors differ in one establishment)"
