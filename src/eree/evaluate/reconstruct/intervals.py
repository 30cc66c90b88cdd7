r"""The interval audit: the tightest interval every published constraint implies, jointly.

Unknowns are the true values :math:`x` of all cells. The attacker knows the additivity
relations :math:`A x = 0` of the linked tables (:meth:`.PublishedTables.derived_relations`)
and each cell's own interval :math:`\ell_c \le x_c \le u_c` from its status
(:meth:`.PublishedTables.bounds`: exact, suppressed, rounded, range, or a noisy cell's
central band). For each cell that is not published exactly it solves

.. math:: \min x_c \quad\text{and}\quad \max x_c
    \quad\text{s.t.}\quad A x = 0,\ \ell \le x \le u

with HiGHS (:class:`eree.suppression.lp.EqualityLP`, warm-started re-solves), one
constraint set per **connected component** of the cells that are not fixed (two cells
are linked when they appear in a common relation; fixed cells move to the right-hand
side). A relation left with a single unknown gives it away without an LP (the repeated
singleton attack, :func:`eree.suppression.peel`). Every optimum found is a feasible
point, and so are the true values when the auditor gives them: a cell whose value at a
feasible point already equals its own bound has that bound, without an LP (exact, not an
approximation).

For counts the LP's interval is rounded inward to whole numbers (the integer program's
interval can only be tighter). On suppressed cells with the suppression package's
relations this is the same LP as ``eree suppress``'s audit (:func:`eree.suppression.audit`)
and gives the same bounds (a test checks it).

A cell is **pinned** when its interval is one point and its status did not publish it
exactly. For noisy cells the interval is a confidence statement (the bands hold with the
stated probability each), not a certainty; a component whose bands are jointly
infeasible keeps its cells' own bands and is counted (``inconsistent_components``).

**Shared factors.** Cells of one ``factor`` group (:mod:`.factors`) add the ratio rows
:math:`x_c - (v_c/v_a)\,x_a = 0` to the relations, and each group's shares
:math:`x_c/\sum_G x` get their interval too (Charnes–Cooper LP): the size and shape
attacks of Haney et al. §5.2 on noise infusion are this audit.

**Contributions.** When the cells give their number of establishments, each
establishment's contribution to a cell of the finest table is bounded by the cell's
interval: ``[lower, upper]`` when it is the cell's only establishment, ``[0, upper]``
otherwise (any split of the total among non-negative contributions is possible, so
these are tight).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from eree.evaluate.reconstruct.factors import factor_groups, factor_relations, share_bounds
from eree.evaluate.reconstruct.tables import PublishedTables
from eree.suppression.coarsening.check import raise_to_floor
from eree.suppression.linked import linked_bounds, tolerance

__all__ = ["IntervalResult", "interval_audit", "linked_bounds"]


@dataclass(frozen=True)
class IntervalResult:
    """The interval audit of published tables.

    Attributes:
        lower, upper: per cell, the attacker's interval (confidential for the cells the
            release did not publish exactly: internal).
        own_lower, own_upper: per cell, the interval from its own status alone.
        status: per cell, its published status.
        pinned: per cell, the interval is one point and the status was not ``exact``.
        narrowed: per cell, the linked interval is strictly inside the cell's own.
        contribution_pinned: establishments whose contribution is pinned (only one in a
            cell whose interval is a point), when establishment counts are given.
        stats: how the bounds were found (LPs, peeled, components).
        noisy: whether some intervals are noise bands (confidence, not certainty).
        share_lower, share_upper: per cell of a ``factor`` group, the interval of its share
            of the group (NaN elsewhere; internal).
        shape_pinned: per ``factor`` group, whether every share is one point.
    """

    lower: np.ndarray
    upper: np.ndarray
    own_lower: np.ndarray
    own_upper: np.ndarray
    status: np.ndarray
    pinned: np.ndarray
    narrowed: np.ndarray
    contribution_pinned: int | None
    contributions: int | None
    stats: dict[str, int] = field(default_factory=dict)
    noisy: bool = False
    share_lower: np.ndarray | None = None
    share_upper: np.ndarray | None = None
    shape_pinned: np.ndarray | None = None

    def summary(self) -> dict[str, Any]:
        """Counts only (no cell value)."""
        out: dict[str, Any] = {"cells": int(self.status.size)}
        per: dict[str, dict[str, int]] = {}
        for s in np.unique(self.status):
            m = self.status == s
            per[str(s)] = {
                "cells": int(m.sum()),
                "pinned": int(self.pinned[m].sum()),
                "narrowed": int(self.narrowed[m].sum()),
                "unbounded": int(np.isinf(self.upper[m]).sum()),
            }
        out["by_status"] = per
        out["cells_pinned"] = int(self.pinned.sum())
        if self.contributions is not None:
            out["establishment_contributions"] = self.contributions
            out["establishment_contributions_pinned"] = self.contribution_pinned
        if self.shape_pinned is not None and self.shape_pinned.size:
            out["factor_groups"] = int(self.shape_pinned.size)
            out["factor_groups_shape_pinned"] = int(self.shape_pinned.sum())
        out["noise_bands"] = self.noisy
        out["how"] = dict(self.stats)
        return out


def interval_audit(
    published: PublishedTables,
    *,
    level: float = 0.95,
    truth: np.ndarray | None = None,
    factors: bool = True,
    floor: np.ndarray | float | None = None,
) -> IntervalResult:
    """Every cell's interval from all published constraints jointly (LP, per component).

    Args:
        published: the tables.
        level: the central probability of a noisy cell's band.
        truth: true cell values (the auditor's; only to skip LPs, the result is the same).
        factors: use the ``factor`` groups' ratio rows (False: an attacker who ignores the
            shared factor; the shares are still bounded, from the other constraints).
        floor: per cell (or one for all), what the publication discloses of a cell it
            does not publish exactly — its value is at least ``floor`` (a table whose
            zeros are all published exactly: 1,
            :func:`eree.suppression.coarsening.presence_floor`). None: nothing.
    """
    own_lo, own_hi = published.bounds(level=level)
    if floor is not None:
        st = published.cells.get_column("status").to_numpy().astype(str)
        own_lo, own_hi = raise_to_floor(own_lo, own_hi, st == "exact", floor)
    rel = published.derived_relations()
    groups = factor_groups(published)
    if groups and factors:
        rel = sp.vstack([rel, factor_relations(published)]).tocsr()
    stats: dict[str, int] = {}
    lo, hi = linked_bounds(rel, own_lo, own_hi, truth=truth, stats=stats)
    if published.integer:
        lo = np.ceil(lo - 1e-6)
        hi = np.where(np.isfinite(hi), np.floor(hi + 1e-6), np.inf)
        hi = np.maximum(hi, lo)
    status = published.cells.get_column("status").to_numpy().astype(str)
    s_lo = s_hi = s_pin = None
    if groups:
        s_lo, s_hi, s_pin = share_bounds(rel, groups, lo, hi)
    tol = tolerance(hi)
    pinned = (hi - lo <= tol) & (status != "exact")
    narrowed = ((lo > own_lo + tol) | (hi < own_hi - tol)) & (status != "exact")
    est = published.cells.get_column("establishments").to_numpy()
    contrib = pinned_c = None
    if not np.all(np.isnan(est.astype(np.float64))):
        if published.finest is not None:
            fin = np.asarray(published.finest, dtype=bool)
        else:
            tcol = published.cells.get_column("table").to_numpy()
            by = published.tables
            finest = [t for t in by if not any(set(by[t]) < set(by[u]) for u in by)]
            fin = np.isin(tcol, finest)
        m = fin & ~np.isnan(est.astype(np.float64))
        e = est[m].astype(np.float64)
        contrib = int(e.sum())
        pinned_c = int(((e == 1) & (hi[m] - lo[m] <= tol[m])).sum())
    return IntervalResult(
        lo,
        hi,
        own_lo,
        own_hi,
        status,
        pinned,
        narrowed,
        pinned_c,
        contrib,
        stats,
        bool((status == "noisy").any()),
        s_lo,
        s_hi,
        s_pin,
    )
