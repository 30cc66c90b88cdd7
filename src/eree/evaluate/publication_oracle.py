"""The oracle weighting of publication-grade ER-EE tables: evaluation only, never publishable.

The release weights each cell by a *public* variance (published, or the public model of
:mod:`eree.postprocess.variance_model`). To tell how much of the remaining error is the
model's and how much is the shape of the workload, the evaluation also solves the same
least squares — every released pair a constraint, non-negative, integer; every marginal,
no never-worse guard — with each cell's **true** noise variance as its weight:

* Smooth Laplace, Smooth Gamma: the mechanism's variance at the cell's true x_v
  (V₀ + V₁·max(α·x_v, S_min)², the same formula the model is evaluated with);
* any other mechanism: its variance function (:func:`eree.release.publication.variance_at_size`)
  at the cell's true count (Log-Laplace's (n + γ)·f(λ), Lemma 8.2; a published variance
  as published).

It reads the confidential x_v and n of the (synthetic) data: the best any weighting can
do, reported next to the public model's result and labelled as not publishable. Nothing
here is on the release path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from eree.postprocess.hierarchy import (
    HierarchyError,
    MarginalInput,
    cell_parents,
    marginal_forest,
    publication_grade,
    refines,
)
from eree.postprocess.lattice import Pair, lattice_least_squares, lattice_round
from eree.release.build import BuiltPlan
from eree.release.publication import establishments_per_cell, smooth_model, variance_at_size
from eree.release.tables import QueryTable

__all__ = ["oracle_solution", "true_variance"]


def true_variance(
    built: BuiltPlan, table: QueryTable, truth: pl.DataFrame, frame: pl.DataFrame | None
) -> np.ndarray:
    """Each cell's true noise variance (module docstring); confidential."""
    mech = built.query(table.name).mechanisms[0]
    m = table.measurements[0]
    model = smooth_model(mech)
    if m.std is None and model is not None:
        return model.variance_at(truth["x_v"].to_numpy().astype(np.float64))
    keys = [c for c in table.table.columns if not c.startswith("jobs")]
    k = establishments_per_cell(table.table, keys, frame)
    fn, _ = variance_at_size(mech, m, k)
    return np.asarray(fn(truth["count"].to_numpy().astype(np.float64)), dtype=np.float64)


def oracle_solution(
    built: BuiltPlan,
    tables: Sequence[QueryTable],
    truth: Mapping[str, pl.DataFrame],
    frame: pl.DataFrame | None,
) -> dict[str, np.ndarray]:
    """The consistent, non-negative, integer solution weighted by the true variances.

    Args:
        built: the release's plan and mechanisms.
        tables: the raw released tables (their Measurements).
        truth: query name → the true ``count`` and ``x_v`` per cell, aligned with the table.
        frame: the public workplace frame (nesting, establishments per cell).

    Returns:
        query name → values, for the marginals in a released pair (others absent).
    """
    marg = {q.name: tuple(q.by) for q in built.plan.queries if not isinstance(q.by, str)}
    by_name = {t.name: t for t in tables if t.name in marg}
    est: dict[str, np.ndarray] = {}
    var: dict[str, np.ndarray] = {}
    exact: dict[str, np.ndarray] = {}
    for n, t in by_name.items():
        m = t.measurements[0]
        k = establishments_per_cell(t.table, marg[n], frame)
        zero = np.zeros(t.table.height, dtype=bool)
        if m.std is not None:
            zero |= np.asarray(m.std, dtype=np.float64) == 0.0
        if k is not None:
            zero |= k == 0
        exact[n] = zero
        est[n] = np.where(zero, 0.0, np.asarray(m.estimate, dtype=np.float64))
        var[n] = np.where(zero, 0.0, true_variance(built, t, truth[n], frame))
    pairs: dict[tuple[str, str], np.ndarray] = {}
    for c in by_name:
        for p in by_name:
            if refines(marg[c], marg[p]):
                child = by_name[c].table.select(list(marg[c]))
                pairs[(c, p)] = cell_parents(child, by_name[p].table.select(list(marg[p])), frame)
    names = [n for n in by_name if any(n in pr for pr in pairs)]
    if len(names) < 2:
        return {}
    try:
        parents = marginal_forest({n: marg[n] for n in names})
    except HierarchyError:
        parents = None
    if parents is not None:
        inputs = []
        for n in names:
            par = parents[n]
            idx = None if par is None else pairs[(n, par)]
            inputs.append(MarginalInput(n, est[n], var[n], par, idx))
        return publication_grade(inputs, consistent=True, nonnegative=True, integer=True)
    ps = [Pair(c, p, idx) for (c, p), idx in pairs.items()]
    values = lattice_least_squares(
        {n: est[n] for n in names}, {n: var[n] for n in names}, ps, nonnegative=True
    )
    values, _ = lattice_round(values, ps, {n: exact[n] for n in names})
    return values
