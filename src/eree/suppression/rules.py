r"""Primary suppression: sensitivity rules and the protection interval of each primary cell.

For a cell with total :math:`T` (of one confidential attribute) and contributions
:math:`x_1 \ge x_2 \ge \dots` (Webb et al. §2.2; Cox 1981; Hundepool et al.,
*Statistical Disclosure Control*, §4.2):

* **threshold rule**: fewer than :math:`k` establishments (default 3) — the cell reveals
  an establishment to the outside world (one establishment) or to the other contributor
  (two establishments).
* **dominance (n, k) rule**: :math:`x_1 + \dots + x_n > \tfrac{k}{100}\,T` (default n = 1,
  k = 80): the n largest establishments dominate the cell.
* **p% rule**: :math:`T - x_1 - x_2 < \tfrac{p}{100}\,x_1` (default p = 10): the second
  largest contributor, subtracting its own value from the total, learns the largest one
  to within p %.

A cell is *primary* when any rule fires for any of the rule attributes (a QCEW cell's
employment and wages are withheld together).

**Protection levels.** Each primary cell gets a symmetric protection level :math:`U` per
attribute: the attacker's feasible interval for the cell must reach at least
:math:`T + U` above and :math:`T - \min(U, T)` below (the lower side is capped by
non-negativity). :math:`U` is the amount by which the cell total would have to change for
the rule to be satisfied (the τ-ARGUS convention), the largest over the rules that fire:

* dominance: :math:`U = \tfrac{100}{k}\sum_{r\le n} x_r - T`;
* p%: :math:`U = \tfrac{p}{100}\,x_1 - (T - x_1 - x_2)`;
* threshold: :math:`U = \tfrac{q}{100}\,x_1` with q = ``protection_percent`` (default: p);

and at least ``min_protection`` (default 1 unit), so that no primary cell — not even one
whose value is 0 — can be pinned down.

The value of p, like BLS's, should be kept confidential in a real deployment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import scipy.sparse as sp

from eree.suppression.tables import ESTABLISHMENTS, LinkedTables, top_column

__all__ = [
    "PrimaryResult",
    "PrimaryRules",
    "presence_lower",
    "primary_suppression",
    "protected_lower",
]


@dataclass(frozen=True)
class PrimaryRules:
    """Configuration of the primary rules (``None`` disables a rule).

    Attributes:
        threshold: cells with fewer than this many establishments are sensitive (3).
        dominance_n, dominance_k: the (n, k) dominance rule, k in percent (1, 80).
        p_percent: the p% rule (10).
        protection_percent: protection level of threshold-rule cells, in percent of the
            largest contribution (default: ``p_percent``, or 10 when p% is disabled).
        min_protection: smallest protection level of a primary cell, in the attribute's
            unit (1.0).
        exempt: public attribute → codes whose cells are never suppressed (neither primary
            nor complementary), e.g. ``{"own": ("1",)}``: BLS publishes federal government
            cells whatever their size.
    """

    threshold: int | None = 3
    dominance_n: int = 1
    dominance_k: float | None = 80.0
    p_percent: float | None = 10.0
    protection_percent: float | None = None
    min_protection: float = 1.0
    exempt: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.threshold is not None and self.threshold < 1:
            raise ValueError("threshold must be >= 1 (or None)")
        if self.dominance_n < 1:
            raise ValueError("dominance_n must be >= 1")
        if self.dominance_k is not None and not 0 < self.dominance_k <= 100:
            raise ValueError("dominance_k must be in (0, 100]")
        if self.p_percent is not None and not self.p_percent > 0:
            raise ValueError("p_percent must be > 0")
        if self.min_protection < 0:
            raise ValueError("min_protection must be >= 0")

    @property
    def top_needed(self) -> int:
        """Largest contributions the rules need per cell."""
        return max(2, self.dominance_n if self.dominance_k is not None else 1)

    @property
    def threshold_percent(self) -> float:
        """Protection of threshold-rule cells, in percent.

        ``protection_percent``, else ``p_percent``, else 10.
        """
        if self.protection_percent is not None:
            return self.protection_percent
        return self.p_percent if self.p_percent is not None else 10.0

    def describe(self) -> dict[str, object]:
        """The rules as a JSON-serialisable dictionary."""
        return {
            "threshold": self.threshold,
            "dominance": None
            if self.dominance_k is None
            else {"n": self.dominance_n, "k_percent": self.dominance_k},
            "p_percent": self.p_percent,
            "protection_percent": self.threshold_percent,
            "min_protection": self.min_protection,
            "exempt": {k: list(v) for k, v in self.exempt.items()},
        }


@dataclass(frozen=True)
class PrimaryResult:
    """Primary suppression of linked tables.

    Attributes:
        primary: boolean per cell.
        threshold, dominance, p_rule: boolean per cell, which rule fired (any attribute).
        protection: attribute → protection level U per cell (0 for non-primary cells);
            confidential (it is a function of the contributions).
        exempt: boolean per cell, never suppressed.
        rules: the configuration.
        attributes: the rule attributes.
    """

    primary: np.ndarray
    threshold: np.ndarray
    dominance: np.ndarray
    p_rule: np.ndarray
    protection: dict[str, np.ndarray]
    exempt: np.ndarray
    rules: PrimaryRules
    attributes: tuple[str, ...]

    def lower_protection(self, attribute: str, values: np.ndarray) -> np.ndarray:
        """The lower protection min(U, T) (non-negativity caps it)."""
        return np.minimum(self.protection[attribute], values)


def exempt_mask(tables: LinkedTables, exempt: Mapping[str, tuple[str, ...]]) -> np.ndarray:
    """Cells whose code of dimension (or column) ``k`` is in ``exempt[k]``."""
    mask = np.zeros(tables.n_cells, dtype=bool)
    for col, codes in exempt.items():
        if col not in tables.cells.columns:
            dims = {c: d.name for d in tables.layout.dimensions for c in d.columns}
            if col not in dims:
                raise ValueError(f"exempt names {col!r}, which is not a dimension or column")
            col = dims[col]
        mask |= tables.cells.get_column(col).is_in(list(codes)).to_numpy()
    return mask


def primary_suppression(
    tables: LinkedTables, rules: PrimaryRules, attributes: tuple[str, ...] | None = None
) -> PrimaryResult:
    """Apply the primary rules to every cell.

    Args:
        tables: the tabulated linked tables (with at least ``rules.top_needed`` largest
            contributions per cell).
        rules: the rule configuration.
        attributes: attributes the rules look at (default: all tabulated ones).

    Raises:
        ValueError: the tables keep too few largest contributions, or an attribute was
            not tabulated.
    """
    attrs = tuple(attributes) if attributes is not None else tables.attributes
    for a in attrs:
        if a not in tables.attributes:
            raise ValueError(f"attribute {a!r} was not tabulated")
    if tables.top < rules.top_needed:
        raise ValueError(f"the rules need the {rules.top_needed} largest contributions per cell")
    cells: pl.DataFrame = tables.cells
    n = cells.get_column(ESTABLISHMENTS).to_numpy()
    exempt = exempt_mask(tables, rules.exempt)
    thr = np.zeros(len(n), dtype=bool)
    if rules.threshold is not None:
        thr = n < rules.threshold
    dom_any = np.zeros(len(n), dtype=bool)
    p_any = np.zeros(len(n), dtype=bool)
    need: dict[str, np.ndarray] = {}
    for a in attrs:
        t = cells.get_column(a).to_numpy().astype(np.float64)
        x1 = cells.get_column(top_column(a, 1)).to_numpy().astype(np.float64)
        x2 = cells.get_column(top_column(a, 2)).to_numpy().astype(np.float64)
        u = np.zeros(len(n))
        if rules.dominance_k is not None:
            topn = sum(
                cells.get_column(top_column(a, r)).to_numpy().astype(np.float64)
                for r in range(1, rules.dominance_n + 1)
            )
            k = rules.dominance_k / 100.0
            dom = topn > k * t
            dom_any |= dom
            u = np.where(dom, np.maximum(u, topn / k - t), u)
        if rules.p_percent is not None:
            p = rules.p_percent / 100.0
            rem = t - x1 - x2
            pr = rem < p * x1
            p_any |= pr
            u = np.where(pr, np.maximum(u, p * x1 - rem), u)
        u = np.where(thr, np.maximum(u, rules.threshold_percent / 100.0 * x1), u)
        need[a] = u
    primary = (thr | dom_any | p_any) & ~exempt
    protection = {
        a: np.where(primary, np.maximum(u, rules.min_protection), 0.0) for a, u in need.items()
    }
    return PrimaryResult(
        primary=primary,
        threshold=thr & ~exempt,
        dominance=dom_any & ~exempt,
        p_rule=p_any & ~exempt,
        protection=protection,
        exempt=exempt,
        rules=rules,
        attributes=attrs,
    )


def presence_lower(
    relations: sp.spmatrix, floor: np.ndarray, zero: np.ndarray | None = None
) -> np.ndarray:
    """The least each cell can hold given only which cells are non-zero: a lower bound.

    ``floor`` is what each cell is known to hold from its presence alone (a non-zero
    count: 1; otherwise 0); ``zero`` marks the cells known to be 0 (zeros published
    exactly). Each relation's total (coefficient +1) holds at least the sum of its
    parts' (−1) lower bounds, and a part whose other parts are all known zeros equals
    the total; propagated to a fixed point. For the WAC layout (a block's total and its
    one-way families, each age cell and its row of age × education) this is the
    attacker's LP minimum on the publication that withholds every non-zero cell and
    prints the zeros; in general a lower bound of it (the rule it clips is then stricter).
    """
    a = sp.csr_matrix(relations)
    p = np.asarray(floor, dtype=np.float64).copy()
    if a.shape[0] == 0:
        return p
    z = np.zeros(p.size, dtype=bool) if zero is None else np.asarray(zero, dtype=bool)
    parts = (a < 0).astype(np.float64).tocsr()
    tot = (a > 0).tocoo()
    total_of = np.full(a.shape[0], -1, dtype=np.int64)
    total_of[tot.row] = tot.col
    open_parts = parts.multiply((~z).astype(np.float64)[None, :]).tocsr()
    open_parts.eliminate_zeros()
    single = np.flatnonzero((np.diff(open_parts.indptr) == 1) & (total_of >= 0))
    only = open_parts.indices[open_parts.indptr[single]]
    for _ in range(2 * a.shape[0] + 1):
        new = p.copy()
        ok = total_of >= 0
        np.maximum.at(new, total_of[ok], (parts @ p)[ok])
        np.maximum.at(new, only, new[total_of[single]])
        if np.array_equal(new, p):
            break
        p = new
    return p


def protected_lower(
    relations: sp.spmatrix,
    values: np.ndarray,
    protection: np.ndarray | float,
    floor: np.ndarray | float | None = None,
) -> np.ndarray:
    r"""The lower end of each cell's protection interval, :math:`T - \min(U, T)`.

    With ``floor`` (what the publication discloses of a cell it does not print exactly:
    1 for counts whose zeros are printed, :func:`eree.suppression.coarsening.presence_floor`)
    the rule protects the count beyond the presence it discloses: the lower end is
    raised to :func:`presence_lower` of ``min(floor, T)`` (a cell of 2 jobs whose parts
    show two non-zero cells cannot be hidden below 2 while the zeros are printed).
    """
    t = np.asarray(values, dtype=np.float64)
    lo = t - np.minimum(protection, t)
    if floor is None:
        return lo
    fb = np.broadcast_to(np.asarray(floor, dtype=np.float64), t.shape)
    # a zero of a table whose zeros are all printed is known to be zero
    return np.maximum(lo, presence_lower(relations, np.minimum(fb, t), (t == 0) & (fb > 0)))
