"""ER-EE (and DP-baseline) count marginals: from mechanism objects to published tables."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import polars as pl

from eree.engine.base import ESTABLISHMENT_INDEX, Engine, LoadedJobTables
from eree.errors import PrivacyParameterError
from eree.mechanisms.base import Cells, Measurement, Mechanism
from eree.mechanisms.noise import NoiseSource
from eree.mechanisms.noise_infusion import FACTOR_CACHE, INCIDENCE, N_ESTABLISHMENTS
from eree.release.build import COUNT_STATISTIC, BuiltPlan, QueryPlan
from eree.release.tables import QueryTable, statistic_columns, uncertainty_of

#: the engine's statistic columns (everything else in its frame is a key)
_STAT_COLUMNS = ("count", "x_v", "establishments", "has_establishment", "count_truncated")


def _incidence(
    stats: pl.DataFrame, data: LoadedJobTables, engine: Engine, q: QueryPlan
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (cell, establishment, h) pairs of a marginal: each establishment's count per cell.

    Establishments are numbered by the engine (their index in sorted id order), so every
    engine gives each establishment the same distortion factor.
    """
    keys = [*q.workplace_by, *q.worker_by]
    ec = engine.establishment_cells(data, list(q.workplace_by), list(q.worker_by))
    if keys:
        cell_keys = stats.select(pl.col(keys).cast(pl.Utf8))  # Enum keys when streaming
        ec = ec.join(cell_keys.with_row_index("__cell"), on=keys, how="inner")
    else:
        ec = ec.with_columns(pl.lit(0, dtype=pl.UInt32).alias("__cell"))
    return ec["__cell"].to_numpy(), ec[ESTABLISHMENT_INDEX].to_numpy(), ec["n"].to_numpy()


def measure_marginal(
    q: QueryPlan,
    data: LoadedJobTables,
    engine: Engine,
    source: NoiseSource,
    shared: dict[str, object],
    *,
    categorical_keys: bool = False,
) -> tuple[pl.DataFrame, Measurement, np.ndarray]:
    """Cell statistics of one marginal, then its mechanism's Measurement.

    Returns the cell keys (:class:`polars.Enum` columns with ``categorical_keys``), the
    measurement (public zeros already exact) and the mask of public-zero cells (no
    establishment). The cell statistics themselves are dropped before returning.
    """
    mech: Mechanism = q.mechanisms[0]
    stats = engine.cell_statistics(
        data, list(q.workplace_by), list(q.worker_by), complete=q.spec.complete,
        truncate_below=mech.truncate_below, categorical_keys=categorical_keys,
    )  # fmt: skip
    context: dict[str, object] = {}
    if mech.uses_establishment_incidence:
        context = {
            INCIDENCE: _incidence(stats, data, engine, q),
            N_ESTABLISHMENTS: engine.n_workplaces(data),
            FACTOR_CACHE: shared.setdefault(FACTOR_CACHE, {}),
        }
    cells = Cells({c: stats[c].to_numpy() for c in mech.needs}, context)
    public_zero = ~stats["has_establishment"].to_numpy()
    try:
        m = mech(cells, source)
    except (OverflowError, ZeroDivisionError):
        raise PrivacyParameterError(
            f"query {q.name!r}: the mechanism's arithmetic overflows at these parameters "
            "([privacy].alpha, the query's epsilon/delta or grid); choose less extreme values"
        ) from None
    m = m.named(q.name, COUNT_STATISTIC).with_values(public_zero, 0.0)
    keys = stats.select([*q.workplace_by, *q.worker_by])
    del cells, stats, context  # the confidential statistics go as soon as they are used
    return keys, m, public_zero


def release_counts(
    built: BuiltPlan, data: LoadedJobTables, engine: Engine, source: NoiseSource
) -> list[QueryTable]:
    """Run each query's mechanism object on its cell statistics; assemble the tables.

    Confidential columns (count, x_v) never leave :func:`measure_marginal`: a table holds
    only the keys and the published statistic columns.
    """
    return list(count_tables(built, data, engine, source))


def count_tables(
    built: BuiltPlan,
    data: LoadedJobTables,
    engine: Engine,
    source: NoiseSource,
    *,
    streaming: bool = False,
) -> Iterator[QueryTable]:
    """:func:`release_counts` one table at a time, in query order.

    With ``streaming`` the caller writes each table before asking for the next and
    keeps nothing of it: key columns are then :class:`polars.Enum` (text when written)
    and tables carry no measurements, so one table at a time is in memory.
    """
    shared: dict[str, object] = {}  # release-wide: noise infusion's factors, drawn once
    for q in built.queries:
        keys, m, public_zero = measure_marginal(
            q, data, engine, source, shared, categorical_keys=streaming
        )
        notes: list[str] = []
        if public_zero.any():
            notes.append("cells with no establishment are public zeros, published exactly (std 0)")
        table = pl.DataFrame({**keys.to_dict(), **statistic_columns(COUNT_STATISTIC, m)})
        uncertainty = {COUNT_STATISTIC: uncertainty_of(m)}
        measurements = () if streaming else (m,)
        yield QueryTable(q.name, table, uncertainty, tuple(notes), measurements)
        # nothing of this table is held while the next one is computed
        del keys, m, public_zero, table, measurements
