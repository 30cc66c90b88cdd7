"""Publication-grade ER-EE tables from the released Measurements (docs/design.md#post-processing).

``[postprocess] consistent / nonnegative / integer`` on an ER-EE count release turn the
published tables into tables that add up along the tree of released marginals (see
:mod:`eree.postprocess.hierarchy`), are non-negative and integer. Inputs: the published
estimates, the published variances or a public proxy where a mechanism withholds them,
the plan, and the public workplace frame (for the geography nesting). The confidential
cell statistics are never read.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from eree.errors import SpecError
from eree.mechanisms.base import Measurement, Mechanism
from eree.postprocess.hierarchy import (
    HierarchyError,
    MarginalInput,
    cell_parents,
    marginal_forest,
    publication_grade,
)
from eree.release.build import COUNT_STATISTIC, BuiltPlan
from eree.release.spec import Plan
from eree.release.tables import QueryTable

__all__ = ["check_publication_plan", "publication_tables", "variance_proxy", "wanted"]


def wanted(plan: Plan) -> bool:
    """Whether the plan asks for any publication-grade post-processing of its counts."""
    p = plan.postprocess
    return bool(p.consistent or p.nonnegative or p.integer)


def _marginals(plan: Plan) -> dict[str, tuple[str, ...]]:
    return {q.name: tuple(q.by) for q in plan.queries if not isinstance(q.by, str)}


def check_publication_plan(plan: Plan) -> None:
    """Refuse, before any data is read, a consistency request the tree cannot serve.

    Raises:
        SpecError: see :func:`eree.postprocess.hierarchy.marginal_forest`.
    """
    if plan.postprocess.consistent:
        try:
            marginal_forest(_marginals(plan))
        except HierarchyError as e:
            raise SpecError(str(e)) from None


def variance_proxy(mech: Mechanism, m: Measurement) -> tuple[np.ndarray, str]:
    """The per-cell variance used as a least-squares weight, and where it comes from.

    The published variance when there is one. Where it is withheld the proxy uses public
    information only: for the smooth mechanisms, the variance their noise has at the
    smallest smooth sensitivity S = 1 (the noise scale is 2S/ε_cell for Smooth Laplace and
    5S/ε₁ for Smooth Gamma; the true S = max(α·x_v, 1) is confidential), so a marginal's
    weight follows its per-cell ε; otherwise the published value's magnitude (a
    Poisson-like proxy, max(|estimate|, 1)).
    """
    est = np.asarray(m.estimate, dtype=np.float64)
    if m.std is not None:
        return np.asarray(m.std, dtype=np.float64) ** 2, f"published variance ({m.variance_kind})"
    floor = mech.variance_floor()
    if floor is not None:
        var = np.full(est.shape, floor)
        how = (
            f"public proxy: the {mech.name} noise variance at its smallest sensitivity, "
            f"{floor:.6g} (the true scale depends on the confidential x_v)"
        )
    else:
        var = np.maximum(np.abs(est), 1.0)
        how = "public proxy: max(|published value|, 1) (the mechanism withholds its variance)"
    return var, how


def _exact_cells(m: Measurement) -> np.ndarray:
    """Cells published exactly (public zeros: std 0 or a degenerate interval)."""
    n = m.estimate.shape[0]
    if m.std is not None:
        return np.asarray(m.std, dtype=np.float64) == 0.0
    if m.ci_low is not None and m.ci_high is not None:
        return np.asarray(m.ci_low) == np.asarray(m.ci_high)
    return np.zeros(n, dtype=bool)


def publication_tables(
    built: BuiltPlan, tables: list[QueryTable], frame: pl.DataFrame | None
) -> tuple[list[QueryTable], dict[str, Any]]:
    """The post-processed tables and the manifest entry saying what was done.

    Args:
        built: the release's plan with its mechanism objects (public parameters).
        tables: the released tables, each with its Measurement.
        frame: the public workplace frame (geography nesting), or None.
    """
    pp = built.plan.postprocess
    marg = _marginals(built.plan)
    check_publication_plan(built.plan)
    parents = marginal_forest(marg) if pp.consistent else {n: None for n in marg}
    by_name = {t.name: t for t in tables}
    inputs: list[MarginalInput] = []
    weights: dict[str, str] = {}
    public_zero: dict[str, np.ndarray] = {}
    for t in tables:
        m = t.measurements[0]
        mech = built.query(t.name).mechanisms[0]
        var, how = variance_proxy(mech, m)
        zero = _exact_cells(m)
        var = np.where(zero, 0.0, var)
        public_zero[t.name] = zero
        weights[t.name] = how
        parent = parents.get(t.name)
        idx = None
        if parent is not None:
            keys = list(marg[t.name])
            pkeys = list(marg[parent])
            try:
                idx = cell_parents(t.table.select(keys), by_name[parent].table.select(pkeys), frame)
            except HierarchyError as e:
                raise SpecError(f"[postprocess] consistent = true: {e}") from None
        inputs.append(MarginalInput(t.name, np.asarray(m.estimate, dtype=np.float64), var,
                                    parent, idx))  # fmt: skip
    values = publication_grade(
        inputs, consistent=pp.consistent, nonnegative=pp.nonnegative, integer=pp.integer
    )
    done = [k for k in ("consistent", "nonnegative", "integer") if getattr(pp, k)]
    method = (
        "post-processed ("
        + ", ".join(done)
        + ") from the published values: "
        + (
            "generalised least squares over the tree of released marginals, "
            if pp.consistent
            else ""
        )
        + ("non-negative projection, " if pp.nonnegative and pp.consistent else "")
        + ("controlled rounding" if pp.integer and pp.consistent else "")
    ).rstrip(", ")
    uncertainty = (
        f"{method}; the mechanism's std and CI describe its raw output, not these values, "
        "and are not published for them"
    )
    out: list[QueryTable] = []
    for t in tables:
        x = values[t.name]
        if pp.integer:
            col = pl.Series(COUNT_STATISTIC, x.astype(np.int64))
        else:
            col = pl.Series(COUNT_STATISTIC, x)
        null = pl.Series([None] * t.table.height, dtype=pl.Float64)
        table = t.table.with_columns(
            col,
            null.alias(f"{COUNT_STATISTIC}_std"),
            null.alias(f"{COUNT_STATISTIC}_ci_low"),
            null.alias(f"{COUNT_STATISTIC}_ci_high"),
        )
        notes = (*t.notes, f"published values {method}")
        out.append(QueryTable(t.name, table, {COUNT_STATISTIC: uncertainty}, notes,
                              t.measurements))  # fmt: skip
    entry: dict[str, Any] = {
        "consistent": pp.consistent,
        "nonnegative": pp.nonnegative,
        "integer": pp.integer,
        "method": method,
        "inputs": "published estimates, published variances or the public proxies below, "
        "the plan, and the public workplace frame (geography nesting); no confidential value",
        "weights": weights,
        "privacy_cost": "none (post-processing of published values)",
    }
    if pp.consistent:
        entry["tree"] = {n: p for n, p in parents.items()}
        entry["constraints"] = (
            "each marginal's cells equal the sums of their cells in every child marginal "
            "(child = the marginal refining it most closely; geography by the workplace "
            "frame's nesting block → tract → county → state)"
        )
        roots = [n for n, p in parents.items() if p is None]
        if len(roots) > 1:
            entry["not_constrained"] = (
                f"the roots {roots} are not constrained to each other (no released marginal "
                "is coarser than both)"
            )
    if not pp.consistent and not done:
        raise SpecError("no publication-grade post-processing was asked for")
    return out, entry
