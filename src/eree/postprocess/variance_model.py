r"""A public variance model for mechanisms that withhold their variance.

See docs/design.md#post-processing.

Smooth Laplace and Smooth Gamma (Haney et al., SIGMOD 2017, Algorithms 2–3) add noise of
scale proportional to the smooth sensitivity :math:`S = \max(\alpha x_v, 1)`, where
:math:`x_v` — the jobs of the cell in its largest establishment — is confidential; so the
variance of a published cell is withheld. Post-processing still needs a weight per cell.
This module predicts it from **public information only**:

* the mechanism's public parameters: the noise variance as a function of S,
  :math:`V(S) = V_0 + V_1 S^2` (Smooth Laplace :math:`V_1 = 2(2/\varepsilon)^2`, Smooth
  Gamma :math:`(5/\varepsilon_1)^2`, the workshop variants add a constant :math:`V_0`),
  its smallest sensitivity and α;
* the public frame's number k of establishments in the cell's workplace combination;
* the cell's published value :math:`\tilde n` (clamped at 0) as the size of the cell.

The largest establishment's share of a cell is modelled as
:math:`x_v/n = \min(c\,k^{-\beta}, 1)` in mean square (c and β fitted so that
:math:`\sum x_v^2 \approx \sum (\min(c k^{-\beta}, 1)\, n)^2` within each marginal: the
variance, not the median, is what the weights need, and the balance *between* marginals
— a coarse total against the sum of its finer cells — is what consistency rests on), so
:math:`\hat x_v = \min(c k^{-\beta}, 1)|\tilde n|` and the predicted variance is
:math:`V_0 + V_1 \max(\alpha \hat x_v, S_{\min})^2`. The magnitude :math:`|\tilde n|`, not
:math:`\max(\tilde n, 0)`: a large negative published value is itself the mark of a large
noise scale. Simulations draw :math:`x_v` log-normally around the same share (spread σ,
clipped to :math:`[n/k, n]`).
β and σ are calibrated on synthetic LODES-like data (``benchmarks/bench_variance_model.py``
prints the calibration table: predicted against realised error variance by size class;
docs/publication-grade.md reports it). Nothing confidential enters: not n, not x_v, not
the noise scale actually used.

:func:`simulate_noise` draws noise of each mechanism's shape for the post-processing's
own public what-if runs (:mod:`eree.postprocess.guard`); it is never used to release.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "LARGEST_SHARE_EXPONENT",
    "LARGEST_SHARE_SCALE",
    "LARGEST_SHARE_SPREAD",
    "NoiseShape",
    "SmoothVarianceModel",
    "largest_share",
    "simulate_noise",
]

#: β and c of the largest establishment's share x_v/n ≈ min(c·k^(−β), 1) of a cell with k
#: establishments, calibrated in mean square per marginal (Σ x_v² ≈ Σ (min(c·k^(−β), 1)·n)²
#: over the cells of n ≥ 10 of each of the 16 marginals of the evaluation's workloads,
#: least squares on the log ratio, on the 200,000-job parametric synthetic state; a single
#: exponent with c = 1 (β = 0.3, the first version) overpredicted the coarse totals
#: 1.6–5.6× and underpredicted the fine marginals 3×; see docs/publication-grade.md,
#: "Calibration")
LARGEST_SHARE_EXPONENT = 0.585
#: c of the share model (above); min(c·k^(−β), 1) = 1 for k ≤ 16: a small cell's variance
#: is modelled as if one establishment held it (the mean square is set by the big cells)
LARGEST_SHARE_SCALE = 5.05
#: σ, the standard deviation of log(x_v / n) around its regression on log k, same data
LARGEST_SHARE_SPREAD = 0.42


def largest_share(
    establishments: np.ndarray,
    beta: float = LARGEST_SHARE_EXPONENT,
    scale: float = LARGEST_SHARE_SCALE,
) -> np.ndarray:
    """The modelled share min(c·k^(−β), 1) of a cell's jobs held by its largest establishment."""
    k = np.maximum(np.asarray(establishments, dtype=np.float64), 1.0)
    return np.minimum(scale * k**-beta, 1.0)


@dataclass(frozen=True)
class SmoothVarianceModel:
    r"""Predicted noise variance of a smooth-sensitivity mechanism's cells.

    Attributes:
        alpha: α of the privacy definition (public).
        v0: the part of the noise variance that does not depend on S (public).
        v1: the noise variance per unit S² (public).
        s_min: the smallest smooth sensitivity (1 with eree's correction).
        beta: exponent of the largest-share model.
        scale: c of the largest-share model.
        spread: σ of the largest-share model.
    """

    alpha: float
    v0: float
    v1: float
    s_min: float = 1.0
    beta: float = LARGEST_SHARE_EXPONENT
    scale: float = LARGEST_SHARE_SCALE
    spread: float = LARGEST_SHARE_SPREAD

    def largest(self, published: np.ndarray, establishments: np.ndarray) -> np.ndarray:
        """The modelled x_v of each cell (from its published value and k)."""
        n = np.abs(np.asarray(published, dtype=np.float64))
        return largest_share(establishments, self.beta, self.scale) * n

    def variance(self, published: np.ndarray, establishments: np.ndarray) -> np.ndarray:
        """The predicted noise variance of each cell (see the module docstring)."""
        x = self.largest(published, establishments)
        s = np.maximum(self.alpha * x, self.s_min)
        return self.v0 + self.v1 * s * s

    def variance_at(self, x_v: np.ndarray) -> np.ndarray:
        """The noise variance at given x_v (for simulations and calibration only)."""
        s = np.maximum(self.alpha * np.asarray(x_v, dtype=np.float64), self.s_min)
        return self.v0 + self.v1 * s * s

    def draw_largest(
        self, n: np.ndarray, establishments: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """A plausible x_v per cell under the model (clipped to [n/k, n]); simulations only."""
        n = np.maximum(np.asarray(n, dtype=np.float64), 0.0)
        k = np.maximum(np.asarray(establishments, dtype=np.float64), 1.0)
        z = rng.normal(0.0, self.spread, n.shape) - self.spread**2  # E e^(2z) = 1
        x = largest_share(k, self.beta, self.scale) * n * np.exp(z)
        return np.clip(x, n / k, n)


@dataclass(frozen=True)
class NoiseShape:
    """The distribution of a mechanism's noise, for public what-if simulations.

    Attributes:
        kind: ``"laplace"`` (Smooth Laplace, DP Laplace), ``"quartic"`` (Smooth Gamma's
            density ∝ 1/(1+z⁴)), ``"log_laplace"`` (multiplicative, Log-Laplace) or
            ``"gaussian"`` (anything else).
        lam: λ of Log-Laplace (its log-space Laplace scale); unused otherwise.
        gamma: γ = 1/α of Log-Laplace; unused otherwise.
    """

    kind: str
    lam: float = 0.0
    gamma: float = 0.0


def _quartic(rng: np.random.Generator, size: tuple[int, ...]) -> np.ndarray:
    """Z with density (√2/π)/(1+z⁴) (variance 1), by rejection from a Cauchy."""
    out = np.empty(size).ravel()
    filled = 0
    bound = (1.0 + np.sqrt(2.0)) / 2.0  # max of (1+z²)/(1+z⁴)
    while filled < out.size:
        m = max(2 * (out.size - filled), 16)
        z = rng.standard_cauchy(m)
        keep = z[rng.random(m) * bound <= (1.0 + z * z) / (1.0 + z**4)]
        take = min(keep.size, out.size - filled)
        out[filled : filled + take] = keep[:take]
        filled += take
    return out.reshape(size)


def simulate_noise(
    shape: NoiseShape, truth: np.ndarray, variance: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """A simulated published value per cell: ``truth`` plus noise of ``shape`` and ``variance``.

    Log-Laplace ignores ``variance`` (its noise is multiplicative in n + γ) and returns the
    bias-corrected estimate, as published.
    """
    truth = np.asarray(truth, dtype=np.float64)
    if shape.kind == "log_laplace":
        eta = rng.laplace(0.0, shape.lam, truth.shape)
        noisy = (truth + shape.gamma) * np.exp(eta) - shape.gamma
        return (noisy + shape.gamma) * (1.0 - shape.lam**2) - shape.gamma
    sd = np.sqrt(np.maximum(variance, 0.0))
    if shape.kind == "laplace":
        return truth + rng.laplace(0.0, 1.0 / np.sqrt(2.0), truth.shape) * sd
    if shape.kind == "quartic":
        return truth + _quartic(rng, truth.shape) * sd
    return truth + rng.normal(0.0, 1.0, truth.shape) * sd
