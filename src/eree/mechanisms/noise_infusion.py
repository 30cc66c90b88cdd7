r"""Input noise infusion — the current SDL baseline (Haney et al. 2017 §5.1).

See docs/design.md#er-ee-mechanisms.

Every establishment w gets one confidential, time-invariant distortion factor

.. math:: f_w \in [1-t,\,1-s] \cup [1+s,\,1+t], \qquad 0 < s < t < 1,

and a cell v of any marginal is published as

.. math:: q^\star(v) = \sum_w f_w\, h(w, v)

(Eq. 6 of the paper, summed over the establishments that satisfy the cell's workplace
criteria), except that a true count in the open interval (0, S), S = 2.5, is replaced by
a draw from {1, …, ⌊S⌋}, and a zero stays zero.

**The ramp density.** The paper only says that f_w lies in the two intervals; eree's
design (docs/design.md#er-ee-mechanisms) asks for a ramp density. eree uses the ramp as
the LEHD/QWI noise-infusion literature describes it (Abowd, Stephens & Vilhuber 2006;
after Evans, Zayatz & Slanta 1998): the distortion δ = |f − 1| has a density that falls
linearly from the inner edge s to zero at the outer edge t, and the sign of f − 1 is
equally likely:

.. math:: p(f) = \frac{t - |f-1|}{(t-s)^2}, \qquad s \le |f-1| \le t .

Each side carries mass ½. With U uniform on (0, 1), the inverse CDF of δ is
:math:`\delta = t - (t-s)\sqrt{1-U}`; E[δ] = s + (t−s)/3,
E[δ²] = s² + 2s(t−s)/3 + (t−s)²/6.

**Defaults.** s and t are confidential and not published. eree uses s = 0.05 and
t = 0.15 (every establishment is distorted by at least 5% and at most 15%, by ≈ 8.3%
on average): plausible, in line with the public descriptions (a distortion bounded
away from 1 by a few percent; County Business Patterns, which uses the same kind of
multiplicative noise, flags cell changes under 2% as low and 2–5% as moderate noise),
but *not* the Census Bureau's values. Both are parameters (``s``, ``t`` in a query spec).

**The small-cell draw.** The paper replaces a small count by "a sample drawn from a
posterior predictive distribution that always outputs integers 1, …, ⌊S⌋" without
giving the distribution; eree draws uniformly from {1, …, ⌊S⌋}, independently of the
true count (so the published value carries no information about which small count it
replaced).

**Time invariance.** The factors are an *input*: drawn once per dataset with
:func:`draw_distortion_factors` and passed, indexed by establishment, to every marginal
(:func:`noise_infusion`), so that all cells of all marginals of one establishment use the
same factor. This is what the attacks of §5.2 exploit (see :mod:`eree.evaluate.attacks`).

Noise infusion has **no formal privacy guarantee**; the accountant charges it under the
definition ``"none"``. No standard error is published (it would need the confidential
factors and s, t).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from typing_extensions import override

from eree.errors import PrivacyParameterError
from eree.mechanisms.base import Cells, ExpectedError, Measurement, Mechanism
from eree.mechanisms.noise import FloatArray, NoiseSource
from eree.privacy.composition import Composition, Cost, NoGuarantee

#: default inner edge of the distortion (|f − 1| ≥ s); confidential in practice
DEFAULT_S = 0.05
#: default outer edge of the distortion (|f − 1| ≤ t); confidential in practice
DEFAULT_T = 0.15
#: the small-cell limit S of §5.1 ("set to 2.5 for our dataset")
SMALL_CELL_LIMIT = 2.5

NOISE_INFUSION_WITHHELD = (
    "withheld: input noise infusion has no formal guarantee and its distortion "
    "factors and bounds (s, t) are confidential"
)


def check_ramp(s: float, t: float) -> None:
    """Validate the distortion bounds: 0 < s < t < 1 (factors stay positive)."""
    if not (math.isfinite(s) and math.isfinite(t) and 0.0 < s < t < 1.0):
        raise PrivacyParameterError(
            f"noise infusion needs 0 < s < t < 1 for the distortion factors "
            f"f in [1-t, 1-s] U [1+s, 1+t] (got s={s!r}, t={t!r})"
        )


def check_small_cell(small_cell: float) -> None:
    """Validate the small-cell limit S of noise infusion (S ≥ 1)."""
    if not (math.isfinite(small_cell) and small_cell >= 1.0):
        raise PrivacyParameterError(
            f"the small-cell limit S must be a finite number >= 1 (got {small_cell!r})"
        )


def ramp_magnitude_ppf(u: ArrayLike, s: float, t: float) -> FloatArray:
    r"""Inverse CDF of δ = |f − 1|: :math:`\delta = t - (t-s)\sqrt{1-u}` (density 2(t−δ)/(t−s)²)."""
    u = np.asarray(u, dtype=np.float64)
    return t - (t - s) * np.sqrt(1.0 - u)


def ramp_pdf(f: ArrayLike, s: float, t: float) -> FloatArray:
    r"""Density of a distortion factor: :math:`(t-|f-1|)/(t-s)^2` on the support, else 0."""
    d = np.abs(np.asarray(f, dtype=np.float64) - 1.0)
    return np.where((d >= s) & (d <= t), (t - d) / (t - s) ** 2, 0.0)


def ramp_cdf(f: ArrayLike, s: float, t: float) -> FloatArray:
    """CDF of a distortion factor (for tests): mass ½ on each side of 1."""
    f = np.asarray(f, dtype=np.float64)
    d = np.clip(np.abs(f - 1.0), s, t)
    tail = ((t - d) / (t - s)) ** 2  # P(delta >= d) on one side
    return np.where(f < 1.0, 0.5 * tail, 1.0 - 0.5 * tail)


def ramp_moments(s: float, t: float) -> tuple[float, float]:
    """(E|f − 1|, E[(f − 1)²]) of the ramp density."""
    check_ramp(s, t)
    w = t - s
    return s + w / 3.0, s * s + 2.0 * s * w / 3.0 + w * w / 6.0


def draw_distortion_factors(
    n_establishments: int,
    source: NoiseSource,
    *,
    s: float = DEFAULT_S,
    t: float = DEFAULT_T,
    trials: int | None = None,
) -> FloatArray:
    """Draw one confidential distortion factor per establishment (§5.1).

    Draw them **once per dataset** and pass them to every marginal: they are
    time-invariant, and all cells of one establishment use its factor.

    Args:
        n_establishments: number of establishments (factors are indexed 0..n−1 in the
            caller's establishment order).
        source: where the randomness comes from (one sign bit and one uniform per factor,
            magnitude by inverse CDF), through the float-safe sampling layer: each factor
            is the exact ramp draw rounded to the grid 2⁻²⁴, so that f·h(w, v) and the
            cell sums are exact in float.
        s, t: distortion bounds, 0 < s < t < 1.
        trials: if given, draw ``trials`` independent factor vectors (for experiments):
            the result has shape ``(trials, n_establishments)``.

    Returns:
        Factors in [1−t, 1−s] ∪ [1+s, 1+t], shape ``(n,)`` or ``(trials, n)``.
    """
    from eree.mechanisms.noise_laws import RampLaw
    from eree.mechanisms.sampling import FACTOR_GRID, Term, exact_centre, rounded_noisy

    check_ramp(s, t)
    shape = (n_establishments,) if trials is None else (int(trials), n_establishments)
    size = int(np.prod(shape))
    # f = round(1 ± (t − (t−s)√V)) on the grid 2⁻²⁴: f − 1 = (t−s)·W, W = ±(t/(t−s) − √V)
    from flint import arb

    term = Term(RampLaw(s, t), np.full(size, t - s), 2.0**-52, lambda i: arb(t) - arb(s))
    f = rounded_noisy(source, exact_centre(np.ones(size)), [term], FACTOR_GRID)
    return f.reshape(shape)


def infuse(
    cell: NDArray[np.integer],
    establishment: NDArray[np.integer],
    h: ArrayLike,
    factors: FloatArray,
    n_cells: int,
) -> FloatArray:
    r"""The distorted cell sums :math:`\sum_w f_w h(w,v)` (Eq. 6), vectorised over trials.

    Args:
        cell: for each (establishment, cell) pair with a positive count, the cell's index.
        establishment: the pair's establishment index into ``factors`` (last axis).
        h: the pair's true count h(w, v).
        factors: shape ``(E,)`` or ``(T, E)``.
        n_cells: number of cells of the marginal.

    Returns:
        Shape ``(n_cells,)`` or ``(T, n_cells)``.
    """
    cell = np.asarray(cell, dtype=np.int64)
    est = np.asarray(establishment, dtype=np.int64)
    hv = np.asarray(h, dtype=np.float64)
    f = np.asarray(factors, dtype=np.float64)
    if f.ndim == 1:
        return np.bincount(cell, weights=f[est] * hv, minlength=n_cells).astype(np.float64)
    trials = f.shape[0]
    idx = (np.arange(trials, dtype=np.int64)[:, None] * n_cells + cell[None, :]).ravel()
    w = (f[:, est] * hv[None, :]).ravel()
    out = np.bincount(idx, weights=w, minlength=trials * n_cells).astype(np.float64)
    return out.reshape(trials, n_cells)


def noise_infusion(
    n: ArrayLike,
    cell: NDArray[np.integer],
    establishment: NDArray[np.integer],
    h: ArrayLike,
    factors: FloatArray,
    source: NoiseSource,
    *,
    small_cell: float = SMALL_CELL_LIMIT,
) -> Measurement:
    """Input noise infusion of one marginal (Haney et al. §5.1).

    Args:
        n: true count per cell, shape ``(C,)`` (used only for the small-cell and zero
            rules; it must equal the sum of ``h`` per cell).
        cell, establishment, h: the marginal's (establishment, cell) pairs with positive
            count: cell index, establishment index into ``factors``, count h(w, v).
        factors: the dataset's distortion factors from :func:`draw_distortion_factors`,
            shape ``(E,)`` (a release) or ``(T, E)`` (T trials of an experiment).
        source: randomness of the small-cell draws.
        small_cell: the limit S: true counts in (0, S) are replaced by a uniform draw
            from {1, …, ⌊S⌋}.

    Returns:
        The published values, shape ``(C,)`` or ``(T, C)``; no standard error.
    """
    check_small_cell(small_cell)
    n_arr = np.asarray(n, dtype=np.float64)
    if np.any(~np.isfinite(n_arr)) or np.any(n_arr < 0):
        raise PrivacyParameterError("true counts must be finite and non-negative")
    out = infuse(cell, establishment, h, factors, n_arr.shape[0])
    small = (n_arr > 0) & (n_arr < small_cell)
    k = math.floor(small_cell)
    if small.any():
        mask = np.broadcast_to(small, out.shape)
        out[mask] = 1.0 + source.integers(k, int(mask.sum())).astype(np.float64)
    out[np.broadcast_to(n_arr == 0, out.shape)] = 0.0
    return Measurement(
        out, out, None, None, None, NOISE_INFUSION_WITHHELD, "withheld", NoiseInfusion.name
    )


#: context key of the release-wide cache of distortion factors, keyed by (s, t)
FACTOR_CACHE = "distortion_factors"
#: context key of a query's (cell, establishment, h) incidence arrays
INCIDENCE = "establishment_cells"
#: context key of the number of establishments
N_ESTABLISHMENTS = "n_establishments"


@dataclass(frozen=True, kw_only=True)
class NoiseInfusion(Mechanism):
    """Input noise infusion of one marginal (§5.1) — no formal guarantee, no cost.

    Attributes:
        s, t: the confidential distortion range (never in :meth:`public_params`).
        small_cell: S: true counts in (0, S) are replaced by a draw from {1, …, ⌊S⌋}.

    ``cells.context`` must hold the query's (cell, establishment, h) incidence under
    :data:`INCIDENCE`, the number of establishments under :data:`N_ESTABLISHMENTS` and a
    release-wide dict under :data:`FACTOR_CACHE`, so that one factor per establishment is
    drawn once and shared by every query of the release.
    """

    uses_establishment_incidence: ClassVar[bool] = True
    s: float = DEFAULT_S
    t: float = DEFAULT_T
    small_cell: float = SMALL_CELL_LIMIT
    definition: str = "none"
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if self.definition != "none":
            raise self._fail(
                f'noise_infusion has no formal guarantee; it runs under definition "none" '
                f"(got {self.definition!r})"
            )
        try:
            check_ramp(self.s, self.t)
            check_small_cell(self.small_cell)
        except PrivacyParameterError as e:
            raise self._fail(str(e)) from None

    @override
    def composition(self) -> Composition:
        return NoGuarantee()

    @override
    def per_cell_cost(self) -> Cost:
        return Cost()

    @override
    def public_params(self) -> dict[str, Any]:
        # s and t are confidential in SDL practice: withheld
        return {"small_cell": self.small_cell}

    @override
    def guarantee(self) -> str:
        return "no formal guarantee (input noise infusion, the current SDL baseline)"

    @override
    def expected_error(self, at: Mapping[str, float]) -> ExpectedError | None:
        """Error at a true count n held by establishments of x_v jobs each (n/x_v of them).

        0 < n < S: a uniform draw from {1, …, ⌊S⌋}. Otherwise each establishment's jobs
        are scaled by its own f_w: Var = n·x_v·E[(f−1)²] (E[f−1] = 0), and for one
        establishment (x_v ≥ n) E|error| = n·E|f−1| (:func:`ramp_moments`). These depend
        on the confidential s and t: for the agency's planning only, never to publish.
        """
        n, x_v = float(at["count"]), float(at.get("x_v", at["count"]))
        note = "depends on the confidential s, t: for internal planning only"
        if 0 < n < self.small_cell:
            draws = np.arange(1, math.floor(self.small_cell) + 1, dtype=np.float64)
            err = draws - n
            return ExpectedError(
                float(np.sqrt(np.mean(err * err))), float(np.mean(np.abs(err))), None,
                "small cell: replaced by a uniform draw",
            )  # fmt: skip
        m1, m2 = ramp_moments(self.s, self.t)
        mean_abs = n * m1 if x_v >= n else None
        return ExpectedError(math.sqrt(n * min(x_v, n) * m2), mean_abs, None, note)

    @override
    def __call__(self, cells: Cells, source: NoiseSource) -> Measurement:
        cache = cells.context[FACTOR_CACHE]
        key = (self.s, self.t)
        if key not in cache:  # drawn once per release, shared by every query
            cache[key] = draw_distortion_factors(
                int(cells.context[N_ESTABLISHMENTS]), source, s=self.s, t=self.t
            )
        cell, est, h = cells.context[INCIDENCE]
        return noise_infusion(
            cells["count"], cell, est, h, cache[key], source, small_cell=self.small_cell
        )
