r"""Reconstruction of the records per unit (a block): an integer program per unit.

**Records.** The tables classify by a unit key (e.g. ``block``) and record attributes
(e.g. age, sex, race, …: every key of the unit's tables but the unit and keys constant
within a unit, such as a coarser geography). A record is one combination :math:`r` of
attribute values in a unit; the unknowns are the counts :math:`x_r \in \mathbb{Z}_{\ge 0}`
(jobs with those attributes in that unit). Each published cell :math:`c` of the unit is
:math:`\sum_{r \in c} x_r` (the records that agree with the cell on its attributes).

**Candidates.** The combinations of the values each attribute takes in the unit's cells,
less those covered by a cell whose interval is {0} (an exact zero, a range or rounding
that rules out one job). For a noisy cell the attacker also drops values whose published
cell is below ``noisy_zero`` (a choice of the attacker, which can only lose records). A
unit with more than ``max_candidates`` combinations is not attempted (counted).

**The integer program** (:func:`scipy.optimize.milp`, HiGHS):

.. math::
    \min \sum_{c\ \text{noisy}} \mathrm{NLL}_c\Big(\sum_{r\in c} x_r\Big)
    \quad\text{s.t.}\quad \ell_c \le \sum_{r \in c} x_r \le u_c\ \ (c\ \text{not noisy}),
    \qquad x \in \mathbb{Z}_{\ge 0}

with :math:`\ell_c, u_c` from the cell's status (exact: equality; rounded to base b:
±b/2; range; suppressed: none). For a Laplace law of scale b the negative
log-likelihood is :math:`|s - v|/b` (L1, two slack variables per cell); for a Gaussian
law of standard deviation σ it is :math:`(s-v)^2/(2σ^2)`, written as the maximum of its
secants between consecutive whole numbers (exact at every whole :math:`s`, which is all
:math:`s` takes) over :math:`v \pm 6σ` (beyond it, the outermost secants continue:
an under-estimate far in the tails).

**Choosing among solutions.** Tables rarely determine the records; the attacker picks,
among the solutions the tables allow (for noisy tables: as a tie-break below any change
of the likelihood), the records that would be most probable if a unit's attributes were
independent with the shares its own cells publish: the cost
:math:`\sum_r x_r \cdot (-\log \prod_j p_j(r_j))` (linear in x). A uniform choice would
rebuild fewer records; this prior is public (it uses published cells only).

**Confidence.** A reconstructed record (one copy of a combination with
:math:`x^\star_r \ge 1`) is *certain* when every solution whose objective is within
``threshold`` of the optimum (for exact tables: every solution) keeps at least that
many copies: :math:`m_r = \min x_r` over those solutions, and the first :math:`m_r`
copies are certain. The audit finds :math:`m_r` by re-solving with the objective
:math:`\min x_r` under the constraint :math:`\mathrm{NLL} \le \mathrm{NLL}^\star + \tau`;
first it *screens* with :math:`\min \sum_{r \in S} x_r` over the records still possibly
certain, since one such solution refutes many at once, and every solution met lowers the
other records' bounds. With exact tables a certain record is in every dataset consistent
with the tables — true data included — so certain records are always right (a test
checks it); with noise, :math:`\tau` is a likelihood ratio (default ln 20: every
alternative without the record is at least 20 times less likely).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import polars as pl
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from eree.engine.unitmap import SerialMap, UnitMapper
from eree.evaluate.reconstruct.closed_form import closed_form, north_west, split_groups
from eree.evaluate.reconstruct.tables import PublishedTables

__all__ = [
    "ReconstructConfig",
    "Reconstruction",
    "UnitCells",
    "UnitRecords",
    "reconstruct",
    "solve_unit",
]


@dataclass(frozen=True)
class ReconstructConfig:
    """The attacker's settings.

    Attributes:
        unit: the key that splits the records into independent units (e.g. ``block``).
        attributes: the record attributes (default: every key of the unit's tables but
            the unit and keys constant within each unit).
        threshold: τ, in negative log-likelihood units, for noisy tables' confidence.
        noisy_zero: a noisy cell published below this rules its value out (candidates).
        max_candidates: units with more candidate combinations are not attempted.
        max_checks: individual confidence checks per unit (beyond, a record is counted
            as not certain: conservative).
        time_limit: seconds per integer program.
        tables: use only these tables (default: every table classified by the unit).
        decompose: units whose tables split into independent groups of attributes are
            solved over the groups' margins (:mod:`.closed_form`: exact tables without
            any program; others by a program over the margins) — the same optimum and
            certain records as the program over every combination.
    """

    unit: str
    attributes: tuple[str, ...] | None = None
    threshold: float = math.log(20.0)
    noisy_zero: float = 0.5
    max_candidates: int = 20_000
    max_checks: int = 200
    time_limit: float = 20.0
    tables: tuple[str, ...] | None = None
    decompose: bool = True


@dataclass(frozen=True)
class Reconstruction:
    """The reconstructed records (the attacker's output; derived from published cells).

    Attributes:
        attributes: the record attributes.
        labels: per attribute, the value labels (codes index into them).
        units: the unit labels.
        unit: per reconstructed combination, its unit index.
        codes: combinations × attributes, value codes.
        count: copies reconstructed (x*).
        certain: copies certain (m ≤ x*).
        skipped_units: units not attempted (too many candidates) and why.
        failed_units: units whose program found no solution (inconsistent tables or
            time limit).
        stats: counters and timings.
        tables_used: the tables the program used; tables_unused: the others.
    """

    attributes: tuple[str, ...]
    labels: dict[str, list[str]]
    units: list[str]
    unit: np.ndarray
    codes: np.ndarray
    count: np.ndarray
    certain: np.ndarray
    skipped_units: np.ndarray
    failed_units: np.ndarray
    stats: dict[str, Any] = field(default_factory=dict)
    tables_used: tuple[str, ...] = ()
    tables_unused: tuple[str, ...] = ()

    def frame(self) -> pl.DataFrame:
        """The records as a frame: unit, attributes, count, certain (internal)."""
        cols: dict[str, Any] = {"unit": [self.units[i] for i in self.unit]}
        for j, a in enumerate(self.attributes):
            lab = self.labels[a]
            cols[a] = [lab[k] for k in self.codes[:, j]]
        cols["count"] = self.count
        cols["certain"] = self.certain
        schema = {"unit": pl.Utf8, **dict.fromkeys(self.attributes, pl.Utf8)}
        return pl.DataFrame(cols, schema=schema | {"count": pl.Int64, "certain": pl.Int64})


@dataclass
class _Unit:
    """One unit's program data."""

    cand: np.ndarray  # candidates × attributes, codes
    rows: sp.csr_matrix  # cells × candidates
    lo: np.ndarray
    hi: np.ndarray
    noisy: np.ndarray  # bool per cell
    value: np.ndarray
    scale: np.ndarray
    gaussian: np.ndarray  # bool per cell


def _mixed(codes: np.ndarray, radix: np.ndarray) -> np.ndarray:
    out = np.zeros(codes.shape[0], dtype=np.int64)
    for j in range(codes.shape[1]):
        out = out * int(radix[j]) + codes[:, j]
    return out


class _Program:
    """The integer program of one unit: variables x, then L1 slacks, then L2 epigraphs."""

    def __init__(self, u: _Unit, time_limit: float) -> None:
        self.u = u
        self.time_limit = time_limit
        n = u.cand.shape[0]
        self.n = n
        noisy = np.flatnonzero(u.noisy)
        lap = noisy[~u.gaussian[noisy]]
        gau = noisy[u.gaussian[noisy]]
        hard = np.flatnonzero(~u.noisy)
        blocks: list[sp.spmatrix] = []
        lbs: list[np.ndarray] = []
        ubs: list[np.ndarray] = []
        nl, ng = lap.size, gau.size
        nv = n + 2 * nl + ng
        cost = np.zeros(nv)
        # hard cells
        if hard.size:
            blocks.append(sp.hstack([u.rows[hard], sp.csr_matrix((hard.size, nv - n))]))
            lbs.append(u.lo[hard])
            ubs.append(u.hi[hard])
        # Laplace: rows·x − e⁺ + e⁻ = v
        if nl:
            eye = sp.identity(nl, format="csr")
            blocks.append(
                sp.hstack([u.rows[lap], -eye, eye, sp.csr_matrix((nl, ng))], format="csr")
            )
            lbs.append(u.value[lap])
            ubs.append(u.value[lap])
            w = 1.0 / u.scale[lap]
            cost[n : n + nl] = w
            cost[n + nl : n + 2 * nl] = w
        # Gaussian: t_c ≥ f(k) + (f(k+1) − f(k)) (s − k) for breakpoints k
        for j, c in enumerate(gau):
            v, sig = float(u.value[c]), float(u.scale[c])
            k0 = max(0, math.floor(v - 6 * sig))
            k1 = math.ceil(v + 6 * sig)
            ks = np.arange(k0, k1 + 1, max(1, (k1 - k0) // 60), dtype=np.float64)
            f = (ks - v) ** 2 / (2 * sig * sig)
            slope = np.diff(f) / np.diff(ks) if ks.size > 1 else np.zeros(0)
            for k, fk, g in zip(ks[:-1], f[:-1], slope, strict=True):
                # g·s − t ≤ g·k − f(k)
                row = sp.hstack(
                    [
                        g * u.rows[c],
                        sp.csr_matrix((1, 2 * nl)),
                        sp.csr_matrix(([-1.0], ([0], [j])), shape=(1, ng)),
                    ],
                    format="csr",
                )
                blocks.append(row)
                lbs.append(np.array([-np.inf]))
                ubs.append(np.array([g * k - fk]))
            cost[n + 2 * nl + j] = 1.0
        self.nv = nv
        self.cost = cost
        self.a = sp.vstack(blocks, format="csr") if blocks else sp.csr_matrix((0, nv))
        self.lb = np.concatenate(lbs) if lbs else np.zeros(0)
        self.ub = np.concatenate(ubs) if ubs else np.zeros(0)
        self.integrality = np.zeros(nv)
        self.integrality[:n] = 1
        self.noisy = bool(nl or ng)
        self.calls = 0

    def solve(
        self,
        c: np.ndarray,
        cap: float | None = None,
        gap: float = 1e-6,
        time_share: float = 1.0,
    ) -> tuple[np.ndarray, float, float] | None:
        """Minimise c·z; with ``cap``, subject to NLL ≤ cap. None when infeasible.

        ``gap``: HiGHS's relative MIP gap (a larger gap stops at a good feasible point);
        ``time_share``: of the time limit. Returns (z, objective, proved lower bound of
        the objective: below the objective when stopped by the gap or the time limit).
        """
        cons = []
        if self.a.shape[0]:
            cons.append(LinearConstraint(self.a, self.lb, self.ub))
        if cap is not None and self.noisy:
            cons.append(LinearConstraint(self.cost[None, :], -np.inf, cap))
        self.calls += 1
        ub = np.full(self.nv, np.inf)
        res = milp(
            c,
            constraints=cons,
            integrality=self.integrality,
            bounds=Bounds(np.zeros(self.nv), ub),
            options={
                "time_limit": self.time_limit * time_share,
                "disp": False,
                "mip_rel_gap": gap,
            },
        )
        if res.x is None or res.status not in (0, 1):
            return None
        bound = getattr(res, "mip_dual_bound", None)
        lower = float(res.fun) if bound is None or not np.isfinite(bound) else float(bound)
        return np.asarray(res.x), float(res.fun), min(lower, float(res.fun))


def _certain(prog: _Program, x: np.ndarray, opt: float, tau: float, max_checks: int) -> np.ndarray:
    """m_r per candidate: copies kept by every solution within τ of the optimum."""
    n = prog.n
    cap = opt + tau if prog.noisy else None
    upper = x.copy()  # m_r ≤ x*_r; lowered by every solution met

    def seen(z: np.ndarray) -> None:
        np.minimum(upper, np.round(z[:n]), out=upper)

    for _ in range(3):  # screens
        s = np.flatnonzero(upper > 0)
        if s.size == 0:
            return upper
        c = np.zeros(prog.nv)
        c[s] = 1.0
        # any solution refutes; a good one refutes more
        r = prog.solve(c, cap, gap=0.2, time_share=0.25)
        if r is None:
            break
        before = int(upper.sum())
        seen(r[0])
        if int(upper.sum()) >= before:
            break
    checks = 0
    done = np.zeros(n, dtype=bool)
    while True:
        s = np.flatnonzero((upper > 0) & ~done)
        if s.size == 0:
            break
        j = int(s[0])
        done[j] = True
        if checks >= max_checks:
            upper[j] = 0  # not checked: not counted as certain
            continue
        c = np.zeros(prog.nv)
        c[j] = 1.0
        r = prog.solve(c, cap)
        checks += 1
        if r is None:  # cannot happen with a feasible optimum; be conservative
            upper[j] = 0
            continue
        seen(r[0])
        # the proved lower bound of min x_j (the optimum when solved to the end)
        upper[j] = min(upper[j], math.ceil(r[2] - 1e-6))
    return upper


def _prior_cost(
    cand: np.ndarray, codes: np.ndarray, value: np.ndarray, lower: np.ndarray
) -> np.ndarray:
    """−log of each candidate's probability if its attributes were independent.

    Each attribute's shares come from the unit's cells that classify by the fewest
    attributes including it (the published value; a withheld cell its lower bound),
    plus ½ per value. This is the attacker's tie-break among the solutions the tables
    allow (for exact tables, its choice among equally consistent datasets).
    """
    out = np.zeros(cand.shape[0])
    present = codes >= 0
    width = present.sum(axis=1)
    v = np.where(np.isnan(value), lower, value)
    for j in range(cand.shape[1]):
        has = present[:, j]
        if not has.any():
            continue
        mw = width[has].min()
        rows = has & (width == mw)
        k = int(max(cand[:, j].max(initial=0), codes[rows, j].max(initial=0))) + 1
        share = np.bincount(codes[rows, j], weights=np.maximum(v[rows], 0.0), minlength=k) + 0.5
        cj = cand[:, j]
        out -= np.where(cj >= 0, np.log(share[np.maximum(cj, 0)] / share.sum()), 0.0)
    return out


def _most_likely(prog: _Program, prior: np.ndarray) -> tuple[np.ndarray | None, float]:
    """The program's optimum with ``prior`` (one cost per record variable) as a tie-break.

    Under noise the prior is scaled below any change of the likelihood, so it only chooses
    among equally likely datasets; with exact tables it is the objective's only term.
    Returns the solution and its likelihood cost, or ``(None, nan)`` when HiGHS proves none.
    """
    first = prog.cost.copy()
    if prog.noisy:  # a tie-break only: below any change of the likelihood
        w = 1e-3 * float(np.min(prog.cost[prog.cost > 0], initial=1.0))
        prior = prior * w / max(1.0, float(prior.max(initial=0.0)) * prior.shape[0])
    first[: prog.n] += prior
    sol = prog.solve(first, gap=1e-4 if prog.noisy else 1e-2)
    if sol is None:
        return None, float("nan")
    return sol[0], float(prog.cost @ sol[0])


def _columns(published: PublishedTables, cfg: ReconstructConfig) -> tuple[list[str], list[str]]:
    """(tables used, record attributes)."""
    by = published.tables
    use = [t for t in by if cfg.unit in by[t] and (cfg.tables is None or t in cfg.tables)]
    if not use:
        raise ValueError(f"no table is classified by the unit {cfg.unit!r}")
    if cfg.attributes is not None:
        attrs = list(cfg.attributes)
    else:
        keys = sorted({k for t in use for k in by[t]} - {cfg.unit})
        cells = published.cells.filter(pl.col("table").is_in(use))
        attrs = []
        for k in keys:
            n = cells.filter(pl.col(k).is_not_null()).group_by(cfg.unit).agg(pl.col(k).n_unique())
            if n.height and int(n.get_column(k).max()) > 1:  # type: ignore[arg-type]
                attrs.append(k)
        keys_order = [k for k in published.keys if k in attrs]
        attrs = keys_order
    return use, attrs


@dataclass(frozen=True)
class UnitCells:
    """One unit's published cells, coded: the input of :func:`solve_unit` (picklable).

    Attributes:
        index: the unit's index among all units.
        codes: cells × attributes, value codes (−1: the cell's table does not classify
            by the attribute).
        lo, hi: each cell's interval from its status.
        noisy: per cell, published with noise; value, scale, gaussian: its law.
        radix: values per attribute.
    """

    index: int
    codes: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    noisy: np.ndarray
    value: np.ndarray
    scale: np.ndarray
    gaussian: np.ndarray
    radix: np.ndarray


@dataclass(frozen=True)
class UnitRecords:
    """One unit's result (:func:`solve_unit`): its records, or why there are none.

    ``outcome``: ``closed_form`` (exact tables in independent groups, no program),
    ``program`` (the integer program), ``empty`` (no job), ``skipped`` (too many
    candidates) or ``failed`` (no solution: inconsistent tables or the time limit).
    """

    index: int
    codes: np.ndarray
    count: np.ndarray
    certain: np.ndarray
    outcome: str
    programs: int


def _none(p: UnitCells, outcome: str, programs: int = 0) -> UnitRecords:
    k = p.codes.shape[1]
    z = np.zeros(0, dtype=np.int64)
    return UnitRecords(p.index, np.zeros((0, k), dtype=np.int64), z, z, outcome, programs)


def solve_unit(p: UnitCells, cfg: ReconstructConfig) -> UnitRecords:
    """The records of one unit: closed form when its tables allow, else the integer program.

    A pure function of the unit's published cells and the settings (no other state): units
    are independent, so any map — processes, a cluster — may run it (:mod:`eree.engine.unitmap`).
    """
    cc, lo, hi, noisy, val = p.codes, p.lo, p.hi, p.noisy, p.value
    if cfg.decompose:
        cf = closed_form(cc, lo, hi, noisy, p.radix)
        if cf is not None:
            outcome = "closed_form" if cf[1].size else "empty"
            return UnitRecords(p.index, cf[0], cf[1], cf[2], outcome, 0)
    zero = (~noisy & (hi < 0.5)) | (noisy & (val < cfg.noisy_zero))
    # candidate values per attribute: seen in the unit, not ruled out by a one-way zero
    vals: list[np.ndarray] = []
    for j in range(cc.shape[1]):
        present = cc[:, j] >= 0
        only = present & (np.sum(cc >= 0, axis=1) == 1)
        seen_v = np.unique(cc[present, j])
        dead = np.unique(cc[only & zero, j])
        vals.append(np.setdiff1d(seen_v, dead))
    if any(v.size == 0 for v in vals):
        return _none(p, "empty")
    groups = split_groups(cc >= 0) if cfg.decompose else None
    if groups is not None:
        return _solve_groups(p, cfg, vals, groups)
    size = int(np.prod([max(1, v.size) for v in vals], dtype=np.float64))
    if size > cfg.max_candidates:
        return _none(p, "skipped")
    grids = np.meshgrid(*vals, indexing="ij")
    cand = np.stack([g.ravel() for g in grids], axis=1)
    radix = p.radix
    # cell incidence: a candidate is in a cell when it agrees on the cell's attributes
    present = cc >= 0
    pat_keys = [tuple(q) for q in present]
    trip_r: list[np.ndarray] = []
    trip_c: list[np.ndarray] = []
    for pat in set(pat_keys):
        pm = np.array(pat, dtype=bool)
        ci = np.flatnonzero((present == pm).all(axis=1))
        if pm.any():
            kc = _mixed(cand[:, pm], radix[pm])
            kk = _mixed(cc[ci][:, pm], radix[pm])
            srt = np.argsort(kc, kind="stable")
            kcs = kc[srt]
            for ri, key in zip(ci, kk, strict=True):
                a0, a1 = np.searchsorted(kcs, [key, key + 1])
                trip_c.append(srt[a0:a1])
                trip_r.append(np.full(a1 - a0, ri))
        else:
            for ri in ci:
                trip_c.append(np.arange(cand.shape[0]))
                trip_r.append(np.full(cand.shape[0], ri))
    rr = np.concatenate(trip_r) if trip_r else np.zeros(0, dtype=np.int64)
    cl = np.concatenate(trip_c) if trip_c else np.zeros(0, dtype=np.int64)
    inc = sp.csr_matrix((np.ones(rr.size), (rr, cl)), shape=(cc.shape[0], cand.shape[0]))
    # drop candidates covered by a cell that must be zero (hard zeros only)
    hard_zero = ~noisy & (hi < 0.5)
    if hard_zero.any():
        keep = np.asarray(inc[hard_zero].sum(axis=0)).ravel() == 0
        cand = cand[keep]
        inc = inc[:, keep].tocsr()
    if cand.shape[0] == 0:
        return _none(p, "failed")
    unit = _Unit(cand, inc, lo, hi, noisy, val, np.maximum(p.scale, 1e-9), p.gaussian)
    prog = _Program(unit, cfg.time_limit)
    z, opt = _most_likely(prog, _prior_cost(cand, cc, val, lo))
    if z is None:
        return _none(p, "failed", prog.calls)
    x = np.round(z[: prog.n])
    m = _certain(prog, x, opt, cfg.threshold, cfg.max_checks)
    pos = np.flatnonzero(x > 0)
    return UnitRecords(
        p.index, cand[pos], x[pos].astype(np.int64), m[pos].astype(np.int64), "program", prog.calls
    )


def _solve_groups(
    p: UnitCells, cfg: ReconstructConfig, vals: list[np.ndarray], groups: list[np.ndarray]
) -> UnitRecords:
    """The program over the groups' margins (:mod:`.closed_form` for why it suffices).

    Variables: per group, one count per combination of its attributes' candidate values
    (less those under a cell that must be zero); every cell is a sum of one group's
    variables; each group's variables sum to the first group's (the unit's N). The
    likelihood and the prior are sums over margins, so the optimum is the big program's;
    the records are the north-west corner of the optimal margins, and a record's certain
    copies are min over margins within τ of its Fréchet bound Σ_g n_g(v_g) − (G−1)N (a
    linear objective).
    """
    cc, k = p.codes, p.codes.shape[1]
    parts: list[np.ndarray] = []
    gid_parts: list[np.ndarray] = []
    for gi, gm in enumerate(groups):
        attrs = np.flatnonzero(gm)
        grids = np.meshgrid(*[vals[j] for j in attrs], indexing="ij")
        combos = np.full((grids[0].size, k), -1, dtype=np.int64)
        for a, g in zip(attrs, grids, strict=True):
            combos[:, a] = g.ravel()
        parts.append(combos)
        gid_parts.append(np.full(combos.shape[0], gi))
    var = np.concatenate(parts)
    gid = np.concatenate(gid_parts)
    present = cc >= 0
    # each cell's group: the one holding its attributes (the total: the first group)
    cell_g = np.zeros(cc.shape[0], dtype=np.int64)
    for gi, gm in enumerate(groups):
        inside = present.any(axis=1) & ~(present & ~gm).any(axis=1)
        cell_g[inside] = gi
    inc = np.zeros((cc.shape[0], var.shape[0]))
    for c in range(cc.shape[0]):
        q = present[c]
        inc[c] = (gid == cell_g[c]) & np.all(var[:, q] == cc[c, q], axis=1)
    hard_zero = ~p.noisy & (p.hi < 0.5)
    keep = ~(inc[hard_zero] > 0).any(axis=0) if hard_zero.any() else np.ones(var.shape[0], bool)
    var, gid, inc = var[keep], gid[keep], inc[:, keep]
    if any(not np.any(gid == gi) for gi in range(len(groups))):
        return _none(p, "failed")
    # links: every group's variables sum to the first group's
    ng = len(groups)
    link = np.zeros((ng - 1, var.shape[0]))
    for gi in range(1, ng):
        link[gi - 1] = (gid == gi).astype(float) - (gid == 0).astype(float)
    zeros = np.zeros(ng - 1)
    no = np.zeros(ng - 1, dtype=bool)
    unit = _Unit(
        var,
        sp.csr_matrix(np.vstack([inc, link])),
        np.concatenate([p.lo, zeros]),
        np.concatenate([p.hi, zeros]),
        np.concatenate([p.noisy, no]),
        np.concatenate([p.value, zeros]),
        np.concatenate([np.maximum(p.scale, 1e-9), np.ones(ng - 1)]),
        np.concatenate([p.gaussian, no]),
    )
    prog = _Program(unit, cfg.time_limit)
    z, opt = _most_likely(prog, _prior_cost(var, cc, p.value, p.lo))
    if z is None:
        return _none(p, "failed", prog.calls)
    n_var = np.round(z[: prog.n]).astype(np.int64)
    n = int(n_var[gid == 0].sum())
    if n == 0:
        return _none(p, "empty", prog.calls)
    margins = []
    index = []  # per group: positions (in var) of its values with a count
    for gi, gm in enumerate(groups):
        pos = np.flatnonzero((gid == gi) & (n_var > 0))
        margins.append((np.flatnonzero(gm), var[pos][:, gm], n_var[pos]))
        index.append(pos)
    codes, x, frechet = north_west(margins, k)
    # each record's variables, one per group
    rec_var = np.zeros((codes.shape[0], ng), dtype=np.int64)
    for gi, gm in enumerate(groups):
        cols = np.flatnonzero(gm)
        sub = var[index[gi]][:, cols]
        for r in range(codes.shape[0]):
            rec_var[r, gi] = index[gi][
                int(np.flatnonzero(np.all(sub == codes[r, cols], axis=1))[0])
            ]
    upper = frechet.copy()  # m_r ≤ its Fréchet bound at any margins within τ
    cap = opt + cfg.threshold if prog.noisy else None
    base = np.zeros(prog.nv)
    base[: prog.n][gid == 0] = -(ng - 1)
    checks = 0
    for r in np.argsort(-upper, kind="stable"):
        if upper[r] <= 0:
            continue
        if checks >= cfg.max_checks:
            upper[r] = 0  # not checked: not counted as certain
            continue
        obj = base.copy()
        np.add.at(obj, rec_var[r], 1.0)
        res = prog.solve(obj, cap)
        checks += 1
        if res is None:
            upper[r] = 0
            continue
        # the margins met bound every record's Fréchet minimum
        other = np.round(res[0][: prog.n])
        fr = other[rec_var].sum(axis=1) - (ng - 1) * other[gid == 0].sum()
        np.minimum(upper, np.maximum(fr, 0).astype(np.int64), out=upper)
        upper[r] = min(upper[r], max(0, math.ceil(res[2] - 1e-6)))
    return UnitRecords(p.index, codes, x, upper, "groups", prog.calls)


def _code(s: pl.Series) -> tuple[list[str], np.ndarray]:
    """Sorted labels of a text column and each row's code (−1: null)."""
    lab = sorted(x for x in s.unique().to_list() if x is not None)
    codes = (
        s.replace_strict(lab, list(range(len(lab))), default=-1, return_dtype=pl.Int64)
        .fill_null(-1)
        .to_numpy()
    )
    return lab, np.asarray(codes, dtype=np.int64)


def reconstruct(
    published: PublishedTables,
    cfg: ReconstructConfig,
    *,
    progress: Callable[[int, int], None] | None = None,
    units: Sequence[str] | None = None,
    mapper: UnitMapper | None = None,
) -> Reconstruction:
    """Rebuild the records of every unit from the published tables.

    Args:
        published: the tables.
        cfg: the attacker's settings.
        progress: called with (units done, units).
        units: only these units (default: all).
        mapper: how :func:`solve_unit` is mapped over the units (default: in this
            process; :class:`eree.engine.unitmap.ProcessMap` for worker processes).
    """
    t0 = time.perf_counter()
    use, attrs = _columns(published, cfg)
    cells = published.cells.with_row_index("_i").filter(pl.col("table").is_in(use))
    if units is not None:
        cells = cells.filter(pl.col(cfg.unit).is_in(list(units)))
    lo_all, hi_all = published.bounds()
    labels: dict[str, list[str]] = {}
    codes = np.zeros((cells.height, len(attrs)), dtype=np.int64)
    for j, a in enumerate(attrs):
        labels[a], codes[:, j] = _code(cells.get_column(a))
    radix = np.array([max(1, len(labels[a])) for a in attrs], dtype=np.int64)
    unit_s = cells.get_column(cfg.unit)
    ulab, uidx = np.unique(unit_s.to_numpy().astype(str), return_inverse=True)
    order = np.argsort(uidx, kind="stable")
    starts = np.searchsorted(uidx[order], np.arange(ulab.size + 1))
    gi = cells.get_column("_i").to_numpy()
    st = cells.get_column("status").to_numpy().astype(str)
    val = cells.get_column("value").fill_null(np.nan).to_numpy().astype(np.float64)
    scale = cells.get_column("scale").fill_null(1.0).to_numpy().astype(np.float64)
    gauss = cells.get_column("law").fill_null("laplace").to_numpy().astype(str) == "gaussian"
    lo = lo_all[gi]
    hi = hi_all[gi]
    noisy = st == "noisy"

    def problems() -> Iterator[UnitCells]:
        for ui in range(ulab.size):
            r = order[starts[ui] : starts[ui + 1]]
            yield UnitCells(ui, codes[r], lo[r], hi[r], noisy[r], val[r], scale[r], gauss[r], radix)

    run = mapper if mapper is not None else SerialMap()
    results: list[UnitRecords] = []
    skipped: list[int] = []
    failed: list[int] = []
    outcomes: dict[str, int] = {}
    calls = 0
    for done, res in enumerate(run.map(partial(solve_unit, cfg=cfg), problems()), start=1):
        outcomes[res.outcome] = outcomes.get(res.outcome, 0) + 1
        calls += res.programs
        if res.count.size:
            results.append(res)
        if res.outcome == "skipped":
            skipped.append(res.index)
        elif res.outcome == "failed":
            failed.append(res.index)
        if progress is not None:
            progress(done, ulab.size)
    k = len(attrs)
    return Reconstruction(
        tuple(attrs),
        labels,
        [str(u) for u in ulab],
        np.concatenate([np.full(r.count.size, r.index) for r in results])
        if results
        else np.zeros(0, dtype=np.int64),
        np.concatenate([r.codes for r in results]) if results else np.zeros((0, k), np.int64),
        np.concatenate([r.count for r in results]) if results else np.zeros(0, np.int64),
        np.concatenate([r.certain for r in results]) if results else np.zeros(0, np.int64),
        np.array(sorted(skipped), dtype=np.int64),
        np.array(sorted(failed), dtype=np.int64),
        {
            "units": int(ulab.size),
            "programs": calls,
            "outcomes": outcomes,
            "workers": run.workers,
            "seconds": round(time.perf_counter() - t0, 2),
        },
        tuple(use),
        tuple(t for t in published.tables if t not in use),
    )
