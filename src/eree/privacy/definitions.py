"""Privacy definitions: the one table of their names, and guarantees as value objects.

:data:`DEFINITIONS` is the one list of the privacy definitions a spec may name
(``[privacy] definition``): each with the family its costs compose in
(:mod:`eree.privacy.composition`) and whether its guarantee is stated at an α (the spec
must then give ``[privacy] alpha``, the ledger keeps one α per dataset, and the ER-EE count
mechanisms may run under it). The spec parser, the composition, the ledger and the
mechanisms read it.

Guarantees as frozen value objects (docs/design.md#er-ee-privacy): a definition instance is a
*guarantee*: "this output satisfies (α, ε, δ)-ER-EE privacy". It states a guarantee and
does not compose: costs compose in :mod:`eree.privacy.composition` alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from eree.errors import PrivacyParameterError

__all__ = [
    "ALPHA_DEFINITIONS",
    "DEFINITIONS",
    "DEFINITION_NAMES",
    "EPSILON_DELTA",
    "FAMILY_OF_DEFINITION",
    "GAUSSIAN",
    "NO_GUARANTEE",
    "Definition",
    "EdgeDP",
    "ErEePrivacy",
    "NodeDP",
]


@dataclass(frozen=True)
class Definition:
    """One privacy definition a spec may name.

    Attributes:
        name: the spec's ``[privacy] definition``.
        family: the privacy family its costs compose in (the ``family`` of a
            :class:`~eree.privacy.composition.Composition`: :data:`EPSILON_DELTA`,
            :data:`GAUSSIAN`, :data:`NO_GUARANTEE`).
        alpha: its guarantee is stated at an α (required in the spec; one per dataset).
    """

    name: str
    family: str
    alpha: bool = False


#: the family whose costs are (ε, δ) pairs that add at one α: ER-EE (strong and weak),
#: edge-DP, node-DP and Blowfish (Haney et al. Thm 7.3). Ledgers written before this name
#: call it "eree" (read as this).
EPSILON_DELTA = "epsilon-delta"
#: the family of μ-GEDP, whose μ compose as √Σμ² (Webb et al. Thm 5.7)
GAUSSIAN = "gedp"
#: the family of what has no formal guarantee (noise infusion)
NO_GUARANTEE = "none"

#: every privacy definition, in the order the spec reference lists them
DEFINITIONS: tuple[Definition, ...] = (
    Definition("eree", EPSILON_DELTA, alpha=True),
    Definition("eree-weak", EPSILON_DELTA, alpha=True),
    Definition("edge-dp", EPSILON_DELTA),
    Definition("node-dp", EPSILON_DELTA),
    Definition("gedp", GAUSSIAN),
    Definition("blowfish", EPSILON_DELTA, alpha=True),
    Definition("none", NO_GUARANTEE),
)
#: the names a spec may give
DEFINITION_NAMES: tuple[str, ...] = tuple(d.name for d in DEFINITIONS)
#: definition name → the family its costs compose in
FAMILY_OF_DEFINITION: dict[str, str] = {d.name: d.family for d in DEFINITIONS}
#: the definitions whose guarantee is stated at an α (edge-/node-DP hold at every α)
ALPHA_DEFINITIONS: tuple[str, ...] = tuple(d.name for d in DEFINITIONS if d.alpha)


def _check(epsilon: float, delta: float) -> None:
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise PrivacyParameterError(f"epsilon must be a finite number > 0 (got {epsilon!r})")
    if not (0 <= delta < 1):
        raise PrivacyParameterError(f"delta must lie in [0, 1) (got {delta!r})")


@dataclass(frozen=True)
class ErEePrivacy:
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

    def __str__(self) -> str:
        return f"ε={self.epsilon:.6g} edge-DP (neighbors differ in one job)"


@dataclass(frozen=True)
class NodeDP:
    """ε-differential privacy where neighbors differ in one establishment and its jobs."""

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        _check(self.epsilon, self.delta)

    def __str__(self) -> str:
        return f"ε={self.epsilon:.6g} node-DP (neighbors differ in one establishment)"
