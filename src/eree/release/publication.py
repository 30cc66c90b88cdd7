"""Publication-grade ER-EE tables from the released Measurements (docs/design.md#post-processing).

``[postprocess] consistent / nonnegative / integer`` on an ER-EE count release turn the
published tables into tables that add up along the tree of released marginals (see
:mod:`eree.postprocess.hierarchy`), are non-negative and integer. Inputs: the published
estimates, the published variances or a public proxy where a mechanism withholds them,
the plan, and what the engine tells of the public workplace frame: its establishments
per combination of the released workplace attributes
(:meth:`~eree.engine.base.Engine.workplace_counts`: establishments per cell, the
geography nesting), the same from every engine. The confidential cell statistics are
never read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from eree.engine.base import ESTABLISHMENTS
from eree.errors import SpecError
from eree.mechanisms.base import Measurement, Mechanism
from eree.mechanisms.er_ee import log_laplace_sd_factor
from eree.postprocess.blocks import block_rows, local_parent_index, unit_block_rows
from eree.postprocess.guard import (
    GuardBlock,
    GuardInput,
    GuardResult,
    Holding,
    Solver,
    decide_holding,
    never_worse,
    never_worse_blocks,
    own_values,
)
from eree.postprocess.hierarchy import (
    GEOGRAPHY,
    HierarchyError,
    MarginalInput,
    cell_parents,
    check_distinct,
    marginal_forest,
    publication_grade,
    refines,
)
from eree.postprocess.variance_calibration import VarianceCalibration, calibrate_variances
from eree.postprocess.variance_check import VarianceCheck, variance_check
from eree.postprocess.variance_model import NoiseShape, SmoothVarianceModel
from eree.release.build import COUNT_STATISTIC, BuiltPlan, split_by
from eree.release.spec import Plan
from eree.release.tables import QueryTable

__all__ = [
    "check_publication_plan",
    "publication_tables",
    "variance_at_size",
    "variance_proxy",
    "wanted",
    "workplace_attributes",
]


def wanted(plan: Plan) -> bool:
    """Whether the plan asks for any publication-grade post-processing of its counts."""
    p = plan.postprocess
    return bool(p.consistent or p.nonnegative or p.integer)


#: the most cells (all marginals together) post-processing solves at once on a tree of
#: marginals; a larger tree is solved block by block of root cells, with the same result
#: (:mod:`eree.postprocess.blocks`): memory follows the block, not the table
BLOCK_CELLS = 4_000_000


def workplace_attributes(plan: Plan) -> list[str]:
    """The workplace attributes of the plan's marginals, in first-use order.

    What :func:`publication_tables` needs of the public frame is its establishments per
    combination of these (``Engine.workplace_counts``).
    """
    out: list[str] = []
    for q in plan.queries:
        if isinstance(q.by, str):
            continue
        wp, _ = split_by(q, plan.data)  # type: ignore[arg-type]
        out += [a for a in wp if a not in out]
    return out


def _marginals(plan: Plan) -> dict[str, tuple[str, ...]]:
    return {q.name: tuple(q.by) for q in plan.queries if not isinstance(q.by, str)}


def check_publication_plan(plan: Plan) -> None:
    """Refuse, before any data is read, a consistency request that cannot be served.

    Any set of distinct marginals is accepted (a tree or a lattice).

    Raises:
        SpecError: two queries release the same marginal.
    """
    if plan.postprocess.consistent:
        try:
            check_distinct(_marginals(plan))
        except HierarchyError as e:
            raise SpecError(str(e)) from None


def smooth_model(mech: Mechanism) -> SmoothVarianceModel | None:
    """The public variance model of a mechanism whose noise scale is proportional to S(x_v).

    Read off the mechanism's own public error formula (:meth:`Mechanism.expected_error`
    at representative x_v, never the data's): V(x_v) = V₀ + V₁·max(α·x_v, S_min)². None
    for a mechanism that does not read x_v or has no such formula.
    """
    alpha = getattr(mech, "alpha", None)
    if "x_v" not in mech.needs or not isinstance(alpha, float | int) or alpha <= 0:
        return None

    def var(x_v: float) -> float | None:
        e = mech.expected_error({"count": 1.0, "x_v": x_v, "count_truncated": 1.0})
        return None if e is None or e.std is None else float(e.std) ** 2

    v_0, v_10, v_20 = var(0.0), var(10.0 / alpha), var(20.0 / alpha)
    if v_0 is None or v_10 is None or v_20 is None or not v_20 > v_10:
        return None
    v1 = (v_20 - v_10) / 300.0
    v0 = max(v_10 - 100.0 * v1, 0.0)
    s_min = float(np.sqrt(max(v_0 - v0, 0.0) / v1))
    return SmoothVarianceModel(alpha=float(alpha), v0=v0, v1=v1, s_min=s_min)


#: a cell's variance as a function of its size (public: the mechanism's formula or model)
VarianceAt = Callable[[np.ndarray], np.ndarray]


def variance_at_size(
    mech: Mechanism, m: Measurement, establishments: np.ndarray | None = None
) -> tuple[VarianceAt, str]:
    """Each cell's noise variance as a public function of its size, and where it comes from.

    Least squares needs a variance per cell. Where the mechanism's variance grows with the
    cell's size (Log-Laplace's (n + γ)·f, the smooth mechanisms' S = max(α·x_v, 1) with x_v
    modelled from the size), the size is not known: it is estimated. Evaluated at the
    cell's *own* published value, the weight is correlated with the cell's own noise —
    a cell that came out low gets a small variance and pulls every total it enters down
    (on the LODES WAC product, −9% on C000). So the release evaluates these functions at
    the consistent solution of a first pass (:func:`_solver`), which pools every
    marginal's measurement of the cell.

    * Log-Laplace (λ < 1/2; its std is published as a plug-in at the estimate): the
      mechanism's own formula (max(size, 0) + γ)·f(λ) (Lemma 8.2);
    * another published variance: the published variance (it does not depend on the size);
    * the smooth mechanisms, with the frame's counts: the public variance model of
      :mod:`eree.postprocess.variance_model` at x_v = min(c·k^−β, 1)·|size|;
    * without the frame's counts: their variance at the smallest sensitivity S = 1;
    * otherwise a Poisson-like proxy, max(|size|, 1).
    """
    lam = getattr(mech, "lam", None)
    gamma = getattr(mech, "gamma", None)
    if m.std is not None:
        if isinstance(lam, float) and isinstance(gamma, float) and lam < 0.5:
            f = log_laplace_sd_factor(lam)
            g = gamma

            def ll(size: np.ndarray) -> np.ndarray:
                return ((np.maximum(np.asarray(size, dtype=np.float64), 0.0) + g) * f) ** 2

            return ll, (
                f"published variance ({m.variance_kind}) by its formula, the {mech.name} "
                f"variance ((max(n, 0) + gamma) * {f:.6g})^2 (Lemma 8.2), re-evaluated at "
                "n = the cell's value in a first consistent "
                "solution of every released marginal (not the cell's own published value, "
                "whose noise the weight would then follow)"
            )
        fixed = np.asarray(m.std, dtype=np.float64) ** 2
        return (lambda size: fixed), f"published variance ({m.variance_kind})"
    model = smooth_model(mech)
    if model is not None and establishments is not None:
        k = establishments
        sm = model
        return (lambda size: sm.variance(size, k)), (
            f"public variance model: the {mech.name} noise variance at S = max(alpha * x_v, 1) "
            f"with x_v predicted as min({model.scale:g} * k^-{model.beta:g}, 1) * |n|, k the "
            "public frame's establishments in the cell (the true x_v is confidential) and n "
            "the cell's value in a first consistent solution of every released marginal"
        )
    floor = mech.variance_floor()
    if floor is not None:
        v = float(floor)
        return (lambda size: np.full(np.shape(size), v)), (
            f"public proxy: the {mech.name} noise variance at its smallest sensitivity, "
            f"{floor:.6g} (the true scale depends on the confidential x_v)"
        )
    return (lambda size: np.maximum(np.abs(np.asarray(size, dtype=np.float64)), 1.0)), (
        "public proxy: max(|n|, 1) (the mechanism withholds its variance), n the cell's "
        "value in a first consistent solution"
    )


def variance_proxy(
    mech: Mechanism, m: Measurement, establishments: np.ndarray | None = None
) -> tuple[np.ndarray, str]:
    """The per-cell variance at the cell's own published value, and where it comes from.

    :func:`variance_at_size` evaluated at the published estimate (for the published
    variances: the published variance itself). What the first pass of the consistent
    solve and the accuracy calibration use.
    """
    if m.std is not None:
        return np.asarray(m.std, dtype=np.float64) ** 2, f"published variance ({m.variance_kind})"
    fn, how = variance_at_size(mech, m, establishments)
    return fn(np.asarray(m.estimate, dtype=np.float64)), how


def establishments_per_cell(
    table: pl.DataFrame, keys: Sequence[str], frame: pl.DataFrame | None
) -> np.ndarray | None:
    """The public frame's number of establishments in each cell's workplace combination.

    ``table``: one row per cell, its key columns ``keys`` (none: a total, one cell).
    ``frame``: the public frame's establishments per combination of workplace attributes
    (``Engine.workplace_counts``: the attributes, then ``establishments``); the workplace
    attributes among the keys are its columns (worker attributes are not: every worker
    combination of a workplace combination has the same establishments). None without a
    frame.
    """
    if frame is None:
        return None
    wp = [c for c in keys if c in frame.columns and c != ESTABLISHMENTS]
    if not wp:
        return np.full(table.height, float(frame[ESTABLISHMENTS].sum()))
    counts = (
        frame.group_by(wp)
        .agg(pl.col(ESTABLISHMENTS).sum().alias("__k"))
        .with_columns([pl.col(c).cast(pl.Utf8) for c in wp])
    )
    left = table.select([pl.col(c).cast(pl.Utf8) for c in wp])
    joined = left.join(counts, on=wp, how="left", maintain_order="left")
    return joined["__k"].fill_null(0).to_numpy().astype(np.float64)


def _exact_cells(m: Measurement) -> np.ndarray:
    """Cells published exactly (public zeros: std 0 or a degenerate interval)."""
    n = m.estimate.shape[0]
    if m.std is not None:
        return np.asarray(m.std, dtype=np.float64) == 0.0
    if m.ci_low is not None and m.ci_high is not None:
        return np.asarray(m.ci_low) == np.asarray(m.ci_high)
    return np.zeros(n, dtype=bool)


def _measurement_rows(m: Measurement, rows: np.ndarray) -> Measurement:
    """The Measurement of some of a table's cells."""

    def part(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else np.asarray(a)[rows]

    return dataclasses.replace(
        m, noisy=np.asarray(m.noisy)[rows], estimate=np.asarray(m.estimate)[rows],
        std=part(m.std), ci_low=part(m.ci_low), ci_high=part(m.ci_high),
    )  # fmt: skip


def _guard_input(
    mech: Mechanism, m: Measurement, name: str, est: np.ndarray, exact: np.ndarray,
    at_size: VarianceAt, k: np.ndarray | None,
) -> GuardInput:  # fmt: skip
    """How the guard simulates this marginal: its noise shape, weights and their model."""
    model = smooth_model(mech) if m.std is None else None
    if model is not None and k is not None:
        kk = k
        sm = model
        shape = NoiseShape("quartic" if "gamma" in mech.name else "laplace")
        return GuardInput(
            name, est, exact, shape,
            weight=at_size,
            true_variance=lambda t, rng: sm.variance_at(sm.draw_largest(t, kk, rng)),
        )  # fmt: skip
    lam = getattr(mech, "lam", None)
    gamma = getattr(mech, "gamma", None)
    if m.std is not None and isinstance(lam, float) and isinstance(gamma, float) and lam < 0.5:
        return GuardInput(name, est, exact, NoiseShape("log_laplace", lam, gamma),
                          weight=at_size, true_variance=lambda t, rng: at_size(t))  # fmt: skip
    shape = NoiseShape("laplace" if "laplace" in mech.name else "gaussian")
    return GuardInput(name, est, exact, shape, weight=at_size,
                      true_variance=lambda t, rng: at_size(t))  # fmt: skip


def _solver(
    marg: dict[str, tuple[str, ...]],
    pairs: dict[tuple[str, str], np.ndarray],
    exact: dict[str, np.ndarray],
    at_size: Mapping[str, VarianceAt],
    *,
    nonnegative: bool,
    integer: bool,
    methods: dict[str, str],
    first_only: bool = False,
    held: Collection[str] = (),
) -> Solver:
    """A post-processing run over a chosen set of marginals: tree or lattice.

    Two passes (feasible generalised least squares): the first, consistent only (no
    non-negativity, no rounding), with the variances at the published values it is given;
    the second with every size-dependent variance re-evaluated at the first pass's
    solution (``at_size``), which pools all the marginals' measurements of a cell, so that
    a cell's weight no longer follows its own noise (the source of a downward bias of
    every total; docs/publication-grade.md, "Weights that follow the noise").
    ``first_only``: the first pass alone (what the variance calibration is fitted at).
    ``held``: marginals held as invariants (:func:`eree.postprocess.guard.choose_held`):
    each is replaced by its own values as it publishes them (clamped at 0, rounded, as
    asked) and measured exactly (variance 0) in both passes, so every other marginal
    adapts to it and every released pair still adds up. The same holds for the values a
    replicate of the never-worse guard simulates, so the guard predicts what is published.
    """

    def run(
        est: Mapping[str, np.ndarray], var: Mapping[str, np.ndarray], names: Sequence[str],
        ex: Mapping[str, np.ndarray], nonneg: bool, rounded: bool,
    ) -> dict[str, np.ndarray]:  # fmt: skip
        sub = {n: marg[n] for n in names}
        try:
            parents = marginal_forest(sub)
        except HierarchyError:
            parents = None
        if parents is not None:
            methods["solver"] = "tree"
            inputs = []
            for n in names:
                par = parents[n]
                idx = None if par is None else pairs[(n, par)]
                inputs.append(MarginalInput(n, est[n], np.where(ex[n], 0.0, var[n]), par, idx))
            return publication_grade(inputs, consistent=True, nonnegative=nonneg,
                                     integer=rounded)  # fmt: skip
        methods["solver"] = "lattice"
        # SciPy (the lattice solver's) is imported only for a lattice: ~0.2 s of start-up
        from eree.postprocess.lattice import Pair, lattice_least_squares, lattice_round

        ps = [Pair(c, p, idx) for (c, p), idx in pairs.items() if c in sub and p in sub]
        values = lattice_least_squares(
            {n: np.where(ex[n], 0.0, est[n]) if n not in held else est[n] for n in names},
            {n: np.where(ex[n], 0.0, var[n]) for n in names},
            ps,
            nonnegative=nonneg,
        )
        if rounded:
            values, how = lattice_round(values, ps, {n: ex[n] for n in names},
                                        held=[n for n in names if n in held])  # fmt: skip
            methods["rounding"] = how
        return values

    def solve(
        est: Mapping[str, np.ndarray], var: Mapping[str, np.ndarray], names: Sequence[str]
    ) -> dict[str, np.ndarray]:
        ex: Mapping[str, np.ndarray] = exact
        if held:
            est = {
                n: own_values(np.where(exact[n], 0.0, est[n]), nonnegative=nonnegative,
                              integer=integer) if n in held else est[n]
                for n in names
            }  # fmt: skip
            ex = {n: np.ones_like(exact[n]) if n in held else exact[n] for n in names}
        first = run(est, var, names, ex, False, False)
        if first_only:
            return first
        again = {n: np.where(ex[n], 0.0, at_size[n](first[n])) for n in names}
        return run(est, again, names, ex, nonnegative, integer)

    return solve


def _scaled(fn: VarianceAt, c: float, floor: float) -> VarianceAt:
    """The variance with its part above ``floor`` multiplied by ``c``."""
    if c == 1.0:
        return fn
    return lambda size: floor + c * np.maximum(fn(size) - floor, 0.0)


def _scaled_guard(g: GuardInput, c: float, floor: float) -> GuardInput:
    """The guard's simulations and weights with the calibrated variance."""
    if c == 1.0:
        return g
    true_variance = g.true_variance
    return dataclasses.replace(
        g, weight=_scaled(g.weight, c, floor),
        true_variance=lambda t, rng: floor + c * np.maximum(true_variance(t, rng) - floor, 0.0),
    )  # fmt: skip


def _calibrate(
    marg: dict[str, tuple[str, ...]],
    pairs: dict[tuple[str, str], np.ndarray],
    exact: dict[str, np.ndarray],
    at_size: Mapping[str, VarianceAt],
    est: Mapping[str, np.ndarray],
    var: Mapping[str, np.ndarray],
    names: Sequence[str],
    modelled: Mapping[str, float],
) -> VarianceCalibration:
    """The model's multipliers, fitted at the sizes of a first consistent solution.

    The variances entering the moment conditions are the model's at each cell's value in
    the first pass (as the second pass's weights are), so that they do not follow the
    cell's own noise; the discrepancies are those of the raw published values.
    """
    first = _solver(marg, pairs, exact, at_size, nonnegative=False, integer=False,
                    methods={}, first_only=True)(est, var, names)  # fmt: skip
    sizes = {n: np.where(exact[n], 0.0, at_size[n](first[n])) for n in names}
    return calibrate_variances(
        {n: est[n] for n in names}, sizes,
        {pr: idx for pr, idx in pairs.items() if pr[0] in names and pr[1] in names},
        modelled, exact,
    )  # fmt: skip


def _geographic_units(
    tables: Mapping[str, pl.DataFrame],
    marg: Mapping[str, tuple[str, ...]],
    frame: pl.DataFrame | None,
) -> tuple[str, dict[str, np.ndarray], int] | None:
    """Each cell's geographic unit at the coarsest level every marginal determines.

    On a lattice a released pair joins a cell to cells of the same unit at any geography
    level both marginals determine; the coarsest level every marginal determines (the
    least fine of their finest geography attributes) is therefore one that no constraint
    crosses: its units are independent problems. None when some marginal has no geography
    attribute (e.g. a statewide total by sex), or the frame cannot map a finer level to it.

    Returns:
        The level, per marginal each cell's unit (0 … units − 1), and the number of units.
    """
    finest: dict[str, int] = {}
    for n, by in marg.items():
        if n not in tables:
            continue
        levels = [GEOGRAPHY.index(a) for a in by if a in GEOGRAPHY]
        if not levels:
            return None
        finest[n] = max(levels)
    if not finest:
        return None
    level = GEOGRAPHY[min(finest.values())]
    values: dict[str, pl.Series] = {}
    for n in finest:
        t = tables[n]
        if level in t.columns:
            values[n] = t[level].cast(pl.Utf8)
            continue
        own = GEOGRAPHY[finest[n]]
        if frame is None or own not in frame.columns or level not in frame.columns:
            return None
        nest = frame.select(pl.col(own).cast(pl.Utf8), pl.col(level).cast(pl.Utf8)).unique()
        if nest[own].n_unique() != nest.height:
            return None
        j = t.select(pl.col(own).cast(pl.Utf8)).join(nest, on=own, how="left",
                                                      maintain_order="left")  # fmt: skip
        if j[level].null_count():
            return None
        values[n] = j[level]
    codes = pl.concat([v.unique() for v in values.values()]).unique().sort()
    lookup = pl.DataFrame({"__u": codes, "__i": np.arange(codes.len(), dtype=np.int64)})
    unit_of = {
        n: pl.DataFrame({"__u": v}).join(lookup, on="__u", how="left",
                                         maintain_order="left")["__i"].to_numpy()
        for n, v in values.items()
    }  # fmt: skip
    return level, unit_of, int(codes.len())


def _additivity(
    values: Mapping[str, np.ndarray],
    pairs: Mapping[tuple[str, str], np.ndarray],
    names: Sequence[str],
) -> tuple[int, float]:
    """How many released pairs there are among ``names`` and the largest |parent − Σ child|.

    On a tree only the edges are built; additivity along the edges implies it for every
    (finer, coarser) pair of the tree.
    """
    worst = 0.0
    n = 0
    for (c, p), idx in pairs.items():
        if c in names and p in names:
            n += 1
            parent = np.asarray(values[p], dtype=np.float64)
            sums = np.bincount(idx, np.asarray(values[c], dtype=np.float64),
                               minlength=parent.shape[0])  # fmt: skip
            if sums.size:
                worst = max(worst, float(np.max(np.abs(sums - parent))))
    return n, worst


def publication_tables(
    built: BuiltPlan, tables: list[QueryTable], frame: pl.DataFrame | None
) -> tuple[list[QueryTable], dict[str, Any]]:
    """The post-processed tables and the manifest entry saying what was done.

    Args:
        built: the release's plan with its mechanism objects (public parameters).
        tables: the released tables, each with its Measurement.
        frame: the public frame's establishments per combination of the plan's workplace
            attributes (``Engine.workplace_counts(data, workplace_attributes(plan))``:
            geography nesting, establishments per cell), or None.
    """
    pp = built.plan.postprocess
    marg = _marginals(built.plan)
    check_publication_plan(built.plan)
    by_name = {t.name: t for t in tables}
    names = [t.name for t in tables if t.name in marg]
    weights: dict[str, str] = {}
    est: dict[str, np.ndarray] = {}
    var: dict[str, np.ndarray] = {}
    exact: dict[str, np.ndarray] = {}
    guard_inputs: list[GuardInput] = []
    at_size: dict[str, VarianceAt] = {}
    modelled: dict[str, float] = {}  # variance from the public model → its exact floor
    mechs: dict[str, Mechanism] = {}
    meas: dict[str, Measurement] = {}
    ks: dict[str, np.ndarray | None] = {}
    for n in names:
        t = by_name[n]
        m = t.measurements[0]
        mech = built.query(n).mechanisms[0]
        k = establishments_per_cell(t.table, marg[n], frame)
        mechs[n], meas[n], ks[n] = mech, m, k
        v, _ = variance_proxy(mech, m, k)
        fn, how = variance_at_size(mech, m, k)
        at_size[n] = fn
        zero = _exact_cells(m)
        if k is not None:
            zero = zero | (k == 0)  # no establishment in the public frame: a public zero
        est[n] = np.where(zero, 0.0, np.asarray(m.estimate, dtype=np.float64))
        var[n] = np.where(zero, 0.0, v)
        exact[n] = zero
        weights[n] = how
        sm = smooth_model(mech) if m.std is None and k is not None else None
        if sm is not None:
            modelled[n] = float(sm.variance_at(np.zeros(1))[0])
        guard_inputs.append(_guard_input(mech, m, n, est[n], zero, fn, k))
    own_by_name = {
        n: own_values(est[n], nonnegative=pp.nonnegative, integer=pp.integer) for n in names
    }
    methods: dict[str, str] = {}
    guard: GuardResult | None = None
    calibration: VarianceCalibration | None = None
    values = dict(own_by_name)
    pairs: dict[tuple[str, str], np.ndarray] = {}
    holding = Holding([], {})
    tried: dict[tuple[str, ...], float] = {}
    related: list[str] = []
    n_blocks = 1
    check: VarianceCheck | None = None
    rechecked: VarianceCheck | None = None
    rescaled: dict[str, float] = {}
    if pp.consistent:
        try:  # a tree needs each marginal's parent only: additivity along the edges of a
            # tree implies it for every (finer, coarser) pair, so the other pairs' maps
            # (one integer per cell of the finer marginal each) are not built
            forest = marginal_forest({n: marg[n] for n in names})
        except HierarchyError:
            forest = None
        for c in names:
            for p in names:
                if (forest[c] == p) if forest is not None else refines(marg[c], marg[p]):
                    try:
                        pairs[(c, p)] = cell_parents(by_name[c].table.select(list(marg[c])),
                                                     by_name[p].table.select(list(marg[p])),
                                                     frame)  # fmt: skip
                    except HierarchyError as e:
                        raise SpecError(f"[postprocess] consistent = true: {e}") from None
        related = [n for n in names if any(n in pr for pr in pairs)]
        if pp.variance_calibration and set(modelled).intersection(related):
            calibration = _calibrate(marg, pairs, exact, at_size, est, var, related, modelled)
            for n, cn in calibration.multipliers.items():
                f = modelled[n]
                at_size[n] = _scaled(at_size[n], cn, f)
                var[n] = np.where(exact[n], 0.0, f + cn * np.maximum(var[n] - f, 0.0))
                weights[n] += (
                    f"; its part above the smallest sensitivity's variance ({f:.6g}) times "
                    f"{cn:.4g}: the model calibrated on this release's published values (the "
                    "discrepancies between released parent cells and the sums of their "
                    "child cells)"
                )
            mult = calibration.multipliers
            guard_inputs = [
                _scaled_guard(g, mult.get(g.name, 1.0), modelled.get(g.name, 0.0))
                for g in guard_inputs
            ]
        in_guard = [g for g in guard_inputs if g.name in related]
        # 6 bootstrap replicates; none (every marginal takes the solution) only where an
        # evaluation switched the guard off to show its effect (not a spec key)
        replicates = 0 if pp.without_guard else 6
        cells = sum(est[g.name].shape[0] for g in in_guard)
        blocks: list[dict[str, np.ndarray]] = []
        unit_level: str | None = None
        if forest is not None and calibration is None and cells > BLOCK_CELLS:
            parent = {n: forest[n] for n in related}
            blocks = block_rows(parent, {c: idx for (c, _), idx in pairs.items()},
                                {n: est[n].shape[0] for n in related}, BLOCK_CELLS)  # fmt: skip
        elif forest is None and calibration is None and cells > BLOCK_CELLS:
            units = _geographic_units({n: by_name[n].table for n in related}, marg, frame)
            if units is not None:
                unit_level, unit_of, n_units = units
                blocks = unit_block_rows(unit_of, n_units, BLOCK_CELLS)
        n_blocks = max(len(blocks), 1)

        def run_guard(hold: Sequence[str]) -> GuardResult:
            """The guard's run (and the solution) with ``hold`` held as invariants."""
            if not blocks:
                solve = _solver(marg, pairs, exact, at_size, nonnegative=pp.nonnegative,
                                integer=pp.integer, methods=methods, held=hold)  # fmt: skip
                return never_worse(in_guard, var, solve, nonnegative=pp.nonnegative,
                                   integer=pp.integer, replicates=replicates)  # fmt: skip

            def block_problem(rows: dict[str, np.ndarray]) -> GuardBlock:
                sub_est = {n: est[n][rows[n]] for n in related}
                sub_exact = {n: exact[n][rows[n]] for n in related}
                sub_pairs = {(c, p): local_parent_index(rows[c], rows[p], idx)
                             for (c, p), idx in pairs.items()}  # fmt: skip
                sub_at: dict[str, VarianceAt] = {}
                sub_guard = []
                for g in in_guard:
                    n = g.name
                    k = ks[n]
                    sub_k = None if k is None else k[rows[n]]
                    sub_m = _measurement_rows(meas[n], rows[n])
                    sub_at[n] = variance_at_size(mechs[n], sub_m, sub_k)[0]
                    sub_guard.append(_guard_input(mechs[n], sub_m, n, sub_est[n], sub_exact[n],
                                                  sub_at[n], sub_k))  # fmt: skip
                return GuardBlock(
                    sub_guard, {n: var[n][rows[n]] for n in related},
                    _solver(marg, sub_pairs, sub_exact, sub_at, nonnegative=pp.nonnegative,
                            integer=pp.integer, methods=methods, held=hold),
                    rows,
                )  # fmt: skip

            class Passes:  # each of the guard's rounds builds the blocks anew
                def __iter__(self) -> Iterator[GuardBlock]:
                    return (block_problem(rows) for rows in blocks)

            return never_worse_blocks(
                Passes(),
                {g.name: est[g.name].shape[0] for g in in_guard},
                nonnegative=pp.nonnegative, integer=pp.integer, replicates=replicates,
            )  # fmt: skip

        # marginals the guard predicts post-processing makes worse may be held at their
        # own values as invariants of the solve (guard.decide_holding: the configuration
        # of least predicted harm, at most one held per connected group)
        decision = decide_holding(run_guard, list(pairs),
                                  {n: float(np.sum(var[n])) for n in related})  # fmt: skip
        # the guard simulates under the model; whether the model describes this release
        # is tested on the published parent/child gaps (postprocess.variance_check); when
        # it does not, the modelled variances are rescaled by the measured factor (weights
        # and the guard's simulations alike) and the guard decides again
        if not blocks and not pp.without_guard and calibration is None:
            in_pairs = {k: v for k, v in pairs.items() if k[0] in related and k[1] in related}

            def check_model(guarded: list[Any], decided: Any) -> VarianceCheck | None:
                # the first (linear, consistency-only) pass: P at its sizes, in the release
                # and in each simulated release alike (one linear solve per replicate)
                solve = _solver(
                    marg,
                    pairs,
                    exact,
                    at_size,
                    nonnegative=False,
                    integer=False,
                    methods={},
                    first_only=True,
                    held=decided.holding.held,
                )
                return variance_check(
                    guarded, decided.guard.solution, in_pairs, solve, solve(est, var, related)
                )

            check = check_model(in_guard, decision)
            scalable = [n for n in related if n in modelled]
            if check is not None and check.fired and scalable and not pp.variance_check_report_only:
                c2 = check.factor**2
                for n in scalable:
                    f = modelled[n]
                    at_size[n] = _scaled(at_size[n], c2, f)
                    var[n] = np.where(exact[n], 0.0, f + c2 * np.maximum(var[n] - f, 0.0))
                    rescaled[n] = c2
                    weights[n] += (
                        f"; its part above the smallest sensitivity's variance ({f:.6g}) "
                        f"times {c2:.4g}: the public model did not describe this release's "
                        "parent/child gaps (postprocess.variance_check), rescaled by the "
                        "measured factor squared"
                    )
                in_guard = [
                    _scaled_guard(g, c2, modelled[g.name]) if g.name in rescaled else g
                    for g in in_guard
                ]
                decision = decide_holding(run_guard, list(pairs),
                                          {n: float(np.sum(var[n])) for n in related})  # fmt: skip
                rechecked = check_model(in_guard, decision)
        guard, unheld_guard, holding = decision.guard, decision.first, decision.holding
        tried = decision.tried
        del blocks
        values.update({n: guard.solution[n] for n in related if n in guard.solution})
    done = [k for k in ("consistent", "nonnegative", "integer") if getattr(pp, k)]
    solver = methods.get("solver", "tree")
    method = (
        "post-processed ("
        + ", ".join(done)
        + ") from the published values: "
        + (
            (
                "generalised least squares over the tree of released marginals, "
                if solver == "tree"
                else "weighted least squares over the lattice of released marginals "
                "(every released pair a constraint, conjugate gradients), "
            )
            if pp.consistent
            else ""
        )
        + ("non-negative projection, " if pp.nonnegative and pp.consistent else "")
        + ("controlled rounding" if pp.integer and pp.consistent else "")
    ).rstrip(", ")
    held = set(holding.held)
    out: list[QueryTable] = []
    for t in tables:
        x = values.get(t.name, own_by_name.get(t.name))
        assert x is not None
        if not pp.consistent:
            how = method
        elif t.name in held:
            how = (
                "its own published values (clamped at 0 / rounded cell by cell: "
                "post-processing was not shown to make it better), held as an invariant of "
                "the consistent solve: every other table adds up to it"
            )
        elif t.name not in related:
            how = "its own published values (no other released table to add up with)"
        else:
            how = method
        uncertainty = (
            f"{how}; the mechanism's std and CI describe its raw output, not these values, "
            "and are not published for them"
        )
        if pp.integer:
            col = pl.Series(COUNT_STATISTIC, x.astype(np.int64))
        else:
            col = pl.Series(COUNT_STATISTIC, x)
        table = t.table.with_columns(
            col,
            *(
                pl.lit(None, dtype=pl.Float64).alias(c)
                for c in (f"{COUNT_STATISTIC}_{s}" for s in ("std", "ci_low", "ci_high"))
                # a column already without values (a withheld variance) is kept as it is
                if c not in t.table.columns
                or t.table[c].dtype != pl.Float64
                or t.table[c].null_count() != t.table.height
            ),
        )
        notes = (*t.notes, f"published values {how}")
        out.append(QueryTable(t.name, table, {COUNT_STATISTIC: uncertainty}, notes,
                              t.measurements))  # fmt: skip
    entry: dict[str, Any] = {
        "consistent": pp.consistent,
        "nonnegative": pp.nonnegative,
        "integer": pp.integer,
        "method": method,
        "inputs": "published estimates, published variances or the public variance model "
        "below, the plan, and the public workplace frame (geography nesting, establishments "
        "per cell); no confidential value",
        "weights": weights,
        "privacy_cost": "none (post-processing of published values)",
    }
    if pp.consistent and guard is not None:
        final = related
        try:
            tree = marginal_forest({n: marg[n] for n in related}) if final else {}
        except HierarchyError:
            tree = None
        entry["solver"] = solver if final else "none"
        if n_blocks > 1:
            entry["blocks"] = (
                f"solved in {n_blocks} independent blocks of root cells (at most "
                f"{BLOCK_CELLS:,} cells each unless one root cell's subtree holds more): on a "
                "tree every cell's value depends only on its root cell's subtree, so the "
                "values are those of one solve over every cell"
                if unit_level is None
                else f"solved in {n_blocks} independent blocks of {unit_level} units (at "
                f"most {BLOCK_CELLS:,} cells each unless one {unit_level} holds more): every "
                f"released marginal determines the {unit_level}, so no released pair joins "
                f"two {unit_level} units and each block is solved on its own (least squares "
                "to the solver's tolerance; the controlled rounding starts afresh in each "
                "block)"
            )
        if tree is not None:
            entry["tree"] = dict(tree)
        else:
            entry["lattice"] = sorted([c, p] for (c, p) in pairs)
        if "rounding" in methods and final:
            entry["rounding"] = methods["rounding"]
        if calibration is not None:
            entry["variance_calibration"] = {
                "method": "one multiplier per marginal whose variance is the public model, "
                "fitted to the squared discrepancies between every released parent cell "
                "and the sum of its released child cells (raw published values; moment "
                "conditions divided by their predicted variance, least squares bounded to "
                "[0.05, 20], one row per marginal pulling its multiplier to 1); "
                "post-processing of published values, no privacy cost",
                **calibration.to_dict(),
            }
        entry["constraints"] = (
            "each marginal's cells equal the sums of their cells in every finer released "
            "marginal it is consistent with (geography by the workplace frame's nesting "
            "block → tract → county → state)"
        )
        entry["never_worse"] = {
            "method": "parametric bootstrap under the public variance model with its own "
            "uncertainty (fixed public seed); a marginal whose mean L1 error post-processed "
            "exceeds its own values' by more than two bootstrap standard errors of the "
            "paired difference (rounds of 6 replicates while any marginal is undecided, up "
            "to 18) is flagged, and flagged marginals are held at their own values "
            "as invariants of the solve (at most one per group of marginals joined by "
            "released pairs: the one whose own values have the least total variance); the "
            "predictions are those of the published configuration (held marginals held)",
            "predicted": {n: p.to_dict() for n, p in guard.predictions.items()},
        }
        if unheld_guard is not guard:
            entry["never_worse"]["predicted_before_holding"] = {
                n: p.to_dict() for n, p in unheld_guard.predictions.items()
            }
        if len(tried) > 1:
            entry["never_worse"]["configurations"] = [
                {"held": list(c), "predicted_harm": round(h, 4)} for c, h in tried.items()
            ]
        if pp.without_guard:
            entry["never_worse"] = {
                "method": "switched off by an evaluation (not a spec key): every marginal "
                "publishes the consistent solution"
            }
        if check is not None:
            entry["variance_check"] = {
                "method": "the public variance model tested on the published values: per "
                "released pair with at least 8 parent cells, T = sum sqrt(P)|d| / sum P over "
                "its parent cells (d = parent - sum of its child cells in the raw published "
                "values, P = the model's Var d at the consistent solution); S = the sum over "
                "pairs of log T weighted by 1/Var(log T); its distribution from "
                f"{check.replicates} releases simulated under the model as the guard "
                "simulates (fixed public seed); fires when S is more than "
                f"{check.threshold:g} of its standard deviations from its simulated mean; "
                "factor: the gaps' typical size over the model's. Post-processing of "
                "published values, no privacy cost",
                **check.to_dict(),
                "action": (
                    "none: the model describes the gaps"
                    if not check.fired
                    else "the modelled variances (their part above the smallest "
                    "sensitivity's variance) rescaled by the factor squared "
                    f"({next(iter(rescaled.values())):.4g}) for the weights and the guard's "
                    "simulations, and the guard run again"
                    if rescaled
                    else "reported only: no variance here is the public model's (published "
                    "variances are the mechanism's own)"
                    if not pp.variance_check_report_only
                    else "reported only (an evaluation's comparison, not a release)"
                ),
            }
            if rechecked is not None:
                entry["variance_check"]["after_rescaling"] = {
                    "fired": rechecked.fired, "z": round(rechecked.z, 3),
                    "factor": round(rechecked.factor, 4),
                }  # fmt: skip
        entry["hold_rule"] = (
            "a marginal the guard predicts post-processing makes worse may be held at its "
            "own values as an invariant of the solve (every other marginal then adds up to "
            "it). Two marginals joined by released pairs must agree on a common "
            "coarsening, so at most one of each such group is held: the one whose own "
            "values have the least total variance (the noise it imposes on the others). "
            "Holding costs the others, so the configurations (nothing held; that set; each "
            "flagged marginal alone) are compared by their predicted harm — the sum over "
            "the marginals still predicted worse of their relative excess error — and the "
            "least harmful is published (nothing held on a tie)"
        )
        if holding.held:
            entry["held"] = {
                n: f"predicted L1 ratio post-processed / own values "
                f"{unheld_guard.predictions[n].ratio:.3f} under the public model: published "
                "as its own values (non-negative integers where asked) and held as an "
                "invariant of the solve; every other marginal of its group adds up to it"
                for n in holding.held
            }
        not_held: dict[str, str] = {}
        for n, h in holding.conflicts.items():
            pr = unheld_guard.predictions[n]
            not_held[n] = (
                f"predicted ratio {pr.ratio:.3f} (post-processed / own values) with nothing "
                "held; not held: "
                + (
                    f"{h!r}, held, is in its group and has the smaller total variance"
                    if h
                    else "holding it was predicted to harm the other marginals more "
                    "(never_worse.configurations)"
                )
                + "; it publishes the solution, which adds up to every other table"
            )
        for n in guard.own:
            if n not in held and n not in not_held and n in guard.predictions:
                not_held[n] = (
                    f"predicted ratio {guard.predictions[n].ratio:.3f} with the held marginals "
                    "held; it publishes the solution"
                )
        if not_held:
            entry["flagged_not_held"] = not_held
        add = _additivity(values, pairs, related)
        entry["additivity"] = {
            "pairs": add[0],
            "largest_discrepancy": add[1],
            "checked": "every released (finer, coarser) pair's published cells, summed "
            "(0: every pair adds up exactly)",
        }
        unrelated = [n for n in names if n not in {x for pr in pairs for x in pr}]
        for n in unrelated:
            entry.setdefault("kept_own_values", {})[n] = (
                "no released marginal refines it or is refined by it: its own values"
            )
        if tree is not None:
            roots = [n for n, p in tree.items() if p is None]
            if len(roots) > 1:
                entry["not_constrained"] = (
                    f"the roots {roots} are not constrained to each other (no released "
                    "marginal is coarser than both)"
                )
    if not pp.consistent and not done:
        raise SpecError("no publication-grade post-processing was asked for")
    return out, entry
