"""The default engine: Polars, in-process and lazy."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

import polars as pl

from eree.data.eree_tables import EreeData
from eree.errors import SpecError

_TOTAL_KEY = "__total__"


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


class PolarsEngine:
    """Cell statistics with Polars.

    The scan is two group-bys: jobs by (establishment, worker keys) — which gives each
    establishment's contribution to each cell — then those contributions by the cell keys
    (sum → count, max → x_v). Workplace attributes are joined on the (much smaller)
    per-establishment table, not on the jobs.
    """

    name = "polars"

    def _check(self, data: EreeData, workplace_by: Sequence[str], worker_by: Sequence[str]) -> None:
        for a in workplace_by:
            if a not in data.workplaces.columns or a == "workplace_id":
                raise SpecError(f"{a!r} is not a workplace attribute of the data")
        for a in worker_by:
            if a not in data.jobs.columns or a == "workplace_id":
                raise SpecError(f"{a!r} is not a worker attribute of the data")

    def establishment_cells(
        self, data: EreeData, workplace_by: Sequence[str], worker_by: Sequence[str]
    ) -> pl.DataFrame:
        self._check(data, workplace_by, worker_by)
        per = (
            data.jobs.lazy()
            .group_by(["workplace_id", *worker_by])
            .agg(pl.len().cast(pl.Int64).alias("n"))
        )
        wp = data.workplaces.lazy().select(["workplace_id", *workplace_by])
        return (
            per.join(wp, on="workplace_id", how="inner")
            .select(["workplace_id", *workplace_by, *worker_by, "n"])
            .sort(["workplace_id", *workplace_by, *worker_by])
            .collect()
        )

    def cell_statistics(
        self,
        data: EreeData,
        workplace_by: Sequence[str],
        worker_by: Sequence[str],
        *,
        complete: bool = False,
        truncate_below: float | None = None,
    ) -> pl.DataFrame:
        self._check(data, workplace_by, worker_by)
        wkeys = list(workplace_by)
        keys = [*wkeys, *worker_by]
        # group_by([]) is not a thing: use a constant key for the total
        gkeys_w = wkeys or [_TOTAL_KEY]
        gkeys = [*gkeys_w, *worker_by]

        wp = data.workplaces.lazy().select(["workplace_id", *wkeys])
        if not wkeys:
            wp = wp.with_columns(pl.lit("").alias(_TOTAL_KEY))

        per = data.jobs.lazy().group_by(["workplace_id", *worker_by]).agg(
            pl.len().cast(pl.Int64).alias("n")
        )
        aggs = [pl.col("n").sum().alias("count"), pl.col("n").max().alias("x_v")]
        if truncate_below is not None:
            size = per.group_by("workplace_id").agg(pl.col("n").sum().alias("_size"))
            per = per.join(size, on="workplace_id", how="left")
            aggs.append(
                pl.col("n").filter(pl.col("_size") < truncate_below).sum().alias("count_truncated")
            )
        stats = per.join(wp, on="workplace_id", how="inner").group_by(gkeys).agg(aggs)

        frame = wp.group_by(gkeys_w).agg(pl.len().cast(pl.Int64).alias("establishments"))
        if complete and wkeys:
            full = _domain_frame(data.domains, wkeys).lazy()
            frame = full.join(frame, on=wkeys, how="left")
        if worker_by:
            frame = frame.join(_domain_frame(data.domains, worker_by).lazy(), how="cross")
        fill = ["count", "x_v", "establishments"]
        if truncate_below is not None:
            fill.append("count_truncated")
        out = (
            frame.join(stats, on=gkeys, how="left")
            .with_columns([pl.col(c).fill_null(0).cast(pl.Int64) for c in fill])
            .with_columns((pl.col("establishments") > 0).alias("has_establishment"))
        )
        cols = [*keys, "count", "x_v", "establishments", "has_establishment"]
        if truncate_below is not None:
            cols.append("count_truncated")
        return out.select(cols).sort(keys or ["count"]).collect()
