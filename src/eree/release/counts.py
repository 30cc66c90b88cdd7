"""ER-EE (and DP-baseline) count marginals: from mechanism objects to published tables."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import polars as pl

from eree.data.eree_tables import EreeData
from eree.engine.base import Engine
from eree.errors import EreeError, PrivacyParameterError
from eree.mechanisms.base import Cells, Measurement, Mechanism
from eree.mechanisms.noise import NoiseSource
from eree.mechanisms.noise_infusion import FACTOR_CACHE, INCIDENCE, N_ESTABLISHMENTS
from eree.release.build import COUNT_STATISTIC, BuiltPlan, QueryPlan
from eree.release.tables import QueryTable, ReleaseWarning, statistic_columns, uncertainty_of

#: the engine's statistic columns (everything else in its frame is a key)
_STAT_COLUMNS = ("count", "x_v", "establishments", "has_establishment", "count_truncated")


def _incidence(
    stats: pl.DataFrame, data: EreeData, engine: Engine, q: QueryPlan
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (cell, establishment, h) pairs of a marginal: each establishment's count per cell."""
    keys = [*q.workplace_by, *q.worker_by]
    ec = engine.establishment_cells(data, list(q.workplace_by), list(q.worker_by))
    est = data.workplaces.select("workplace_id").with_row_index("__est")
    ec = ec.join(est, on="workplace_id", how="left")
    if keys:
        ec = ec.join(stats.select(keys).with_row_index("__cell"), on=keys, how="inner")
    else:
        ec = ec.with_columns(pl.lit(0, dtype=pl.UInt32).alias("__cell"))
    return ec["__cell"].to_numpy(), ec["__est"].to_numpy(), ec["n"].to_numpy()


def measure_marginal(
    q: QueryPlan,
    data: EreeData,
    engine: Engine,
    source: NoiseSource,
    shared: dict[str, object],
) -> tuple[pl.DataFrame, Measurement, np.ndarray]:
    """Cell statistics of one marginal, then its mechanism's Measurement.

    Returns the cell keys, the measurement (public zeros already exact) and the mask of
    public-zero cells (no establishment).
    """
    mech: Mechanism = q.mechanisms[0]
    stats = engine.cell_statistics(
        data, list(q.workplace_by), list(q.worker_by), complete=q.spec.complete,
        truncate_below=mech.truncate_below,
    )  # fmt: skip
    context: dict[str, object] = {}
    if mech.uses_establishment_incidence:
        context = {
            INCIDENCE: _incidence(stats, data, engine, q),
            N_ESTABLISHMENTS: data.n_workplaces,
            FACTOR_CACHE: shared.setdefault(FACTOR_CACHE, {}),
        }
    cells = Cells({c: stats[c].to_numpy() for c in mech.needs}, context)
    public_zero = ~stats["has_establishment"].to_numpy()
    try:
        m = mech(cells, source)
    except (OverflowError, ZeroDivisionError):
        raise PrivacyParameterError(
            f"query {q.name!r}: the mechanism's arithmetic overflows at these parameters "
            "([privacy].alpha, the query's epsilon/delta); choose less extreme values"
        ) from None
    m = m.named(q.name, COUNT_STATISTIC).with_values(public_zero, 0.0)
    keys = stats.select([*q.workplace_by, *q.worker_by])
    return keys, m, public_zero


def _solve(f: Callable[[float], bool], lo: float, hi: float) -> float:
    """The boundary of a monotone predicate: f(lo) false, f(hi) true; returns a point with f."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if f(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _round(x: float, up: bool) -> float:
    """``x`` to 3 significant digits, rounded up or down."""
    if x <= 0 or not math.isfinite(x):
        return x
    q = 10.0 ** (math.floor(math.log10(x)) - 2)
    return (math.ceil(x / q - 1e-9) if up else math.floor(x / q + 1e-9)) * q


def per_cell_delta_warning(
    query: str, mech: Mechanism, n_establishments: int
) -> ReleaseWarning | None:
    """The warning of a per-cell δ ≥ 1/(number of establishments), with its remedy.

    At such a δ an (ε, δ) mechanism could publish some establishments exactly (Haney et
    al. §9). The remedy is computed from public parameters only (the spec's α, ε, δ and
    the number of establishments of the public workplace frame): the δ to ask for when
    δ_min allows it, otherwise the query ε or the α at which δ_min falls below
    1/(number of establishments), or a mechanism without δ.
    """
    delta_cell = mech.per_cell_cost().delta
    n = max(int(n_establishments), 1)
    limit = 1.0 / n
    if not delta_cell or delta_cell < limit:
        return None
    message = (
        f"per-cell delta {delta_cell:.3g} ≥ 1/(number of establishments) = 1/{n:,} = "
        f"{limit:.3g}; a mechanism at this delta could publish some establishments exactly "
        "(Haney et al. §9)"
    )
    smallest = getattr(mech, "smallest_delta", None)
    alpha = getattr(mech, "alpha", None)
    eps, eps_cell = getattr(mech, "epsilon", None), getattr(mech, "epsilon_cell", None)
    d = int(getattr(mech, "worker_cells", 1))
    no_delta = 'or use mechanism = "log_laplace" or "smooth_gamma", which have no delta'
    if smallest is None or alpha is None or not eps or not eps_cell:
        remedy = f"lower this query's delta below {d * limit:.3g}, {no_delta}"
        return ReleaseWarning("delta-per-cell", query, message, remedy)

    def below(a: float, e: float) -> bool:
        try:
            return bool(smallest(a, e) < limit)
        except (ValueError, ArithmeticError, EreeError):
            return False

    if below(alpha, eps_cell):  # δ was set above δ_min: a smaller δ is allowed
        dmin_query = d * smallest(alpha, eps_cell)
        target = _round(max(dmin_query, 0.1 * d * limit), up=False)
        if target < dmin_query:
            target = dmin_query
        remedy = (
            f"set delta = {target:.3g} for this query (below {d * limit:.3g}, i.e. per-cell "
            f"delta below 1/{n:,}; the smallest allowed at this alpha and epsilon is "
            f"{dmin_query:.3g}), {no_delta}"
        )
        return ReleaseWarning("delta-per-cell", query, message, remedy)
    # δ_min itself is too large: a larger ε or a smaller α lowers it
    hi = eps_cell
    while not below(alpha, hi) and hi < 1e6:
        hi *= 2
    need_cell = _solve(lambda e: below(alpha, e), eps_cell, hi)
    need_eps = _round(eps * need_cell / eps_cell, up=True)
    while not below(alpha, need_eps * eps_cell / eps):
        need_eps = _round(need_eps * 1.001, up=True)
    parts = [f"raise this query's epsilon to at least {need_eps:.3g}"]
    if below(1e-12, eps_cell):
        need_alpha = _round(_solve(lambda a: not below(a, eps_cell), 1e-12, alpha), up=False)
        while need_alpha > 0 and not below(need_alpha, eps_cell):
            need_alpha = _round(need_alpha * 0.999, up=False)
        if need_alpha > 0:
            parts.append(f"lower [privacy] alpha to at most {need_alpha:.3g}")
    remedy = (
        f"the smallest delta this mechanism allows at alpha = {alpha:g} and epsilon = {eps:g} "
        f"is {d * smallest(alpha, eps_cell):.3g} (per cell {smallest(alpha, eps_cell):.3g}), so "
        f"a smaller delta cannot help: {', '.join(parts)} (per-cell delta_min then falls "
        f"below 1/{n:,}), {no_delta}"
    )
    return ReleaseWarning("delta-per-cell", query, message, remedy)


def release_counts(
    built: BuiltPlan, data: EreeData, engine: Engine, source: NoiseSource
) -> list[QueryTable]:
    """Run each query's mechanism object on its cell statistics; assemble the tables.

    Confidential columns (count, x_v) never leave :func:`measure_marginal`: a table holds
    only the keys and the published statistic columns.
    """
    n_estab = data.n_workplaces
    shared: dict[str, object] = {}  # release-wide: noise infusion's factors, drawn once
    tables = []
    for q in built.queries:
        keys, m, public_zero = measure_marginal(q, data, engine, source, shared)
        notes: list[str] = []
        warning = per_cell_delta_warning(q.name, q.mechanisms[0], n_estab)
        if public_zero.any():
            notes.append("cells with no establishment are public zeros, published exactly (std 0)")
        table = pl.DataFrame({**keys.to_dict(), **statistic_columns(COUNT_STATISTIC, m)})
        uncertainty = {COUNT_STATISTIC: uncertainty_of(m)}
        tables.append(QueryTable(q.name, table, uncertainty, tuple(notes), (m,),
                                 () if warning is None else (warning,)))  # fmt: skip
    return tables
