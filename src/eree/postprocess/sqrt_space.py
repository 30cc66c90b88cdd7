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

**Cell anchors.** With only the total fixed, the excess the fit puts into many small cells
is taken from the large ones (New York's wage counties: MAE 0.9–1.1 M against the √
workflow's 0.48 M). So every other measured grouping with a finer measured grouping
nested in it gets per-cell anchors :math:`\hat T_c`, combined in the same way from every
measurement nested in the cell (:func:`anchored_cells`), and a cell is fixed to
:math:`\hat T_c` (variance :math:`10^{-2}\mathrm{Var}\hat T_c`, replacing the
measurement's own cell) where the excess its finer ψ-answered groups could add,
:math:`K_c\sigma^2/2` (the √-fit's bias at a sum near 0), is at least
:data:`ANCHOR_RATIO` = 5 standard deviations of :math:`\hat T_c` and that standard
deviation is at most :data:`ANCHOR_PRECISION` = 10% of :math:`\hat T_c`. Elsewhere the cell
keeps its own term: where the anchor is noisy next to that excess, fixing the cell costs
more than it saves (Syn-RI's NAICS-5 wages, and the employment counties whose finer cells
carry √-space information the anchor lacks).

**Identity weights and bias correction.** The identity query's ψ cells keep their Eq. 1
values x̃_j but are weighted by Thm 6.6's variance at the current fit,
:math:`2\sigma^2(2(x_j + a)+\sigma^2)`, not by their own v̂ (which over-weights
under-estimates, biasing sums down); and each √-space pseudo-answer is corrected by
:math:`-b(\tau)`, :math:`b = \sigma^2\tau/(\tau + \kappa\sigma^2)` (κ =
:data:`BIAS_KAPPA` = 1): for τ ≫ σ² the √-fit's bias σ² (E ω² = x + a + σ²), for τ ≪ σ²
almost nothing (the shrinkage of small cells is what the √-space fit is for).

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

from eree.postprocess.wls import (
    FloatArray,
    GroupSumObservation,
    IntArray,
    WLSResult,
    solve_wls,
)

__all__ = [
    "ANCHOR_VARIANCE_FACTOR",
    "FLOOR",
    "anchored_cells",
    "anchored_total",
    "solve_sqrt_space",
]

#: the floor f of τ_g = max(t_g + a, f·σ²) (the Gauss–Newton weight of a group near 0)
FLOOR = 0.01
#: the anchor's variance in the fit, relative to the variance of the combined total
ANCHOR_VARIANCE_FACTOR = 1e-6
#: a fixed cell's anchor variance in the fit, relative to the anchor's variance
CELL_ANCHOR_VARIANCE_FACTOR = 1e-2
#: λ: a measured cell is fixed to its anchor where the excess its ψ-answered sub-cells can
#: put into it, K·σ²/2, is at least λ standard deviations of the anchor
ANCHOR_RATIO = 5.0
#: ρ: … and where the anchor's standard deviation is at most ρ·T̂_c
ANCHOR_PRECISION = 0.1
#: κ of the bias correction b(τ) = σ²·τ/(τ + κσ²) of the √-space pseudo-answers
BIAS_KAPPA = 1.0
_MAX_FIXED_POINT = 200


def _covers_all(o: GroupSumObservation, n: int) -> bool:
    """Whether the measurement's groups partition all n establishments."""
    if o.groups is None:
        return o.n_groups == n
    return o.groups.size == n


def _cells_of(o: GroupSumObservation, target: IntArray, cells: int) -> IntArray | None:
    """Per group of o, the cell of ``target`` that holds it (−1: empty group), or None.

    None when o's groups do not nest in the target's cells.
    """
    if o.groups is None:  # the identity: group j is establishment j
        return target
    m = np.full(o.n_groups, -1, dtype=np.intp)
    m[o.groups] = target
    if not np.array_equal(m[o.groups], target):
        return None
    return m


def anchored_cells(
    n: int,
    observations: Sequence[GroupSumObservation],
    target: IntArray,
    cells: int,
) -> tuple[FloatArray, FloatArray] | None:
    r"""Per cell of a partition, the combined unbiased estimate of its sum (module docstring).

    Every measurement that partitions all establishments into groups nested in the cells
    gives, per cell, the sum of its answers there, an unbiased estimate of the cell's
    sum; they are combined by inverse variance, each measurement's variance evaluated at
    the common value (a fixed point per cell). A measurement contributes to a cell only
    where all its groups in the cell are measured.

    Args:
        n: number of establishments.
        observations: the measurements of one attribute.
        target: cell id (0 … cells − 1) of every establishment.
        cells: number of cells.

    Returns:
        ``(T̂, Var T̂)`` per cell (Var = inf where no measurement gives an estimate), or
        None when no measurement nests in the cells.
    """
    rows_s: list[Any] = []
    rows: list[tuple[Any, ...]] = []
    for o in observations:
        if not _covers_all(o, n):
            continue
        cell = _cells_of(o, target, cells)
        if cell is None:
            continue
        keep = cell >= 0
        c = cell[keep]
        fin = np.isfinite(o.variances[keep])
        vals = np.where(fin, o.values[keep], 0.0)
        var = np.where(fin, o.variances[keep], 0.0)
        bad = np.bincount(c, ~fin, cells) > 0
        sa = o.sqrt_answers
        psi = sa.answered[keep] & fin if sa is not None else np.zeros(c.size, dtype=bool)
        s2 = sa.sigma**2 if sa is not None else 0.0
        a = sa.a if sa is not None else 0.0
        k = np.bincount(c, psi, cells)
        rows_s.append(np.bincount(c, vals, cells))
        rows.append(
            (
                s2,
                k,
                k * a,
                np.bincount(c, np.where(psi, 0.0, var), cells),
                np.bincount(c, np.where(psi, 0.0, vals), cells),
                bad,
            )
        )
    if not rows:
        return None
    s = np.array(rows_s)
    bad = np.array([r[5] for r in rows])
    w_ok = ~bad
    t = np.maximum(np.where(w_ok, s, 0.0).sum(0) / np.maximum(w_ok.sum(0), 1), 0.0)
    v = np.ones_like(s)
    tiny = np.finfo(float).tiny
    for _ in range(_MAX_FIXED_POINT):
        v = np.array(
            [
                2.0 * s2 * (2.0 * (np.maximum(t - s_other, 0.0) + ka) + k * s2) + v_other
                for s2, k, ka, v_other, s_other, _ in rows
            ]
        )
        v = np.where(bad, np.inf, np.maximum(v, tiny))
        info = (1.0 / v).sum(0)
        new = np.where(info > 0, (s / v).sum(0) / np.where(info > 0, info, 1.0), 0.0)
        done = bool(np.all(np.abs(new - t) <= 1e-12 * np.maximum(np.abs(new), 1.0)))
        t = new
        if done:
            break
    info = (1.0 / v).sum(0)
    return t, np.where(info > 0, 1.0 / np.where(info > 0, info, 1.0), np.inf)


def anchored_total(
    n: int, observations: Sequence[GroupSumObservation]
) -> tuple[float, float] | None:
    r"""The combined total :math:`\hat T` and its variance (module docstring), or None.

    Args:
        n: number of establishments.
        observations: the measurements of one attribute.

    Returns:
        ``(T̂, Var T̂)`` from every measurement whose groups cover all n establishments
        (:func:`anchored_cells` with one cell); None when there is none or none is fully
        measured.
    """
    got = anchored_cells(n, observations, np.zeros(n, dtype=np.intp), 1)
    if got is None or not np.isfinite(got[1][0]):
        return None
    return float(got[0][0]), float(got[1][0])


def _linearised(
    o: GroupSumObservation,
    x: FloatArray,
    floor: float,
    kappa: float | None,
    identity_at_fit: bool,
) -> GroupSumObservation:
    """The Gauss–Newton Eq. 1 term of o's ψ-answered groups at the current x."""
    sa = o.sqrt_answers
    if sa is None:
        return o
    s2 = sa.sigma**2
    psi = sa.answered & np.isfinite(o.variances)
    if o.groups is None:  # the identity query: Eq. 1, Thm 6.6's variance at the fit
        if not identity_at_fit:
            return o
        v = 2.0 * s2 * (2.0 * np.maximum(x + sa.a, 0.0) + s2)
        return GroupSumObservation(
            o.name, None, o.values, np.where(psi, v, o.variances), o.attribute
        )
    t = np.bincount(o.groups, x, o.n_groups)
    tau = np.maximum(t + sa.a, floor * s2)
    omega = np.where(psi, sa.omega, 0.0)
    bias = 0.0 if kappa is None else s2 * tau / (tau + kappa * s2)
    values = np.where(psi, 2.0 * np.sqrt(tau) * omega - tau - sa.a - bias, o.values)
    variances = np.where(psi, 4.0 * tau * s2, o.variances)
    return GroupSumObservation(o.name, o.groups, values, variances, o.attribute)


def _excess(o: GroupSumObservation, finer: Sequence[GroupSumObservation]) -> FloatArray:
    """Per cell of o, Σ over the finer measurements' ψ-answered groups in it of σ²/2."""
    assert o.groups is not None
    out = np.zeros(o.n_groups)
    for q in finer:
        sq = q.sqrt_answers
        cells = _cells_of(q, o.groups, o.n_groups)
        if sq is None or cells is None:
            continue
        ok = cells >= 0
        out += np.bincount(cells[ok], sq.answered[ok], o.n_groups) * sq.sigma**2 / 2.0
    return out


def anchored_observations(
    n: int,
    observations: Sequence[GroupSumObservation],
    ratio: float = ANCHOR_RATIO,
    precision: float = ANCHOR_PRECISION,
) -> list[GroupSumObservation]:
    """The measurements with the anchors of the √-space fit in place (module docstring).

    The one-group measurements are replaced by the anchored total; in every other
    measured grouping with a finer measured grouping nested in it, the cells where the
    excess K·σ²/2 of the finer ψ-answered groups is at least ``ratio`` standard deviations
    of the cell's anchor are taken out of the measurement and fixed to the anchor.

    Args:
        n: number of establishments.
        observations: the measurements of one attribute.
        ratio: λ (:data:`ANCHOR_RATIO`).

    Returns:
        The measurements to fit.
    """
    tiny = np.finfo(float).tiny
    base = list(observations)
    anchor = anchored_total(n, observations)
    if anchor is not None:
        total, var = anchor
        base = [o for o in base if not (o.groups is not None and o.n_groups == 1)]
        base.append(
            GroupSumObservation(
                "total (anchored)",
                np.zeros(n, dtype=np.intp),
                np.array([total]),
                np.array([max(ANCHOR_VARIANCE_FACTOR * var, tiny)]),
                observations[0].attribute,
            )
        )
    out = list(base)
    for i, o in enumerate(base):
        if o.groups is None or o.n_groups < 2 or not _covers_all(o, n):
            continue
        finer = [
            q
            for q in observations
            if q.groups is not None
            and q.n_groups > o.n_groups
            and _covers_all(q, n)
            and _cells_of(q, o.groups, o.n_groups) is not None
        ]
        got = anchored_cells(n, observations, o.groups, o.n_groups) if finer else None
        if got is None:
            continue
        t_c, v_c = got
        sd = np.sqrt(v_c)
        fixed = np.isfinite(v_c) & (_excess(o, finer) >= ratio * sd) & (sd <= precision * t_c)
        if not fixed.any():
            continue
        out[i] = GroupSumObservation(
            o.name, o.groups, o.values, np.where(fixed, np.inf, o.variances), o.attribute,
            o.sqrt_answers,
        )  # fmt: skip
        out.append(
            GroupSumObservation(
                f"{o.name} (anchored)",
                o.groups,
                np.where(fixed, t_c, 0.0),
                np.where(fixed, np.maximum(CELL_ANCHOR_VARIANCE_FACTOR * v_c, tiny), np.inf),
                o.attribute,
            )
        )
    return out


def solve_sqrt_space(
    n: int,
    observations: Sequence[GroupSumObservation],
    *,
    floor: float = FLOOR,
    iterations: int = 10,
    tol: float = 1e-6,
    anchor_ratio: float = ANCHOR_RATIO,
    anchor_precision: float = ANCHOR_PRECISION,
    bias_kappa: float | None = BIAS_KAPPA,
    identity_at_fit: bool = True,
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
    base = anchored_observations(n, observations, anchor_ratio, anchor_precision)
    x = result.x
    converged = False
    steps = 0
    for steps in range(1, iterations + 1):  # noqa: B007 (steps is reported)
        result = solve_wls(
            n, [_linearised(o, x, floor, bias_kappa, identity_at_fit) for o in base], **options
        )
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
