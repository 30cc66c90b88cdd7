"""ER-EE (and DP-baseline) count marginals: from plan to published tables."""

from __future__ import annotations

import difflib
import math

import numpy as np
import polars as pl

from eree.data.config import EreeDataConfig
from eree.data.eree_tables import EreeData
from eree.engine.base import Engine
from eree.errors import PrivacyParameterError, SpecError
from eree.mechanisms.base import MechanismOutput
from eree.mechanisms.baselines import laplace, truncated_laplace
from eree.mechanisms.eree import log_laplace, smooth_gamma, smooth_laplace
from eree.mechanisms.noise import NoiseSource
from eree.mechanisms.noise_infusion import (
    DEFAULT_S,
    DEFAULT_T,
    SMALL_CELL_LIMIT,
    draw_distortion_factors,
    noise_infusion,
)
from eree.privacy.accountant import CountQueryRequest, PrivacyReport, account_counts
from eree.release.spec import Plan, QuerySpec
from eree.release.tables import QueryTable, statistic_columns

STAT = "jobs"


def split_by(query: QuerySpec, cfg: EreeDataConfig) -> tuple[list[str], list[str]]:
    """Split a query's ``by`` into (workplace attributes, worker attributes)."""
    if isinstance(query.by, str):
        raise SpecError(f"query {query.name!r}: by = {query.by!r} is not a count marginal")
    wp, wk = [], []
    for a in query.by:
        if a in cfg.workplace_attributes:
            wp.append(a)
        elif a in cfg.worker_attributes:
            wk.append(a)
        else:
            close = difflib.get_close_matches(
                a, (*cfg.workplace_attributes, *cfg.worker_attributes), n=1
            )
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise SpecError(
                f"query {query.name!r}: {a!r} is neither a workplace attribute "
                f"({', '.join(cfg.workplace_attributes)}) nor a worker attribute "
                f"({', '.join(cfg.worker_attributes)}){hint}"
            )
    return wp, wk


def count_requests(plan: Plan) -> list[CountQueryRequest]:
    """The accountant's view of the plan's count queries (public information only)."""
    assert isinstance(plan.data, EreeDataConfig)
    cfg = plan.data
    out = []
    for q in plan.queries:
        if q.mu is not None:
            raise SpecError(f"query {q.name!r}: mu belongs to GEDP queries, not count marginals")
        _, wk = split_by(q, cfg)
        d = math.prod(len(cfg.domains[a]) for a in wk) if wk else 1
        if q.delta is not None and q.mechanism != "smooth_laplace":
            raise SpecError(f"query {q.name!r}: delta applies to smooth_laplace only")
        out.append(
            CountQueryRequest(q.name, q.mechanism, q.epsilon, q.delta, tuple(wk), d, q.params)
        )
    return out


def account_count_plan(plan: Plan) -> PrivacyReport:
    """Charge a count plan (no data read)."""
    return account_counts(plan.privacy.definition, plan.privacy.alpha, count_requests(plan))


def _noise_infusion(
    q: QuerySpec,
    stats: pl.DataFrame,
    source: NoiseSource,
    data: EreeData,
    engine: Engine,
    factors: dict[tuple[float, float], np.ndarray],
) -> MechanismOutput:
    """Input noise infusion of one query: one factor per establishment for the whole release."""
    s = float(q.params.get("s", DEFAULT_S))
    t = float(q.params.get("t", DEFAULT_T))
    if (s, t) not in factors:  # drawn once per release, shared by every query
        factors[(s, t)] = draw_distortion_factors(data.workplaces.height, source, s=s, t=t)
    stat_cols = ("count", "x_v", "establishments", "has_establishment", "count_truncated")
    keys = [c for c in stats.columns if c not in stat_cols]
    wp = [k for k in keys if k in data.workplaces.columns]
    wk = [k for k in keys if k not in wp]
    ec = engine.establishment_cells(data, wp, wk)
    est = data.workplaces.select("workplace_id").with_row_index("__est")
    ec = ec.join(est, on="workplace_id", how="left")
    if keys:
        ec = ec.join(stats.select(keys).with_row_index("__cell"), on=keys, how="inner")
    else:
        ec = ec.with_columns(pl.lit(0, dtype=pl.UInt32).alias("__cell"))
    return noise_infusion(
        stats["count"].to_numpy().astype(np.float64),
        ec["__cell"].to_numpy(),
        ec["__est"].to_numpy(),
        ec["n"].to_numpy(),
        factors[(s, t)],
        source,
        small_cell=float(q.params.get("small_cell", SMALL_CELL_LIMIT)),
    )


def _run_mechanism(
    q: QuerySpec,
    stats: pl.DataFrame,
    report: PrivacyReport,
    source: NoiseSource,
    confidence: float,
    *,
    data: EreeData | None = None,
    engine: Engine | None = None,
    factors: dict[tuple[float, float], np.ndarray] | None = None,
) -> MechanismOutput:
    charge = report.charge(q.name)
    eps = charge.per_cell.epsilon
    n = stats["count"].to_numpy().astype(np.float64)
    x_v = stats["x_v"].to_numpy().astype(np.float64)
    alpha = report.alpha
    if q.params.get("variant") == "workshop":  # Blowfish policy, workshop Algs 1-3
        from eree.mechanisms import workshop as ws

        assert alpha is not None and eps is not None
        if q.mechanism == "log_laplace":
            return ws.workshop_log_laplace(
                n, alpha, eps, source, additive=float(q.params.get("additive", 1.0)),
                force=bool(q.params.get("force")), confidence=confidence,
            )  # fmt: skip
        if q.mechanism == "smooth_laplace":
            return ws.workshop_smooth_laplace(
                n, x_v, alpha, eps, source, delta=charge.per_cell.delta
            )
        if q.mechanism == "smooth_gamma":
            return ws.workshop_smooth_gamma(n, x_v, alpha, eps, source)
    if q.mechanism == "log_laplace":
        assert alpha is not None and eps is not None
        return log_laplace(
            n, alpha, eps, source, force=bool(q.params.get("force")), confidence=confidence
        )
    if q.mechanism == "smooth_gamma":
        assert alpha is not None and eps is not None
        return smooth_gamma(n, x_v, alpha, eps, source)
    if q.mechanism == "smooth_laplace":
        assert alpha is not None and eps is not None
        return smooth_laplace(n, x_v, alpha, eps, source, delta=charge.per_cell.delta)
    if q.mechanism == "laplace":
        assert eps is not None
        return laplace(n, eps, source, confidence=confidence)
    if q.mechanism == "truncated_laplace":
        assert eps is not None
        nt = stats["count_truncated"].to_numpy().astype(np.float64)
        return truncated_laplace(nt, float(q.params["theta"]), eps, source)
    if q.mechanism == "noise_infusion":
        if data is None or engine is None:
            raise SpecError(f"query {q.name!r}: noise_infusion needs the data and an engine")
        return _noise_infusion(q, stats, source, data, engine, {} if factors is None else factors)
    raise SpecError(f"query {q.name!r}: mechanism {q.mechanism!r} is not available for counts")


def _public_zero_output(out: MechanismOutput, public_zero: np.ndarray) -> MechanismOutput:
    """Cells with no establishment are public zeros: exact 0, std 0, CI [0, 0]."""
    if not public_zero.any():
        return out

    def fix(v: np.ndarray | None) -> np.ndarray | None:
        if v is None:
            return None
        v = v.copy()
        v[public_zero] = 0.0
        return v

    return MechanismOutput(
        fix(out.noisy),  # type: ignore[arg-type]
        fix(out.estimate),  # type: ignore[arg-type]
        fix(out.std),
        fix(out.ci_low),
        fix(out.ci_high),
        out.uncertainty_method,
    )


def release_counts(
    plan: Plan,
    data: EreeData,
    engine: Engine,
    source: NoiseSource,
    report: PrivacyReport,
) -> list[QueryTable]:
    """Compute cell statistics, run each query's mechanism, assemble the published tables.

    Confidential columns (count, x_v) never leave this function: the table holds only the
    keys and the published statistic columns.
    """
    assert isinstance(plan.data, EreeDataConfig)
    n_estab = data.workplaces.height
    factors: dict[tuple[float, float], np.ndarray] = {}  # noise infusion: once per release
    tables = []
    for q in plan.queries:
        wp, wk = split_by(q, plan.data)
        theta = q.params.get("theta") if q.mechanism == "truncated_laplace" else None
        stats = engine.cell_statistics(data, wp, wk, complete=q.complete, truncate_below=theta)
        try:
            out = _run_mechanism(
                q, stats, report, source, plan.output.confidence,
                data=data, engine=engine, factors=factors,
            )  # fmt: skip
        except (OverflowError, ZeroDivisionError):
            raise PrivacyParameterError(
                f"query {q.name!r}: the mechanism's arithmetic overflows at these parameters "
                "([privacy].alpha, the query's epsilon/delta); choose less extreme values"
            ) from None
        public_zero = ~stats["has_establishment"].to_numpy()
        out = _public_zero_output(out, public_zero)
        cols = {k: stats[k] for k in [*wp, *wk]}
        cols.update(statistic_columns(STAT, out))
        notes: list[str] = []
        delta_cell = report.charge(q.name).per_cell.delta
        if delta_cell and delta_cell >= 1.0 / max(n_estab, 1):
            notes.append(
                f"warning: per-cell delta {delta_cell:.3g} >= 1/(number of establishments) "
                f"= {1.0 / max(n_estab, 1):.3g}; a mechanism could publish some establishments "
                "exactly at this delta (Haney et al. §9)"
            )
        if public_zero.any():
            notes.append("cells with no establishment are public zeros, published exactly (std 0)")
        tables.append(
            QueryTable(q.name, pl.DataFrame(cols), {STAT: out.uncertainty_method}, tuple(notes))
        )
    return tables
