r"""QCEW-like synthetic establishment microdata (DESIGN.md §8; Webb et al., Appendix A).

Two entry points, one output schema (DESIGN.md §2.2, the Syn-RI file's columns):
``primary_key, state, cnty, own, naics, naics3, naics4, naics5, naics_sector,
super_sector, m1emp, m2emp, m3emp, wage, year, qtr`` — one row per establishment,
integer columns (see :data:`ESTABLISHMENT_SCHEMA`).

* :func:`synth_qcew_from_area` — from real BLS QCEW open-data "by area" files
  (:func:`read_qcew_area_files`): the suppressed cells are imputed consistently with
  their published parents (:func:`impute_suppressed_cells`) and every county × ownership
  × NAICS-6 cell is split into its establishments with the Dirichlet divider
  (:func:`establishments_from_cells`, Appendix A.4, Algorithms 6, 7 and 2).
* :func:`synth_qcew_parametric` — no file: heavy-tailed establishment sizes over a
  realistic geography (states → counties) and the real 2017 NAICS-6 codes, vectorised
  and memory-lean (10M establishments in ≈ 7 s and ≈ 1 GB).

**Reading** (:func:`read_qcew_area_files`). One row per cell of the files
(a directory of ``*.csv``/``*.csv.gz`` or one file), for one year and quarter, at the
aggregation levels 50–58 (state) and 70–78 (county): ``area_fips``, ``own_code``,
``industry_code``, ``agglvl_code``, ``disclosure_code`` (``""`` published, ``"N"``
suppressed — values shown as 0 —, ``"-"`` no establishment this quarter), the
establishment count (``qtrly_estabs_count`` or, in newer files, ``qtrly_estabs``:
published for every cell, suppressed or not), ``month1_emplvl``, ``month2_emplvl``,
``month3_emplvl`` and ``total_qtrly_wages``.

**Imputation of suppressed cells** (:func:`impute_suppressed_cells`). The county cells
form a tree in which every node is the sum of its children (verified on the DE, DC
and RI 2016 files: published children always add up to published parents)::

    50 state total (never suppressed)
     └─ 70 county total, all ownerships
         └─ 71 county × ownership
             └─ 72 domain (101 goods-producing, 102 service-providing)
                 └─ 73 supersector ─ 74 NAICS sector ─ 75 NAICS-3 ─ 76 NAICS-4
                    ─ 77 NAICS-5 ─ 78 NAICS-6

(a node whose direct parent is absent from the files hangs under its nearest present
ancestor). For each of the four measures (months 1–3 employment, wages):

1. *Bottom-up floors.* ``floor(v)`` = the published value of ``v``; for a suppressed
   ``v``, the sum of its children's floors (0 for a suppressed leaf): what its published
   descendants already account for. ``unexplained(v)`` = the establishments of ``v``
   not inside a published descendant.
2. *Top-down residuals.* Parents are visited from the root down, so a parent's value
   is known (published, or imputed one step earlier — a suppressed county ×
   ownership total is imputed from the county total, a suppressed county total from
   the state total). Its residual
   ``R = value(parent) − Σ published children − Σ floors of suppressed children``
   is spread over the suppressed children in proportion to
   ``unexplained(child) × rate(child)`` and added to their floors. ``rate`` is, with
   ``prior="state"`` (default), the child's industry-specific average per
   establishment in the state-level counterpart cell (the same ownership and industry
   at agglvl − 20) after the published county cells are taken out — when that state
   cell is published and the average is defined; otherwise (and always with
   ``prior="establishments"``) the parent's average ``R / Σ unexplained``, i.e. plain
   proportionality to establishment counts.
3. *Integer rounding that preserves sums*: largest remainder (Hamilton) per parent,
   ties broken by position, so the suppressed children sum exactly to the residual.

Consequences (tested): every published value is unchanged; every parent equals the
sum of its children, for all four measures and the establishment counts; imputed
values are non-negative integers and never below what their published descendants
require. A negative residual (inconsistent files; never seen in the DE/DC/RI files)
would be clipped at 0, and :func:`hierarchy_check` would show the parent that no longer
adds up. The state-level cells (5x) are not constraints of the tree: a suppressed state
cell is set to the sum of its (imputed) county cells; a published one may differ from
that sum where its county cells were imputed (:func:`hierarchy_check` reports it with
``state=True``; on the DE/DC/RI files the month-3 employment of such state cells is off
by 2.4% in total with ``prior="state"``, 9.3% with ``prior="establishments"``).

**Establishments** (:func:`establishments_from_cells`, Appendix A.4, Algorithm 7): for
each county × ownership × NAICS-6 cell with ``d`` establishments, concentrations
``a_1..a_d ~ i.i.d. Gamma(shape 10, scale 200)`` are drawn once and shared by three
applications of the Dirichlet divider (Algorithm 6: ``p ~ Dirichlet(a)``, values
``p·A``; an all-zero concentration vector becomes all ones), for month-1 employment,
month-3 employment and wages; each application draws its own ``p``. Month 2 follows
Algorithm 2 with η = 0.5. Two documented choices where the paper's algorithms produce
reals but its data (Syn-RI) are integers: each divider's ``p·A`` is rounded by unbiased
systematic rounding within the cell, so that the cell's total is reproduced exactly
(the published establishment count and month-3 employment of every published cell,
and month 1 and wages too), and Algorithm 2's value is rounded half-to-even *before*
its lines 7–11 (so that month 2 is 0 only when month 1 or month 3 is 0). The variance
of Algorithm 2 is taken as printed in the algorithm, σ² = 2η|m3−m1|/(m3+m1) (the
running text says η|m3−m1|/(m1+m3)). Wages are in thousands of dollars by default
(``wage_unit=1000``, the unit of Syn-RI and of CBP's payroll, the data on which the
paper used γ_w = 50): each cell's dollars are rounded half-to-even to whole thousands
before the split; ``wage_unit=1`` keeps dollars exactly.

Everything is numpy/polars vectorised; nothing loops over cells or establishments. The
same seed gives identical output (``numpy.random.Generator``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl

from eree.data.establishments import SUPERSECTOR_OF_SECTOR
from eree.errors import DataValidationError

__all__ = [
    "CELL_VALUES",
    "ESTABLISHMENT_COLUMNS",
    "ESTABLISHMENT_SCHEMA",
    "QCEW_SECTOR_LABEL",
    "SUPERSECTOR_OF_QCEW_SECTOR",
    "SynthQcew",
    "dirichlet_divider",
    "establishments_from_cells",
    "hierarchy_check",
    "impute_suppressed_cells",
    "month2_employment",
    "read_qcew_area_files",
    "synth_qcew_from_area",
    "synth_qcew_parametric",
    "write_establishments",
]

#: the four measures of a QCEW cell, in the order month 1, 2, 3, wages
CELL_VALUES: tuple[str, ...] = (
    "month1_emplvl",
    "month2_emplvl",
    "month3_emplvl",
    "total_qtrly_wages",
)

#: output schema of the establishment microdata (DESIGN.md §2.2; Syn-RI column names)
ESTABLISHMENT_SCHEMA: dict[str, type[pl.DataType]] = {
    "primary_key": pl.Int64,
    "state": pl.Int16,
    "cnty": pl.Int16,
    "own": pl.Int8,
    "naics": pl.Int32,
    "naics3": pl.Int16,
    "naics4": pl.Int16,
    "naics5": pl.Int32,
    "naics_sector": pl.Int8,
    "super_sector": pl.Int16,
    "m1emp": pl.Int32,
    "m2emp": pl.Int32,
    "m3emp": pl.Int32,
    "wage": pl.Int64,
    "year": pl.Int16,
    "qtr": pl.Int8,
}
ESTABLISHMENT_COLUMNS: tuple[str, ...] = tuple(ESTABLISHMENT_SCHEMA)

#: QCEW sector label (agglvl 54/74 industry_code) of each 2-digit NAICS prefix
QCEW_SECTOR_LABEL: dict[str, str] = {
    **{s: s for s in SUPERSECTOR_OF_SECTOR},
    "31": "31-33",
    "32": "31-33",
    "33": "31-33",
    "44": "44-45",
    "45": "44-45",
    "48": "48-49",
    "49": "48-49",
}

#: BLS supersector (agglvl 53/73) of each QCEW sector label (agglvl 54/74)
SUPERSECTOR_OF_QCEW_SECTOR: dict[str, str] = {
    QCEW_SECTOR_LABEL[s]: ss for s, ss in SUPERSECTOR_OF_SECTOR.items()
}

_GOODS_SUPERSECTORS = ("1011", "1012", "1013")
_ESTABS_COLUMNS = ("qtrly_estabs_count", "qtrly_estabs")
_KEY = ("area_fips", "own_code", "industry_code", "agglvl_code")
_LEVELS = (50, 51, 52, 53, 54, 55, 56, 57, 58, 70, 71, 72, 73, 74, 75, 76, 77, 78)


# --------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------


def _area_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise DataValidationError(
            "QCEW by-area input not found (expected a directory of CSV files or one file)",
            file=str(path),
            rule="missing-file",
        )
    files = sorted(p for p in path.iterdir() if p.name.lower().endswith((".csv", ".csv.gz")))
    if not files:
        raise DataValidationError(
            "no QCEW by-area files (*.csv, *.csv.gz) in this directory",
            file=str(path),
            rule="missing-file",
        )
    return files


def read_qcew_area_files(path: str | Path, year: int = 2016, qtr: int = 1) -> pl.DataFrame:
    """Read BLS QCEW open-data "by area" files: the cells of one year and quarter.

    Args:
        path: a directory of ``*.csv``/``*.csv.gz`` by-area files (all are read, e.g.
            every county and the statewide file of one or several states), or one file.
        year, qtr: the year and quarter to keep.

    Returns:
        One row per cell at agglvl 50–58 and 70–78 (all establishment sizes):
        ``area_fips`` (Utf8, 5 digits), ``own_code`` (Int64), ``industry_code`` (Utf8),
        ``agglvl_code`` (Int64), ``disclosure_code`` (Utf8: ``""`` published, ``"N"``
        suppressed, ``"-"`` no establishment), ``establishments`` (from
        ``qtrly_estabs_count`` or ``qtrly_estabs``), ``month1_emplvl``,
        ``month2_emplvl``, ``month3_emplvl``, ``total_qtrly_wages`` (Int64), sorted by
        agglvl, area, ownership and industry.

    Raises:
        DataValidationError: a missing file or column, a value that does not parse, a
            negative value, or a cell listed twice (file and column named).
    """
    frames = []
    for f in _area_files(Path(path)):
        file = str(f)
        try:
            raw = pl.read_csv(f, infer_schema_length=0)
        except (pl.exceptions.PolarsError, OSError) as e:
            raise DataValidationError(
                f"cannot read as CSV ({type(e).__name__})", file=file, rule="parse"
            ) from e
        estabs = next((c for c in _ESTABS_COLUMNS if c in raw.columns), None)
        need = [*_KEY, "year", "qtr", "disclosure_code", *CELL_VALUES]
        missing = [c for c in need if c not in raw.columns]
        if estabs is None or missing:
            col = missing[0] if missing else "qtrly_estabs_count"
            raise DataValidationError(
                "required QCEW column is missing (the establishment count may be named "
                "qtrly_estabs_count or qtrly_estabs)",
                file=file,
                column=col,
                rule="missing-column",
            )
        df = raw.select(
            [*need, pl.col(estabs).alias("establishments")]
            + (["size_code"] if "size_code" in raw.columns else [])
        )
        ints = ["own_code", "agglvl_code", "year", "qtr", "establishments", *CELL_VALUES]
        for c in ints:
            parsed = df.get_column(c).str.strip_chars().cast(pl.Int64, strict=False)
            bad = parsed.is_null() | (parsed < 0)
            if bad.any():
                row = int(bad.arg_max() or 0)
                raise DataValidationError(
                    "value is missing, not an integer, or negative",
                    file=file,
                    row=row + 1,
                    column=c,
                    rule="parse",
                )
            df = df.with_columns(parsed.alias(c))
        keep = (pl.col("year") == year) & (pl.col("qtr") == qtr)
        keep = keep & pl.col("agglvl_code").is_in(list(_LEVELS))
        if "size_code" in df.columns:
            keep = keep & (pl.col("size_code").str.strip_chars() == "0")
        frames.append(df.filter(keep))
    cells = (
        pl.concat(frames)
        .with_columns(
            pl.col("area_fips").str.strip_chars().str.zfill(5),
            pl.col("industry_code").str.strip_chars(),
            pl.col("disclosure_code").fill_null("").str.strip_chars(),
        )
        .select(*_KEY, "disclosure_code", "establishments", *CELL_VALUES)
        .sort("agglvl_code", "area_fips", "own_code", "industry_code")
    )
    dup = cells.select(_KEY).is_duplicated()
    if dup.any():
        raise DataValidationError(
            f"a cell (area, ownership, industry, agglvl) appears twice for {year} Q{qtr}",
            file=str(path),
            row=int(dup.arg_max() or 0) + 1,
            rule="duplicate-cell",
        )
    return cells


# --------------------------------------------------------------------------------------
# imputation
# --------------------------------------------------------------------------------------


def _parent_key(keys: pl.DataFrame) -> pl.DataFrame:
    """One step up the county tree (module docstring); level 0 marks 'no parent'."""
    lvl = pl.col("agglvl_code")
    ind = pl.col("industry_code")
    sector = ind.str.slice(0, 2).replace(QCEW_SECTOR_LABEL)
    domain = (
        pl.when(ind.is_in(list(_GOODS_SUPERSECTORS))).then(pl.lit("101")).otherwise(pl.lit("102"))
    )
    new_ind = (
        pl.when(lvl.is_between(76, 78))
        .then(ind.str.slice(0, lvl - 73))
        .when(lvl == 75)
        .then(sector)
        .when(lvl == 74)
        .then(ind.replace(SUPERSECTOR_OF_QCEW_SECTOR))
        .when(lvl == 73)
        .then(domain)
        .otherwise(pl.lit("10"))
    )
    new_own = pl.when(lvl <= 71).then(pl.lit(0, pl.Int64)).otherwise(pl.col("own_code"))
    new_area = (
        pl.when(lvl == 70)
        .then(pl.col("area_fips").str.slice(0, 2) + pl.lit("000"))
        .otherwise(pl.col("area_fips"))
    )
    new_lvl = (
        pl.when(lvl == 70)
        .then(pl.lit(50, pl.Int64))
        .when(lvl.is_between(71, 78))
        .then(lvl - 1)
        .otherwise(pl.lit(0, pl.Int64))
    )
    return keys.select(
        new_area.alias("area_fips"),
        new_own.alias("own_code"),
        new_ind.alias("industry_code"),
        new_lvl.alias("agglvl_code"),
    )


def _parents(cells: pl.DataFrame) -> np.ndarray:
    """Index of each cell's nearest present ancestor in the county tree (−1: none)."""
    index = cells.select(_KEY).with_row_index("_idx")
    n = cells.height
    parent = np.full(n, -1, dtype=np.int64)
    todo = np.arange(n)
    keys = cells.select(_KEY)
    for _ in range(12):
        up = _parent_key(keys)
        found = (
            up.with_row_index("_pos")
            .join(index, on=list(_KEY), how="left")
            .sort("_pos")
            .get_column("_idx")
        )
        hit = found.is_not_null().to_numpy() & (up.get_column("agglvl_code") > 0).to_numpy()
        parent[todo[hit]] = found.filter(pl.Series(hit)).to_numpy().astype(np.int64)
        cont = ~hit & (up.get_column("agglvl_code") > 0).to_numpy()
        if not cont.any():
            break
        todo = todo[cont]
        keys = up.filter(pl.Series(cont))
    return parent


def _largest_remainder(
    total: np.ndarray, weights: np.ndarray, group: np.ndarray, n_groups: int
) -> np.ndarray:
    """Integers ∝ ``weights`` within each group, summing exactly to ``total[group]``.

    Hamilton's method: floors of the quotas plus one unit for the largest fractional
    parts (ties by position). Groups whose weights are all zero split equally.
    """
    w = np.asarray(weights, dtype=np.float64)
    W = np.bincount(group, w, n_groups)
    zero = W[group] <= 0
    if zero.any():
        w = np.where(zero, 1.0, w)
        W = np.bincount(group, w, n_groups)
    tot = total.astype(np.float64)
    quota = tot[group] * (w / W[group])
    fl = np.floor(quota)
    frac = quota - fl
    res = fl.astype(np.int64)
    rem = total - np.bincount(group, res, n_groups).astype(np.int64)
    order = np.lexsort((np.arange(group.size), -frac, group))
    g_sorted = group[order]
    start = np.searchsorted(g_sorted, np.arange(n_groups))
    rank = np.arange(group.size) - start[g_sorted]
    res[order] += (rank < rem[g_sorted]).astype(np.int64)
    # floating-point guard: put any residual difference on the group's largest quota
    diff = total - np.bincount(group, res, n_groups).astype(np.int64)
    if np.any(diff[np.bincount(group, minlength=n_groups) > 0] != 0):
        best = np.full(n_groups, -1, dtype=np.int64)
        o2 = np.lexsort((-quota, group))
        first = np.searchsorted(group[o2], np.arange(n_groups))
        ok = first < group.size
        best[ok] = o2[first[ok]]
        fix = (diff != 0) & (best >= 0)
        res[best[fix]] += diff[fix]
    return res


def _state_rates(
    cells: pl.DataFrame, values: np.ndarray, estabs: np.ndarray, published: np.ndarray
) -> np.ndarray:
    """Per county cell: the state counterpart's unpublished per-establishment average.

    The per-establishment average of the unpublished part of its state counterpart (same
    ownership/industry, agglvl − 20); NaN where undefined.
    """
    n = cells.height
    lvl = cells.get_column("agglvl_code").to_numpy()
    county = lvl >= 70
    key = cells.select(
        pl.col("area_fips").str.slice(0, 2).alias("st"),
        pl.col("own_code"),
        pl.col("industry_code"),
        pl.when(pl.col("agglvl_code") >= 70)
        .then(pl.col("agglvl_code") - 20)
        .otherwise(pl.col("agglvl_code"))
        .alias("lvl"),
    )
    gid = key.with_columns(pl.struct(key.columns).rank("dense").alias("g")).get_column("g")
    g = gid.to_numpy().astype(np.int64) - 1
    m = int(g.max()) + 1 if n else 0
    pub_c = county & published
    pub_vals = np.stack(
        [np.bincount(g, np.where(pub_c, values[:, j], 0), m) for j in range(values.shape[1])], 1
    )
    pub_est = np.bincount(g, np.where(pub_c, estabs, 0), m)
    state_rows = np.flatnonzero(~county & published)
    s_val = np.full((m, values.shape[1]), np.nan)
    s_est = np.full(m, np.nan)
    s_val[g[state_rows]] = values[state_rows]
    s_est[g[state_rows]] = estabs[state_rows]
    resid = s_val - pub_vals
    denom = s_est - pub_est
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = resid / denom[:, None]
    rate[~(denom > 0)] = np.nan
    rate[resid < 0] = np.nan
    out = rate[g]
    out[~county] = np.nan
    return out


def impute_suppressed_cells(
    cells: pl.DataFrame, *, prior: Literal["state", "establishments"] = "state"
) -> pl.DataFrame:
    """Impute the suppressed (``N``) cells consistently with their published parents.

    The algorithm (top-down through the county tree, residuals spread over suppressed
    children ∝ unexplained establishments × an industry rate, sum-preserving integer
    rounding) is described in the module docstring.

    Args:
        cells: the output of :func:`read_qcew_area_files`.
        prior: ``"state"`` (default) weights a suppressed cell by its industry's
            per-establishment average from the state-level cell; ``"establishments"``
            by establishment counts only.

    Returns:
        ``cells`` with the four measures of every suppressed cell filled in and a
        boolean column ``imputed`` (True exactly for the ``N`` cells). Published values
        are unchanged.
    """
    if prior not in ("state", "establishments"):
        raise ValueError(f"prior must be 'state' or 'establishments', not {prior!r}")
    n = cells.height
    values = cells.select(CELL_VALUES).to_numpy().astype(np.int64)
    estabs = cells.get_column("establishments").to_numpy().astype(np.int64)
    published = (cells.get_column("disclosure_code") != "N").to_numpy()
    lvl = cells.get_column("agglvl_code").to_numpy().astype(np.int64)
    parent = _parents(cells)
    in_tree = lvl >= 70
    parent[~in_tree] = -1
    k = values.shape[1]

    # 1. bottom-up floors and explained establishments
    floor = np.where(published[:, None], values, 0)
    explained = np.where(published, estabs, 0)
    for level in sorted(set(lvl[in_tree].tolist()), reverse=True):
        ch = np.flatnonzero((lvl == level) & (parent >= 0))
        ch = ch[~published[parent[ch]]]
        if ch.size:
            for j in range(k):
                np.add.at(floor[:, j], parent[ch], floor[ch, j])
            np.add.at(explained, parent[ch], explained[ch])
    unexplained = np.where(published, 0, np.maximum(estabs - explained, 0)).astype(np.float64)
    rates = (
        _state_rates(cells, values, estabs, published)
        if prior == "state"
        else np.full((n, k), np.nan)
    )

    # 2. top-down residuals, 3. sum-preserving rounding
    result = np.where(published[:, None], values, floor)
    parent_level = np.where(parent >= 0, lvl[np.maximum(parent, 0)], -1)
    for level in sorted(set(parent_level[parent_level > 0].tolist())):
        ch = np.flatnonzero(parent_level == level)
        sup = ch[~published[ch]]
        if sup.size == 0:
            continue
        par_ids, gp = np.unique(parent[sup], return_inverse=True)
        gall = np.searchsorted(par_ids, parent[ch])
        inpar = (gall < par_ids.size) & (par_ids[np.minimum(gall, par_ids.size - 1)] == parent[ch])
        pub_ch = ch[inpar & published[ch]]
        gpub = np.searchsorted(par_ids, parent[pub_ch])
        m = par_ids.size
        ue = unexplained[sup]
        ue_tot = np.bincount(gp, ue, m)
        for j in range(k):
            resid = (
                result[par_ids, j]
                - np.bincount(gpub, values[pub_ch, j], m).astype(np.int64)
                - np.bincount(gp, floor[sup, j], m).astype(np.int64)
            )
            resid = np.maximum(resid, 0)
            with np.errstate(invalid="ignore", divide="ignore"):
                avg = np.where(ue_tot > 0, resid / np.where(ue_tot > 0, ue_tot, 1.0), 0.0)
            r = rates[sup, j]
            w = ue * np.where(np.isfinite(r), r, avg[gp])
            if not np.any(w > 0):
                w = ue.copy()
            alloc = _largest_remainder(resid, w, gp.astype(np.int64), m)
            result[sup, j] = floor[sup, j] + alloc

    # state-level suppressed cells: the sum of their county cells
    st_sup = np.flatnonzero(~in_tree & ~published)
    if st_sup.size:
        key = cells.select(
            pl.col("area_fips").str.slice(0, 2).alias("st"),
            "own_code",
            "industry_code",
            pl.when(pl.col("agglvl_code") >= 70)
            .then(pl.col("agglvl_code") - 20)
            .otherwise(pl.col("agglvl_code"))
            .alias("lvl"),
        )
        g = key.select(pl.struct(key.columns).rank("dense")).to_series().to_numpy()
        g = g.astype(np.int64) - 1
        mg = int(g.max()) + 1
        cty = np.flatnonzero(in_tree & (lvl != 70))
        for j in range(k):
            sums = np.bincount(g[cty], result[cty, j], mg).astype(np.int64)
            result[st_sup, j] = sums[g[st_sup]]
    return cells.with_columns(
        *[pl.Series(c, result[:, j]) for j, c in enumerate(CELL_VALUES)],
        pl.Series("imputed", ~published),
    )


def hierarchy_check(cells: pl.DataFrame) -> pl.DataFrame:
    """Every parent of the county tree next to the sum of its children.

    Args:
        cells: cells as read (:func:`read_qcew_area_files`) or imputed.

    Returns:
        One row per cell that has children (county tree), and one per state-level cell
        whose county counterparts exist (``state=True``): the key, ``imputed`` (the
        parent's flag, False when absent), ``children``, ``any_child_imputed``, and for
        ``establishments`` and each of :data:`CELL_VALUES` the parent's value and
        ``<name>_children`` (sum over children).
    """
    parent = _parents(cells)
    lvl = cells.get_column("agglvl_code").to_numpy()
    parent[lvl < 70] = -1
    imputed = (
        cells.get_column("imputed").to_numpy()
        if "imputed" in cells.columns
        else np.zeros(cells.height, dtype=bool)
    )
    cols = ["establishments", *CELL_VALUES]
    has = parent >= 0
    child = cells.filter(pl.Series(has)).select(cols)
    agg = (
        child.with_columns(pl.Series("_p", parent[has]), pl.Series("_imp", imputed[has]))
        .group_by("_p")
        .agg(
            pl.len().alias("children"),
            pl.col("_imp").any().alias("any_child_imputed"),
            *[pl.col(c).sum().alias(f"{c}_children") for c in cols],
        )
    )
    base = cells.select(*_KEY, *cols).with_columns(
        pl.Series("imputed", imputed), pl.lit(False).alias("state")
    )
    tree = (
        base.with_row_index("_p")
        .with_columns(pl.col("_p").cast(pl.Int64))
        .join(agg.with_columns(pl.col("_p").cast(pl.Int64)), on="_p", how="inner")
        .drop("_p")
    )
    # state-level cells vs the sum of their county counterparts (levels 71–78 ↔ 51–58)
    county = cells.filter(pl.col("agglvl_code") >= 71).with_columns(
        pl.Series("_imp", imputed[lvl >= 71])
    )
    sums = county.group_by(
        pl.col("area_fips").str.slice(0, 2).alias("_st"),
        "own_code",
        "industry_code",
        (pl.col("agglvl_code") - 20).alias("agglvl_code"),
    ).agg(
        pl.len().alias("children"),
        pl.col("_imp").any().alias("any_child_imputed"),
        *[pl.col(c).sum().alias(f"{c}_children") for c in cols],
    )
    state = (
        base.filter(pl.col("agglvl_code") < 70)
        .with_columns(pl.col("area_fips").str.slice(0, 2).alias("_st"), pl.lit(True).alias("state"))
        .join(sums, on=["_st", "own_code", "industry_code", "agglvl_code"], how="inner")
        .drop("_st")
    )
    return pl.concat([tree, state.select(tree.columns)])


# --------------------------------------------------------------------------------------
# Algorithms 2 and 6 of Appendix A
# --------------------------------------------------------------------------------------


def month2_employment(
    m1: np.ndarray,
    m3: np.ndarray,
    rng: np.random.Generator,
    eta: float = 0.5,
    *,
    integer: bool = True,
) -> np.ndarray:
    r"""Month-2 employment (Webb et al., Appendix A, Algorithm 2), vectorised.

    0 if m1 = m3 = 0; otherwise
    :math:`m_2 = m_1 + (m_3-m_1)/2 + Z`, :math:`Z\sim N(0,\sigma^2)`,
    :math:`\sigma^2 = 2\eta\,|m_3-m_1|/(m_3+m_1)` (as printed in the algorithm), and
    if :math:`m_2 \le 0`: 0 when m1 = 0 or m3 = 0, else 1.

    Args:
        m1, m3: month-1 and month-3 employment (non-negative).
        rng: the random generator.
        eta: the noise parameter η (0.5 for establishments, Algorithm 7; 1.69 for the
            county × NAICS-4 cells of Algorithm 1).
        integer: round :math:`m_2` half-to-even before lines 7–11 (the paper's data are
            integers); False returns the real-valued algorithm output.
    """
    if not (math.isfinite(eta) and eta > 0):
        raise ValueError("eta must be a finite number > 0")
    a = np.asarray(m1, dtype=np.float64)
    b = np.asarray(m3, dtype=np.float64)
    s = a + b
    var = 2.0 * eta * np.abs(b - a) / np.where(s > 0, s, 1.0)
    m2 = a + (b - a) / 2.0 + rng.standard_normal(a.shape) * np.sqrt(var)
    if integer:
        m2 = np.rint(m2)
    m2 = np.where(m2 <= 0, np.where((a == 0) | (b == 0), 0.0, 1.0), m2)
    return np.where(s == 0, 0.0, m2)


def dirichlet_divider(b: np.ndarray, total: float, rng: np.random.Generator) -> np.ndarray:
    r"""Dirichlet divider (Webb et al., Appendix A, Algorithm 6).

    Splits ``total`` into ``len(b)`` non-negative reals summing to it: an all-zero
    concentration vector becomes all ones, :math:`p \sim Dirichlet(b)`, result ``p·A``.
    """
    conc = np.asarray(b, dtype=np.float64)
    if conc.ndim != 1 or conc.size == 0 or np.any(~np.isfinite(conc)) or np.any(conc < 0):
        raise ValueError("b must be a non-empty vector of finite non-negative numbers")
    if total < 0 or not math.isfinite(total):
        raise ValueError("total must be finite and non-negative")
    if np.all(conc == 0):
        conc = np.ones_like(conc)
    g = np.zeros_like(conc)
    pos = conc > 0
    g[pos] = rng.gamma(conc[pos])
    return g / g.sum() * total


def _segment_dirichlet(
    conc: np.ndarray, starts: np.ndarray, counts: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Algorithm 6 on contiguous segments at once: p ~ Dirichlet(conc[segment])."""
    g = rng.gamma(conc)
    seg = np.add.reduceat(g, starts) if starts.size else np.zeros(0)
    return g / np.repeat(seg, counts)


def _systematic_round(
    quota: np.ndarray,
    totals: np.ndarray,
    starts: np.ndarray,
    counts: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Unbiased systematic rounding within contiguous segments.

    Preserves the integer segment ``totals`` exactly (E[result] = quota).
    """
    fl = np.floor(quota)
    frac = quota - fl
    cs = np.cumsum(frac)
    before = np.repeat(cs[starts] - frac[starts], counts)
    c = cs - before
    u = np.repeat(rng.random(starts.size), counts)
    hits = np.floor(c + u)
    prev = np.concatenate(([0.0], hits[:-1]))
    prev[starts] = np.floor(u[starts])
    res = (fl + hits - prev).astype(np.int64)
    # floating-point guard: fix any off-by-one segment total on its largest entry
    diff = totals - np.add.reduceat(res, starts) if starts.size else totals
    if np.any(diff != 0):
        seg = np.repeat(np.arange(starts.size), counts)
        order = np.lexsort((-quota, seg))
        first = order[np.searchsorted(seg[order], np.arange(starts.size))]
        res[first] += diff
        res = np.maximum(res, 0)
    return res


# --------------------------------------------------------------------------------------
# establishments (Algorithm 7)
# --------------------------------------------------------------------------------------


def _naics_columns(naics: np.ndarray) -> dict[str, np.ndarray]:
    """naics3/4/5, the 2-digit naics_sector (as in Syn-RI) and the supersector."""
    sector = naics // 10_000
    lut = np.zeros(100, dtype=np.int16)
    for s, ss in SUPERSECTOR_OF_SECTOR.items():
        lut[int(s)] = int(ss)
    return {
        "naics": naics.astype(np.int32),
        "naics3": (naics // 1000).astype(np.int16),
        "naics4": (naics // 100).astype(np.int16),
        "naics5": (naics // 10).astype(np.int32),
        "naics_sector": sector.astype(np.int8),
        "super_sector": lut[sector],
    }


def _frame(cols: dict[str, np.ndarray]) -> pl.DataFrame:
    return pl.DataFrame([pl.Series(c, cols[c]).cast(t) for c, t in ESTABLISHMENT_SCHEMA.items()])


def establishments_from_cells(
    cells: pl.DataFrame,
    rng: np.random.Generator,
    *,
    year: int = 2016,
    qtr: int = 1,
    shape: float = 10.0,
    scale: float = 200.0,
    eta: float = 0.5,
    wage_unit: float = 1000.0,
) -> pl.DataFrame:
    """Establishment microdata from county × ownership × NAICS-6 cells (Algorithm 7).

    Args:
        cells: agglvl-78 rows with ``area_fips``, ``own_code``, ``industry_code``,
            ``establishments`` and the four :data:`CELL_VALUES` (no suppressed value:
            impute first). Cells with no establishment are skipped.
        rng: the random generator.
        shape, scale: of the Gamma prior of the concentrations (10 and 200, A.4).
        eta: Algorithm 2's noise parameter for month 2 (0.5, A.4).
        wage_unit: wages are written in units of this many dollars (1000: thousands,
            like Syn-RI; each cell's total is rounded half-to-even first).

    Returns:
        One row per establishment in the :data:`ESTABLISHMENT_SCHEMA`, ordered by cell
        (state, county, ownership, NAICS-6); ``primary_key`` = 1..n (Algorithm 7 l. 12).
    """
    if not (shape > 0 and scale > 0 and wage_unit > 0):
        raise ValueError("shape, scale and wage_unit must be > 0")
    c = cells.filter(pl.col("establishments") > 0).sort("area_fips", "own_code", "industry_code")
    d = c.get_column("establishments").to_numpy().astype(np.int64)
    n = int(d.sum())
    starts = np.concatenate(([0], np.cumsum(d)[:-1])).astype(np.int64)
    tot = {
        "m1emp": c.get_column("month1_emplvl").to_numpy().astype(np.int64),
        "m3emp": c.get_column("month3_emplvl").to_numpy().astype(np.int64),
        "wage": np.rint(c.get_column("total_qtrly_wages").to_numpy() / wage_unit).astype(np.int64),
    }
    a = rng.gamma(shape, scale, n)  # Alg 7 l. 6, shared by the three dividers
    out: dict[str, np.ndarray] = {}
    for name in ("m1emp", "m3emp", "wage"):  # Alg 7 l. 7–9: three Dirichlet dividers
        p = _segment_dirichlet(a, starts, d, rng)
        out[name] = _systematic_round(p * np.repeat(tot[name], d), tot[name], starts, d, rng)
    out["m2emp"] = month2_employment(out["m1emp"], out["m3emp"], rng, eta).astype(np.int64)
    area = c.get_column("area_fips")
    state = area.str.slice(0, 2).cast(pl.Int64).to_numpy()
    cnty = area.str.slice(2, 3).cast(pl.Int64).to_numpy()
    naics = c.get_column("industry_code").cast(pl.Int64).to_numpy()
    cols = {
        "primary_key": np.arange(1, n + 1, dtype=np.int64),
        "state": np.repeat(state, d),
        "cnty": np.repeat(cnty, d),
        "own": np.repeat(c.get_column("own_code").to_numpy(), d),
        **_naics_columns(np.repeat(naics, d)),
        **out,
        "year": np.full(n, year),
        "qtr": np.full(n, qtr),
    }
    return _frame(cols)


# --------------------------------------------------------------------------------------
# results and entry points
# --------------------------------------------------------------------------------------


def write_establishments(frame: pl.DataFrame, path: str | Path) -> Path:
    """Write establishment microdata to ``.csv``, ``.csv.gz`` or ``.parquet`` atomically."""
    p = Path(path)
    name = p.name.lower()
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    try:
        if name.endswith((".parquet", ".pq")):
            frame.write_parquet(tmp)
        elif name.endswith(".csv.gz"):
            frame.write_csv(tmp, compression="gzip", check_extension=False)
        elif name.endswith(".csv"):
            frame.write_csv(tmp)
        else:
            raise ValueError(f"unsupported output type {p.name!r}: use .csv, .csv.gz or .parquet")
        tmp.replace(p)
    finally:
        if tmp.exists():
            tmp.unlink()
    return p


@dataclass(frozen=True)
class SynthQcew:
    """Synthetic QCEW-like establishment microdata.

    Attributes:
        establishments: one row per establishment (:data:`ESTABLISHMENT_SCHEMA`).
        cells: the QCEW cells after imputation (:func:`impute_suppressed_cells`), for
            data made from by-area files; None for parametric data.
    """

    establishments: pl.DataFrame
    cells: pl.DataFrame | None = None

    @property
    def n(self) -> int:
        """Number of establishments."""
        return self.establishments.height

    def write(self, path: str | Path) -> Path:
        """Write the establishments (``.csv``, ``.csv.gz`` or ``.parquet``)."""
        return write_establishments(self.establishments, path)


def synth_qcew_from_area(
    path: str | Path,
    seed: int,
    *,
    year: int = 2016,
    qtr: int = 1,
    ownerships: Sequence[int] | None = None,
    prior: Literal["state", "establishments"] = "state",
    shape: float = 10.0,
    scale: float = 200.0,
    eta: float = 0.5,
    wage_unit: float = 1000.0,
) -> SynthQcew:
    """QCEW-like establishments from real QCEW by-area files (DESIGN.md §8).

    Reads the cells (:func:`read_qcew_area_files`), imputes the suppressed ones
    (:func:`impute_suppressed_cells`) and splits every county × ownership × NAICS-6
    cell into its establishments (:func:`establishments_from_cells`). Every published
    county × NAICS-6 cell's establishment count, month-1 and month-3 employment (and
    wages when ``wage_unit=1``) are reproduced exactly by the microdata.

    Args:
        path: directory of by-area files (or one file).
        seed: seed of ``numpy.random.Generator``; the same seed gives identical output.
        year, qtr: the quarter to use.
        ownerships: own codes to keep (e.g. ``(5,)`` for private only, like the paper's
            Syn-RI); None keeps all (1 federal, 2 state, 3 local government, 5 private).
        prior: imputation weights (:func:`impute_suppressed_cells`).
        shape, scale, eta, wage_unit: see :func:`establishments_from_cells`.
    """
    cells = impute_suppressed_cells(read_qcew_area_files(path, year, qtr), prior=prior)
    leaves = cells.filter(pl.col("agglvl_code") == 78)
    if ownerships is not None:
        leaves = leaves.filter(pl.col("own_code").is_in([int(o) for o in ownerships]))
    rng = np.random.default_rng(seed)
    est = establishments_from_cells(
        leaves, rng, year=year, qtr=qtr, shape=shape, scale=scale, eta=eta, wage_unit=wage_unit
    )
    return SynthQcew(est, cells)


# --------------------------------------------------------------------------------------
# parametric generator
# --------------------------------------------------------------------------------------

#: real state FIPS codes (50 states and DC)
_STATE_FIPS = (
    1, 2, 4, 5, 6, 8, 9, 10, 11, 12, 13, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
    28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 44, 45, 46, 47, 48, 49, 50,
    51, 53, 54, 55, 56,
)  # fmt: skip

#: per 2-digit sector: (share of establishments %, mean employment, quarterly wage per
#: employee in $1000) — rounded from national QCEW 2016 annual averages
_SECTOR_PARAMS: dict[int, tuple[float, float, float]] = {
    11: (1.0, 8.0, 9.0), 21: (0.3, 25.0, 24.0), 22: (0.2, 30.0, 25.0), 23: (7.7, 9.0, 14.0),
    31: (0.8, 35.0, 12.0), 32: (1.3, 40.0, 17.0), 33: (1.5, 40.0, 18.0), 42: (6.2, 13.0, 18.0),
    44: (7.0, 14.0, 8.0), 45: (3.2, 16.0, 6.0), 48: (2.2, 20.0, 13.0), 49: (0.4, 40.0, 10.0),
    51: (1.7, 20.0, 28.0), 52: (4.7, 13.0, 30.0), 53: (4.0, 6.0, 13.0), 54: (12.7, 8.0, 24.0),
    55: (0.6, 40.0, 33.0), 56: (5.8, 17.0, 10.0), 61: (1.0, 35.0, 12.0), 62: (16.0, 13.0, 12.0),
    71: (1.5, 18.0, 9.0), 72: (7.0, 19.0, 5.0), 81: (7.5, 5.0, 8.0), 92: (1.4, 50.0, 14.0),
}  # fmt: skip


def _naics6_codes() -> np.ndarray:
    return np.array([int(c) for c in _NAICS6_2017.split()], dtype=np.int64)


def _ownership(naics: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Own code per establishment.

    5 (private) except public administration (92: 1 federal 15%, 2 state 25%, 3 local
    60%), educational services (61: 30% local, 5% state), hospitals (622: 15%
    state/local), postal service (491: federal).
    """
    u = rng.random(naics.size)
    own = np.full(naics.size, 5, dtype=np.int8)
    sector = naics // 10_000
    n3 = naics // 1000
    pa = sector == 92
    own[pa] = np.where(u[pa] < 0.15, 1, np.where(u[pa] < 0.40, 2, 3))
    ed = sector == 61
    own[ed & (u < 0.30)] = 3
    own[ed & (u >= 0.30) & (u < 0.35)] = 2
    hosp = n3 == 622
    own[hosp & (u < 0.10)] = 3
    own[hosp & (u >= 0.10) & (u < 0.15)] = 2
    own[n3 == 491] = 1
    return own


def synth_qcew_parametric(
    seed: int,
    n_establishments: int = 25_000,
    *,
    n_counties: int | None = None,
    size_sigma: float = 1.3,
    zero_share: float = 0.05,
    year: int = 2016,
    qtr: int = 1,
    eta: float = 0.5,
) -> SynthQcew:
    """QCEW-like establishments without a file, up to national scale.

    Model:

    * *Geography.* ``n_counties`` (default ≈ one per 3,100 establishments, 1 to 3,143,
      the national count) counties with log-normal(0, 1.6) weights (a few large urban
      counties, many small ones), spread over ``ceil(n_counties / 62)`` (≤ 51) real state
      FIPS codes; county codes 1, 3, 5, … within each state.
    * *Industries.* The 1,057 real 2017 NAICS-6 codes; sector shares of establishments
      from national QCEW (:data:`_SECTOR_PARAMS`), log-normal(0, 1.2) weights across
      the codes of a sector. Counties and industries are independent; the number of
      establishments in every county × NAICS-6 cell is multinomial (exactly
      ``n_establishments`` in total), so most cells are small and many empty.
    * *Ownership* by industry (:func:`_ownership`).
    * *Size.* Month-3 employment ``1 + ⌊exp(N(log(mean_k − 1) − σ²/2, σ²))⌋`` with an
      industry mean ``mean_k`` (sector mean × log-normal(0, 0.5)), σ = ``size_sigma``
      (heavy right tail: median 5, mean ≈ 15, two thirds below 10, the largest
      ≈ 8,000 at 200K and ≈ 12,000 at 10M establishments); a share ``zero_share`` of
      establishments has no employee. Month 1 is month 3 times a
      log-normal(0, 0.1) change (0 stays 0 with probability 0.9); month 2 by
      Algorithm 2 (η = ``eta``).
    * *Wages* (thousands of dollars per quarter): mean monthly employment × the sector
      wage per employee × industry log-normal(0, 0.25) × establishment
      log-normal(0, 0.35), rounded (0 when all three months have no employee).

    Memory: compact integer dtypes (:data:`ESTABLISHMENT_SCHEMA`, ≈ 50 bytes per row);
    10M establishments take ≈ 7 s and ≈ 1 GB peak (2-core machine of BENCHMARKS.md).

    Args:
        seed: seed of ``numpy.random.Generator``; the same seed gives identical output.
        n_establishments: exact number of establishments (≥ 1).
        n_counties: number of counties (default from ``n_establishments``).
        size_sigma: log-scale spread of establishment sizes.
        zero_share: share of establishments with no employment.
        year, qtr: constant columns.
        eta: Algorithm 2's η for month 2.
    """
    if n_establishments < 1:
        raise ValueError("n_establishments must be at least 1")
    if not (size_sigma > 0 and 0 <= zero_share < 1):
        raise ValueError("size_sigma must be > 0 and zero_share in [0, 1)")
    n = int(n_establishments)
    nc = int(n_counties) if n_counties is not None else int(np.clip(round(n / 3100), 1, 3143))
    if nc < 1:
        raise ValueError("n_counties must be at least 1")
    rng = np.random.default_rng(seed)

    # geography
    n_states = int(min(len(_STATE_FIPS), math.ceil(nc / 62)))
    state_w = rng.lognormal(0.0, 0.9, n_states)
    extra = rng.choice(n_states, nc - n_states, p=state_w / state_w.sum())
    county_state = np.sort(np.concatenate([np.arange(n_states), extra]))
    first = np.searchsorted(county_state, np.arange(n_states))
    county_code = 2 * (np.arange(nc) - first[county_state]) + 1
    county_w = rng.lognormal(0.0, 1.6, nc)

    # industries
    codes = _naics6_codes()
    sector = codes // 10_000
    params = np.array([_SECTOR_PARAMS[int(s)] for s in sector])
    ind_w = rng.lognormal(0.0, 1.2, codes.size)
    sec_tot = {int(s): ind_w[sector == s].sum() for s in np.unique(sector)}
    ind_w = ind_w / np.array([sec_tot[int(s)] for s in sector]) * params[:, 0]
    ind_mean = params[:, 1] * rng.lognormal(0.0, 0.5, codes.size)
    ind_wage = params[:, 2] * rng.lognormal(0.0, 0.25, codes.size)

    # establishments per county × industry cell (multinomial, exactly n)
    p = np.outer(county_w / county_w.sum(), ind_w / ind_w.sum()).ravel()
    counts = rng.multinomial(n, p / p.sum())
    del p
    cell = np.flatnonzero(counts)
    cnt = counts[cell]
    del counts
    cell_est = np.repeat(cell, cnt)
    del cell, cnt
    cty = (cell_est // codes.size).astype(np.int32)
    ind = (cell_est % codes.size).astype(np.int32)
    del cell_est
    naics = codes[ind]
    own = _ownership(naics, rng)

    # sizes
    mu = np.log(np.maximum(ind_mean[ind] - 1.0, 0.5)) - size_sigma**2 / 2.0
    m3 = 1.0 + np.floor(np.exp(mu + size_sigma * rng.standard_normal(n)))
    del mu
    m3[rng.random(n) < zero_share] = 0.0
    m1 = np.rint(m3 * rng.lognormal(0.0, 0.1, n))
    birth = (m3 == 0) & (rng.random(n) < 0.1)
    m1[(m3 == 0) & ~birth] = 0.0
    m1[birth] = np.floor(rng.lognormal(1.0, 1.0, int(birth.sum())))
    m2 = month2_employment(m1, m3, rng, eta)
    avg = (m1 + m2 + m3) / 3.0
    wage = np.rint(avg * ind_wage[ind] * rng.lognormal(0.0, 0.35, n))
    del avg
    state = np.asarray(_STATE_FIPS, dtype=np.int16)[county_state[cty]]
    cols = {
        "primary_key": np.arange(1, n + 1, dtype=np.int64),
        "state": state,
        "cnty": county_code[cty].astype(np.int16),
        "own": own,
        **_naics_columns(naics),
        "m1emp": m1.astype(np.int32),
        "m2emp": m2.astype(np.int32),
        "m3emp": m3.astype(np.int32),
        "wage": wage.astype(np.int64),
        "year": np.full(n, year, dtype=np.int16),
        "qtr": np.full(n, qtr, dtype=np.int8),
    }
    del m1, m2, m3, wage, naics, state, own
    # cells were generated county-major (states in order), so rows are sorted by
    # state, county and NAICS-6 already
    return SynthQcew(_frame(cols))


#: the 1,057 six-digit codes of NAICS 2017 (U.S. Census Bureau, public domain)
_NAICS6_2017 = """
111110 111120 111130 111140 111150 111160 111191 111199 111211 111219 111310 111320
111331 111332 111333 111334 111335 111336 111339 111411 111419 111421 111422 111910
111920 111930 111940 111991 111992 111998 112111 112112 112120 112130 112210 112310
112320 112330 112340 112390 112410 112420 112511 112512 112519 112910 112920 112930
112990 113110 113210 113310 114111 114112 114119 114210 115111 115112 115113 115114
115115 115116 115210 115310 211120 211130 212111 212112 212113 212210 212221 212222
212230 212291 212299 212311 212312 212313 212319 212321 212322 212324 212325 212391
212392 212393 212399 213111 213112 213113 213114 213115 221111 221112 221113 221114
221115 221116 221117 221118 221121 221122 221210 221310 221320 221330 236115 236116
236117 236118 236210 236220 237110 237120 237130 237210 237310 237990 238110 238120
238130 238140 238150 238160 238170 238190 238210 238220 238290 238310 238320 238330
238340 238350 238390 238910 238990 311111 311119 311211 311212 311213 311221 311224
311225 311230 311313 311314 311340 311351 311352 311411 311412 311421 311422 311423
311511 311512 311513 311514 311520 311611 311612 311613 311615 311710 311811 311812
311813 311821 311824 311830 311911 311919 311920 311930 311941 311942 311991 311999
312111 312112 312113 312120 312130 312140 312230 313110 313210 313220 313230 313240
313310 313320 314110 314120 314910 314994 314999 315110 315190 315210 315220 315240
315280 315990 316110 316210 316992 316998 321113 321114 321211 321212 321213 321214
321219 321911 321912 321918 321920 321991 321992 321999 322110 322121 322122 322130
322211 322212 322219 322220 322230 322291 322299 323111 323113 323117 323120 324110
324121 324122 324191 324199 325110 325120 325130 325180 325193 325194 325199 325211
325212 325220 325311 325312 325314 325320 325411 325412 325413 325414 325510 325520
325611 325612 325613 325620 325910 325920 325991 325992 325998 326111 326112 326113
326121 326122 326130 326140 326150 326160 326191 326199 326211 326212 326220 326291
326299 327110 327120 327211 327212 327213 327215 327310 327320 327331 327332 327390
327410 327420 327910 327991 327992 327993 327999 331110 331210 331221 331222 331313
331314 331315 331318 331410 331420 331491 331492 331511 331512 331513 331523 331524
331529 332111 332112 332114 332117 332119 332215 332216 332311 332312 332313 332321
332322 332323 332410 332420 332431 332439 332510 332613 332618 332710 332721 332722
332811 332812 332813 332911 332912 332913 332919 332991 332992 332993 332994 332996
332999 333111 333112 333120 333131 333132 333241 333242 333243 333244 333249 333314
333316 333318 333413 333414 333415 333511 333514 333515 333517 333519 333611 333612
333613 333618 333912 333914 333921 333922 333923 333924 333991 333992 333993 333994
333995 333996 333997 333999 334111 334112 334118 334210 334220 334290 334310 334412
334413 334416 334417 334418 334419 334510 334511 334512 334513 334514 334515 334516
334517 334519 334613 334614 335110 335121 335122 335129 335210 335220 335311 335312
335313 335314 335911 335912 335921 335929 335931 335932 335991 335999 336111 336112
336120 336211 336212 336213 336214 336310 336320 336330 336340 336350 336360 336370
336390 336411 336412 336413 336414 336415 336419 336510 336611 336612 336991 336992
336999 337110 337121 337122 337124 337125 337127 337211 337212 337214 337215 337910
337920 339112 339113 339114 339115 339116 339910 339920 339930 339940 339950 339991
339992 339993 339994 339995 339999 423110 423120 423130 423140 423210 423220 423310
423320 423330 423390 423410 423420 423430 423440 423450 423460 423490 423510 423520
423610 423620 423690 423710 423720 423730 423740 423810 423820 423830 423840 423850
423860 423910 423920 423930 423940 423990 424110 424120 424130 424210 424310 424320
424330 424340 424410 424420 424430 424440 424450 424460 424470 424480 424490 424510
424520 424590 424610 424690 424710 424720 424810 424820 424910 424920 424930 424940
424950 424990 425110 425120 441110 441120 441210 441222 441228 441310 441320 442110
442210 442291 442299 443141 443142 444110 444120 444130 444190 444210 444220 445110
445120 445210 445220 445230 445291 445292 445299 445310 446110 446120 446130 446191
446199 447110 447190 448110 448120 448130 448140 448150 448190 448210 448310 448320
451110 451120 451130 451140 451211 451212 452210 452311 452319 453110 453210 453220
453310 453910 453920 453930 453991 453998 454110 454210 454310 454390 481111 481112
481211 481212 481219 482111 482112 483111 483112 483113 483114 483211 483212 484110
484121 484122 484210 484220 484230 485111 485112 485113 485119 485210 485310 485320
485410 485510 485991 485999 486110 486210 486910 486990 487110 487210 487990 488111
488119 488190 488210 488310 488320 488330 488390 488410 488490 488510 488991 488999
491110 492110 492210 493110 493120 493130 493190 511110 511120 511130 511140 511191
511199 511210 512110 512120 512131 512132 512191 512199 512230 512240 512250 512290
515111 515112 515120 515210 517311 517312 517410 517911 517919 518210 519110 519120
519130 519190 521110 522110 522120 522130 522190 522210 522220 522291 522292 522293
522294 522298 522310 522320 522390 523110 523120 523130 523140 523210 523910 523920
523930 523991 523999 524113 524114 524126 524127 524128 524130 524210 524291 524292
524298 525110 525120 525190 525910 525920 525990 531110 531120 531130 531190 531210
531311 531312 531320 531390 532111 532112 532120 532210 532281 532282 532283 532284
532289 532310 532411 532412 532420 532490 533110 541110 541120 541191 541199 541211
541213 541214 541219 541310 541320 541330 541340 541350 541360 541370 541380 541410
541420 541430 541490 541511 541512 541513 541519 541611 541612 541613 541614 541618
541620 541690 541713 541714 541715 541720 541810 541820 541830 541840 541850 541860
541870 541890 541910 541921 541922 541930 541940 541990 551111 551112 551114 561110
561210 561311 561312 561320 561330 561410 561421 561422 561431 561439 561440 561450
561491 561492 561499 561510 561520 561591 561599 561611 561612 561613 561621 561622
561710 561720 561730 561740 561790 561910 561920 561990 562111 562112 562119 562211
562212 562213 562219 562910 562920 562991 562998 611110 611210 611310 611410 611420
611430 611511 611512 611513 611519 611610 611620 611630 611691 611692 611699 611710
621111 621112 621210 621310 621320 621330 621340 621391 621399 621410 621420 621491
621492 621493 621498 621511 621512 621610 621910 621991 621999 622110 622210 622310
623110 623210 623220 623311 623312 623990 624110 624120 624190 624210 624221 624229
624230 624310 624410 711110 711120 711130 711190 711211 711212 711219 711310 711320
711410 711510 712110 712120 712130 712190 713110 713120 713210 713290 713910 713920
713930 713940 713950 713990 721110 721120 721191 721199 721211 721214 721310 722310
722320 722330 722410 722511 722513 722514 722515 811111 811112 811113 811118 811121
811122 811191 811192 811198 811211 811212 811213 811219 811310 811411 811412 811420
811430 811490 812111 812112 812113 812191 812199 812210 812220 812310 812320 812331
812332 812910 812921 812922 812930 812990 813110 813211 813212 813219 813311 813312
813319 813410 813910 813920 813930 813940 813990 814110 921110 921120 921130 921140
921150 921190 922110 922120 922130 922140 922150 922160 922190 923110 923120 923130
923140 924110 924120 925110 925120 926110 926120 926130 926140 926150 927110 928110
928120
"""
