"""The default engine: Polars, in-process and lazy."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from eree.data.config import EstablishmentDataConfig, JobTablesConfig
from eree.data.job_tables import JOBS, ROW, JobTables
from eree.engine.base import (
    ESTABLISHMENT_INDEX,
    ESTABLISHMENTS,
    LoadedEstablishments,
    LoadedJobTables,
)
from eree.engine.cell_frame import cell_keys, domain_frame
from eree.engine.public_frame import establishment_index, sorted_workplace_counts
from eree.errors import SpecError

if TYPE_CHECKING:  # pragma: no cover - establishment data: imported when used
    from eree.data.establishments import EstablishmentData


def _job_tables(data: LoadedJobTables) -> JobTables:
    """The engine's own ER-EE data behind a handle (another engine's are refused)."""
    if not isinstance(data, JobTables):
        raise TypeError(f"the Polars engine cannot read {type(data).__name__} (another engine's)")
    return data


def _establishments(data: LoadedEstablishments) -> EstablishmentData:
    """The engine's own establishment data behind a handle (another engine's are refused)."""
    from eree.data.establishments import EstablishmentData

    if not isinstance(data, EstablishmentData):
        raise TypeError(f"the Polars engine cannot read {type(data).__name__} (another engine's)")
    return data


def _workplace_frame(
    data: JobTables, wkeys: Sequence[str], complete: bool
) -> tuple[pl.DataFrame, np.ndarray]:
    """The sorted frame of workplace combinations and each establishment's row in it.

    Without ``complete`` the frame holds the combinations present in the data, otherwise
    every combination of the declared domains. Each key is coded by its value's rank
    among the key's sorted values (or its sorted declared domain); the keys' codes,
    combined in mixed radix, number the combinations in the frame's (lexicographic)
    order, and ``np.unique`` makes them dense (also on the way, should the radix
    product pass 2**62). Nothing bigger than one integer per establishment is built.
    """
    n_wp = data.workplaces.height
    if not wkeys:
        return pl.DataFrame(), np.zeros(n_wp, dtype=np.int64)
    code = np.zeros(n_wp, dtype=np.int64)
    values: list[pl.Series] = []  # per key: its sorted distinct values (or domain)
    parts: list[np.ndarray] = []  # per key folded so far: its code in each distinct combination
    radix: list[int] = []  # the sizes of the keys folded into ``code`` since it was dense
    bound = 1  # ``code`` < bound

    def dense() -> None:
        nonlocal code, parts, radix, bound
        distinct, code = np.unique(code, return_inverse=True)
        rest, new = distinct, []
        for k in reversed(radix):
            rest, r = np.divmod(rest, k)
            new.append(r)
        parts = [p[rest] for p in parts] + new[::-1]
        radix, bound = [], len(distinct)

    for a in wkeys:
        col = data.workplaces.get_column(a).cast(pl.Utf8)
        if complete:
            if a not in data.domains:
                raise SpecError(f"attributes {[a]} have no declared domain")
            sorted_values = pl.Series(a, sorted(set(data.domains[a])), dtype=pl.Utf8)
        else:
            sorted_values = col.unique().sort()
        try:
            c = col.cast(pl.Enum(sorted_values)).to_physical().to_numpy().astype(np.int64)
        except pl.exceptions.InvalidOperationError:
            raise SpecError(f"workplace values outside the declared domains of {wkeys}") from None
        k = max(len(sorted_values), 1)
        values.append(sorted_values)
        if not complete and bound * k > 2**62:
            dense()
        code = code * k + c
        radix.append(k)
        bound *= k
    if complete:  # every combination, in mixed-radix order
        return domain_frame(data.domains, wkeys).sort(wkeys), code
    dense()
    return pl.DataFrame([v.gather(p) for v, p in zip(values, parts, strict=True)]), code


class PolarsEngine:
    """Cell statistics with Polars.

    Every query runs on the jobs counted per establishment and combination of its worker
    attributes: from the loader's validation pass
    (:attr:`~eree.data.job_tables.JobTables.job_counts`; nothing per job is held), or
    counted from the jobs coded once per dataset (:meth:`_prepare`; 4 + 1 bytes per job
    and attribute, no copy of the per-job frame's text).
    """

    name = "polars"

    def __init__(self) -> None:
        self._cache: tuple[JobTables, pl.DataFrame] | None = None

    def describe(self) -> dict[str, Any]:
        """The engine as the manifest records it: its kind and Polars's version."""
        return {"kind": self.name, "polars": pl.__version__}

    def _check(
        self, data: JobTables, workplace_by: Sequence[str], worker_by: Sequence[str]
    ) -> None:
        for a in workplace_by:
            if a not in data.workplaces.columns or a == "workplace_id":
                raise SpecError(f"{a!r} is not a workplace attribute of the data")
        for a in worker_by:
            if a not in data.worker_attributes:
                raise SpecError(f"{a!r} is not a worker attribute of the data")
            if a not in data.domains:
                raise SpecError(f"worker attribute {a!r} has no declared domain")

    def establishment_cells(
        self, data: LoadedJobTables, workplace_by: Sequence[str], worker_by: Sequence[str]
    ) -> pl.DataFrame:
        """Per (establishment, cell) job counts (see :mod:`eree.engine.base`)."""
        data = _job_tables(data)
        self._check(data, workplace_by, worker_by)
        wp = data.workplaces.lazy().select(["workplace_id", *workplace_by]).with_row_index(ROW)
        index = establishment_index(data.workplaces.get_column("workplace_id")).lazy()
        return (
            self._counts(data, worker_by)
            .lazy()
            .join(wp.with_columns(pl.col(ROW).cast(pl.UInt32)), on=ROW, how="inner")
            .with_columns(pl.col("workplace_id").cast(pl.Utf8))
            .join(index, on="workplace_id", how="left")
            .select(
                "workplace_id",
                *workplace_by,
                *[pl.col(a).cast(pl.Utf8) for a in worker_by],
                pl.col(JOBS).cast(pl.Int64).alias("n"),
                ESTABLISHMENT_INDEX,
            )
            .sort(["workplace_id", *workplace_by, *worker_by])
            .collect()
        )

    def load_job_tables(
        self, config: JobTablesConfig, attributes: Iterable[str] | None = None
    ) -> JobTables:
        """Load and validate ER-EE input for this engine (docs/design.md#validation).

        Args:
            config: the ``[data]`` configuration; a ``file://`` URI is read as the local
                path it names, any other URI refused (:func:`~eree.data.location.local_path`).
            attributes: the workplace and worker attributes the release uses (``None``:
                all configured ones). Only these columns are read and validated.

        Returns:
            The validated data. With ``attributes``, the jobs are counted per
            establishment and combination of worker attributes in the validation pass
            (what the queries need) and the per-job frame is read only if asked for.
        """
        from eree.engine.polars.load import narrow_config, scan_job_tables

        return scan_job_tables(narrow_config(config, attributes), lazy_jobs=attributes is not None)

    def n_workplaces(self, data: LoadedJobTables) -> int:
        """The number of workplaces (public)."""
        return _job_tables(data).n_workplaces

    def workplace_counts(self, data: LoadedJobTables, by: Sequence[str]) -> pl.DataFrame:
        """The public frame's establishments per combination of ``by`` (engine contract)."""
        frame = _job_tables(data).workplaces
        if not by:
            return pl.DataFrame({ESTABLISHMENTS: [frame.height]}, schema={ESTABLISHMENTS: pl.Int64})
        counts = frame.group_by(list(by)).agg(pl.len().alias(ESTABLISHMENTS))
        return sorted_workplace_counts(counts, by)

    def public_workplaces(self, data: LoadedJobTables) -> pl.DataFrame:
        """The public workplace frame (always in memory)."""
        return _job_tables(data).workplaces

    def fingerprints(self, data: LoadedJobTables | LoadedEstablishments) -> tuple[str, str]:
        """The content and structure fingerprints (:mod:`eree.data.fingerprint`)."""
        from eree.data.establishments import EstablishmentData
        from eree.data.fingerprint import fingerprints

        if isinstance(data, EstablishmentData):
            return fingerprints(data)
        return fingerprints(_job_tables(data))  # type: ignore[arg-type]

    def structure_counts(self, data: LoadedJobTables | LoadedEstablishments) -> tuple[Any, Any]:
        """Per workplace, the word of its id and its job count (:mod:`eree.data.fingerprint`)."""
        from eree.data.establishments import EstablishmentData
        from eree.data.fingerprint import structure_counts

        if isinstance(data, EstablishmentData):
            return structure_counts(data)
        return structure_counts(_job_tables(data))  # type: ignore[arg-type]

    # -- establishments (QCEW-like): docs/design.md#core-objects ----------------------------------

    def load_establishments(self, config: EstablishmentDataConfig) -> EstablishmentData:
        """Load and validate establishment input.

        See docs/design.md#establishment-data, #validation.
        """
        from eree.data.establishments import load_establishments

        return load_establishments(config)  # a file:// URI read as its local path

    def n_establishments(self, data: LoadedEstablishments) -> int:
        """The number of establishments (public)."""
        return _establishments(data).n

    def public_columns(self, data: LoadedEstablishments, columns: Sequence[str]) -> pl.DataFrame:
        """The ``columns`` of every establishment (id and public attributes only)."""
        frame = _establishments(data).frame
        if isinstance(frame, pl.LazyFrame):
            frame = frame.collect()
        return frame.select(list(columns))

    def identity_values(
        self, data: LoadedEstablishments, attributes: Sequence[str]
    ) -> pl.DataFrame:
        """The identity query's answers: the id, then each attribute; sorted by id."""
        from eree.engine.polars import establishments as est

        data = _establishments(data)
        return est.identity_values(data.frame, data.id_column, attributes)

    def group_sums(
        self, data: LoadedEstablishments, by: Sequence[str], attributes: Sequence[str]
    ) -> pl.DataFrame:
        """Exact group sums (:func:`eree.engine.polars.establishments.group_sums`)."""
        from eree.engine.polars import establishments as est

        data = _establishments(data)
        return est.group_sums(data.frame, by, attributes)

    def group_max_bounds(
        self, data: LoadedEstablishments, by: Sequence[str], bounds: pl.DataFrame
    ) -> pl.DataFrame:
        """Per group, the largest public bound of each attribute of ``bounds``."""
        from eree.engine.polars import establishments as est

        data = _establishments(data)
        attrs = [c for c in bounds.columns if c != data.id_column]
        return est.group_max_bounds(data.frame, by, data.id_column, bounds, attrs)

    def clipped_group_sums(
        self,
        data: LoadedEstablishments,
        by: Sequence[str],
        bounds: pl.DataFrame,
        attributes: Sequence[str],
    ) -> pl.DataFrame:
        """Exact clipped sums for the pnc-mechanism (Def 6.8)."""
        from eree.engine.polars import establishments as est

        data = _establishments(data)
        return est.clipped_group_sums(data.frame, by, data.id_column, bounds, attributes)

    def _prepare(self, data: JobTables) -> pl.DataFrame:
        """Each job coded, once per dataset with a per-job frame (no ``job_counts``).

        :data:`~eree.data.job_tables.ROW` (its establishment's row) and each worker
        attribute with a declared domain as an Enum over it: 4 + 1 bytes per job. The
        loader's Enum codes are used as they are.
        """
        if self._cache is not None and self._cache[0] is data:
            return self._cache[1]
        jobs = data.jobs
        wcol = jobs.get_column("workplace_id")
        ids = data.workplaces.get_column("workplace_id")
        if isinstance(wcol.dtype, pl.Enum) and wcol.dtype.categories.equals(ids):
            row = wcol.to_physical().cast(pl.UInt32)  # coded by workplace row already
        else:
            row = (
                jobs.lazy()
                .select(pl.col("workplace_id").cast(pl.Utf8))
                .join(
                    data.workplaces.lazy().select("workplace_id").with_row_index(ROW),
                    on="workplace_id",
                    how="left",
                    maintain_order="left",
                )
                .collect()
                .get_column(ROW)
                .cast(pl.UInt32)
            )
        if row.null_count():
            raise SpecError("a job points at a workplace missing from the workplace table")
        cols = [row.alias(ROW)]
        for a in data.worker_attributes:
            if a not in data.domains:
                continue
            enum = pl.Enum(list(data.domains[a]))
            s = jobs.get_column(a)
            if s.dtype != enum:
                try:
                    s = s.cast(pl.Utf8).cast(enum)
                except pl.exceptions.InvalidOperationError:
                    raise SpecError(
                        f"worker attribute {a!r} has values outside its declared domain"
                    ) from None
            cols.append(s)
        prepared = pl.DataFrame(cols)
        self._cache = (data, prepared)
        return prepared

    def _counts(self, data: JobTables, worker_by: Sequence[str]) -> pl.DataFrame:
        """The jobs per establishment and combination of ``worker_by`` (one row each).

        From :attr:`~eree.data.job_tables.JobTables.job_counts` when the loader gave
        them, otherwise from the coded jobs (:meth:`_prepare`).
        """
        if data.job_counts is not None:
            counts = data.job_counts
            if len(counts.columns) == len(worker_by) + 2:  # all the attributes: as counted
                return counts
            return counts.group_by(ROW, *worker_by).agg(pl.col(JOBS).sum())
        return (
            self._prepare(data).group_by(ROW, *worker_by).agg(pl.len().cast(pl.UInt32).alias(JOBS))
        )

    def cell_statistics(
        self,
        data: LoadedJobTables,
        workplace_by: Sequence[str],
        worker_by: Sequence[str],
        *,
        complete: bool = False,
        truncate_below: float | None = None,
        categorical_keys: bool = False,
    ) -> pl.DataFrame:
        """Cell statistics (see :mod:`eree.engine.base`).

        Cells are numbered ``frame_index * D + worker_code`` (F workplace combinations, D
        worker-attribute combinations). The jobs counted per (establishment, worker
        code) are each establishment's contribution n to a cell; two scatters
        (sum → count, max → x_v) over the F·D cells finish the job. Rows come out sorted
        by the workplace keys, then the worker attributes in declared-domain order.
        """
        data = _job_tables(data)
        self._check(data, workplace_by, worker_by)
        wkeys = list(workplace_by)
        # the public frame of workplace combinations, and each establishment's row in it
        frame, fidx = _workplace_frame(data, wkeys, complete)
        F = max(frame.height, 1)
        sizes = [len(data.domains[a]) for a in worker_by]
        D = int(np.prod(sizes)) if worker_by else 1
        # each establishment's contribution n to each of its cells: one row per
        # (establishment, worker-attribute combination) with jobs
        counts = self._counts(data, worker_by)
        est = counts.get_column(ROW).to_numpy().astype(np.int64)
        n = counts.get_column(JOBS).to_numpy().astype(np.int64)
        cell = fidx[est] * D
        if worker_by:
            # worker code: the first attribute varies slowest (declared-domain order)
            steps = np.cumprod([1, *sizes[::-1]])[::-1][1:]
            for a, step in zip(worker_by, steps, strict=True):
                cell += counts.get_column(a).to_physical().to_numpy().astype(np.int64) * int(step)
        del counts
        count = np.bincount(cell, weights=n, minlength=F * D).astype(np.int64)
        x_v = np.zeros(F * D, dtype=np.int64)
        np.maximum.at(x_v, cell, n)
        truncated = None
        if truncate_below is not None:
            estab_size = np.bincount(est, weights=n, minlength=data.workplaces.height)
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
