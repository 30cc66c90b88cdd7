r"""Never worse: which released marginals post-processing may change.

See docs/design.md#post-processing.

Least squares with the right weights never makes a marginal worse in mean square; with
weights from a public *model* it can, where the model is wrong. The guard decides, from
public information only, which marginals join the consistent solution and which keep
their own noisy values (clamped at 0, rounded: still non-negative integers):

1. Solve with every candidate marginal; take the solution as a pseudo-truth (consistent,
   non-negative — a plausible state of the world given what was published).
2. Parametric bootstrap with model error: R times, draw each cell's noise variance from
   the public model *including its uncertainty* (for the smooth mechanisms x_v is drawn
   log-normally around the modelled share, so the weights the solver computes from the
   simulated published values are as wrong as they can be in reality), draw noise of the
   mechanism's shape (Laplace, Smooth Gamma's 1/(1+z⁴), Log-Laplace's multiplicative
   noise), publish, re-weight from the simulated published values, post-process; record
   each marginal's mean L1 error post-processed and as its own values.
3. A marginal whose paired difference of errors (post − own, replicate by replicate)
   is positive beyond two bootstrap standard errors is *flagged*: post-processing
   evidently makes it worse under the model. Replicates are added (in rounds, up to a
   cap) only while some marginal is undecided (:func:`never_worse_blocks`).
4. :func:`decide_holding` decides which flagged marginals are **held**: published as
   their own values (clamped at 0, rounded) and made an invariant of the solve — every
   other marginal adapts to them, so every released pair still adds up exactly. At most
   one marginal of each connected group of released pairs can be held (two held
   marginals would have to agree on a common coarsening, and two noisy releases never
   do; among flagged marginals that conflict, the one whose own values carry the least
   variance: :func:`choose_held`). Holding costs the others (they carry the held
   marginal's noise), so configurations are compared by the guard's predicted harm and
   the least harmful is published — possibly nothing held.

The randomness is a fixed public seed: the decision is a deterministic function of the
published values and public parameters.

:func:`tabulation_check` is the never-worse rule for GEDP tables tabulated from
non-negative least-squares microdata (``[postprocess] consistent = true`` on establishment
data): a table whose tabulation's estimated squared bias exceeds its own values' published
variance keeps its own values.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from eree.postprocess.variance_model import NoiseShape, simulate_noise

__all__ = [
    "GuardBlock",
    "GuardInput",
    "GuardResult",
    "HoldDecision",
    "Holding",
    "Prediction",
    "TabulationCheck",
    "choose_held",
    "decide_holding",
    "never_worse",
    "never_worse_blocks",
    "own_values",
    "predicted_harm",
    "tabulation_check",
]

#: a post-processing run: (published values, weights, marginals to make consistent) →
#: values of those marginals
Solver = Callable[[Mapping[str, np.ndarray], Mapping[str, np.ndarray], Sequence[str]],
                  dict[str, np.ndarray]]  # fmt: skip


@dataclass(frozen=True)
class GuardInput:
    """One marginal as the guard sees it (public information only).

    Attributes:
        name: the query name.
        estimate: the published values.
        exact: cells published exactly (public zeros).
        shape: the mechanism's noise distribution.
        weight: simulated published values → the variance post-processing would use.
        true_variance: a pseudo-truth → a plausible true noise variance per cell, drawn
            with the model's own uncertainty.
    """

    name: str
    estimate: np.ndarray
    exact: np.ndarray
    shape: NoiseShape
    weight: Callable[[np.ndarray], np.ndarray]
    true_variance: Callable[[np.ndarray, np.random.Generator], np.ndarray]


@dataclass(frozen=True)
class Prediction:
    """A marginal's predicted mean L1 error (per cell) post-processed vs its own values."""

    post: float
    own: float
    ratio: float
    ratio_se: float
    #: mean over the replicates of (post − own) mean L1 per cell, and its SE
    difference: float = 0.0
    difference_se: float = 0.0
    replicates: int = 0

    def to_dict(self) -> dict[str, float]:
        """JSON-ready (rounded)."""
        return {"predicted_ratio": round(self.ratio, 4), "se": round(self.ratio_se, 4),
                "difference": float(f"{self.difference:.4g}"),
                "difference_se": float(f"{self.difference_se:.4g}"),
                "replicates": self.replicates}  # fmt: skip


@dataclass
class GuardResult:
    """The marginals kept consistent, those left as their own values, and why."""

    consistent: list[str]
    own: list[str]
    predictions: dict[str, Prediction] = field(default_factory=dict)
    #: the post-processing run on the real published values (with every marginal)
    solution: dict[str, np.ndarray] = field(default_factory=dict)


def own_values(x: np.ndarray, *, nonnegative: bool, integer: bool) -> np.ndarray:
    """A marginal's own noisy values as it publishes them when kept: rounded, then ≥ 0."""
    out = np.asarray(x, dtype=np.float64)
    if integer:
        out = np.rint(out)
    if nonnegative:
        out = np.maximum(out, 0.0)
    return out + 0.0


@dataclass(frozen=True)
class GuardBlock:
    """One part of the problem the guard can solve on its own (see :func:`never_worse_blocks`).

    The released marginals decompose where no constraint joins two parts: a tree of
    marginals by the cells of its roots (every cell's value depends only on the
    measurements of its root cell's subtree). A block is every marginal's cells in some
    root cells.

    Attributes:
        marginals: every released marginal restricted to the block's cells.
        variances: the weights of the real run on those cells.
        solve: the post-processing run on the block.
        rows: per marginal, the block's cells' rows in the whole marginal (None: the
            block is the whole problem).
    """

    marginals: Sequence[GuardInput]
    variances: Mapping[str, np.ndarray]
    solve: Solver
    rows: Mapping[str, np.ndarray] | None = None


def never_worse(
    marginals: Sequence[GuardInput],
    variances: Mapping[str, np.ndarray],
    solve: Solver,
    *,
    nonnegative: bool,
    integer: bool,
    replicates: int = 6,
    max_replicates: int = 18,
    tolerance: float = 0.10,
    seed: int = 20170514,
) -> GuardResult:
    """Decide which marginals publish the consistent solution (module docstring).

    Args:
        marginals: every released marginal.
        variances: the weights of the real run (published or modelled variances).
        solve: the post-processing run to protect.
        nonnegative, integer: what "own values" means (clamped, rounded).
        replicates: bootstrap replicates per round.
        max_replicates: rounds are added while some marginal is undecided, up to this many.
        tolerance: the least predicted relative excess error that flags a marginal.
        seed: the public seed of the what-if simulations.
    """
    sizes = {m.name: int(np.shape(m.estimate)[0]) for m in marginals}
    return never_worse_blocks([GuardBlock(marginals, variances, solve)], sizes,
                              nonnegative=nonnegative, integer=integer, replicates=replicates,
                              max_replicates=max_replicates, tolerance=tolerance,
                              seed=seed)  # fmt: skip


def never_worse_blocks(
    blocks: Iterable[GuardBlock],
    sizes: Mapping[str, int],
    *,
    nonnegative: bool,
    integer: bool,
    replicates: int = 6,
    max_replicates: int = 18,
    tolerance: float = 0.10,
    seed: int = 20170514,
) -> GuardResult:
    r""":func:`never_worse` over a problem given as independent blocks, one at a time.

    Each replicate's mean L1 error of a marginal is its error summed over the blocks
    divided by its cells, and one generator (the public seed) draws every block's
    simulations in turn, so that one block is exactly :func:`never_worse`. Only one
    block's simulations are in memory at a time (the solution is assembled whole).

    **The decision, on the paired difference.** Per replicate i and marginal, the
    difference :math:`d_i` of the mean L1 errors post-processed and as own values (the
    same simulated release both ways: paired, so the noise common to both cancels). A
    marginal is *flagged* (post-processing evidently and materially worse under the
    model) when :math:`\bar d > 2\,\mathrm{SE}(\bar d)` and :math:`\bar d` exceeds
    ``tolerance`` times the own values' predicted error. The tolerance (10%) is the
    accuracy the guard's predictions have shown against realised errors (evaluated
    flags of 3–7% predicted excess were realised as −3% to +3%; docs/publication-grade.md)
    — a hold costs the other marginals, which must add up to the held one's noisy
    values, so it is bought only for a loss the model can resolve. A marginal is
    *undecided* while the mean is within 2 SE of that tolerance line,
    :math:`|\bar d - \text{tolerance}\cdot\text{own}| \le 2\,\mathrm{SE}`; while
    one is, another round of ``replicates`` is drawn, up to ``max_replicates``; one still
    undecided then is flagged only if it meets the rule above (in doubt, the solution is
    published: no evidence that post-processing materially hurts it). Replicates are
    spent only while a decision is open.

    Args:
        blocks: the blocks (re-iterable when more than one round may be drawn: each pass
            may build its blocks when it reaches them).
        sizes: every marginal's number of cells (all blocks together).
        replicates: 0 runs no simulation: every marginal takes the solution, with no
            prediction (an evaluation's "no guard" column, never a release).
    """
    names = list(sizes)
    if len(names) < 2:
        return GuardResult(consistent=[], own=list(names))
    rng = np.random.default_rng(seed)
    truth: dict[str, np.ndarray] = {}
    post_rows: list[np.ndarray] = []
    own_rows: list[np.ndarray] = []
    cells = np.array([max(sizes[n], 1) for n in names], dtype=np.float64)
    first = True
    while True:
        post_sum = np.zeros((replicates, len(names)))
        own_sum = np.zeros((replicates, len(names)))
        for block in blocks:
            solved = _block_errors(block, names, rng, post_sum, own_sum,
                                   nonnegative=nonnegative, integer=integer)  # fmt: skip
            if not first:
                continue
            for n in names:
                if block.rows is None:
                    truth[n] = solved[n]
                else:
                    if n not in truth:
                        truth[n] = np.zeros(sizes[n], dtype=np.float64)
                    truth[n][block.rows[n]] = solved[n]
        first = False
        if replicates == 0:
            return GuardResult(consistent=list(names), own=[], solution=truth)
        post_rows.append(post_sum / cells)
        own_rows.append(own_sum / cells)
        post_r, own_r = np.vstack(post_rows), np.vstack(own_rows)
        d = post_r - own_r
        d_mean = d.mean(axis=0)
        d_se = d.std(axis=0, ddof=1) / np.sqrt(d.shape[0])
        # open: more replicates could move the mean across the tolerance line
        own_mean = own_r.mean(axis=0)
        undecided = np.abs(d_mean - tolerance * own_mean) <= 2.0 * d_se
        if not undecided.any() or post_r.shape[0] + replicates > max_replicates:
            break
    result = GuardResult(consistent=[], own=[], solution=truth)
    for j, n in enumerate(names):
        post_m, own_m = float(post_r[:, j].mean()), float(own_r[:, j].mean())
        ratio = post_m / own_m if own_m > 0 else (1.0 if post_m == 0 else np.inf)
        r = post_r[:, j] / np.where(own_r[:, j] > 0, own_r[:, j], 1.0)
        se = float(r.std(ddof=1) / np.sqrt(len(r))) if len(r) > 1 else 0.0
        result.predictions[n] = Prediction(
            post_m, own_m, float(ratio), se, float(d_mean[j]), float(d_se[j]), len(r)
        )
        # evidently (beyond 2 SE) and materially (beyond the tolerance) worse
        worse = d_mean[j] > 2.0 * d_se[j] and d_mean[j] > tolerance * own_m
        (result.own if worse else result.consistent).append(n)
    return result


def _block_errors(
    block: GuardBlock,
    names: Sequence[str],
    rng: np.random.Generator,
    post_sum: np.ndarray,
    own_sum: np.ndarray,
    *,
    nonnegative: bool,
    integer: bool,
) -> dict[str, np.ndarray]:
    """One block: its solution, and its L1 errors added into ``post_sum``/``own_sum``."""
    by = {m.name: m for m in block.marginals}
    est = {n: np.asarray(by[n].estimate, dtype=np.float64) for n in names}
    truth = block.solve(est, block.variances, names)
    clean = {n: np.where(by[n].exact, 0.0, np.maximum(truth[n], 0.0)) for n in names}
    for i in range(post_sum.shape[0]):
        sim: dict[str, np.ndarray] = {}
        w: dict[str, np.ndarray] = {}
        for n in names:
            m = by[n]
            var = m.true_variance(clean[n], rng)
            sim[n] = np.where(m.exact, 0.0, simulate_noise(m.shape, clean[n], var, rng))
            w[n] = np.where(m.exact, 0.0, m.weight(sim[n]))
        post = block.solve(sim, w, names)
        for j, n in enumerate(names):
            own = own_values(sim[n], nonnegative=nonnegative, integer=integer)
            post_sum[i, j] += float(np.sum(np.abs(post[n] - clean[n])))
            own_sum[i, j] += float(np.sum(np.abs(own - clean[n])))
        del sim, w, post
    return truth


@dataclass(frozen=True)
class Holding:
    """Which flagged marginals are held as invariants of the solve (:func:`choose_held`).

    Attributes:
        held: the held marginals (published as their own values; the others adapt).
        conflicts: each flagged marginal that is not held → the held marginal of its group
            (it publishes the solution, which adds up to that marginal).
    """

    held: list[str]
    conflicts: dict[str, str]


def choose_held(
    flagged: Sequence[str],
    pairs: Iterable[tuple[str, str]],
    total_variance: Mapping[str, float],
) -> Holding:
    r"""The flagged marginals to hold as invariants, at most one per connected group.

    **Why at most one per group.** Two released marginals joined by a chain of released
    pairs (child, parent) are constrained to agree on a common coarsening of both: along
    the chain every pair fixes the coarser marginal to sums of the finer one, so both are
    sums of the same values at the coarsest level the chain passes (at the least, their
    grand totals). Held at their own values — independent noisy releases — they would
    have to agree there exactly, which has probability zero. Marginals in different
    groups are never constrained together and can each be held.

    **Which one.** Holding marginal H fixes every other marginal of its group, at the
    common coarsening C of the two, to H's own values summed over C's cells: the noise of
    H's own values is imposed on them there. With independent cell noises, the variance
    imposed, summed over C's cells, is
    :math:`\sum_{c \in C} \mathrm{Var}ig(\sum_{h \subset c} y_hig) = \sum_h v_h`
    whatever C is — the total variance of H's own values. So among conflicting flagged
    marginals, the one with the least :math:`\sum_h v_h` is held: it imposes the least
    noise on the rest (typically the most precise marginal, whose own values post-
    processing could not improve anyway). Ties go by name; the flagged marginals are
    taken in that order and each is held unless its group already has one.

    Args:
        flagged: the marginals the guard did not find better post-processed.
        pairs: every released (child, parent) pair in a refinement relation.
        total_variance: per marginal, Σ of its cells' variances (published or the public
            model's): public.
    """
    root: dict[str, str] = {}

    def find(n: str) -> str:
        while root.get(n, n) != n:
            n = root[n]
        return n

    for c, p in pairs:
        a, b = find(c), find(p)
        if a != b:
            root[max(a, b)] = min(a, b)
    held: list[str] = []
    taken: dict[str, str] = {}
    conflicts: dict[str, str] = {}
    for n in sorted(flagged, key=lambda m: (float(total_variance[m]), m)):
        g = find(n)
        if g in taken:
            conflicts[n] = taken[g]
        else:
            taken[g] = n
            held.append(n)
    return Holding(held, conflicts)


def predicted_harm(result: GuardResult, held: Collection[str] = ()) -> float:
    """Σ over the flagged marginals (not held) of their predicted relative excess error.

    For each marginal the guard predicts evidently worse post-processed than as its own
    values (``result.own``), (post − own) / own of the predicted mean L1 per cell; 0 when
    no marginal is.
    """
    harm = 0.0
    for n in result.own:
        p = result.predictions.get(n)
        if n in held or p is None:
            continue
        harm += max(p.difference, 0.0) / p.own if p.own > 0 else 0.0
    return harm


@dataclass
class HoldDecision:
    """The published configuration: the held marginals and the guard's run with them held.

    Attributes:
        holding: the held marginals, and each flagged marginal not held → why.
        guard: the guard's run with ``holding.held`` held (its solution is published).
        first: the guard's run with nothing held.
        tried: each configuration tried (held marginals) → its predicted harm.
    """

    holding: Holding
    guard: GuardResult
    first: GuardResult
    tried: dict[tuple[str, ...], float]


def decide_holding(
    run: Callable[[Sequence[str]], GuardResult],
    pairs: Iterable[tuple[str, str]],
    total_variance: Mapping[str, float],
    *,
    max_tries: int = 3,
) -> HoldDecision:
    """Which marginals to hold, by comparing the configurations' predicted harm.

    Holding a marginal protects it and costs the others: they must add up to its own
    values, whose noise (and, clamped at 0, upward bias) they then carry. So the choice
    is made on the whole release. The guard is run with nothing held; if it flags no
    marginal, that is the configuration. Otherwise the candidates are the held set of
    :func:`choose_held` (one per group, least total variance) and each flagged marginal
    alone, in order of total variance (at most ``max_tries`` runs more); each is run with
    its marginals held, and the configuration with the least :func:`predicted_harm`
    (over the marginals it leaves flagged) is published — nothing held on a tie. Every
    configuration is additive; the never-worse promise is kept under the model when the
    harm is 0, and otherwise the predicted excess is the least available.

    Args:
        run: held marginals → the guard's run (and the solution) with them held.
        pairs, total_variance: as :func:`choose_held`.
    """
    first = run(())
    tried: dict[tuple[str, ...], float] = {(): predicted_harm(first)}
    if not first.own:
        return HoldDecision(Holding([], {}), first, first, tried)
    base = choose_held(first.own, pairs, total_variance)
    order = sorted(first.own, key=lambda m: (float(total_variance[m]), m))
    candidates = [tuple(base.held)] + [(h,) for h in order if (h,) != tuple(base.held)]
    best: tuple[str, ...] = ()
    best_guard = first
    for c in candidates[:max_tries]:
        g = run(c)
        tried[c] = predicted_harm(g, c)
        if tried[c] < tried[best]:
            best, best_guard = c, g
    conflicts = {
        n: (base.conflicts[n] if n in base.conflicts and base.conflicts[n] in best else "")
        for n in first.own
        if n not in best
    }
    return HoldDecision(Holding(list(best), conflicts), best_guard, first, tried)


@dataclass(frozen=True)
class TabulationCheck:
    """Whether a table tabulated from non-negative microdata is evidently worse than its own.

    Attributes:
        bias_ratio: Σ_g b̂_g² / Σ_g v_g over the cells with a published variance v_g > 0
            (nan without any): the estimated squared bias of the tabulation over the own
            values' variance.
        cells: the cells counted.
        keep_own: the table keeps its own published values.
    """

    bias_ratio: float
    cells: int
    keep_own: bool

    def to_dict(self) -> dict[str, float | int | bool]:
        """JSON-ready (rounded)."""
        return {"bias_ratio": round(self.bias_ratio, 4), "cells": self.cells,
                "kept_own_values": self.keep_own}  # fmt: skip


def tabulation_check(
    variance: np.ndarray, tabulated: np.ndarray, reference: np.ndarray, limit: float = 1.0
) -> TabulationCheck:
    r"""Never worse for a table replaced by a tabulation of non-negative microdata.

    The table's own published values are unbiased with published variance :math:`v_g`.
    Its tabulation :math:`t^+_g` from the non-negative least-squares microdata has error
    of bias :math:`b_g` (non-negativity moves every small establishment up, and the moves
    add up over a coarse cell) and variance :math:`\mathrm{Var}\,t^+_g \ge 0`, so its mean
    squared error exceeds :math:`b_g^2`. The tabulation :math:`t_g` of the same least
    squares *without* the constraint is unbiased (linear in unbiased measurements), so
    :math:`\hat b_g = t^+_g - t_g` estimates the bias; it is the same noise solved twice,
    so the difference is far less noisy than either. When
    :math:`\sum \hat b_g^2 > 	ext{limit} \cdot \sum v_g` the tabulation's squared bias
    alone exceeds the own values' variance: it is worse in mean square, and the table
    keeps its own published values. Public inputs only (published variances and two
    post-processings of published values).
    """
    v = np.asarray(variance, dtype=np.float64)
    t = np.asarray(tabulated, dtype=np.float64)
    r = np.asarray(reference, dtype=np.float64)
    live = np.isfinite(v) & (v > 0) & np.isfinite(t) & np.isfinite(r)
    n = int(live.sum())
    if n == 0:
        return TabulationCheck(float("nan"), 0, False)
    ratio = float(np.sum((t[live] - r[live]) ** 2) / np.sum(v[live]))
    return TabulationCheck(ratio, n, ratio > limit)
