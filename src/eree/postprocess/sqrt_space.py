r"""Microdata fitted in √-space where the answers are ψ-space answers (ψ = √(x + a)).

Beyond the papers. Eq. 1 of the QCEW paper (:func:`eree.postprocess.wls.solve_wls`)
fits the unbiased estimates :math:`\tilde x_g = \omega_g^2 - \sigma^2 - a` of the
√-ψ-mechanism (Thm 6.6) with weights :math:`1/\hat v_g`. Where a group's sum is small
next to σ² (wages at fine groupings: σ² = (γ/μ)² ≈ 10⁵ at the QCEW paper's budgets) x̃
is dominated by the skewed :math:`\sigma^2(\chi^2_1 - 1)` term: its variance
:math:`2\sigma^2(2x+\sigma^2)` is ≈ 2σ⁴ whatever x, while the answer itself,
:math:`\omega_g \sim N(\sqrt{x_g + a}, \sigma^2)`, is Gaussian and pins a small sum down
much better (its Fisher information about x is :math:`1/(4(x+a)\sigma^2)`).

:func:`solve_sqrt_space` replaces every ψ-answered group's Eq. 1 term
:math:`(\sum_{j\in g}x_j - \tilde x_g)^2/\hat v_g` by the likelihood term of its
answer, :math:`(\omega_g - \sqrt{\sum_{j\in g}x_j + a})^2/\sigma^2`, keeping every other
term (pnc cells, Estab-Gaussian, ψ = x) as in Eq. 1. The problem is solved by
Gauss–Newton: at the current group sums t_g, the √-term is linearised into the Eq. 1
term of the pseudo-answer

.. math:: a_g = 2\sqrt{\tau_g}\,\omega_g - \tau_g - a,\qquad v_g = 4\tau_g\sigma^2,
   \qquad \tau_g = \max(t_g + a,\ f\sigma^2),

whose gradient at t_g equals the √-term's (so a fixed point with every τ_g above the
floor is a stationary point of the √-space objective); each step is one
:func:`~eree.postprocess.wls.solve_wls`, started from the Eq. 1 solution. The floor
:math:`f\sigma^2` (default :data:`FLOOR` = 0.01) keeps the weight of a group whose sum
is near 0 finite (the √-term's curvature in x is unbounded at x = 0).

**The total is anchored.** The √-space fit is biased upward for groups with sums near 0
(it is a maximum-likelihood fit, and the likelihood of a group with ω > 0 peaks at
(ω² − a)), and summed over thousands of small groups the bias dominates totals. So the
attribute's total is fixed, before the fit, to the inverse-variance combination of the
totals of every measurement that covers all establishments (each query's sum of
unbiased estimates is an unbiased estimate of the total):
:math:`\hat T = \sum_q (S_q/V_q)/\sum_q(1/V_q)`. A query's variance
:math:`V_q = \sum_{g\ \psi} 2\sigma_q^2(2(x_g + a) + \sigma_q^2) + \sum_{g\ \text{other}} v_g`
depends on its √-answered groups only through their total
:math:`X_q = \sum x_g` (:math:`2\sigma_q^2(2(X_q + K_q a) + K_q\sigma_q^2)`, K_q groups),
so it is evaluated at the common :math:`\hat T` (minus the query's other groups'
answers) — a fixed point; the weights depend on the noise only through that one number,
so :math:`\hat T` is (nearly) unbiased where weights from each group's own answer are
not. The fit replaces every one-group measurement by the anchor :math:`\hat T` with
variance :math:`10^{-6}\cdot\mathrm{Var}(\hat T)` (the total is then :math:`\hat T` up
to rounding) and spreads the rest by the √-space fit.

Everything here is a function of the mechanisms' outputs ω (the same outputs Eq. 1's
x̃ = ω² − σ² − a is computed from) and public parameters (σ = γ/μ, a): post-processing,
no privacy cost. Where ω + zσ ≥ 0, ω is also read off the published CI
(ω = √(CI high + a) − zσ, the CI being ψ⁻¹ of ω ± zσ).

Measured (``eree evaluate webb-figures``, docs/webb-evaluation.md): with the adaptive
workflow it lowers the wage errors 2–3× at every grouping below the state, and the state's
too (the anchored total); employment, whose group sums are ≫ σ², is nearly unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from eree.postprocess.wls import FloatArray, GroupSumObservation, WLSResult, solve_wls

__all__ = ["ANCHOR_VARIANCE_FACTOR", "FLOOR", "anchored_total", "solve_sqrt_space"]

#: the floor f of τ_g = max(t_g + a, f·σ²) (the Gauss–Newton weight of a group near 0)
FLOOR = 0.01
#: the anchor's variance in the fit, relative to the variance of the combined total
ANCHOR_VARIANCE_FACTOR = 1e-6
_MAX_FIXED_POINT = 200


def _covers_all(o: GroupSumObservation, n: int) -> bool:
    """Whether the measurement's groups partition all n establishments, all measured."""
    if not np.all(np.isfinite(o.variances)):
        return False
    if o.groups is None:
        return o.n_groups == n
    return o.groups.size == n


def anchored_total(
    n: int, observations: Sequence[GroupSumObservation]
) -> tuple[float, float] | None:
    r"""The combined total :math:`\hat T` and its variance (module docstring), or None.

    Args:
        n: number of establishments.
        observations: the measurements of one attribute.

    Returns:
        ``(T̂, Var T̂)`` from every measurement whose groups cover all n establishments and
        are all measured (finite variance); None when there is none.
    """
    sums: list[float] = []
    parts: list[tuple[float, float, float, float, float]] = []  # σ², K, Ka, Σv other, S other
    for o in observations:
        if not _covers_all(o, n):
            continue
        sums.append(float(o.values.sum()))
        sa = o.sqrt_answers
        if sa is None:
            parts.append((0.0, 0.0, 0.0, float(o.variances.sum()), float(o.values.sum())))
            continue
        psi = sa.answered
        k = float(psi.sum())
        parts.append(
            (
                sa.sigma**2,
                k,
                k * sa.a,
                float(o.variances[~psi].sum()),
                float(o.values[~psi].sum()),
            )
        )
    if not sums:
        return None
    s = np.array(sums)
    t = max(float(s.mean()), 0.0)
    v = np.ones_like(s)
    for _ in range(_MAX_FIXED_POINT):
        v = np.array(
            [
                (2.0 * s2 * (2.0 * (max(t - s_other, 0.0) + ka) + k * s2) if k else 0.0) + v_other
                for s2, k, ka, v_other, s_other in parts
            ]
        )
        v = np.maximum(v, np.finfo(float).tiny)
        new = float((s / v).sum() / (1.0 / v).sum())
        done = abs(new - t) <= 1e-12 * max(abs(new), 1.0)
        t = new
        if done:
            break
    return t, float(1.0 / (1.0 / v).sum())


def _linearised(o: GroupSumObservation, x: FloatArray, floor: float) -> GroupSumObservation:
    """The Gauss–Newton Eq. 1 term of o's ψ-answered groups at the current x."""
    sa = o.sqrt_answers
    if sa is None or o.groups is None:  # the identity query keeps its Eq. 1 term
        return o
    t = np.bincount(o.groups, x, o.n_groups)
    psi = sa.answered & np.isfinite(o.variances)
    s2 = sa.sigma**2
    tau = np.maximum(t + sa.a, floor * s2)
    omega = np.where(psi, sa.omega, 0.0)
    values = np.where(psi, 2.0 * np.sqrt(tau) * omega - tau - sa.a, o.values)
    variances = np.where(psi, 4.0 * tau * s2, o.variances)
    return GroupSumObservation(o.name, o.groups, values, variances, o.attribute)


def solve_sqrt_space(
    n: int,
    observations: Sequence[GroupSumObservation],
    *,
    floor: float = FLOOR,
    iterations: int = 10,
    tol: float = 1e-6,
    **options: Any,
) -> WLSResult:
    r"""Fit one attribute in √-space where answers are ψ-space (module docstring).

    Args:
        n: number of establishments.
        observations: the measurements of one attribute (those with
            :attr:`~eree.postprocess.wls.GroupSumObservation.sqrt_answers` are fitted in
            √-space).
        floor: f in τ_g = max(t_g + a, f·σ²).
        iterations: most Gauss–Newton steps.
        tol: stop when the step changes x by at most ``tol``·‖x‖₂.
        **options: passed to :func:`~eree.postprocess.wls.solve_wls`.

    Returns:
        :class:`~eree.postprocess.wls.WLSResult` of the last step, ``method``
        ``sqrt-space/<solver>``, ``iterations`` the Gauss–Newton steps, ``converged``
        whether the last step met ``tol`` (and its solver converged).
    """
    if not (math.isfinite(floor) and floor > 0):
        raise ValueError("floor must be > 0")
    if iterations < 1:
        raise ValueError("iterations must be ≥ 1")
    result = solve_wls(n, observations, **options)
    if not any(o.sqrt_answers is not None for o in observations):
        return result
    anchor = anchored_total(n, observations)
    base = list(observations)
    if anchor is not None:
        total, var = anchor
        base = [o for o in base if not (o.groups is not None and o.n_groups == 1)]
        base.append(
            GroupSumObservation(
                "total (anchored)",
                np.zeros(n, dtype=np.intp),
                np.array([total]),
                np.array([max(ANCHOR_VARIANCE_FACTOR * var, np.finfo(float).tiny)]),
                observations[0].attribute,
            )
        )
    x = result.x
    converged = False
    steps = 0
    for steps in range(1, iterations + 1):  # noqa: B007 (steps is reported)
        result = solve_wls(n, [_linearised(o, x, floor) for o in base], **options)
        change = float(np.linalg.norm(result.x - x))
        x = result.x
        if change <= tol * max(float(np.linalg.norm(x)), 1.0):
            converged = True
            break
    return WLSResult(
        x,
        f"sqrt-space/{result.method}",
        steps,
        converged and result.converged,
        result.relative_residual,
        result.objective,
        result.nonnegative_rounds,
        result.kkt_violation,
    )
