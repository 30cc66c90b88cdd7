"""Privacy accounting from the plan alone (DESIGN.md §3.1, §3.2).

The accountant never sees data. It turns each query's requested budget into a
:class:`QueryCharge` (what guarantee the query's cells get and what the whole query
costs) and composes the charges into a :class:`PrivacyReport`:

* ER-EE, edge-DP, node-DP: sequential composition, ε and δ add (Haney et al. Thm 7.3;
  for ER-EE only for the same α). Within one marginal, cells over establishment
  attributes only partition the establishments, so they compose in parallel (Thm 7.4)
  and the marginal costs ε. A marginal with worker attributes, under weak ER-EE, costs
  d·ε_cell where d is the number of worker-attribute combinations (§8): the spec's
  ``epsilon`` is that whole cost and each cell gets ε/d (δ likewise). Strong ER-EE for a
  worker-attribute marginal is refused (Thm 7.5 does not give it for these mechanisms).
* Blowfish (the workshop version's policy graph, ``definition = "blowfish"``): charged by
  :func:`eree.privacy.blowfish.blowfish_charge` (d·ε_cell as for weak ER-EE).
* μ-GEDP (Webb et al. Thm 5.7): μ_total = sqrt(Σ μ²) over every (query, attribute)
  measurement.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eree.errors import PrivacyParameterError
from eree.privacy.composition import Cost, EpsilonDeltaComposition, GaussianComposition
from eree.privacy.definitions import EdgeDP, EreePrivacy, NodeDP
from eree.privacy.eree_conditions import (
    check_log_laplace,
    check_smooth_laplace,
    smooth_gamma_epsilons,
)


def sequential(costs: list[Cost]) -> Cost:
    """Sequential composition of ε-δ costs (Thm 7.3), by :class:`EpsilonDeltaComposition`."""
    return EpsilonDeltaComposition().compose(costs)


def gaussian_composition(mus: list[float]) -> Cost:
    """μ-GEDP composition (Thm 5.7), by :class:`GaussianComposition`."""
    return GaussianComposition().compose([Cost(mu=m) for m in mus])


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
        for c in self.charges:
            if c.query == query:
                return c
        raise KeyError(query)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "definition": self.definition,
            "alpha": self.alpha,
            "total": self.total.to_dict(),
            "queries": [c.to_dict() for c in self.charges],
            "notes": list(self.notes),
        }
        d.update(self.extra)
        return d


@dataclass(frozen=True)
class CountQueryRequest:
    """A count marginal as the accountant sees it (no data, only the public plan).

    Attributes:
        name: query name.
        mechanism: one of log_laplace, smooth_gamma, smooth_laplace, laplace,
            truncated_laplace, noise_infusion.
        epsilon: the query's whole ε.
        delta: the query's whole δ (smooth_laplace; None = d·δ_min).
        worker_attributes: the query's worker (private) attributes.
        worker_cells: d = product of the declared domain sizes of the query's worker
            attributes (1 if none).
        params: mechanism parameters (force, theta, ...).
    """

    name: str
    mechanism: str
    epsilon: float | None
    delta: float | None = None
    worker_attributes: tuple[str, ...] = ()
    worker_cells: int = 1
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def has_worker_attributes(self) -> bool:
        return bool(self.worker_attributes)


#: mechanism parameters that are themselves confidential (noise infusion's distortion range)
CONFIDENTIAL_PARAMS = ("s", "t")

_EREE_MECHS = ("log_laplace", "smooth_gamma", "smooth_laplace")
_ALLOWED = {
    "eree": _EREE_MECHS,
    "eree-weak": _EREE_MECHS,
    "edge-dp": ("laplace",),
    "node-dp": ("truncated_laplace",),
    "blowfish": _EREE_MECHS,  # workshop version's policy (eree.privacy.blowfish)
    "none": ("noise_infusion",),
}


def _eree_charge(q: CountQueryRequest, definition: str, alpha: float) -> QueryCharge:
    d = q.worker_cells if q.has_worker_attributes else 1
    if q.has_worker_attributes and definition == "eree":
        raise PrivacyParameterError(
            f"query {q.name!r} has worker attributes: {q.mechanism} gives only weak ER-EE "
            "privacy for such cells (Haney et al. Thm 8.1, Lemmas 8.7, 9.2); strong ER-EE "
            'cannot be claimed. Use definition = "eree-weak".'
        )
    assert q.epsilon is not None
    eps_cell = q.epsilon / d
    params: dict[str, Any] = {"alpha": alpha}
    strength = "weak " if q.has_worker_attributes else ""
    if q.mechanism == "log_laplace":
        lam = check_log_laplace(alpha, eps_cell, force=bool(q.params.get("force", False)))
        params.update(gamma=1.0 / alpha, **{"lambda": lam})
        per_cell = Cost(epsilon=eps_cell, delta=0.0)
        guarantee = f"{strength}(α={alpha:g}, ε={eps_cell:.6g})-ER-EE privacy per cell"
    elif q.mechanism == "smooth_gamma":
        eps1, eps2 = smooth_gamma_epsilons(alpha, eps_cell)
        params.update(epsilon1=eps1, epsilon2=eps2)
        per_cell = Cost(epsilon=eps_cell, delta=0.0)
        guarantee = f"{strength}(α={alpha:g}, ε={eps_cell:.6g})-ER-EE privacy per cell"
    elif q.mechanism == "smooth_laplace":
        delta_cell = check_smooth_laplace(alpha, eps_cell, None if q.delta is None else q.delta / d)
        params.update(delta_min=check_smooth_laplace(alpha, eps_cell, None))
        per_cell = Cost(epsilon=eps_cell, delta=delta_cell)
        guarantee = (
            f"{strength}(α={alpha:g}, ε={eps_cell:.6g}, δ={delta_cell:.6g})-ER-EE privacy per cell"
        )
    else:  # pragma: no cover - guarded by _ALLOWED
        raise PrivacyParameterError(f"{q.mechanism} is not an ER-EE mechanism")
    total = Cost(epsilon=q.epsilon, delta=(per_cell.delta or 0.0) * d)
    if d > 1:
        guarantee += f"; d = {d} worker-attribute combinations composed sequentially"
    else:
        guarantee += "; cells partition the establishments (parallel composition)"
    return QueryCharge(q.name, q.mechanism, guarantee, d, per_cell, total, params)


def _dp_charge(q: CountQueryRequest) -> QueryCharge:
    assert q.epsilon is not None
    params: dict[str, Any] = {}
    if q.mechanism == "laplace":
        params["scale"] = 1.0 / q.epsilon
        guarantee = f"{EdgeDP(q.epsilon)}; each job is in exactly one cell"
    else:
        theta = q.params.get("theta")
        if theta is None:
            raise PrivacyParameterError(
                f"query {q.name!r}: truncated_laplace needs theta (establishments with total "
                "employment >= theta are dropped)"
            )
        params.update(theta=theta, scale=theta / q.epsilon)
        guarantee = f"{NodeDP(q.epsilon)}; each establishment contributes < θ={theta:g} jobs"
    cost = Cost(epsilon=q.epsilon, delta=0.0)
    return QueryCharge(q.name, q.mechanism, guarantee, 1, cost, cost, params)


def account_counts(
    definition: str, alpha: float | None, queries: list[CountQueryRequest]
) -> PrivacyReport:
    """Charge every count query of a plan and compose them sequentially.

    Raises:
        PrivacyParameterError: a mechanism not allowed under ``definition``, a missing
            ε, or parameters violating a mechanism's condition (the message names it).
    """
    allowed = _ALLOWED.get(definition)
    if allowed is None:
        raise PrivacyParameterError(f"definition {definition!r} has no count mechanisms")
    charges: list[QueryCharge] = []
    notes: list[str] = []
    for q in queries:
        if q.mechanism not in allowed:
            raise PrivacyParameterError(
                f"query {q.name!r}: mechanism {q.mechanism!r} does not satisfy definition "
                f"{definition!r}; allowed: {', '.join(allowed)}"
            )
        if q.mechanism == "noise_infusion":
            charges.append(
                QueryCharge(
                    q.name,
                    q.mechanism,
                    "no formal guarantee (input noise infusion, the current SDL baseline)",
                    1,
                    Cost(),
                    Cost(),
                    # the distortion range (s, t) is confidential in SDL practice
                    {k: v for k, v in q.params.items() if k not in CONFIDENTIAL_PARAMS},
                )
            )
            continue
        if q.epsilon is None:
            raise PrivacyParameterError(f"query {q.name!r}: epsilon is required")
        if definition != "blowfish" and (
            "additive" in q.params or q.params.get("variant") == "workshop"
        ):
            raise PrivacyParameterError(
                f'query {q.name!r}: the workshop variants (variant = "workshop", additive) are '
                'analysed under the Blowfish policy; use definition = "blowfish"'
            )
        if definition == "blowfish":
            if alpha is None:
                raise PrivacyParameterError("Blowfish privacy needs alpha")
            from eree.privacy.blowfish import blowfish_charge

            charges.append(blowfish_charge(q, alpha))
        elif definition in ("eree", "eree-weak"):
            if alpha is None:
                raise PrivacyParameterError("ER-EE privacy needs alpha")
            charges.append(_eree_charge(q, definition, alpha))
        else:
            charges.append(_dp_charge(q))
    total = sequential([c.total for c in charges])
    extra: dict[str, Any] = {}
    if definition in ("eree", "eree-weak") and alpha is not None and total.epsilon:
        weak = any("weak" in c.guarantee for c in charges)
        extra["guarantee"] = str(EreePrivacy(alpha, total.epsilon, total.delta or 0.0, weak))
    if definition == "eree-weak" and not any(c.multiplicity > 1 for c in charges):
        notes.append(
            "every query is over establishment attributes only, so the release also "
            "satisfies strong ER-EE privacy at the same total"
        )
    if definition in ("eree", "eree-weak"):
        notes.append(f"sequential composition (Thm 7.3) for the single α={alpha:g}: ε and δ add")
    if definition == "blowfish":
        from eree.privacy.blowfish import blowfish_notes

        notes.extend(blowfish_notes(charges))
    return PrivacyReport(definition, alpha, tuple(charges), total, tuple(notes), extra)
