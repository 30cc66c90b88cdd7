r"""μ-Gaussian Establishment DP: definition, accounting, budget allocation, semantics.

Webb et al. (``papers/004_*``), docs/design.md#gaussian-establishment-dp, #semantics.

* :class:`GEDPDefinition` — Def 5.6 with a neighbor function per confidential attribute
  (Remark 5.4; one ψ shared by all attributes is the common case) and per-attribute
  distances γᵢ. Datasets are ψ-neighbors when one record is replaced by a ψ-close one
  (Def 5.5): same public attributes and :math:`|\psi(c_j)-\psi(c'_j)|\le\gamma_j` for all j.
  A mechanism is μ-GEDP when :math:`\Phi^{-1}(P(M(D_2)\in S))\le\Phi^{-1}(P(M(D_1)\in S))+\mu`
  for all ψ-neighbors and all S.
* composition (Thm 5.7): every (query, attribute) measurement is a separate mechanism
  (:mod:`eree.mechanisms.gedp`); :class:`~eree.privacy.composition.GaussianComposition`
  adds them, :math:`\mu_{total}=\sqrt{\sum\mu^2}`, the identity query included.
* :func:`allocate_mu` — a total μ and shares of μ² (as in Table 7) → per-query,
  per-attribute μ; :func:`budget_table` goes the other way (Table 7's columns).
* :func:`gedp_semantics` / :func:`explain_gedp_lines` — what the guarantee means:
  uncertainty intervals at representative sizes, the hypothesis-test bound
  "a test with false-positive rate x has power ≤ Φ(Φ⁻¹(x)+μ)" (§5.3), firms (group
  privacy, ℓ·μ for ℓ establishments — docs/errata.md to §5.4.1's (ℓ−1)μ) and persons
  (uncertainty intervals re-centred on the person's value, §5.4.2).

This module never imports ``release/``: plans are passed as plain arguments (see
``eree.release.gedp.gedp_requests_from_plan``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eree.errors import PrivacyParameterError, SpecError
from eree.privacy.accountant import PrivacyReport
from eree.privacy.neighbors import NeighborFunction, neighbor_from_spec
from eree.privacy.scipy_lazy import ndtr, ndtri

__all__ = [
    "SEMANTICS_SIZES",
    "GEDPDefinition",
    "allocate_mu",
    "budget_table",
    "explain_gedp_lines",
    "gedp_notes",
    "gedp_semantics",
    "make_gedp_definition",
    "person_interval",
    "power_bound",
    "semantics_tables",
]

#: representative sizes of the semantics table (docs/design.md#semantics)
SEMANTICS_SIZES: tuple[float, ...] = (1, 3, 10, 36, 100, 360, 1_000, 36_000)
_FPRS = (0.01, 0.05, 0.1)
_FIRM_SIZES = (1, 2, 5, 10)


# --------------------------------------------------------------------------------------
# Definition
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GEDPDefinition:
    """μ-GEDP's neighbor relation: a neighbor function and a distance per attribute.

    Attributes:
        neighbors: attribute → ψ (Remark 5.4; usually the same ψ for all).
        distance: attribute → γ > 0.
    """

    neighbors: Mapping[str, NeighborFunction]
    distance: Mapping[str, float]

    @property
    def attributes(self) -> tuple[str, ...]:
        """The confidential attributes the definition covers."""
        return tuple(self.distance)

    def neighbor(self, attribute: str) -> NeighborFunction:
        """ψ of ``attribute``."""
        try:
            return self.neighbors[attribute]
        except KeyError:
            raise PrivacyParameterError(
                f"attribute {attribute!r} has no neighbor function / distance in [privacy]"
            ) from None

    def gamma(self, attribute: str) -> float:
        """The distance γ of ``attribute``."""
        try:
            return float(self.distance[attribute])
        except KeyError:
            raise PrivacyParameterError(
                f"attribute {attribute!r} has no distance in [privacy].distance"
            ) from None

    def interval(self, attribute: str, y: float, m: float = 1.0) -> tuple[float, float]:
        """Uncertainty interval of ``attribute`` around ``y`` (m·γ for group privacy)."""
        lo, hi = self.neighbor(attribute).uncertainty_interval(y, m * self.gamma(attribute))
        return float(lo), float(hi)

    def neighbor_spec(self) -> Any:
        """The spec form: one value when all attributes share ψ, else attribute → form."""
        specs = {a: self.neighbors[a].to_spec() for a in self.attributes}
        distinct = {repr(s) for s in specs.values()}
        if len(distinct) == 1:
            return next(iter(specs.values()))
        return specs

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (floats rounded toward more privacy loss)."""
        return {
            "neighbor": self.neighbor_spec(),
            "neighbor_formula": {a: self.neighbors[a].describe() for a in self.attributes},
            "distance": {a: float(g) for a, g in self.distance.items()},
        }


def _is_per_attribute(neighbor: Any) -> bool:
    return isinstance(neighbor, Mapping) and "kind" not in neighbor


def make_gedp_definition(
    neighbor: Any,
    distance: Mapping[str, float] | None,
    attributes: Iterable[str] | None = None,
) -> GEDPDefinition:
    """Build the definition from spec values.

    Args:
        neighbor: a spec form or :class:`NeighborFunction` shared by all attributes, or a
            mapping attribute → spec form / NeighborFunction (Remark 5.4). None = ``sqrt``.
        distance: attribute → γ. An attribute without a distance takes its ψ's default
            (``dp`` with ``d`` → d; ``combine``/``heterogeneous`` → γ* = 1).
        attributes: the attributes that must be covered (e.g. every attribute a query
            measures); default: those of ``distance``.

    Raises:
        PrivacyParameterError: missing or invalid distance, invalid ψ.
        SpecError: malformed neighbor form.
    """
    dist = dict(distance or {})
    attrs = list(dict.fromkeys([*(attributes or ()), *dist]))
    if not attrs:
        raise PrivacyParameterError("GEDP needs at least one confidential attribute")
    if neighbor is None:
        neighbor = "sqrt"
    neighbors: dict[str, NeighborFunction] = {}
    if _is_per_attribute(neighbor):
        unknown = [a for a in neighbor if a not in attrs]
        if unknown:
            raise SpecError(f"[privacy].neighbor names attributes that are not measured: {unknown}")
        for a in attrs:
            if a not in neighbor:
                raise PrivacyParameterError(f"[privacy].neighbor gives no ψ for attribute {a!r}")
            neighbors[a] = neighbor_from_spec(neighbor[a])
    else:
        f = neighbor_from_spec(neighbor)
        neighbors = dict.fromkeys(attrs, f)
    gammas: dict[str, float] = {}
    for a in attrs:
        g = dist.get(a, neighbors[a].default_gamma)
        if g is None:
            raise PrivacyParameterError(
                f"attribute {a!r} has no distance parameter: add it to [privacy].distance"
            )
        g = float(g)
        if not (math.isfinite(g) and g > 0):
            raise PrivacyParameterError(f"distance of {a!r} must be a finite number > 0")
        gammas[a] = g
    return GEDPDefinition(neighbors, gammas)


# --------------------------------------------------------------------------------------
# Accountant
# --------------------------------------------------------------------------------------


def gedp_notes(measurements: int, zeta: float | None) -> list[str]:
    """The accountant's notes on a μ-GEDP release (composition; pnc clipping)."""
    notes = [
        f"μ-GEDP composition (Webb et al. Thm 5.7): μ_total = √(Σ μ²) over {measurements} "
        "(query, attribute) measurements, the identity query included",
    ]
    if zeta is not None:
        notes.append(
            "pnc upper bounds are computed from the noisy identity answers only (Thm 6.7); "
            f"with probability ≥ 1 − ζ (ζ = {zeta:g}) no value is clipped — clipping affects "
            "accuracy, never privacy"
        )
    return notes


# --------------------------------------------------------------------------------------
# Budget allocation (Table 7)
# --------------------------------------------------------------------------------------


def _normalise(weights: Mapping[str, float], where: str) -> dict[str, float]:
    for k, w in weights.items():
        if isinstance(w, bool) or not (math.isfinite(float(w)) and float(w) >= 0):
            raise PrivacyParameterError(f"{where}: share of {k!r} must be a finite number ≥ 0")
    s = math.fsum(float(w) for w in weights.values())
    if not s > 0:
        raise PrivacyParameterError(f"{where}: shares must not all be zero")
    return {k: float(w) / s for k, w in weights.items()}


def allocate_mu(
    total: float,
    shares: Mapping[str, float | Mapping[str, float]],
    attributes: Mapping[str, float] | Sequence[str] | None = None,
) -> dict[str, dict[str, float]]:
    r"""Split a total μ into per-query, per-attribute μ (as in Table 7).

    Shares are shares of **μ²** (composition adds μ², Thm 5.7), normalised to sum to 1, so
    :math:`\sqrt{\sum_{q,a}\mu_{q,a}^2}=` ``total`` exactly.

    Args:
        total: μ_total > 0.
        shares: query → either its share of μ² (then split over ``attributes``) or a
            mapping attribute → share of μ² (used as given, normalised over everything).
        attributes: within-query split for float shares: attribute → share of μ_q²
            (Table 7's :math:`\mu_{q,w}^2/\mu_q^2`), or a list (equal shares).

    Returns:
        query → attribute → μ.

    Example:
        ``allocate_mu(2.0, {"identity": 0.5, "county": 0.5}, ["m1emp", "wage"])`` gives
        every (query, attribute) μ = 1.
    """
    if not (math.isfinite(total) and total > 0):
        raise PrivacyParameterError("total mu must be a finite number > 0")
    flat: dict[tuple[str, str], float] = {}
    q_share: dict[str, float] = {}
    for q, s in shares.items():
        q_share[q] = math.fsum(float(v) for v in s.values()) if isinstance(s, Mapping) else float(s)
    q_norm = _normalise(q_share, "allocate_mu")
    for q, s in shares.items():
        if isinstance(s, Mapping):
            inner = _normalise(s, f"allocate_mu[{q!r}]") if q_share[q] > 0 else {}
        else:
            if attributes is None:
                raise PrivacyParameterError(
                    f"allocate_mu: query {q!r} has a single share; give the attributes to split it"
                )
            att = (
                dict(attributes)
                if isinstance(attributes, Mapping)
                else dict.fromkeys(attributes, 1.0)
            )
            inner = _normalise(att, "allocate_mu attributes")
        for a, w in inner.items():
            flat[(q, a)] = q_norm[q] * w
    out: dict[str, dict[str, float]] = {}
    for (q, a), w in flat.items():
        if w > 0:
            out.setdefault(q, {})[a] = total * math.sqrt(w)
    return out


def budget_table(
    mu: Mapping[str, Mapping[str, float]], focus: str | None = None
) -> list[dict[str, Any]]:
    r"""Table 7's derived columns from per-query, per-attribute μ.

    Returns one row per query: ``query``, ``mu_q`` (:math:`\sqrt{\sum_a\mu_{q,a}^2}`),
    ``share`` (:math:`\mu_q^2/\mu^2`), ``mu`` (the per-attribute μ) and, when ``focus``
    names an attribute, ``focus_share`` (:math:`\mu_{q,focus}^2/\mu_q^2`, Table 7's last
    column for wages). A final row ``query = "total"`` has ``mu_q`` = μ_total.
    """
    rows: list[dict[str, Any]] = []
    total2 = math.fsum(float(m) ** 2 for v in mu.values() for m in v.values())
    for q, v in mu.items():
        q2 = math.fsum(float(m) ** 2 for m in v.values())
        row: dict[str, Any] = {
            "query": q,
            "mu_q": math.sqrt(q2),
            "share": q2 / total2 if total2 else 0.0,
            "mu": dict(v),
        }
        if focus is not None:
            row["focus_share"] = float(v.get(focus, 0.0)) ** 2 / q2 if q2 else 0.0
        rows.append(row)
    rows.append({"query": "total", "mu_q": math.sqrt(total2), "share": 1.0, "mu": {}})
    return rows


# --------------------------------------------------------------------------------------
# Semantics
# --------------------------------------------------------------------------------------


def power_bound(false_positive_rate: float, mu: float) -> float:
    r"""Largest power of any test with false-positive rate x: :math:`\Phi(\Phi^{-1}(x)+\mu)`."""
    if not 0 < false_positive_rate < 1:
        raise PrivacyParameterError("false-positive rate must lie in (0, 1)")
    return float(ndtr(ndtri(false_positive_rate) + mu))


def person_interval(
    neighbor: NeighborFunction,
    gamma: float,
    establishment_value: float,
    person_value: float,
    m: float = 1.0,
) -> tuple[float, float]:
    r"""§5.4.2: the establishment's uncertainty interval re-centred on a person's value.

    :math:`I = \mathcal I_{\psi,m\gamma}(C^{(e)}) - C^{(e)} + C^{(p)}`: the person's value is
    indistinguishable (at level μ, or m·μ for m·γ) from any value in I.
    """
    lo, hi = neighbor.uncertainty_interval(establishment_value, m * gamma)
    return float(lo) - establishment_value + person_value, float(hi) - establishment_value + (
        person_value
    )


def gedp_semantics(
    definition: GEDPDefinition,
    mu_total: float,
    *,
    sizes: Sequence[float] = SEMANTICS_SIZES,
    false_positive_rates: Sequence[float] = _FPRS,
    firm_sizes: Sequence[int] = _FIRM_SIZES,
) -> dict[str, Any]:
    """What μ_total-GEDP means for establishments, firms and persons (docs/design.md#semantics).

    Returns a JSON-able dict with ``intervals`` (attribute → rows x, low, high, the
    Def 5.2 interval), ``hypothesis_test`` (the bound Φ(Φ⁻¹(x)+μ) at a few x), ``firms``
    (ℓ establishments all changing: ℓ·μ, group privacy) and ``persons`` (attribute →
    rows of establishment totals with how far a person's value may move down/up, §5.4.2).
    """
    intervals: dict[str, list[dict[str, float]]] = {}
    persons: dict[str, list[dict[str, float]]] = {}
    for a in definition.attributes:
        rows, prow = [], []
        for x in sizes:
            lo, hi = definition.interval(a, float(x))
            rows.append({"x": float(x), "low": lo, "high": hi})
            prow.append({"establishment_total": float(x), "down": float(x) - lo, "up": hi - x})
        intervals[a] = rows
        persons[a] = prow
    tests = [
        {"false_positive_rate": x, "max_power": power_bound(x, mu_total)}
        for x in false_positive_rates
    ]
    firms = [
        {
            "establishments": int(ell),
            "mu": ell * mu_total,
            "max_power_at_5pct": power_bound(0.05, ell * mu_total),
        }
        for ell in firm_sizes
    ]
    return {
        "definition": "gedp",
        "mu": mu_total,
        "neighbor": definition.neighbor_spec(),
        "distance": {a: float(g) for a, g in definition.distance.items()},
        "intervals": intervals,
        "hypothesis_test": {
            "statement": (
                "for any two datasets that differ by replacing one establishment with one whose "
                "confidential values are inside each other's uncertainty intervals (all "
                "attributes at once), a test with false-positive rate x has power ≤ "
                "Φ(Φ⁻¹(x) + μ): as hard as telling N(0,1) from N(μ,1)"
            ),
            "examples": tests,
        },
        "firms": {
            "statement": (
                "a firm whose ℓ establishments all change within their intervals is protected "
                "at ℓ·μ (group privacy, Remark 5.8; the paper's (ℓ−1)μ is corrected to ℓ·μ)"
            ),
            "examples": firms,
        },
        "persons": {
            "statement": (
                "a person inside an establishment is protected at least as well as an "
                "establishment of one employee; the establishment's interval, re-centred on "
                "the person's own value, says how far the person's value may move "
                "undetectably (§5.4.2): from value − down to value + up"
            ),
            "examples": persons,
        },
    }


def semantics_tables(sem: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The interval and person rows of :func:`gedp_semantics` as display tables.

    Each table is ``{"title", "columns", "rows"}`` (rows of strings), one row per
    representative size, one column per attribute.
    """
    attrs = list(sem["intervals"])
    sizes = [r["x"] for r in sem["intervals"][attrs[0]]] if attrs else []
    iv = {a: sem["intervals"][a] for a in attrs}
    pe = {a: sem["persons"]["examples"][a] for a in attrs}
    return [
        {
            "title": "Uncertainty intervals (Def 5.2): x is indistinguishable from any value in",
            "columns": ["x", *attrs],
            "rows": [
                [_fmt(x)] + [f"[{_fmt(iv[a][i]['low'])}, {_fmt(iv[a][i]['high'])}]" for a in attrs]
                for i, x in enumerate(sizes)
            ],
        },
        {
            "title": "Persons (§5.4.2): how far a person's value may move, by establishment total",
            "columns": ["establishment total", *attrs],
            "rows": [
                [_fmt(x)] + [f"−{_fmt(pe[a][i]['down'])} / +{_fmt(pe[a][i]['up'])}" for a in attrs]
                for i, x in enumerate(sizes)
            ],
        },
    ]


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 1000:
        return f"{v:,.1f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def explain_gedp_lines(
    report: PrivacyReport,
    definition: GEDPDefinition | None = None,
    *,
    sizes: Sequence[float] = SEMANTICS_SIZES,
    tables: bool = True,
    budget: bool = True,
) -> list[str]:
    """Human-readable lines for ``eree explain`` of a GEDP plan.

    Args:
        report: the accountant's report of a GEDP plan.
        definition: the definition (rebuilt from ``report.extra`` when omitted; needed for
            user-defined ψ, which have no spec form).
        tables: include the per-attribute interval and person rows (leave them out when
            they are shown as tables, :func:`semantics_tables`).
        budget: include the per-query budget lines and the accountant's notes (leave them
            out when a cost table shows them); the μ_total line is always there.
    """
    if definition is None:
        definition = make_gedp_definition(report.extra["neighbor"], report.extra["distance"])
    mu = report.total.mu or 0.0
    n_meas = len(report.extra.get("measurements", []))
    lines = ["Definition: μ-Gaussian Establishment DP (Webb et al. Def 5.6)"]
    formulas = {definition.neighbors[a].describe() for a in definition.attributes}
    if len(formulas) == 1:
        lines.append(f"  neighbor function: {next(iter(formulas))}")
    else:
        for a in definition.attributes:
            lines.append(f"  neighbor function of {a}: {definition.neighbors[a].describe()}")
    lines.append(
        "  distances γ: " + ", ".join(f"{a} = {g:g}" for a, g in definition.distance.items())
    )
    lines.append("Budget (composition, Thm 5.7: μ_total = √Σμ²):")
    if budget:
        for c in report.charges:
            per = c.params.get("mu", {})
            per_s = ", ".join(f"{a} {m:g}" for a, m in per.items())
            lines.append(
                f"  {c.query:<24} {c.mechanism:<15} μ_q = {c.total.mu or 0:.4f}  ({per_s})"
            )
    lines.append(f"  total: μ_total = {mu:.2f}  (√Σμ² = {mu:.4f} over {n_meas} measurements)")
    sem = gedp_semantics(definition, mu, sizes=sizes)
    lines.append("What it protects:")
    lines.append(
        "  Uncertainty intervals (Def 5.2): an establishment's true value x cannot be told "
        "apart from any value in" + (":" if tables else " its interval (table below)")
    )
    if tables:
        for a, rows in sem["intervals"].items():
            cells = "; ".join(
                f"{_fmt(r['x'])} → [{_fmt(r['low'])}, {_fmt(r['high'])}]" for r in rows
            )
            lines.append(f"    {a}: {cells}")
    ex = ", ".join(
        f"x = {t['false_positive_rate']:g} → power ≤ {t['max_power']:.3f}"
        for t in sem["hypothesis_test"]["examples"]
    )
    lines.append(
        f"  Hypothesis tests: a test with false-positive rate x has power ≤ Φ(Φ⁻¹(x) + μ), "
        f"μ = {mu:.2f}: {ex}"
    )
    fx = ", ".join(
        f"ℓ = {f['establishments']}: μ = {f['mu']:.2f} (power ≤ {f['max_power_at_5pct']:.3f} at 5%)"
        for f in sem["firms"]["examples"]
    )
    lines.append(f"  Firms (ℓ establishments all change; group privacy ℓ·μ): {fx}")
    lines.append(
        "  Persons (§5.4.2): the establishment's interval re-centred on the person's value; "
        "a person's value may move undetectably by"
        + (":" if tables else " the amounts in the table below")
    )
    if tables:
        for a, rows in sem["persons"]["examples"].items():
            cells = "; ".join(
                f"in a total of {_fmt(r['establishment_total'])}: "
                f"−{_fmt(r['down'])}/+{_fmt(r['up'])}"
                for r in rows
            )
            lines.append(f"    {a}: {cells}")
    if budget:
        for n in report.notes:
            lines.append(f"Note: {n}")
    return lines
