r"""Secondary (complementary) suppression over linked hierarchical tables.

**Goal.** Suppress extra cells so that, for every primary cell :math:`i` and every rule
attribute, the attacker's LP interval (:mod:`.audit`) covers the protection interval
:math:`[a_i - L_i,\ a_i + U_i]`, :math:`L_i = \min(U_i, a_i)`.

**Witness LPs** (the "sequential LP" heuristic of Kelly, Golden & Assad 1992 and of
Fischetti & Salazar's heuristic phase, as used by τ-ARGUS). The attacker's maximum of
:math:`x_i` reaches :math:`a_i + U_i` if and only if there is a perturbation :math:`y`
with :math:`A y = 0`, :math:`a + y \ge 0`, :math:`y_i = U_i` and :math:`y_j = 0` on every
published cell. So, for each primary cell and direction, solve

.. math::
    \min \sum_j c_j\,(y^+_j + y^-_j) \quad\text{s.t.}\quad A(y^+ - y^-) = 0,\
    y^+_i - y^-_i = \pm U_i \text{ (or } L_i),\ 0 \le y^-_j \le a_j,\ y^+_j \ge 0,

with cost :math:`c_j \approx 0` for cells already suppressed and the cell's weight
(default :math:`1 + a_j`, i.e. prefer small cells) otherwise, and suppress every cell
with :math:`y_j \neq 0`. The witness stays feasible when more cells are suppressed later
(suppression only enlarges the attacker's feasible set), so after one pass over the
primary cells **every primary cell is protected by construction**; the final audit
checks it independently. An upward witness whose reverse stays non-negative
(:math:`s\,y^+_j \le a_j`, :math:`s = L_i/U_i`) also serves the downward direction, which
saves that LP.

**Keeping the LPs small.** A witness is first sought among the cells within a few
relation hops of :math:`i` (radius 2, then 4; cells outside are held at 0, which keeps
any witness found valid for the whole table) and only then over the whole table. Cells
that may never be suppressed (``exempt``) are held at 0.

**Order.** Primary cells are processed from the coarsest tables to the finest (a
complement chosen for an aggregate reaches down the hierarchy and is reused by the cells
below), and within a table by decreasing protection.

**Complexity and limits.** One to two small LPs per primary cell and attribute
(O(#primary × #attributes) LPs, each over a neighbourhood of tens to hundreds of cells;
HiGHS's per-call overhead of ~2 ms dominates for small tables). The pattern is feasible
but not minimal: the LP relaxation charges cost per unit of flow, not per suppressed cell,
and the greedy order matters (the exact model, a MILP with one witness per primary cell,
is out of reach for a state's thousands of primary cells). Only linear attacks are
covered (no integrality of counts, no external knowledge such as a respondent's own
value beyond the p% rule, no other releases of the same data — see
``docs/cell-suppression.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from eree.evaluate.suppression.lp import solve
from eree.evaluate.suppression.rules import PrimaryResult
from eree.evaluate.suppression.tables import LinkedTables

__all__ = ["SecondaryConfig", "SecondaryResult", "cell_costs", "secondary_suppression"]

COSTS = ("value", "count", "unit")
_REUSE = 1e-4  # cost of a cell already suppressed, relative to the cheapest published one


@dataclass(frozen=True)
class SecondaryConfig:
    """Configuration of the complementary suppression.

    Attributes:
        cost: weight of suppressing a published cell: ``"value"`` (1 + the cell's value
            of ``cost_attribute``: keep large cells), ``"count"`` (1 + establishments) or
            ``"unit"`` (every cell alike).
        cost_attribute: attribute of the ``"value"`` cost (default: the first rule
            attribute).
        keep_tables: table codes never used as complements (their primary cells are
            still suppressed), e.g. ``("50", "51", "70")``: BLS publishes the state
            totals and every county's total covered.
    """

    cost: str = "value"
    cost_attribute: str | None = None
    keep_tables: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.cost not in COSTS:
            raise ValueError(f"cost must be one of {COSTS}")


@dataclass(frozen=True)
class SecondaryResult:
    """Result of the complementary suppression.

    Attributes:
        suppressed: boolean per cell: primary or complementary.
        secondary: boolean per cell: complementary only.
        unprotectable: indices of primary cells for which no witness exists (e.g. all
            their possible complements are exempt); empty normally.
        lps: number of witness LPs solved.
        stats: counters (LPs per neighbourhood, skipped directions).
    """

    suppressed: np.ndarray
    secondary: np.ndarray
    unprotectable: np.ndarray
    lps: int
    stats: dict[str, int] = field(default_factory=dict)


def cell_costs(tables: LinkedTables, cost: str, attribute: str | None) -> np.ndarray:
    """Weight of suppressing each cell."""
    if cost == "unit":
        return np.ones(tables.n_cells)
    if cost == "count":
        return 1.0 + tables.counts().astype(np.float64)
    a = attribute or tables.attributes[0]
    return 1.0 + tables.values(a)


def _witness(
    relations_csc: sp.csc_matrix,
    cand: np.ndarray,
    i: int,
    amount: float,
    values: np.ndarray,
    cost: np.ndarray,
) -> np.ndarray | None:
    """A perturbation y on ``cand`` with A y = 0, y_i = amount, values + y >= 0 of least
    cost; cells outside ``cand`` are held at 0.

    Returns y over ``cand`` (None when infeasible).
    """
    m = cand.size
    pos = int(np.searchsorted(cand, i))
    ptr = relations_csc.indptr
    starts, ends = ptr[cand], ptr[cand + 1]
    lengths = ends - starts
    if lengths.sum() == 0:  # in no relation: any change is consistent
        y = np.zeros(m)
        y[pos] = amount
        return y
    take = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    rows_glob = relations_csc.indices[take]
    data = relations_csc.data[take]
    rows, local = np.unique(rows_glob, return_inverse=True)
    # columns of [A_K, -A_K] in CSC form
    indptr = np.concatenate([[0], np.cumsum(np.concatenate([lengths, lengths]))])
    a_eq = sp.csc_matrix(
        (np.concatenate([data, -data]), np.concatenate([local, local]), indptr),
        shape=(rows.size, 2 * m),
    )
    c = np.concatenate([cost, cost])
    scale = max(1.0, abs(amount))
    lb = np.zeros(2 * m)
    ub = np.concatenate([np.full(m, np.inf), values / scale])
    if amount >= 0:
        lb[pos] = ub[pos] = amount / scale
        lb[m + pos] = ub[m + pos] = 0.0
    else:
        lb[pos] = ub[pos] = 0.0
        lb[m + pos] = ub[m + pos] = -amount / scale
    res = solve(c / max(1.0, float(c.max())), a_eq, np.zeros(rows.size), lb, ub)
    if res.status != "optimal" or res.x is None:
        return None
    return (res.x[:m] - res.x[m:]) * scale


def _still_valid(y: np.ndarray, values: np.ndarray) -> bool:
    """y keeps the values non-negative (up to rounding)."""
    return bool(np.all(values + y >= -1e-9 * np.maximum(1.0, values)))


def secondary_suppression(
    tables: LinkedTables,
    primary: PrimaryResult,
    config: SecondaryConfig | None = None,
    *,
    attributes: Sequence[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SecondaryResult:
    """Complementary suppression: extend the primary pattern until every primary cell's
    protection interval is covered by the attacker's feasible interval.

    Args:
        tables: the linked tables.
        primary: the primary suppression (flags, protection levels, exempt cells).
        config: cost configuration.
        attributes: attributes to protect (default: the primary rule attributes).
        progress: called with (primary cells done, total) after each primary cell.
    """
    cfg = config or SecondaryConfig()
    attrs = tuple(attributes) if attributes is not None else primary.attributes
    n = tables.n_cells
    suppressed = primary.primary.copy()
    keep = tables.cells.get_column("table_code").is_in(list(cfg.keep_tables)).to_numpy()
    allowed = ~primary.exempt & (~keep | primary.primary)
    base_cost = cell_costs(tables, cfg.cost, cfg.cost_attribute or attrs[0])
    reuse = _REUSE * float(base_cost.min(initial=1.0))
    a_csc = tables.relations.tocsc()
    vals = {a: tables.values(a) for a in attrs}
    depth = max(len(d.levels) for d in tables.layout.dimensions)
    # order: coarse tables first, then by decreasing protection
    coarse = tables.levels.sum(axis=1)
    prim = np.flatnonzero(primary.primary)
    prot0 = primary.protection[attrs[0]][prim] if attrs else np.zeros(prim.size)
    order = prim[np.lexsort((-prot0, coarse[prim]))]
    # smallest useful neighbourhood: in every dimension where the neighbourhood is
    # restricted, a branching ancestor must lie inside it (see LinkedTables.branch_distance)
    bdist = tables.branch_distance()
    lv = tables.levels.astype(np.float64)
    start = np.ones(n, dtype=np.int64)
    for h in range(depth, 0, -1):
        ok = np.all((lv <= h) | (bdist <= h), axis=1)
        start[ok] = h
    unprotectable: list[int] = []
    stats = {"lp": 0, "lp_whole_table": 0, "reused_witness": 0, "lp_failed_neighbourhood": 0}
    for done, i in enumerate(order, start=1):
        # witnesses found for this cell: (candidate cells, y per unit of protection)
        found: list[tuple[np.ndarray, np.ndarray]] = []
        first_up = int(start[i])  # smallest neighbourhood worth trying
        for a in attrs:
            u = float(primary.protection[a][i])
            if u <= 0:
                continue
            lo = min(u, float(vals[a][i]))
            for amount in (u, -lo):
                if amount == 0:
                    continue
                # a witness of another direction or attribute, rescaled, may serve
                reused = False
                for cand, w in found:
                    y = w * amount / abs(w[cand == i][0]) * np.sign(w[cand == i][0])
                    if _still_valid(y, vals[a][cand]):
                        reused = True
                        break
                if reused:
                    stats["reused_witness"] += 1
                    continue
                witness: tuple[np.ndarray, np.ndarray] | None = None
                for up in range(first_up, depth + 1):
                    whole = up == depth
                    mask = tables.subtree(int(i), up) if not whole else np.ones(n, dtype=bool)
                    mask &= allowed
                    mask[i] = True
                    cand = np.flatnonzero(mask)
                    c = np.where(suppressed[cand], reuse, base_cost[cand])
                    y = _witness(a_csc, cand, int(i), amount, vals[a][cand], c)
                    stats["lp"] += 1
                    if whole:
                        stats["lp_whole_table"] += 1
                    if y is not None:
                        witness = (cand, y)
                        stats[f"h{up}"] = stats.get(f"h{up}", 0) + 1
                        break
                    first_up = up + 1
                    stats["lp_failed_neighbourhood"] += 1
                    if cand.size == int(allowed.sum()) + int(not allowed[i]):
                        break  # already the whole table
                if witness is None:
                    unprotectable.append(int(i))
                    continue
                cand, y = witness
                tol = 1e-6 * max(1.0, abs(amount))
                keep = np.abs(y) > tol
                suppressed[cand[keep]] = True
                found.append((cand[keep], y[keep]))
        if progress is not None:
            progress(done, order.size)
    secondary = suppressed & ~primary.primary
    return SecondaryResult(
        suppressed=suppressed,
        secondary=secondary,
        unprotectable=np.unique(np.asarray(unprotectable, dtype=np.int64)),
        lps=stats["lp"],
        stats=stats,
    )
