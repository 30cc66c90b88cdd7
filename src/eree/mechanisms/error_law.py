r"""The law of one published cell's error: :math:`P(|\hat x - x| \le t)` per mechanism.

Each function returns ``within(t)``, the probability that a published estimate lies within
``t`` of the true value, at public representative cell statistics (the accuracy preview's
and the budget planner's ``at``; never confidential ones). Every published value is the
exact mechanism's output rounded to a public grid r (:mod:`eree.mechanisms.sampling`);
the rounding is counted against the target, never in its favour:

* where the true value lies on the grid (counts on the grid 1 or a finer power of two),
  the error is a multiple of r, so :math:`|\mathrm{err}|\le t` exactly when the unrounded
  noise lies within :math:`r(\lfloor t/r\rfloor + 1/2)`;
* elsewhere, :math:`|\mathrm{round}_r(y) - y| \le r/2` gives the lower bound
  :math:`P(|\text{noise}| \le t - r/2)`.

Tables publish each estimate clamped into its own confidence interval
(:meth:`eree.mechanisms.base.Measurement.published_estimate`); the laws here are those of
the published value, clamp included. So ``within`` is exact for integer counts and a
lower bound otherwise; a target met by ``within`` is met by the published values. Proofs
of the closed forms are beside each function.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "Within",
    "gaussian_published_within",
    "gaussian_within",
    "laplace_within",
    "log_laplace_within",
    "smooth_gamma_abs_cdf",
    "smooth_gamma_within",
]

#: P(|published − true| ≤ t) as a function of t ≥ 0
Within = Callable[[float], float]


def _noise_reach(t: float, grid: float, on_grid: bool) -> float:
    """The largest |unrounded noise| that still publishes an error of at most ``t``."""
    if t < 0:
        return -1.0
    steps = t / grid * (1 + 1e-12)
    if on_grid and steps < 2.0**52:
        # errors are multiples of r: |err| ≤ t ⇔ |err| ≤ r⌊t/r⌋ ⇔ |noise| < r(⌊t/r⌋+½)
        return grid * (math.floor(steps) + 0.5)
    if on_grid:  # beyond 2^52 steps the grid is below a float's resolution of t
        return t
    return t - grid / 2.0


def laplace_within(scale: float, grid: float, on_grid: bool) -> Within:
    r"""Additive Laplace noise of scale b: :math:`P(|bL| \le u) = 1 - e^{-u/b}`."""

    def within(t: float) -> float:
        u = _noise_reach(t, grid, on_grid)
        return 0.0 if u <= 0 else -math.expm1(-u / scale)

    return within


def gaussian_within(sd: float, grid: float, on_grid: bool) -> Within:
    r"""Additive Gaussian noise: :math:`P(|\sigma Z| \le u) = \mathrm{erf}(u/(\sigma\sqrt2))`."""

    def within(t: float) -> float:
        u = _noise_reach(t, grid, on_grid)
        return 0.0 if u <= 0 else math.erf(u / (sd * math.sqrt(2.0)))

    return within


def smooth_gamma_abs_cdf(z: float) -> float:
    r""":math:`P(|Z| \le z)` for the density :math:`(\sqrt2/\pi)/(1+z^4)` (Smooth Gamma).

    From :math:`\int_0^z \frac{dv}{1+v^4} = \frac{1}{4\sqrt2}\ln\frac{z^2+\sqrt2 z+1}{z^2-\sqrt2
    z+1} + \frac{1}{2\sqrt2}\left[\arctan(\sqrt2 z+1)+\arctan(\sqrt2 z-1)\right]`, doubled
    and times √2/π: :math:`\frac{1}{2\pi}\ln\frac{z^2+\sqrt2z+1}{z^2-\sqrt2z+1} +
    \frac1\pi[\arctan(\sqrt2z+1)+\arctan(\sqrt2z-1)]` (0 at z = 0, → 1 as z → ∞).
    """
    if z <= 0:
        return 0.0
    r2 = math.sqrt(2.0)
    if z > 1e4:  # tail: P(|Z| > z) = (2√2/π)∫_z^∞ v⁻⁴(1 + O(v⁻⁴)) dv = 2√2/(3πz³)
        return 1.0 - 2.0 * r2 / (3.0 * math.pi * z**3)
    log_term = math.log((z * z + r2 * z + 1.0) / (z * z - r2 * z + 1.0)) / (2.0 * math.pi)
    return log_term + (math.atan(r2 * z + 1.0) + math.atan(r2 * z - 1.0)) / math.pi


def smooth_gamma_within(scale: float, grid: float, on_grid: bool) -> Within:
    """Smooth Gamma's noise b·Z (:func:`smooth_gamma_abs_cdf`)."""

    def within(t: float) -> float:
        return smooth_gamma_abs_cdf(_noise_reach(t, grid, on_grid) / scale)

    return within


def _laplace_between(lo: float, hi: float, lam: float) -> float:
    """P(lo ≤ η ≤ hi) for η ~ Laplace(0, λ)."""

    def cdf(x: float) -> float:
        if x == -math.inf:
            return 0.0
        if x == math.inf:
            return 1.0
        return 0.5 * math.exp(x / lam) if x < 0 else 1.0 - 0.5 * math.exp(-x / lam)

    return max(0.0, cdf(hi) - cdf(lo))


def log_laplace_within(n: float, gamma: float, lam: float, grid: float, half: float) -> Within:
    r"""Log-Laplace's published estimate, :math:`(n+\gamma)e^{\omega'}f - \gamma`.

    The estimate :math:`(\tilde n+\gamma)(1-\lambda^2) - \gamma` is published clamped into
    its interval :math:`(\tilde n+\gamma)e^{\pm h} - \gamma` (h = ``half``, the interval's
    log-space half-width); since 1 − λ² < 1 < e^h, the clamp only binds below, so the
    published value is :math:`(\tilde n+\gamma)f - \gamma` with f = max(1 − λ², e^{−h}).
    With :math:`\omega' = \eta + \rho`, η ~ Lap(λ) and ρ the log-space rounding
    (:math:`|\rho| \le r/2`): the error is :math:`(n+\gamma)(e^{\omega'}f - 1)`, so
    :math:`|\mathrm{err}| \le t` ⇔ :math:`\omega' \in [\ln((1-q)/f), \ln((1+q)/f)]`,
    q = t/(n+γ) (the lower end −∞ when q ≥ 1); shrinking the interval by r/2 at each end
    bounds the probability from below whatever ρ is.
    """
    c = 1.0 / max(1.0 - lam * lam, math.exp(-half))

    def within(t: float) -> float:
        if t < 0:
            return 0.0
        q = t / (n + gamma)
        lo = -math.inf if q >= 1 else math.log(c * (1.0 - q)) + grid / 2.0
        hi = math.log(c * (1.0 + q)) - grid / 2.0
        return 0.0 if hi <= lo else _laplace_between(lo, hi, lam)

    return within


def _normal_between(lo: float, hi: float) -> float:
    """P(lo ≤ Z ≤ hi) for a standard normal Z."""
    if hi <= lo:
        return 0.0
    return max(0.0, 0.5 * (math.erf(hi / math.sqrt(2.0)) - math.erf(lo / math.sqrt(2.0))))


#: points of the first scan of ω (then every crossing is refined: :func:`_crossings`)
_SCAN = 4001
#: the scan covers the centre ± this many sd (the mass outside is < 10⁻²³)
_REACH = 10.0
#: points tried at once inside each bracketing interval while refining the crossings
_REFINE = 127
#: the refinement's rounds at most (each shrinks every bracket by _REFINE + 1; a float's
#: 2¹¹ exponents × 2⁵² mantissas are crossed in far fewer)
_REFINE_ROUNDS = 40


def _crossings(
    publish: Callable[[np.ndarray], np.ndarray],
    w: np.ndarray,
    inside: np.ndarray,
    x: float,
    u: float,
) -> list[float]:
    """The points where ω enters or leaves {ω : |g(ω) − x| ≤ u}, to adjacent floats.

    The scan ``w`` (membership ``inside``) brackets each: every [w_i, w_{i+1}] whose ends
    differ. All brackets are searched together, one vectorised call of ``publish`` per
    round: :data:`_REFINE` points evenly spread inside each bracket, the bracket then
    narrowed to the first two neighbouring points that differ (the left end keeps its
    membership, the right end its own), until no float lies strictly inside.
    A crossing is the midpoint of its last bracket, as bisection to the last bit finds
    it, in a few calls (each bracket shrinks 128-fold per call) instead of one per bit.
    """
    at = np.nonzero(inside[1:] != inside[:-1])[0]
    if at.size == 0:
        return []
    a, b, state = w[at].astype(np.float64), w[at + 1].astype(np.float64), inside[at]
    frac = np.arange(1, _REFINE + 1, dtype=np.float64) / (_REFINE + 1)
    for _ in range(_REFINE_ROUNDS):
        live = np.nextafter(a, np.inf) < b  # a float strictly inside the bracket
        if not live.any():
            break
        lo, hi, st = a[live], b[live], state[live]
        pts = np.clip(lo[:, None] + (hi - lo)[:, None] * frac[None, :], lo[:, None], hi[:, None])
        got = np.abs(np.asarray(publish(pts.ravel()), dtype=np.float64) - x) <= u
        flip = got.reshape(pts.shape) != st[:, None]
        rows = np.arange(pts.shape[0])
        j = np.argmax(flip, axis=1)  # the first point past the crossing (if any)
        found = flip[rows, j]
        left = np.where(j > 0, pts[rows, np.maximum(j - 1, 0)], lo)
        a[live] = np.where(found, left, pts[:, -1])
        b[live] = np.where(found, pts[rows, j], hi)
    return [float(v) for v in (a + b) / 2.0]


def gaussian_published_within(
    publish: Callable[[np.ndarray], np.ndarray], centre: float, sd: float, x: float, grid: float
) -> Within:
    r"""A published value g(ω) of a Gaussian answer ω ~ N(centre, sd²) whose truth is x.

    For the GEDP mechanisms the table publishes a function of the noisy answer: the ψ
    estimate (Thm 6.6) or the noisy sum, clamped into its own confidence interval (which
    is clamped at 0). The set {ω : |g(ω) − x| ≤ t} is found exactly up to floating point:
    a scan of ω over centre ± 10 sd locates every change of membership, a search refines
    each to the last bit, and the probability is the sum of the normal masses of the
    intervals. The grid's rounding moves ω by at most r/2, so g by at most L·r/2 with L
    the steepest slope of g on the scan: ``t`` is reduced by that (a lower bound).

    Args:
        publish: ω ↦ the published value (vectorised; the release's own post-processing).
        centre, sd: the law of ω (ψ(x) or x, and σ).
        x: the true value.
        grid: the public grid ω is rounded to.
    """
    scan: list[Any] = []  # computed on the first call: most errors are never asked for

    def within(t: float) -> float:
        if not scan:
            w0 = centre + sd * np.linspace(-_REACH, _REACH, _SCAN)
            g0 = np.asarray(publish(w0), dtype=np.float64)
            slope = float(np.nanmax(np.abs(np.diff(g0) / np.diff(w0)))) if grid else 0.0
            scan.extend((w0, g0, slope * grid / 2.0))
        w, g, slack = scan
        u = t - slack
        if u < 0:
            return 0.0
        inside = np.abs(g - x) <= u
        edges = _crossings(publish, w, inside, x, u)
        bounds = [-math.inf, *edges, math.inf]
        state = bool(inside[0])
        total = 0.0
        for lo, hi in itertools.pairwise(bounds):
            if state:
                total += _normal_between((lo - centre) / sd, (hi - centre) / sd)
            state = not state
        return min(total, 1.0)

    return within
