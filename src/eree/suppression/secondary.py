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

**Keeping the LPs small** (in the spirit of τ-ARGUS's modular/HiTaS method: work on
small pieces of the hierarchy, never on the whole table at once). A witness is sought in
growing neighbourhoods of :math:`i` (cells outside are held at 0, which keeps any
witness found valid for the whole table): the subtree of :math:`i`'s ancestor ``up``
levels above it in every dimension, starting from the smallest ``up`` at which a
perturbation can be balanced at all (:meth:`~.tables.LinkedTables.branch_distance`).
A neighbourhood of more than ``narrow_above`` cells is first tried *narrowed*: in a
dimension opened to its total whose first level has more than ``2 * partners`` other
branches (for a county cell of a large state, the area dimension: every county), only
:math:`i`'s own branch, the coarser cells and ``partners`` *partner* branches are kept —
branches that already hold suppressed cells in the neighbourhood (reusing them is nearly
free), else those with the most cells. Only when the narrowed LP is infeasible is the
full neighbourhood tried. Candidate sets are read from per-level sorted indexes, so
one witness costs time in the size of its neighbourhood, not of the table. Cells that
may never be suppressed (``exempt``, ``keep_tables``) are held at 0.

**Independent pieces, in parallel.** Cells that may never be suppressed are constants,
so the linked tables fall apart into connected components of suppressible cells; a
witness never leaves its component, so components are processed independently. A large
component (a state's private sector) is split further, HiTaS-like, along the hierarchy:
its cells above the counties first, then the counties' cells in ``lanes`` lanes of whole
counties, side by side in rounds; each lane sees the pattern as it stood at the start
of the round plus its own additions, and the rounds are merged in a fixed order. Any
union of witnesses is a valid pattern (suppressing more only widens the attacker's
intervals), so this costs at most some extra complements, never protection. Lanes and
components run on ``workers`` processes; the pattern depends on the lanes, not on the
number of processes.

**Witnesses are kept.** Every witness found is returned (:attr:`SecondaryResult.witnesses`):
each is a feasible perturbation of the final pattern, which lets the audit
(:mod:`.audit`) certify most cells' protection without solving their LPs.

**Order.** Primary cells are processed from the coarsest tables to the finest (a
complement chosen for an aggregate reaches down the hierarchy and is reused by the cells
below), and within a table by decreasing protection.

**Complexity and limits.** At most one to two small LPs per primary cell and attribute
(witnesses are reused across directions and attributes; most cells need one LP), each
over a neighbourhood of tens to hundreds of cells: linear in the number of primary
cells. The pattern is feasible
but not minimal: the LP relaxation charges cost per unit of flow, not per suppressed cell,
and the greedy order matters (the exact model, a MILP with one witness per primary cell,
is out of reach for a state's thousands of primary cells). Only linear attacks are
covered (no integrality of counts, no external knowledge such as a respondent's own
value beyond the p% rule, no other releases of the same data — see
``docs/cell-suppression.md``).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from eree.suppression.lp import solve
from eree.suppression.rules import PrimaryResult, protected_lower
from eree.suppression.tables import LinkedTables

__all__ = [
    "SecondaryConfig",
    "SecondaryResult",
    "Witness",
    "cell_costs",
    "secondary_suppression",
    "suppressible_components",
]

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
        partners: branches kept, besides the cell's own, when a neighbourhood is first
            tried narrowed (0: never narrow).
        narrow_above: narrow only neighbourhoods of more cells than this (small ones
            are cheap whole, and their LP finds the cheapest complement).
        workers: processes (None: the cores there are; one for small tables). The
            pattern does not depend on it.
        lanes, round_size, parallel_min: a component with at least ``parallel_min``
            primary cells is split into ``lanes`` lanes of whole branches (counties),
            processed side by side in rounds of ``round_size`` cells per lane; each
            lane sees the pattern as it stood at the start of the round and its own
            additions (the pattern depends on these three, not on ``workers``).
        floor: what the publication discloses of every withheld cell: its value is at
            least ``floor`` (job tables whose zero cells are published exactly: 1, a
            withheld cell holds a job; :func:`~.coarsening.check.presence_floor`). A
            witness then keeps ``values + y ≥ floor`` on every cell it moves, and a
            primary cell's downward protection stops at what presence alone implies
            (:func:`~.rules.protected_lower`): the rule protects the count, not the
            presence the zeros disclose. 0: nothing.
    """

    cost: str = "value"
    cost_attribute: str | None = None
    keep_tables: tuple[str, ...] = ()
    partners: int = 4
    narrow_above: int = 1000
    workers: int | None = None
    lanes: int = 2
    round_size: int = 500
    parallel_min: int = 5000
    floor: float = 0.0

    def __post_init__(self) -> None:
        if self.cost not in COSTS:
            raise ValueError(f"cost must be one of {COSTS}")
        if self.partners < 0:
            raise ValueError("partners must be >= 0")
        if self.workers is not None and self.workers < 1:
            raise ValueError("workers must be >= 1")
        if self.lanes < 1 or self.round_size < 1:
            raise ValueError("lanes and round_size must be >= 1")
        if self.floor < 0:
            raise ValueError("floor must be >= 0")


@dataclass(frozen=True)
class Witness:
    """A perturbation ``y`` of the cells ``cells`` (zero elsewhere) with ``A y = 0``.

    Moving the suppressed cells along it leaves every published cell and relation
    unchanged. Found for ``attribute`` (``values + y ≥ 0``) to move ``cell``.
    """

    cell: int
    attribute: str
    cells: np.ndarray
    y: np.ndarray


@dataclass(frozen=True)
class SecondaryResult:
    """Result of the complementary suppression.

    Attributes:
        suppressed: boolean per cell: primary or complementary.
        secondary: boolean per cell: complementary only.
        unprotectable: indices of primary cells for which no witness exists (e.g. all
            their possible complements are exempt); empty normally.
        lps: number of witness LPs solved.
        stats: counters: ``lp`` (all witness LPs), ``lp_narrowed``/``lp_full`` (by
            neighbourhood kind), ``lp_infeasible`` (neighbourhoods too small, retried
            larger), ``lp_whole_table``, ``reused_witness`` (directions and attributes
            served by a witness already found, no LP), ``h<k>`` (witnesses found
            ``k`` levels up), ``components``.
        witnesses: every witness found (confidential: they are built from true values).
    """

    suppressed: np.ndarray
    secondary: np.ndarray
    unprotectable: np.ndarray
    lps: int
    stats: dict[str, int] = field(default_factory=dict)
    witnesses: tuple[Witness, ...] = ()


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
    """A least-cost perturbation y on ``cand``.

    With A y = 0, y_i = amount, values + y >= 0, of least cost; cells outside ``cand``
    are held at 0.

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
    """Whether ``values + y`` stays non-negative (up to rounding)."""
    return bool(np.all(values + y >= -1e-9 * np.maximum(1.0, values)))


class _Neighbourhoods:
    """Candidate cells of a witness LP, read from sorted per-level indexes.

    ``subtree(i, up)``: the cells in the subtree of ``i``'s ancestor ``up`` levels above
    it, in every dimension (as :meth:`LinkedTables.subtree`), in time proportional to
    the smallest of those subtrees rather than to the table.
    """

    def __init__(self, tables: LinkedTables) -> None:
        self.levels = tables.levels
        self.anc = tables.ancestors
        self.n = tables.n_cells
        self.order: list[list[np.ndarray]] = []
        self.keys: list[list[np.ndarray]] = []
        for anc in self.anc:
            orders, keys = [], []
            for k in range(anc.shape[1]):
                o = np.argsort(anc[:, k], kind="stable")
                orders.append(o)
                keys.append(anc[o, k])
            self.order.append(orders)
            self.keys.append(keys)

    def _group(self, d: int, k: int, ident: int) -> np.ndarray:
        keys = self.keys[d][k]
        lo = int(np.searchsorted(keys, ident, side="left"))
        hi = int(np.searchsorted(keys, ident, side="right"))
        return self.order[d][k][lo:hi]

    def subtree(self, i: int, up: int) -> tuple[np.ndarray, list[int]]:
        """(sorted candidate cells, the dimensions opened to their total)."""
        ks = [max(0, int(self.levels[i, d]) - up) for d in range(len(self.anc))]
        opened = [d for d, k in enumerate(ks) if k == 0]
        restricted = [d for d, k in enumerate(ks) if k > 0]
        if not restricted:
            return np.arange(self.n), opened
        sizes = [self._group(d, ks[d], int(self.anc[d][i, ks[d]])).size for d in restricted]
        d0 = restricted[int(np.argmin(sizes))]
        members = self._group(d0, ks[d0], int(self.anc[d0][i, ks[d0]]))
        keep = np.ones(members.size, dtype=bool)
        for d in restricted:
            if d != d0:
                keep &= self.anc[d][members, ks[d]] == self.anc[d][i, ks[d]]
        return np.sort(members[keep]), opened

    def narrow(
        self,
        i: int,
        cand: np.ndarray,
        opened: list[int],
        suppressed: np.ndarray,
        partners: int,
    ) -> np.ndarray:
        """``cand`` with its widest opened dimensions cut down.

        Each opened dimension whose first level has more than ``2 * partners`` other
        branches (the counties of a large state) is cut to ``i``'s branch, the coarser
        cells and ``partners`` other branches (those holding suppressed cells first, then
        those with most cells).
        """
        keep = np.ones(cand.size, dtype=bool)
        for d in opened:
            depth = self.anc[d].shape[1]
            if depth < 2:
                continue
            if int(self.levels[i, d]) > 1:
                continue  # only the first level's branches (the counties) are cut
            lv = 1
            branch = self.anc[d][cand, lv]  # -1: coarser than lv
            own = int(self.anc[d][i, lv])
            others = branch[(branch >= 0) & (branch != own)]
            ids, counts = np.unique(others, return_counts=True)
            if ids.size <= 2 * partners:
                continue  # few branches: cutting would not make the LP much smaller
            supp = np.unique(branch[(branch >= 0) & (branch != own) & suppressed[cand]])
            chosen = supp[:partners]
            if chosen.size < partners:
                free = ~np.isin(ids, chosen)
                extra = ids[free][np.argsort(-counts[free], kind="stable")]
                chosen = np.concatenate([chosen, extra[: partners - chosen.size]])
            keep &= (branch < 0) | (branch == own) | np.isin(branch, chosen)
        return cand[keep]


def _start_levels(tables: LinkedTables) -> np.ndarray:
    """Smallest neighbourhood worth trying per cell.

    In every dimension where the neighbourhood is restricted, a branching ancestor must
    lie inside it (see :meth:`LinkedTables.branch_distance`).
    """
    depth = max(len(d.levels) for d in tables.layout.dimensions)
    bdist = tables.branch_distance()
    lv = tables.levels.astype(np.float64)
    start = np.ones(tables.n_cells, dtype=np.int64)
    for h in range(depth, 0, -1):
        ok = np.all((lv <= h) | (bdist <= h), axis=1)
        start[ok] = h
    return start


def suppressible_components(tables: LinkedTables, allowed: np.ndarray) -> np.ndarray:
    """Component label of every cell.

    Suppressible cells (``allowed``) linked by a common relation share a label; other
    cells are constants and get −1.
    """
    a = tables.relations.tocsc()[:, np.flatnonzero(allowed)].tocsr()
    b = abs(a)
    b.data[:] = 1.0
    adj = sp.bmat([[None, b.T], [b, None]], format="csr")
    _, labels = connected_components(adj, directed=False)
    out = np.full(tables.n_cells, -1, dtype=np.int64)
    _, lab = np.unique(labels[: a.shape[1]], return_inverse=True)
    out[np.flatnonzero(allowed)] = lab
    return out


@dataclass
class _Job:
    tables: LinkedTables
    primary: PrimaryResult
    attrs: tuple[str, ...]
    allowed: np.ndarray
    base_cost: np.ndarray
    partners: int
    narrow_above: int
    nb: _Neighbourhoods
    start: np.ndarray  # smallest useful ``up`` per cell
    floor: float = 0.0  # every withheld cell is known to be at least this
    # per attribute, how far a primary cell may go down (its value less what presence
    # alone implies, protected_lower); None: its value
    room: dict[str, np.ndarray] | None = None


_JOB: _Job | None = None  # set before forking the workers (shared copy-on-write)
_QUEUE: Any = None


def _run_component(
    job: _Job,
    order: np.ndarray,
    progress: Callable[[int], None] | None,
    suppressed: np.ndarray,
) -> tuple[np.ndarray, list[int], dict[str, int], list[Witness]]:
    """Witnesses for the primary cells ``order``, in that order.

    Starts from the pattern ``suppressed`` (updated in place).
    """
    tables, primary, attrs = job.tables, job.primary, job.attrs
    allowed = job.allowed
    base_cost = job.base_cost
    reuse = _REUSE * float(base_cost.min(initial=1.0))
    a_csc = tables.relations.tocsc()
    # a cell moved by a witness is withheld, so known to be at least the floor: the
    # witness may take it down to the floor only (values above the floor, clipped at 0)
    vals = {a: np.maximum(tables.values(a) - job.floor, 0.0) for a in attrs}
    room = job.room or {a: tables.values(a) for a in attrs}
    depth = max(len(d.levels) for d in tables.layout.dimensions)
    nb, start = job.nb, job.start
    unprotectable: list[int] = []
    witnesses: list[Witness] = []
    stats = {
        "lp": 0,
        "lp_narrowed": 0,
        "lp_full": 0,
        "lp_infeasible": 0,
        "lp_whole_table": 0,
        "reused_witness": 0,
    }
    for done, i in enumerate(order, start=1):
        i = int(i)
        found: list[tuple[np.ndarray, np.ndarray]] = []
        first_up = int(start[i])
        for a in attrs:
            u = float(primary.protection[a][i])
            if u <= 0:
                continue
            lo = min(u, float(room[a][i]))
            for amount in (u, -lo):
                if amount == 0:
                    continue
                reused = False
                for cand, w in found:
                    wi = w[cand == i][0]
                    y = w * amount / wi
                    if _still_valid(y, vals[a][cand]):
                        reused = True
                        break
                if reused:
                    stats["reused_witness"] += 1
                    continue
                witness: tuple[np.ndarray, np.ndarray] | None = None
                for up in range(first_up, depth + 1):
                    full, opened = nb.subtree(i, up)
                    full = full[allowed[full] | (full == i)]
                    tries = []
                    if job.partners and opened and full.size > job.narrow_above:
                        narrow = nb.narrow(i, full, opened, suppressed, job.partners)
                        if narrow.size < full.size:
                            tries.append(("lp_narrowed", narrow))
                    tries.append(("lp_full", full))
                    for kind, cand in tries:
                        c = np.where(suppressed[cand], reuse, base_cost[cand])
                        y = _witness(a_csc, cand, i, amount, vals[a][cand], c)
                        stats["lp"] += 1
                        stats[kind] += 1
                        if up == depth and kind == "lp_full":
                            stats["lp_whole_table"] += 1
                        if y is not None:
                            witness = (cand, y)
                            stats[f"h{up}"] = stats.get(f"h{up}", 0) + 1
                            break
                        stats["lp_infeasible"] += 1
                    if witness is not None:
                        break
                    first_up = up + 1
                if witness is None:
                    unprotectable.append(i)
                    continue
                cand, y = witness
                tol = 1e-6 * max(1.0, abs(amount))
                nz = np.abs(y) > tol
                suppressed[cand[nz]] = True
                found.append((cand[nz], y[nz]))
                witnesses.append(Witness(i, a, cand[nz], y[nz]))
        if progress is not None:
            progress(done)
    return np.flatnonzero(suppressed), unprotectable, stats, witnesses


def _worker(
    order: np.ndarray, suppressed: np.ndarray
) -> tuple[np.ndarray, list[int], dict[str, int], list[Witness]]:
    assert _JOB is not None
    q = _QUEUE
    last = [0]

    def tick(done: int) -> None:
        if q is not None and (done - last[0] >= 25 or done == order.size):
            q.put(done - last[0])
            last[0] = done

    return _run_component(_JOB, order, tick, suppressed.copy())


def _lanes_plan(
    tables: LinkedTables, cells: np.ndarray, lanes: int, round_size: int
) -> tuple[np.ndarray, list[list[np.ndarray]]]:
    """Split one large component's primary cells (in processing order) across processes.

    For ``lanes`` processes: the cells above the branches of the splitting
    dimension (the dimension whose first level has the most branches among ``cells``, in
    QCEW the counties) first, one after the other; then rounds of ``round_size`` cells
    per lane, each lane holding whole branches (balanced by cell count).

    Returns (head cells, rounds: per round, per lane, its cells).
    """
    best, best_k = -1, 0
    for d, anc in enumerate(tables.ancestors):
        if anc.shape[1] < 2:
            continue
        k = np.unique(anc[cells, 1][anc[cells, 1] >= 0]).size
        if k > best_k:
            best, best_k = d, k
    if best < 0 or best_k < lanes:
        return cells, []
    branch = tables.ancestors[best][cells, 1]
    head = cells[branch < 0]
    rest, rb = cells[branch >= 0], branch[branch >= 0]
    ids, counts = np.unique(rb, return_counts=True)
    load = np.zeros(lanes, dtype=np.int64)
    lane_of: dict[int, int] = {}
    for j in np.argsort(-counts, kind="stable"):
        k = int(np.argmin(load))
        lane_of[int(ids[j])] = k
        load[k] += counts[j]
    lane = np.array([lane_of[int(x)] for x in rb], dtype=np.int64)
    rounds: list[list[np.ndarray]] = []
    step = round_size * lanes
    for lo in range(0, rest.size, step):
        chunk, cl = rest[lo : lo + step], lane[lo : lo + step]
        rounds.append([chunk[cl == k] for k in range(lanes)])
    return head, rounds


def default_workers(n_primary: int) -> int:
    """Processes for the components: the usable cores (one for small tables)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return 1 if n_primary < 2000 else max(1, cores)


def secondary_suppression(
    tables: LinkedTables,
    primary: PrimaryResult,
    config: SecondaryConfig | None = None,
    *,
    attributes: Sequence[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SecondaryResult:
    """Complementary suppression.

    Extends the primary pattern until every primary cell's protection interval is
    covered by the attacker's feasible interval.

    Args:
        tables: the linked tables.
        primary: the primary suppression (flags, protection levels, exempt cells).
        config: cost, neighbourhood and parallelism configuration.
        attributes: attributes to protect (default: the primary rule attributes).
        progress: called with (primary cells done, total) as cells are done.
    """
    cfg = config or SecondaryConfig()
    attrs = tuple(attributes) if attributes is not None else primary.attributes
    keep = tables.cells.get_column("table_code").is_in(list(cfg.keep_tables)).to_numpy()
    allowed = ~primary.exempt & (~keep | primary.primary)
    base_cost = cell_costs(tables, cfg.cost, cfg.cost_attribute or attrs[0])
    job = _Job(
        tables,
        primary,
        attrs,
        allowed,
        base_cost,
        cfg.partners,
        cfg.narrow_above,
        _Neighbourhoods(tables),
        _start_levels(tables),
        cfg.floor,
        # a primary cell goes down only to what presence alone implies (protected_lower):
        # computed once for all components
        {
            a: tables.values(a)
            - protected_lower(tables.relations, tables.values(a), np.inf, cfg.floor or None)
            for a in attrs
        }
        if cfg.floor
        else None,
    )
    # order: coarse tables first, then by decreasing protection
    coarse = tables.levels.sum(axis=1)
    prim = np.flatnonzero(primary.primary)
    prot0 = primary.protection[attrs[0]][prim] if attrs else np.zeros(prim.size)
    order = prim[np.lexsort((-prot0, coarse[prim]))]
    comp = suppressible_components(tables, allowed | primary.primary)
    labels = comp[order]
    groups = [order[labels == c] for c in np.unique(labels)]
    groups.sort(key=lambda g: -g.size)  # largest first: it sets the wall time
    # stages: the tasks of one stage start from the same pattern and are merged after it
    first: list[np.ndarray] = []
    later: list[list[np.ndarray]] = []
    for g in groups:
        if cfg.lanes > 1 and g.size >= cfg.parallel_min:
            head, rounds = _lanes_plan(tables, g, cfg.lanes, cfg.round_size)
            if head.size:
                first.append(head)
            for k, r in enumerate(rounds):
                if k >= len(later):
                    later.append([])
                later[k] += [x for x in r if x.size]
        else:
            first.append(g)
    stages = [first, *later] if first else later
    total = int(order.size)
    workers = cfg.workers or default_workers(total)
    workers = min(workers, max(len(st) for st in stages)) if stages else 1
    suppressed = primary.primary.copy()
    unprotectable: list[int] = []
    stats: dict[str, int] = {"components": len(groups), "workers": workers, "stages": len(stages)}
    witnesses: list[Witness] = []
    done = [0]

    def tick(k: int) -> None:
        done[0] += k
        if progress is not None:
            progress(done[0], total)

    def merge(results: list[tuple[np.ndarray, list[int], dict[str, int], list[Witness]]]) -> None:
        for idx, unp, st, wit in results:
            suppressed[idx] = True
            unprotectable.extend(unp)
            for k, v in st.items():
                stats[k] = stats.get(k, 0) + v
            witnesses.extend(wit)

    pool = None
    global _JOB, _QUEUE
    try:
        if workers > 1 and "fork" in mp.get_all_start_methods():
            ctx = mp.get_context("fork")  # the job is shared copy-on-write, not pickled
            _JOB, _QUEUE = job, ctx.Queue()
            pool = ctx.Pool(workers)
        finished = 0
        for tasks in stages:
            finished += sum(int(t.size) for t in tasks)
            if pool is None or len(tasks) == 1:
                res = []
                for t in tasks:
                    base = done[0]

                    def local(d: int, base: int = base) -> None:
                        done[0] = base + d
                        if progress is not None:
                            progress(done[0], total)

                    res.append(_run_component(job, t, local, suppressed.copy()))
                merge(res)
                continue
            pending = [pool.apply_async(_worker, (t, suppressed)) for t in tasks]
            # a task can finish between two looks: wait on the first still running, if any
            while running := [p for p in pending if not p.ready()]:
                while not _QUEUE.empty():
                    tick(_QUEUE.get())
                running[0].wait(0.2)
            while not _QUEUE.empty():
                tick(_QUEUE.get())
            merge([p.get() for p in pending])  # in task order: deterministic
            done[0] = finished
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        _JOB, _QUEUE = None, None
    secondary = suppressed & ~primary.primary
    return SecondaryResult(
        suppressed=suppressed,
        secondary=secondary,
        unprotectable=np.unique(np.asarray(unprotectable, dtype=np.int64)),
        lps=stats.get("lp", 0),
        stats=stats,
        witnesses=tuple(witnesses),
    )
