r"""The Blowfish policy of the workshop version of Haney et al. (``papers/002_*``, §4).

The workshop paper protects LODES with a Blowfish policy (He et al. 2014) instead of the
ER-EE definitions of the SIGMOD version (docs/design.md#er-ee-privacy, normative). This module makes
that policy an object eree can test and explain.

**Records.** The data are one row per establishment, a triple :math:`(S, P, NP)`:
:math:`S` the *employment*, a multiset of worker records over a domain
:math:`\mathcal T` (here: worker-attribute combinations, e.g. ``("A01", "F")``);
:math:`P` the establishment's private attributes; :math:`NP` its public attributes
(§4.2). In eree's ER-EE data model every workplace attribute is public, so :math:`P`
is empty for LODES-like data.

**Edges** (§4.2). Two vertices are adjacent when

* Eq. 4: :math:`NP = NP' \wedge P = P' \wedge S \ne S' \wedge
  (|S' \setminus S| = 1 \vee S' \approx_\alpha S)`, or
* Eq. 5: :math:`NP = NP' \wedge S = S' \wedge P \ne P'`,

where :math:`S' \approx_\alpha S` (α-close) iff :math:`h(S')[v] \le (1+\alpha)\,h(S)[v]`
for every :math:`v \in \mathcal T` (h the histogram). A policy graph is undirected (an
edge means "an adversary cannot tell u from v", Def 4.1), so u ~ v when a rule holds for
(u, v) or for (v, u).

**Two readings of Eq. 4.** As printed, α-closeness is one-sided and
:math:`|S' \setminus S| = 1` does not ask for :math:`S \subseteq S'`: then
:math:`S \sim \emptyset` for every S (:math:`h(\emptyset) \le (1+\alpha) h(S)`) and any
S is adjacent to any one-worker set {w} with w ∉ S, so *every* two workforces are within
distance 2 — establishment-level DP in disguise, which none of the paper's mechanisms
provides. The proof of Thm 5.1 (Appendix B: "we just consider the case where
:math:`S \subseteq S'`") and the semantics of §4.3 use the *nested* reading: Eq. 4 with
:math:`S \subseteq S'` (the workforce grows by one worker, or every histogram cell grows
by at most the factor 1+α). :class:`PolicyGraph` implements both (``reading="printed"``
and ``reading="nested"``, the default: the reading the mechanisms satisfy).

**Distance.** :math:`d_G(u, v)` is the shortest-path length (Eq. 3: outputs on databases
differing in one record u → v are within :math:`e^{\varepsilon d_G(u,v)}`).
:meth:`PolicyGraph.distance` is a BFS over a finite universe (for small examples);
closed forms: public attributes differ → ∞; only private attributes differ → 1;
sizes, one worker type, nested reading → :func:`size_steps` (the paper's real-valued
statement :math:`y \le (1+\alpha)^k x \Rightarrow e^{k\varepsilon}` is
:func:`paper_size_steps`; with whole workers the chain can need more steps, or fewer
for x < 1/α thanks to the one-worker edge).

Also here: the parameter conditions of the workshop variants of the three mechanisms
(Alg 1–3 of the workshop version), the accountant's charge for ``definition =
"blowfish"``, and the semantics printed by ``eree explain``.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import product
from typing import TYPE_CHECKING, Any, Literal

from eree.errors import PrivacyParameterError
from eree.privacy.er_ee_conditions import check_alpha_epsilon
from eree.privacy.semantics import exp_or_none, fmt_exp

if TYPE_CHECKING:
    from eree.privacy.accountant import PrivacyReport, QueryCharge

__all__ = [
    "EstablishmentRecord",
    "PolicyGraph",
    "alpha_close",
    "blowfish_notes",
    "blowfish_semantics",
    "check_workshop_log_laplace",
    "check_workshop_smooth_gamma",
    "check_workshop_smooth_laplace",
    "eq4",
    "eq5",
    "multiset_difference_size",
    "paper_size_steps",
    "size_steps",
    "workforces",
    "workshop_smooth_laplace_delta_min",
]

Reading = Literal["nested", "printed"]
READINGS: tuple[str, ...] = ("nested", "printed")

#: relative slack for conditions that the default parameters meet with equality
_REL_TOL = 1e-12


# --------------------------------------------------------------------------- records


def _histogram(items: Iterable[Hashable] | Mapping[Hashable, int]) -> tuple[tuple[Any, int], ...]:
    if isinstance(items, Mapping):
        counts = Counter({k: int(v) for k, v in items.items() if int(v) != 0})
        if any(v < 0 for v in counts.values()):
            raise ValueError("a workforce histogram cannot have negative counts")
    else:
        counts = Counter(items)
    return tuple(sorted(counts.items(), key=lambda kv: repr(kv[0])))


@dataclass(frozen=True)
class EstablishmentRecord:
    """One vertex of the policy graph: an establishment (S, P, NP).

    Attributes:
        workforce: the multiset S as its histogram, ``((worker type, count), ...)``
            sorted; build it with :meth:`of`.
        private: P, the establishment's private attribute values (``()`` for LODES).
        public: NP, its public attribute values (place, industry, ownership, ...).
    """

    workforce: tuple[tuple[Any, int], ...]
    private: tuple[Any, ...] = ()
    public: tuple[Any, ...] = ()

    @classmethod
    def of(
        cls,
        workforce: Iterable[Hashable] | Mapping[Hashable, int],
        private: Sequence[Any] = (),
        public: Sequence[Any] = (),
    ) -> EstablishmentRecord:
        """A record from a list of worker types (a multiset) or a histogram mapping."""
        return cls(_histogram(workforce), tuple(private), tuple(public))

    @property
    def h(self) -> Counter[Any]:
        """The histogram of the employment S."""
        return Counter(dict(self.workforce))

    @property
    def size(self) -> int:
        """|S|, the establishment's employment."""
        return sum(c for _, c in self.workforce)


def _exact(alpha: float) -> Fraction:
    """α as the decimal the user wrote (0.3 → 3/10), so boundary cases are exact."""
    return Fraction(repr(float(alpha)))


def alpha_close(s_prime: Counter[Any], s: Counter[Any], alpha: float) -> bool:
    r""":math:`S' \approx_\alpha S`: :math:`h(S')[v] \le (1+\alpha) h(S)[v]` for every v (§4.2).

    One-sided, exactly as printed: it bounds S′ from above only.
    """
    factor = 1 + _exact(alpha)
    return all(c <= factor * s.get(v, 0) for v, c in s_prime.items())


def multiset_difference_size(s_prime: Counter[Any], s: Counter[Any]) -> int:
    r""":math:`|S' \setminus S|` for multisets: :math:`\sum_v \max(h(S')[v]-h(S)[v], 0)`."""
    return sum(max(c - s.get(v, 0), 0) for v, c in s_prime.items())


def _contains(big: Counter[Any], small: Counter[Any]) -> bool:
    return all(big.get(v, 0) >= c for v, c in small.items())


def eq4(
    u: EstablishmentRecord,
    v: EstablishmentRecord,
    alpha: float,
    *,
    reading: Reading = "printed",
    additive: int = 1,
) -> bool:
    r"""Eq. 4 for the ordered pair (u, v) = ((S, P, NP), (S′, P′, NP′)).

    ``printed``: :math:`NP=NP' \wedge P=P' \wedge S\ne S' \wedge (|S'\setminus S| = 1 \vee
    S' \approx_\alpha S)`. ``nested`` adds :math:`S \subseteq S'` (Appendix B).
    ``additive`` is the workshop's Δ (Alg 1: "adding or removing Δ workers"); the
    printed policy has Δ = 1, and a Δ > 1 policy reads :math:`1 \le |S'\setminus S| \le Δ`.
    """
    if u.public != v.public or u.private != v.private or u.workforce == v.workforce:
        return False
    s, s2 = u.h, v.h
    if reading == "nested" and not _contains(s2, s):
        return False
    diff = multiset_difference_size(s2, s)
    by_workers = diff == 1 if additive == 1 else 1 <= diff <= additive
    return by_workers or alpha_close(s2, s, alpha)


def eq5(u: EstablishmentRecord, v: EstablishmentRecord) -> bool:
    r"""Eq. 5: :math:`NP = NP' \wedge S = S' \wedge P \ne P'` (symmetric)."""
    return u.public == v.public and u.workforce == v.workforce and u.private != v.private


# --------------------------------------------------------------------------- the graph


@dataclass(frozen=True)
class PolicyGraph:
    """The workshop's Blowfish policy graph G over establishment records (§4.2).

    Attributes:
        alpha: the multiplicative protection factor α > 0.
        reading: ``"nested"`` (default; Eq. 4 with S ⊆ S′, the reading of the proofs and
            of §4.3) or ``"printed"`` (Eq. 4 exactly as printed).
        additive: Δ, the number of workers whose addition or removal is one edge
            (the printed policy: 1).
    """

    alpha: float
    reading: Reading = "nested"
    additive: int = 1

    def __post_init__(self) -> None:
        if not (math.isfinite(self.alpha) and self.alpha > 0):
            raise PrivacyParameterError(f"alpha must be a finite number > 0 (got {self.alpha!r})")
        if self.reading not in READINGS:
            raise ValueError(f"reading must be one of {READINGS} (got {self.reading!r})")
        if isinstance(self.additive, bool) or not isinstance(self.additive, int):
            raise PrivacyParameterError("the policy's additive step Delta must be an integer")
        if self.additive < 1:
            raise PrivacyParameterError(f"Delta must be >= 1 (got {self.additive})")

    def edge_rule(self, u: EstablishmentRecord, v: EstablishmentRecord) -> str | None:
        """Which rule makes u ~ v: ``"eq4"``, ``"eq5"``, or None when they are not adjacent."""
        if eq5(u, v):
            return "eq5"
        kw = {"reading": self.reading, "additive": self.additive}
        if eq4(u, v, self.alpha, **kw) or eq4(v, u, self.alpha, **kw):  # type: ignore[arg-type]
            return "eq4"
        return None

    def is_edge(self, u: EstablishmentRecord, v: EstablishmentRecord) -> bool:
        """Whether u ~ v in G (undirected: a rule holds for (u, v) or for (v, u))."""
        return self.edge_rule(u, v) is not None

    def distance(
        self,
        u: EstablishmentRecord,
        v: EstablishmentRecord,
        universe: Iterable[EstablishmentRecord],
    ) -> float:
        r""":math:`d_G(u, v)` by breadth-first search over a finite ``universe`` of vertices.

        For small examples (O(|universe|²) edge tests). Returns ``math.inf`` when v is
        not reachable (always so when the public attributes differ). The universe must
        contain u and v; distances are those of the subgraph it induces.
        """
        if u.public != v.public:
            return math.inf
        nodes = list(dict.fromkeys(universe))
        if u not in nodes or v not in nodes:
            raise ValueError("the universe must contain both records")
        seen = {u: 0}
        queue = deque([u])
        while queue:
            w = queue.popleft()
            if w == v:
                return float(seen[w])
            for x in nodes:
                if x not in seen and self.is_edge(w, x):
                    seen[x] = seen[w] + 1
                    queue.append(x)
        return math.inf


def workforces(domain: Sequence[Hashable], max_size: int) -> Iterator[Counter[Any]]:
    """Every multiset over ``domain`` with at most ``max_size`` elements (for BFS universes)."""
    for counts in product(range(max_size + 1), repeat=len(domain)):
        if sum(counts) <= max_size:
            yield Counter({t: c for t, c in zip(domain, counts, strict=True) if c})


def size_steps(x: int, y: int, alpha: float, additive: int = 1) -> int:
    r"""Edges between workforces of sizes x and y of one worker type (nested reading).

    One step grows a workforce of size z to at most
    :math:`g(z) = \max(\lfloor(1+\alpha)z\rfloor, z+\Delta)` (every size in between is
    one step too), so :math:`d_G = \min\{k : g^k(\min(x,y)) \ge \max(x,y)\}`. With several
    worker types the α-edge grows each histogram cell separately (floors per cell), so
    this is a lower bound there.
    """
    if x < 0 or y < 0:
        raise ValueError("sizes are non-negative")
    lo, hi = min(x, y), max(x, y)
    factor = 1 + _exact(alpha)
    k = 0
    while lo < hi:
        lo = max(math.floor(factor * lo), lo + additive)
        k += 1
    return k


def paper_size_steps(x: float, y: float, alpha: float) -> int:
    r"""§4.3's k: the least k with :math:`y \le (1+\alpha)^k x` (x, y > 0; real-valued sizes)."""
    if not (x > 0 and y > 0):
        raise ValueError("the paper's size statement needs x, y > 0")
    lo, hi = min(x, y), max(x, y)
    return max(0, math.ceil(math.log(hi / lo) / math.log1p(alpha) - 1e-12))


# --------------------------------------------------------------------------- conditions


def check_workshop_log_laplace(
    alpha: float, epsilon: float, additive: float = 1.0, *, force: bool = False
) -> tuple[float, float]:
    r"""Workshop Alg 1 (Log-Laplace): return (γ, λ).

    :math:`(\gamma, \lambda) = (\Delta/\alpha, 2\ln(1+\alpha)/\varepsilon)`.

    Refuses λ ≥ 1 unless ``force`` (Lemma 5.2: E[ñ] is unbounded) and Δ < 1 (adding one
    worker, Eq. 4, moves :math:`\ln(n+\gamma)` by :math:`\ln(1+1/\gamma) \le \ln(1+\alpha)`
    only when Δ ≥ 1).
    """
    check_alpha_epsilon(alpha, epsilon)
    if isinstance(additive, bool) or not (math.isfinite(additive) and additive >= 1):
        raise PrivacyParameterError(
            f"the workshop Log-Laplace needs Delta >= 1 (got {additive!r}): gamma = Delta/alpha "
            "must make one added worker move ln(n + gamma) by at most ln(1+alpha) (Eq. 4)"
        )
    lam = 2.0 * math.log1p(alpha) / epsilon
    if lam >= 1.0 and not force:
        raise PrivacyParameterError(
            f"workshop Log-Laplace needs lambda = 2 ln(1+alpha)/epsilon < 1 (Lemma 5.2: "
            f"otherwise the expected output is unbounded); alpha={alpha}, epsilon={epsilon} "
            f"give lambda={lam:.4g}. Raise epsilon, lower alpha, or set force = true."
        )
    return additive / alpha, lam


def workshop_smooth_laplace_delta_min(alpha: float, epsilon: float) -> float:
    r"""Smallest δ of workshop Alg 2: :math:`\ln(1+\alpha) = \varepsilon/(2\ln(1/\delta))`."""
    check_alpha_epsilon(alpha, epsilon)
    return math.exp(-epsilon / (2.0 * math.log1p(alpha)))


def check_workshop_smooth_laplace(alpha: float, epsilon: float, delta: float | None) -> float:
    r"""Workshop Alg 2 (Smooth Laplace): :math:`\alpha+1 \le e^{\varepsilon/(2\ln(1/\delta))}`.

    Returns δ (:func:`workshop_smooth_laplace_delta_min` when ``delta`` is None, the value
    the workshop's evaluation uses). The smoothing parameter is
    :math:`\beta = \varepsilon/(2\ln(1/\delta))` (Lemma 5.6) and Lemma 5.5 needs
    :math:`e^\beta \ge 1+\alpha`.
    """
    dmin = workshop_smooth_laplace_delta_min(alpha, epsilon)
    if delta is None:
        return dmin
    if not (math.isfinite(delta) and 0 < delta < 1):
        raise PrivacyParameterError(f"delta must lie in (0, 1) (got {delta!r})")
    if delta < dmin * (1 - _REL_TOL):
        raise PrivacyParameterError(
            f"workshop Smooth Laplace requires alpha + 1 <= e^(epsilon/(2 ln(1/delta))) "
            f"(Algorithm 2), i.e. delta >= exp(-epsilon/(2 ln(1+alpha))) = {dmin:.4g}; got "
            f"delta={delta} with alpha={alpha}, epsilon={epsilon}."
        )
    return delta


def check_workshop_smooth_gamma(alpha: float, epsilon: float) -> float:
    r"""Workshop Alg 3 (Smooth Gamma): :math:`\alpha + 1 \le e^{\varepsilon/4}`; return β = ε/4.

    Lemma 5.6 with exponent 4: :math:`1/(1+|z|^4)` is (ε/16, ε/4)-admissible, and
    Lemma 5.5 bounds the (β, G)-smooth sensitivity by :math:`\alpha x_V` iff
    :math:`e^\beta \ge 1+\alpha`. The boundary is allowed (non-strict, unlike SIGMOD's
    α+1 < e^{ε/5}).
    """
    check_alpha_epsilon(alpha, epsilon)
    beta = epsilon / 4.0
    if math.log1p(alpha) > beta * (1 + _REL_TOL):
        raise PrivacyParameterError(
            f"workshop Smooth Gamma requires alpha + 1 <= e^(epsilon/4) (Algorithm 3); "
            f"alpha={alpha}, epsilon={epsilon} violate it (needs epsilon >= 4 ln(1+alpha) = "
            f"{4 * math.log1p(alpha):.4g})."
        )
    return beta


# --------------------------------------------------------------------------- accounting

_WORKSHOP_NOTE = (
    "workshop variants: the guarantee is the workshop paper's claim (Thms 5.1, 5.4); its "
    "proof does not cover the extra Lap(1/epsilon) term eta' of Smooth Laplace/Gamma, and "
    "the SIGMOD variants are normative (docs/errata.md). WARNING: `eree audit privacy` "
    "finds the workshop Smooth Gamma and Smooth Laplace violating that claim for "
    "establishments with x_V <= 1 (their smooth sensitivity alpha*x_V has no max(., 1)); "
    "see docs/privacy-audit.md"
)
_COMPOSITION_NOTE = (
    "the workshop paper (§5) claims parallel composition over worker-attribute cells; an "
    "alpha-close change (Eq. 4) moves every cell of one establishment at once, so eree "
    "charges d * epsilon_cell for a marginal with d worker-attribute combinations "
    "(as SIGMOD §8 does for weak ER-EE)"
)


def blowfish_notes(charges: Sequence[QueryCharge]) -> list[str]:
    """Notes the accountant adds to a Blowfish report."""
    notes = ["sequential composition: epsilon and delta add over queries (Blowfish, He et al.)"]
    if any(c.multiplicity > 1 for c in charges):
        notes.append(_COMPOSITION_NOTE)
    if any(c.params.get("variant") == "workshop" for c in charges):
        notes.append(_WORKSHOP_NOTE)
    return notes


# --------------------------------------------------------------------------- semantics

#: size ratios y/x at which establishment-size protection is illustrated
SIZE_RATIOS = (1.05, 1.1, 1.5, 2.0, 10.0)
#: establishment sizes at which the exact whole-worker distance d_G is shown
_SIZES_X = (10, 100, 1000)


def _edge_examples(alpha: float) -> list[list[Any]]:
    """Small worked examples of which record changes are edges (nested reading)."""
    g = PolicyGraph(alpha)
    np_ = ("tract 1", "62", "A05")
    base = EstablishmentRecord.of({"F": 10, "M": 10}, public=np_)
    grow = math.floor((1 + _exact(alpha)) * 10)
    rows: list[tuple[str, EstablishmentRecord, EstablishmentRecord]] = [
        ("add one worker", base, EstablishmentRecord.of({"F": 11, "M": 10}, public=np_)),
        (
            f"every cell × ≤ (1+α): 10F,10M → {grow}F,{grow}M",
            base,
            EstablishmentRecord.of({"F": grow, "M": grow}, public=np_),
        ),
        (
            f"one cell beyond (1+α): 10F,10M → {grow + 1}F,10M",
            base,
            EstablishmentRecord.of({"F": grow + 1, "M": 10}, public=np_),
        ),
        (
            "move public attributes (other tract)",
            base,
            EstablishmentRecord.of({"F": 10, "M": 10}, public=("tract 2", "62", "A05")),
        ),
        (
            "private attributes only (Eq. 5)",
            EstablishmentRecord.of({"F": 10, "M": 10}, private=("p",), public=np_),
            EstablishmentRecord.of({"F": 10, "M": 10}, private=("q",), public=np_),
        ),
    ]
    return [
        [name, "yes" if g.is_edge(a, b) else "no", g.edge_rule(a, b) or "—"] for name, a, b in rows
    ]


def blowfish_semantics(report: PrivacyReport) -> dict[str, Any]:
    """What a ``definition = "blowfish"`` release guarantees (workshop §4.3), in words."""
    eps = report.total.epsilon
    delta = report.total.delta or 0.0
    alpha = report.alpha
    out: dict[str, Any] = {"definition": "blowfish", "epsilon": eps, "delta": delta}
    if eps is None or alpha is None:
        out["statement"] = "no formal privacy guarantee"
        return out
    dtext = f", except with probability {delta:.3g}" if delta > 0 else ""
    sizes: list[dict[str, Any]] = []
    for r in SIZE_RATIOS:
        k = paper_size_steps(1.0, r, alpha)
        sizes.append(
            {"size_ratio": r, "k": k, "log_bayes_factor_bound": k * eps,
             "bayes_factor_bound": exp_or_none(k * eps)}
        )  # fmt: skip
    lines = [
        "Blowfish privacy under the workshop policy graph G (Haney et al., workshop version "
        "§4.2): one vertex per establishment record (S, P, NP) — S its workforce (a multiset "
        "of worker records), P its private and NP its public attributes.",
        f"Edges, Eq. 4: same NP and P, and the workforce differs by one worker or is "
        f"alpha-close (every worker-attribute cell grows by at most the factor "
        f"1+{alpha:g}). Eq. 5: same NP and S, different private attributes P.",
        f"Workers (Eq. 4, one worker): protected as under differential privacy — a worker's "
        f"presence, absence or attributes change an attacker's odds by at most "
        f"e^{eps:.4g} = {fmt_exp(eps)}{dtext}.",
        f"Establishment size and shape (Eq. 4, alpha-close): sizes x and y <= (1+{alpha:g})^k x "
        f"cannot be told apart with odds better than e^(k*{eps:.4g}); e.g. within "
        f"{SIZE_RATIOS[1]:g}x: k = {sizes[1]['k']}, "
        f"bound {fmt_exp(sizes[1]['log_bayes_factor_bound'])}. "
        "The distribution of the workforce over worker attributes is protected within the "
        "same factor per step.",
        f"Private establishment attributes (Eq. 5): d_G = 1, bound e^{eps:.4g} (LODES-like data "
        "have none: every workplace attribute is public).",
        "Public attributes NP are not protected (d_G = infinity): the existence of "
        "establishments, their place, industry and ownership, and the number of "
        "establishments in any cell are disclosed; cells with no establishment are exact zeros.",
        "This is the workshop formulation. eree reads Eq. 4 with S ⊆ S′ (the reading of the "
        "paper's proofs); the SIGMOD definitions (eree, eree-weak) are normative "
        "(docs/errata.md). With whole workers the number of edges d_G between sizes x and y "
        "can exceed k when x >= 1/alpha (floors), or fall below it for smaller x (the "
        "one-worker edge); the table shows both.",
    ]
    out["size_protection"] = sizes
    out["statements"] = lines
    out["tables"] = [
        {
            "title": f"Which record changes are edges of G (α={alpha:g})",
            "columns": ["change of one establishment", "edge", "rule"],
            "rows": _edge_examples(alpha),
        },
        {
            "title": "Establishment size protection (k of §4.3; d_G for whole workers)",
            "columns": ["y/x", "k", "bound e^(k·ε)", *(f"d_G at x={x}" for x in _SIZES_X)],
            "rows": [
                [
                    s["size_ratio"],
                    s["k"],
                    s["bayes_factor_bound"],
                    *(size_steps(x, math.ceil(s["size_ratio"] * x), alpha) for x in _SIZES_X),
                ]
                for s in sizes
            ],
        },
    ]
    return out
