r"""Per-release calibration of a public variance model from published values only.

See docs/design.md#post-processing.

The public variance model (:mod:`eree.postprocess.variance_model`) predicts each cell's
noise variance from public information; its constants were fitted on synthetic data, and
on other data its level can be off by a factor (2–5× on a small synthetic state). The
release itself carries information on the level: wherever two released marginals nest, a
parent cell's published value and the sum of its published child cells measure the same
number with independent noise, so their discrepancy

.. math:: d_j = \tilde y_{p,j} - \sum_{i \to j} \tilde y_{c,i}

has mean 0 and :math:`E[d_j^2] = \mathrm{Var}\,\tilde y_{p,j} + \sum_{i \to j}
\mathrm{Var}\,\tilde y_{c,i}`.

**What is fitted.** A modelled cell's variance is :math:`F + (V - F)`: the floor
:math:`F = V_0 + V_1 S_{\min}^2` (the noise variance at the smallest sensitivity, known
exactly: public parameters) plus the part the model predicts from the modelled x_v. One
multiplier :math:`c_m` per modelled marginal m scales only that part,
:math:`F + c_m (V - F)`; a marginal whose variance is published (Log-Laplace's formula,
the DP baselines) is known (no multiplier). Each parent cell j of each released pair is
then one condition

.. math:: E[d_j^2] / P_j = K_j + \sum_m c_m\, a_{jm}, \qquad a_{jm} = E_{jm} / P_j,

with :math:`P_j` the model's variance of :math:`d_j`, :math:`K_j P_j` its known part and
:math:`E_{jm}` the modelled part marginal m contributes (dividing by :math:`P_j` gives the
rows comparable weight, so that a few large cells do not decide the fit).

**How.** Smooth Gamma's noise has no fourth moment, so :math:`d_j^2` has no variance; the
fit uses :math:`|d_j|` instead: :math:`E|d_j| = \kappa_j \sqrt{E d_j^2}`, with
:math:`\kappa = 1/\sqrt 2` for one Laplace or Smooth Gamma noise (both have
:math:`E|Z| = 1/\sqrt 2` at unit variance) and :math:`\sqrt{2/\pi}` for a sum of many;
:math:`\kappa_j` is interpolated between the two by :math:`\sum w^2`, w the terms'
variance shares. The multipliers minimise
:math:`\sum_j (|d_j| / (\kappa_j \sqrt{P_j}) - \sqrt{K_j + \sum_m c_m a_{jm}})^2 +
w^2 \sum_m (c_m - 1)^2`, bounded to :data:`BOUNDS`. The last term (``prior_weight`` w,
about one parent cell's worth of evidence that the model is right) keeps the problem
solvable where the data cannot separate two multipliers — one pair whose parent-to-child
variance share is the same in every row identifies only one combination of its two
multipliers; the difference is then split toward 1 instead of failing — and keeps a
marginal with few parent cells near the model. A modelled marginal in no released pair
has no row and keeps :math:`c_m = 1`. Marginals given one ``groups`` name share one
multiplier (the stated accuracy ties the tables over the same workplace attributes,
:mod:`eree.release.accuracy`); the fit is the same with their columns merged.

Inputs are the raw published values (before any clamping or rounding: these would bias
:math:`d`) and model variances at public sizes; nothing confidential is read, so the
calibration is post-processing of published values and costs no privacy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

__all__ = ["BOUNDS", "VarianceCalibration", "calibrate_variances"]

#: the range a multiplier may take: the model is trusted to within a factor of 20
BOUNDS = (0.05, 20.0)
#: E|Z| of a unit-variance Gaussian, √(2/π): the sum of many comparable noises
MEAN_ABS_GAUSSIAN = float(np.sqrt(2.0 / np.pi))
#: E|Z| of one unit-variance Laplace noise, 1/√2 — and of Smooth Gamma's density
#: (√2/π)/(1 + z⁴), also 1/√2
MEAN_ABS_ONE = float(1.0 / np.sqrt(2.0))


@dataclass(frozen=True)
class VarianceCalibration:
    """The multiplier of each modelled marginal's variance, and the evidence behind it.

    Attributes:
        multipliers: marginal → c_m (1.0 for a marginal in no released pair).
        parent_cells: marginal → the parent cells (moment conditions) it enters.
        pairs: the released pairs used, as (child, parent).
    """

    multipliers: dict[str, float]
    parent_cells: dict[str, int] = field(default_factory=dict)
    pairs: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, object]:
        """JSON-ready (rounded)."""
        return {
            "multipliers": {n: round(c, 4) for n, c in self.multipliers.items()},
            "parent_cells": dict(self.parent_cells),
        }


def _sum_to(x: np.ndarray, parent: np.ndarray | None, cells: int) -> np.ndarray:
    """``x`` per parent cell: summed over each parent's child cells (parent None: as is)."""
    return x if parent is None else np.bincount(parent, weights=x, minlength=cells)


def calibrate_variances(
    estimates: Mapping[str, np.ndarray],
    variances: Mapping[str, np.ndarray],
    pairs: Mapping[tuple[str, str], np.ndarray],
    modelled: Mapping[str, float],
    exact: Mapping[str, np.ndarray] | None = None,
    *,
    prior_weight: float = 1.0,
    groups: Mapping[str, str] | None = None,
) -> VarianceCalibration:
    """Fit one variance multiplier per modelled marginal (module docstring).

    Args:
        estimates: marginal → its raw published values.
        variances: marginal → each cell's variance under the model (or the published
            variance, for a marginal not in ``modelled``).
        pairs: (child, parent) → for each child cell the row of its parent cell.
        modelled: the marginals whose variance comes from the model (a multiplier each),
            each with its floor: the part of every cell's variance that is known exactly
            (the noise variance at the smallest sensitivity); the multiplier scales only
            the modelled part above it.
        exact: marginal → cells published exactly (no noise: no variance, no
            discrepancy); None: none.
        prior_weight: the weight w of the rows (c_m − 1)·w pulling each multiplier to 1.
        groups: modelled marginal → a group name; the marginals of one group share one
            multiplier (None: one each).
    """
    free = [n for n in estimates if n in modelled]
    names = list(dict.fromkeys((groups or {}).get(n, n) for n in free))
    col = {n: names.index((groups or {}).get(n, n)) for n in free}
    rows: list[tuple[np.ndarray, ...]] = []
    entered = dict.fromkeys(free, 0)
    used: list[tuple[str, str]] = []

    def clean(n: str, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=np.float64)
        return v if exact is None else np.where(exact[n], 0.0, v)

    for (c, p), idx in pairs.items():
        if c not in estimates or p not in estimates or (c not in col and p not in col):
            continue
        idx = np.asarray(idx, dtype=np.int64)
        m = np.asarray(estimates[p]).shape[0]
        d = clean(p, estimates[p]) - np.bincount(idx, weights=clean(c, estimates[c]), minlength=m)
        # per parent cell, the variance of d is known + Σ_m c_m·free_m, and the sum of its
        # terms' squared variances sq0 + Σ_m (c_m·sq1_m + c_m²·sq2_m) (for κ)
        known, sq0 = np.zeros(m), np.zeros(m)
        free_part = np.zeros((m, len(names)))
        sq1, sq2 = np.zeros((m, len(names))), np.zeros((m, len(names)))
        for n, to_parent in ((p, None), (c, idx)):
            v = clean(n, variances[n])
            fixed = np.minimum(clean(n, np.full(v.shape, modelled[n])), v) if n in col else v
            extra = v - fixed

            known += _sum_to(fixed, to_parent, m)
            sq0 += _sum_to(fixed * fixed, to_parent, m)
            if n in col:
                free_part[:, col[n]] += _sum_to(extra, to_parent, m)
                sq1[:, col[n]] += _sum_to(2.0 * fixed * extra, to_parent, m)
                sq2[:, col[n]] += _sum_to(extra * extra, to_parent, m)
        total = known + free_part.sum(axis=1)
        live = np.isfinite(d) & np.isfinite(total) & (total > 0)
        if not live.any():
            continue
        t = total[live]
        t2 = (t * t)[:, None]
        rows.append((np.abs(d[live]) / np.sqrt(t), known[live] / t, free_part[live] / t[:, None],
                     sq0[live] / t2[:, 0], sq1[live] / t2, sq2[live] / t2))  # fmt: skip
        for n in col:
            entered[n] += int(live.sum()) if n in (c, p) else 0
        used.append((c, p))
    if not free:
        return VarianceCalibration({}, {}, tuple(used))
    if not rows:
        return VarianceCalibration(dict.fromkeys(free, 1.0), entered, tuple(used))
    y, k, a, s0, s1, s2 = (np.concatenate([r[i] for r in rows]) for i in range(6))

    def residuals(cm: np.ndarray) -> np.ndarray:
        q = np.maximum(k + a @ cm, 1e-12)  # Var d / the model's, under the multipliers
        spread = (s0 + s1 @ cm + s2 @ (cm * cm)) / (q * q)  # Σ w² of d's terms
        kappa = MEAN_ABS_GAUSSIAN - (MEAN_ABS_GAUSSIAN - MEAN_ABS_ONE) * np.clip(spread, 0, 1)
        return np.concatenate([y - kappa * np.sqrt(q), prior_weight * (cm - 1.0)])

    from scipy.optimize import least_squares  # SciPy only when a calibration runs

    fit = least_squares(residuals, np.ones(len(names)), bounds=BOUNDS)
    mult = {n: (float(fit.x[col[n]]) if entered[n] else 1.0) for n in free}
    return VarianceCalibration(mult, {n: entered[n] for n in free}, tuple(used))
