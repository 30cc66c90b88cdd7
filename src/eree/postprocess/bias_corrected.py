r"""Bias-corrected non-negative least squares: biased coarse totals fixed to unbiased ones.

See docs/design.md#post-processing and docs/publication-grade.md (section 5).

**The problem.** Eq. 1 of the QCEW paper (:func:`eree.postprocess.wls.solve_wls`) with
:math:`x \ge 0` moves every small establishment up where its answer is negative, and the
moves add up: over thousands of establishments the non-negative solution's tabulation of
a coarse total (the state's or a county's wages) is biased upward by far more than the
total's own noise. Yet least squares has something to give there: each query's sum over
a cell c is an unbiased estimate of the cell's total — the identity's
:math:`\sum_{j\in c}\tilde x_j` (Thm 6.6) with variance
:math:`\sum_{j\in c} 2\sigma^2(2(x_j + a) + \sigma^2)`, a pnc or Gaussian table's cells
nested in c with their public variances — and their inverse-variance combination
:math:`\hat T_c` has variance :math:`1/\sum_q 1/V_{q,c}`, below the cell's own value's.
It is the non-negativity that loses this, not least squares.

**The solve.**

.. math::

   \hat x = \arg\min_{x \ge 0} \sum_q \sum_{g\in q}
       \frac{(\sum_{j\in g} x_j - a_g)^2}{v_g}
   \quad\text{subject to}\quad \sum_{j\in c} x_j = T_c
   \ \text{for every cell } c \text{ of an anchored grouping.}

Every table is still a tabulation of one non-negative microdata, so every released pair
adds up exactly; the anchored tables publish :math:`T_c`; the finer tables share the
anchored totals out by the non-negative fit.

**Which groupings are anchored.** Those whose plain non-negative tabulation is evidently
biased: the estimated bias :math:`\hat b_g = t^+_g - t^0_g` (non-negative minus
unconstrained solution; the same noise solved twice, so far less noisy than either)
has :math:`\sum_g \hat b_g^2 > \sum_g v_g`, the squared bias alone exceeding the
variance of the table's own values (:func:`eree.postprocess.guard.tabulation_check`, the
rule that used to keep such a table's own values). After each anchored solve the rule is
applied again to the groupings not yet anchored (at most one round per grouping).

**The anchors** :math:`\hat T_c` (:func:`eree.postprocess.sqrt_space.anchored_cells`):
the identity's variance in a cell depends on the wages only through the cell's total,
:math:`2\sigma^2(2(T + Ka) + K\sigma^2)`, so it is evaluated at the common :math:`T` (a
fixed point); the weights then depend on the noise only through that one number, which
keeps :math:`\hat T_c` nearly unbiased. (The unconstrained solution's totals
:math:`t^0_c` are not: its weights are each establishment's own :math:`\hat v_j`,
correlated with its noise. Measured on Syn-RI, anchoring to them gave the county wage
1.08× and the state 1.40× against 1.09× and 1.56×.)

**Nested anchors** (state ⊃ county) must agree. The coarser estimate combines every
measurement the finer ones do and more, so it is kept, and the finer anchors are made to
add up to it top down: the difference is shared among the parent's cells in proportion
to their :math:`\mathrm{Var}\,\hat T_c`, the top-down pass of the tree's least squares
with the parent fixed. A county's published total then has the tree's posterior variance
:math:`P_c = s_c - (s_c/\Sigma s)^2(\Sigma s - S)` (:math:`s_c` its combined variance,
S the state's), tested in tests/postprocess/test_bias_corrected.py. A cell pushed below
0 is clamped and its share goes to its siblings. Crossed anchored groupings (county and
NAICS-5) are each clamped on their own; they share only the grand total, and any gap
that leaves is reported.

**How it is computed.** Each anchor enters the non-negative solver of
:func:`~eree.postprocess.wls.solve_wls` as one more observation, the answers
:math:`T_c` with variances :data:`ANCHOR_VARIANCE` :math:`\cdot v_c` (10⁴ times the
weight of the cell's own measurement). The sums are then made exact by scaling each
anchored cell's establishments by :math:`T_c / \sum_{j\in c}\hat x_j`: iterative
proportional fitting over the anchored groupings, finest last, so a chain of nested
anchors is exact after one pass. Scaling keeps :math:`\hat x \ge 0`.

Public inputs only: published answers and variances, and post-processings of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from eree.postprocess.guard import TabulationCheck, tabulation_check
from eree.postprocess.sqrt_space import anchored_cells
from eree.postprocess.wls import GroupSumObservation, WLSResult, solve_wls

__all__ = ["ANCHOR_VARIANCE", "BiasCorrected", "solve_bias_corrected"]

#: an anchor's variance, relative to the anchored cell's own published variance
ANCHOR_VARIANCE = 1e-4

#: iterative proportional fitting: rounds and relative tolerance of the anchored sums
_IPF_ROUNDS = 100
_IPF_RTOL = 1e-12


@dataclass(frozen=True)
class BiasCorrected:
    """The bias-corrected non-negative solution of one attribute.

    Attributes:
        result: the solve (``x`` ≥ 0, with every anchored sum exact).
        unconstrained: the same least squares without x ≥ 0 (the anchors' source).
        anchored: names of the anchored groupings (observations), in the order anchored.
        checks: observation name → the bias check of the plain non-negative solution
            (before anchoring; what decided).
        gap: largest |Σ_c x̂ − T_c| / max(T_c, 1) over the anchored cells after scaling.
    """

    result: WLSResult
    unconstrained: WLSResult
    anchored: list[str] = field(default_factory=list)
    checks: dict[str, TabulationCheck] = field(default_factory=dict)
    gap: float = 0.0

    def manifest_entry(self) -> dict[str, Any]:
        """Public description of what was anchored (JSON-ready)."""
        return {
            "anchored": list(self.anchored),
            "checks": {k: c.to_dict() for k, c in self.checks.items()},
            "largest_relative_gap": float(f"{self.gap:.3g}"),
        }


def _sums(x: np.ndarray, o: GroupSumObservation) -> np.ndarray:
    return np.bincount(o.groups, weights=x, minlength=o.n_groups)  # type: ignore[arg-type]


def _check(o: GroupSumObservation, x: np.ndarray, free: np.ndarray) -> TabulationCheck:
    return tabulation_check(o.variances, _sums(x, o), _sums(free, o))


def _anchor(
    n: int, o: GroupSumObservation, observations: Sequence[GroupSumObservation]
) -> tuple[GroupSumObservation, np.ndarray]:
    """The penalty observation fixing o's cell sums to their combined estimates T̂_c.

    Returns the observation (values T̂_c, not yet clamped) and Var T̂_c.
    """
    got = anchored_cells(n, observations, o.groups, o.n_groups)  # type: ignore[arg-type]
    v = o.variances
    finite = np.isfinite(v)
    if got is None:  # o nests in itself, so there is always one; kept for safety
        total, var_t = np.where(finite, o.values, 0.0), v
    else:
        total, var_t = got
        total = np.where(np.isfinite(var_t), total, 0.0)
    fallback = float(np.median(v[finite])) if finite.any() else 1.0
    var = ANCHOR_VARIANCE * np.where(finite, v, fallback)
    return GroupSumObservation(f"{o.name} (anchor)", o.groups, total, var, o.attribute), var_t


def _coarsening(fine: GroupSumObservation, coarse: GroupSumObservation) -> np.ndarray | None:
    """Per cell of ``fine``, the cell of ``coarse`` holding it (−1: empty), or None."""
    if fine.groups is None or coarse.groups is None:
        return None
    up = np.full(fine.n_groups, -1, dtype=np.intp)
    up[fine.groups] = coarse.groups
    if not np.array_equal(up[fine.groups], coarse.groups):
        return None
    return up


def _consistent_anchors(
    anchors: list[tuple[GroupSumObservation, np.ndarray]],
) -> list[GroupSumObservation]:
    """Anchors made consistent and ≥ 0 (module docstring, "Nested anchors").

    When the anchored groupings form a chain (each coarsens the next finer), the coarsest
    anchor is kept and each finer one is made to add up to its parent's final value top
    down, the difference shared among the parent's cells in proportion to their Var T̂
    (the top-down pass of the tree's least squares, with the coarser value fixed: the
    coarser estimate combines every measurement the finer ones do, and more); a cell
    clamped at 0 gives its share to its siblings. Otherwise each anchor is clamped at 0 as
    it is (crossed anchors share only the grand total).
    """
    ordered = sorted(anchors, key=lambda a: a[0].n_groups)  # coarsest first
    ups = [_coarsening(f, c) for (f, _), (c, _) in zip(ordered[1:], ordered, strict=False)]
    if any(u is None for u in ups):
        return [replace(a, values=np.maximum(a.values, 0.0)) for a, _ in ordered]
    top, _ = ordered[0]
    out = [replace(top, values=np.maximum(top.values, 0.0))]
    for (a, v), up in zip(ordered[1:], ups, strict=True):
        assert up is not None
        parent = out[-1].values
        live = up >= 0
        w = np.where(live & np.isfinite(v) & (v > 0), v, 0.0)
        t = np.where(live, a.values, 0.0)
        g = np.where(live, up, 0)
        for _ in range(len(t) + 1):  # each round clamps at least one more cell, or ends
            wsum = np.bincount(g, w, parent.size)
            diff = parent - np.bincount(g, t, parent.size)
            share = np.where(wsum[g] > 0, w / np.where(wsum[g] > 0, wsum[g], 1.0), 0.0)
            t = t + diff[g] * share
            neg = t < 0
            if not neg.any():
                break
            t = np.maximum(t, 0.0)
            w = np.where(neg, 0.0, w)
        out.append(replace(a, values=np.maximum(t, 0.0)))
    return out


def _fit_exactly(x: np.ndarray, anchors: Sequence[GroupSumObservation]) -> tuple[np.ndarray, float]:
    """Scale x within each anchored cell so its sum is the anchor (IPF, finest last)."""
    order = sorted(anchors, key=lambda a: a.n_groups)
    x = x.copy()
    gap = 0.0
    for _ in range(_IPF_ROUNDS):
        for a in order:
            s = _sums(x, a)
            ok = s > 0
            factor = np.ones_like(s)
            factor[ok] = a.values[ok] / s[ok]
            x *= factor[a.groups] if a.groups is not None else factor
        gap = max(
            float(np.max(np.abs(_sums(x, a) - a.values) / np.maximum(a.values, 1.0))) for a in order
        )
        if gap <= _IPF_RTOL:
            break
    return x, gap


def solve_bias_corrected(
    n: int,
    observations: Sequence[GroupSumObservation],
    *,
    limit: float = 1.0,
    **options: Any,
) -> BiasCorrected:
    """Non-negative Eq. 1 with the evidently biased groupings anchored (module docstring).

    Args:
        n: number of establishments.
        observations: one attribute's observations (as for :func:`solve_wls`).
        limit: a grouping is anchored when Σ b̂² > limit · Σ v (1: the squared bias
            exceeds the own values' variance).
        **options: passed to :func:`solve_wls` (``method``, ``rtol``, …; not
            ``nonnegative``).

    Returns:
        :class:`BiasCorrected`.
    """
    options.pop("nonnegative", None)
    plain = solve_wls(n, observations, nonnegative=False, **options)
    result = solve_wls(n, observations, nonnegative=True, **options)
    grouped = [o for o in observations if not o.is_identity]
    checks = {o.name: _check(o, result.x, plain.x) for o in grouped}
    anchored: list[str] = []
    raw_anchors: list[tuple[GroupSumObservation, np.ndarray]] = []
    x = result.x
    gap = 0.0
    for _ in range(len(grouped)):
        flagged = [
            o
            for o in grouped
            if o.name not in anchored and _check(o, x, plain.x).bias_ratio > limit
        ]
        if not flagged:
            break
        anchored += [o.name for o in flagged]
        raw_anchors += [_anchor(n, o, observations) for o in flagged]
        anchors = _consistent_anchors(raw_anchors)
        result = solve_wls(n, [*observations, *anchors], nonnegative=True, **options)
        x, gap = _fit_exactly(result.x, anchors)
        result = replace(result, x=x)
    return BiasCorrected(result, plain, anchored, checks, gap)
