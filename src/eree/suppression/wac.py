"""The WAC families by block as the frontier publishes them, and their linked-table layout.

Shared by the reconstruction audit's frontier (:mod:`eree.evaluate.reconstruct.frontier`)
and the WAC coarsening (:mod:`eree.suppression.coarsening.jobs`, released by
:mod:`eree.release.coarsening_jobs`): below the release path, in the package whose linked
tables they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

__all__ = [
    "ATTRIBUTES",
    "WAC_TABLES",
    "cell_keys",
    "exact_tables",
    "jobs_from_truth",
    "wac_layout",
]

#: the WAC families: name → (by, ε multiplicity d of one cell)
WAC_TABLES: dict[str, tuple[tuple[str, ...], int]] = {
    "wac_c000": (("block",), 1),
    "wac_ca": (("block", "age"), 3),
    "wac_ce": (("block", "earnings"), 3),
    "wac_cns": (("block", "naics_sector"), 1),
    "wac_cr": (("block", "race"), 6),
    "wac_ct": (("block", "ethnicity"), 2),
    "wac_cd": (("block", "age", "education"), 12),
    "wac_cs": (("block", "sex"), 2),
}
ATTRIBUTES = ("age", "earnings", "naics_sector", "race", "ethnicity", "education", "sex")


def wac_layout() -> Any:
    """The WAC families as linked tables of the suppression package (:mod:`eree.suppression`).

    One dimension per key (``block`` and each attribute: a total level and the values);
    one table per family. The package derives the relations: a block's C000 cell is the
    sum of each one-way family's cells (CA, CE, CNS, CR, CT, CS), and each CA cell the sum
    of its row of CD (age × education) — the relations the format derives from the keys.
    """
    from eree.suppression.tables import Dimension, TableLayout

    dims = (
        Dimension("block", (("total", None), ("block", "block"))),
        *(Dimension(a, (("total", None), (a, a))) for a in ATTRIBUTES),
    )
    tables = tuple(
        tuple(d.name if d.name in by else "total" for d in dims) for by, _ in WAC_TABLES.values()
    )
    return TableLayout(dims, tables, tuple(WAC_TABLES))


def cell_keys(tables: Any) -> Any:
    """Each cell of linked tables in :func:`wac_layout` keyed as the table format keys it.

    One row per cell in the tables' order: ``table`` (the family's name), ``block`` and
    each attribute (null where the family totals over it), so a per-cell array of the
    package can be joined to a WAC release's cells.
    """
    names = dict(enumerate(WAC_TABLES))
    return tables.cells.select(
        pl.col("table").replace_strict(names, return_dtype=pl.Utf8),
        pl.col("block").cast(pl.Utf8),
        *[
            pl.when(pl.col(f"{a}_level") == "total").then(None).otherwise(pl.col(a)).alias(a)
            for a in ATTRIBUTES
        ],
    )


def jobs_from_truth(truth: Any) -> Any:
    """The jobs of a WAC truth frame, one row each: the suppression package's contributors.

    ``truth`` has one row per block (``unit``) × attribute combination with its count
    ``true``; the result one row per job: ``block``, the attributes and ``jobs`` = 1.
    """
    return (
        truth.filter(pl.col("true") > 0)
        .select(pl.all().repeat_by("true").explode())
        .drop("true")
        .rename({"unit": "block"})
        .with_columns(pl.lit(1.0).alias("jobs"))
    )


def exact_tables(
    truth: pl.DataFrame,
    domains: dict[str, Sequence[str]],
    blocks: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Every WAC table's cells (zeros included) from true records, status ``exact``.

    ``truth``: ``unit`` (the block), the attributes, ``true``. ``blocks``: the blocks
    listed (default: the truth's); a block without a record has every cell 0.
    """
    frames = []
    units = truth.get_column("unit").cast(pl.Utf8)
    if blocks is not None:
        units = pl.concat([units, pl.Series("unit", list(blocks), dtype=pl.Utf8)])
    blocks_frame = pl.DataFrame({"block": units}).unique().sort("block")
    for name, (by, _) in WAC_TABLES.items():
        attrs = [a for a in by if a != "block"]
        grid = blocks_frame
        for a in attrs:
            grid = grid.join(pl.DataFrame({a: list(domains[a])}), how="cross")
        agg = (
            truth.rename({"unit": "block"})
            .group_by(["block", *attrs])
            .agg(pl.col("true").sum().cast(pl.Float64).alias("value"))
        )
        t = grid.join(agg, on=["block", *attrs], how="left").with_columns(
            pl.col("value").fill_null(0.0)
        )
        t = t.with_columns(
            [pl.lit(None, dtype=pl.Utf8).alias(a) for a in ATTRIBUTES if a not in attrs]
        )
        frames.append(
            t.select(
                pl.lit(name).alias("table"),
                "block",
                *ATTRIBUTES,
                pl.lit("exact").alias("status"),
                "value",
            )
        )
    return pl.concat(frames)
