r"""Utility metrics (docs/design.md#evaluation; Haney et al. 2017 §10).

All functions take the truth as a vector over cells and noisy answers either as one vector
or as a ``(trials, cells)`` array (one row per independent trial).

* **L1 error** — the paper's measure: :math:`\sum_v |\tilde q(v) - q(v)|`, reported
  here as the *average per cell* (the sum divided by the number of cells), averaged over
  trials. Its **ratio to input noise infusion** (the current SDL) is the paper's "cost of
  provable privacy": ratio = mean L1(mechanism) / mean L1(noise infusion), over the same
  cells and the same number of trials.
* **Stratification by population bins** — cells are grouped by the population of their
  location: 0–100, 100–10k, 10k–100k, 100k+ (:data:`POPULATION_BINS`, left-closed). The
  paper uses the 2010 Census total population of the Census place; eree's experiments
  use the location's **employment** (total jobs in the tract), which is what a LODES-like
  dataset has (see :mod:`eree.evaluate.haney`).
* **Spearman rank correlation** — Pearson correlation of the average ranks (ties share
  their mean rank), against the SDL ranking (as in the paper) and against the truth.
* Relative absolute error :math:`|x-\tilde x|/(x+1)`, MSE, signed-difference quartiles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray

from eree.mechanisms.noise import FloatArray

#: the tidy result table every experiment writes (docs/design.md#evaluation)
TIDY_SCHEMA: dict[str, type[pl.DataType]] = {
    "experiment": pl.Utf8,
    "workload": pl.Utf8,
    "mechanism": pl.Utf8,
    "alpha": pl.Float64,
    "epsilon": pl.Float64,
    "mu": pl.Float64,
    "stratum": pl.Utf8,
    "metric": pl.Utf8,
    "value": pl.Float64,
    "trials": pl.Int64,
}


def tidy_row(
    experiment: str,
    workload: str,
    mechanism: str,
    stratum: str,
    metric: str,
    value: float,
    trials: int,
    *,
    alpha: float | None = None,
    epsilon: float | None = None,
    mu: float | None = None,
) -> dict[str, Any]:
    """One row of :data:`TIDY_SCHEMA`; parameters a paper does not use stay None."""
    return {
        "experiment": experiment,
        "workload": workload,
        "mechanism": mechanism,
        "alpha": alpha,
        "epsilon": epsilon,
        "mu": mu,
        "stratum": stratum,
        "metric": metric,
        "value": float(value),
        "trials": trials,
    }


#: population bins of Haney et al. §10: (low, high, label), low <= population < high
POPULATION_BINS: tuple[tuple[float, float, str], ...] = (
    (0.0, 100.0, "0-100"),
    (100.0, 10_000.0, "100-10k"),
    (10_000.0, 100_000.0, "10k-100k"),
    (100_000.0, math.inf, "100k+"),
)
#: the label of the unstratified summary
ALL = "all"


def _rows(noisy: ArrayLike) -> FloatArray:
    a = np.asarray(noisy, dtype=np.float64)
    return a[None, :] if a.ndim == 1 else a


def stratum_of(
    population: ArrayLike, bins: Sequence[tuple[float, float, str]] = POPULATION_BINS
) -> NDArray[np.int64]:
    """Index of each cell's population bin (``low <= population < high``)."""
    p = np.asarray(population, dtype=np.float64)
    if np.any(~np.isfinite(p)) or np.any(p < 0):
        raise ValueError("populations must be finite and non-negative")
    edges = np.array([b[1] for b in bins[:-1]], dtype=np.float64)
    return np.searchsorted(edges, p, side="right").astype(np.int64)


def abs_error(noisy: ArrayLike, truth: ArrayLike) -> FloatArray:
    r""":math:`|\tilde x - x|`, elementwise (broadcast over trials)."""
    return np.abs(np.asarray(noisy, dtype=np.float64) - np.asarray(truth, dtype=np.float64))


def relative_abs_error(noisy: ArrayLike, truth: ArrayLike) -> FloatArray:
    r""":math:`|x-\tilde x|/(x+1)` (docs/design.md#evaluation)."""
    t = np.asarray(truth, dtype=np.float64)
    return abs_error(noisy, t) / (t + 1.0)


def per_cell_mean(values: ArrayLike) -> FloatArray:
    """Average over trials (axis 0 of a ``(trials, cells)`` array), one value per cell."""
    return _rows(values).mean(axis=0)


def stratified_mean(
    per_cell: ArrayLike, strata: NDArray[np.int64], labels: Sequence[str]
) -> dict[str, tuple[float, int]]:
    """Mean of a per-cell quantity over all cells and within each stratum.

    Returns:
        ``{label: (mean, cells)}`` with :data:`ALL` first; an empty stratum has mean NaN
        and 0 cells.
    """
    v = np.asarray(per_cell, dtype=np.float64)
    k = len(labels)
    sums = np.bincount(strata, weights=v, minlength=k)
    counts = np.bincount(strata, minlength=k)
    out = {ALL: (float(v.mean()) if v.size else math.nan, int(v.size))}
    for i, lab in enumerate(labels):
        out[lab] = (float(sums[i] / counts[i]) if counts[i] else math.nan, int(counts[i]))
    return out


def l1_per_cell(noisy: ArrayLike, truth: ArrayLike) -> FloatArray:
    """Mean absolute error of each cell over the trials."""
    return per_cell_mean(abs_error(_rows(noisy), truth))


def average_l1(noisy: ArrayLike, truth: ArrayLike) -> float:
    """Average L1 error per cell over cells and trials."""
    return float(abs_error(_rows(noisy), truth).mean())


def l1_ratio(mechanism_l1: float, baseline_l1: float) -> float:
    """The paper's cost of privacy: L1(mechanism) / L1(noise infusion); NaN if undefined."""
    if not (baseline_l1 > 0) or not math.isfinite(mechanism_l1):
        return math.nan
    return mechanism_l1 / baseline_l1


def mse(noisy: ArrayLike, truth: ArrayLike) -> float:
    """Mean squared error over cells (and trials)."""
    d = _rows(noisy) - np.asarray(truth, dtype=np.float64)
    return float((d * d).mean())


def signed_difference_quartiles(noisy: ArrayLike, truth: ArrayLike) -> tuple[float, float, float]:
    r"""Quartiles (25%, 50%, 75%) of :math:`\tilde x - x` over cells and trials."""
    d = (_rows(noisy) - np.asarray(truth, dtype=np.float64)).ravel()
    q = np.quantile(d, [0.25, 0.5, 0.75])
    return float(q[0]), float(q[1]), float(q[2])


def _pearson_rows(a: FloatArray, b: FloatArray) -> FloatArray:
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    num = (a * b).sum(axis=1)
    den = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def average_ranks(values: ArrayLike) -> FloatArray:
    """Ranks 1..m within each row, ties sharing their average rank (like ``rankdata``).

    Vectorised over rows (one argsort of the whole array); much faster than
    ``scipy.stats.rankdata(..., axis=1)`` on ``(trials, cells)`` arrays.
    """
    a = _rows(values)
    t, m = a.shape
    if m == 0:
        return np.empty((t, 0))
    order = np.argsort(a, axis=1, kind="stable")
    s = np.take_along_axis(a, order, axis=1)
    new = np.ones((t, m), dtype=bool)
    new[:, 1:] = s[:, 1:] != s[:, :-1]
    gid = np.cumsum(new.ravel()) - 1
    pos = np.tile(np.arange(1, m + 1, dtype=np.float64), t)
    avg = (np.bincount(gid, weights=pos) / np.bincount(gid))[gid].reshape(t, m)
    ranks = np.empty_like(avg)
    np.put_along_axis(ranks, order, avg, axis=1)
    return ranks


def pearson_rows(a: ArrayLike, b: ArrayLike) -> FloatArray:
    """Pearson correlation row by row (``b`` may be one row, compared with every row)."""
    x = _rows(a)
    y = np.broadcast_to(_rows(b), x.shape)
    if x.shape[1] < 2:
        return np.full(x.shape[0], np.nan)
    return _pearson_rows(x, y)


def spearman_rows(a: ArrayLike, b: ArrayLike) -> FloatArray:
    """Spearman correlation row by row (average ranks for ties).

    Args:
        a: ``(trials, m)`` or ``(m,)``.
        b: ``(trials, m)`` or ``(m,)`` (a vector is compared with every row of ``a``).

    Returns:
        One correlation per trial; NaN where a row is constant or has fewer than 2 cells.
    """
    return pearson_rows(average_ranks(a), average_ranks(b))


def mean_finite(values: ArrayLike) -> float:
    """Mean of the finite entries (NaN if there are none)."""
    r = np.asarray(values, dtype=np.float64)
    r = r[np.isfinite(r)]
    return float(r.mean()) if r.size else math.nan


def mean_spearman(a: ArrayLike, b: ArrayLike) -> float:
    """Spearman correlation averaged over trials (NaN trials ignored; NaN if all are)."""
    r = spearman_rows(a, b)
    r = r[np.isfinite(r)]
    return float(r.mean()) if r.size else math.nan


def share_within(per_cell_a: ArrayLike, per_cell_b: ArrayLike, tolerance: float) -> float:
    """Share of cells where two per-cell errors differ by at most ``tolerance``.

    Haney et al. (Finding 1) compare relative errors: "within 10 percentage points of the
    relative error of SDL for 65% of the counts" is ``share_within(rel_mech, rel_sdl, 0.1)``.
    """
    a = np.asarray(per_cell_a, dtype=np.float64)
    b = np.asarray(per_cell_b, dtype=np.float64)
    return float(np.mean(np.abs(a - b) <= tolerance)) if a.size else math.nan
