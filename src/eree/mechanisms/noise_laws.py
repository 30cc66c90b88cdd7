r"""The standard noises of the sampling layer, each an exact algorithm on real uniforms.

:mod:`eree.mechanisms.sampling` draws every published noisy value through these laws.
Each :class:`Law` computes its draws on the fast path (float64, from the first 64 random
bits of each uniform) together with a rigorous bound on their error, and evaluates a draw
exactly in ball arithmetic (Arb) on demand, from uniforms extended 64 bits at a time:

* ``laplace``: a sign bit and :math:`V\sim U(0,1)`; :math:`W = \pm(-\ln V)`.
* ``gaussian``: Box–Muller, :math:`W = \sqrt{-2\ln V_1}\cos(2\pi V_2)` and the ``sin``
  partner for the next cell (one pair of uniforms per two cells).
* ``smooth_gamma``: density :math:`(\sqrt2/\pi)/(1+z^4)` by rejection from a standard
  Cauchy :math:`Z = \pm\cot(\pi P)`, :math:`P\sim U(0,\frac12)`, accepted when
  :math:`V < 2(1+Z^2)/((1+\sqrt2)(1+Z^4))`; every accept/reject decision is certified
  (refined in ball arithmetic when the float decision is not certain).
* ``ramp``: noise infusion's distortion factors, by their inverse CDF.

The constants below are the fast path's error analysis: :data:`U` (float64's unit
roundoff), :data:`LIBM_RELATIVE_ERROR` (the assumed bound on library functions' error,
checked against Arb by the tests) and the per-law bounds outside each law's rare tail.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from eree.mechanisms.noise import FloatArray, NoiseSource

if TYPE_CHECKING:  # pragma: no cover
    from flint import arb

__all__ = [
    "LAPLACE_LAW",
    "LAWS",
    "LIBM_RELATIVE_ERROR",
    "Law",
    "U",
]

#: unit roundoff of float64 (every IEEE operation is correctly rounded: error ≤ U·|result|)
U = 2.0**-53
#: assumed bound on the relative error of the library's log, log1p, sqrt, tan, sin and cos
#: in float64: 2⁻⁴⁴ ≈ 512 ulp, far above the documented maximum errors of glibc (≤ 1–2 ulp)
#: and of NumPy's vectorised routines (≤ 4 ulp). Tests check it against Arb.
LIBM_RELATIVE_ERROR = 2.0**-44
#: safety factor on every fast-path bound (covers second-order terms of the analysis)
SAFETY = 1.0 + 2.0**-10
_MASK63 = np.uint64(2**63 - 1)
_TWO_M64 = 2.0**-64
_TWO_M63 = 2.0**-63
#: bits of precision of the first slow-path attempt and per refinement step
FIRST_PRECISION = 128
REFINEMENT_BITS = 64
MAX_REFINEMENTS = 60


# --------------------------------------------------------------------------- uniforms


@dataclass
class Uniform:
    """A uniform real number known to lie in [m/2^k, (m+1)/2^k) (k its known bits)."""

    m: int
    k: int

    def extend(self, word: int) -> None:
        self.m = (self.m << 64) | int(word)
        self.k += 64

    def ball(self) -> arb:
        """The interval as an Arb ball (exact midpoint and radius)."""
        from flint import arb, fmpz

        mid = arb(fmpz(2 * self.m + 1)) * arb(2) ** (-(self.k + 1))
        return arb(mid=mid, rad=arb(2) ** (-(self.k + 1)))


class _Replay(NoiseSource):
    """Hands out given words again (to recompute chosen cells of a draw)."""

    mode = "replay"

    def __init__(self, words: NDArray[np.uint64]) -> None:
        self.words, self.at = np.ascontiguousarray(words, dtype=np.uint64).ravel(), 0

    def bits(self, size: int) -> NDArray[np.uint64]:
        out = self.words[self.at : self.at + size]
        if out.size != size:  # pragma: no cover - a programming error
            raise RuntimeError("replay ran out of words")
        self.at += size
        return out


# Scalar bounds of the laws' first test (:meth:`Law.draw`), outside their tails. ρ is
# LIBM_RELATIVE_ERROR, U the unit roundoff; _FUDGE covers the second-order terms.
_SIGN = np.uint64(1 << 63)
_FUDGE = 1.0 + 2.0**-8
# Laplace, V̂ ≥ 2⁻²⁰ (m ≥ 2⁴³): Ê ≤ 20 ln 2 (1 + ρ) < 13.87; ΔV/V̂min ≤ (2⁻⁴⁴ + 2U)(1 + 2⁻⁴²)
_LAP_TAIL_M = np.uint64(2**43)
_LAP_WMAX = 13.87
_LAP_EW = (LIBM_RELATIVE_ERROR * _LAP_WMAX + (2.0**-44 + 2 * U) * (1 + 2.0**-42)) * _FUDGE
# Gaussian, 2⁻²⁰ ≤ V̂₁ ≤ 1 − 2⁻¹²: lg = −2 ln V̂₁ ∈ [2⁻¹¹, 27.73], R ∈ [2⁻⁵·⁵, 5.2661]
_G_LO = np.uint64(2**44)
_G_HI = np.uint64(2**64 - 2**52)
_G_RMAX = 5.2661
_G_RMIN = 2.0**-5.5 * (1 - 2.0**-20)
# e_l ≤ (ρ + U)·lg + 2ΔV₁/V̂₁min and lg ≥ 4e_l, so e_r = e_l/R + U·R (GaussianLaw.fast)
_G_ER = (
    (LIBM_RELATIVE_ERROR + U) * _G_RMAX * (1 + 4 * U)
    + 2 * (2.0**-45 + 2 * U) * (1 + 2.0**-40) / _G_RMIN
    + U * _G_RMAX
) * _FUDGE
# θ = 2πV̂₂: e_θ ≤ 2π(2⁻⁶⁵ + 2U) + 3U·2π; |cos θ − ĉos| ≤ ρ + e_θ + U
_G_ETRIG = (LIBM_RELATIVE_ERROR + 2 * math.pi * (2.0**-65 + 2 * U) + 6 * math.pi * U + U) * _FUDGE
_G_EW = (_G_RMAX * _G_ETRIG + _G_ER + _G_ER * _G_ETRIG + U * _G_RMAX * (1 + U)) * _FUDGE
# Smooth Gamma: proposals with P ≥ 2⁻⁴⁰ (m ≥ 2²⁴) decided on the margin 2⁻⁴²: ΔV ≤
# 2⁻⁶⁵ + 2U, â's own error ≤ 10U (a ≤ 1), sup |a′|·e_Z ≤ 4K·½·(ρ + 6U) ≈ 4.8e-14: in all
# < 5.1e-14 < 2⁻⁴² ≈ 2.3e-13. Accepted cells with |Ẑ| ≤ 1024 (P ≥ atan(1/1024)/π).
_SG_TAIL_P = np.uint64(2**24)
_SG_MARGIN = 2.0**-42
_SG_ZMAX = 1024.0 * (1 + 2.0**-20)
_SG_Z_M = np.uint64(math.ceil(math.atan(1 / 1024) / math.pi * 2.0**64 * (1 + 2.0**-20)))
_SG_ZM = _SG_ZMAX * (1 + 2.0**-9) + 2.0**-9
_SG_EW = (
    math.pi * (1 + _SG_ZM**2) * (2.0**-65 + 2 * U) * (1 + 2.0**-18)
    + (LIBM_RELATIVE_ERROR + 2 * U) * _SG_ZMAX
) * _FUDGE


# --------------------------------------------------------------------------- laws


@dataclass
class Draw:
    """``n`` draws of a law with one error bound for all but a few cells.

    Attributes:
        w: the float draws ŵ.
        states: the uniforms behind them (for :meth:`Law.precise` and the slow path).
        tail: indices of the cells the scalar bounds below do not cover.
        wmax: outside ``tail``, |ŵ| ≤ wmax.
        ew: outside ``tail``, |W − ŵ| ≤ ew.
        err: the per-cell bounds when the law computed them anyway (else None).
    """

    w: FloatArray
    states: Any
    tail: NDArray[np.int64]
    wmax: float
    ew: float
    err: FloatArray | None = None


class Law(ABC):
    """A standard noise W drawn by an exact algorithm from real uniforms.

    :meth:`fast` draws ``n`` values with a bound on each one's error and returns the
    states (uniforms) the slow path refines; :meth:`draw` gives the same values with one
    bound for all cells outside a rare tail (the layer's first, cheap test), and
    :meth:`precise` the per-cell bounds of chosen cells; :meth:`ball` encloses W given
    the states.
    """

    name: str = ""

    def draw(self, source: NoiseSource, n: int) -> Draw:
        """The values of :meth:`fast`; by default with every cell in the tail."""
        w, err, states = self.fast(source, n)
        return Draw(w, states, np.arange(n, dtype=np.int64), 0.0, 0.0, err)

    def precise(self, d: Draw, idx: NDArray[np.int64]) -> tuple[FloatArray, FloatArray]:
        """ŵ and the per-cell bound of :meth:`fast` for the cells ``idx`` of a draw."""
        assert d.err is not None
        return d.w[idx], d.err[idx]

    @abstractmethod
    def fast(self, source: NoiseSource, n: int) -> tuple[FloatArray, FloatArray, Any]:
        """``n`` draws: (ŵ, bound on |W − ŵ| (inf where unknown), states)."""

    @abstractmethod
    def states_of(self, states: Any, i: int) -> list[Uniform]:
        """The uniforms of draw ``i`` (shared objects: refining them refines the draw)."""

    @abstractmethod
    def ball(self, states: Any, i: int, prec: int) -> arb:
        """A ball containing W_i for every value of its uniforms' current intervals."""

    def refine_uniforms(self, states: Any, i: int) -> list[Uniform]:
        """The uniforms of draw ``i`` that the slow path extends.

        Those carrying its value: a sign bit is exact and never extended.
        """
        return self.states_of(states, i)

    @abstractmethod
    def cdf(self, z: FloatArray) -> FloatArray:
        """P(W ≤ z) (for tests and the exact rounded laws; float accuracy)."""

    def tail_second_moment(self, t: float) -> float:
        """E[W²; |W| > t] (for the remainder of :func:`rounded_variance`); 0 if negligible."""
        return 0.0

    #: Var W
    variance: float = 1.0


def _tail_uniform(words: NDArray[np.uint64]) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Sign (±1) from the top bit, V ∈ (0, 1) from the other 63 bits: (sign, V̂, ΔV).

    The ideal V lies in [m/2⁶³, (m+1)/2⁶³); V̂ = (m + ½)/2⁶³ in float (two roundings), so
    |V − V̂| ≤ 2⁻⁶⁴ + 2U·V̂.
    """
    sign = np.where(words >> np.uint64(63), -1.0, 1.0)
    v = ((words & _MASK63).astype(np.float64) + 0.5) * _TWO_M63
    dv = _TWO_M64 + 2.0 * U * v
    return sign, v, dv


class LaplaceLaw(Law):
    """W = ±E, E = −ln V: standard Laplace (density ½e^{−|w|}), Var W = 2."""

    name = "laplace"
    variance = 2.0

    def fast(self, source: NoiseSource, n: int) -> tuple[FloatArray, FloatArray, Any]:
        words = source.bits(n)
        sign, v, dv = _tail_uniform(words)
        e = -np.log(v)
        # |E(V) − Ê| ≤ ρ·Ê + ΔV / min V  (d ln V = dV/V); min V ≥ V̂ − ΔV
        vmin = v - dv
        with np.errstate(divide="ignore"):
            err = LIBM_RELATIVE_ERROR * e + dv / vmin
        err[vmin <= 0.5 * v] = np.inf
        return sign * e, err, {"words": words, "ext": {}}

    def draw(self, source: NoiseSource, n: int) -> Draw:
        """:meth:`fast`'s values with scalar bounds outside V̂ < 2⁻²⁰ (probability 2⁻²⁰).

        There Ê = −ln V̂ ≤ 20 ln 2 (1 + ρ) < 13.87 and :meth:`fast`'s bound is at most
        13.87ρ + (2⁻⁴⁴ + 2U)(1 + 2⁻⁴²).
        """
        words = source.bits(n)
        m = words & _MASK63
        tail = np.flatnonzero(m < _LAP_TAIL_M)
        v = m.astype(np.float64)
        v += 0.5
        v *= _TWO_M63
        w = np.log(v, out=v)  # ln V̂ ≤ 0: W = −ln V̂ for a clear top bit, ln V̂ for a set one
        flip = np.bitwise_and(words, _SIGN, out=m)
        flip ^= _SIGN
        w.view(np.uint64)[...] ^= flip
        return Draw(w, {"words": words, "ext": {}}, tail, _LAP_WMAX, _LAP_EW)

    def precise(self, d: Draw, idx: NDArray[np.int64]) -> tuple[FloatArray, FloatArray]:
        """:meth:`fast` on the cells' own words (the same values)."""
        w, err, _ = self.fast(_Replay(d.states["words"][idx]), idx.size)
        return w, err

    def states_of(self, states: Any, i: int) -> list[Uniform]:
        ext = states["ext"]
        if i not in ext:
            w = int(states["words"][i])
            ext[i] = [Uniform(w >> 63, 1), Uniform(w & (2**63 - 1), 63)]
        return ext[i]

    def ball(self, states: Any, i: int, prec: int) -> arb:
        s, v = self.states_of(states, i)
        e = -(v.ball().log())
        return e if s.m == 0 else -e

    def refine_uniforms(self, states: Any, i: int) -> list[Uniform]:
        """Only V carries the value; the sign is one exact bit and is never extended."""
        return self.states_of(states, i)[1:]

    def cdf(self, z: FloatArray) -> FloatArray:
        z = np.asarray(z, dtype=np.float64)
        return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0)), 1 - 0.5 * np.exp(-np.maximum(z, 0)))


class GaussianLaw(Law):
    """Box–Muller: R = √(−2 ln V₁), θ = 2πV₂; cells 2j, 2j+1 get R cos θ, R sin θ."""

    name = "gaussian"
    variance = 1.0

    def fast(self, source: NoiseSource, n: int) -> tuple[FloatArray, FloatArray, Any]:
        pairs = (n + 1) // 2
        words = source.bits(2 * pairs).reshape(pairs, 2)
        v1 = (words[:, 0].astype(np.float64) + 0.5) * _TWO_M64
        dv1 = _TWO_M64 / 2 + 2.0 * U * v1
        v2 = (words[:, 1].astype(np.float64) + 0.5) * _TWO_M64
        dv2 = _TWO_M64 / 2 + 2.0 * U * v2
        lg = -2.0 * np.log(v1)
        v1min = v1 - dv1
        with np.errstate(divide="ignore"):
            e_l = LIBM_RELATIVE_ERROR * lg + 2.0 * dv1 / v1min + U * lg
        r = np.sqrt(lg)
        with np.errstate(divide="ignore", invalid="ignore"):
            e_r = np.where(lg >= 4.0 * e_l, e_l / r, np.sqrt(2.0 * e_l)) + U * r
        theta = (2.0 * math.pi) * v2
        e_t = 2.0 * math.pi * dv2 + 3.0 * U * theta
        c, s = np.cos(theta), np.sin(theta)
        out = np.empty((pairs, 2))
        err = np.empty((pairs, 2))
        for j, t in enumerate((c, s)):
            e_trig = LIBM_RELATIVE_ERROR * np.abs(t) + e_t + U
            w = r * t
            out[:, j] = w
            err[:, j] = r * e_trig + np.abs(t) * e_r + e_r * e_trig + U * np.abs(w)
        bad = v1min <= 0.5 * v1
        err[bad, :] = np.inf
        return out.ravel()[:n], err.ravel()[:n], {"words": words, "ext": {}}

    def draw(self, source: NoiseSource, n: int) -> Draw:
        """:meth:`fast`'s values with scalar bounds outside V̂₁ < 2⁻²⁰ or V̂₁ > 1 − 2⁻¹².

        (Probability < 2⁻¹¹.) There :meth:`fast`'s bound is at most :data:`_G_EW` and
        R ≤ 5.2661.
        """
        pairs = (n + 1) // 2
        words = source.bits(2 * pairs)
        w1, w2 = words[0::2], words[1::2]
        tp = np.flatnonzero((w1 < _G_LO) | (w1 > _G_HI))
        tail = np.stack([2 * tp, 2 * tp + 1], axis=1).ravel()
        tail = tail[tail < n]
        v1 = w1.astype(np.float64)
        v1 += 0.5
        v1 *= _TWO_M64
        lg = np.log(v1, out=v1)
        lg *= -2.0
        r = np.sqrt(lg, out=lg)
        th = w2.astype(np.float64)
        th += 0.5
        th *= _TWO_M64
        th *= 2.0 * math.pi
        out = np.empty(2 * pairs)
        np.multiply(r, np.cos(th), out=out[0::2])
        np.multiply(r, np.sin(th, out=th), out=out[1::2])
        states = {"words": words.reshape(pairs, 2), "ext": {}}
        return Draw(out[:n], states, tail, _G_RMAX, _G_EW)

    def precise(self, d: Draw, idx: NDArray[np.int64]) -> tuple[FloatArray, FloatArray]:
        """:meth:`fast` on the cells' own pairs of words (the same values)."""
        j = idx // 2
        w, err, _ = self.fast(_Replay(d.states["words"][j]), 2 * j.size)
        pick = 2 * np.arange(j.size) + idx % 2
        return w[pick], err[pick]

    def states_of(self, states: Any, i: int) -> list[Uniform]:
        j = i // 2
        ext = states["ext"]
        if j not in ext:
            a, b = (int(x) for x in states["words"][j])
            ext[j] = [Uniform(a, 64), Uniform(b, 64)]
        return ext[j]

    def ball(self, states: Any, i: int, prec: int) -> arb:
        from flint import arb

        v1, v2 = self.states_of(states, i)
        r = (-2 * v1.ball().log()).sqrt()
        theta = 2 * arb.pi() * v2.ball()
        return r * (theta.cos() if i % 2 == 0 else theta.sin())

    def cdf(self, z: FloatArray) -> FloatArray:
        from scipy.special import ndtr

        return np.asarray(ndtr(np.asarray(z, dtype=np.float64)))


#: 2/(1+√2): the Smooth Gamma rejection constant, acceptance a(z) = K(1+z²)/(1+z⁴)
_SG_K = 2.0 / (1.0 + math.sqrt(2.0))


def _sg_accept(z: FloatArray) -> FloatArray:
    """a(z) = K(1+z²)/(1+z⁴), written without overflow (relative error ≤ 10U)."""
    az = np.abs(z)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        w = 1.0 / (az * az)
        big = _SG_K * w * (1.0 + w) / (1.0 + w * w)
        z2 = az * az
        small = _SG_K * (1.0 + z2) / (1.0 + z2 * z2)
    return np.where(az > 1.0, big, small)


class SmoothGammaLaw(Law):
    """Density (√2/π)/(1+z⁴) (Haney et al. Alg 2), Var = 1, by certified rejection."""

    name = "smooth_gamma"
    variance = 1.0

    def fast(self, source: NoiseSource, n: int) -> tuple[FloatArray, FloatArray, Any]:
        out = np.empty(n)
        err = np.empty(n)
        words_out = np.empty((n, 2), dtype=np.uint64)
        ext: dict[int, list[Uniform]] = {}
        todo = np.arange(n)
        while todo.size:
            m = todo.size
            batch = int(m * 1.75) + 16
            words = source.bits(2 * batch).reshape(batch, 2)
            z, e_z, bad = self._proposal(words[:, 0])
            a = _sg_accept(z)
            e_a = 10.0 * U * a + self._lipschitz(z, e_z) * e_z
            v = (words[:, 1].astype(np.float64) + 0.5) * _TWO_M64
            dv = _TWO_M64 / 2 + 2.0 * U * v
            accept = v + dv < a - e_a
            reject = v - dv > a + e_a
            unsure = ~(accept | reject) | bad
            for j in np.flatnonzero(unsure):  # rare: decide exactly
                accept[j] = self._exact_decision(source, words[j], ext, -1 - int(j))
            idx = np.flatnonzero(accept)[:m]
            take = todo[: idx.size]  # (a contiguous run: todo shrinks from the front)
            out[take] = z[idx]
            err[take] = np.where(bad[idx], np.inf, e_z[idx])
            words_out[take] = words[idx]
            for t in _adopt(ext, idx, int(todo[0])):
                err[t] = np.inf  # refined states: the slow path evaluates them
            todo = todo[idx.size :]
        return out, err, {"words": words_out, "ext": ext}

    def draw(self, source: NoiseSource, n: int) -> Draw:
        """:meth:`fast`'s values with scalar bounds.

        A proposal with P ≥ 2⁻⁴⁰ is decided when |V̂ − â| > 2⁻⁴² (:data:`_SG_MARGIN`, above
        ΔV + â's own error + sup |a′|·e_Z there); the others go through :meth:`fast`'s
        per-proposal test and, if still unsure, :meth:`_decide`. Accepted cells with
        |Ẑ| ≤ 1024 have |Z − Ẑ| ≤ :data:`_SG_EW`; the rest are the tail.
        """
        out = np.empty(n)
        words_out = np.empty((n, 2), dtype=np.uint64)
        ext: dict[int, list[Uniform]] = {}
        forced: list[int] = []
        filled = 0
        while filled < n:
            m = n - filled
            batch = int(m * 1.75) + 16
            words = source.bits(2 * batch).reshape(batch, 2)
            w0 = words[:, 0]
            mm = w0 & _MASK63
            tail = mm < _SG_TAIL_P
            p = mm.astype(np.float64)
            p += 0.5
            p *= _TWO_M64
            p *= math.pi
            z = np.tan(p, out=p)
            np.divide(1.0, z, out=z)
            z.view(np.uint64)[...] ^= np.bitwise_and(w0, _SIGN, out=mm)
            z2 = z * z
            a = z2 + 1.0
            z2 *= z2
            z2 += 1.0
            a /= z2
            a *= _SG_K
            v = words[:, 1].astype(np.float64)
            v += 0.5
            v *= _TWO_M64
            v -= a  # V̂ − â
            accept = v < -_SG_MARGIN
            unsure = np.abs(v, out=a) <= _SG_MARGIN
            unsure |= tail
            for j in np.flatnonzero(unsure):  # rare: the per-proposal test, then exact
                accept[j] = self._decide_one(source, words[j], ext, -1 - int(j))
            idx = np.flatnonzero(accept)[:m]
            k = idx.size
            out[filled : filled + k] = z[idx]
            words_out[filled : filled + k] = words[idx]
            forced += _adopt(ext, idx, filled)
            filled += k
        big = np.flatnonzero((words_out[:, 0] & _MASK63) < _SG_Z_M)
        tail_cells = np.union1d(big, np.asarray(forced, dtype=np.int64))
        return Draw(out, {"words": words_out, "ext": ext}, tail_cells, _SG_ZMAX, _SG_EW)

    def _decide_one(
        self, source: NoiseSource, pair: NDArray[np.uint64], ext: dict[int, list[Uniform]],
        key: int,
    ) -> bool:  # fmt: skip
        """Accept one proposal: :meth:`fast`'s per-proposal test, else :meth:`_decide`."""
        z, e_z, bad = self._proposal(pair[:1])
        a = _sg_accept(z)
        e_a = 10.0 * U * a + self._lipschitz(z, e_z) * e_z
        v = (pair[1:2].astype(np.float64) + 0.5) * _TWO_M64
        dv = _TWO_M64 / 2 + 2.0 * U * v
        acc, rej = bool((v + dv < a - e_a)[0]), bool((v - dv > a + e_a)[0])
        if not bad[0] and (acc or rej):
            return acc
        return self._exact_decision(source, pair, ext, key)

    def _exact_decision(
        self, source: NoiseSource, pair: NDArray[np.uint64], ext: dict[int, list[Uniform]],
        key: int,
    ) -> bool:  # fmt: skip
        """:meth:`_decide` on a proposal's words.

        An accepted proposal's refined uniforms are kept under the provisional ``key``
        (−1 − its index in the batch, see :func:`_adopt`).
        """
        w0, w1 = int(pair[0]), int(pair[1])
        states = [Uniform(w0 >> 63, 1), Uniform(w0 & (2**63 - 1), 63), Uniform(w1, 64)]
        ok = self._decide(source, states)
        if ok:
            ext[key] = states
        return ok

    def precise(self, d: Draw, idx: NDArray[np.int64]) -> tuple[FloatArray, FloatArray]:
        """:meth:`_proposal`'s bound for the accepted cells ``idx``."""
        z, e_z, bad = self._proposal(d.states["words"][idx, 0])
        err = np.where(bad, np.inf, e_z)
        err[np.isin(idx, list(d.states["ext"]))] = np.inf  # decided exactly: the slow path
        return z, err

    @staticmethod
    def _proposal(w: NDArray[np.uint64]) -> tuple[FloatArray, FloatArray, NDArray[np.bool_]]:
        """Z = ±cot(πP), P ∈ (0, ½) from 63 bits: (Ẑ, bound, unusable)."""
        sign = np.where(w >> np.uint64(63), -1.0, 1.0)
        p = ((w & _MASK63).astype(np.float64) + 0.5) * _TWO_M64
        dp = _TWO_M64 / 2 + 4.0 * U * p  # + the roundings of π and π·P̂, as perturbations of P
        with np.errstate(divide="ignore"):
            z = 1.0 / np.tan(math.pi * p)
        # |cot(π(P−Δ)) − cot(πP)| ≤ πΔ(1+Z²)/(1−Δ/P)² (sin concave on [0, π/2])
        zmax = np.abs(z) * (1.0 + 2.0**-9) + 2.0**-9
        e_z = math.pi * (1.0 + zmax * zmax) * dp * (1.0 + 2.0**-18)
        e_z += (LIBM_RELATIVE_ERROR + 2.0 * U) * np.abs(z)
        bad = (dp > 2.0**-20 * p) | (e_z > 2.0**-10 * (1.0 + np.abs(z)))
        return sign * z, e_z, bad

    @staticmethod
    def _lipschitz(z: FloatArray, e_z: FloatArray) -> FloatArray:
        """A bound of |a′| on [|Ẑ| − e, |Ẑ| + e]: |a′(z)| ≤ 4K|z|/(1+z⁴) ≤ 4K·0.5699."""
        az = np.abs(z)
        lo = np.maximum(az - e_z, 0.0)
        with np.errstate(over="ignore", invalid="ignore"):
            g = (az + e_z) / (1.0 + lo**4)
        return 4.0 * _SG_K * np.minimum(0.57, np.nan_to_num(g, nan=0.57, posinf=0.57))

    @staticmethod
    def _z_ball(sign: Uniform, p: Uniform) -> arb:
        from flint import arb

        pb = p.ball() / 2  # P = (63-bit uniform)/2 ∈ (0, ½)
        z = 1 / (arb.pi() * pb).tan()
        return z if sign.m == 0 else -z

    def _decide(self, source: NoiseSource, states: list[Uniform]) -> bool:
        """Accept (True) or reject the proposal exactly, extending its uniforms as needed."""
        from flint import ctx

        prec = FIRST_PRECISION
        for _ in range(MAX_REFINEMENTS):
            old = ctx.prec
            ctx.prec = prec
            try:
                z = self._z_ball(states[0], states[1])
                if z.is_finite():
                    z2 = z * z
                    a = _SG_K_ball() * (1 + z2) / (1 + z2 * z2)
                    v = states[2].ball()
                    if v < a:
                        return True
                    if v > a:
                        return False
            finally:
                ctx.prec = old
            for u in states[1:]:
                u.extend(source.bits(1)[0])
            prec += REFINEMENT_BITS
        raise RuntimeError("the sampler could not decide a rejection step")  # pragma: no cover

    def states_of(self, states: Any, i: int) -> list[Uniform]:
        ext = states["ext"]
        if i not in ext:
            a, b = (int(x) for x in states["words"][i])
            ext[i] = [Uniform(a >> 63, 1), Uniform(a & (2**63 - 1), 63), Uniform(b, 64)]
        return ext[i]

    def ball(self, states: Any, i: int, prec: int) -> arb:
        s, p, _ = self.states_of(states, i)
        return self._z_ball(s, p)

    def refine_uniforms(self, states: Any, i: int) -> list[Uniform]:
        """Only P carries the value; the sign is one exact bit and V was decided."""
        return self.states_of(states, i)[1:2]

    def cdf(self, z: FloatArray) -> FloatArray:
        from eree.mechanisms.samplers import smooth_gamma_cdf

        return smooth_gamma_cdf(z)

    def tail_second_moment(self, t: float) -> float:
        r"""E[Z²; |Z| > t] = 2·(√2/π)∫_t^∞ z²/(1+z⁴) dz = 2(F(1/t) − ½) (z = 1/s)."""
        return float(2.0 * (self.cdf(np.array(1.0 / t)) - 0.5))


def _adopt(ext: dict[int, list[Uniform]], idx: NDArray[np.int64], first: int) -> list[int]:
    """Move the refined uniforms of exactly decided proposals to their cells.

    ``ext`` holds them under provisional keys −1 − (index in the batch); the accepted
    proposals ``idx`` (batch indexes, ascending) fill the cells ``first``, ``first`` + 1, ….
    Returns the cells that received refined uniforms; rejected ones' are dropped.
    """
    cells = []
    for key in [k for k in ext if k < 0]:
        j = -1 - key
        pos = int(np.searchsorted(idx, j))
        states = ext.pop(key)
        if pos < idx.size and idx[pos] == j:
            ext[first + pos] = states
            cells.append(first + pos)
    return cells


def _SG_K_ball() -> arb:  # noqa: N802 - a constant
    from flint import arb

    return 2 / (1 + arb(2).sqrt())


class RampLaw(Law):
    r"""Noise infusion's distortion W = ±(c − √V), c = t/(t−s): f − 1 = (t − s)·W (ramp density).

    With δ = |f − 1| = t − (t−s)√V and V ∼ U(0, 1) (the ramp's inverse CDF, with
    V = 1 − U), and an equally likely sign.
    """

    name = "ramp"
    variance = float("nan")

    def __init__(self, s: float, t: float) -> None:
        self.s, self.t = float(s), float(t)
        self.c = self.t / (self.t - self.s)

    def fast(self, source: NoiseSource, n: int) -> tuple[FloatArray, FloatArray, Any]:
        words = source.bits(n)
        sign, v, dv = _tail_uniform(words)
        root = np.sqrt(v)
        vmin = np.maximum(v - dv, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            e_root = np.minimum(dv / (2.0 * np.sqrt(vmin)), np.sqrt(dv))
        mag = self.c - root
        err = (LIBM_RELATIVE_ERROR + U) * root + e_root + 4.0 * U * self.c + U * np.abs(mag)
        return sign * mag, err, {"words": words, "ext": {}}

    def states_of(self, states: Any, i: int) -> list[Uniform]:
        """The sign bit and the 63-bit uniform of draw ``i`` (as for Laplace)."""
        return LAPLACE_LAW.states_of(states, i)

    def refine_uniforms(self, states: Any, i: int) -> list[Uniform]:
        """Only V carries the value; the sign bit is never extended."""
        return self.states_of(states, i)[1:]

    def ball(self, states: Any, i: int, prec: int) -> arb:
        from flint import arb

        s, v = self.states_of(states, i)
        c = arb(self.t) / (arb(self.t) - arb(self.s))
        mag = c - v.ball().sqrt()
        return mag if s.m == 0 else -mag

    def cdf(self, z: FloatArray) -> FloatArray:  # pragma: no cover - not used
        raise NotImplementedError


LAPLACE_LAW = LaplaceLaw()
LAWS: dict[str, Law] = {x.name: x for x in (LAPLACE_LAW, GaussianLaw(), SmoothGammaLaw())}
