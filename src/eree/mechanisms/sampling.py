r"""The one sampling layer: every published noisy value is the ideal mechanism's output, rounded.

Every mechanism in eree adds noise through :func:`rounded_noisy`. It returns, for each cell,

.. math:: \mathrm{round}_r\Big(c + \sum_t b_t W_t\Big)

— the *correctly rounded* value, on a public grid :math:`r` (a power of two), of the output
the real-number mechanism would produce: :math:`c` is the exact value the noise is added
to (a count, a group sum, :math:`\ln(n+\gamma)`, :math:`\psi(x)`), :math:`b_t` the exact
noise scales and :math:`W_t` standard noises drawn from uniforms that are exact real numbers
whose binary digits come from the noise source, 64 at a time, as many as needed.

Why this is private. The ideal mechanism (real arithmetic, real uniforms) is the one the
papers prove private. The published value is a deterministic function (rounding to the
grid) of its output, so it is exactly as private: post-processing. Nothing about how the
value was computed (floating-point error, which path was taken) reaches the output.

How it is computed (certified arithmetic):

* **Fast path** (vectorised, float64): each draw is computed from the first 64 random bits
  of each uniform together with a rigorous bound on its error — the error of every float
  operation, the assumed error bound :data:`LIBM_RELATIVE_ERROR` of library functions
  (log, sqrt, tan, sin, cos) and the width of the interval of ideal uniforms consistent
  with the 64 bits. When the whole error interval lies inside one grid cell, the cell is
  the ideal output's cell, and the draw is done.
* **Slow path** (the rare rest, typically fewer than one draw in 10⁸ for counts): the draw
  is evaluated in ball arithmetic (Arb, through python-flint: every result is an interval
  guaranteed to contain the exact value) on the uniforms as exact dyadic intervals; while
  the ball still straddles a rounding boundary, every uniform of the draw is extended by 64
  more random bits and the precision raised. No value is unreachable because bits ran out.

Standard noises (:class:`Law`, in :mod:`eree.mechanisms.noise_laws`), each an exact
algorithm on real uniforms:

* ``laplace``: a sign bit and :math:`V\sim U(0,1)`; :math:`W = \pm(-\ln V)`.
* ``gaussian``: Box–Muller, :math:`W = \sqrt{-2\ln V_1}\cos(2\pi V_2)` and the ``sin``
  partner for the next cell (one pair of uniforms per two cells).
* ``smooth_gamma``: density :math:`(\sqrt2/\pi)/(1+z^4)` by rejection from a standard
  Cauchy :math:`Z = \pm\cot(\pi P)`, :math:`P\sim U(0,\frac12)`, accepted when
  :math:`V < 2(1+Z^2)/((1+\sqrt2)(1+Z^4))`; every accept/reject decision is certified the
  same way (refined in ball arithmetic when the float decision is not certain).

The same code runs in secure (operating-system bits) and seeded mode: experiments measure
exactly what releases publish.

Why python-flint (Arb): its balls are rigorous enclosures for every elementary function
eree needs (log, exp, sqrt, tan, cot, sin, cos), so the slow path's correctness rests on a
maintained, peer-reviewed library rather than on error analysis of our own; mpmath's
interval type lacks several of these functions and its plain multiprecision functions
carry no guarantee.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from eree.mechanisms.noise import FloatArray, NoiseSource

if TYPE_CHECKING:  # pragma: no cover
    from flint import arb
from eree.mechanisms.noise_laws import (
    FIRST_PRECISION,
    LAWS,
    LIBM_RELATIVE_ERROR,
    MAX_REFINEMENTS,
    REFINEMENT_BITS,
    SAFETY,
    Draw,
    Law,
    U,
)

__all__ = [
    "LAWS",
    "LIBM_RELATIVE_ERROR",
    "MAX_GRID",
    "MIN_GRID",
    "Centre",
    "Law",
    "Term",
    "additive",
    "check_grid",
    "exact_centre",
    "log_shift_centre",
    "psi_centre",
    "rounded_noisy",
    "rounded_variance",
    "scale_term",
    "smooth_scale_term",
]


#: the finest and coarsest grid: ``value/grid`` and the grid's square (in the variance)
#: stay normal floats for every value a release publishes (a subnormal grid made every
#: published value non-finite)
MIN_GRID = 2.0**-64
MAX_GRID = 2.0**64


def check_grid(grid: float, what: str = "grid") -> float:
    """A grid: a power of two (``value/grid`` is exact) within MIN_GRID .. MAX_GRID."""
    g = float(grid)
    if not (math.isfinite(g) and g > 0):
        raise ValueError(f"{what} must be a power of two > 0 (got {grid!r})")
    m, _ = math.frexp(g)
    if m != 0.5:
        raise ValueError(f"{what} must be a power of two such as 1, 0.5 or 2**-20 (got {grid!r})")
    if not MIN_GRID <= g <= MAX_GRID:
        raise ValueError(f"{what} must be at least 2**-64 and at most 2**64 (got {grid!r})")
    return g


#: default grid of values on their own scale: counts (jobs), sums (in the data's unit)
VALUE_GRID = 1.0
#: default grid in a transformed space (log of Log-Laplace; ψ = √, log, combined, custom)
TRANSFORMED_GRID = 2.0**-20
#: grid of noise infusion's distortion factors (factor × count stays exact in float)
FACTOR_GRID = 2.0**-24


# --------------------------------------------------------------------------- centre, scales

ExactFn = Callable[[int], "arb"]


@dataclass(frozen=True)
class Centre:
    """The exact value the noise is added to, in the space the noise is added in.

    Attributes:
        value: its float approximation per cell.
        error: a bound on |value − exact| per cell (0 where ``value`` is exact).
        exact: cell index → a ball containing the exact value (at the current precision);
            None when ``value`` is exact.
    """

    value: FloatArray
    error: FloatArray
    exact: ExactFn | None = None

    def ball(self, i: int) -> arb:
        """A ball containing the exact centre of cell ``i``."""
        from flint import arb

        if self.exact is None:
            return arb(float(self.value[i]))
        return self.exact(i)


def exact_centre(values: ArrayLike) -> Centre:
    """Values that are exactly what the noise is added to (counts, exact sums)."""
    v = np.asarray(values, dtype=np.float64)
    return Centre(v, np.zeros(v.shape))


def log_shift_centre(n: ArrayLike, alpha: float, additive: float = 1.0) -> Centre:
    r""":math:`\ln(n + \gamma)`, γ = Δ/α exactly (Log-Laplace; not γ's float)."""
    from flint import arb

    nn = np.asarray(n, dtype=np.float64)
    c = np.log(nn + additive / alpha)
    err = 3.1 * U + LIBM_RELATIVE_ERROR * np.abs(c)
    return Centre(c, err, lambda i: (arb(float(nn.flat[i])) + arb(additive) / arb(alpha)).log())


def psi_centre(x: ArrayLike, neighbor: Any) -> Centre:
    """ψ(x) for a neighbor function: exact where ψ has a ball form, else the float ψ(x).

    A user-defined ψ (no ball form) is the float function the user supplied: its float
    value is the centre.
    """
    from flint import arb

    xx = np.asarray(x, dtype=np.float64)
    value = np.asarray(neighbor.psi(xx), dtype=np.float64)
    if neighbor.psi_ball(arb(1.0)) is None:
        return Centre(value, np.zeros(value.shape))
    err = np.asarray(neighbor.psi_error(xx, value), dtype=np.float64)
    return Centre(value, err, lambda i: neighbor.psi_ball(arb(float(xx.flat[i]))))


@dataclass(frozen=True)
class Term:
    """One noise term b·W of the ideal output.

    Attributes:
        law: the standard noise W.
        scale: float approximation of b per cell (b > 0).
        rel_error: bound on |b − scale|/scale.
        exact: cell index → ball containing b; None when ``scale`` is exact.
    """

    law: Law
    scale: FloatArray
    rel_error: float = 0.0
    exact: ExactFn | None = None

    def ball(self, i: int) -> arb:
        """A ball containing the exact scale b of cell ``i``."""
        from flint import arb

        if self.exact is None:
            return arb(float(self.scale.flat[i]))
        return self.exact(i)


def scale_term(
    law: str,
    scale: ArrayLike,
    *,
    numerator: ArrayLike | None = None,
    denominator: float | None = None,
    shape: tuple[int, ...] | None = None,
) -> Term:
    """A term whose scale is exact (``scale``) or the exact ratio numerator/denominator.

    With ``numerator`` and ``denominator`` (floats, taken as exact reals), the ideal scale is
    their real quotient and ``scale`` its float (one rounding: relative error ≤ U).
    """
    b = np.asarray(scale, dtype=np.float64)
    if shape is not None:
        b = np.broadcast_to(b, shape)
    if numerator is None or denominator is None:
        return Term(LAWS[law], b)
    from flint import arb

    num = np.broadcast_to(np.asarray(numerator, dtype=np.float64), b.shape)
    den = float(denominator)
    return Term(LAWS[law], b, 2.0 * U, lambda i: arb(float(num.flat[i])) / arb(den))


def smooth_scale_term(
    law: str, x_v: ArrayLike, alpha: float, factor: float, epsilon: float, floor: float = 1.0
) -> Term:
    r"""The smooth-sensitivity scale f·max(α·x_v, floor)/ε (f = ``factor``).

    Exact in the ideal mechanism (α, x_v, ε taken as exact reals); the float is within
    5U of it. ``floor = 0`` gives the workshop's S = α·x_V.
    """
    from flint import arb

    x = np.asarray(x_v, dtype=np.float64)
    b = factor * np.maximum(alpha * x, floor) / epsilon

    def exact(i: int) -> arb:
        sx = arb(alpha) * arb(float(x.flat[i]))
        return arb(factor) * sx.max(arb(floor)) / arb(epsilon)

    return Term(LAWS[law], b, 5.0 * U, exact)


def log_laplace_scale_term(alpha: float, epsilon: float, shape: tuple[int, ...]) -> Term:
    r"""λ = 2 ln(1+α)/ε (Log-Laplace), exact in the ideal mechanism."""
    from flint import arb

    lam = 2.0 * math.log1p(alpha) / epsilon
    b = np.full(shape, lam)
    return Term(LAWS["laplace"], b, LIBM_RELATIVE_ERROR + 4.0 * U,
                lambda i: 2 * (1 + arb(alpha)).log() / arb(epsilon))  # fmt: skip


def additive(
    source: NoiseSource,
    values: ArrayLike,
    law: str,
    scale: ArrayLike,
    grid: ArrayLike,
    *,
    numerator: ArrayLike | None = None,
    denominator: float | None = None,
) -> FloatArray:
    """round_grid(values + b·W) for exact ``values``; b = numerator/denominator exactly."""
    centre = exact_centre(values)
    term = scale_term(law, scale, numerator=numerator, denominator=denominator,
                      shape=centre.value.shape)  # fmt: skip
    return rounded_noisy(source, centre, [term], grid)


def rounded_variance(law: str, scale: float, grid: float, on_grid: bool) -> float:
    r"""Variance of :math:`\mathrm{round}_r(x + bW) - x` (public: b, r are public).

    ``on_grid`` (x a multiple of r, e.g. integer counts on the grid 1): exact,
    :math:`2\sum_{k\ge1}(kr)^2 P(\mathrm{round}(bW/r) = k)`. Otherwise the average over
    x's position within the grid cell, :math:`b^2\mathrm{Var}W + r^2/12` (Sheppard; exact
    for a uniformly placed x). Also used when b/r > 64, where the two agree to < 10⁻⁶·r².
    """
    w = LAWS[law]
    b, r = float(scale), float(grid)
    if not on_grid or b / r > 64:
        return b * b * w.variance + r * r / 12.0
    kmax = math.ceil(60.0 * b / r) + 8
    k = np.arange(1, kmax + 1, dtype=np.float64)
    p = w.cdf((k + 0.5) * r / b) - w.cdf((k - 0.5) * r / b)
    # beyond kmax: the law's own tail (only the heavy-tailed Smooth Gamma law has one
    # that matters; the sum over cells equals the integral there to O(r²·P(tail)))
    rest = b * b * w.tail_second_moment((kmax + 0.5) * r / b)
    return float(2.0 * np.sum((k * r) ** 2 * p) + rest)


# --------------------------------------------------------------------------- the layer


@dataclass
class SlowPathStats:
    """How often the slow path ran, in this process.

    Read by benchmarks; never written to any output (the count depends on the magnitudes
    of the values).
    """

    draws: int = 0
    slow: int = 0
    max_refinements: int = 0


#: process-wide counters, read by benchmarks
STATS = SlowPathStats()


def rounded_noisy(
    source: NoiseSource,
    centre: Centre,
    terms: Sequence[Term],
    grid: ArrayLike,
) -> FloatArray:
    r""":math:`\mathrm{round}_r(c + \sum_t b_t W_t)` per cell, correctly rounded (module doc).

    Three tiers, each certified: one error bound for all cells outside the laws' rare
    tails (:meth:`Law.draw`) settles almost every cell with one comparison; the others
    get their own bound (:meth:`Law.precise`, the same as :meth:`Law.fast`'s); what is
    still unsettled goes to the slow path. Any certified route gives the same value:
    the correct rounding of the exact output.

    Args:
        source: the random bits (secure or seeded: the same algorithm).
        centre: the exact values the noise is added to.
        terms: the noise terms (one for most mechanisms; two for the workshop's smooth
            mechanisms).
        grid: the public grid r (a power of two), scalar or per cell.

    Returns:
        Multiples of the grid, shape of ``centre.value``. Ties (measure zero for the
        continuous laws) round half to even; a zero is +0.0.
    """
    c = np.asarray(centre.value, dtype=np.float64)
    shape = c.shape
    n = c.size
    rr = np.asarray(grid, dtype=np.float64)
    r = np.broadcast_to(rr, shape).ravel()
    cf = c.ravel()
    cerr = np.broadcast_to(np.asarray(centre.error, dtype=np.float64), shape).ravel()
    STATS.draws += n
    if n == 0:
        return c.copy()
    y: FloatArray | None = None
    draws: list[Draw] = []
    scales: list[FloatArray] = []
    bound = float(np.max(centre.error))  # the scalar bound, outside every term's tail
    total_max = float(max(cf.max(), -cf.min()))  # a bound on Σ|summands| there
    tails = []
    for t in terms:
        d = t.law.draw(source, n)
        scale = np.asarray(t.scale, dtype=np.float64)
        b = np.broadcast_to(scale, shape).ravel()
        bmax = float(scale.max())
        noise = np.multiply(b, d.w)
        if y is None:  # y = c + b₁W₁ (+ b₂W₂): the same sums, in the same order, as _settle
            noise += cf
            y = noise
        else:
            y += noise
        rel = t.rel_error
        bound += bmax * (d.ew + rel * (d.wmax + d.ew) * (1.0 + rel)) + U * bmax * d.wmax * (1 + U)
        total_max += bmax * d.wmax * (1 + U)
        draws.append(d)
        scales.append(b)
        tails.append(d.tail)
    bound += (len(terms) + 1) * U * total_max
    bound *= SAFETY * (1 + 2.0**-20)
    assert y is not None
    thr: FloatArray | float
    if rr.ndim:  # r a power of two: y/r and y·(1/r) are exact
        q = np.divide(y, r, out=y)
        thr = 0.5 - bound / r
    else:
        q = np.multiply(y, 1.0 / float(rr), out=y)
        thr = 0.5 - bound / float(rr)
    k = np.rint(q)
    dist = np.subtract(q, k, out=q)
    np.abs(dist, out=dist)
    cand = np.flatnonzero(dist >= thr)
    for tail in tails:
        if tail.size:
            cand = np.union1d(cand, tail)
    if cand.size:
        k[cand] = _settle(source, centre, terms, draws, scales, cf, cerr, r, cand)
    k *= r
    k += 0.0  # a zero is +0.0 on every path (rint gives −0.0 for q ∈ (−½, 0))
    return k.reshape(shape)


def _settle(
    source: NoiseSource,
    centre: Centre,
    terms: Sequence[Term],
    draws: list[Draw],
    scales: list[FloatArray],
    cf: FloatArray,
    cerr: FloatArray,
    r: FloatArray,
    cand: NDArray[np.int64],
) -> FloatArray:
    """The grid index (value / r) of the cells ``cand``: per-cell bounds, then the slow path."""
    y = cf[cand].copy()
    err = cerr[cand].copy()
    total_abs = np.abs(y)
    for t, d, b_all in zip(terms, draws, scales, strict=True):
        w, e_w = t.law.precise(d, cand)
        b = b_all[cand]
        zero = b == 0  # no noise from this term (e.g. the workshop's S = α·x_V at x_V = 0)
        noise = np.where(zero, 0.0, b * w)
        with np.errstate(invalid="ignore"):
            e_t = b * (e_w + t.rel_error * (np.abs(w) + e_w) * (1.0 + t.rel_error))
            e_t += U * np.abs(noise)
        err += np.where(zero, 0.0, e_t)
        total_abs += np.abs(noise)
        y += noise
    err += (len(terms) + 1) * U * total_abs
    err *= SAFETY
    rc = r[cand]
    q = y / rc
    k = np.rint(q)
    settled = np.abs(q - k) + err / rc < 0.5
    slow = np.flatnonzero(~settled)
    if slow.size:
        STATS.slow += int(slow.size)
        states = [d.states for d in draws]
        for j in slow:
            i = int(cand[j])
            k[j] = _slow(source, centre, terms, states, scales, i, float(r[i])) / r[i]
    return k


def _slow(
    source: NoiseSource,
    centre: Centre,
    terms: Sequence[Term],
    draws: list[Any],
    scales: list[FloatArray],
    i: int,
    r: float,
) -> float:
    """One draw in ball arithmetic, extending its uniforms until its grid cell is certain."""
    from flint import arb, ctx

    prec = FIRST_PRECISION
    old = ctx.prec
    try:
        for step in range(MAX_REFINEMENTS):
            ctx.prec = prec
            y = centre.ball(i)
            for t, states, b in zip(terms, draws, scales, strict=True):
                if b[i] != 0.0:
                    scale = t.exact(i) if t.exact is not None else arb(float(b[i]))
                    y = y + scale * t.law.ball(states, i, prec)
            if y.is_finite():
                cell = (y / arb(r) + arb(0.5)).floor()
                if cell.is_exact():
                    STATS.max_refinements = max(STATS.max_refinements, step)
                    k = int(cell.unique_fmpz())  # type: ignore[arg-type]
                    try:
                        return float(k) * r
                    except OverflowError:  # beyond float64: refused later as non-finite
                        return math.inf if k > 0 else -math.inf
            for t, states in zip(terms, draws, strict=True):
                for u in t.law.refine_uniforms(states, i):
                    u.extend(source.bits(1)[0])
            prec += REFINEMENT_BITS
    finally:
        ctx.prec = old
    raise RuntimeError("the sampler could not settle a draw")  # pragma: no cover
