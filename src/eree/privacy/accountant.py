"""Privacy accounting from the plan alone.

See docs/design.md#er-ee-privacy, #gaussian-establishment-dp.

The accountant never sees data and derives no scale of its own: each query is a list of
mechanism objects (:mod:`eree.mechanisms`), each of which knows its cost
(:meth:`~eree.mechanisms.base.Mechanism.cost`) and its public parameters. The accountant
turns them into :class:`QueryCharge` entries and adds them up with the family's
composition object (:mod:`eree.privacy.composition`) into a :class:`PrivacyReport`:

* ER-EE, edge-DP, node-DP, Blowfish: ε and δ add (Haney et al. Thm 7.3; for ER-EE only for
  the same α). The mechanism objects already charge a marginal with d worker-attribute
  combinations d·ε_cell (§8) and a marginal over establishment attributes ε (Thm 7.4).
* μ-GEDP (Webb et al. Thm 5.7): μ_total = √(Σ μ²) over every (query, attribute)
  measurement, the identity query included.

This module does not import :mod:`eree.mechanisms` (privacy is the lower layer): it reads
the mechanisms through the small :class:`Costed` protocol.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from eree.privacy.composition import Composition, Cost, composition_for
from eree.privacy.definitions import ErEePrivacy


class Costed(Protocol):
    """What the accountant reads of a mechanism object."""

    @property
    def name(self) -> str:
        """The mechanism's registry name."""
        ...

    @property
    def multiplicity(self) -> int:
        """How many per-cell costs compose into the query's cost."""
        ...

    def composition(self) -> Composition:
        """The composition object of the mechanism's family."""
        ...

    def cost(self) -> Cost:
        """The query's whole privacy cost, without data."""
        ...

    def per_cell_cost(self) -> Cost:
        """The cost each cell's noise is drawn for."""
        ...

    def public_params(self) -> dict[str, Any]:
        """What may be published about the mechanism."""
        ...

    def guarantee(self) -> str:
        """The guarantee in words."""
        ...


@dataclass(frozen=True)
class QueryCharge:
    """What one query spends.

    Attributes:
        query: query name.
        mechanism: mechanism name.
        guarantee: the definition each cell (and the whole query) satisfies, in words.
        multiplicity: d, the number of worker-attribute combinations whose cells are
            charged sequentially (1 when the query has no worker attributes).
        per_cell: the parameters each cell's mechanism runs with.
        total: the whole query's cost.
        params: other public parameters of the mechanism (α, λ, δ_min, θ, σ, ...).
    """

    query: str
    mechanism: str
    guarantee: str
    multiplicity: int
    per_cell: Cost
    total: Cost
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (floats rounded toward more privacy loss)."""
        return {
            "query": self.query,
            "mechanism": self.mechanism,
            "guarantee": self.guarantee,
            "multiplicity": self.multiplicity,
            "per_cell": self.per_cell.to_dict(),
            "cost": self.total.to_dict(),
            "params": self.params,
        }


@dataclass(frozen=True)
class PrivacyReport:
    """The accountant's answer for a whole plan."""

    definition: str
    alpha: float | None
    charges: tuple[QueryCharge, ...]
    total: Cost
    notes: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def charge(self, query: str) -> QueryCharge:
        """The charge of one query."""
        for c in self.charges:
            if c.query == query:
                return c
        raise KeyError(query)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (floats rounded toward more privacy loss)."""
        d: dict[str, Any] = {
            "definition": self.definition,
            "alpha": self.alpha,
            "total": self.total.to_dict(),
            "queries": [c.to_dict() for c in self.charges],
            "notes": list(self.notes),
        }
        d.update(self.extra)
        return d


#: public parameters reported per confidential attribute for a GEDP query
_PER_ATTRIBUTE = ("mu", "sigma", "sensitivity", "grid", "psi_grid")


def charge_query(
    name: str, mechanisms: Sequence[Costed], attributes: Sequence[str] | None = None
) -> QueryCharge:
    """The charge of one query from its mechanism objects (one per published statistic).

    A count query has one mechanism; a GEDP query one per confidential attribute
    (``attributes`` names them), whose costs compose by the family's rule.
    """
    first = mechanisms[0]
    comp = first.composition()
    if attributes is None:
        return QueryCharge(
            name, first.name, first.guarantee(), first.multiplicity,
            first.per_cell_cost(), first.cost(), first.public_params(),
        )  # fmt: skip
    total = comp.compose([m.cost() for m in mechanisms])
    params: dict[str, Any] = {}
    for a, m in zip(attributes, mechanisms, strict=True):
        for k, v in m.public_params().items():
            if k in _PER_ATTRIBUTE:
                params.setdefault(k, {})[a] = v
            else:
                params.setdefault(k, v)
    per_attr = ", ".join(
        f"{a}: μ={m.per_cell_cost().mu:g}" for a, m in zip(attributes, mechanisms, strict=True)
    )
    what = type(first).description  # type: ignore[attr-defined]
    guarantee = f"{total.mu:.4g}-GEDP (Def 5.6) by the {what}; per attribute {per_attr}"
    return QueryCharge(name, first.name, guarantee, 1, total, total, params)


def account(
    definition: str,
    alpha: float | None,
    charges: Sequence[QueryCharge],
    *,
    weak: bool = False,
    notes: Sequence[str] = (),
    extra: Mapping[str, Any] | None = None,
) -> PrivacyReport:
    """Compose the charges of a plan with its family's composition object.

    Args:
        definition: the release's definition; alpha: its α (ER-EE family).
        charges: one per query (:func:`charge_query`).
        weak: some query has worker attributes (the release is weak ER-EE only).
        notes: definition-specific remarks to add.
        extra: definition-specific fields of the report (GEDP: ψ, distances).
    """
    comp = composition_for(definition, alpha)
    total = comp.compose([c.total for c in charges])
    out_notes = list(notes)
    ext: dict[str, Any] = dict(extra or {})
    if definition in ("eree", "eree-weak") and alpha is not None and total.epsilon:
        ext["guarantee"] = str(ErEePrivacy(alpha, total.epsilon, total.delta or 0.0, weak))
    if definition == "eree-weak" and not weak:
        out_notes.append(
            "every query is over establishment attributes only, so the release also "
            "satisfies strong ER-EE privacy at the same total"
        )
    if definition in ("eree", "eree-weak"):
        out_notes.append(
            f"sequential composition (Thm 7.3) for the single α={alpha:g}: ε and δ add"
        )
    return PrivacyReport(definition, alpha, tuple(charges), total, tuple(out_notes), ext)
