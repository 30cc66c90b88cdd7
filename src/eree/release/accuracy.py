"""The accuracy a release states about itself, at its published cells (public after release).

Before a release only public sizes may be used (:mod:`eree.release.preview`); after it, the
published values are public too. Each (table, statistic) states its accuracy at cells of
its own published sizes, in the statistic's unit, never pooled with another table:

* at the **median cell**: the cell whose published value is the median of the table's
  positive published values;
* per **size class**: cells grouped by the decade of their published value (1–10,
  10–100, …), each class stated at its own median cell.

At each such cell the statement is read from the mechanism's error law
(:meth:`eree.mechanisms.base.Mechanism.expected_error`, its ``within``: the one place the
error law lives): the median relative error (the t with P(|error| ≤ t) = ½, over the
cell's size) and the chance of lying within ±10% of the value. The cell statistics the
law needs come from published or public values only:

* GEDP ψ and Estab-Gaussian: the published value;
* pnc (and the mechanisms sharing its bounds): the bound u* whose noise std is the cell's
  published std (pnc publishes its noise std: a public function of the public bound);
* ER-EE counts: the published count, and for the smooth-sensitivity mechanisms the public
  variance model's typical x_v of a cell of that size (:func:`eree.release.targets.split_share`),
  its level calibrated on the release itself where it can be (below).

**Calibration of the smooth mechanisms' x_v.** The variance model's share of the largest
establishment was fitted in mean square on synthetic data; on other data, and at the
median rather than in mean square, its level can be off by a factor of several. Where a
released table refines another one on the same workplace attributes (its keys contain
the other's: ``tract × industry × ownership × age`` in ``tract × industry × ownership``),
each coarser cell and the sum of its finer cells measure the same number with
independent noise; their discrepancies are public and set the model's level
(:func:`eree.postprocess.variance_calibration.calibrate_variances`: a multiplier c of the
noise variance above its floor). The tables over the same workplace attributes share one
multiplier: their cells are the same establishments' jobs split by worker attributes, the
model's share is the same function of a cell's size for all of them, and one pair's
discrepancies identify only the sum of its two tables' variances, not each alone. The
statement then uses the x_v whose variance is the calibrated one. A table in no such
pair keeps the model's level (c = 1), and the manifest says which was done.

**Size classes with too few cells.** A class with fewer than :data:`MIN_CLASS_CELLS`
cells is not stated on its own (its cells still count in the table's figures): the
variance model describes typical cells, and a handful of cells is set by the few
establishments that dominate them, which the release does not publish; the entry says so.

The table's share of cells within ±10% is the classes' chances weighted by their numbers
of cells, and its median relative error the r at which that mixture of the classes' laws
reaches ½; where the table publishes confidence intervals their nominal coverage is stated
too. ``eree audit claims`` checks every figure here against realised errors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import polars as pl

from eree.errors import EreeError
from eree.mechanisms.base import ExpectedError, Mechanism
from eree.mechanisms.gedp import GedpMechanism, PncBounded
from eree.mechanisms.noise_infusion import NoiseInfusion
from eree.postprocess.hierarchy import HierarchyError, cell_parents
from eree.postprocess.variance_calibration import calibrate_variances
from eree.postprocess.variance_model import SmoothVarianceModel, largest_share
from eree.release.build import COUNT_STATISTIC, BuiltPlan
from eree.release.preview import GEDP_ASSUMED_ESTABLISHMENTS, declared_units, statistics_at
from eree.release.publication import smooth_model
from eree.release.targets import DEFAULT_JOBS_PER_ESTABLISHMENT
from eree.release.units import unit_of

__all__ = [
    "GOOD_RELATIVE",
    "MIN_CLASS_CELLS",
    "calibrated_levels",
    "cell_statistics",
    "median_relative_error",
    "published_accuracy",
]

#: the relative error the statements count cells within
GOOD_RELATIVE = 0.10
#: a size class with fewer cells than this is not stated on its own (module docstring)
MIN_CLASS_CELLS = 50


def _floats(frame: pl.DataFrame, col: str) -> np.ndarray:
    if col not in frame.columns:
        return np.full(frame.height, np.nan)
    return frame.get_column(col).cast(pl.Float64).fill_null(float("nan")).to_numpy()


def _pnc_bound_of_std(mech: PncBounded, std: float, at: float) -> float | None:
    """The public bound u* whose pnc noise std is ``std`` (std grows with u*)."""

    def sd(b: float) -> float:
        e = mech.expected_error({"bound": b, "value": at})
        return math.nan if e is None or e.std is None else e.std

    lo, hi = 1e-9, 1.0
    while sd(hi) < std:
        lo, hi = hi, hi * 4
        if hi > 1e18:
            return None
    if not sd(lo) < std:
        return lo
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if sd(mid) < std else (lo, mid)
        if hi / lo < 1 + 1e-10:
            break
    return hi


def modelled_x_v(at: np.ndarray, plan: Any) -> np.ndarray:
    """The public model's typical x_v of cells of published sizes ``at`` (at least 1)."""
    at = np.abs(np.asarray(at, dtype=np.float64))
    bp = getattr(plan, "budget_plan", None)
    if bp is not None and bp.largest_share is not None:
        share = np.full(at.shape, float(bp.largest_share))
    else:
        jpe = bp.jobs_per_establishment if bp is not None else DEFAULT_JOBS_PER_ESTABLISHMENT
        share = largest_share(at / jpe)
    return np.maximum(share * at, 1.0)


def _calibrated_x_v(x_v: float, model: SmoothVarianceModel, c: float) -> float:
    """The x_v whose noise variance is the model's at ``x_v`` with its part above the floor × c."""
    s = max(model.alpha * x_v, model.s_min)
    s_c = math.sqrt(model.s_min**2 + c * (s * s - model.s_min**2))
    return max(s_c / model.alpha, 1.0)


def cell_statistics(
    mech: Mechanism,
    at: float,
    std: float | None,
    plan: Any,
    n_est: int,
    level: Mapping[str, Any] | None = None,
) -> dict[str, float] | None:
    """The public statistics of a published cell of value ``at`` (module docstring).

    ``std``: the cell's published std (NaN/None when none is published); ``level``: the
    table's calibrated variance level (:func:`calibrated_levels`), None for the model's.
    The dict carries ``at`` (its size) and, for counts, ``x_v``; None when the law cannot
    be set up.
    """
    if isinstance(mech, PncBounded):
        if std is None or not math.isfinite(std):
            return None
        bound = _pnc_bound_of_std(mech, std, at)
        return None if bound is None else {"at": at, "value": at, "bound": bound}
    if isinstance(mech, GedpMechanism):
        return {"at": at, **statistics_at(mech, at, 1.0, n_est)}
    x_v = float(modelled_x_v(np.array([at]), plan)[0])
    model = smooth_model(mech)
    if level is not None and model is not None:
        x_v = _calibrated_x_v(x_v, model, float(level["multiplier"]))
    return {"at": at, **statistics_at(mech, at, x_v, n_est)}


def calibrated_levels(
    built: BuiltPlan, frames: Mapping[str, pl.DataFrame]
) -> dict[str, dict[str, Any]]:
    """Per smooth-mechanism table in a nested pair: its variance level from the release.

    The pairs are the released tables whose keys contain another's (no geography
    crosswalk needed: the published keys say which cells nest). Each table's model
    variance is the mechanism's at the modelled x_v of its cells' published sizes
    (:func:`modelled_x_v`); :func:`calibrate_variances` fits one multiplier per table from
    the coarser cells' discrepancies with the sums of their finer cells (published values
    only). Returns table → ``{"multiplier", "parent_cells", "pairs"}``.
    """
    est: dict[str, np.ndarray] = {}
    var: dict[str, np.ndarray] = {}
    modelled: dict[str, float] = {}
    keys: dict[str, list[str]] = {}
    groups: dict[str, str] = {}
    for q in built.queries:
        frame = frames.get(q.name)
        stat = COUNT_STATISTIC
        if frame is None or stat not in q.statistics or stat not in frame.columns:
            continue
        mech = q.mechanisms[q.statistics.index(stat)]
        values = _floats(frame, stat)
        if not np.isfinite(values).all():
            continue
        model = smooth_model(mech)
        if model is not None:
            var[q.name] = model.variance_at(modelled_x_v(values, built.plan))
            modelled[q.name] = float(model.variance_at(np.zeros(1))[0])
            wp_attrs = getattr(built.plan.data, "workplace_attributes", ())
            workplace = [a for a in q.spec.by if a in wp_attrs]
            groups[q.name] = " × ".join(sorted(workplace))
        else:
            std = _floats(frame, f"{stat}_std")
            if not np.isfinite(std).all():
                continue
            var[q.name] = std * std
        est[q.name] = values
        keys[q.name] = [c for c in frame.columns if c in _by_columns(q)]
    pairs: dict[tuple[str, str], np.ndarray] = {}
    for c in est:
        for p in est:
            if c == p or not (c in modelled or p in modelled):
                continue
            if not set(keys[p]) < set(keys[c]):
                continue
            try:
                pairs[(c, p)] = cell_parents(frames[c].select(keys[c]), frames[p].select(keys[p]))
            except HierarchyError:
                continue
    if not pairs:
        return {}
    fit = calibrate_variances(est, var, pairs, modelled, groups=groups)
    return {
        n: {"multiplier": float(c), "parent_cells": int(fit.parent_cells.get(n, 0)),
            "pairs": sorted([ch, pa] for ch, pa in fit.pairs if n in (ch, pa)),
            "shared_by": sorted(m for m in groups if groups[m] == groups[n])}
        for n, c in fit.multipliers.items() if fit.parent_cells.get(n, 0) > 0
    }  # fmt: skip


def _by_columns(q: Any) -> set[str]:
    by = q.spec.by
    return set() if isinstance(by, str) else set(by)


def median_relative_error(e: ExpectedError | None, at: float) -> float | None:
    """The t/at with P(|error| ≤ t) = ½ (the law's median), None without a law."""
    if e is None or e.within is None or at <= 0:
        return None
    t = _half_point(e.within, at, 1e30 * at)
    return None if t is None else t / at


def _half_point(share: Callable[[float], float], first: float, cap: float) -> float | None:
    """The smallest x (to 1e-4 relative) with ``share(x) ≥ ½``, for a non-decreasing share.

    Doubling from ``first`` until the share reaches ½ (None past ``cap``), then bisection.
    """
    lo, hi = 0.0, first
    while share(hi) < 0.5:
        lo, hi = hi, 2 * hi
        if hi > cap:
            return None
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if share(mid) < 0.5 else (lo, mid)
        if hi - lo <= 1e-4 * hi:
            break
    return hi


def _law(mech: Mechanism, cell: Mapping[str, float] | None) -> ExpectedError | None:
    if cell is None:
        return None
    try:
        return mech.expected_error(cell)
    except EreeError:
        return None


def _statement(e: ExpectedError | None, at: float) -> dict[str, Any]:
    """Median relative error and chance within ±10% at one published cell."""
    within = None if e is None or e.within is None else float(e.within(GOOD_RELATIVE * at))
    return {"median_relative_error": median_relative_error(e, at), "within_10": within}


def _table_median(laws: list[tuple[int, ExpectedError, float]]) -> float | None:
    """The r with half the table's cells within ±r of their value (classes' laws, weighted)."""
    laws = [(n, e, at) for n, e, at in laws if e.within is not None]
    if not laws:
        return None
    total = sum(n for n, _, _ in laws)

    def share(r: float) -> float:
        return sum(n * e.within(r * at) for n, e, at in laws) / total  # type: ignore[misc]

    return _half_point(share, 1.0, 1e12)


def _median_index(values: np.ndarray, idx: np.ndarray) -> int:
    """The index (into ``values``) of the lower-median cell among ``idx``."""
    order = idx[np.argsort(values[idx], kind="stable")]
    return int(order[(order.size - 1) // 2])


def published_accuracy(
    built: BuiltPlan,
    frames: Mapping[str, pl.DataFrame],
    n_establishments: int | None = None,
) -> list[dict[str, Any]]:
    """Per table and statistic: the stated accuracy at its published cells (module docstring).

    Every number is computed from the plan's mechanisms and the published tables (values
    and stds); no confidential value is read. Each entry: ``query``, ``statistic``,
    ``unit``, ``mechanism``, ``cells`` (with a positive published value), ``median_cell``
    (its published value), ``cell`` (the public statistics it is stated at),
    ``median_cell_relative_error`` (that cell's median relative error),
    ``median_relative_error`` (the table's: half its cells within ±that, from the classes'
    laws weighted by their cells), ``share_within_10``, ``interval`` (the
    nominal coverage of the published confidence intervals, or None) and ``classes`` (a
    class of fewer than :data:`MIN_CLASS_CELLS` cells has ``not_stated``, the reason,
    instead of figures); a smooth-mechanism count also ``variance_level`` (the calibrated
    multiplier, 1 with ``parent_cells`` 0 where the release has no nested pair for it).
    """
    n_est = n_establishments or GEDP_ASSUMED_ESTABLISHMENTS
    units = declared_units(built.plan)
    levels = calibrated_levels(built, frames)
    out: list[dict[str, Any]] = []
    for q in built.queries:
        frame = frames.get(q.name)
        if frame is None:
            continue
        for stat, mech in zip(q.statistics, q.mechanisms, strict=True):
            smooth = stat == COUNT_STATISTIC and smooth_model(mech) is not None
            level = levels.get(q.name) if smooth else None
            if isinstance(mech, NoiseInfusion) or stat not in frame.columns:
                continue
            est = _floats(frame, stat)
            std = _floats(frame, f"{stat}_std")
            has_ci = bool(np.isfinite(_floats(frame, f"{stat}_ci_low")).any())
            pos = np.nonzero(np.isfinite(est) & (est > 0))[0]
            if pos.size == 0:
                continue

            def stated(
                i: int,
                m: Mechanism = mech,
                est: np.ndarray = est,
                std: np.ndarray = std,
                level: Mapping[str, Any] | None = level,
            ) -> tuple[dict[str, Any], ExpectedError | None, dict[str, Any]]:
                c = cell_statistics(m, float(est[i]), float(std[i]), built.plan, n_est, level)
                e = _law(m, c)
                return (c or {}), e, _statement(e, float(est[i]))

            mid = _median_index(est, pos)
            cell, _, at_median = stated(mid)
            decade = np.floor(np.log10(est[pos])).astype(np.int64)
            classes = []
            laws: list[tuple[int, ExpectedError, float]] = []
            weighted, counted = 0.0, 0
            for d in np.unique(decade):
                members = pos[decade == d]
                j = _median_index(est, members)
                _, e, st = stated(j)
                entry: dict[str, Any] = {"low": float(10.0**d), "high": float(10.0 ** (d + 1)),
                         "cells": int(members.size), "at": float(est[j])}  # fmt: skip
                if members.size < MIN_CLASS_CELLS:
                    entry["not_stated"] = (
                        f"fewer than {MIN_CLASS_CELLS} cells: the error law describes typical "
                        "cells, and a few cells' error is set by the establishments that "
                        "dominate them, which the release does not publish"
                    )
                    classes.append(entry)
                else:
                    classes.append({**entry, **st})
                if e is not None:
                    laws.append((int(members.size), e, float(est[j])))
                if st["within_10"] is not None:
                    weighted += members.size * st["within_10"]
                    counted += int(members.size)
            if smooth:
                extra = {"variance_level": level or {"multiplier": 1.0, "parent_cells": 0,
                                                     "pairs": []}}  # fmt: skip
            else:
                extra = {}
            out.append({
                "query": q.name, "statistic": stat, "unit": unit_of(stat, units),
                "mechanism": mech.name, "cells": int(pos.size),
                "median_cell": float(est[mid]), "cell": cell,
                "median_cell_relative_error": at_median["median_relative_error"],
                "median_relative_error": _table_median(laws),
                "share_within_10": weighted / counted if counted else None,
                "interval": float(getattr(mech, "confidence", 0.95)) if has_ci else None,
                "classes": classes, **extra,
            })  # fmt: skip
    return out
