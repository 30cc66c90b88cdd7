r"""A coarsened WAC publication in the LODES WAC layout: values, and their bounds.

See docs/coarsening.md#lodes-wac-files. The input is a coarsened publication of the WAC
families by block in the reconstruction audit's table format (``table``, ``block``, the
attributes, ``status`` exact | rounded | range | suppressed, ``value``, ``base``,
``lower``, ``upper``; :func:`eree.suppression.coarsening.jobs.coarsen_jobs`). Three
files in the LODES WAC layout (:data:`eree.release.layouts.WAC_COLUMNS`) are written:

* ``[st]_wac_[SEG]_[JT]_[year].csv.gz`` — **one consistent set of whole numbers within
  every published interval**: per block, the point closest (in L1) to the published
  values (a rounded value, a range's midpoint rounded down; a suppressed cell has no
  target) subject to the layout's own sums (each family adds up to C000; each CA cell
  to its row of the age × education cells). It is computed from the published
  intervals only (an LP over them, never the true values), so it tells no more than
  they do; a reader of the layout gets the sums LODES promises. The targets are whole,
  but the relations are not a tree of partitions (C000 is the parent of six), so the
  LP's optimum need not be whole: a block whose optimum is not is solved again as an
  integer program; the result is checked whole and consistent.
* ``…_lower.csv.gz`` and ``…_upper.csv.gz`` — each cell's **published interval**,
  ``lower ≤ true ≤ upper`` (equal: published exactly; a rounded cell ± base/2, to whole
  jobs; a range its class); a suppressed cell has lower 0 and an empty upper. Every zero
  cell is published exactly, so a reader also knows that a cell whose bounds differ
  holds at least one job: the audit's attacker uses it, and the rule protects the count,
  not that presence (docs/coarsening.md, "What the exact zeros disclose"). CD01–CD04
  (education of workers aged 30 or over, as LODES tabulates it) are the sums of the
  published age × education cells of ages A02 and A03, and their bounds the sums of
  theirs. The bounds do not add up (a companion: ``eree check-format FILE --format
  lodes-wac --bounds``).

CFA and CFS are 0 (the job tables have no firm age or size; LODES writes 0 where it does
not tabulate them). Blocks are the blocks of the publication, in ascending order.
"""

from __future__ import annotations

import gzip
import io
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl
import scipy.sparse as sp
from scipy.optimize import linprog

from eree.errors import DataValidationError
from eree.release.layouts import LODES_FAMILIES, WAC_COLUMNS, lodes_file_name

__all__ = ["BOUND_SUFFIXES", "own_bounds", "wac_coarsened_files", "write_files"]

#: the companion files' suffixes (before ``.csv.gz``)
BOUND_SUFFIXES: tuple[str, ...] = ("_lower", "_upper")

#: WAC family → (frontier table, attribute, codes in the layout's column order)
_FAMILIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "CA": ("wac_ca", "age", ("A01", "A02", "A03")),
    "CE": ("wac_ce", "earnings", ("E01", "E02", "E03")),
    "CNS": ("wac_cns", "naics_sector", ()),  # NAICS_SECTORS (below)
    "CR": ("wac_cr", "race", ("A1", "A2", "A3", "A4", "A5", "A7")),
    "CT": ("wac_ct", "ethnicity", ("A1", "A2")),
    "CS": ("wac_cs", "sex", ("M", "F")),
}
_EDUCATION = ("E1", "E2", "E3", "E4")
_AGES = ("A01", "A02", "A03")


def own_bounds(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's interval from its own status, in whole jobs (suppressed: [0, inf)).

    The table format's columns read as a :class:`~eree.suppression.coarsening.Publication`
    (its ``own_bounds``: one reading of a status for the optimizer and the files); a
    range without an upper end is open.
    """
    from eree.suppression.coarsening.publication import Publication

    def col(name: str) -> np.ndarray:
        return frame.get_column(name).fill_null(np.nan).to_numpy().astype(np.float64)

    upper = col("upper")
    return Publication(
        status=frame.get_column("status").to_numpy().astype(str),
        value=col("value"),
        base=col("base"),
        lower=col("lower"),
        upper=np.where(np.isnan(upper), np.inf, upper),
        integer=True,
    ).own_bounds()


def _grid(frame: pl.DataFrame, sectors: Sequence[str]) -> tuple[list[str], list[tuple]]:
    """The blocks, and the cells of one block in a fixed order: (table, attribute, code)."""
    cells: list[tuple] = [("wac_c000", None, None)]
    for fam, (table, attr, codes) in _FAMILIES.items():
        for c in sectors if fam == "CNS" else codes:
            cells.append((table, attr, c))
    for a in _AGES:
        for e in _EDUCATION:
            cells.append(("wac_cd", ("age", "education"), (a, e)))
    blocks = sorted(frame.get_column("block").unique().to_list())
    return blocks, cells


def _cell_index(frame: pl.DataFrame, blocks: list[str], cells: list[tuple]) -> np.ndarray:
    """Row of ``frame`` per (block, cell); −1: not listed (a published zero)."""
    pos = {b: i for i, b in enumerate(blocks)}
    key: dict[tuple, int] = {}
    for j, (table, attr, code) in enumerate(cells):
        if attr is None:
            key[(table,)] = j
        elif isinstance(attr, tuple):
            key[(table, *code)] = j
        else:
            key[(table, code)] = j
    out = np.full((len(blocks), len(cells)), -1, dtype=np.int64)
    cols = frame.select(
        "table", "block", "age", "education", "earnings", "naics_sector", "race", "ethnicity", "sex"
    ).rows()
    attr_at = {"age": 2, "earnings": 4, "naics_sector": 5, "race": 6, "ethnicity": 7, "sex": 8}
    for r, row in enumerate(cols):
        t = row[0]
        if t == "wac_c000":
            k: tuple = (t,)
        elif t == "wac_cd":
            k = (t, row[2], row[3])
        else:
            attr = _FAMILIES[next(f for f, v in _FAMILIES.items() if v[0] == t)][1]
            k = (t, row[attr_at[attr]])
        at = key.get(k)
        if at is None:
            raise DataValidationError(
                "a cell outside the WAC layout", file="<publication>", row=r + 1, column=t
            )
        out[pos[row[1]], at] = r
    return out


def _relations(cells: list[tuple]) -> sp.csr_matrix:
    """One block's sums: C000 = each one-way family; each CA cell = its CD row."""
    rows: list[dict[int, float]] = []
    idx = {c: j for j, c in enumerate(cells)}
    for table, _attr, _codes in _FAMILIES.values():
        r = {0: 1.0}
        for j, (t, _a, _c) in enumerate(cells):
            if t == table:
                r[j] = -1.0
        rows.append(r)
    for a in _AGES:
        r = {idx[("wac_ca", "age", a)]: 1.0}
        for e in _EDUCATION:
            r[idx[("wac_cd", ("age", "education"), (a, e))]] = -1.0
        rows.append(r)
    data, ri, ci = [], [], []
    for i, r in enumerate(rows):
        for j, v in r.items():
            ri.append(i)
            ci.append(j)
            data.append(v)
    return sp.csr_matrix((data, (ri, ci)), shape=(len(rows), len(cells)))


def _model(
    lo: np.ndarray, hi: np.ndarray, target: np.ndarray, rel: sp.csr_matrix
) -> tuple[np.ndarray, sp.csr_matrix, np.ndarray, np.ndarray, sp.csr_matrix]:
    """The L1 problem of :func:`_consistent`: cost, A_eq, b_eq, bounds and the blocks' sums."""
    nb, nc = lo.shape
    n = nb * nc
    a_blk = sp.block_diag([rel] * nb, format="csr")
    has = ~np.isnan(target.ravel())
    k = int(has.sum())
    # x − p + q = target on targeted cells; minimise Σ p + q
    sel = sp.csr_matrix((np.ones(k), (np.arange(k), np.flatnonzero(has))), shape=(k, n))
    eye = sp.identity(k, format="csr")
    a_eq = sp.vstack(
        [
            sp.hstack([a_blk, sp.csr_matrix((a_blk.shape[0], 2 * k))]),
            sp.hstack([sel, -eye, eye]),
        ],
        format="csr",
    )
    b_eq = np.concatenate([np.zeros(a_blk.shape[0]), target.ravel()[has]])
    cost = np.concatenate([np.zeros(n), np.ones(2 * k)])
    bounds = np.column_stack(
        [
            np.concatenate([lo.ravel(), np.zeros(2 * k)]),
            np.concatenate([np.where(np.isfinite(hi), hi, np.inf).ravel(), np.full(2 * k, np.inf)]),
        ]
    )
    return cost, a_eq, b_eq, bounds, a_blk


def _consistent(
    lo: np.ndarray, hi: np.ndarray, target: np.ndarray, rel: sp.csr_matrix
) -> np.ndarray:
    """Per block (rows), whole numbers in [lo, hi] meeting ``rel``, nearest ``target`` (L1).

    ``target`` NaN: no target (a suppressed cell). One LP over the blocks given; a block
    whose LP optimum is not whole (a range's midpoint is a half-integer target, so the
    LP may split a job between two cells at no cost) is solved again as an integer
    program (HiGHS through :func:`scipy.optimize.milp`), whole numbers nearest in L1.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    nb, nc = lo.shape
    n = nb * nc
    cost, a_eq, b_eq, bounds, _ = _model(lo, hi, target, rel)
    res = linprog(cost, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs-ds")
    if res.status != 0:
        raise ValueError("the published intervals admit no consistent whole numbers")
    x = np.asarray(res.x[:n]).reshape(nb, nc)
    frac = np.flatnonzero(np.abs(x - np.round(x)).max(axis=1) > 1e-6)
    if frac.size:
        cost, a_eq, b_eq, bounds, _ = _model(lo[frac], hi[frac], target[frac], rel)
        whole = np.concatenate([np.ones(frac.size * nc), np.zeros(cost.size - frac.size * nc)])
        mres = milp(
            cost,
            constraints=LinearConstraint(a_eq, b_eq, b_eq),
            integrality=whole,
            bounds=Bounds(bounds[:, 0], bounds[:, 1]),
        )
        if mres.status != 0 or mres.x is None:
            raise ValueError("the published intervals admit no consistent whole numbers")
        x[frac] = np.asarray(mres.x[: frac.size * nc]).reshape(frac.size, nc)
    xr = np.round(x)
    a_blk = sp.block_diag([rel] * nb, format="csr")
    if np.abs(x - xr).max(initial=0.0) > 1e-6 or np.abs(a_blk @ xr.ravel()).max() > 1e-6:
        raise ValueError("the consistent point is not whole")  # the integer program's: cannot
    return xr


def _layout_rows(
    values: np.ndarray, cells: list[tuple], sectors: Sequence[str]
) -> dict[str, np.ndarray]:
    """Layout columns from per-cell arrays (blocks × cells); CD = ages A02 + A03."""
    idx = {c: j for j, c in enumerate(cells)}
    out: dict[str, np.ndarray] = {"C000": values[:, 0]}
    for fam, (table, attr, codes) in _FAMILIES.items():
        for col, c in zip(LODES_FAMILIES[fam], sectors if fam == "CNS" else codes, strict=True):
            out[col] = values[:, idx[(table, attr, c)]]
    for col, e in zip(LODES_FAMILIES["CD"], _EDUCATION, strict=True):
        older = [idx[("wac_cd", ("age", "education"), (a, e))] for a in _AGES[1:]]
        out[col] = values[:, older].sum(axis=1)
    return out


def _csv_gz(blocks: list[str], cols: dict[str, np.ndarray], createdate: str) -> bytes:
    buf = io.StringIO()
    buf.write(",".join(WAC_COLUMNS) + "\n")
    zero = np.zeros(len(blocks))
    for i, b in enumerate(blocks):
        fields = [b]
        for c in WAC_COLUMNS[1:-1]:
            v = cols.get(c, zero)[i]
            fields.append("" if not math.isfinite(v) else str(int(v)))
        fields.append(createdate)
        buf.write(",".join(fields) + "\n")
    return gzip.compress(buf.getvalue().encode("utf-8"), mtime=0)


def wac_coarsened_files(
    published: pl.DataFrame,
    *,
    state_fips: str,
    year: int,
    createdate: str,
    job_type: str = "JT00",
    segment: str = "S000",
    sectors: Sequence[str] | None = None,
    blocks_per_lp: int = 2000,
) -> dict[str, bytes]:
    """The three LODES WAC files of a coarsened publication (module docstring).

    Args:
        published: the publication in the table format (every block's cells, zero cells
            as exact 0 or not listed).
        state_fips: the state's 2-digit FIPS code (the file name's ``[st]``).
        year, createdate: the file name's year; the ``createdate`` column (YYYYMMDD).
        job_type, segment: the file name's job type and segment.
        sectors: the CNS codes in column order (default: the 20 NAICS sectors).
        blocks_per_lp: blocks per consistency LP.

    Returns:
        file name → gzip bytes: the values file and its ``_lower``/``_upper`` companions.
    """
    from eree.data.schema import NAICS_SECTORS

    secs = tuple(sectors) if sectors is not None else tuple(NAICS_SECTORS)
    blocks, cells = _grid(published, secs)
    at = _cell_index(published, blocks, cells)
    lo_all, hi_all = own_bounds(published)
    st = published.get_column("status").to_numpy().astype(str)
    v = published.get_column("value").fill_null(np.nan).to_numpy().astype(np.float64)
    listed = at >= 0
    r = np.where(listed, at, 0)
    lo = np.where(listed, lo_all[r], 0.0)
    hi = np.where(listed, hi_all[r], 0.0)
    # a range's target: its midpoint rounded down — whole targets (a half-integral one, e.g.
    # [1, 4]'s 2.5, often gives a half-integral vertex; the integer program below catches
    # any block whose optimum is still not whole)
    mid = np.floor((lo + hi) / 2.0 + 1e-9)
    target = np.where(listed, np.where(st[r] == "range", mid, v[r]), 0.0)
    target = np.where(listed & (st[r] == "suppressed"), np.nan, target)
    values = lo.copy()
    open_blk = np.flatnonzero((hi > lo).any(axis=1))
    rel = _relations(cells)
    for s in range(0, open_blk.size, blocks_per_lp):
        rows = open_blk[s : s + blocks_per_lp]
        values[rows] = _consistent(lo[rows], hi[rows], target[rows], rel)
    name = lodes_file_name("wac", state_fips, segment, job_type, year)
    stem = name[: -len(".csv.gz")]
    return {
        name: _csv_gz(blocks, _layout_rows(values, cells, secs), createdate),
        f"{stem}_lower.csv.gz": _csv_gz(blocks, _layout_rows(lo, cells, secs), createdate),
        f"{stem}_upper.csv.gz": _csv_gz(blocks, _layout_rows(hi, cells, secs), createdate),
    }


def write_files(files: dict[str, bytes], folder: str | Path) -> list[Path]:
    """Write ``files`` under ``folder`` (created); the paths written."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in files.items():
        p = out / name
        p.write_bytes(data)
        paths.append(p)
    return paths
