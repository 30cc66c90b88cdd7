r"""``eree audit privacy``: an empirical check of every registered mechanism against its claim.

The audit is black-box: for each mechanism of :data:`eree.mechanisms.registry.REGISTRY`
and each privacy definition it may run under, it builds worst-case pairs of neighbouring
inputs *from the definition* (never from the mechanism's code), runs the mechanism object
itself — the same ``mechanism(cells, source)`` a release calls — N times on each input,
and turns the outputs into a statistically valid **lower bound** on the privacy loss:

* ER-EE family (ER-EE, weak ER-EE, Blowfish, edge-DP, node-DP): an (ε, δ) claim says
  P[M(D) ∈ S] ≤ e^ε P[M(D′) ∈ S] + δ for every event S and both orders of a neighbouring
  pair, so for one event S fixed in advance,
  :math:`\hat\varepsilon = \ln\frac{\underline p - \delta}{\overline q}` with
  :math:`\underline p` a Clopper–Pearson lower bound of P[M(D) ∈ S] and
  :math:`\overline q` an upper bound of P[M(D′) ∈ S] is a lower bound of the true ε at
  the stated confidence.
* μ-GEDP (Webb et al. Def 5.6): Φ⁻¹(P[M(D) ∈ S]) ≤ Φ⁻¹(P[M(D′) ∈ S]) + μ, equivalently
  the type II error of the test "reject D′ on S" is at least Φ(Φ⁻¹(1 − x) − μ) at type I
  error x; :math:`\hat\mu = \Phi^{-1}(\underline p) - \Phi^{-1}(\overline q)` is a lower
  confidence bound of μ.

**Validity.** The event S (a threshold ``o ≤ t`` / ``o > t`` on the output, or on its
distance from a centre, in either order of the pair) is chosen on one half of the draws
(the *selection split*); the two probabilities are bounded on the other half, which the
choice never saw, each at level β/(2K) (Bonferroni over the two probabilities and the K
pairs of one audit run), so the whole table holds simultaneously with probability at least
1 − β. A lower bound above the claim is therefore a **violation** at that confidence; one
below it proves nothing beyond "this test did not find one" (an audit cannot prove privacy).

**Draws.** One call of the mechanism on N copies of a pair's cells is N independent
releases of that query (every mechanism draws each cell's noise independently); the
statistic is the raw noisy output (for a marginal with several cells, a fixed function of
the outputs, chosen before any draw: the sum, or the sum of ln(ñ + γ) for Log-Laplace).

**Power check.** ``scale_factor`` f < 1 audits a deliberately weakened copy of each
mechanism: the same class built with parameters whose noise scale is f times the original
(ε/f for the Laplace-type ER-EE mechanisms and the baselines, ε₁/f for SIGMOD Smooth
Gamma, μ/f for GEDP), checked field by field against f × the original scale. Its claim is
the *original* object's cost. A weakened copy whose true loss exceeds the claim must be
flagged; one that is still within its claim (a mechanism conservative by more than 1/f)
is rightly not.

**Floating-point attack.** Threshold events cannot see least-significant-bit effects. The
audit therefore also runs :mod:`eree.evaluate.float_attack` on every registered mechanism:
it draws released values on neighbouring truths and counts the cells whose value the
published algorithm can reach under one truth only (a certain answer). On the current
sampling layer this must be 0 of n for every mechanism (``float_attack.csv``).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from scipy.special import ndtri
from scipy.stats import beta as beta_dist

from eree.mechanisms.adaptive import AdaptiveGroupBy
from eree.mechanisms.base import Cells, Mechanism
from eree.mechanisms.er_ee import CountMechanism, SmoothGamma
from eree.mechanisms.gedp import EstabGaussian, GedpMechanism, Pnc
from eree.mechanisms.noise import FloatArray, SeededNoise
from eree.mechanisms.noise_infusion import FACTOR_CACHE, INCIDENCE, N_ESTABLISHMENTS
from eree.mechanisms.registry import REGISTRY, Entry
from eree.privacy.neighbors import DPNeighbor, SqrtShift

__all__ = [
    "CSV_COLUMNS",
    "AuditCase",
    "AuditResult",
    "audit_cases",
    "clopper_pearson",
    "empirical_tradeoff",
    "event_lower_bound",
    "float_attack_table",
    "planned_pairs",
    "run_audit",
    "run_case",
    "weakened",
    "write_outputs",
]

#: α of the ER-EE family in the audit (Haney et al.'s baseline)
ALPHA = 0.1
#: ε per cell of the ER-EE mechanisms and the baselines
EPSILON = 2.0
#: θ of node-DP truncated Laplace
THETA = 50.0
#: μ of the GEDP mechanisms
MU = 1.0
#: γ of the sqrt neighbour function (Webb et al.'s QCEW setting)
GAMMA_SQRT = 0.5
#: γ = d of the dp neighbour function used by Estab-Gaussian (a finite sensitivity)
GAMMA_DP = 5.0
#: draws per neighbouring input of the full and the quick audit
N_FULL = 1_000_000
N_QUICK = 40_000
#: draws per call of a mechanism (memory bound)
CHUNK = 250_000

CSV_COLUMNS = [
    "mechanism", "variant", "definition", "pair", "scale_factor", "claim_kind", "claimed",
    "claimed_delta", "lower_bound", "confidence", "pair_confidence", "n", "event", "p_hat",
    "q_hat", "verdict", "seconds",
]  # fmt: skip

VIOLATION = "VIOLATION"
PASS = "no violation"
NO_CLAIM = "no claim"


@dataclass(frozen=True)
class AuditCase:
    """One neighbouring pair for one registered mechanism under one definition.

    Attributes:
        entry: index of the mechanism's line in :data:`REGISTRY`.
        definition: the privacy definition the pair comes from.
        pair: a human label of the pair (sizes, x_v, distance).
        params: keyword arguments of the mechanism class (as a release builds it).
        cells_a, cells_b: column → per-cell values of one release of the query on D and
            D′ (k cells: the statistic is a fixed function of the k outputs).
        quick: whether ``--quick`` runs the pair.
    """

    entry: int
    definition: str
    pair: str
    params: Mapping[str, Any]
    cells_a: Mapping[str, tuple[float, ...]]
    cells_b: Mapping[str, tuple[float, ...]]
    quick: bool = True

    @property
    def registry_entry(self) -> Entry:
        """The mechanism registry entry of the case."""
        return REGISTRY[self.entry]

    def build(self) -> Mechanism:
        """The mechanism object, built as a release builds it (registry class + params)."""
        return self.registry_entry.cls(**self.params)


# ----------------------------------------------------------------------------- neighbours


def _grow(y: int, alpha: float = ALPHA) -> int:
    """The α-neighbour boundary |E′| = max((1+α)|E|, |E|+1), in whole workers (Def 7.1)."""
    return max(math.floor((1 + alpha) * y + 1e-9), y + 1)


def _one_est(y: int) -> dict[str, tuple[float, ...]]:
    """A cell holding one establishment with y matching workers: n = x_v = y."""
    return {"count": (float(y),), "x_v": (float(y),)}


def _er_ee_pairs() -> list[tuple[str, dict[str, Any], dict[str, Any], bool]]:
    """Strong α-neighbours of one cell over establishment attributes (Def 7.1).

    The establishment e whose workforce grows from y to max((1+α)y, y+1) is the cell's
    largest (x_v grows with it: the smooth sensitivity changes too), or a tiny one next
    to a large one.
    """
    pairs = []
    for y, quick in ((0, True), (1, False), (10, True), (1000, True)):
        z = _grow(y)
        lab = f"one establishment, |E|={y} -> |E'|={z} (x_v {y} -> {z})"
        pairs.append((lab, _one_est(y), _one_est(z), quick))
    big = 1000
    pairs.append((
        f"tiny establishment 1 -> 2 beside one of {big} (x_v = {big})",
        {"count": (float(big + 1),), "x_v": (float(big),)},
        {"count": (float(big + 2),), "x_v": (float(big),)},
        False,
    ))  # fmt: skip
    return pairs


def _weak_pairs() -> list[tuple[str, dict[str, Any], dict[str, Any], bool]]:
    """Weak α-neighbours of a marginal with one worker attribute of d = 2 values (Def 7.3).

    Under weak neighbours every property of the workforce may grow by the α-factor at
    once, so one establishment moves both cells of the marginal: (M, F) counts
    (y_M, y_F) -> (max((1+α)y_M, y_M+1), max((1+α)y_F, y_F+1)), the F cell from x_v = 0.
    """
    out = []
    for (ym, yf), quick in (((10, 0), True), ((1000, 1000), False)):
        zm, zf = _grow(ym), _grow(yf)
        lab = f"d=2 marginal, one establishment, (M,F) ({ym},{yf}) -> ({zm},{zf})"
        a = {"count": (float(ym), float(yf)), "x_v": (float(ym), float(yf))}
        b = {"count": (float(zm), float(zf)), "x_v": (float(zm), float(zf))}
        out.append((lab, a, b, quick))
    return out


def audit_cases(quick: bool = False) -> list[AuditCase]:
    """Every (registered mechanism, definition, neighbouring pair) of the audit."""
    cases: list[AuditCase] = []
    for i, e in enumerate(REGISTRY):
        for definition in e.definitions:
            for lab, a, b, q in _pairs_for(e, definition):
                params = _params_for(e, definition, worker_cells=len(next(iter(a.values()))))
                case = AuditCase(i, definition, lab, params, a, b, q)
                if q or not quick:
                    cases.append(case)
    return cases


def _pairs_for(e: Entry, definition: str) -> list[tuple[str, dict[str, Any], dict[str, Any], bool]]:
    if definition in ("eree", "blowfish"):
        return _er_ee_pairs()
    if definition == "eree-weak":
        return _weak_pairs()
    if definition == "edge-dp":  # one job more or less in the cell
        return [("one job added, n 10 -> 11", {"count": (10.0,)}, {"count": (11.0,)}, True)]
    if definition == "node-dp":  # one establishment below θ added; its jobs all in the cell
        k = float(THETA - 1)
        return [
            (f"establishment of {k:g} jobs added to an empty cell", {"count_truncated": (0.0,)},
             {"count_truncated": (k,)}, True),
            (f"establishment of {k:g} jobs added beside 100", {"count_truncated": (100.0,)},
             {"count_truncated": (100.0 + k,)}, False),
        ]  # fmt: skip
    if definition == "none":  # noise infusion: strong α-neighbours all the same
        return [
            ("one establishment, |E|=0 -> |E'|=1", {"count": (0.0,)}, {"count": (1.0,)}, True),
            ("one establishment, |E|=10 -> |E'|=11", {"count": (10.0,)}, {"count": (11.0,)},
             True),
        ]  # fmt: skip
    if definition == "gedp":
        return _gedp_pairs(e)
    raise ValueError(f"no neighbouring pairs for definition {definition!r}")


def _gedp_pairs(e: Entry) -> list[tuple[str, dict[str, Any], dict[str, Any], bool]]:
    """ψ-neighbours (Def 5.5) at distance exactly γ: one establishment's value moves."""
    if e.cls is EstabGaussian:  # ψ(x) = x, γ = d: the value moves by d
        g = GAMMA_DP
        return [
            (f"dp psi, x 0 -> {g:g}", {"value": (0.0,)}, {"value": (g,)}, True),
            (f"dp psi, x 1e6 -> 1e6+{g:g}", {"value": (1e6,)}, {"value": (1e6 + g,)}, False),
        ]
    g = GAMMA_SQRT
    small_b = g * g  # √0 + γ = γ
    big = 1e6
    big_b = (math.sqrt(big) + g) ** 2
    if e.cls is Pnc:  # group sums clipped at the public bound u*: T moves by Δ(u*)
        # u* ≤ γ²: ψ(u*) − γ < ψ(0), the whole value may vanish (Δ = u*)
        u_small = small_b
        u_big = big_b
        low_big = (math.sqrt(u_big) - g) ** 2
        return [
            (f"sqrt psi, u*={u_small:g}: T 0 -> {u_small:g}",
             {"clipped": (0.0,), "bound": (u_small,)},
             {"clipped": (u_small,), "bound": (u_small,)}, True),
            (f"sqrt psi, u*={u_big:.6g}: T {low_big:.6g} -> u*",
             {"clipped": (low_big,), "bound": (u_big,)},
             {"clipped": (u_big,), "bound": (u_big,)}, False),
        ]  # fmt: skip
    if e.cls is AdaptiveGroupBy:  # the choice is public (bound and x̂ fixed): each branch
        x_hat = 1e6  # ψ's predicted variance ≈ 4σ²·1e6
        u_psi = 1e12  # pnc's Δ ≈ 2γ·1e6: ψ is chosen
        u_pnc = small_b  # Δ = u* = γ²: pnc is chosen
        return [
            (f"adaptive, psi chosen (u*={u_psi:g}, x_hat={x_hat:g}): x 0 -> {small_b:g}",
             {"value": (0.0,), "clipped": (0.0,), "bound": (u_psi,), "identity_sum": (x_hat,),
              "identity_variance": (0.0,)},
             {"value": (small_b,), "clipped": (small_b,), "bound": (u_psi,),
              "identity_sum": (x_hat,), "identity_variance": (0.0,)}, True),
            (f"adaptive, pnc chosen (u*={u_pnc:g}, x_hat={x_hat:g}): T 0 -> {u_pnc:g}",
             {"value": (0.0,), "clipped": (0.0,), "bound": (u_pnc,), "identity_sum": (x_hat,),
              "identity_variance": (0.0,)},
             {"value": (u_pnc,), "clipped": (u_pnc,), "bound": (u_pnc,),
              "identity_sum": (x_hat,), "identity_variance": (0.0,)}, True),
        ]  # fmt: skip
    return [
        (f"sqrt psi, x 0 -> {small_b:g}", {"value": (0.0,)}, {"value": (small_b,)}, True),
        (f"sqrt psi, x 1e6 -> {big_b:.8g}", {"value": (big,)}, {"value": (big_b,)}, False),
    ]


#: the public grid the audit runs every mechanism on: fine against every pair's noise, so
#: that the rounding hides nothing from the audit. A release's coarser grid (1 for
#: counts) is a deterministic rounding of the same output — post-processing, which can
#: only lower the privacy loss — so the audit checks the most revealing version.
AUDIT_GRID = 2.0**-20


def _params_for(e: Entry, definition: str, worker_cells: int) -> dict[str, Any]:
    """Constructor arguments as :mod:`eree.release.build` passes them for such a query."""
    p: dict[str, Any] = {"query": "audit"}
    if "grid" in e.settings:
        p["grid"] = AUDIT_GRID
    if definition == "gedp":
        if e.cls is EstabGaussian:
            p.update(attribute="value", neighbor=DPNeighbor(GAMMA_DP), gamma=GAMMA_DP)
        else:
            p.update(attribute="value", neighbor=SqrtShift(), gamma=GAMMA_SQRT)
        p["mu"] = MU
        return p
    p["definition"] = definition
    if "epsilon" in e.settings:
        p["epsilon"] = EPSILON * worker_cells
        if worker_cells > 1:
            p.update(worker_cells=worker_cells, worker_attributes=("sex",))
    if "alpha" in e.cls.__dataclass_fields__:
        p["alpha"] = ALPHA
    if "theta" in e.settings:
        p["theta"] = THETA
    return p


# ----------------------------------------------------------------------------- weakening

#: the noise-scale fields of each mechanism family: (field, exponent of f): a weakened
#: copy must have field' = field · f**exponent
_SCALE_FIELDS: tuple[tuple[str, int], ...] = (
    ("lam", 1), ("scale", 1), ("sigma", 1), ("sd", 1), ("epsilon_cell", -1), ("epsilon1", -1),
)  # fmt: skip


def weakened(mech: Mechanism, factor: float) -> Mechanism:
    """A copy of ``mech`` whose noise scale is ``factor`` times the original.

    Built with the same class and parameters except the privacy parameter that sets the
    scale: ε/f for the mechanisms whose noise is ∝ 1/ε_cell (Log-Laplace λ, the Laplace
    scales, Smooth Laplace 2S/ε, the workshop variants' smooth term and η′), ε₂ + ε₁/f for
    SIGMOD Smooth Gamma (scale 5S/ε₁ with ε₂ = 5 ln(1+α) fixed), μ/f for GEDP (σ = γ/μ,
    Δ/μ). Every scale field of the copy is checked against f × the original.

    Raises:
        ValueError: the mechanism has no noise scale to weaken (noise infusion).
    """
    if factor == 1.0:
        return mech
    if not factor > 0:
        raise ValueError(f"the scale factor must be > 0 (got {factor!r})")
    if isinstance(mech, GedpMechanism):
        new: Mechanism = dataclasses.replace(mech, mu=mech.mu / factor)
    elif isinstance(mech, SmoothGamma):
        eps2 = mech.epsilon2
        eps1 = mech.epsilon1 / factor
        new = dataclasses.replace(mech, epsilon=(eps2 + eps1) * mech.worker_cells)
    elif isinstance(mech, CountMechanism):
        new = dataclasses.replace(mech, epsilon=mech.epsilon / factor)
    else:
        raise ValueError(f"{mech.name} has no noise scale (no formal guarantee to weaken)")
    for name, power in _SCALE_FIELDS:
        if isinstance(mech, SmoothGamma) and name == "epsilon_cell":
            continue  # ε_cell = ε₂ + ε₁: only ε₁ sets the scale
        if hasattr(mech, name) and hasattr(new, name):
            want = getattr(mech, name) * factor**power
            got = getattr(new, name)
            if not math.isclose(got, want, rel_tol=1e-9):
                raise AssertionError(f"weakened {mech.name}: {name} = {got!r}, expected {want!r}")
    return new


# ----------------------------------------------------------------------------- statistics


def clopper_pearson(k: np.ndarray, n: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson bounds of a binomial proportion, each at ``level``.

    Returns (lower, upper) with P(p ≥ lower) ≥ level and P(p ≤ upper) ≥ level.
    """
    k = np.asarray(k, dtype=np.float64)
    a = 1.0 - level
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, beta_dist.ppf(a, k, n - k + 1), 0.0)
        hi = np.where(k < n, beta_dist.ppf(1.0 - a, k + 1, n - k), 1.0)
    return np.nan_to_num(lo, nan=0.0), np.nan_to_num(hi, nan=1.0)


def wilson(k: np.ndarray, n: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score bounds (closed form, fast): only to *choose* events, never to bound them."""
    z = float(ndtri(level))
    p = np.asarray(k, dtype=np.float64) / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


@dataclass(frozen=True)
class Event:
    """An output event: ``view(o) ≤ t`` (``upper=False``) or ``> t``, on a centred view or not."""

    threshold: float
    upper: bool
    centre: float | None = None  # None: the output itself; else |o − centre|
    numerator_is_b: bool = True  # which input's probability is the larger one

    def view(self, o: FloatArray) -> FloatArray:
        return o if self.centre is None else np.abs(o - self.centre)

    def count(self, o_sorted_view: FloatArray) -> int:
        i = int(np.searchsorted(o_sorted_view, self.threshold, side="right"))
        return o_sorted_view.size - i if self.upper else i

    def describe(self) -> str:
        v = "o" if self.centre is None else f"|o - {self.centre:.6g}|"
        op = ">" if self.upper else "<="
        who = "D'" if self.numerator_is_b else "D"
        return f"{v} {op} {self.threshold:.6g} (more likely under {who})"


def _loss(p: np.ndarray, q: np.ndarray, kind: str, delta: float) -> np.ndarray:
    """Privacy loss lower bound from p (numerator, lower) and q (denominator, upper)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "mu":
            v = ndtri(np.clip(p, 1e-300, 1.0)) - ndtri(np.clip(q, 1e-300, 1.0))
            return np.where((p > 0) & (q < 1), v, -np.inf)
        v = np.log((p - delta) / q)
        return np.where(p > delta, v, -np.inf)


def _candidates(a: FloatArray, b: FloatArray) -> list[tuple[float | None, FloatArray]]:
    """Threshold grids (per view) from the selection split: quantiles of both samples."""
    both = np.concatenate([a, b])
    qs = np.concatenate([np.linspace(0.0, 1.0, 401), 10.0 ** -np.arange(2, 8, 0.25),
                         1 - 10.0 ** -np.arange(2, 8, 0.25)])  # fmt: skip
    qs = np.clip(qs, 0, 1)
    centre = float(np.median(both))
    out: list[tuple[float | None, FloatArray]] = []
    for c in (None, centre):
        va, vb = (a, b) if c is None else (np.abs(a - c), np.abs(b - c))
        t = np.unique(np.concatenate([np.quantile(va, qs), np.quantile(vb, qs)]))
        out.append((c, t))
    return out


def _best_event(
    a: FloatArray, b: FloatArray, kind: str, delta: float, level: float
) -> Event | None:
    """The event with the largest (approximate) lower bound on the selection split."""
    best: tuple[float, Event] | None = None
    n_a, n_b = a.size, b.size
    for centre, ts in _candidates(a, b):
        va = np.sort(a if centre is None else np.abs(a - centre))
        vb = np.sort(b if centre is None else np.abs(b - centre))
        le_a = np.searchsorted(va, ts, side="right")
        le_b = np.searchsorted(vb, ts, side="right")
        for upper in (False, True):
            ka = n_a - le_a if upper else le_a
            kb = n_b - le_b if upper else le_b
            lo_a, hi_a = wilson(ka, n_a, level)
            lo_b, hi_b = wilson(kb, n_b, level)
            for num_b, val in ((True, _loss(lo_b, hi_a, kind, delta)),
                               (False, _loss(lo_a, hi_b, kind, delta))):  # fmt: skip
                j = int(np.argmax(val))
                if np.isfinite(val[j]) and (best is None or val[j] > best[0]):
                    best = (float(val[j]), Event(float(ts[j]), upper, centre, num_b))
    return None if best is None else best[1]


@dataclass(frozen=True)
class Bound:
    """A lower bound on the privacy loss from one event, on the evaluation split."""

    value: float
    event: str
    p_hat: float
    q_hat: float


def event_lower_bound(a: FloatArray, b: FloatArray, kind: str, delta: float, level: float) -> Bound:
    """Lower bound on ε (``kind="eps"``, at ``delta``) or μ (``kind="mu"``).

    The first half of each sample chooses the event; the second half bounds it with
    Clopper–Pearson at ``level`` per probability (the caller splits its error budget).
    A bound of 0 means no event showed any loss.
    """
    ha, hb = a.size // 2, b.size // 2
    ev = _best_event(a[:ha], b[:hb], kind, delta, level)
    if ev is None:
        return Bound(0.0, "none", math.nan, math.nan)
    ea = np.sort(ev.view(a[ha:]))
    eb = np.sort(ev.view(b[hb:]))
    ka, kb = ev.count(ea), ev.count(eb)
    num, den = (eb, ea) if ev.numerator_is_b else (ea, eb)
    k_num, k_den = (kb, ka) if ev.numerator_is_b else (ka, kb)
    p_lo, _ = clopper_pearson(np.array([k_num]), num.size, level)
    _, q_hi = clopper_pearson(np.array([k_den]), den.size, level)
    v = float(_loss(p_lo, q_hi, kind, delta)[0])
    return Bound(max(v, 0.0), ev.describe(), k_num / num.size, k_den / den.size)


def empirical_tradeoff(
    a: FloatArray, b: FloatArray, points: int = 41
) -> tuple[list[float], list[float]]:
    """Type I and type II errors of threshold tests of D (sample ``a``) against D′ (``b``).

    The test rejects D when the output lies on D′'s side of a threshold t (the side of the
    larger median); t runs over ``points`` quantiles of the pooled sample. μ-GEDP says each
    (x, y) lies on or above the Gaussian trade-off curve y = Φ(Φ⁻¹(1 − x) − μ).
    """
    sign = 1.0 if np.median(b) >= np.median(a) else -1.0
    va, vb = np.sort(sign * a), np.sort(sign * b)
    ts = np.quantile(np.concatenate([va, vb]), np.linspace(0.0, 1.0, points + 2)[1:-1])
    type1 = 1.0 - np.searchsorted(va, ts, side="right") / va.size  # reject D: o > t
    type2 = np.searchsorted(vb, ts, side="right") / vb.size  # accept D under D′
    return type1.tolist(), type2.tolist()


# ----------------------------------------------------------------------------- running


def _statistic(mech: Mechanism, noisy: FloatArray) -> FloatArray:
    """A fixed function of one release's k cell outputs (rows): the output for k = 1."""
    if noisy.shape[1] == 1:
        return noisy[:, 0]
    gamma = getattr(mech, "gamma", None)
    if isinstance(mech, CountMechanism) and gamma is not None:  # Log-Laplace: log scale
        return np.log(np.maximum(noisy + gamma, 1e-300)).sum(axis=1)
    return noisy.sum(axis=1)


def draw(mech: Mechanism, cells: Mapping[str, tuple[float, ...]], n: int,
         source: SeededNoise) -> FloatArray:  # fmt: skip
    """``n`` independent releases of one query with these cells; the statistic of each."""
    k = len(next(iter(cells.values())))
    out = np.empty(n, dtype=np.float64)
    done = 0
    while done < n:
        m = min(CHUNK, n - done)
        cols = {c: np.tile(np.asarray(v, dtype=np.float64), m) for c, v in cells.items()}
        context: dict[str, Any] = {}
        if mech.uses_establishment_incidence:  # every cell its own establishment, fresh factors
            size = m * k
            h = cols["count"]
            context = {INCIDENCE: (np.arange(size), np.arange(size), h),
                       N_ESTABLISHMENTS: size, FACTOR_CACHE: {}}  # fmt: skip
        meas = mech(Cells({c: cols[c] for c in mech.needs}, context), source)
        out[done : done + m] = _statistic(mech, np.asarray(meas.noisy).reshape(m, k))
        done += m
    return out


def run_case(
    case: AuditCase, n: int, scale_factor: float, seed: int, level: float, confidence: float
) -> dict[str, Any]:
    """Audit one pair: N releases on each input, the lower bound, the verdict (one CSV row)."""
    t0 = time.perf_counter()
    mech = case.build()
    cost = mech.cost()
    if cost.mu is not None:
        kind, claimed, delta = "mu", float(cost.mu), 0.0
    elif cost.epsilon is not None:
        kind, claimed, delta = "eps", float(cost.epsilon), float(cost.delta or 0.0)
    else:
        kind, claimed, delta = "none", math.nan, 0.0
    run = mech if kind == "none" else weakened(mech, scale_factor)
    source = SeededNoise(seed)
    a = draw(run, case.cells_a, n, source)
    b = draw(run, case.cells_b, n, source)
    bound = event_lower_bound(a, b, "mu" if kind == "mu" else "eps", delta, level)
    verdict = NO_CLAIM if kind == "none" else VIOLATION if bound.value > claimed else PASS
    e = case.registry_entry
    extra: dict[str, Any] = {}
    if kind == "mu":  # the trade-off of threshold tests on the evaluation halves
        x, y = empirical_tradeoff(a[n // 2 :], b[n // 2 :])
        extra["_tradeoff"] = {"type1": x, "type2": y}
    return {
        **extra,
        "mechanism": e.name, "variant": e.variant, "definition": case.definition,
        "pair": case.pair, "scale_factor": scale_factor if kind != "none" else 1.0,
        "claim_kind": {"eps": "epsilon", "mu": "mu", "none": "none"}[kind],
        "claimed": claimed, "claimed_delta": delta if kind == "eps" else math.nan,
        "lower_bound": bound.value, "confidence": confidence, "pair_confidence": level,
        "n": n, "event": bound.event, "p_hat": bound.p_hat, "q_hat": bound.q_hat,
        "verdict": verdict, "seconds": time.perf_counter() - t0,
    }  # fmt: skip


def _run_job(job: tuple[AuditCase, int, float, int, float, float]) -> dict[str, Any]:
    return run_case(*job)


@dataclass
class AuditResult:
    """The tidy table (one row per pair and scale factor) and the run's metadata."""

    table: pl.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)

    def violations(self, scale_factor: float) -> pl.DataFrame:
        """The rows at ``scale_factor`` whose verdict is a violation."""
        return self.table.filter(
            pl.col("scale_factor") == scale_factor, pl.col("verdict") == VIOLATION
        )


def planned_pairs(
    *,
    quick: bool = False,
    scale_factors: Sequence[float] = (1.0, 0.5),
    mechanisms: Sequence[str] | None = None,
) -> list[tuple[AuditCase, float]]:
    """The (pair, scale factor) jobs of an audit; noise infusion (no claim) only at 1."""
    cases = [c for c in audit_cases(quick)
             if mechanisms is None or c.registry_entry.name in mechanisms]  # fmt: skip
    return [
        (c, float(f))
        for f in scale_factors
        for c in cases
        if f == 1.0 or c.registry_entry.definitions != ("none",)
    ]


def run_audit(
    *,
    n: int = N_FULL,
    quick: bool = False,
    scale_factors: Sequence[float] = (1.0, 0.5),
    confidence: float = 0.95,
    seed: int = 0,
    workers: int | None = None,
    mechanisms: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
    float_attack: bool = True,
    float_cells: int | None = None,
) -> AuditResult:
    """Audit every registered mechanism (or those named) at each scale factor.

    Args:
        n: draws per neighbouring input (half choose the event, half bound it).
        quick: only the pairs marked quick (CI).
        scale_factors: 1 is the mechanism as built; f < 1 a weakened copy (power check).
        confidence: family-wise confidence of the whole table (Bonferroni over its pairs).
        seed: root seed (seeded noise: an experiment, never a release).
        workers: processes (default: the CPUs); 1 runs in this process.
        mechanisms: registry names to audit (default: all).
        progress: called with a label after each finished pair.
        float_attack: also run the floating-point attack on the current sampling layer
            (:mod:`eree.evaluate.float_attack`, on the audit's fine grid
            :data:`AUDIT_GRID`): ``meta["float_attack"]``, one row per registered
            mechanism.
        float_cells: cells per neighbouring truth of the attack (default 5,000 quick,
            20,000 full).
    """
    if not 0 < confidence < 1:
        raise ValueError("confidence must lie in (0, 1)")
    if n < 100:
        raise ValueError("n must be at least 100 draws per input")
    plan = planned_pairs(quick=quick, scale_factors=scale_factors, mechanisms=mechanisms)
    if not plan:
        raise ValueError(f"no registered mechanism among {list(mechanisms or [])}")
    k = len(plan)
    # each pair: two one-sided bounds → error budget (1 − confidence)/(2K) per bound
    level = 1.0 - (1.0 - confidence) / (2 * k)
    seeds = np.random.SeedSequence(seed).generate_state(k, dtype=np.uint64)
    jobs = [(c, n, f, int(s), level, confidence) for (c, f), s in zip(plan, seeds, strict=True)]
    t0 = time.perf_counter()
    workers = workers or os.cpu_count() or 1
    rows: list[dict[str, Any]] = []
    if workers == 1:
        for j in jobs:
            rows.append(_run_job(j))
            if progress:
                progress(f"{rows[-1]['mechanism']} {rows[-1]['definition']}")
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for r in pool.map(_run_job, jobs):
                rows.append(r)
                if progress:
                    progress(f"{r['mechanism']} {r['definition']}")
    tradeoff = [
        {k: r[k] for k in ("mechanism", "pair", "scale_factor", "claimed")} | r.pop("_tradeoff")
        for r in rows
        if "_tradeoff" in r
    ]
    table = pl.DataFrame(rows).select(CSV_COLUMNS)
    attack_rows: list[dict[str, Any]] = []
    if float_attack:
        from eree.evaluate.float_attack import CELLS_FULL, CELLS_QUICK, run_float_attack

        cells = float_cells or (CELLS_QUICK if quick else CELLS_FULL)
        attack_rows = [r.row() for r in run_float_attack(
            n=cells, seed=seed, mechanisms=mechanisms, grid=AUDIT_GRID)]  # fmt: skip
        if progress:
            progress("floating-point attack")
    meta = {
        "n": n, "quick": quick, "scale_factors": list(scale_factors), "confidence": confidence,
        "pair_confidence": level, "pairs": k, "seed": seed, "workers": workers,
        "seconds": time.perf_counter() - t0,
        "tradeoff": tradeoff,
        "float_attack": attack_rows,
        "parameters": {"alpha": ALPHA, "epsilon_per_cell": EPSILON, "theta": THETA, "mu": MU,
                       "gamma_sqrt": GAMMA_SQRT, "gamma_dp": GAMMA_DP},
    }  # fmt: skip
    return AuditResult(table, meta)


# ----------------------------------------------------------------------------- outputs


def summary(result: AuditResult) -> pl.DataFrame:
    """Per mechanism (name, variant), definition and scale factor: the largest lower bound."""
    return (
        result.table.group_by(
            "mechanism", "variant", "definition", "scale_factor", maintain_order=True
        )
        .agg(
            pl.col("claim_kind").first(),
            pl.col("claimed").first(),
            pl.col("claimed_delta").first(),
            pl.col("lower_bound").max().alias("max_lower_bound"),
            pl.len().alias("pairs"),
            (pl.col("verdict") == VIOLATION).sum().alias("violations"),
        )
        .sort("scale_factor", descending=True, maintain_order=True)
    )


#: columns of ``float_attack.csv``
FLOAT_ATTACK_COLUMNS = [
    "mechanism", "variant", "definition", "layer", "pair", "n", "certain", "share", "wrong",
    "neither", "exact", "witnessed", "witness_of", "seconds", "note",
]  # fmt: skip

FLOAT_ATTACK_EXPLANATION = (
    "Floating-point attack (docs/privacy-audit.md): an attacker who knows the sampling "
    "algorithm asks, for each released value, whether the algorithm can produce exactly "
    "that float when the truth is x and when it is its neighbour x′; where only one is "
    "possible the truth is certain, whatever ε or μ says. Each registered mechanism "
    "releases n cells (half under each truth) through the current sampling layer, here on "
    "the audit's fine grid 2^-20; the layer publishes the ideal output rounded to a public "
    "grid, every grid value has positive probability under both truths, so the attack must "
    "find 0 certain answers. 'witnessed' counts (cell, truth) pairs for which the float "
    "search found a bit string that the mechanism, replayed, turns into exactly the "
    "released value. The sampler used before this layer (fa97764) gave from 3.4% "
    "(Estab-Gaussian) to 86% (truncated Laplace) certain answers on 40,000 cells "
    "(benchmarks/float_attack.py)."
)


def float_attack_table(result: AuditResult) -> pl.DataFrame:
    """The floating-point attack's rows (empty when it was not run)."""
    rows = result.meta.get("float_attack") or []
    if not rows:
        return pl.DataFrame(schema={c: pl.Utf8 for c in FLOAT_ATTACK_COLUMNS})
    return pl.DataFrame(rows, infer_schema_length=None).select(FLOAT_ATTACK_COLUMNS)


def _figure(result: AuditResult, path: Path) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = result.table.filter(pl.col("claim_kind") != "none")
    if t.is_empty():
        return None
    factors = sorted(t["scale_factor"].unique().to_list(), reverse=True)
    labels = [
        f"{r['mechanism']}{'/' + r['variant'] if r['variant'] else ''} {r['definition']}"
        for r in t.filter(pl.col("scale_factor") == factors[0]).iter_rows(named=True)
    ]
    uniq = list(dict.fromkeys(labels))
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(uniq) + 1.5))
    for i, f in enumerate(factors):
        s = t.filter(pl.col("scale_factor") == f)
        lab = [f"{r['mechanism']}{'/' + r['variant'] if r['variant'] else ''} {r['definition']}"
               for r in s.iter_rows(named=True)]  # fmt: skip
        y = [uniq.index(x) + (i - (len(factors) - 1) / 2) * 0.2 for x in lab]
        ratio = (s["lower_bound"] / s["claimed"]).to_numpy()
        ax.scatter(ratio, y, s=14, label=f"scale factor {f:g}", zorder=3)
    ax.axvline(1.0, color="red", lw=1, ls="--", label="claim")
    ax.set_yticks(range(len(uniq)))
    ax.set_yticklabels(uniq, fontsize=7)
    ax.set_xlabel("lower confidence bound / claimed (ε or μ); > 1 is a violation")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _html_table(df: pl.DataFrame) -> str:
    import html

    from eree.htmlpage import table

    rows = []
    for r in df.iter_rows():
        tds = []
        for v in r:
            s = ("—" if math.isnan(v) else f"{v:.4g}") if isinstance(v, float) else str(v)
            cell = html.escape(s)
            tds.append(f"<b style='color:#b00'>{cell}</b>" if s == VIOLATION else cell)
        rows.append(tds)
    return table(df.columns, rows, raw=True, left=len(df.columns))


def _tradeoff_figure(result: AuditResult, path: Path) -> Path | None:
    """Empirical trade-off curves of the GEDP mechanisms against the claimed ones.

    Per GEDP mechanism: the empirical trade-off of threshold tests on its first pair, per
    scale factor, against the claimed Gaussian trade-off curve Φ(Φ⁻¹(1 − x) − μ).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy.stats import norm

    curves = result.meta.get("tradeoff", [])
    if not curves:
        return None
    mechs = list(dict.fromkeys(c["mechanism"] for c in curves))
    fig, axes = plt.subplots(1, len(mechs), figsize=(3.6 * len(mechs), 3.5), squeeze=False)
    x = np.linspace(1e-4, 1 - 1e-4, 400)
    for ax, mech in zip(axes[0], mechs, strict=True):
        mine = [c for c in curves if c["mechanism"] == mech]
        first = mine[0]["pair"]
        for c in mine:
            if c["pair"] == first:
                ax.plot(
                    c["type1"], c["type2"], ".", ms=4, label=f"scale factor {c['scale_factor']:g}"
                )
        mu = mine[0]["claimed"]
        ax.plot(x, norm.cdf(norm.ppf(1 - x) - mu), "r-", lw=1, label=f"claimed μ = {mu:g}")
        ax.set_title(f"{mech}: {first}", fontsize=7)
        ax.set_xlabel("type I error", fontsize=8)
        ax.set_ylabel("type II error", fontsize=8)
        ax.legend(fontsize=6)
    fig.suptitle("GEDP: empirical trade-off of threshold tests vs the claimed curve "
                 "(points below the curve contradict the claim)", fontsize=8)  # fmt: skip
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _img(path: Path) -> str:
    from eree.htmlpage import img_file

    return img_file(path)


def html_report(result: AuditResult, figures: Sequence[Path]) -> str:
    """The audit's page: method, summary per mechanism, every pair, the figures."""
    from eree.htmlpage import page as html_page

    m = result.meta
    parts = [
        "<h2>Empirical privacy audit of every registered mechanism</h2>"
        f"<p>{m['pairs']} neighbouring pairs, N = {m['n']:,} releases per input "
        f"(half choose the event, half bound it), family-wise confidence "
        f"{m['confidence']:.0%} (each probability bounded by Clopper–Pearson at "
        f"{m['pair_confidence']:.6f}). Seed {m['seed']} (seeded randomness: an experiment, "
        f"NOT FOR PUBLICATION). Wall time {m['seconds']:.1f} s on {m['workers']} "
        "process(es).</p><p>A lower bound above the claimed ε (at the claimed δ) or μ is a "
        "violation at that confidence; a bound below the claim shows only that these tests "
        "found none. Scale factor f &lt; 1 audits a copy whose noise scale is f times the "
        "mechanism's, against the original claim (the power check).</p>"
    ]
    for f in sorted(m["scale_factors"], reverse=True):
        v = result.violations(f)
        mechs = v.select("mechanism", "variant").unique().height
        parts.append(f"<p>Scale factor {f:g}: {v.height} violating pairs in {mechs} "
                     "mechanism(s).</p>")  # fmt: skip
    parts.extend(_img(p) for p in figures)
    parts.append("<h3>Per mechanism and definition</h3>" + _html_table(summary(result)))
    cols = ["mechanism", "variant", "definition", "pair", "scale_factor", "claimed",
            "claimed_delta", "lower_bound", "event", "verdict"]  # fmt: skip
    parts.append("<h3>Every pair</h3>" + _html_table(result.table.select(cols)))
    fa = float_attack_table(result)
    if fa.height:
        import html

        shown = fa.select(
            "mechanism", "variant", "definition", "pair",
            pl.format("{} of {}", pl.col("certain").cast(pl.Utf8).fill_null("—"),
                      pl.col("n").cast(pl.Utf8).fill_null("—")).alias("certain answers"),
            pl.format("{} of {}", pl.col("witnessed").cast(pl.Utf8).fill_null("—"),
                      pl.col("witness_of").cast(pl.Utf8).fill_null("—")).alias("witnessed"),
            "note",
        )  # fmt: skip
        head = "<h3>Floating-point attack (current sampling layer)</h3>"
        text = f"<p>{html.escape(FLOAT_ATTACK_EXPLANATION)}</p>"
        parts.append(head + text + _html_table(shown))
    return html_page("eree — privacy audit", parts)


def write_outputs(result: AuditResult, out_dir: Path, *, report: bool = True) -> dict[str, Path]:
    """Write the privacy audit's outputs.

    ``privacy_audit.csv``, ``summary.csv``, ``run.json``, ``tradeoff.json``,
    ``float_attack.csv`` (when the floating-point attack ran), the figures and
    ``report.html``.
    """
    import json

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    p = out_dir / "privacy_audit.csv"
    result.table.write_csv(p)
    paths["results"] = p
    p = out_dir / "summary.csv"
    summary(result).write_csv(p)
    paths["summary"] = p
    fa = float_attack_table(result)
    if fa.height:
        p = out_dir / "float_attack.csv"
        fa.write_csv(p)
        paths["float_attack"] = p
    p = out_dir / "run.json"
    meta = {k: v for k, v in result.meta.items() if k not in ("tradeoff", "float_attack")}
    p.write_text(json.dumps(meta, indent=2, default=str))
    paths["run"] = p
    p = out_dir / "tradeoff.json"
    p.write_text(json.dumps(result.meta.get("tradeoff", []), indent=1))
    paths["tradeoff"] = p
    if report:
        figs = [
            f
            for f in (
                _figure(result, out_dir / "figures" / "privacy_audit.png"),
                _tradeoff_figure(result, out_dir / "figures" / "gedp_tradeoff.png"),
            )
            if f is not None
        ]
        paths.update({f"figure:{f.stem}": f for f in figs})
        p = out_dir / "report.html"
        p.write_text(html_report(result, figs))
        paths["report"] = p
    return paths
