"""The default engine: Polars, in-process and lazy."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np
import polars as pl

from eree.data.config import EreeDataConfig, EstablishmentDataConfig
from eree.data.eree_tables import EreeData
from eree.data.establishments import EstablishmentData
from eree.engine import establishments as est
from eree.errors import SpecError


def _domain_frame(domains: dict[str, tuple[str, ...]], attrs: Sequence[str]) -> pl.DataFrame:
    """All combinations of the declared domains of ``attrs``, as a frame of Utf8 columns."""
    missing = [a for a in attrs if a not in domains]
    if missing:
        raise SpecError(f"attributes {missing} have no declared domain")
    rows = list(product(*(domains[a] for a in attrs)))
    return pl.DataFrame(
        {a: [r[i] for r in rows] for i, a in enumerate(attrs)},
        schema={a: pl.Utf8 for a in attrs},
    )


def cell_keys(
    frame: pl.DataFrame,
    workplace_by: Sequence[str],
    worker_by: Sequence[str],
    domains: Mapping[str, tuple[str, ...]],
    D: int,
    *,
    categorical: bool = False,
) -> dict[str, pl.Series]:
    """The key columns of the full F × D cell frame, in the engines' row order.

    Row ``f·D + d``: the ``f``-th workplace combination of ``frame`` (F rows of the
    ``workplace_by`` keys) and the ``d``-th combination of the worker attributes'
    declared domains (the first attribute varies slowest). With ``categorical`` the
    columns are :class:`polars.Enum` (categories: the values of ``frame``, or the
    declared domain), otherwise text.
    """
    n_frame = max(frame.height, 1) if workplace_by else 1
    cols: dict[str, pl.Series] = {}
    if workplace_by:
        rep = pl.Series(np.repeat(np.arange(n_frame, dtype=np.int64), D))
        for a in workplace_by:
            s = frame[a]
            if categorical:
                s = s.cast(pl.Enum(s.unique(maintain_order=True).drop_nulls()))
            cols[a] = s.gather(rep)
        del rep
    if worker_by:
        worker_frame = _domain_frame(dict(domains), worker_by)
        tile = pl.Series(np.tile(np.arange(D, dtype=np.int64), n_frame))
        for a in worker_by:
            s = worker_frame[a]
            if categorical:
                s = s.cast(pl.Enum(list(domains[a])))
            cols[a] = s.gather(tile)
    return cols


def _contributions(pair: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values ``k`` of ``pair`` (in ``range(size)``) and how often each occurs.

    Dense (one counting pass) when ``size`` is at most the number of values; otherwise
    by sorting ``pair`` in place (no hash table: memory stays at the key array).
    """
    if size <= max(pair.size, 1):
        dense = np.bincount(pair, minlength=size)
        k = np.flatnonzero(dense)
        return k, dense[k].astype(np.int64)
    pair.sort()
    first = np.empty(pair.size, dtype=bool)
    if pair.size:
        first[0] = True
        np.not_equal(pair[1:], pair[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    del first
    n = np.diff(np.append(starts, pair.size)).astype(np.int64)
    return pair[starts], n


class PolarsEngine:
    """Cell statistics with Polars.

    Jobs are turned into integer codes once per dataset (their establishment's row and
    each worker attribute's index in its declared domain); every query then runs on
    integers.
    """

    name = "polars"

    def __init__(self) -> None:
        self._cache: tuple[EreeData, _Prepared] | None = None

    def _check(self, data: EreeData, workplace_by: Sequence[str], worker_by: Sequence[str]) -> None:
        for a in workplace_by:
            if a not in data.workplaces.columns or a == "workplace_id":
                raise SpecError(f"{a!r} is not a workplace attribute of the data")
        for a in worker_by:
            if a not in data.jobs.columns or a == "workplace_id":
                raise SpecError(f"{a!r} is not a worker attribute of the data")
            if a not in data.domains:
                raise SpecError(f"worker attribute {a!r} has no declared domain")

    def establishment_cells(
        self, data: EreeData, workplace_by: Sequence[str], worker_by: Sequence[str]
    ) -> pl.DataFrame:
        """Per (establishment, cell) job counts (see :mod:`eree.engine.base`)."""
        self._check(data, workplace_by, worker_by)
        per = (
            data.jobs.lazy()
            .group_by(["workplace_id", *worker_by])
            .agg(pl.len().cast(pl.Int64).alias("n"))
            # the fast loader keeps ids and codes as Enums: results are text
            .with_columns([pl.col(c).cast(pl.Utf8) for c in ["workplace_id", *worker_by]])
        )
        wp = data.workplaces.lazy().select(["workplace_id", *workplace_by])
        return (
            per.join(wp, on="workplace_id", how="inner")
            .select(["workplace_id", *workplace_by, *worker_by, "n"])
            .sort(["workplace_id", *workplace_by, *worker_by])
            .collect()
        )

    def load_eree(
        self, config: EreeDataConfig, attributes: Iterable[str] | None = None
    ) -> EreeData:
        """Load and validate ER-EE input for this engine (DESIGN.md §2.3).

        Args:
            config: the ``[data]`` configuration.
            attributes: the workplace and worker attributes the release uses (``None``:
                all configured ones). Only these columns are read and validated.

        Returns:
            The validated data; the per-job establishment rows the engine needs are
            computed in the same pass and kept for the queries on this dataset.
        """
        from eree.engine.polars_load import narrow_config, scan_eree

        data, widx = scan_eree(narrow_config(config, attributes))
        self._cache = (data, _Prepared(widx, _worker_codes(data)))
        return data

    # -- establishments (QCEW-like): DESIGN.md §1.1 ------------------------------------

    def load_establishments(self, config: EstablishmentDataConfig) -> EstablishmentData:
        """Load and validate establishment input (DESIGN.md §2.2–2.3)."""
        from eree.data.establishments import load_establishments

        return load_establishments(config)

    def identity_values(self, data: EstablishmentData, attributes: Sequence[str]) -> pl.DataFrame:
        """The identity query's answers: the id, then each attribute; sorted by id."""
        return est.polars_identity_values(data.frame, data.id_column, attributes)

    def group_sums(
        self, data: EstablishmentData, by: Sequence[str], attributes: Sequence[str]
    ) -> pl.DataFrame:
        """Exact group sums (:func:`eree.engine.establishments.polars_group_sums`)."""
        return est.polars_group_sums(data.frame, by, attributes)

    def group_max_bounds(
        self, data: EstablishmentData, by: Sequence[str], bounds: pl.DataFrame
    ) -> pl.DataFrame:
        """Per group, the largest public bound of each attribute of ``bounds``."""
        attrs = [c for c in bounds.columns if c != data.id_column]
        return est.polars_group_max_bounds(data.frame, by, data.id_column, bounds, attrs)

    def clipped_group_sums(
        self,
        data: EstablishmentData,
        by: Sequence[str],
        bounds: pl.DataFrame,
        attributes: Sequence[str],
    ) -> pl.DataFrame:
        """Exact clipped sums for the pnc-mechanism (Def 6.8)."""
        return est.polars_clipped_group_sums(data.frame, by, data.id_column, bounds, attributes)

    def _prepare(self, data: EreeData) -> _Prepared:
        """Integer codes for the jobs, computed once per dataset and reused by every query."""
        if self._cache is not None and self._cache[0] is data:
            return self._cache[1]
        wp_index = data.workplaces.select("workplace_id").with_row_index("_w")
        widx = (
            data.jobs.lazy()
            .select(pl.col("workplace_id").cast(pl.Utf8))
            .join(wp_index.lazy(), on="workplace_id", how="left", maintain_order="left")
            .select("_w")
            .collect()["_w"]
        )
        if widx.null_count():
            raise SpecError("a job points at a workplace missing from the workplace table")
        prep = _Prepared(widx.to_numpy().astype(np.int64), _worker_codes(data))
        self._cache = (data, prep)
        return prep

    def cell_statistics(
        self,
        data: EreeData,
        workplace_by: Sequence[str],
        worker_by: Sequence[str],
        *,
        complete: bool = False,
        truncate_below: float | None = None,
        categorical_keys: bool = False,
    ) -> pl.DataFrame:
        """Cell statistics (see :mod:`eree.engine.base`).

        Cells are numbered ``frame_index * D + worker_code`` (F workplace combinations, D
        worker-attribute combinations). Each job gets its establishment's number and its
        cell's worker code; one group-by over (establishment, worker code) gives each
        establishment's contribution n to each cell, and two scatters (sum → count,
        max → x_v) over the F·D cells finish the job. Rows come out sorted by the
        workplace keys, then the worker attributes in declared-domain order.
        """
        self._check(data, workplace_by, worker_by)
        wkeys = list(workplace_by)
        prep = self._prepare(data)
        # the public frame of workplace combinations
        if wkeys:
            frame = data.workplaces.select(wkeys).unique().sort(wkeys)
            if complete:
                frame = _domain_frame(data.domains, wkeys).sort(wkeys)
            fidx_of_wp = (
                data.workplaces.lazy()
                .select(wkeys)
                .join(
                    frame.lazy().with_row_index("_f"), on=wkeys, how="left", maintain_order="left"
                )
                .collect()["_f"]
            )
            if fidx_of_wp.null_count():
                raise SpecError(f"workplace values outside the declared domains of {wkeys}")
            fidx = fidx_of_wp.to_numpy().astype(np.int64)
        else:
            frame = pl.DataFrame()
            fidx = np.zeros(data.workplaces.height, dtype=np.int64)
        F = max(frame.height, 1)
        sizes = [len(data.domains[a]) for a in worker_by]
        D = int(np.prod(sizes)) if worker_by else 1
        # each establishment's contribution n to each of its cells, keyed by
        # k = establishment row · D + worker code
        n_wp = data.workplaces.height
        if worker_by:
            # worker code: the first attribute varies slowest (declared-domain order)
            steps = np.cumprod([1, *sizes[::-1]])[::-1][1:]
            pair = prep.widx * D
            for a, step in zip(worker_by, steps, strict=True):
                pair += prep.codes[a].astype(np.int64) * int(step)
        else:
            # the sparse case sorts its keys in place: never the cached codes
            pair = prep.widx if n_wp <= prep.widx.size else prep.widx.copy()
        k, n = _contributions(pair, n_wp * D)
        del pair
        est = k // D
        cell = fidx[est] * D + k % D
        del k
        count = np.bincount(cell, weights=n, minlength=F * D).astype(np.int64)
        x_v = np.zeros(F * D, dtype=np.int64)
        np.maximum.at(x_v, cell, n)
        truncated = None
        if truncate_below is not None:
            estab_size = np.bincount(prep.widx, minlength=data.workplaces.height)
            keep = estab_size[est] < truncate_below
            truncated = np.bincount(cell, weights=n * keep, minlength=F * D).astype(np.int64)
        del est, cell, n  # per-contribution arrays go before the keys are built
        n_est = np.bincount(fidx, minlength=F).astype(np.int64)
        cols: dict[str, pl.Series | np.ndarray] = {}
        cols.update(
            cell_keys(frame, wkeys, worker_by, data.domains, D, categorical=categorical_keys)
        )
        cols["count"] = count
        cols["x_v"] = x_v
        cols["establishments"] = np.repeat(n_est, D)
        cols["has_establishment"] = np.repeat(n_est > 0, D)
        if truncated is not None:
            cols["count_truncated"] = truncated
        return pl.DataFrame(cols)


def _worker_codes(data: EreeData) -> dict[str, np.ndarray]:
    """Per worker attribute, each job's index in the attribute's declared domain."""
    codes: dict[str, np.ndarray] = {}
    for a, dom in data.domains.items():
        if a in data.jobs.columns and a != "workplace_id":
            try:
                enum = data.jobs[a].cast(pl.Enum(list(dom)))
            except pl.exceptions.InvalidOperationError:
                raise SpecError(
                    f"worker attribute {a!r} has values outside its declared domain"
                ) from None
            codes[a] = enum.to_physical().to_numpy().astype(np.int8 if len(dom) < 128 else np.int64)
    return codes


@dataclass(frozen=True)
class _Prepared:
    widx: np.ndarray  # per job: row index of its workplace
    codes: dict[str, np.ndarray]  # per worker attribute: per job domain index
