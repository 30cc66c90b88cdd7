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

So ``within`` is exact for integer counts and a lower bound otherwise; a target met by
``within`` is met by the published values. Proofs of the closed forms are beside each
function.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = [
    "Within",
    "gaussian_within",
    "laplace_within",
    "log_laplace_within",
    "log_psi_within",
    "smooth_gamma_within",
    "sqrt_psi_within",
]

#: P(|published − true| ≤ t) as a function of t ≥ 0
Within = Callable[[float], float]


def _noise_reach(t: float, grid: float, on_grid: bool) -> float:
    """The largest |unrounded noise| that still publishes an error of at most ``t``."""
    if t < 0:
        return -1.0
    if on_grid:  # errors are multiples of r: |err| ≤ t ⇔ |err| ≤ r⌊t/r⌋ ⇔ |noise| < r(⌊t/r⌋+½)
        return grid * (math.floor(t / grid * (1 + 1e-12)) + 0.5)
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


def log_laplace_within(n: float, gamma: float, lam: float, grid: float) -> Within:
    r"""Log-Laplace's estimate :math:`\hat n = (n+\gamma)e^{\omega'}(1-\lambda^2) - \gamma`.

    With :math:`\omega' = \eta + \rho`, η ~ Lap(λ) and ρ the log-space rounding
    (:math:`|\rho| \le r/2`): the error is :math:`(n+\gamma)(e^{\omega'}/c - 1)`, c =
    1/(1−λ²), so :math:`|\mathrm{err}| \le t` ⇔ :math:`\omega' \in [\ln(c(1-q)), \ln(c(1+q))]`,
    q = t/(n+γ) (the lower end −∞ when q ≥ 1); shrinking the interval by r/2 at each end
    bounds the probability from below whatever ρ is.
    """
    c = 1.0 / (1.0 - lam * lam)

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


def sqrt_psi_within(x: float, a: float, sigma: float, grid: float) -> Within:
    r"""ψ = √(x+a): estimate :math:`\omega^2 - \sigma^2 - a`, ω = s + σZ (+ rounding), s = √(x+a).

    The error is :math:`\omega^2 - s^2 - \sigma^2`, so :math:`|\mathrm{err}| \le t` ⇔
    :math:`|\omega| \in [\sqrt{\max(0, s^2+\sigma^2-t)}, \sqrt{s^2+\sigma^2+t}]`; ω's two
    branches (ω ≥ 0 and ω < 0) each shrunk by r/2 for the rounding.
    """
    s = math.sqrt(x + a)

    def within(t: float) -> float:
        if t < 0:
            return 0.0
        inner = s * s + sigma * sigma - t
        lo = (math.sqrt(inner) if inner > 0 else 0.0) + grid / 2.0
        hi = math.sqrt(s * s + sigma * sigma + t) - grid / 2.0
        if inner <= 0:  # one interval [−hi, hi] around 0
            return _normal_between((-hi - s) / sigma, (hi - s) / sigma)
        pos = _normal_between((lo - s) / sigma, (hi - s) / sigma)
        neg = _normal_between((-hi - s) / sigma, (-lo - s) / sigma)
        return pos + neg

    return within


def log_psi_within(x: float, a: float, sigma: float, grid: float) -> Within:
    r"""ψ = ln(x+a): estimate :math:`e^{\omega - \sigma^2/2} - a`, ω = ln(x+a) + σZ (+ rounding).

    The error is :math:`(x+a)(e^{\sigma Z - \sigma^2/2} - 1)`: :math:`|\mathrm{err}| \le t` ⇔
    :math:`\sigma Z - \sigma^2/2 \in [\ln(1-q), \ln(1+q)]`, q = t/(x+a), shrunk by r/2.
    """

    def within(t: float) -> float:
        if t < 0:
            return 0.0
        q = t / (x + a)
        lo = -math.inf if q >= 1 else math.log1p(-q) + grid / 2.0
        hi = math.log1p(q) - grid / 2.0
        if hi <= lo:
            return 0.0
        zlo = -math.inf if lo == -math.inf else (lo + sigma * sigma / 2.0) / sigma
        return _normal_between(zlo, (hi + sigma * sigma / 2.0) / sigma)

    return within
