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
  variance model's typical x_v of a cell of that size (:func:`eree.release.targets.split_share`).

The table's share of cells within ±10% is the classes' chances weighted by their numbers
of cells, and its median relative error the r at which that mixture of the classes' laws
reaches ½; where the table publishes confidence intervals their nominal coverage is stated
too. ``eree audit claims`` checks every figure here against realised errors.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from eree.errors import EreeError
from eree.mechanisms.base import ExpectedError, Mechanism
from eree.mechanisms.gedp import GedpMechanism, PncBounded
from eree.mechanisms.noise_infusion import NoiseInfusion
from eree.release.build import BuiltPlan
from eree.release.preview import GEDP_ASSUMED_ESTABLISHMENTS, declared_units, statistics_at
from eree.release.targets import split_share
from eree.release.units import unit_of

__all__ = ["GOOD_RELATIVE", "cell_statistics", "median_relative_error", "published_accuracy"]

#: the relative error the statements count cells within
GOOD_RELATIVE = 0.10


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


def cell_statistics(
    mech: Mechanism, at: float, std: float | None, plan: Any, n_est: int
) -> dict[str, float] | None:
    """The public statistics of a published cell of value ``at`` (module docstring).

    ``std``: the cell's published std (NaN/None when none is published). The dict carries
    ``at`` (its size) and, for counts, ``x_v``; None when the law cannot be set up.
    """
    if isinstance(mech, PncBounded):
        if std is None or not math.isfinite(std):
            return None
        bound = _pnc_bound_of_std(mech, std, at)
        return None if bound is None else {"at": at, "value": at, "bound": bound}
    if isinstance(mech, GedpMechanism):
        return {"at": at, **statistics_at(mech, at, 1.0, n_est)}
    x_v = max(split_share(at, plan.budget_plan) * at, 1.0)
    return {"at": at, **statistics_at(mech, at, x_v, n_est)}


def median_relative_error(e: ExpectedError | None, at: float) -> float | None:
    """The t/at with P(|error| ≤ t) = ½ (the law's median), None without a law."""
    if e is None or e.within is None or at <= 0:
        return None
    within = e.within
    lo, hi = 0.0, at
    while within(hi) < 0.5:
        lo, hi = hi, 2 * hi
        if hi > 1e30 * at:
            return None
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if within(mid) < 0.5 else (lo, mid)
        if hi - lo <= 1e-4 * hi:
            break
    return hi / at


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

    lo, hi = 0.0, 1.0
    while share(hi) < 0.5:
        lo, hi = hi, 2 * hi
        if hi > 1e12:
            return None
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if share(mid) < 0.5 else (lo, mid)
        if hi - lo <= 1e-4 * hi:
            break
    return hi


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
    nominal coverage of the published confidence intervals, or None) and ``classes``.
    """
    n_est = n_establishments or GEDP_ASSUMED_ESTABLISHMENTS
    units = declared_units(built.plan)
    out: list[dict[str, Any]] = []
    for q in built.queries:
        frame = frames.get(q.name)
        if frame is None:
            continue
        for stat, mech in zip(q.statistics, q.mechanisms, strict=True):
            if isinstance(mech, NoiseInfusion) or stat not in frame.columns:
                continue
            est = _floats(frame, stat)
            std = _floats(frame, f"{stat}_std")
            has_ci = bool(np.isfinite(_floats(frame, f"{stat}_ci_low")).any())
            pos = np.nonzero(np.isfinite(est) & (est > 0))[0]
            if pos.size == 0:
                continue

            def stated(
                i: int, m: Mechanism = mech, est: np.ndarray = est, std: np.ndarray = std
            ) -> tuple[dict[str, Any], ExpectedError | None, dict[str, Any]]:
                c = cell_statistics(m, float(est[i]), float(std[i]), built.plan, n_est)
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
                classes.append({
                    "low": float(10.0**d), "high": float(10.0 ** (d + 1)),
                    "cells": int(members.size), "at": float(est[j]), **st,
                })  # fmt: skip
                if e is not None:
                    laws.append((int(members.size), e, float(est[j])))
                if st["within_10"] is not None:
                    weighted += members.size * st["within_10"]
                    counted += int(members.size)
            out.append({
                "query": q.name, "statistic": stat, "unit": unit_of(stat, units),
                "mechanism": mech.name, "cells": int(pos.size),
                "median_cell": float(est[mid]), "cell": cell,
                "median_cell_relative_error": at_median["median_relative_error"],
                "median_relative_error": _table_median(laws),
                "share_within_10": weighted / counted if counted else None,
                "interval": float(getattr(mech, "confidence", 0.95)) if has_ci else None,
                "classes": classes,
            })  # fmt: skip
    return out
