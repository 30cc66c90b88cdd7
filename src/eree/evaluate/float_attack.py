r"""The floating-point attack: published values reachable under one neighbour only.

An attacker who knows the sampling algorithm (eree is open source) can ask of a published
float y: *could the algorithm have produced exactly y if the truth were x, and if it were
x′?* (x, x′ neighbours). Where y is reachable under one of them only, the truth is known
for certain — whatever the privacy claim says about the ideal, real-number mechanism
(Mironov 2012's least-significant-bit attack, in its exact form). This module runs that
attack on every registered mechanism (:data:`eree.mechanisms.registry.REGISTRY`) and
counts the **certain answers**: published cells for which exactly one of the two
neighbouring truths is possible.

**Two samplers.**

* *legacy*: the sampler eree used until commit f8d116d (kept here, as the attacker's
  model, from ``git show fa97764:src/eree/mechanisms/noise.py``): 64 random bits →
  :math:`u = (k+\frac12)/2^{52}`, k = bits >> 12 → inverse CDF in float64 (Laplace
  :math:`-b\,\mathrm{sgn}(u-\frac12)\,\mathrm{log1p}(-2|u-\frac12|)`, Gaussian
  :math:`\sigma\,\mathrm{ndtri}(u)`, Smooth Gamma by rejection from the Cauchy proposal
  :math:`\tan(\pi(u-\frac12))`) → x + noise in float64, then the mechanism's float
  post-processing (Log-Laplace: :math:`e^z-\gamma` and the bias correction; ψ: the
  Thm 6.6 estimate).
* *current*: :mod:`eree.mechanisms.sampling`, which publishes :math:`\mathrm{round}_r`
  (the ideal output) on a public power-of-two grid r.

**Reachability, legacy sampler (exact).** Given the truth x, the published value is
:math:`P(k) = \mathrm{post}(\mathrm{fl}(c_x + \mathrm{fl}(b_x N(k))))` for one 52-bit k.
Every map in that chain is monotone in k (the inverse CDFs and tan are increasing, IEEE
rounding is monotone), so y is reachable iff :math:`P(k^*) = y` for
:math:`k^* = \min\{k : P(k) \ge y\}`, which bisection finds in 52 steps; where ``post`` is
not monotone (the ψ estimate ω² − σ² turns at ω = 0) the k-range is split at the turning
point and each piece is searched in its own direction. The float formula is evaluated
exactly as the old code did (numpy float64, vectorised), and k* is checked together with
its neighbours k* ± 8, so an isolated non-monotone step of the maths library cannot hide a
reachable value. Smooth Gamma: a float is reachable through the rejection sampler iff
some proposal k gives it and that proposal can be accepted, i.e. its float acceptance
probability exceeds the smallest uniform 2⁻⁵³ (any proposal could be accepted otherwise).

*Two noise terms* (the workshop Smooth Laplace and Smooth Gamma: n + η′ first, then the
smooth term, two independent 52-bit uniforms) are not searched exactly — 2¹⁰⁴ bit strings
and a dense set of intermediate floats. The search treats the intermediate n + η′ as any
float, which over-approximates both reachable sets: every "certain" answer it reports is
still proven, so its count is a lower bound (it finds none), flagged ``exact = False``.

**Reachability, current layer (exact).** A published y is reachable under x iff it is the
mechanism's public post-processing of a grid multiple ω = m·r (checked by recomputing
the post-processing of the candidate grid values near its inverse and comparing floats
exactly) and the ideal law puts positive mass on the grid cell
:math:`[\omega - r/2, \omega + r/2)`, i.e. the cell meets the support of
:math:`c_x + \sum_t b_t W_t`. The laws (Laplace, Gaussian, Smooth Gamma) have full support,
so every grid multiple is reachable under both neighbours and the attack must find no
certain answer; the check is run, not assumed (a bounded law, a zero scale or a value off
the grid would show up).

**The old-style search against the current layer.** The same question asked of the
current layer's *float* algorithm: for each published value and each neighbour, the
search inverts the layer's fast-path float maps (Laplace :math:`\pm(-\ln\hat V)`,
Box–Muller :math:`\sqrt{-2\ln\hat V_1}\cos 2\pi\hat V_2` with :math:`\hat V_2` chosen
so that the cosine is ±1, the Smooth Gamma proposal :math:`\pm\cot(\pi\hat P)` with an
accepting :math:`\hat V`) to 64-bit words aimed at the grid value, then replays those
words through the mechanism object itself (``mechanism(cells, source)``, the call a
release makes) and compares the published float. A match is a bit string that produces
y under that truth: a witness. ``witnessed`` counts them; it must equal the number of
(cell, neighbour) pairs, i.e. the search finds no separation.

**What is attacked.** The value a release publishes for the statistic (the
``Measurement.estimate`` written to the table): the count, the Log-Laplace estimate
n̂, the ψ-mechanism's x̃. :func:`eree.evaluate.float_attack_release.run_release_attack`
reads the current layer's values from the published tables of a real release
(:func:`eree.release.protect.protect` on generated data, the mechanism objects taken from
the release's built plan).

**Neighbours.** Counts: one workplace alone in its block with 10 matching workers or 11
(α = 0.1 neighbours with x_v = count, an edge-DP job, a node-DP establishment of one job);
ε = 2 per cell, θ = 50. GEDP (μ = 1): Estab-Gaussian ψ = x, γ = 1, values 100 or 101;
ψ, pnc and the adaptive mechanism ψ = √x, γ = 1, values 100 or 121 (√ moves by γ), pnc
and adaptive conditioned on the group's public bound u* (and, for adaptive, on the
public choice). Noise infusion has no formal guarantee and no neighbouring claim to
break: its supports differ between neighbours by design (the privacy audit shows it);
it is reported as not applicable.

**Limits.** The attacker's float model must be the victim's: the same numpy and maths
library (the legacy shares are measured with this machine's numpy). Only the released
statistic is attacked, not its published std or CI (which, for the current layer, are
functions of the same grid value). Certain answers are counted per cell; a real release
has many cells per establishment, which only helps an attacker of the legacy sampler.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from eree.evaluate.legacy_sampler import (
    legacy_accept,
    legacy_noise,
    legacy_smooth_gamma,
    legacy_uniform,
    legacy_uniforms,
)
from eree.mechanisms.adaptive import AdaptiveGroupBy
from eree.mechanisms.base import Cells, Mechanism
from eree.mechanisms.baselines import EdgeLaplace, TruncatedLaplace
from eree.mechanisms.er_ee import LogLaplace, SmoothGamma, SmoothLaplace
from eree.mechanisms.gedp import (
    EstabGaussian,
    Pnc,
    PsiMechanism,
    pnc_sensitivity,
    pnc_sensitivity_upper,
)
from eree.mechanisms.noise import FloatArray, NoiseSource, SeededNoise
from eree.mechanisms.noise_infusion import NoiseInfusion
from eree.mechanisms.registry import REGISTRY, Entry
from eree.mechanisms.workshop import (
    WorkshopLogLaplace,
    WorkshopSmoothGamma,
    WorkshopSmoothLaplace,
)
from eree.privacy.neighbors import DPNeighbor, LogShift, NeighborFunction, SqrtShift

__all__ = [
    "AttackResult",
    "FloatModel",
    "Scenario",
    "current_reachable",
    "current_witnesses",
    "describe",
    "legacy_reachable",
    "legacy_release",
    "run_float_attack",
    "scenario",
    "table_lines",
]

#: α, ε per cell and θ of the count mechanisms under attack
ALPHA = 0.1
EPSILON = 2.0
THETA = 50.0
#: μ and γ of the GEDP mechanisms under attack
MU = 1.0
GAMMA = 1.0
#: the neighbouring truths: counts (one workplace alone in its block), GEDP values
COUNT_A, COUNT_B = 10.0, 11.0
DP_A, DP_B = 100.0, 101.0  # ψ = x, γ = 1
SQRT_A, SQRT_B = 100.0, 121.0  # ψ = √x, γ = 1
#: the public bound u* of the direct pnc scenario (no clipping of 100 or 121)
BOUND = 400.0
#: cells per neighbour (twice as many cells are attacked) of the full and quick runs
CELLS_FULL = 20_000
CELLS_QUICK = 5_000

_TWO52 = float(2**52)
_KMAX = _TWO52 - 1.0
#: the legacy sampler's smallest uniform (k = 0): a proposal is acceptable iff its
#: acceptance probability exceeds it
_U_MIN = 0.5 / _TWO52
#: how many neighbours of the bisection point are compared exactly
_WINDOW = 8

#: noise laws with full support: (inf of the support, sup of the support) of W
_SUPPORT = {
    "laplace": (-math.inf, math.inf),
    "gaussian": (-math.inf, math.inf),
    "smooth_gamma": (-math.inf, math.inf),
}


# =============================================================================== models


@dataclass(frozen=True)
class Term:
    """One noise term: the law of W and its float scale b per cell."""

    law: str
    scale: FloatArray


@dataclass(frozen=True)
class Computation:
    """What the algorithm computes for one candidate truth, per cell (floats).

    Attributes:
        centre: the float the noise is added to (count, ln(n + γ), ψ(x), clipped sum).
        terms: the noise terms, in the order they are drawn.
        grid: the current layer's public grid per cell (unused by the legacy sampler).
    """

    centre: FloatArray
    terms: tuple[Term, ...]
    grid: FloatArray


class FloatModel:
    """A registered mechanism as the attacker sees it: centre, noise, grid, post-processing.

    Built by :func:`describe` from the mechanism object's public parameters. ``layer`` is
    ``"legacy"`` (the floats fa97764 computed) or ``"current"`` (the floats the sampling
    layer starts from; its output is exact on the grid).
    """

    def __init__(self, mech: Mechanism) -> None:
        self.mech = mech

    # -- per mechanism -------------------------------------------------------------
    def computation(self, cells: Mapping[str, FloatArray], layer: str) -> Computation:
        """Centre, terms and grid under the truth ``cells``."""
        raise NotImplementedError

    def publish(self, z: FloatArray, cells: Mapping[str, FloatArray]) -> FloatArray:
        """The published value from the noise-space output z (public post-processing)."""
        return np.asarray(z, dtype=np.float64)

    def turning(self, cells: Mapping[str, FloatArray]) -> FloatArray:
        """Per cell, the z where :meth:`publish` turns from decreasing to increasing.

        nan where it is non-decreasing everywhere.
        """
        return np.full(_n(cells), np.nan)

    def to_space(self, y: FloatArray, cells: Mapping[str, FloatArray]) -> list[FloatArray]:
        """Approximate noise-space values whose post-processing may be ``y`` (candidates)."""
        return [np.asarray(y, dtype=np.float64)]

    # -- shared --------------------------------------------------------------------
    @property
    def grid(self) -> float:
        """The mechanism's public grid."""
        return float(self.mech.grid)  # type: ignore[attr-defined]

    def _grid(self, cells: Mapping[str, FloatArray]) -> FloatArray:
        return np.full(_n(cells), self.grid)


def _n(cells: Mapping[str, FloatArray]) -> int:
    return int(np.asarray(next(iter(cells.values()))).size)


def _col(cells: Mapping[str, FloatArray], name: str) -> FloatArray:
    return np.asarray(cells[name], dtype=np.float64)


class _Additive(FloatModel):
    """Counts (and sums): published = fl(n + noise), one or two terms."""

    def __init__(self, mech: Mechanism, column: str = "count") -> None:
        super().__init__(mech)
        self.column = column

    def terms(self, cells: Mapping[str, FloatArray], layer: str) -> tuple[Term, ...]:
        raise NotImplementedError

    def computation(self, cells: Mapping[str, FloatArray], layer: str) -> Computation:
        return Computation(_col(cells, self.column), self.terms(cells, layer), self._grid(cells))


class _Fixed(_Additive):
    """Edge-DP Laplace, node-DP truncated Laplace: Lap(scale), the public scale."""

    def terms(self, cells: Mapping[str, FloatArray], layer: str) -> tuple[Term, ...]:
        return (Term("laplace", np.full(_n(cells), float(self.mech.scale))),)  # type: ignore[attr-defined]


class _Smooth(_Additive):
    """SIGMOD Smooth Laplace (2S/ε) and Smooth Gamma (5S/ε₁), S = max(αx_v, 1)."""

    def __init__(self, mech: Mechanism, law: str) -> None:
        super().__init__(mech)
        self.law = law

    def terms(self, cells: Mapping[str, FloatArray], layer: str) -> tuple[Term, ...]:
        # both layers compute the float scale the same way (noise_scale; smooth_scale_term)
        b = np.asarray(self.mech.noise_scale(_col(cells, "x_v")), dtype=np.float64)  # type: ignore[attr-defined]
        return (Term(self.law, np.broadcast_to(b, (_n(cells),)).copy()),)


class _WorkshopSmooth(_Additive):
    """Workshop Alg 2 / 3: n + Lap(1/ε) + (factor·S/ε)·W, two terms.

    S as the object says: max(αx_V, 1), or αx_V as printed. The legacy path adds them one
    after the other, in float, as fa97764 did (its S was the printed αx_V; the scale
    changes nothing here: two terms are over-approximated).
    """

    def __init__(self, mech: Mechanism, law: str) -> None:
        super().__init__(mech)
        self.law = law

    def terms(self, cells: Mapping[str, FloatArray], layer: str) -> tuple[Term, ...]:
        n = _n(cells)
        first = np.full(n, 1.0 / float(self.mech.epsilon_cell))  # type: ignore[attr-defined]
        smooth = np.asarray(self.mech.smooth_scale(_col(cells, "x_v")), dtype=np.float64)  # type: ignore[attr-defined]
        return (Term("laplace", first), Term(self.law, np.broadcast_to(smooth, (n,)).copy()))


class _LogLaplace(FloatModel):
    """Log-Laplace (both variants): z = ln(n + γ) + Lap(λ); published n̂ from ñ = e^z − γ."""

    def computation(self, cells: Mapping[str, FloatArray], layer: str) -> Computation:
        m = self.mech
        n = _col(cells, "count")
        alpha = float(m.alpha)  # type: ignore[attr-defined]
        if layer == "legacy":  # fa97764: np.log(n + gamma), Lap(lam)
            centre = np.log(n + float(m.gamma))  # type: ignore[attr-defined]
            b = float(m.lam)  # type: ignore[attr-defined]
        else:  # log_shift_centre, log_laplace_scale_term
            centre = np.log(n + getattr(m, "additive", 1.0) / alpha)
            b = 2.0 * math.log1p(alpha) / float(m.epsilon_cell)  # type: ignore[attr-defined]
        return Computation(centre, (Term("laplace", np.full(n.size, b)),), self._grid(cells))

    def publish(self, z: FloatArray, cells: Mapping[str, FloatArray]) -> FloatArray:
        gamma, lam = float(self.mech.gamma), float(self.mech.lam)  # type: ignore[attr-defined]
        noisy = np.exp(np.asarray(z, dtype=np.float64)) - gamma
        return (noisy + gamma) * (1.0 - lam * lam) - gamma if lam < 1 else noisy

    def to_space(self, y: FloatArray, cells: Mapping[str, FloatArray]) -> list[FloatArray]:
        gamma, lam = float(self.mech.gamma), float(self.mech.lam)  # type: ignore[attr-defined]
        y = np.asarray(y, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            if lam < 1:
                return [np.log((y + gamma) / (1.0 - lam * lam))]
            return [np.log(y + gamma)]


def psi_publish(neighbor: NeighborFunction, sigma: float, z: FloatArray) -> FloatArray:
    from eree.mechanisms.estimators import psi_estimates

    return np.asarray(psi_estimates(np.asarray(z, dtype=np.float64), neighbor, sigma).estimate)


def _psi_turning(neighbor: NeighborFunction) -> float:
    return 0.0 if isinstance(neighbor, SqrtShift) else math.nan


def psi_space(neighbor: NeighborFunction, sigma: float, y: FloatArray) -> list[FloatArray]:
    y = np.asarray(y, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        if isinstance(neighbor, SqrtShift):  # x̃ = ω² − σ² − a
            w = np.sqrt(np.maximum(y + sigma * sigma + neighbor.a, 0.0))
            return [w, -w]
        if isinstance(neighbor, LogShift) and neighbor.a > 0:  # x̃ = exp(ω − σ²/2) − a
            return [np.log(y + neighbor.a) + sigma * sigma / 2]
        if isinstance(neighbor, DPNeighbor):
            return [y]
        return [np.asarray(neighbor.psi(np.maximum(y, 0.0)), dtype=np.float64)]


class _Psi(FloatModel):
    """ψ-mechanism: ω = ψ(x) + N(0, σ²), σ = γ/μ; published x̃ (Thm 6.6)."""

    def computation(self, cells: Mapping[str, FloatArray], layer: str) -> Computation:
        m: PsiMechanism = self.mech  # type: ignore[assignment]
        centre = np.asarray(m.neighbor.psi(_col(cells, "value")), dtype=np.float64)
        return Computation(centre, (Term("gaussian", np.full(centre.size, m.sigma)),),
                           self._grid(cells))  # fmt: skip

    def publish(self, z: FloatArray, cells: Mapping[str, FloatArray]) -> FloatArray:
        m: PsiMechanism = self.mech  # type: ignore[assignment]
        return psi_publish(m.neighbor, m.sigma, z)

    def turning(self, cells: Mapping[str, FloatArray]) -> FloatArray:
        return np.full(_n(cells), _psi_turning(self.mech.neighbor))  # type: ignore[attr-defined]

    def to_space(self, y: FloatArray, cells: Mapping[str, FloatArray]) -> list[FloatArray]:
        m: PsiMechanism = self.mech  # type: ignore[assignment]
        return psi_space(m.neighbor, m.sigma, y)


class _EstabGaussian(_Additive):
    """Estab-Gaussian: value + N(0, (Δ/μ)²)."""

    def __init__(self, mech: Mechanism) -> None:
        super().__init__(mech, "value")

    def terms(self, cells: Mapping[str, FloatArray], layer: str) -> tuple[Term, ...]:
        m: EstabGaussian = self.mech  # type: ignore[assignment]
        # fa97764: sd = sensitivity/μ without the round-up past float error (equal for ψ = x)
        sd = m.neighbor.sensitivity(m.gamma) / m.mu if layer == "legacy" else m.sd
        return (Term("gaussian", np.full(_n(cells), float(sd))),)


def _pnc_sd(mech: Any, bound: FloatArray, layer: str) -> FloatArray:
    if layer == "legacy":  # fa97764: pnc_sensitivity, no round-up
        d = pnc_sensitivity(bound, mech.neighbor, mech.gamma)
    else:
        d = pnc_sensitivity_upper(bound, mech.neighbor, mech.gamma)
    return np.asarray(d, dtype=np.float64) / mech.mu


class _Pnc(_Additive):
    """pnc: clipped sum + N(0, (Δ(u*)/μ)²), the public bound u* given."""

    def __init__(self, mech: Mechanism) -> None:
        super().__init__(mech, "clipped")

    def terms(self, cells: Mapping[str, FloatArray], layer: str) -> tuple[Term, ...]:
        return (Term("gaussian", _pnc_sd(self.mech, _col(cells, "bound"), layer)),)


class _Adaptive(FloatModel):
    """Adaptive: per group pnc (clipped + N(0,(Δ/μ)²), grid r) or ψ (ψ(x) + N(0,σ²), ψ grid)."""

    def _choice(self, cells: Mapping[str, FloatArray]) -> NDArray[np.bool_]:
        m: AdaptiveGroupBy = self.mech  # type: ignore[assignment]
        return np.asarray(m.choose(_col(cells, "bound"), _col(cells, "identity_sum"),
                                   _col(cells, "identity_variance")))  # fmt: skip

    def computation(self, cells: Mapping[str, FloatArray], layer: str) -> Computation:
        m: AdaptiveGroupBy = self.mech  # type: ignore[assignment]
        use_pnc = self._choice(cells)
        centre = np.where(
            use_pnc,
            _col(cells, "clipped"),
            np.asarray(m.neighbor.psi(_col(cells, "value")), dtype=np.float64),
        )
        scale = np.where(use_pnc, _pnc_sd(m, _col(cells, "bound"), layer), m.sigma)
        grid = np.where(use_pnc, float(m.grid), float(m.psi_grid))  # type: ignore[arg-type]
        return Computation(centre, (Term("gaussian", scale),), grid)

    def publish(self, z: FloatArray, cells: Mapping[str, FloatArray]) -> FloatArray:
        m: AdaptiveGroupBy = self.mech  # type: ignore[assignment]
        z = np.asarray(z, dtype=np.float64)
        return np.where(self._choice(cells), z, psi_publish(m.neighbor, m.sigma, z))

    def turning(self, cells: Mapping[str, FloatArray]) -> FloatArray:
        t = _psi_turning(self.mech.neighbor)  # type: ignore[attr-defined]
        return np.where(self._choice(cells), np.nan, t)

    def to_space(self, y: FloatArray, cells: Mapping[str, FloatArray]) -> list[FloatArray]:
        m: AdaptiveGroupBy = self.mech  # type: ignore[assignment]
        use_pnc = self._choice(cells)
        y = np.asarray(y, dtype=np.float64)
        return [np.where(use_pnc, y, c) for c in psi_space(m.neighbor, m.sigma, y)]


def describe(mech: Mechanism) -> FloatModel | None:
    """The attacker's model of a registered mechanism, or None (noise infusion: no claim).

    Raises:
        TypeError: a registered mechanism this module has no model for (add one).
    """
    if isinstance(mech, EdgeLaplace | TruncatedLaplace):
        col = "count_truncated" if isinstance(mech, TruncatedLaplace) else "count"
        return _Fixed(mech, col)
    if isinstance(mech, LogLaplace | WorkshopLogLaplace):
        return _LogLaplace(mech)
    if isinstance(mech, SmoothLaplace) and not isinstance(mech, WorkshopSmoothLaplace):
        return _Smooth(mech, "laplace")
    if isinstance(mech, SmoothGamma):
        return _Smooth(mech, "smooth_gamma")
    if isinstance(mech, WorkshopSmoothLaplace):
        return _WorkshopSmooth(mech, "laplace")
    if isinstance(mech, WorkshopSmoothGamma):
        return _WorkshopSmooth(mech, "smooth_gamma")
    if isinstance(mech, EstabGaussian):
        return _EstabGaussian(mech)
    if isinstance(mech, PsiMechanism):
        return _Psi(mech)
    if isinstance(mech, AdaptiveGroupBy):
        return _Adaptive(mech)
    if isinstance(mech, Pnc):
        return _Pnc(mech)
    if isinstance(mech, NoiseInfusion):  # no formal guarantee: nothing to break
        return None
    raise TypeError(f"no floating-point attack model for {type(mech).__name__}")


# =============================================================================== legacy


def legacy_release(model: FloatModel, cells: Mapping[str, FloatArray],
                   source: NoiseSource) -> FloatArray:  # fmt: skip
    """The values fa97764 would have published for ``cells`` (the victim of the attack)."""
    comp = model.computation(cells, "legacy")
    v = comp.centre.copy()
    for t in comp.terms:
        if t.law == "smooth_gamma":
            v = v + t.scale * legacy_smooth_gamma(source, v.size)
        else:
            v = v + legacy_noise(t.law, legacy_uniforms(source, v.size), t.scale)
    return model.publish(v, cells)


def _first_at_least(
    f: Callable[[FloatArray], FloatArray], y: FloatArray, lo: FloatArray, hi: FloatArray,
    sign: float,
) -> FloatArray:  # fmt: skip
    """Per cell the smallest k in [lo, hi) with sign·f(k) ≥ sign·y (hi if none).

    f is monotone in the direction ``sign`` on [lo, hi) and is evaluated on whole arrays.
    """
    lo, hi = lo.copy(), hi.copy()
    for _ in range(60):
        active = lo < hi
        if not active.any():
            break
        mid = np.floor((lo + hi) / 2.0)
        k = np.clip(np.where(active, mid, lo), 0.0, _KMAX)
        with np.errstate(invalid="ignore"):
            ge = sign * f(k) >= sign * y
        hi = np.where(active & ge, mid, hi)
        lo = np.where(active & ~ge, mid + 1.0, lo)
    return hi


def legacy_reachable(
    model: FloatModel, cells: Mapping[str, FloatArray], y: FloatArray
) -> tuple[NDArray[np.bool_], bool]:
    """Per cell: can the legacy sampler publish exactly ``y`` under the truth ``cells``?

    Returns (reachable, exact). Two-term mechanisms are over-approximated (all True,
    exact False; module docstring).
    """
    comp = model.computation(cells, "legacy")
    y = np.asarray(y, dtype=np.float64)
    if len(comp.terms) != 1:
        return np.ones(y.size, dtype=bool), False
    (term,) = comp.terms
    c = comp.centre

    def space(k: FloatArray) -> FloatArray:
        return c + legacy_noise(term.law, legacy_uniform(k), term.scale)

    def published(k: FloatArray) -> FloatArray:
        return model.publish(space(k), cells)

    def hits(k: FloatArray, lo: FloatArray, hi: FloatArray) -> NDArray[np.bool_]:
        ok = (k >= lo) & (k < hi)
        kk = np.clip(k, 0.0, _KMAX)
        ok &= published(kk) == y
        if term.law == "smooth_gamma":  # the proposal must be acceptable
            ok &= legacy_accept(np.tan(math.pi * (legacy_uniform(kk) - 0.5))) > _U_MIN
        return ok

    n = y.size
    zero, top = np.zeros(n), np.full(n, _TWO52)
    turn = np.asarray(model.turning(cells), dtype=np.float64)
    has_turn = np.isfinite(turn)
    k_turn = zero.copy()
    if has_turn.any():  # the first k whose noise-space value reaches the turning point
        k_turn = np.where(has_turn, _first_at_least(space, np.where(has_turn, turn, 0.0),
                                                    zero, top, 1.0), 0.0)  # fmt: skip
    reach = np.zeros(n, dtype=bool)
    for lo, hi, sign in ((k_turn, top, 1.0), (zero, k_turn, -1.0)):
        if not (lo < hi).any():
            continue
        k = _first_at_least(published, y, lo, hi, sign)
        for d in range(-_WINDOW, _WINDOW + 1):
            reach |= hits(k + d, lo, hi)
    return reach, True


# =============================================================================== current


def _candidates(model: FloatModel, cells: Mapping[str, FloatArray],
                y: FloatArray) -> list[FloatArray]:  # fmt: skip
    """Grid multiples ω (nan where none) whose public post-processing is exactly y."""
    r = model.computation(cells, "current").grid
    out = []
    for approx in model.to_space(y, cells):
        with np.errstate(invalid="ignore"):
            base = np.rint(approx / r)
        for j in (-2.0, -1.0, 0.0, 1.0, 2.0):
            w = (base + j) * r
            ok = np.isfinite(w)
            with np.errstate(invalid="ignore", over="ignore"):
                ok &= model.publish(np.where(ok, w, 0.0), cells) == y
            out.append(np.where(ok, w, np.nan))
    return out


def _positive_mass(comp: Computation, w: FloatArray) -> NDArray[np.bool_]:
    """Does the ideal law of c + Σ b_t W_t put positive mass on [w − r/2, w + r/2)?"""
    lo = comp.centre.copy()
    hi = comp.centre.copy()
    for t in comp.terms:
        a, b = _SUPPORT[t.law]
        pos = t.scale > 0
        with np.errstate(invalid="ignore"):
            lo = np.where(pos, lo + t.scale * a, lo)
            hi = np.where(pos, hi + t.scale * b, hi)
    half = comp.grid / 2.0
    spread = lo < hi
    meets = (lo < w + half) & (hi > w - half)
    point = (lo >= w - half) & (lo < w + half)
    return np.where(spread, meets, point) & np.isfinite(w)


def current_reachable(
    model: FloatModel, cells: Mapping[str, FloatArray], y: FloatArray
) -> tuple[NDArray[np.bool_], FloatArray]:
    """Per cell: does the current layer publish ``y`` with positive probability?

    Under the truth ``cells``. Returns (reachable, the grid value ω reached, nan if none).
    """
    y = np.asarray(y, dtype=np.float64)
    comp = model.computation(cells, "current")
    reach = np.zeros(y.size, dtype=bool)
    omega = np.full(y.size, np.nan)
    for w in _candidates(model, cells, y):
        ok = _positive_mass(comp, w) & ~reach
        omega = np.where(ok, w, omega)
        reach |= ok
    return reach, omega


class _Replay(NoiseSource):
    """Chosen 64-bit words, then a seeded generator (a witness bit string, replayed)."""

    mode = "seeded"

    def __init__(self, words: NDArray[np.uint64], seed: int = 0) -> None:
        self._words = np.asarray(words, dtype=np.uint64)
        self._at = 0
        self._rest = SeededNoise(seed)

    def bits(self, size: int) -> NDArray[np.uint64]:
        take = self._words[self._at : self._at + size]
        self._at += take.size
        if take.size == size:
            return take.copy()
        return np.concatenate([take, self._rest.bits(size - take.size)])


_TOP63 = 2.0**63 - 1024.0  # the largest float below 2⁶³
_TOP64 = 2.0**64 - 2048.0  # the largest float below 2⁶⁴


def _word(x: FloatArray, top: float) -> NDArray[np.uint64]:
    return np.clip(np.rint(np.nan_to_num(x, nan=0.0)), 0.0, top).astype(np.uint64)


def _words_for(law: str, t: FloatArray) -> NDArray[np.uint64]:
    """Words from which the current layer's fast path draws W ≈ t (the layout it reads)."""
    t = np.asarray(t, dtype=np.float64)
    neg = (t < 0).astype(np.uint64) << np.uint64(63)
    a = np.abs(t)
    if law == "laplace":  # W = ±(−ln V̂), V̂ = (m + ½)2⁻⁶³
        return _word(np.exp(-a) * 2.0**63 - 0.5, _TOP63) | neg
    if law == "smooth_gamma":  # Z = ±cot(πP̂), P̂ = (m + ½)2⁻⁶⁴; accepted with V̂ ≈ 0
        prop = _word(np.arctan2(1.0, a) / math.pi * 2.0**64 - 0.5, _TOP63) | neg
        rows = int(t.size * 1.75) + 16
        words = np.zeros((rows, 2), dtype=np.uint64)
        words[:, 0] = np.uint64(2**63 - 1)  # the rows after the cells': Z ≈ 0, certainly
        words[:, 1] = np.uint64(2**64 - 1)  # rejected (V̂ ≈ 1 > K)
        words[: t.size, 0] = prop
        words[: t.size, 1] = 0
        return words.ravel()
    if law == "gaussian":  # R cos θ with cos θ = ±1 (V̂₂ ≈ 0 or ½); one pair per cell
        v1 = _word(np.exp(-a * a / 2.0) * 2.0**64 - 0.5, _TOP64)
        v2 = np.where(t < 0, np.uint64(2**63), np.uint64(0)).astype(np.uint64)
        return np.stack([v1, v2], axis=1).ravel()
    raise ValueError(f"no witness search for the law {law!r}")


def current_witnesses(
    model: FloatModel, cells: Mapping[str, FloatArray], y: FloatArray, omega: FloatArray,
    seed: int = 0,
) -> NDArray[np.bool_]:  # fmt: skip
    """The old-style float search against the current layer, with replayed witnesses.

    Per cell, a bit string that makes the mechanism publish exactly ``y`` under ``cells``
    (aimed at the grid value ω), replayed through the mechanism object. True where the
    replay publishes y.
    """
    comp = model.computation(cells, "current")
    y = np.asarray(y, dtype=np.float64)
    n = y.size
    gauss = any(t.law == "gaussian" for t in comp.terms)
    # the term of the largest scale carries the noise, the others draw ≈ 0
    scales = np.stack([np.broadcast_to(t.scale, (n,)) for t in comp.terms])
    carrier = np.argmax(scales, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        need = (omega - comp.centre) / scales[carrier, np.arange(n)]
    targets = [np.where(carrier == j, need, 0.0) for j in range(len(comp.terms))]
    if gauss:  # Box–Muller pairs: each cell at an even position (cos), a copy beside it
        cols = {k: np.repeat(_col(cells, k), 2) for k in model.mech.needs}
        targets = [tt if t.law == "gaussian" else np.repeat(tt, 2)
                   for t, tt in zip(comp.terms, targets, strict=True)]  # fmt: skip
    else:
        cols = {k: _col(cells, k) for k in model.mech.needs}
    words = np.concatenate([_words_for(t.law, tt) for t, tt in zip(comp.terms, targets,
                                                                    strict=True)])  # fmt: skip
    out = np.asarray(model.mech(Cells(cols), _Replay(words, seed)).estimate, dtype=np.float64)
    if gauss:
        out = out[0::2]
    return (out == y) & np.isfinite(omega)


# =============================================================================== attack


@dataclass(frozen=True)
class Scenario:
    """Neighbouring truths of one registered mechanism, per cell.

    Attributes:
        entry: index into :data:`REGISTRY`.
        definition: the privacy definition the mechanism runs under.
        pair: the neighbours, in words.
        params: keyword arguments of the mechanism class.
        cells_a, cells_b: column → per-cell values under the truth a and b.
    """

    entry: int
    definition: str
    pair: str
    params: Mapping[str, Any]
    cells_a: Mapping[str, FloatArray]
    cells_b: Mapping[str, FloatArray]

    @property
    def registry_entry(self) -> Entry:
        """The mechanism's registry line."""
        return REGISTRY[self.entry]

    def build(self) -> Mechanism:
        """The mechanism object (registry class and parameters, as a release builds it)."""
        return self.registry_entry.cls(**self.params)


def definition_of(e: Entry) -> str:
    """The definition the attack runs a registry entry under (strong ER-EE where allowed)."""
    if e.variant == "workshop":
        return "blowfish"
    return "eree" if "eree" in e.definitions else e.definitions[0]


def _count_params(e: Entry) -> dict[str, Any]:
    p: dict[str, Any] = {"query": "float-attack", "definition": definition_of(e)}
    if "epsilon" in e.settings:
        p["epsilon"] = EPSILON
    if "alpha" in e.cls.__dataclass_fields__:
        p["alpha"] = ALPHA
    if "theta" in e.settings:
        p["theta"] = THETA
    return p


def scenario(index: int, n: int, grid: float | None = None) -> Scenario | None:
    """The attack's neighbouring truths for registry line ``index``, ``n`` cells each.

    None for noise infusion, which has no claim. ``grid``: the public grid of the
    mechanism (default: its own default, as a release without a ``grid`` key).
    """
    e = REGISTRY[index]
    d = definition_of(e)
    if d == "none":
        return None
    full = lambda v: np.full(n, float(v))  # noqa: E731
    on = "" if grid is None else f", grid 2^{math.log2(grid):g}"
    if d != "gedp":
        a, b = COUNT_A, COUNT_B
        ca = {"count": full(a), "x_v": full(a), "count_truncated": full(a)}
        cb = {"count": full(b), "x_v": full(b), "count_truncated": full(b)}
        pair = f"one workplace alone in its block: {a:g} vs {b:g} workers (x_v = count){on}"
        p = _count_params(e)
        if grid is not None:
            p["grid"] = grid
        return Scenario(index, d, pair, p, ca, cb)
    p = {"query": "float-attack", "attribute": "value", "gamma": GAMMA, "mu": MU}
    if grid is not None:
        p["grid"] = grid
    if e.cls is EstabGaussian:
        p["neighbor"] = DPNeighbor()
        return Scenario(index, d, f"psi = x, gamma = {GAMMA:g}: value {DP_A:g} vs {DP_B:g}{on}", p,
                        {"value": full(DP_A)}, {"value": full(DP_B)})  # fmt: skip
    p["neighbor"] = SqrtShift()
    pair = f"psi = sqrt, gamma = {GAMMA:g}: value {SQRT_A:g} vs {SQRT_B:g}{on}"
    if e.cls is PsiMechanism:
        return Scenario(index, d, pair, p, {"value": full(SQRT_A)}, {"value": full(SQRT_B)})
    bound = full(BOUND)
    if e.cls is Pnc:
        return Scenario(index, d, pair + f", public bound u* = {BOUND:g}", p,
                        {"clipped": np.minimum(full(SQRT_A), bound), "bound": bound},
                        {"clipped": np.minimum(full(SQRT_B), bound), "bound": bound})  # fmt: skip
    if e.cls is AdaptiveGroupBy:  # the public choice: even cells pnc, odd cells ψ
        pnc = np.arange(n) % 2 == 0
        pub = {"bound": bound, "identity_sum": np.where(pnc, 1e12, 0.0),
               "identity_variance": np.zeros(n)}  # fmt: skip

        def at(v: float) -> dict[str, FloatArray]:
            return {"value": full(v), "clipped": np.minimum(full(v), bound), **pub}

        return Scenario(index, d, pair + f", half the groups pnc (u* = {BOUND:g}), half psi",
                        p, at(SQRT_A), at(SQRT_B))  # fmt: skip
    raise TypeError(f"no floating-point attack scenario for {e.cls.__name__}")


@dataclass
class AttackResult:
    """The attack on one registered mechanism with one sampler.

    Attributes:
        certain: published cells reachable under exactly one of the two truths.
        n: cells attacked (n/2 drawn under each truth).
        wrong: certain answers that name the wrong truth (0: the search is sound).
        neither: cells reachable under neither truth (0: the search is complete).
        exact: False where reachability was over-approximated (a lower bound on certain).
        witnessed, witness_of: current layer only: (cell, truth) pairs the replayed float
            search produced exactly, of those tried.
    """

    mechanism: str
    variant: str
    definition: str
    layer: str
    pair: str
    n: int = 0
    certain: int = 0
    wrong: int = 0
    neither: int = 0
    exact: bool = True
    witnessed: int | None = None
    witness_of: int | None = None
    seconds: float = 0.0
    note: str = ""
    applicable: bool = True

    @property
    def share(self) -> float:
        """The share of certain answers (certain / n)."""
        return self.certain / self.n if self.n else math.nan

    def row(self) -> dict[str, Any]:
        """One CSV row (counts empty where the attack does not apply)."""
        if not self.applicable:
            return {"mechanism": self.mechanism, "variant": self.variant,
                    "definition": self.definition, "layer": self.layer, "pair": self.pair,
                    "n": None, "certain": None, "share": None, "wrong": None, "neither": None,
                    "exact": None, "witnessed": None, "witness_of": None,
                    "seconds": self.seconds, "note": self.note}  # fmt: skip
        return {
            "mechanism": self.mechanism, "variant": self.variant, "definition": self.definition,
            "layer": self.layer, "pair": self.pair, "n": self.n, "certain": self.certain,
            "share": self.share, "wrong": self.wrong, "neither": self.neither,
            "exact": self.exact, "witnessed": self.witnessed, "witness_of": self.witness_of,
            "seconds": self.seconds, "note": self.note,
        }  # fmt: skip


def _concat(a: Mapping[str, FloatArray], b: Mapping[str, FloatArray]) -> dict[str, FloatArray]:
    return {k: np.concatenate([np.asarray(a[k], float), np.asarray(b[k], float)]) for k in a}


def attack(
    model: FloatModel,
    y: FloatArray,
    truth_b: NDArray[np.bool_],
    hyp_a: Mapping[str, FloatArray],
    hyp_b: Mapping[str, FloatArray],
    layer: str,
    *,
    witnesses: bool = True,
    seed: int = 0,
) -> dict[str, Any]:
    """Count certain answers among published values ``y`` (``truth_b``: drawn under b).

    ``hyp_a`` / ``hyp_b``: per published cell, the cell statistics under each truth.
    """
    y = np.asarray(y, dtype=np.float64)
    out: dict[str, Any] = {}
    if layer == "legacy":
        ra, exact_a = legacy_reachable(model, hyp_a, y)
        rb, exact_b = legacy_reachable(model, hyp_b, y)
        out["exact"] = exact_a and exact_b
    else:
        ra, wa = current_reachable(model, hyp_a, y)
        rb, wb = current_reachable(model, hyp_b, y)
        out["exact"] = True
        if witnesses:
            got = current_witnesses(model, hyp_a, y, wa, seed)[ra].sum()
            got += current_witnesses(model, hyp_b, y, wb, seed + 1)[rb].sum()
            out["witnessed"], out["witness_of"] = int(got), int(ra.sum() + rb.sum())
    certain = ra ^ rb
    out["certain"] = int(certain.sum())
    out["wrong"] = int((certain & (ra == truth_b)).sum())
    out["neither"] = int((~ra & ~rb).sum())
    return out


def not_applicable(e: Entry, layer: str) -> AttackResult:
    note = ("no formal guarantee: neighbouring outputs differ in support by design (see the "
            "privacy audit); not a floating-point question")  # fmt: skip
    return AttackResult(e.name, e.variant, e.definitions[0], layer, "—", applicable=False,
                        note=note)  # fmt: skip


def selected_entries(mechanisms: Sequence[str] | None) -> list[int]:
    return [i for i, e in enumerate(REGISTRY) if mechanisms is None or e.name in mechanisms]


def run_float_attack(
    *,
    n: int = CELLS_FULL,
    layers: Sequence[str] = ("current",),
    seed: int = 0,
    mechanisms: Sequence[str] | None = None,
    witnesses: bool = True,
    grid: float | None = None,
) -> list[AttackResult]:
    """The attack on every registered mechanism (or those named), called directly.

    Each mechanism object draws ``n`` cells under each neighbouring truth (seeded: an
    experiment) — ``mechanism(cells, source)`` for the current layer, the legacy float
    path for ``"legacy"`` — and every published cell is tested under both truths.
    ``grid``: the public grid of every mechanism that takes one (default: its own).
    """
    results: list[AttackResult] = []
    for i in selected_entries(mechanisms):
        e = REGISTRY[i]
        sc = scenario(i, n, grid if "grid" in e.settings else None)
        for layer in layers:
            if sc is None:
                results.append(not_applicable(e, layer))
                continue
            t0 = time.perf_counter()
            mech = sc.build()
            model = describe(mech)
            assert model is not None
            src = SeededNoise(seed + 7919 * i + (0 if layer == "current" else 1))
            if layer == "current":
                ya = mech(Cells(dict(sc.cells_a)), src).estimate
                yb = mech(Cells(dict(sc.cells_b)), src).estimate
            else:
                ya = legacy_release(model, sc.cells_a, src)
                yb = legacy_release(model, sc.cells_b, src)
            y = np.concatenate([np.asarray(ya, float), np.asarray(yb, float)])
            truth_b = np.arange(2 * n) >= n
            got = attack(model, y, truth_b, _concat(sc.cells_a, sc.cells_a),
                         _concat(sc.cells_b, sc.cells_b), layer, witnesses=witnesses,
                         seed=seed + i)  # fmt: skip
            results.append(attack_result(e, sc.definition, layer, sc.pair, 2 * n, got, t0))
    return results


def attack_result(e: Entry, definition: str, layer: str, pair: str, n: int, got: dict[str, Any],
            t0: float) -> AttackResult:  # fmt: skip
    note = "" if got["exact"] else (
        "two noise terms: the intermediate n + η′ is treated as any float (certain answers "
        "are a lower bound)")  # fmt: skip
    return AttackResult(
        e.name, e.variant, definition, layer, pair, n, got["certain"], got["wrong"],
        got["neither"], got["exact"], got.get("witnessed"), got.get("witness_of"),
        time.perf_counter() - t0, note,
    )  # fmt: skip


# =============================================================================== a release


def table_lines(results: Sequence[AttackResult]) -> list[str]:
    """A plain-text table: per mechanism, certain answers on the legacy and current layers."""
    by: dict[tuple[str, str], dict[str, AttackResult]] = {}
    for r in results:
        by.setdefault((r.mechanism, r.variant), {})[r.layer] = r

    def cell(r: AttackResult | None) -> str:
        if r is None:
            return "—"
        if not r.applicable:
            return "n/a (no claim)"
        return f"{'≥ ' if not r.exact else ''}{r.certain:,} of {r.n:,} ({100 * r.share:.2f}%)"

    out = [f"{'mechanism':<26} {'definition':<10} {'legacy sampler':>26} {'current layer':>24}"
           "  float search witnesses"]  # fmt: skip
    for (name, variant), rs in by.items():
        label = name + (f" ({variant})" if variant else "")
        first = next(iter(rs.values()))
        cur = rs.get("current")
        wit = ("—" if cur is None or cur.witnessed is None
               else f"{cur.witnessed:,} of {cur.witness_of:,}")  # fmt: skip
        out.append(f"{label:<26} {first.definition:<10} {cell(rs.get('legacy')):>26} "
                   f"{cell(cur):>24}  {wit}")  # fmt: skip
    return out
