r"""Privacy costs and their composition, in exact arithmetic.

See docs/design.md#core-objects, #er-ee-privacy, #gaussian-establishment-dp, #budget-ledger.

One object per privacy family adds costs; no other code in eree adds privacy costs.

* :class:`Cost` — a privacy cost held exactly: ε and δ as :class:`~fractions.Fraction`
  (every float is a dyadic rational, so the conversion is exact), μ as the exact μ².
  Reading a cost as a float (for display, the manifest, a comparison message) rounds
  **up**, toward more privacy loss, never down.
* :class:`EpsilonDeltaComposition` — the ER-EE family at one α: ε and δ add (Haney et
  al. Thm 7.3). It covers strong and weak ER-EE, edge-DP, node-DP and the Blowfish policy
  of the workshop version: node-DP ⇒ strong ER-EE ⇒ weak ER-EE ⇒ edge-DP on the same data,
  so the sum over releases under any of them is a valid bound for the weakest definition
  used (docs/design.md#budget-ledger).
* :class:`GaussianComposition` — μ-GEDP (Webb et al. Thm 5.7): μ_total = √(Σ μ²).
* :class:`NoGuarantee` — input noise infusion: no formal guarantee and no cost to add.

:func:`composition_for` maps a definition name to its family's composition object (each
definition's family is in :data:`eree.privacy.definitions.DEFINITIONS`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from typing_extensions import override

from eree.errors import BudgetExceededError, LedgerError, PrivacyParameterError
from eree.privacy.definitions import (
    EPSILON_DELTA,
    FAMILY_OF_DEFINITION,
    GAUSSIAN,
    NO_GUARANTEE,
)

Exact = Fraction | int | float

__all__ = [
    "Composition",
    "Cost",
    "EpsilonDeltaComposition",
    "GaussianComposition",
    "NoGuarantee",
    "check_chargeable",
    "composition_for",
    "float_down",
    "float_up",
]


def _exact(x: Exact | None, what: str) -> Fraction | None:
    if x is None:
        return None
    if isinstance(x, bool):
        raise PrivacyParameterError(f"{what} must be a number (got a boolean)")
    if not isinstance(x, Fraction | int):
        x = float(x)  # numpy scalars and other reals: exact through the float
        if not math.isfinite(x):
            raise PrivacyParameterError(f"{what} must be finite (got {x!r})")
    f = Fraction(x)
    if f < 0:
        raise PrivacyParameterError(f"{what} must be ≥ 0 (got {float(f)!r})")
    return f


def float_up(x: Fraction) -> float:
    """The smallest float ≥ ``x`` (a privacy loss shown as a float is never understated)."""
    f = float(x)
    if Fraction(f) < x:
        f = math.nextafter(f, math.inf)
    return f


def float_down(x: Fraction) -> float:
    """The largest float ≤ ``x`` (a per-cell ε a mechanism runs with is never overstated)."""
    f = float(x)
    if Fraction(f) > x:
        f = math.nextafter(f, -math.inf)
    return f


def _sqrt_down(x: Fraction) -> float:
    """The largest float ≤ √x, exactly (a remaining budget shown as a float is never overstated)."""
    if x <= 0:
        return 0.0
    f = math.sqrt(float(x))
    while f > 0 and Fraction(f) ** 2 > x:
        f = math.nextafter(f, 0.0)
    while Fraction(math.nextafter(f, math.inf)) ** 2 <= x:
        f = math.nextafter(f, math.inf)
    return f


def _sqrt_up(x: Fraction) -> float:
    """The smallest float ≥ √x, exactly (integer square roots on a scaled numerator)."""
    if x == 0:
        return 0.0
    f = math.sqrt(float(x))
    # fix the float guess so that f ≥ √x exactly and nextafter(f, 0) < √x
    while Fraction(f) ** 2 < x:
        f = math.nextafter(f, math.inf)
    while f > 0 and Fraction(math.nextafter(f, 0.0)) ** 2 >= x:
        f = math.nextafter(f, 0.0)
    return f


class Cost:
    """A privacy cost, held exactly; fields a definition does not use are None.

    Args:
        epsilon, delta: the ε and δ of the ER-EE/DP family (floats are converted exactly).
        mu: μ of μ-GEDP; or ``mu_squared`` to give μ² exactly (as composition does).

    The float views :attr:`epsilon`, :attr:`delta`, :attr:`mu` round up. Equality and
    hashing use the exact values.
    """

    __slots__ = ("_delta", "_epsilon", "_mu2")
    _epsilon: Fraction | None
    _delta: Fraction | None
    _mu2: Fraction | None

    def __init__(
        self,
        epsilon: Exact | None = None,
        delta: Exact | None = None,
        mu: Exact | None = None,
        *,
        mu_squared: Exact | None = None,
    ) -> None:
        if mu is not None and mu_squared is not None:
            raise PrivacyParameterError("give mu or mu_squared, not both")
        m = _exact(mu, "mu")
        object.__setattr__(self, "_epsilon", _exact(epsilon, "epsilon"))
        object.__setattr__(self, "_delta", _exact(delta, "delta"))
        object.__setattr__(
            self, "_mu2", m * m if m is not None else _exact(mu_squared, "mu_squared")
        )

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Cost is immutable")

    # exact views
    @property
    def exact_epsilon(self) -> Fraction | None:
        """ε as an exact fraction."""
        return self._epsilon

    @property
    def exact_delta(self) -> Fraction | None:
        """δ as an exact fraction."""
        return self._delta

    @property
    def exact_mu_squared(self) -> Fraction | None:
        """μ² as an exact fraction."""
        return self._mu2

    # float views, rounded toward more privacy loss
    @property
    def epsilon(self) -> float | None:
        """ε as a float, rounded up."""
        return None if self._epsilon is None else float_up(self._epsilon)

    @property
    def delta(self) -> float | None:
        """δ as a float, rounded up."""
        return None if self._delta is None else float_up(self._delta)

    @property
    def mu(self) -> float | None:
        """μ as a float, rounded up."""
        return None if self._mu2 is None else _sqrt_up(self._mu2)

    def to_dict(self) -> dict[str, float | None]:
        """A JSON-ready dict (floats rounded toward more privacy loss)."""
        return {"epsilon": self.epsilon, "delta": self.delta, "mu": self.mu}

    def exact_dict(self) -> dict[str, str | None]:
        """Exact values as strings ("p/q"), for the ledger and the manifest."""

        def s(x: Fraction | None) -> str | None:
            return None if x is None else str(x)

        return {"epsilon": s(self._epsilon), "delta": s(self._delta), "mu_squared": s(self._mu2)}

    @classmethod
    def from_exact_dict(cls, d: Mapping[str, Any]) -> Cost:
        """The cost written by :meth:`exact_dict`."""

        def f(k: str) -> Fraction | None:
            v = d.get(k)
            return None if v is None else Fraction(v)

        return cls(f("epsilon"), f("delta"), mu_squared=f("mu_squared"))

    def _key(self) -> tuple[Fraction | None, Fraction | None, Fraction | None]:
        return (self._epsilon, self._delta, self._mu2)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cost) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        parts = [f"{k}={v!r}" for k, v in self.to_dict().items() if v is not None]
        return f"Cost({', '.join(parts)})"


@dataclass(frozen=True)
class Composition(ABC):
    """How one privacy family adds costs, and which budget keys apply to it."""

    family: ClassVar[str]
    #: the budget keys this family checks; any other key is refused
    budget_keys: ClassVar[tuple[str, ...]]

    @abstractmethod
    def compose(self, costs: Iterable[Cost]) -> Cost:
        """The cost of running every measurement in ``costs`` on the same data."""

    def repeat(self, cost: Cost, k: int) -> Cost:
        """``k`` sequential runs of a mechanism of cost ``cost`` (e.g. d worker-attribute cells)."""
        if k < 1:
            raise PrivacyParameterError(f"a multiplicity must be ≥ 1 (got {k})")
        return self.compose([cost] * k)

    def zero(self) -> Cost:
        """The cost of releasing nothing."""
        return self.compose([])

    def check_budget_keys(self, budget: Mapping[str, Any], where: str) -> None:
        """Refuse budget keys this family does not use (a key that is never checked is a trap)."""
        bad = [k for k in budget if k not in self.budget_keys]
        if bad:
            use = ", ".join(self.budget_keys) or "none"
            raise PrivacyParameterError(
                f"{where}: budget key(s) {', '.join(map(repr, bad))} do not apply to the "
                f"{self.family} family (it uses: {use})"
            )

    @abstractmethod
    def exceeded(self, total: Cost, budget: Mapping[str, float]) -> list[str]:
        """The budget keys ``total`` exceeds, each as 'key: total > limit' (empty when it fits)."""

    def remaining(self, spent: Cost, budget: Mapping[str, float]) -> dict[str, float]:
        """Per budget key, the largest cost one more release could have, rounded down.

        Empty for a family without budget keys.
        """
        return {}

    def check(self, dataset: str, spent: Cost, cost: Cost, budget: Mapping[str, float]) -> Cost:
        """Refuse ``cost`` if ``spent + cost`` passes ``budget``; return ``spent + cost``.

        Raises:
            PrivacyParameterError: a budget key the family does not use.
            BudgetExceededError: a key is exceeded (the message names each one).
        """
        self.check_budget_keys(budget, f"budget of {dataset!r}")
        total = self.compose([spent, cost])
        over = self.exceeded(total, budget)
        if over:
            raise BudgetExceededError(
                f"release refused: it would exceed the lifetime budget of {dataset!r}: "
                + "; ".join(over)
            )
        return total


def _over(name: str, value: Fraction | None, limit: float | None) -> str | None:
    if limit is None or value is None:
        return None
    if value > Fraction(limit):
        return f"{name}: {float_up(value):.6g} > {limit:g}"
    return None


@dataclass(frozen=True)
class EpsilonDeltaComposition(Composition):
    """Sequential composition of (α, ε, δ) costs: ε and δ add (Haney et al. Thm 7.3).

    Attributes:
        alpha: the family's one α (None for edge-/node-DP alone). Costs at different α do
            not compose; the ledger keeps one α per dataset.
    """

    alpha: float | None = None
    family: ClassVar[str] = EPSILON_DELTA
    budget_keys: ClassVar[tuple[str, ...]] = ("epsilon", "delta", "alpha")

    @override
    def compose(self, costs: Iterable[Cost]) -> Cost:
        eps = Fraction(0)
        dl = Fraction(0)
        for c in costs:
            if c.exact_mu_squared is not None:
                raise PrivacyParameterError("a μ-GEDP cost cannot compose with ε-δ costs")
            eps += c.exact_epsilon or 0
            dl += c.exact_delta or 0
        return Cost(epsilon=eps, delta=dl)

    @override
    def exceeded(self, total: Cost, budget: Mapping[str, float]) -> list[str]:
        out = [
            _over("epsilon", total.exact_epsilon, budget.get("epsilon")),
            _over("delta", total.exact_delta, budget.get("delta")),
        ]
        a = budget.get("alpha")
        if a is not None and self.alpha is not None and self.alpha < a:
            # (α, ε)-ER-EE hides size changes up to a factor 1+α: a smaller α hides less
            out.append(f"alpha: {self.alpha:g} < {a:g} (a smaller alpha protects smaller changes)")
        return [o for o in out if o]

    @override
    def remaining(self, spent: Cost, budget: Mapping[str, float]) -> dict[str, float]:
        """ε and δ add: the budget minus what was spent, rounded down, never below 0."""
        out = {}
        for key, used in (("epsilon", spent.exact_epsilon), ("delta", spent.exact_delta)):
            if budget.get(key) is not None:
                out[key] = float_down(max(Fraction(budget[key]) - (used or 0), Fraction(0)))
        return out


@dataclass(frozen=True)
class GaussianComposition(Composition):
    """μ-GEDP composition (Webb et al. Thm 5.7): μ_total = √(Σ μ²), exact in μ²."""

    family: ClassVar[str] = GAUSSIAN
    budget_keys: ClassVar[tuple[str, ...]] = ("mu",)

    @override
    def compose(self, costs: Iterable[Cost]) -> Cost:
        m2 = Fraction(0)
        for c in costs:
            if c.exact_epsilon is not None or c.exact_delta is not None:
                raise PrivacyParameterError("an ε-δ cost cannot compose with μ-GEDP costs")
            m2 += c.exact_mu_squared or 0
        return Cost(mu_squared=m2)

    @override
    def exceeded(self, total: Cost, budget: Mapping[str, float]) -> list[str]:
        limit = budget.get("mu")
        if limit is None or total.exact_mu_squared is None:
            return []
        if total.exact_mu_squared > Fraction(limit) ** 2:
            return [f"mu: {total.mu:.6g} > {limit:g}"]
        return []

    @override
    def remaining(self, spent: Cost, budget: Mapping[str, float]) -> dict[str, float]:
        """μ² adds: one more release may have μ = √(budget² − spent μ²), rounded down."""
        limit = budget.get("mu")
        if limit is None:
            return {}
        return {"mu": _sqrt_down(Fraction(limit) ** 2 - (spent.exact_mu_squared or 0))}


@dataclass(frozen=True)
class NoGuarantee(Composition):
    """Input noise infusion: no formal guarantee, nothing to add, no budget applies."""

    family: ClassVar[str] = NO_GUARANTEE
    budget_keys: ClassVar[tuple[str, ...]] = ()

    @override
    def compose(self, costs: Iterable[Cost]) -> Cost:
        for _ in costs:
            pass
        return Cost()

    @override
    def exceeded(self, total: Cost, budget: Mapping[str, float]) -> list[str]:
        return []


def composition_for(definition: str, alpha: float | None = None) -> Composition:
    """The composition object of ``definition``'s family."""
    fam = FAMILY_OF_DEFINITION.get(definition)
    if fam == EPSILON_DELTA:
        return EpsilonDeltaComposition(alpha)
    if fam == GAUSSIAN:
        return GaussianComposition()
    if fam == NO_GUARANTEE:
        return NoGuarantee()
    raise PrivacyParameterError(f"unknown privacy definition {definition!r}")


def check_chargeable(definition: str) -> None:
    """Refuse a definition a budget ledger cannot account for (no formal guarantee).

    Known from the spec alone, so a release checks it before any data are read.

    Raises:
        LedgerError: ``definition`` has no family or its family no budget keys (``"none"``).
    """
    if FAMILY_OF_DEFINITION.get(definition) is None or not composition_for(definition).budget_keys:
        raise LedgerError(
            f"definition {definition!r} carries no formal guarantee the ledger can "
            "account for; release it without --ledger"
        )
