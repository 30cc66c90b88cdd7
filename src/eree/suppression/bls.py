"""BLS's actual suppression in the public QCEW files, next to eree's.

The QCEW open-data "by area" files mark every withheld cell with disclosure code ``N``
and publish the establishment count of every cell. :func:`bls_cells` keeps one state's
cells of the files as read by :func:`eree.data.qcew.read_qcew_area_files` (the caller
reads them: this package does not import the generators), :func:`bls_rates` gives
BLS's suppression rates by aggregation level, :func:`compare_with_bls` puts them next to
an eree pattern computed on establishments synthesised from the same files (same cells,
same establishment counts; synthetic values), with the cell-by-cell agreement, and
:func:`bls_pattern` maps BLS's ``N`` flags onto the linked tables (to audit BLS's own
pattern on the synthetic values).

Only cells with at least one establishment in the quarter are compared (the files also
list cells that had establishments in other quarters of the year).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from eree.data.qcew import CELL_VALUE_OF_ATTRIBUTE, aggregation_level
from eree.suppression.pipeline import SuppressionResult, area_fips
from eree.suppression.tables import (
    ESTABLISHMENTS,
    LinkedTables,
    prepare_qcew_frame,
    qcew_layout,
    tabulate,
)

__all__ = ["bls_cells", "bls_pattern", "bls_rates", "compare_with_bls"]

_KEY = ["area_fips", "own", "industry", "table_code"]


def bls_cells(area_cells: pl.DataFrame, state: str) -> pl.DataFrame:
    """One state's published QCEW cells with at least one establishment.

    Args:
        area_cells: the cells of QCEW by-area files of one year and quarter, as read by
            :func:`eree.data.qcew.read_qcew_area_files` (``area_fips``, ``own_code``,
            ``industry_code``, ``agglvl_code``, ``disclosure_code``, ``establishments``).
        state: the state FIPS code.

    Returns:
        ``area_fips``, ``own``, ``industry``, ``table_code`` (agglvl), ``bls_suppressed``
        (disclosure code N), ``bls_establishments``.
    """
    st = str(state).zfill(2)
    return (
        area_cells.filter(pl.col("area_fips").str.starts_with(st), pl.col("establishments") > 0)
        .select(
            pl.col("area_fips"),
            pl.col("own_code").cast(pl.Utf8).alias("own"),
            pl.col("industry_code").alias("industry"),
            pl.col("agglvl_code").cast(pl.Utf8).alias("table_code"),
            (pl.col("disclosure_code") == "N").alias("bls_suppressed"),
            pl.col("establishments").alias("bls_establishments"),
        )
        .sort(_KEY)
    )


def bls_rates(cells: pl.DataFrame) -> pl.DataFrame:
    """BLS's suppression rates by aggregation level.

    Cells, share suppressed, share of establishments in suppressed cells.
    """
    return (
        cells.group_by("table_code")
        .agg(
            pl.len().alias("bls_cells"),
            pl.col("bls_suppressed").mean().alias("bls_suppressed_share"),
            (
                pl.col("bls_establishments").filter(pl.col("bls_suppressed")).sum()
                / pl.col("bls_establishments").sum()
            ).alias("bls_establishment_share_suppressed"),
        )
        .sort("table_code")
    )


def _eree_keyed(result: SuppressionResult) -> pl.DataFrame:
    if result.state is None:
        raise ValueError("the suppression result has no state code (input without 'state')")
    t = result.tables.cells
    return pl.DataFrame(
        {
            "area_fips": area_fips(t.get_column("area"), result.state),
            "own": t.get_column("own"),
            "industry": t.get_column("industry"),
            "table_code": t.get_column("table_code"),
            "eree_suppressed": result.suppressed,
            "eree_primary": result.primary.primary,
            "eree_establishments": t.get_column(ESTABLISHMENTS),
        }
    )


def compare_with_bls(result: SuppressionResult, cells: pl.DataFrame) -> pl.DataFrame:
    """Return eree's rates next to BLS's, by aggregation level, over the cells both have.

    Columns: ``table_code``, ``cells`` (in both), ``bls_cells_only``/``eree_cells_only``
    (cells one side lacks), ``bls_suppressed_share``, ``eree_suppressed_share``,
    ``eree_primary_share``, both establishment shares in suppressed cells, and the
    agreement: ``both_suppressed``, ``bls_only`` (BLS withholds, eree publishes),
    ``eree_only`` shares.
    """
    eree = _eree_keyed(result)
    both = eree.join(cells, on=_KEY, how="inner")
    only_bls = cells.join(eree, on=_KEY, how="anti").group_by("table_code").len("bls_cells_only")
    only_eree = eree.join(cells, on=_KEY, how="anti").group_by("table_code").len("eree_cells_only")
    est = pl.col("bls_establishments")
    bls, ours = pl.col("bls_suppressed"), pl.col("eree_suppressed")
    shares = [
        pl.len().alias("cells"),
        bls.mean().alias("bls_suppressed_share"),
        ours.mean().alias("eree_suppressed_share"),
        pl.col("eree_primary").mean().alias("eree_primary_share"),
        (est.filter(bls).sum() / est.sum()).alias("bls_establishment_share_suppressed"),
        (est.filter(ours).sum() / est.sum()).alias("eree_establishment_share_suppressed"),
        (bls & ours).mean().alias("both_suppressed"),
        (bls & ~ours).mean().alias("bls_only"),
        (~bls & ours).mean().alias("eree_only"),
    ]
    out = (
        both.group_by("table_code")
        .agg(shares)
        .join(only_bls, on="table_code", how="left")
        .join(only_eree, on="table_code", how="left")
        .with_columns(pl.col("bls_cells_only", "eree_cells_only").fill_null(0))
        .sort("table_code")
    )
    total = both.select(
        pl.lit("all").alias("table_code"),
        *shares,
        pl.lit(only_bls.get_column("bls_cells_only").sum(), dtype=pl.UInt32).alias(
            "bls_cells_only"
        ),
        pl.lit(only_eree.get_column("eree_cells_only").sum(), dtype=pl.UInt32).alias(
            "eree_cells_only"
        ),
    )
    return pl.concat([out, total.select(out.columns)], how="vertical_relaxed")


def bls_pattern(tables: LinkedTables, cells: pl.DataFrame, state: str) -> np.ndarray:
    """BLS's disclosure-code-N flags on the cells of ``tables``.

    False where BLS has no such cell.
    """
    t = tables.cells
    keyed = pl.DataFrame(
        {
            "cell": t.get_column("cell"),
            "area_fips": area_fips(t.get_column("area"), state),
            "own": t.get_column("own"),
            "industry": t.get_column("industry"),
            "table_code": t.get_column("table_code"),
        }
    )
    j = keyed.join(cells.select([*_KEY, "bls_suppressed"]), on=_KEY, how="left").sort("cell")
    return j.get_column("bls_suppressed").fill_null(False).to_numpy()


def bls_linked_tables(
    area_cells: pl.DataFrame,
    state: str,
    *,
    attributes: tuple[str, ...] = ("m1emp", "m2emp", "m3emp", "wage"),
) -> tuple[LinkedTables, np.ndarray]:
    """The linked tables of BLS's *published* file for one state, without microdata.

    The cells are those of the file (every cell with an establishment in the quarter;
    their set is the set of ancestors of the county × ownership × NAICS-6 cells), the
    relations those of :func:`~.tables.qcew_layout`, the values the published ones;
    the values of suppressed cells are unknown and set to 0 (the audit treats them as
    unknowns, so this affects nothing but the numerical scaling).

    Args:
        area_cells: the cells of the by-area files of one year and quarter
            (:func:`eree.data.qcew.read_qcew_area_files`).
        state: the state FIPS code.
        attributes: the attributes (mapped to BLS's columns by
            :data:`~eree.data.qcew.CELL_VALUE_OF_ATTRIBUTE`).

    Returns:
        (tables, suppressed mask).

    Raises:
        ValueError: a cell of the file is not one of the linked tables (or vice versa).
    """
    st = str(state).zfill(2)
    raw = area_cells.filter(pl.col("area_fips").str.starts_with(st), pl.col("establishments") > 0)
    leaves = raw.filter(pl.col("agglvl_code") == aggregation_level("county", "naics6")).select(
        pl.col("area_fips").str.slice(2, 3).cast(pl.Int64).cast(pl.Utf8).alias("cnty"),
        pl.col("own_code").cast(pl.Utf8).alias("own"),
        pl.col("industry_code").alias("naics"),
        *[pl.lit(0.0).alias(a) for a in attributes],
    )
    tables = tabulate(prepare_qcew_frame(leaves), qcew_layout(), attributes, top=1)
    t = tables.cells
    keyed = pl.DataFrame(
        {
            "cell": t.get_column("cell"),
            "area_fips": area_fips(t.get_column("area"), st),
            "own": t.get_column("own"),
            "industry": t.get_column("industry"),
            "table_code": t.get_column("table_code"),
        }
    )
    vals = raw.select(
        pl.col("area_fips"),
        pl.col("own_code").cast(pl.Utf8).alias("own"),
        pl.col("industry_code").alias("industry"),
        pl.col("agglvl_code").cast(pl.Utf8).alias("table_code"),
        (pl.col("disclosure_code") == "N").alias("bls_suppressed"),
        pl.col("establishments").alias("bls_establishments"),
        *[
            pl.col(CELL_VALUE_OF_ATTRIBUTE[a]).cast(pl.Float64).alias(f"__bls_{a}")
            for a in attributes
        ],
    )
    j = keyed.join(vals, on=_KEY, how="left").sort("cell")
    missing = int(j.get_column("bls_suppressed").null_count())
    extra = vals.join(keyed, on=_KEY, how="anti").height
    if missing or extra:
        raise ValueError(
            f"the file's cells do not form the QCEW linked tables ({missing} cells without "
            f"a row in the file, {extra} rows of the file outside the tables)"
        )
    suppressed = j.get_column("bls_suppressed").to_numpy()
    cols = [pl.Series(ESTABLISHMENTS, j.get_column("bls_establishments"))]
    for a in attributes:
        v = j.get_column(f"__bls_{a}").to_numpy()
        cols.append(pl.Series(a, np.where(suppressed, 0.0, v)))
    cells = tables.cells.with_columns(cols)
    return (
        LinkedTables(
            tables.layout,
            cells,
            tables.relations,
            tables.relation_dimension,
            tables.attributes,
            tables.top,
            tables.levels,
            tables.ancestors,
        ),
        suppressed,
    )
