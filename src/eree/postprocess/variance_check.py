r"""Does the public variance model describe this release? A check from published values only.

See docs/publication-grade.md, section 3 ("The guard checks its own variance model").

The never-worse guard (:mod:`eree.postprocess.guard`) simulates releases under the
variance model it is given, so it cannot see an error of that model: with a wrong model
it predicts gains that are losses. The published values themselves carry a test of the
model. Wherever two released marginals nest, a parent cell's published value and the sum
of its published child cells measure the same number with independent noise, so the gap

.. math:: d_j = \tilde y_{p,j} - \sum_{i \to j} \tilde y_{c,i}

has mean 0 and :math:`\mathrm{Var}\,d_j = P_j = \mathrm{Var}\,\tilde y_{p,j} +
\sum_{i \to j} \mathrm{Var}\,\tilde y_{c,i}`, which the model predicts.

**The statistic.** Per released pair p, :math:`T_p = \sum_j |d_j| / \sum_j \sqrt{P_j}`
(first absolute moments: Smooth Gamma's noise has no fourth moment, so :math:`d^2` would
have no variance; each cell counts by its predicted standard deviation, so the large
cells, whose balance the least squares rests on, carry the statistic as they carry the
weights). Over the pairs, :math:`S = \sum_p w_p \log T_p` with :math:`w_p` the inverse
of :math:`\log T_p`'s variance.

**Its distribution under the model.** By simulation, exactly as the guard simulates:
the consistent solution as a pseudo-truth, each cell's true variance drawn with the
model's own uncertainty, noise of the mechanism's shape, and each simulated release's
:math:`P_j` evaluated at the sizes of its own consistent solve, as the release's are at
its own (``replicates`` draws with a fixed public seed, so the check is a deterministic
function of the published values). The pairs share cells, so the draws of
S (not a formula) give its mean and standard deviation; the check **fires** when
:math:`|S - \bar S_{sim}| > z \cdot \mathrm{sd}(S_{sim})` (z = 3.5 by default: a
two-sided 0.05% false alarm rate where S is normal, which it is to a good approximation:
a weighted sum over many cells). The measured factor
:math:`\exp((S - \bar S_{sim}) / \sum_p w_p)` is the ratio of the gaps' typical size to
the model's (squared: of their variance).

Nothing confidential is read: published values, the model's variances at public sizes,
and a public seed. The check is post-processing and costs no privacy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from eree.postprocess.guard import GuardInput, Solver
from eree.postprocess.variance_model import simulate_noise

__all__ = ["FIRE_Z", "PairCheck", "VarianceCheck", "gap_statistic", "variance_check"]

#: the check fires beyond this many standard deviations of S under the model
FIRE_Z = 3.5
#: simulated releases the statistic's distribution is read from (each one solved: see
#: ``solve``)
REPLICATES = 40
#: pairs with fewer parent cells than this do not enter S (their T is too noisy to
#: carry information and their log is far from normal)
MIN_PARENT_CELLS = 8


@dataclass(frozen=True)
class PairCheck:
    """One released pair's statistic.

    Attributes:
        child, parent: the pair.
        cells: its parent cells with a predicted gap variance > 0.
        statistic: T = Σ|d| / Σ√P on the published values.
        expected: the mean of T over the simulated releases.
        z: (log T − mean) / sd of log T over the simulated releases.
    """

    child: str
    parent: str
    cells: int
    statistic: float
    expected: float
    z: float


@dataclass(frozen=True)
class VarianceCheck:
    """The check's result (module docstring).

    Attributes:
        fired: the combined statistic is beyond ``threshold`` standard deviations.
        z: the combined statistic S, standardised by its simulated distribution.
        factor: the gaps' typical size over the model's (exp of S's excess per unit
            weight); 1 when the model fits.
        threshold: the z beyond which it fires.
        replicates: simulated releases.
        pairs: the per-pair statistics.
    """

    fired: bool
    z: float
    factor: float
    threshold: float
    replicates: int
    pairs: list[PairCheck] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready (rounded)."""
        return {
            "fired": self.fired,
            "z": round(self.z, 3),
            "factor": round(self.factor, 4),
            "threshold": self.threshold,
            "replicates": self.replicates,
            "pairs": [
                {"child": p.child, "parent": p.parent, "cells": p.cells,
                 "statistic": round(p.statistic, 4), "expected": round(p.expected, 4),
                 "z": round(p.z, 3)}
                for p in self.pairs
            ],
        }  # fmt: skip


def gap_statistic(
    estimates: Mapping[str, np.ndarray],
    gap_variance: Mapping[tuple[str, str], np.ndarray],
    pairs: Mapping[tuple[str, str], np.ndarray],
) -> dict[tuple[str, str], float]:
    """T = Σ_j |d_j| / Σ_j √P_j per pair (cells with P_j = 0 left out)."""
    out: dict[tuple[str, str], float] = {}
    for (c, p), idx in pairs.items():
        pv = gap_variance[(c, p)]
        live = pv > 0
        if not live.any():
            continue
        parent = np.asarray(estimates[p], dtype=np.float64)
        d = parent - np.bincount(idx, np.asarray(estimates[c], dtype=np.float64),
                                 minlength=parent.shape[0])  # fmt: skip
        out[(c, p)] = float(np.sum(np.sqrt(pv[live]) * np.abs(d[live])) / np.sum(pv[live]))
    return out


def _gap_variances(
    var: Mapping[str, np.ndarray], pairs: Mapping[tuple[str, str], np.ndarray]
) -> dict[tuple[str, str], np.ndarray]:
    """P_j = Var(parent cell) + Σ Var(its child cells), per pair."""
    return {(c, p): var[p] + np.bincount(idx, var[c], minlength=var[p].shape[0])
            for (c, p), idx in pairs.items()}  # fmt: skip


def variance_check(
    marginals: Sequence[GuardInput],
    truth: Mapping[str, np.ndarray],
    pairs: Mapping[tuple[str, str], np.ndarray],
    solve: Solver | None = None,
    sizes: Mapping[str, np.ndarray] | None = None,
    *,
    replicates: int = REPLICATES,
    threshold: float = FIRE_Z,
    seed: int = 20170515,
) -> VarianceCheck | None:
    """Test the model on the release's parent-versus-children gaps (module docstring).

    Args:
        marginals: every released marginal in a pair, as the guard sees it (published
            values, public zeros, noise shape, the model's weight and its uncertainty).
        truth: the consistent solution (the pseudo-truth of the simulations; the model's
            variances are evaluated at it, as the release's weights are).
        pairs: (child, parent) → for each child cell the row of its parent cell.
        solve: a consistent solve of published values (the release's first, linear
            pass). Given, each simulated release's P is the model's at *its own* solve,
            as the release's P is at ``sizes`` (a model evaluated at a noisy size is
            biased — E V(n̂) ≠ V(n) — and so is T; the simulations then carry the same
            bias); None: P is held at the release's.
        sizes: the sizes the release's P is evaluated at (the same solve of the
            published values); None: ``truth``.
        replicates: simulated releases.
        threshold: z beyond which the check fires.
        seed: the public seed of the simulations.

    Returns:
        The result, or None when no pair has enough parent cells to test anything.
    """
    by = {m.name: m for m in marginals}
    pairs = {k: np.asarray(v, dtype=np.int64) for k, v in pairs.items()
             if k[0] in by and k[1] in by}  # fmt: skip
    clean = {n: np.where(m.exact, 0.0, np.maximum(np.asarray(truth[n], np.float64), 0.0))
             for n, m in by.items()}  # fmt: skip
    at = clean if sizes is None else {n: np.maximum(sizes[n], 0.0) for n in by}
    var = {n: np.where(m.exact, 0.0, m.weight(at[n])) for n, m in by.items()}
    gap_var = _gap_variances(var, pairs)
    used = [k for k, g in gap_var.items() if int(np.sum(g > 0)) >= MIN_PARENT_CELLS]
    if not used:
        return None
    sub_pairs = {k: pairs[k] for k in used}
    est = {n: np.where(m.exact, 0.0, np.asarray(m.estimate, np.float64)) for n, m in by.items()}
    observed = gap_statistic(est, gap_var, sub_pairs)
    rng = np.random.default_rng(seed)
    sims = np.empty((replicates, len(used)))
    names = list(by)
    for r in range(replicates):
        sim = {}
        for n, m in by.items():
            tv = m.true_variance(clean[n], rng)
            sim[n] = np.where(m.exact, 0.0, simulate_noise(m.shape, clean[n], tv, rng))
        sim_gap = gap_var
        if solve is not None:
            sw = {n: np.where(m.exact, 0.0, m.weight(sim[n])) for n, m in by.items()}
            got = solve(sim, sw, names)
            sv = {n: np.where(m.exact, 0.0, m.weight(np.maximum(got[n], 0.0)))
                  for n, m in by.items()}  # fmt: skip
            sim_gap = _gap_variances(sv, sub_pairs)
        t = gap_statistic(sim, sim_gap, sub_pairs)
        sims[r] = [t[k] for k in used]
    logs = np.log(np.maximum(sims, 1e-300))
    mu, sd = logs.mean(axis=0), logs.std(axis=0, ddof=1)
    w = np.where(sd > 0, 1.0 / np.maximum(sd, 1e-300) ** 2, 0.0)
    s_sim = logs @ w
    obs_log = np.log(np.maximum([observed[k] for k in used], 1e-300))
    s_obs = float(obs_log @ w)
    s_sd = float(s_sim.std(ddof=1))
    z = (s_obs - float(s_sim.mean())) / s_sd if s_sd > 0 else 0.0
    factor = math.exp((s_obs - float(s_sim.mean())) / float(w.sum())) if w.sum() > 0 else 1.0
    per = [
        PairCheck(c, p, int(np.sum(gap_var[(c, p)] > 0)), float(observed[(c, p)]),
                  float(np.exp(mu[i])),
                  float((obs_log[i] - mu[i]) / sd[i]) if sd[i] > 0 else 0.0)
        for i, (c, p) in enumerate(used)
    ]  # fmt: skip
    return VarianceCheck(bool(abs(z) > threshold), float(z), float(factor), threshold,
                         replicates, per)  # fmt: skip
