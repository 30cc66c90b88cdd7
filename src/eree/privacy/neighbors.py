r"""Neighbor functions ψ and uncertainty intervals (Webb et al., ``papers/004_*``, §5).

A **neighbor function** (Def 5.1) is a map :math:`\psi:\mathbb{R}_{\ge 0}\to\mathbb{R}` that is
(1) strictly increasing, (2) continuous, (3) concave, and (4) such that
:math:`x\mapsto\psi(e^x)` is convex. Two values x, y of a confidential attribute with
distance parameter γ are *ψ-close* when :math:`|\psi(x)-\psi(y)|\le\gamma`.

The **uncertainty interval** around y (Def 5.2) is

.. math:: \mathcal I_{\psi,\gamma}(y) = \bigl[\psi^{-1}(\max(\psi(0), \psi(y)-\gamma)),\;
          \psi^{-1}(\psi(y)+\gamma)\bigr].

Built-in neighbor functions (frozen value objects):

* :class:`SqrtShift` — :math:`\psi(x)=\sqrt{x+a}` (``sqrt`` is ``a = 0``; §5.3).
* :class:`LogShift` — :math:`\psi(x)=\log(x+a)`, ``a > 0`` for releases (plain log,
  ``a = 0``, is undefined at 0 and only serves the semantics of Table 2).
* :class:`DPNeighbor` — :math:`\psi(x)=x` with γ = d: person-level DP with a per-person
  contribution bound d (§5.4.3).
* :class:`CombinedNeighbor` — Thm 5.10 (``mode="min"``, :func:`combine`: intervals contain
  both parts' intervals) and Thm 5.11 (``mode="max"``, :func:`heterogeneous`: intervals
  inside both), for any number of parts.
* :class:`CustomNeighbor` — a user callable, checked numerically for the four conditions
  (:func:`neighbor_from_callable`).

:func:`neighbor_from_spec` parses the spec forms of ``[privacy].neighbor``
(docs/design.md#release-spec).

Every ``inverse`` here is the *clamped* inverse: arguments below ψ(0) map to 0 (the
smallest value of the domain). This is what Def 5.2, Thm 6.7 ("0 when the argument is
below ψ(0)") and the CIs of §6.1 need.
"""

from __future__ import annotations

import difflib
import functools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from typing_extensions import override

from eree.errors import PrivacyParameterError, SpecError
from eree.privacy.scipy_lazy import brentq

FloatArray = NDArray[np.float64]

__all__ = [
    "CombinedNeighbor",
    "CustomNeighbor",
    "DPNeighbor",
    "LogShift",
    "NeighborFunction",
    "SqrtShift",
    "check_neighbor_conditions",
    "combine",
    "heterogeneous",
    "neighbor_from_callable",
    "neighbor_from_spec",
]

#: grid on which combined neighbor functions locate the points where the active part
#: changes, and on which user-supplied ψ are checked: 0 and 10^-12 … 10^15
_GRID_LO_EXP = -12.0
_GRID_HI_EXP = 15.0


def _arr(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def _out(v: FloatArray, like: ArrayLike) -> Any:
    """Return a Python float for scalar input, an array otherwise."""
    return float(v) if np.ndim(like) == 0 else v


class NeighborFunction(ABC):
    """A neighbor function ψ (Def 5.1). Subclasses are frozen dataclasses.

    Attributes:
        kind: the spec name (``sqrt``, ``sqrt_shift``, ``log_shift``, ``dp``, ``combine``,
            ``heterogeneous``, ``custom``).
        default_gamma: the distance parameter the function implies when the spec gives
            none (``dp`` → d; ``combine``/``heterogeneous`` → γ* = 1), else None.
    """

    kind: ClassVar[str] = ""

    @property
    def default_gamma(self) -> float | None:
        """The distance implied by ψ itself (``dp``: d), or None."""
        return None

    @abstractmethod
    def _psi(self, x: FloatArray) -> FloatArray: ...

    @abstractmethod
    def _inverse(self, y: FloatArray) -> FloatArray:
        """Inverse on [ψ(0), ∞); callers clamp."""

    @abstractmethod
    def _derivative(self, x: FloatArray) -> FloatArray: ...

    @property
    @abstractmethod
    def asymptotic_slope(self) -> float:
        r""":math:`\lim_{x\to\infty}\psi'(x)` (0 for sqrt and log)."""

    @abstractmethod
    def to_spec(self) -> str | dict[str, Any]:
        """The spec form (``neighbor_from_spec(f.to_spec()) == f`` for built-ins)."""

    @abstractmethod
    def describe(self) -> str:
        """A short formula for humans, e.g. ``ψ(x) = √x``."""

    # -- exact evaluation (the float-safe sampling layer) ---------------------------
    #: bound on the relative error of the float ψ of the built-ins (library log/sqrt
    #: error bound 2⁻⁴⁴ plus a few roundings; see eree.mechanisms.sampling)
    _PSI_REL_ERROR: ClassVar[float] = 2.0**-44 + 2.0**-50

    def psi_ball(self, x: Any) -> Any:
        """ψ(x) as an Arb ball containing the exact value (x an Arb ball); None: no exact form."""
        return None

    def psi_error(self, x: FloatArray, value: FloatArray) -> FloatArray:
        """A bound on |float ψ(x) − ψ(x)| per value (``value`` = the float ψ(x))."""
        return self._PSI_REL_ERROR * np.abs(value) + 2.0**-51

    def derivative_ball(self, x: Any) -> Any:
        """ψ′(x) as an Arb ball (x an Arb ball); None: no exact form."""
        return None

    @property
    def psi_excess(self) -> float:
        """A bound on sup |ψ̃ − ψ|, ψ̃ the ψ eree evaluates exactly (:meth:`psi_ball`).

        ψ is the function of the definition; the bound is 0 where they are the same.

        The noise of a ψ-space mechanism is drawn for the distance γ + 2·psi_excess, so
        that ψ-neighbours of the definition stay within it (the transform's own error is
        charged to the distance).
        """
        return 0.0

    # -- public, vectorised API ----------------------------------------------------
    def psi(self, x: ArrayLike) -> Any:
        """ψ(x), elementwise (x ≥ 0)."""
        return _out(self._psi(_arr(x)), x)

    @functools.cached_property
    def psi0(self) -> float:
        """ψ(0) (−∞ for plain log); computed once (ψ is fixed with the instance)."""
        return float(self._psi(np.zeros(1))[0])

    def inverse(self, y: ArrayLike) -> Any:
        """ψ⁻¹(y), elementwise; arguments below ψ(0) give 0 (clamped inverse)."""
        ya = _arr(y)
        p0 = self.psi0
        below = ~(ya > p0)
        safe = np.where(below, p0 if math.isfinite(p0) else 0.0, ya)
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.where(below, 0.0, self._inverse(safe))
        return _out(np.maximum(out, 0.0), y)

    def derivative(self, x: ArrayLike) -> Any:
        """ψ′(x), elementwise (may be +∞ at 0)."""
        return _out(self._derivative(_arr(x)), x)

    def uncertainty_interval(self, y: ArrayLike, gamma: float) -> tuple[Any, Any]:
        r"""Def 5.2: :math:`[\psi^{-1}(\max(\psi(0),\psi(y)-\gamma)),\ \psi^{-1}(\psi(y)+\gamma)]`.

        Args:
            y: value(s) ≥ 0 of the confidential attribute.
            gamma: the attribute's distance parameter γ ≥ 0.
        """
        if not (gamma >= 0 and math.isfinite(gamma)):
            raise PrivacyParameterError(f"distance parameter must be finite and ≥ 0 (got {gamma})")
        ya = _arr(y)
        py = self._psi(ya)
        low = self.inverse(np.maximum(self.psi0, py - gamma))
        high = self.inverse(py + gamma)
        return _out(_arr(low), y), _out(_arr(high), y)

    def sensitivity(self, gamma: float) -> float:
        r"""ψ-neighbor sensitivity (Def 6.1) of one value (one sum entry) under distance γ.

        :math:`\sup\{|x-y| : |\psi(x)-\psi(y)|\le\gamma\} = \gamma/\lim_{x\to\infty}\psi'(x)`
        (the gap grows with x by Thm 5.3(3)); +∞ for sqrt and log.
        """
        slope = self.asymptotic_slope
        return math.inf if slope <= 0 else gamma / slope


# --------------------------------------------------------------------------------------
# Built-ins
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SqrtShift(NeighborFunction):
    r""":math:`\psi(x)=\sqrt{x+a}`, a ≥ 0 (a = 0 is the paper's recommended ``sqrt``)."""

    a: float = 0.0
    kind: ClassVar[str] = "sqrt_shift"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.a) and self.a >= 0):
            raise PrivacyParameterError(f"sqrt_shift needs a finite shift a ≥ 0 (got {self.a!r})")

    def _psi(self, x: FloatArray) -> FloatArray:
        return np.sqrt(x + self.a)

    @override
    def psi_ball(self, x: Any) -> Any:
        return (x + self.a).sqrt()

    @override
    def derivative_ball(self, x: Any) -> Any:
        return 1 / (2 * (x + self.a).sqrt())

    @override
    def psi_error(self, x: FloatArray, value: FloatArray) -> FloatArray:
        """At most 2⁻⁵¹·ψ, with room to spare.

        x + a rounds once (relative 2⁻⁵³, halved by the root); IEEE sqrt is correctly
        rounded (2⁻⁵³).
        """
        return 2.0**-51 * np.abs(value)

    def _inverse(self, y: FloatArray) -> FloatArray:
        return y * y - self.a

    def _derivative(self, x: FloatArray) -> FloatArray:
        with np.errstate(divide="ignore"):
            return 0.5 / np.sqrt(x + self.a)

    @override
    @property
    def asymptotic_slope(self) -> float:
        return 0.0

    @override
    def to_spec(self) -> str | dict[str, Any]:
        return "sqrt" if self.a == 0 else {"kind": "sqrt_shift", "a": self.a}

    @override
    def describe(self) -> str:
        return "ψ(x) = √x" if self.a == 0 else f"ψ(x) = √(x + {self.a:g})"


@dataclass(frozen=True)
class LogShift(NeighborFunction):
    r""":math:`\psi(x)=\log(x+a)`.

    Releases need a > 0 (:func:`neighbor_from_spec` refuses a ≤ 0): with a = 0,
    ψ(0) = −∞ and a zero would be released exactly. ``LogShift(0.0)`` is the paper's
    plain ``log`` and is accepted only for semantics (Table 2).
    """

    a: float = 1.0
    kind: ClassVar[str] = "log_shift"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.a) and self.a >= 0):
            raise PrivacyParameterError(f"log_shift needs a finite shift a > 0 (got {self.a!r})")

    def _psi(self, x: FloatArray) -> FloatArray:
        with np.errstate(divide="ignore"):
            return np.log(x + self.a)

    @override
    def psi_ball(self, x: Any) -> Any:
        return (x + self.a).log()

    @override
    def derivative_ball(self, x: Any) -> Any:
        return 1 / (x + self.a)

    def _inverse(self, y: FloatArray) -> FloatArray:
        return np.exp(y) - self.a

    def _derivative(self, x: FloatArray) -> FloatArray:
        with np.errstate(divide="ignore"):
            return 1.0 / (x + self.a)

    @override
    @property
    def asymptotic_slope(self) -> float:
        return 0.0

    @override
    def to_spec(self) -> str | dict[str, Any]:
        return {"kind": "log_shift", "a": self.a}

    @override
    def describe(self) -> str:
        return "ψ(x) = log(x)" if self.a == 0 else f"ψ(x) = log(x + {self.a:g})"


@dataclass(frozen=True)
class DPNeighbor(NeighborFunction):
    r""":math:`\psi(x)=x` with distance γ = d: person-level DP (§5.4.3).

    Attributes:
        d: optional default per-person contribution bound (used as γ where the spec gives
            no distance for an attribute).
    """

    d: float | None = None
    kind: ClassVar[str] = "dp"

    def __post_init__(self) -> None:
        if self.d is not None and not (math.isfinite(self.d) and self.d > 0):
            raise PrivacyParameterError(f"dp needs a contribution bound d > 0 (got {self.d!r})")

    @override
    @property
    def default_gamma(self) -> float | None:
        return self.d

    def _psi(self, x: FloatArray) -> FloatArray:
        return x.copy()

    @override
    def psi_ball(self, x: Any) -> Any:
        return x

    @override
    def derivative_ball(self, x: Any) -> Any:
        return x * 0 + 1

    @override
    def psi_error(self, x: FloatArray, value: FloatArray) -> FloatArray:
        return np.zeros(np.shape(value))

    def _inverse(self, y: FloatArray) -> FloatArray:
        return y.copy()

    def _derivative(self, x: FloatArray) -> FloatArray:
        return np.ones_like(x)

    @override
    @property
    def asymptotic_slope(self) -> float:
        return 1.0

    @override
    def to_spec(self) -> str | dict[str, Any]:
        return "dp" if self.d is None else {"kind": "dp", "d": self.d}

    @override
    def describe(self) -> str:
        return "ψ(x) = x (person-level DP)"


# --------------------------------------------------------------------------------------
# Combinations (Thm 5.10, 5.11)
# --------------------------------------------------------------------------------------


def _find_crossing(h: Callable[[float], float], lo: float, hi: float) -> float:
    """A root of h in [lo, hi] (geometric midpoint when h has no strict sign change)."""
    try:
        hl, hh = h(lo), h(hi)
        if hl == 0:
            return lo
        if hh == 0:
            return hi
        if math.isfinite(hl) and math.isfinite(hh) and hl * hh < 0:
            return float(brentq(h, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps))
    except (ValueError, RuntimeError):  # pragma: no cover - defensive
        pass
    return math.sqrt(lo * hi) if lo > 0 else hi


@dataclass(frozen=True)
class CombinedNeighbor(NeighborFunction):
    r"""ψ* from Thm 5.10 (``mode="min"``) or Thm 5.11 (``mode="max"``), with γ* = 1.

    .. math:: \frac{d\psi^*}{dx} = \operatorname{min/max}_k \frac{1}{\gamma_k}
              \frac{d\psi_k}{dx},\qquad \psi^*(x) = \int_0^x \frac{d\psi^*}{dt}\,dt.

    The integral is exact: ψ* is piecewise :math:`c_j + (\psi_{k_j}(x)-\psi_{k_j}(b_j))/
    \gamma_{k_j}` on the segments :math:`[b_j, b_{j+1}]` where part :math:`k_j` is the
    active (min or max) one. The breakpoints are located numerically: the active part is
    evaluated on a log grid 10⁻¹² … 10¹⁵ and each change is refined by Brent's method on
    the difference of the two scaled derivatives. Beyond 10¹⁵ the last active part is
    assumed to stay active; below 10⁻¹² the first one.

    Attributes:
        parts: the (ψ_k, γ_k) pairs.
        mode: ``"min"`` (combine, Thm 5.10: intervals contain every part's interval) or
            ``"max"`` (heterogeneous composition, Thm 5.11: intervals inside every part's).
    """

    parts: tuple[tuple[NeighborFunction, float], ...]
    mode: str = "min"
    _breaks: tuple[float, ...] = field(init=False, repr=False, compare=False)
    _active: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _offsets: tuple[float, ...] = field(init=False, repr=False, compare=False)
    #: ψ_k(b_j) of each segment's active part at its start (the formula's constant)
    _starts: tuple[float, ...] = field(init=False, repr=False, compare=False)

    @override
    @property
    def kind(self) -> str:  # type: ignore[override]
        return "combine" if self.mode == "min" else "heterogeneous"

    def __post_init__(self) -> None:
        if self.mode not in ("min", "max"):
            raise PrivacyParameterError(f"mode must be 'min' or 'max' (got {self.mode!r})")
        if len(self.parts) < 2:
            raise PrivacyParameterError("combining neighbor functions needs at least two parts")
        for f, g in self.parts:
            if not isinstance(f, NeighborFunction):
                raise PrivacyParameterError(f"{f!r} is not a neighbor function")
            if not (math.isfinite(g) and g > 0):
                raise PrivacyParameterError(
                    f"each part needs a distance parameter γ > 0 (got {g!r} for {f.describe()})"
                )
        grid = np.concatenate([[0.0], np.logspace(_GRID_LO_EXP, _GRID_HI_EXP, 2701)])
        scaled = self._scaled_derivatives(grid[1:])
        pick = np.argmin if self.mode == "min" else np.argmax
        idx = pick(scaled, axis=0)
        breaks: list[float] = [0.0]
        active: list[int] = [int(idx[0])]
        for j in range(1, idx.size):
            if idx[j] == active[-1]:
                continue
            a, b = active[-1], int(idx[j])
            fa, ga = self.parts[a]
            fb, gb = self.parts[b]

            def h(t: float, fa: NeighborFunction = fa, ga: float = ga,
                  fb: NeighborFunction = fb, gb: float = gb) -> float:  # fmt: skip
                return float(fa.derivative(t)) / ga - float(fb.derivative(t)) / gb

            breaks.append(_find_crossing(h, float(grid[j]), float(grid[j + 1])))
            active.append(b)
        offsets = [0.0]
        first_f = self.parts[active[0]][0]
        if not math.isfinite(first_f.psi0):
            raise PrivacyParameterError(
                f"the combined ψ* is not defined at 0: {first_f.describe()} is the active part "
                "near 0 and ψ(0) is not finite"
            )
        for j in range(1, len(breaks)):
            f, g = self.parts[active[j - 1]]
            offsets.append(
                offsets[-1] + (float(f.psi(breaks[j])) - float(f.psi(breaks[j - 1]))) / g
            )
        object.__setattr__(self, "_breaks", tuple(breaks))
        object.__setattr__(self, "_active", tuple(active))
        object.__setattr__(self, "_offsets", tuple(offsets))
        starts = [float(self.parts[k][0].psi(b)) for b, k in zip(breaks, active, strict=True)]
        object.__setattr__(self, "_starts", tuple(starts))

    @functools.cached_property
    def _excess(self) -> float:
        """Sup |ψ̃ − ψ*| (see :attr:`psi_excess`), computed once in Arb."""
        from flint import arb, ctx

        old = ctx.prec
        ctx.prec = 200
        try:
            if any(f.psi_ball(arb(1.0)) is None or f.derivative_ball(arb(1.0)) is None
                   for f, _ in self.parts):  # fmt: skip
                return 0.0  # a user-defined part: its float ψ is declared the ψ
            exact = arb(0)
            worst = arb(0)
            slivers = arb(0)
            for j in range(1, len(self._breaks)):
                f, g = self.parts[self._active[j - 1]]
                lo, hi = arb(self._breaks[j - 1]), arb(self._breaks[j])
                exact += (f.psi_ball(hi) - f.psi_ball(lo)) / g
                worst = worst.max(abs(arb(self._offsets[j]) - exact))
                slivers += self._sliver(j)
            eta = worst + slivers
            if not eta.is_finite():
                return math.inf
            return float(np.nextafter(float(eta.upper()), np.inf))
        finally:
            ctx.prec = old

    def _sliver(self, j: int) -> Any:
        """∫ |ψ̃′ − ψ*′| between the float breakpoint b̃_j and the true change of part.

        The true change lies where h = ψ_a′/γ_a − ψ_b′/γ_b changes sign; if h's signs at
        b̃_j ∓ w (w = 2⁻⁴⁰b̃_j) differ for certain, it lies within w and the integral is at
        most w·sup|h| there; otherwise the whole log-grid cell around b̃_j is used.
        """
        from flint import arb

        a, b = self._active[j - 1], self._active[j]
        (fa, ga), (fb, gb) = self.parts[a], self.parts[b]

        def h(x: Any) -> Any:
            return fa.derivative_ball(x) / ga - fb.derivative_ball(x) / gb

        bt = self._breaks[j]
        w = 2.0**-40 * bt + 2.0**-1000
        lo, hi = h(arb(bt - w)), h(arb(bt + w))
        if (lo > 0 and hi < 0) or (lo < 0 and hi > 0):
            return arb(w) * abs(h(arb(mid=bt, rad=w))).upper()
        grid = np.logspace(_GRID_LO_EXP, _GRID_HI_EXP, 2701)
        i = int(np.searchsorted(grid, bt))
        g_lo = float(grid[max(i - 2, 0)]) * 0.5
        g_hi = float(grid[min(i + 1, grid.size - 1)]) * 2.0
        width = g_hi - g_lo
        return arb(width) * abs(h(arb(mid=(g_lo + g_hi) / 2, rad=width / 2))).upper()

    @override
    @property
    def psi_excess(self) -> float:
        """A bound on |ψ̃ − ψ*|, ψ̃ defined by the float breakpoints and offsets.

        From the offsets' rounding and the breakpoints' distance from the true changes of
        part, computed in Arb.
        """
        return self._excess

    @override
    def psi_ball(self, x: Any) -> Any:
        """ψ* as evaluated: the parts' exact ψ on the float breakpoints' segments.

        The float breakpoints and offsets define the ψ* that eree uses (docs/privacy.md).
        """
        xf = float(x.mid())
        j = max(0, min(int(np.searchsorted(np.asarray(self._breaks), xf, side="right")) - 1,
                       len(self._breaks) - 1))  # fmt: skip
        f, g = self.parts[self._active[j]]
        from flint import arb

        inner, at_break = f.psi_ball(x), f.psi_ball(arb(self._breaks[j]))
        if inner is None or at_break is None:
            return None
        return self._offsets[j] + (inner - at_break) / g

    @override
    def psi_error(self, x: FloatArray, value: FloatArray) -> FloatArray:
        """The error of offset + (ψ_k(x) − ψ_k(b))/γ_k.

        The active part's own errors at x and at its breakpoint, over γ_k, plus the four
        roundings of the formula (2⁻⁵³ each).
        """
        seg = np.clip(self._segment(x), 0, len(self._breaks) - 1)
        out = np.zeros(np.shape(x))
        for j, k in enumerate(self._active):
            m = seg == j
            if not m.any():
                continue
            f, g = self.parts[k]
            b = np.full(int(m.sum()), self._breaks[j])
            fx, fb = _arr(f.psi(x[m])), _arr(f.psi(b))
            inner = _arr(f.psi_error(x[m], fx)) + _arr(f.psi_error(b, fb))
            out[m] = inner / g * (1 + 2.0**-52) + 2.0**-51 * (
                abs(self._offsets[j]) + (np.abs(fx) + np.abs(fb)) / g + np.abs(value[m])
            )
        return out

    def _scaled_derivatives(self, x: FloatArray) -> FloatArray:
        return np.vstack([_arr(f.derivative(x)) / g for f, g in self.parts])

    @override
    @property
    def default_gamma(self) -> float | None:
        return 1.0

    @property
    def breakpoints(self) -> tuple[float, ...]:
        """Segment starts b_j (the first is 0) where the active part changes."""
        return self._breaks

    def _segment(self, x: FloatArray) -> NDArray[np.intp]:
        return np.searchsorted(np.asarray(self._breaks), x, side="right") - 1

    def _psi(self, x: FloatArray) -> FloatArray:
        seg = np.clip(self._segment(x), 0, len(self._breaks) - 1)
        out = np.empty_like(x)
        for j, k in enumerate(self._active):
            m = seg == j
            if not m.any():
                continue
            f, g = self.parts[k]
            out[m] = self._offsets[j] + (_arr(f.psi(x[m])) - self._starts[j]) / g
        return out

    def _inverse(self, y: FloatArray) -> FloatArray:
        seg = np.searchsorted(np.asarray(self._offsets), y, side="right") - 1
        seg = np.clip(seg, 0, len(self._offsets) - 1)
        out = np.empty_like(y)
        for j, k in enumerate(self._active):
            m = seg == j
            if not m.any():
                continue
            f, g = self.parts[k]
            out[m] = _arr(f.inverse(self._starts[j] + g * (y[m] - self._offsets[j])))
        return out

    def _derivative(self, x: FloatArray) -> FloatArray:
        s = self._scaled_derivatives(x)
        return s.min(axis=0) if self.mode == "min" else s.max(axis=0)

    @override
    @property
    def asymptotic_slope(self) -> float:
        slopes = [f.asymptotic_slope / g for f, g in self.parts]
        return min(slopes) if self.mode == "min" else max(slopes)

    @override
    def to_spec(self) -> str | dict[str, Any]:
        parts = []
        for f, g in self.parts:
            s = f.to_spec()
            d: dict[str, Any] = {"kind": s} if isinstance(s, str) else dict(s)
            if f.kind == "dp":
                d.pop("d", None)
                d["d"] = g
            else:
                d["gamma"] = g
            parts.append(d)
        return {"kind": self.kind, "parts": parts}

    @override
    def describe(self) -> str:
        op = "min" if self.mode == "min" else "max"
        inner = ", ".join(f"[{f.describe()}]′/{g:g}" for f, g in self.parts)
        thm = "Thm 5.10" if self.mode == "min" else "Thm 5.11"
        return f"ψ*(x) = ∫₀ˣ {op}({inner}) dt, γ* = 1 ({thm})"


def _parts(items: Sequence[Any]) -> tuple[tuple[NeighborFunction, float], ...]:
    out: list[tuple[NeighborFunction, float]] = []
    for it in items:
        if isinstance(it, NeighborFunction):
            g = it.default_gamma
            if g is None:
                raise PrivacyParameterError(
                    f"give the distance parameter of {it.describe()} as a (ψ, γ) pair"
                )
            out.append((it, float(g)))
        else:
            f, g = it
            out.append((f, float(g)))
    return tuple(out)


def combine(*parts: tuple[NeighborFunction, float] | NeighborFunction) -> CombinedNeighbor:
    r"""Thm 5.10: ψ* whose intervals (γ* = 1) contain each part's intervals.

    Example: ``combine((SqrtShift(), 0.5), (DPNeighbor(), 1.0))`` — §5.4.4's
    :math:`\\psi^*(x)=x/d` for :math:`x\\le d^2/(4\\gamma^2)`, else
    :math:`\\sqrt{x}/\\gamma - d/(4\\gamma^2)`.
    """
    return CombinedNeighbor(_parts(parts), "min")


def heterogeneous(*parts: tuple[NeighborFunction, float] | NeighborFunction) -> CombinedNeighbor:
    """Thm 5.11: ψ* whose intervals (γ* = 1) lie inside each part's intervals."""
    return CombinedNeighbor(_parts(parts), "max")


# --------------------------------------------------------------------------------------
# User-defined ψ
# --------------------------------------------------------------------------------------


def _check_grid() -> FloatArray:
    return np.concatenate([[0.0], np.logspace(_GRID_LO_EXP, 12.0, 1201)])


def check_neighbor_conditions(
    func: Callable[[FloatArray], Any], *, name: str = "ψ", grid: ArrayLike | None = None
) -> None:
    r"""Numerically check the four conditions of Def 5.1 on a grid.

    (1) strictly increasing: ψ rises between consecutive grid points;
    (2) continuous: ψ finite everywhere on the grid and ψ(ε) → ψ(0) as ε → 0 (a concave
    function is continuous on (0, ∞), so only right-continuity at 0 can fail);
    (3) concave: the slopes between consecutive grid points do not increase;
    (4) :math:`t\mapsto\psi(e^t)` convex: its slopes on a uniform t-grid do not decrease.

    Raises:
        PrivacyParameterError: naming the first violated condition and where.
    """
    x = _arr(grid) if grid is not None else _check_grid()
    if x.ndim != 1 or x.size < 3 or np.any(np.diff(x) <= 0) or x[0] < 0:
        raise PrivacyParameterError("the check grid must be increasing, ≥ 0, ≥ 3 points")

    def ev(v: FloatArray) -> FloatArray:
        try:
            with np.errstate(all="ignore"):
                out = _arr(func(v.copy()))
        except Exception as exc:  # a user callable may raise anything
            raise PrivacyParameterError(f"{name} could not be evaluated: {exc}") from None
        return np.broadcast_to(out, v.shape).astype(np.float64)

    y = ev(x)
    bad = ~np.isfinite(y)
    if bad.any():
        raise PrivacyParameterError(
            f"{name} violates condition (2) continuous: not finite at x = {x[np.argmax(bad)]:.6g}"
        )
    scale = max(1.0, float(np.max(np.abs(y))))
    rtol = 1e-9
    ulp = 4.0 * np.finfo(float).eps
    dy = np.diff(y)
    dx = np.diff(x)
    # rounding error of each difference of ψ values
    err = ulp * (np.abs(y[1:]) + np.abs(y[:-1]) + 1.0)
    macro = dx >= 1e-3 * np.maximum(1.0, x[:-1])  # steps whose rise must be resolvable
    bad_inc = (dy < -err) | ((dy <= 0) & macro)
    if np.any(bad_inc):
        i = int(np.argmax(bad_inc))
        raise PrivacyParameterError(
            f"{name} violates condition (1) strictly increasing: ψ({x[i + 1]:.6g}) ≤ ψ({x[i]:.6g})"
        )
    if x[0] == 0:
        eps = np.logspace(-6, -14, 9)
        ye = ev(eps)
        gaps = np.abs(ye - y[0])
        tol = 1e-6 * scale
        if not np.all(np.isfinite(ye)) or gaps[-1] > tol:
            raise PrivacyParameterError(
                f"{name} violates condition (2) continuous: ψ(ε) does not tend to ψ(0) as ε → 0"
            )
    slopes = dy / dx
    serr = err / dx
    rise = slopes[1:] - slopes[:-1]
    tol_c = rtol * np.maximum(np.abs(slopes[1:]), np.abs(slopes[:-1])) + serr[1:] + serr[:-1]
    if np.any(rise > tol_c):
        i = int(np.argmax(rise > tol_c))
        raise PrivacyParameterError(
            f"{name} violates condition (3) concave: slope increases near x = {x[i + 1]:.6g}"
        )
    t = np.linspace(math.log(1e-9), math.log(max(float(x[-1]), 1.0)), 1201)
    g = ev(np.exp(t))
    dt = np.diff(t)
    gs = np.diff(g) / dt
    gerr = ulp * (np.abs(g[1:]) + np.abs(g[:-1]) + 1.0) / dt
    drop = gs[:-1] - gs[1:]
    tol_g = rtol * np.maximum(np.abs(gs[1:]), np.abs(gs[:-1])) + gerr[1:] + gerr[:-1]
    if np.any(drop > tol_g):
        i = int(np.argmax(drop > tol_g))
        raise PrivacyParameterError(
            f"{name} violates condition (4) x ↦ ψ(eˣ) convex: its slope decreases near "
            f"x = {math.exp(t[i + 1]):.6g}"
        )


@dataclass(frozen=True)
class CustomNeighbor(NeighborFunction):
    """A user-supplied ψ. Build it with :func:`neighbor_from_callable` (which checks it).

    The inverse is computed by bisection unless given; the derivative by central
    differences unless given. The limit of ψ′ at infinity cannot be verified numerically,
    so it is the user's declaration ``slope_at_infinity`` (default 0: unbounded
    ψ-sensitivity, so Estab-Gaussian is refused — the safe choice).
    """

    func: Callable[[FloatArray], Any]
    name: str = "custom"
    inv: Callable[[FloatArray], Any] | None = None
    deriv: Callable[[FloatArray], Any] | None = None
    slope_at_infinity: float = 0.0
    kind: ClassVar[str] = "custom"

    def _psi(self, x: FloatArray) -> FloatArray:
        with np.errstate(all="ignore"):
            return np.broadcast_to(_arr(self.func(x)), x.shape).astype(np.float64)

    def _inverse(self, y: FloatArray) -> FloatArray:
        if self.inv is not None:
            return np.broadcast_to(_arr(self.inv(y)), y.shape).astype(np.float64)
        lo = np.zeros_like(y)
        hi = np.ones_like(y)
        for _ in range(2100):
            grow = self._psi(hi) < y
            if not grow.any():
                break
            hi = np.where(grow, hi * 2.0, hi)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            up = self._psi(mid) < y
            lo = np.where(up, mid, lo)
            hi = np.where(up, hi, mid)
            if np.all(hi - lo <= 4 * np.finfo(float).eps * np.maximum(hi, 1e-300)):
                break
        return 0.5 * (lo + hi)

    def _derivative(self, x: FloatArray) -> FloatArray:
        if self.deriv is not None:
            return np.broadcast_to(_arr(self.deriv(x)), x.shape).astype(np.float64)
        h = np.maximum(np.abs(x), 1e-8) * 1e-6
        lo = np.maximum(x - h, 0.0)
        return (self._psi(x + h) - self._psi(lo)) / (x + h - lo)

    @override
    @property
    def asymptotic_slope(self) -> float:
        return self.slope_at_infinity

    @override
    def to_spec(self) -> str | dict[str, Any]:
        return {"kind": "custom", "name": self.name}

    @override
    def describe(self) -> str:
        return f"ψ = {self.name} (user-defined)"


def neighbor_from_callable(
    func: Callable[[FloatArray], Any],
    *,
    name: str = "custom",
    inverse: Callable[[FloatArray], Any] | None = None,
    derivative: Callable[[FloatArray], Any] | None = None,
    check: bool = True,
    grid: ArrayLike | None = None,
    slope_at_infinity: float = 0.0,
) -> CustomNeighbor:
    r"""A neighbor function from a vectorised callable, checked for Def 5.1's conditions.

    ``slope_at_infinity`` declares :math:`\\lim_{x\\to\\infty}\\psi'(x)` (only Estab-Gaussian
    uses it; 0 = unbounded sensitivity).

    Raises:
        PrivacyParameterError: naming the violated condition (see
            :func:`check_neighbor_conditions`).
    """
    if check:
        check_neighbor_conditions(func, name=name, grid=grid)
    if not (math.isfinite(slope_at_infinity) and slope_at_infinity >= 0):
        raise PrivacyParameterError("slope_at_infinity must be finite and ≥ 0")
    if check and slope_at_infinity > 0:
        s = float(np.ptp(_arr(func(np.array([1e12, 1e12 * (1 + 1e-6)])))) / 1e6)
        if s < slope_at_infinity * (1 - 1e-6):
            raise PrivacyParameterError(
                f"{name}: declared slope_at_infinity exceeds ψ′(10¹²); ψ′ is non-increasing"
            )
    return CustomNeighbor(func, name, inverse, derivative, slope_at_infinity)


# --------------------------------------------------------------------------------------
# Spec parsing
# --------------------------------------------------------------------------------------

_KINDS = ("sqrt", "sqrt_shift", "log_shift", "dp", "combine", "heterogeneous")
_KEYS: dict[str, tuple[str, ...]] = {
    "sqrt": ("kind",),
    "sqrt_shift": ("kind", "a"),
    "log_shift": ("kind", "a"),
    "dp": ("kind", "d"),
    "combine": ("kind", "parts"),
    "heterogeneous": ("kind", "parts"),
}


def _num(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise SpecError(f"{where} must be a number (got {type(v).__name__})")
    return float(v)


def _unknown_kind(kind: Any) -> SpecError:
    close = difflib.get_close_matches(str(kind), _KINDS, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(_KINDS)}"
    if kind == "log":
        hint = (
            "; plain log is undefined at 0 (a zero would be released exactly): use "
            '{ kind = "log_shift", a = 1.0 }'
        )
    return SpecError(f"unknown neighbor function {kind!r}{hint}")


def neighbor_from_spec(value: Any) -> NeighborFunction:
    """Parse a ``[privacy].neighbor`` value.

    Forms: ``"sqrt"`` | ``"dp"`` | ``{kind = "sqrt_shift", a = 1.0}`` |
    ``{kind = "log_shift", a = 1.0}`` (a > 0) | ``{kind = "dp", d = 1.0}`` |
    ``{kind = "combine" | "heterogeneous", parts = [{kind = "sqrt", gamma = 0.5},
    {kind = "dp", d = 1.0}]}`` (each part's distance is ``gamma``, or ``d`` for dp; the
    result has γ* = 1). A :class:`NeighborFunction` is returned unchanged.

    Raises:
        SpecError: malformed form (unknown kind or key, wrong type).
        PrivacyParameterError: invalid parameter (a ≤ 0 for log_shift, d ≤ 0, ...).
    """
    if isinstance(value, NeighborFunction):
        return value
    if isinstance(value, str):
        if value == "sqrt":
            return SqrtShift(0.0)
        if value == "dp":
            return DPNeighbor()
        if value in ("sqrt_shift", "log_shift", "combine", "heterogeneous"):
            raise SpecError(
                f'neighbor {value!r} needs parameters, e.g. {{ kind = "{value}", ... }}'
            )
        raise _unknown_kind(value)
    if not isinstance(value, Mapping):
        raise SpecError("neighbor must be a name or a table { kind = ..., ... }")
    kind = value.get("kind")
    if kind not in _KEYS:
        raise _unknown_kind(kind)
    for key in value:
        if key not in _KEYS[kind]:
            close = difflib.get_close_matches(str(key), _KEYS[kind], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise SpecError(f"unknown key {key!r} for neighbor kind {kind!r}{hint}")
    if kind == "sqrt":
        return SqrtShift(0.0)
    if kind == "sqrt_shift":
        return SqrtShift(_num(value.get("a", 0.0), "sqrt_shift.a"))
    if kind == "log_shift":
        if "a" not in value:
            raise SpecError('log_shift needs a shift a > 0, e.g. { kind = "log_shift", a = 1.0 }')
        a = _num(value["a"], "log_shift.a")
        if not a > 0:
            raise PrivacyParameterError(
                f"log_shift needs a > 0 (got {a:g}): log(x) is undefined at x = 0"
            )
        return LogShift(a)
    if kind == "dp":
        return DPNeighbor(_num(value["d"], "dp.d") if "d" in value else None)
    parts_raw = value.get("parts")
    if not isinstance(parts_raw, list) or len(parts_raw) < 2:
        raise SpecError(f"{kind} needs parts = [ {{...}}, {{...}} ] (at least two)")
    parts: list[tuple[NeighborFunction, float]] = []
    for i, p in enumerate(parts_raw):
        if not isinstance(p, Mapping):
            raise SpecError(f"{kind}.parts[{i}] must be a table {{ kind = ..., gamma = ... }}")
        p = dict(p)
        gamma = p.pop("gamma", None)
        f = neighbor_from_spec(p)
        if gamma is None:
            gamma = f.default_gamma
        if isinstance(f, DPNeighbor):
            f = DPNeighbor()  # its d is the part's distance parameter
        if gamma is None:
            raise SpecError(f"{kind}.parts[{i}] needs its distance parameter gamma")
        parts.append((f, _num(gamma, f"{kind}.parts[{i}].gamma")))
    return CombinedNeighbor(tuple(parts), "min" if kind == "combine" else "max")
