r"""Published tables as the attacker reads them: one frame of cells, each with a status.

**The format.** One Parquet or CSV file (or a frame), one row per published cell:

=============  ==============================================================================
column         meaning
=============  ==============================================================================
``table``      the table's name
key columns    every other column not named below: the cell's classification (text). A
               cell leaves a key empty (null) when its table does not classify by it. A
               cell names every key it is classified by, coarser geography included (a
               block cell also gives its county, if a county table is published).
``status``     ``exact`` | ``suppressed`` | ``rounded`` | ``range`` | ``noisy``
``value``      the published value (null for ``suppressed``; the midpoint is not needed
               for ``range``)
``base``       ``rounded``: the value is the true value rounded to the nearest multiple
               of ``base`` (so ``|true − value| ≤ base/2``)
``lower``,     ``range``: the true value lies in ``[lower, upper]`` (``upper`` may be
``upper``      empty: unbounded)
``law``        ``noisy``: ``laplace`` (density ∝ exp(−|e|/scale)) or ``gaussian`` (standard
               deviation ``scale``); other names are read as ``laplace`` with the given
               scale (an approximation, said in the audit's output)
``scale``      ``noisy``: the law's scale (Laplace b, Gaussian σ), per cell
``establishments``  optional: the public number of establishments (contributors) in the
               cell
``factor``     optional: a group name. Cells sharing a ``factor`` were published as
               ``value = f × true value`` with **one** unknown factor f > 0 common to the
               group (one establishment's distortion factor under noise infusion). The
               attacker knows the ratios: ``value_a·x_c = value_c·x_a`` within a group
               (:mod:`.factors`). Such a cell needs a ``value`` ≥ 0; its status still
               gives its own interval (``range``: the factor's range, or the attacker's
               knowledge of the cell).
=============  ==============================================================================

Every table's cells share one set of classifying keys (its ``by``). A combination absent
from a table is a published exact zero (the table lists every non-zero cell), so the
tables are linked: a cell of table *t* equals the sum of the cells of a finer table
*t'* (``by(t) ⊂ by(t')``) that agree with it on ``by(t)`` — one relation per cell and
per finer table with no published table between them. Values are non-negative.

Errors name the file, the row (1-based, the header is row 0) and the column, never a
value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import scipy.sparse as sp

from eree.errors import DataValidationError

__all__ = [
    "RESERVED",
    "STATUSES",
    "PublishedTables",
    "band_halfwidth",
    "concat",
    "from_frame",
    "read_tables",
]

#: the cell statuses of the format
STATUSES = ("exact", "suppressed", "rounded", "range", "noisy")
#: columns of the format that are not keys
#: a cell's fields after the table and its keys, in the format's column order
_FIELDS = (
    "status",
    "value",
    "base",
    "lower",
    "upper",
    "law",
    "scale",
    "establishments",
    "factor",
)
RESERVED = ("table", *_FIELDS)
_FLOATS = ("value", "base", "lower", "upper", "scale", "establishments")


def band_halfwidth(law: str, scale: float, level: float) -> float:
    """Half-width q of the central ``level`` band of a noise law: P(|e| ≤ q) = level.

    Laplace(b): q = b ln(1/(1 − level)); Gaussian(σ): q = σ Φ⁻¹((1 + level)/2).
    """
    from scipy.stats import norm

    if law == "gaussian":
        return float(scale * norm.ppf((1.0 + level) / 2.0))
    return float(scale * math.log(1.0 / (1.0 - level)))


@dataclass(frozen=True)
class PublishedTables:
    """Published cells with their status, in the documented format.

    Attributes:
        cells: one row per cell (row ``i`` is cell ``i``): ``table``, the key columns,
            ``status``, ``value``, ``base``, ``lower``, ``upper``, ``law``, ``scale``,
            ``establishments`` (nulls where they do not apply).
        keys: the key columns, in order.
        tables: each table's name and its classifying keys.
        relations: the additivity relations (+1 the cell, −1 each part; relations ×
            cells), or None to derive them from the tables' keys (:meth:`derived_relations`).
        integer: the values are counts (whole numbers).
        source: where the tables came from (for messages).
        finest: per cell, whether it is a cell of a finest table (for establishments'
            contributions); None: the tables no other table refines.
    """

    cells: pl.DataFrame
    keys: tuple[str, ...]
    tables: dict[str, tuple[str, ...]]
    relations: sp.csr_matrix | None = None
    integer: bool = True
    source: str = "tables"
    finest: np.ndarray | None = None

    @property
    def n_cells(self) -> int:
        """Number of cells."""
        return self.cells.height

    def status_counts(self) -> dict[str, int]:
        """Cells per status (public: the status is published)."""
        s = self.cells.get_column("status").value_counts()
        return {str(r["status"]): int(r["count"]) for r in s.to_dicts()}

    def bounds(self, *, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Each cell's interval from its own status (before linking the tables).

        exact: [v, v]; suppressed: [0, ∞); rounded: [v − base/2, v + base/2]; range:
        [lower, upper]; noisy: the central ``level`` band of its law around v (not a
        certainty: the audit says so). Clipped below at 0; for counts, rounded inward to
        whole numbers.
        """
        c = self.cells
        st = c.get_column("status").to_numpy()
        v = c.get_column("value").fill_null(np.nan).to_numpy().astype(np.float64)
        base = c.get_column("base").fill_null(0.0).to_numpy().astype(np.float64)
        lo_r = c.get_column("lower").fill_null(0.0).to_numpy().astype(np.float64)
        hi_r = c.get_column("upper").fill_null(np.inf).to_numpy().astype(np.float64)
        scale = c.get_column("scale").fill_null(0.0).to_numpy().astype(np.float64)
        law = c.get_column("law").fill_null("laplace").to_numpy()
        lo = np.zeros(c.height)
        hi = np.full(c.height, np.inf)
        m = st == "exact"
        lo[m], hi[m] = v[m], v[m]
        m = st == "rounded"
        lo[m], hi[m] = v[m] - base[m] / 2.0, v[m] + base[m] / 2.0
        m = st == "range"
        lo[m], hi[m] = lo_r[m], hi_r[m]
        m = np.flatnonzero(st == "noisy")
        if m.size:
            q = np.array([band_halfwidth(str(law[i]), float(scale[i]), level) for i in m])
            lo[m], hi[m] = v[m] - q, v[m] + q
        lo = np.maximum(lo, 0.0)
        if self.integer:
            lo = np.ceil(lo - 1e-9)
            hi = np.where(np.isfinite(hi), np.floor(hi + 1e-9), np.inf)
        return lo, hi

    def derived_relations(self) -> sp.csr_matrix:
        """Relations from the tables' keys (see the module docstring)."""
        if self.relations is not None:
            return self.relations
        names = list(self.tables)
        by = {t: frozenset(self.tables[t]) for t in names}
        tcol = self.cells.get_column("table").to_numpy()
        rows: list[np.ndarray] = []
        cols: list[np.ndarray] = []
        vals: list[np.ndarray] = []
        n_rel = 0
        idx = {t: np.flatnonzero(tcol == t) for t in names}
        for t in names:
            finer = [u for u in names if by[t] < by[u]]
            covers = [u for u in finer if not any(by[t] < by[w] < by[u] for w in finer)]
            for u in covers:
                keys = sorted(by[t])
                parent = (
                    self.cells[idx[t]]
                    .select(keys)
                    .with_columns(pl.Series("_p", idx[t], dtype=pl.Int64))
                )
                child = (
                    self.cells[idx[u]]
                    .select(keys)
                    .with_columns(pl.Series("_c", idx[u], dtype=pl.Int64))
                )
                j = child.join(parent, on=keys, how="inner", nulls_equal=True)
                pr = parent.get_column("_p").to_numpy()
                rel = {int(p): n_rel + k for k, p in enumerate(pr)}
                n_rel += pr.size
                rows.append(np.array([rel[int(p)] for p in pr], dtype=np.int64))
                cols.append(pr)
                vals.append(np.ones(pr.size))
                cp = j.get_column("_p").to_numpy()
                rows.append(np.array([rel[int(p)] for p in cp], dtype=np.int64))
                cols.append(j.get_column("_c").to_numpy())
                vals.append(-np.ones(cp.size))
        if not rows:
            return sp.csr_matrix((0, self.n_cells))
        return sp.csr_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
            shape=(n_rel, self.n_cells),
        )


def _fail(path: str, row: int | None, column: str, what: str) -> DataValidationError:
    return DataValidationError(what, file=path, row=row, column=column, rule="table-format")


def from_frame(
    frame: pl.DataFrame,
    *,
    source: str = "tables",
    integer: bool = True,
    relations: sp.csr_matrix | None = None,
) -> PublishedTables:
    """Validate a frame in the format and return its :class:`PublishedTables`.

    Raises:
        DataValidationError: naming the source, row and column of the first problem.
    """
    for col in ("table", "status"):
        if col not in frame.columns:
            raise _fail(source, None, col, "missing (the format needs table and status)")
    frame = frame.with_columns(  # an empty text field is an empty cell
        [
            pl.when(pl.col(c).str.strip_chars() == "").then(None).otherwise(pl.col(c)).alias(c)
            for c, t in frame.schema.items()
            if t == pl.Utf8
        ]
    )
    keys = tuple(c for c in frame.columns if c not in RESERVED)
    if not keys:
        raise _fail(source, None, "table", "no key columns besides the format's own")
    casts: list[pl.Expr] = [pl.col("table").cast(pl.Utf8), pl.col("status").cast(pl.Utf8)]
    for c in keys:
        casts.append(pl.col(c).cast(pl.Utf8))
    for c in _FLOATS:
        if c in frame.columns:
            try:
                frame = frame.with_columns(pl.col(c).cast(pl.Float64, strict=True))
            except pl.exceptions.InvalidOperationError:
                bad = frame.with_row_index("_r").filter(
                    pl.col(c).is_not_null() & pl.col(c).cast(pl.Float64, strict=False).is_null()
                )
                r = int(bad.get_column("_r")[0]) + 1 if bad.height else None
                raise _fail(source, r, c, "not a number") from None
        else:
            casts.append(pl.lit(None, dtype=pl.Float64).alias(c))
    if "law" not in frame.columns:
        casts.append(pl.lit(None, dtype=pl.Utf8).alias("law"))
    else:
        casts.append(pl.col("law").cast(pl.Utf8).str.to_lowercase())
    if "factor" not in frame.columns:
        casts.append(pl.lit(None, dtype=pl.Utf8).alias("factor"))
    else:
        casts.append(pl.col("factor").cast(pl.Utf8))
    cells = frame.with_columns(casts).select(["table", *keys, *_FIELDS])
    rowi = pl.int_range(1, pl.len() + 1).alias("_row")
    chk = cells.with_columns(rowi)

    def first_bad(expr: pl.Expr, column: str, what: str) -> None:
        bad = chk.filter(expr)
        if bad.height:
            raise _fail(source, int(bad.get_column("_row")[0]), column, what)

    first_bad(pl.col("table").is_null(), "table", "empty")
    first_bad(
        ~pl.col("status").is_in(list(STATUSES)), "status", f"not one of {', '.join(STATUSES)}"
    )
    st = pl.col("status")
    first_bad(
        (st != "suppressed") & (st != "range") & pl.col("value").is_null(),
        "value",
        "empty for a published cell",
    )
    first_bad(pl.col("value").is_not_null() & ~pl.col("value").is_finite(), "value", "not finite")
    first_bad(
        (st == "rounded") & ~(pl.col("base") > 0).fill_null(False),
        "base",
        "a rounded cell needs a positive base",
    )
    first_bad((st == "range") & pl.col("lower").is_null(), "lower", "a range needs a lower bound")
    first_bad(
        (st == "range") & (pl.col("upper") < pl.col("lower")).fill_null(False),
        "upper",
        "below lower",
    )
    first_bad(
        (st == "noisy") & ~(pl.col("scale") > 0).fill_null(False),
        "scale",
        "a noisy cell needs a positive scale",
    )
    fac = pl.col("factor").is_not_null()
    first_bad(
        fac & (st == "suppressed"),
        "factor",
        "a suppressed cell has no published value to share a factor",
    )
    first_bad(
        fac & pl.col("value").is_null(),
        "value",
        "a cell with a factor needs its published value",
    )
    first_bad(
        fac & (pl.col("value") < 0).fill_null(False),
        "value",
        "negative for a cell with a factor (f > 0 and true values ≥ 0)",
    )
    tables: dict[str, tuple[str, ...]] = {}
    shapes = (
        chk.with_columns([pl.col(k).is_not_null().alias(f"_n_{k}") for k in keys])
        .group_by(["table", *[f"_n_{k}" for k in keys]], maintain_order=True)
        .agg(pl.col("_row").min())
    )
    for shape in shapes.to_dicts():
        by = tuple(k for k in keys if shape[f"_n_{k}"])
        t = str(shape["table"])
        if t in tables and tables[t] != by:
            raise _fail(
                source,
                int(shape["_row"]),
                "table",
                f"table {t!r} classifies its cells by different keys",
            )
        tables[t] = by
    dup = chk.filter(pl.struct(["table", *keys]).is_duplicated())
    if dup.height:
        raise _fail(
            source,
            int(dup.get_column("_row").max()),  # type: ignore[arg-type]
            "table",
            "a cell listed twice",
        )
    return PublishedTables(cells, keys, tables, relations, integer, source)


def read_tables(path: str | Path, *, integer: bool = True) -> PublishedTables:
    """Read a file in the format (Parquet, or CSV read as text)."""
    p = Path(path)
    if not p.is_file():
        raise DataValidationError("no such file", file=str(p))
    try:
        if p.suffix == ".parquet":
            frame = pl.read_parquet(p)
        else:
            frame = pl.read_csv(p, infer_schema_length=0)
    except (pl.exceptions.PolarsError, OSError) as e:
        raise DataValidationError(
            f"not a readable table ({type(e).__name__})", file=str(p)
        ) from None
    return from_frame(frame, source=str(p), integer=integer)


def concat(parts: Sequence[PublishedTables]) -> PublishedTables:
    """Several tables' cells as one set (derived relations; keys united)."""
    keys: list[str] = []
    for p in parts:
        keys += [k for k in p.keys if k not in keys]
    frames = [
        p.cells.with_columns(
            [pl.lit(None, dtype=pl.Utf8).alias(k) for k in keys if k not in p.keys]
        ).select(["table", *keys, *_FIELDS])
        for p in parts
    ]
    tables: dict[str, tuple[str, ...]] = {}
    for p in parts:
        tables |= p.tables
    return PublishedTables(
        pl.concat(frames),
        tuple(keys),
        tables,
        None,
        all(p.integer for p in parts),
        parts[0].source if parts else "",
    )
