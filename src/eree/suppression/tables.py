r"""Linked hierarchical tables: establishments tabulated into cells, with their additivity.

A table layout is a set of **dimensions**, each a hierarchy of levels from a total level
(no column) down to the finest level (a column of the establishment frame), and a list of
**tables**: the combinations of one level per dimension that are published. Every cell is
one group of establishments of one table; its statistics are the number of establishments
(public), and per confidential attribute the sum and the largest contributions (which the
primary rules need).

**Additivity.** For a cell :math:`c` of table :math:`t` and a dimension :math:`d` whose
level in :math:`t` is not the finest, if the table :math:`t'` that is :math:`t` with
:math:`d` one level finer is published, then

.. math:: x_c = \sum_{c' \in t',\ \mathrm{parent}_d(c') = c} x_{c'} ,

one *relation* per (cell, dimension). Children that hold no establishment are not cells:
they are public zeros (the number of establishments in any cell is public). The relations
are the rows of a sparse matrix :math:`A` (+1 for the parent, −1 for each child) with
:math:`A x = 0` for every attribute.

:func:`qcew_layout` is the QCEW layout (Webb et al., ``papers/004_*`` §2.2; BLS QCEW
aggregation levels): area (state → county) × ownership (total covered → ownership sector)
× industry (total → domain → supersector → NAICS sector → NAICS-3 → -4 → -5 → -6), with
the total-covered ownership published at the industry total only (BLS aggregation levels
50–58 for the state, 70–78 for counties). :func:`marginals_layout` builds the simple
"total plus one-way marginals" tables of Appendix E.

Cell codes need not be globally unique: a cell is identified by its *path* in each
dimension (the codes of every level down to its own, joined by ``/``), so a county code
``"1"`` under two states gives two cells. The displayed code is the last element of the
path (the dimension's ``total_code`` at the total level).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import scipy.sparse as sp

from eree.data.qcew import (
    ALL_INDUSTRIES,
    ALL_OWNERSHIPS,
    INDUSTRY_LEVELS,
    QCEW_SECTOR_LABEL,
    aggregation_level,
    domain_of_supersector,
)
from eree.errors import DataValidationError

__all__ = [
    "ESTABLISHMENTS",
    "Dimension",
    "LinkedTables",
    "TableLayout",
    "marginals_layout",
    "prepare_qcew_frame",
    "qcew_layout",
    "tabulate",
    "top_column",
]

#: public establishment-count column of the cell frame
ESTABLISHMENTS = "establishments"

#: joins a cell's codes into its path within a dimension (tabulation only): the ASCII unit
#: separator, which a public code may not hold (:func:`tabulate` refuses it) — codes hold
#: "/", "+" or any other printable character as data
_SEP = "\x1f"


def top_column(attribute: str, rank: int) -> str:
    """Column of the cell frame holding the ``rank``-th largest contribution (1-based)."""
    return f"{attribute}__x{rank}"


@dataclass(frozen=True)
class Dimension:
    """One hierarchical dimension of the linked tables.

    Attributes:
        name: dimension name; the cell frame has columns ``name`` (the code) and
            ``name_level`` (the level name).
        levels: ``(level name, column)`` from coarsest to finest; the first level is the
            total (column ``None``); every other level names a column of the frame.
        total_code: the code shown for the total level.
    """

    name: str
    levels: tuple[tuple[str, str | None], ...]
    total_code: str = "total"

    def __post_init__(self) -> None:
        if not self.levels or self.levels[0][1] is not None:
            raise ValueError(f"dimension {self.name!r}: the first level must be the total (None)")
        if any(col is None for _, col in self.levels[1:]):
            raise ValueError(f"dimension {self.name!r}: only the first level may be the total")
        names = [n for n, _ in self.levels]
        if len(set(names)) != len(names):
            raise ValueError(f"dimension {self.name!r}: level names must be distinct")

    def index(self, level: str) -> int:
        """Position of the level named ``level`` (a ValueError if there is none)."""
        for i, (n, _) in enumerate(self.levels):
            if n == level:
                return i
        raise ValueError(f"dimension {self.name!r} has no level {level!r}")

    @property
    def columns(self) -> list[str]:
        """The frame columns of the levels (the total level has none)."""
        return [c for _, c in self.levels if c is not None]


@dataclass(frozen=True)
class TableLayout:
    """Dimensions and the published tables (one level name per dimension each).

    Attributes:
        dimensions: the hierarchies.
        tables: level combinations that are published, e.g. ``("county", "own", "naics4")``.
        table_codes: optional code per table (QCEW aggregation level), same order.
    """

    dimensions: tuple[Dimension, ...]
    tables: tuple[tuple[str, ...], ...]
    table_codes: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        for t in self.tables:
            if len(t) != len(self.dimensions):
                raise ValueError(f"table {t} must name one level per dimension")
            for d, lvl in zip(self.dimensions, t, strict=True):
                d.index(lvl)
        if len(set(self.tables)) != len(self.tables):
            raise ValueError("tables must be distinct")
        if self.table_codes and len(self.table_codes) != len(self.tables):
            raise ValueError("table_codes must have one code per table")

    @property
    def columns(self) -> list[str]:
        """Frame columns the layout reads."""
        return [c for d in self.dimensions for c in d.columns]

    def level_indices(self, table: tuple[str, ...]) -> tuple[int, ...]:
        """Level index, per dimension, of the levels of ``table``."""
        return tuple(d.index(lvl) for d, lvl in zip(self.dimensions, table, strict=True))


# --------------------------------------------------------------------------------------
# QCEW
# --------------------------------------------------------------------------------------

#: the industry levels of the QCEW tables, coarsest first: (level name, frame column); the
#: sector level reads the QCEW sector codes (``qcew_sector``, :func:`prepare_qcew_frame`)
_INDUSTRY_LEVELS: tuple[tuple[str, str | None], ...] = tuple(
    (name, "qcew_sector" if name == "sector" else column) for name, column, _ in INDUSTRY_LEVELS
)


def qcew_layout(*, domain: bool = True, county: str = "cnty", own: str = "own") -> TableLayout:
    """The QCEW linked tables for one state.

    Area: state (code ``"state"``) → county (column ``county``). Ownership: total covered
    (code ``"0"``) → ownership sector (column ``own``). Industry: total (code ``"10"``) →
    domain (101 goods-producing, 102 service-providing) → supersector → NAICS sector (QCEW
    codes, ``31-33``, ``44-45``, ``48-49``) → NAICS-3 → -4 → -5 → -6. Published tables:
    for the state and each county, total covered at the industry total (agglvl 50/70),
    and every industry level by ownership (51–58/71–78). Use :func:`prepare_qcew_frame` to
    add the ``domain`` and ``qcew_sector`` columns.

    Args:
        domain: include the domain level (agglvl 52/72).
        county, own: column names of the county and the ownership code.
    """
    ind = tuple(lv for lv in _INDUSTRY_LEVELS if domain or lv[0] != "domain")
    dims = (
        Dimension("area", (("state", None), ("county", county)), total_code="state"),
        Dimension("own", (("total", None), ("own", own)), total_code=str(ALL_OWNERSHIPS)),
        Dimension("industry", ind, total_code=ALL_INDUSTRIES),
    )
    tables: list[tuple[str, str, str]] = []
    codes: list[str] = []
    for area in ("state", "county"):
        tables.append((area, "total", "total"))
        codes.append(str(aggregation_level(area, by_ownership=False)))
        for lvl, _ in ind:
            tables.append((area, "own", lvl))
            codes.append(str(aggregation_level(area, lvl)))
    return TableLayout(dims, tuple(tables), tuple(codes))


def prepare_qcew_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """Add the QCEW industry columns and cast the public columns to text.

    The industry columns: ``domain``, ``qcew_sector``; NAICS prefixes and
    ``super_sector`` when absent.

    Raises:
        DataValidationError: no ``naics`` column, or a code that cannot be split (the
            code is public; no confidential value is printed).
    """
    from eree.data.establishments import NAICS_DERIVED, derive_naics_columns

    if "naics" not in frame.columns:
        raise DataValidationError(
            "the QCEW tables need the 6-digit 'naics' column", file="<frame>", column="naics"
        )
    public = ["naics", "cnty", "own", *NAICS_DERIVED]
    df = frame.with_columns(
        [pl.col(c).cast(pl.Utf8) for c in public if c in frame.columns and c != "naics"]
    )
    df = df.with_columns(pl.col("naics").cast(pl.Utf8).str.replace(r"\.0$", ""))
    missing = tuple(c for c in NAICS_DERIVED if c not in df.columns)
    df = derive_naics_columns(df, missing, file="<frame>")
    for c in ("naics3", "naics4", "naics5"):
        bad = df.get_column(c) != df.get_column("naics").str.slice(0, int(c[-1]))
        if bool(bad.any()):
            row = int(bad.arg_true()[0])
            raise DataValidationError(
                f"{c!r} is not the prefix of 'naics'; NAICS levels must nest",
                file="<frame>",
                row=row + 1,
                column=c,
                rule="hierarchy",
            )
    sector = pl.col("naics").str.slice(0, 2)
    return df.with_columns(
        domain_of_supersector(pl.col("super_sector")).alias("domain"),
        sector.replace(QCEW_SECTOR_LABEL).alias("qcew_sector"),
    )


def marginals_layout(columns: Sequence[str], *, total_code: str = "total") -> TableLayout:
    """The grand total and the one-way marginal of each column (no cross tables).

    Appendix E of the QCEW paper: total wages, wages by county, wages by sector.
    """
    dims = tuple(Dimension(c, (("total", None), (c, c)), total_code=total_code) for c in columns)
    tables = [tuple("total" for _ in columns)]
    for i, c in enumerate(columns):
        tables.append(tuple(c if j == i else "total" for j in range(len(columns))))
    return TableLayout(dims, tuple(tables))


# --------------------------------------------------------------------------------------
# Tabulation
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LinkedTables:
    """Cells of the linked tables and their additivity relations.

    Attributes:
        layout: the table layout.
        cells: one row per cell, cell ``i`` at row ``i``: ``table`` (index into
            ``layout.tables``), ``table_code``, per dimension ``<dim>_level`` and ``<dim>``
            (the code), :data:`ESTABLISHMENTS` (public), and per attribute ``a`` its sum
            and the largest contributions :func:`top_column` ``(a, r)``, r = 1..``top``
            (0 where the cell has fewer establishments). Sums and contributions are
            confidential.
        relations: sparse CSR matrix, one row per relation (+1 parent, −1 children);
            ``relations @ cells[a] == 0`` for every attribute.
        relation_dimension: the dimension index of each relation.
        attributes: the tabulated confidential attributes.
        top: number of largest contributions kept per cell.
        levels: cells × dimensions array of level indices (0 = total).
        ancestors: per dimension, a cells × levels array: entry ``[i, k]`` identifies the
            cell's ancestor path at level ``k`` (−1 when ``k`` is finer than the cell's
            level); cells with equal entries lie in the same subtree of level ``k``.
    """

    layout: TableLayout
    cells: pl.DataFrame
    relations: sp.csr_matrix
    relation_dimension: np.ndarray
    attributes: tuple[str, ...]
    top: int
    levels: np.ndarray
    ancestors: tuple[np.ndarray, ...]

    def parents(self) -> np.ndarray:
        """Cells × dimensions array: the parent cell in each dimension.

        −1: none, i.e. the cell is at the total level or its parent table is not
        published.
        """
        n, dims = self.n_cells, len(self.layout.dimensions)
        out = np.full((n, dims), -1, dtype=np.int64)
        coo = self.relations.tocoo()
        par = np.full(self.n_relations, -1, dtype=np.int64)
        pos = coo.data > 0
        par[coo.row[pos]] = coo.col[pos]
        ch = ~pos
        out[coo.col[ch], self.relation_dimension[coo.row[ch]]] = par[coo.row[ch]]
        return out

    def branch_distance(self) -> np.ndarray:
        """Cells × dimensions array: levels up to the nearest branching ancestor.

        How many levels up, in each dimension, the nearest ancestor with at least two
        children is (``inf``: none).

        A perturbation of a cell can only be balanced inside the subtree of such an
        ancestor (below it the cell's chain of single children moves as one).
        """
        n, dims = self.n_cells, len(self.layout.dimensions)
        nnz = np.diff(self.relations.indptr)
        coo = self.relations.tocoo()
        pos = coo.data > 0
        kids = np.zeros((n, dims), dtype=np.int64)
        kids[coo.col[pos], self.relation_dimension[coo.row[pos]]] = nnz[coo.row[pos]] - 1
        parent = self.parents()
        dist = np.full((n, dims), np.inf)
        for d in range(dims):
            order = np.argsort(self.levels[:, d], kind="stable")
            for c in order:  # parents (coarser levels) first
                p = parent[c, d]
                if p < 0:
                    continue
                dist[c, d] = 1.0 if kids[p, d] >= 2 else 1.0 + dist[p, d]
        return dist

    def subtree(self, cell: int, up: int) -> np.ndarray:
        """Boolean mask of the cells in the subtree of the cell's ancestor.

        The subtree, in every dimension, of the cell's ancestor ``up`` levels above it
        (``up`` ≥ the depth: the whole dimension).
        """
        mask = np.ones(self.n_cells, dtype=bool)
        for d in range(len(self.layout.dimensions)):
            k = max(0, int(self.levels[cell, d]) - up)
            if k == 0:
                continue
            anc = self.ancestors[d]
            mask &= anc[:, k] == anc[cell, k]
        return mask

    @property
    def n_cells(self) -> int:
        """Number of cells."""
        return self.cells.height

    @property
    def n_relations(self) -> int:
        """Number of additivity relations."""
        return int(self.relations.shape[0])

    def values(self, attribute: str) -> np.ndarray:
        """The true cell totals of ``attribute`` (confidential), float64."""
        return self.cells.get_column(attribute).to_numpy().astype(np.float64)

    def counts(self) -> np.ndarray:
        """Number of establishments per cell (public)."""
        return self.cells.get_column(ESTABLISHMENTS).to_numpy().astype(np.int64)

    @property
    def key_columns(self) -> list[str]:
        """Key columns of a cell: ``table_code``, then each dimension's level and value."""
        cols = ["table_code"]
        for d in self.layout.dimensions:
            cols += [f"{d.name}_level", d.name]
        return cols

    def check_additivity(self, attribute: str, *, rtol: float = 1e-9) -> float:
        """Largest relative violation of ``A x = 0`` (a self-check; 0 for exact data)."""
        x = self.values(attribute)
        r = self.relations @ x
        scale = max(1.0, float(np.abs(x).max(initial=0.0)))
        return float(np.abs(r).max(initial=0.0) / scale)


def tabulate(
    frame: pl.DataFrame,
    layout: TableLayout,
    attributes: Sequence[str],
    *,
    top: int = 2,
    check_values: bool = True,
) -> LinkedTables:
    """Tabulate establishments into the cells of ``layout`` and build the relations.

    Args:
        frame: one row per establishment; the layout's columns (public, cast to text)
            and the attributes (non-negative numbers).
        layout: the linked-table layout (:func:`qcew_layout`, :func:`marginals_layout`).
        attributes: confidential attributes to tabulate.
        top: number of largest contributions kept per cell (≥ 2 for the p% rule, ≥ n
            for the (n, k) dominance rule).
        check_values: reject negative or non-finite attribute values (turn off only to
            add up noisy answers).

    Raises:
        DataValidationError: a layout column or attribute is missing, an attribute is
            negative or not finite, or levels do not nest.
    """
    if top < 1:
        raise ValueError("top must be >= 1")
    attributes = tuple(attributes)
    need = [*layout.columns, *attributes]
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise DataValidationError(
            f"columns {missing} are missing from the establishment frame",
            file="<frame>",
            rule="missing-column",
        )
    df = frame.select(
        [pl.col(c).cast(pl.Utf8) for c in dict.fromkeys(layout.columns)]
        + [pl.col(a).cast(pl.Float64) for a in attributes]
    )
    for c in layout.columns:
        if df.get_column(c).null_count():
            raise DataValidationError(
                "public attribute has missing values", file="<frame>", column=c, rule="missing"
            )
        if bool(df.get_column(c).str.contains(_SEP, literal=True).any()):
            raise DataValidationError(
                "a public code holds the control character U+001F",
                file="<frame>",
                column=c,
                rule="code",
            )
    for a in attributes if check_values else ():
        s = df.get_column(a)
        if s.null_count() or not bool((s.is_finite() & (s >= 0)).all()):
            raise DataValidationError(
                "confidential attribute must be finite and non-negative",
                file="<frame>",
                column=a,
                rule="nonnegative",
            )

    # path column per dimension and level: codes joined by _SEP (total level: "")
    path_exprs: list[pl.Expr] = []
    for d in layout.dimensions:
        dim_cols = d.columns
        for i in range(1, len(d.levels)):
            path_exprs.append(
                pl.concat_str([pl.col(c) for c in dim_cols[:i]], separator=_SEP).alias(
                    f"__{d.name}__{i}"
                )
            )
    df = df.with_columns(path_exprs)

    aggs: list[pl.Expr] = [pl.len().cast(pl.Int64).alias(ESTABLISHMENTS)]
    for a in attributes:
        aggs.append(pl.col(a).sum().alias(a))
        aggs.append(pl.col(a).top_k(top).alias(f"__top_{a}"))

    parts: list[pl.DataFrame] = []
    for t_idx, t in enumerate(layout.tables):
        levels = layout.level_indices(t)
        by = [f"__{d.name}__{lv}" for d, lv in zip(layout.dimensions, levels, strict=True) if lv]
        g = df.group_by(by if by else pl.lit(0).alias("__all")).agg(aggs)
        cols: list[pl.Expr] = [pl.lit(t_idx, dtype=pl.Int32).alias("table")]
        code = layout.table_codes[t_idx] if layout.table_codes else str(t_idx)
        cols.append(pl.lit(code).alias("table_code"))
        for d, lv in zip(layout.dimensions, levels, strict=True):
            path = pl.col(f"__{d.name}__{lv}") if lv else pl.lit("")
            cols.append(pl.lit(d.levels[lv][0]).alias(f"{d.name}_level"))
            if lv:
                cols.append(path.str.split(_SEP).list.last().alias(d.name))
            else:
                cols.append(pl.lit(d.total_code).alias(d.name))
            cols.append(path.alias(f"__path_{d.name}"))
        cols.append(pl.col(ESTABLISHMENTS))
        for a in attributes:
            cols.append(pl.col(a))
            lst = pl.col(f"__top_{a}").list.sort(descending=True)
            for r in range(top):
                cols.append(
                    lst.list.get(r, null_on_oob=True).fill_null(0.0).alias(top_column(a, r + 1))
                )
        parts.append(g.select(cols))
    cells = pl.concat(parts, how="vertical").sort(
        ["table", *[f"__path_{d.name}" for d in layout.dimensions]]
    )
    cells = cells.with_row_index("cell").with_columns(pl.col("cell").cast(pl.Int64))

    relations, rel_dim = _relations(cells, layout)
    level_idx = np.column_stack(
        [
            cells.get_column(f"{d.name}_level")
            .replace_strict({n: i for i, (n, _) in enumerate(d.levels)}, return_dtype=pl.Int32)
            .to_numpy()
            for d in layout.dimensions
        ]
    )
    ancestors = []
    for d in layout.dimensions:
        path_s = cells.get_column(f"__path_{d.name}")
        split = path_s.str.split(_SEP)
        depth = len(d.levels)
        anc = np.full((cells.height, depth), -1, dtype=np.int64)
        anc[:, 0] = 0
        for k in range(1, depth):
            prefix = split.list.head(k).list.join(_SEP)
            has = (split.list.len() >= k) & (path_s != "")
            ids = prefix.cast(pl.Categorical).to_physical().cast(pl.Int64).to_numpy()
            anc[:, k] = np.where(has.to_numpy(), ids, -1)
        ancestors.append(anc)
    cells = cells.drop([f"__path_{d.name}" for d in layout.dimensions])
    return LinkedTables(
        layout, cells, relations, rel_dim, attributes, top, level_idx, tuple(ancestors)
    )


def _relations(cells: pl.DataFrame, layout: TableLayout) -> tuple[sp.csr_matrix, np.ndarray]:
    """One relation per (parent cell, dimension) whose finer table is published."""
    dims = layout.dimensions
    table_index = {t: i for i, t in enumerate(layout.tables)}
    key_cols = [f"__path_{d.name}" for d in dims]
    keyed = cells.select(["cell", "table", *key_cols])
    rows_parent: list[np.ndarray] = []
    rows_child: list[np.ndarray] = []
    rows_dim: list[np.ndarray] = []
    for t_idx, t in enumerate(layout.tables):
        levels = layout.level_indices(t)
        for k, d in enumerate(dims):
            lv = levels[k]
            if lv == 0:
                continue
            parent_t = tuple(
                d2.levels[levels[j] - 1][0] if j == k else t[j] for j, d2 in enumerate(dims)
            )
            p_idx = table_index.get(parent_t)
            if p_idx is None:
                continue
            children = keyed.filter(pl.col("table") == t_idx)
            pcol = f"__path_{d.name}"
            parent_path = (
                pl.lit("") if lv == 1 else pl.col(pcol).str.replace(f"{_SEP}[^{_SEP}]*$", "")
            )
            children = children.with_columns(parent_path.alias(pcol)).rename({"cell": "child"})
            parents = keyed.filter(pl.col("table") == p_idx).rename({"cell": "parent"})
            j = children.join(parents.drop("table"), on=key_cols, how="left")
            if j.get_column("parent").null_count():  # pragma: no cover - tabulation bug
                raise RuntimeError("a child cell has no parent cell")
            rows_parent.append(j.get_column("parent").to_numpy())
            rows_child.append(j.get_column("child").to_numpy())
            rows_dim.append(np.full(j.height, k, dtype=np.int32))
    n = cells.height
    if not rows_parent:
        return sp.csr_matrix((0, n)), np.zeros(0, dtype=np.int32)
    parent = np.concatenate(rows_parent)
    child = np.concatenate(rows_child)
    dim = np.concatenate(rows_dim)
    # relation id per distinct (dimension, parent)
    key = dim.astype(np.int64) * n + parent
    uniq, rel = np.unique(key, return_inverse=True)
    n_rel = uniq.size
    rel_parent = (uniq % n).astype(np.int64)
    rel_dim = (uniq // n).astype(np.int32)
    r = np.concatenate([np.arange(n_rel), rel])
    c = np.concatenate([rel_parent, child])
    v = np.concatenate([np.ones(n_rel), -np.ones(child.size)])
    a = sp.csr_matrix((v, (r, c)), shape=(n_rel, n))
    return a, rel_dim
