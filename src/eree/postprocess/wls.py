r"""Establishment microdata by weighted least squares (Webb et al. §7, Eq. 1).

See docs/design.md#post-processing.

The unknowns are the establishments' values of one confidential attribute,
:math:`x \in \mathbb{R}^n` (each attribute is solved on its own). Every
:class:`GroupSumObservation` is a group-by sum query — one group per establishment for the
identity query — answered with noisy values :math:`a_g` and variances :math:`v_g`
(estimated, e.g. ψ-mechanism's v̂, or public, e.g. pnc's). Eq. 1:

.. math:: \hat x = \arg\min_x \sum_{q}\sum_{g \in q} \frac{(\sum_{j \in g} x_j - a_g)^2}{v_g},

i.e. the normal equations :math:`M x = b` with
:math:`M = \sum_q G_q^\top W_q G_q`, :math:`b = \sum_q G_q^\top W_q a_q`
(:math:`G_q` the 0/1 group-indicator matrix, :math:`W_q = \mathrm{diag}(1/v_g)`).
Measurements of the same grouping are merged first (inverse-variance average: the same
objective up to a constant). A variance of ``inf`` means "not measured" (weight 0).

With an identity measurement of finite variance for every establishment (the GEDP
workflow always has one) the problem has a unique solution, computed in two exact
steps followed, when needed, by conjugate gradients:

1. *Reduction to the cells.* Let F be the coarsest common refinement of the
   non-identity groupings (a measured grouping when all others coarsen it — e.g.
   County×NAICS-5 in the QCEW paper's workload —, else their cross-classification).
   Every non-identity term depends on x only through the F-cell sums t. For fixed t,
   the identity term is minimised by :math:`x_j = a_j + s_j (t_f - z_f)/S_f`
   (:math:`s_j = v_j`, :math:`z_f = \sum_{j\in f} a_j`, :math:`S_f = \sum_{j\in f}
   s_j`), with minimum :math:`(t_f - z_f)^2/S_f`: the problem becomes the same kind of
   problem on the m_F cells, with identity answers z (variances S) merged with F's own
   measurement. Exact; n = 10M establishments reduce to ≈ 0.9M cells.
2. *Chains are solved exactly* ("tree"): when the remaining groupings are nested
   (ID ⊂ County ⊂ Total — Appendix H —, or ID ⊂ County×NAICS-5 ⊂ County ⊂ State),
   two passes over the hierarchy (Gaussian belief propagation on a tree, the weighted
   form of Hay et al. 2009's consistency step): bottom-up, each node's estimate ``z``
   and variance ``s`` combine its own measurement with the sum of its children's
   (inverse-variance weighting); top-down, a parent's final estimate minus the sum of
   its children's ``z`` is shared among the children in proportion to their ``s``.
3. *Crossed groupings* ("pcg", e.g. County and NAICS-5, not nested): conjugate
   gradients on the reduced normal equations, matrix-free (:math:`G_q^\top W_q G_q t`
   is a ``bincount`` and a gather), preconditioned by the exact inverse of the chain
   part (step 2; the chain is chosen to leave the fewest groups outside it, so the
   preconditioned operator is the identity plus a matrix of rank at most the number of
   off-chain groups). Measured on QCEW-like data: 5–10 iterations for employment,
   20–100 for wages (whose identity answers are very noisy). Starts from the chain
   solution; stops when :math:`\lVert b - Mt\rVert_2 \le` ``rtol`` :math:`\cdot
   \lVert b\rVert_2` (default ``rtol = 1e-10``); the result reports the relative
   residual of the full normal equations. The tests check agreement with the dense
   closed form to 1e-6 relative.

``method``: ``"auto"`` (default: the above, or ``"lsqr"`` without a usable identity
measurement), ``"tree"`` (the above, refusing crossed groupings), ``"pcg"`` (the
above), ``"lsqr"`` (``scipy.sparse.linalg.lsqr`` on the weighted sparse design
:math:`W^{1/2}G`, ``atol = btol = rtol``; without an identity measurement the problem is
under-determined and LSQR started at 0 returns the minimum-norm solution) and
``"dense"`` (``numpy.linalg.lstsq``, minimum-norm, n ≤ 5,000, for verification).

Non-negativity (``nonnegative=True``), ``nonnegative_method``:

* ``"exact"`` — the constrained optimum on the weighted design: Lawson–Hanson NNLS
  (``scipy.optimize.nnls``, dense) for n ≤ 2,000, ``scipy.optimize.lsq_linear`` (TRF
  with LSMR, sparse, bounds [0, ∞)) above; for small problems.
* ``"active_set"`` — scalable, built on the solvers above: (1) solve; (2) pin every
  negative coordinate to 0 (it leaves the problem) and re-solve, until none is
  negative; (3) compute the gradient :math:`Mx-b`; release the pinned coordinates
  whose gradient is negative (the objective would decrease if they grew), and go back
  to (1); each re-solve starts from the previous solution. When it stops with nothing
  to release, :math:`x` satisfies the KKT conditions of the convex problem and is the
  constrained optimum (up to the solver tolerance). After ``max_nonnegative_rounds``
  (default 50) it stops anyway, clips at 0 and reports the largest remaining KKT
  violation (``kkt_violation``, relative to :math:`\max|b|`).
* ``"auto"`` — ``exact`` for n ≤ 2,000, else ``active_set``.

Tabulation: :func:`tabulate` sums microdata by any grouping or by a QCEW aggregation
level code (:data:`eree.data.qcew.QCEW_AGGREGATION_LEVELS`: national / state / county ×
total, ownership, domain, supersector, sector, NAICS-3 … NAICS-6), and
:func:`level_summary` gives the per-level summary statistics of the QCEW paper's Tables 8
and 9.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray

from eree.data.qcew import LEVEL_TITLES, QCEW_AGGREGATION_LEVELS, domain_of_supersector

__all__ = [
    "GroupSumObservation",
    "SqrtAnswers",
    "WLSResult",
    "group_ids",
    "level_summary",
    "reconstruct_microdata",
    "solve_wls",
    "tabulate",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]
Method = Literal["auto", "tree", "pcg", "lsqr", "dense"]
NonnegMethod = Literal["auto", "exact", "active_set"]

_DENSE_MAX = 5_000
_EXACT_NONNEG_MAX = 2_000


def _bsum(groups: IntArray, weights: FloatArray, m: int) -> FloatArray:
    """Group sums (``numpy.bincount`` with weights)."""
    return np.asarray(np.bincount(groups, weights, m), dtype=np.float64)


# --------------------------------------------------------------------------------------
# the interface between mechanisms and reconstruction
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SqrtAnswers:
    r"""The ψ-space answers :math:`\omega_g = \sqrt{x_g + a} + N(0, \sigma^2)` of some groups.

    Attributes:
        omega: ω per group of the observation; NaN where the group was not answered by
            the √-ψ-mechanism (e.g. a pnc cell of an adaptive query).
        sigma: the public σ = γ/μ of those answers.
        a: the shift of ψ = √(x + a) (0 for ψ = √x).
    """

    omega: FloatArray
    sigma: float
    a: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "omega", np.asarray(self.omega, dtype=np.float64).ravel())
        if not (math.isfinite(self.sigma) and self.sigma > 0):
            raise ValueError("sigma must be finite and > 0")
        if not (math.isfinite(self.a) and self.a >= 0):
            raise ValueError("the shift a must be finite and ≥ 0")

    @property
    def answered(self) -> NDArray[np.bool_]:
        """Where a group was answered in ψ-space."""
        return np.isfinite(self.omega)


@dataclass(frozen=True)
class GroupSumObservation:
    """One noisy group-by sum query of one attribute (private-pgm style).

    Attributes:
        name: the query's name (e.g. ``"county"``).
        groups: group id (0 … m−1) of every establishment, or None for the identity
            query (one group per establishment, in establishment order).
        values: the noisy answers :math:`a_g`, one per group (length m; n for the
            identity). Unbiased estimates (e.g. Thm 6.6's x̃), not ψ-space values.
        variances: :math:`v_g > 0` per group (estimated or public); ``inf`` = group not
            measured (weight 0).
        attribute: the confidential attribute measured (for
            :func:`reconstruct_microdata`), optional.
        sqrt_answers: the ψ-space answers of the groups answered by a ψ-mechanism with
            ψ = √(x + a) (:class:`SqrtAnswers`), for the √-space fit
            (:mod:`eree.postprocess.sqrt_space`); None when no group was.
    """

    name: str
    groups: IntArray | None
    values: FloatArray
    variances: FloatArray
    attribute: str | None = None
    sqrt_answers: SqrtAnswers | None = None

    def __post_init__(self) -> None:
        vals = np.asarray(self.values, dtype=np.float64).ravel()
        var = np.asarray(self.variances, dtype=np.float64).ravel()
        if vals.shape != var.shape:
            raise ValueError(f"measurement {self.name!r}: values and variances differ in length")
        if np.any(np.isnan(var)) or np.any(var <= 0):
            raise ValueError(
                f"measurement {self.name!r}: variances must be > 0 (inf = not measured)"
            )
        if np.any(~np.isfinite(vals) & np.isfinite(var)):
            raise ValueError(f"measurement {self.name!r}: a measured value is NaN or infinite")
        object.__setattr__(self, "values", vals)
        object.__setattr__(self, "variances", var)
        if self.groups is not None:
            g = np.asarray(self.groups)
            if g.ndim != 1 or not np.issubdtype(g.dtype, np.integer):
                raise ValueError(f"measurement {self.name!r}: groups must be a 1-D integer array")
            if g.size and (int(g.min()) < 0 or int(g.max()) >= vals.size):
                raise ValueError(
                    f"measurement {self.name!r}: group ids must lie in 0 … {vals.size - 1}"
                )
            object.__setattr__(self, "groups", g.astype(np.intp, copy=False))
        if self.sqrt_answers is not None and self.sqrt_answers.omega.shape != vals.shape:
            raise ValueError(f"measurement {self.name!r}: one ψ-space answer per group expected")

    @property
    def n_groups(self) -> int:
        """Number of groups (measured values)."""
        return int(self.values.size)

    @property
    def is_identity(self) -> bool:
        """Whether this measures every establishment (no ``groups``)."""
        return self.groups is None

    @classmethod
    def identity(
        cls,
        values: ArrayLike,
        variances: ArrayLike,
        *,
        name: str = "identity",
        attribute: str | None = None,
    ) -> GroupSumObservation:
        """The identity query: one noisy value per establishment."""
        return cls(name, None, np.asarray(values), np.asarray(variances), attribute)


def group_ids(frame: pl.DataFrame, by: Sequence[str]) -> tuple[IntArray, pl.DataFrame]:
    """Factorise the grouping ``by`` of ``frame``: group id per row, and the keys.

    Returns:
        ``(ids, keys)``: ``ids[i]`` is row i's group (0 … m−1, groups in sorted key
        order); ``keys`` has the ``by`` columns of group 0, 1, …. ``by = []`` gives one
        group.
    """
    by = list(by)
    if not by:
        return np.zeros(frame.height, dtype=np.intp), pl.DataFrame()
    rank = frame.select(pl.struct(by).rank("dense").alias("_g")).to_series()
    ids = rank.to_numpy().astype(np.intp) - 1
    keys = (
        frame.select(by)
        .with_columns(pl.Series("_g", ids))
        .unique("_g", keep="first")
        .sort("_g")
        .drop("_g")
    )
    return ids, keys


# --------------------------------------------------------------------------------------
# the normal equations, matrix-free
# --------------------------------------------------------------------------------------


@dataclass
class _Grouping:
    """One merged grouping: ids (None = identity), weights w = 1/v, answers a."""

    groups: IntArray | None
    m: int
    w: FloatArray
    a: FloatArray
    names: list[str] = field(default_factory=list)

    def sums(self, x: FloatArray) -> FloatArray:
        if self.groups is None:
            return x
        return _bsum(self.groups, x, self.m)

    def gather(self, v: FloatArray) -> FloatArray:
        return v if self.groups is None else v[self.groups]


def _prepare(n: int, observations: Sequence[GroupSumObservation]) -> list[_Grouping]:
    if n < 1:
        raise ValueError("n (number of establishments) must be at least 1")
    if not observations:
        raise ValueError("at least one measurement is needed")
    out: list[_Grouping] = []
    for meas in observations:
        if meas.groups is None:
            if meas.n_groups != n:
                raise ValueError(f"identity measurement {meas.name!r} must have n = {n} values")
        elif meas.groups.size != n:
            raise ValueError(
                f"measurement {meas.name!r}: groups must have one id per establishment"
            )
        w = np.where(np.isfinite(meas.variances), 1.0 / meas.variances, 0.0)
        a = np.where(w > 0, meas.values, 0.0)
        for grp in out:
            same = (grp.groups is None and meas.groups is None) or (
                grp.groups is not None
                and meas.groups is not None
                and grp.m == meas.n_groups
                and (grp.groups is meas.groups or np.array_equal(grp.groups, meas.groups))
            )
            if same:  # inverse-variance merge: same objective up to a constant
                tot = grp.w + w
                grp.a = np.where(tot > 0, (grp.w * grp.a + w * a) / np.where(tot > 0, tot, 1), 0)
                grp.w = tot
                grp.names.append(meas.name)
                break
        else:
            out.append(_Grouping(meas.groups, meas.n_groups, w, a, [meas.name]))
    return [g for g in out if np.any(g.w > 0)]


def _rhs(groupings: Sequence[_Grouping], n: int) -> FloatArray:
    b = np.zeros(n)
    for g in groupings:
        b += g.gather(g.w * g.a)
    return b


def _matvec(groupings: Sequence[_Grouping], x: FloatArray) -> FloatArray:
    y = np.zeros_like(x)
    for g in groupings:
        y += g.gather(g.w * g.sums(x))
    return y


def _objective(groupings: Sequence[_Grouping], x: FloatArray) -> float:
    return float(sum(np.sum(g.w * (g.sums(x) - g.a) ** 2) for g in groupings))


# --------------------------------------------------------------------------------------
# exact solver for a chain of nested groupings
# --------------------------------------------------------------------------------------


def _coarsening_map(fine: _Grouping, coarse: _Grouping) -> IntArray | None:
    """Map fine group → coarse group if every fine group lies inside one coarse group."""
    assert coarse.groups is not None
    if fine.groups is None:
        return coarse.groups
    mp = np.zeros(fine.m, dtype=np.intp)
    mp[fine.groups] = coarse.groups
    return mp if np.array_equal(mp[fine.groups], coarse.groups) else None


@dataclass
class _Chain:
    """Identity ⊂ level 1 ⊂ … ⊂ level L; ``maps[l]`` maps level l−1 groups to level l."""

    identity: _Grouping
    levels: list[_Grouping]
    maps: list[IntArray]

    def solve(
        self, a0: FloatArray, s0: FloatArray, level_a: Sequence[FloatArray] | None = None
    ) -> FloatArray:
        """Two-pass exact WLS.

        Given leaf answers ``a0`` with variances ``s0`` (0 = known exactly) and each
        level's answers (default: its measurement).
        """
        zs = [a0]
        ss = [s0]
        csum_s: list[FloatArray] = []
        csum_z: list[FloatArray] = []
        for i, lev in enumerate(self.levels):
            mp = self.maps[i]
            zc = _bsum(mp, zs[-1], lev.m)
            sc = _bsum(mp, ss[-1], lev.m)
            a = lev.a if level_a is None else level_a[i]
            w = lev.w
            own = (w > 0) & (sc > 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                inv = np.where(own, 1.0 / np.where(own, sc, 1.0) + w, 1.0)
                s = np.where(own, 1.0 / inv, sc)
                z = np.where(own, s * (zc / np.where(own, sc, 1.0) + w * a), zc)
            csum_s.append(sc)
            csum_z.append(zc)
            zs.append(z)
            ss.append(s)
        x = zs[-1]
        for i in range(len(self.levels) - 1, -1, -1):
            sc = csum_s[i]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(sc > 0, (x - csum_z[i]) / np.where(sc > 0, sc, 1.0), 0.0)
            x = zs[i] + ss[i] * ratio[self.maps[i]]
        return x


def _best_chain(groupings: Sequence[_Grouping]) -> tuple[_Chain | None, list[_Grouping]]:
    """The chain identity ⊂ … leaving the fewest groups outside.

    (None, all) if the identity is not measured with finite variances for every
    establishment.
    """
    ident = next((g for g in groupings if g.groups is None), None)
    if ident is None or not np.all(ident.w > 0):
        return None, list(groupings)
    others = sorted((g for g in groupings if g.groups is not None), key=lambda g: -g.m)
    k = len(others)
    maps: dict[tuple[int, int], IntArray] = {}
    for i in range(k):
        for j in range(i + 1, k):
            mp = _coarsening_map(others[i], others[j])
            if mp is not None:
                maps[(i, j)] = mp
    best = [0] * k
    nxt = [-1] * k
    for i in range(k - 1, -1, -1):
        best[i] = others[i].m
        for j in range(i + 1, k):
            if (i, j) in maps and others[i].m + best[j] > best[i]:
                best[i] = others[i].m + best[j]
                nxt[i] = j
    levels: list[_Grouping] = []
    chain_maps: list[IntArray] = []
    if k:
        i = int(np.argmax(best))
        first = others[i].groups
        assert first is not None
        chain_maps.append(first)
        levels.append(others[i])
        while nxt[i] >= 0:
            chain_maps.append(maps[(i, nxt[i])])
            i = nxt[i]
            levels.append(others[i])
    off = [g for g in others if not any(g is lev for lev in levels)]
    return _Chain(ident, levels, chain_maps), off


# --------------------------------------------------------------------------------------
# results and the solver
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WLSResult:
    r"""Solution of Eq. 1 for one attribute.

    Attributes:
        x: the reconstructed value of every establishment.
        method: the solver used (``tree``, ``pcg``, ``lsqr``, ``dense``, ``exact``).
        iterations: solver iterations (CG or LSQR; 0 for direct solvers), summed over
            non-negativity rounds.
        converged: the iterative solver met its tolerance (and, with non-negativity,
            the active-set loop terminated).
        relative_residual: :math:`\lVert b-Mx\rVert_2/\lVert b\rVert_2` of the
            normal equations at the returned x (for non-negativity: restricted to the
            coordinates that are not pinned at 0).
        objective: the value of Eq. 1 at x.
        nonnegative_rounds: active-set rounds (0 without non-negativity).
        kkt_violation: largest KKT violation of the non-negative problem relative to
            max|b| (0 without non-negativity or when optimal).
    """

    x: FloatArray
    method: str
    iterations: int
    converged: bool
    relative_residual: float
    objective: float
    nonnegative_rounds: int = 0
    kkt_violation: float = 0.0


def _pcg(
    groupings: Sequence[_Grouping],
    chain: _Chain,
    off: Sequence[_Grouping],
    fixed: np.ndarray | None,
    rtol: float,
    maxiter: int,
    x0: FloatArray | None = None,
) -> tuple[FloatArray, int, bool]:
    n = chain.identity.m
    free = None if fixed is None else ~fixed
    s0 = 1.0 / chain.identity.w
    a0 = chain.identity.a
    if free is not None:
        s0 = np.where(free, s0, 0.0)
        a0 = np.where(free, a0, 0.0)
    if not off:
        return chain.solve(a0, s0), 0, True
    # start from the previous solution (warm start) or the chain-only solution
    x = (
        chain.solve(a0, s0)
        if x0 is None
        else np.where(free, x0, 0.0)
        if free is not None
        else x0.copy()
    )
    b = _rhs(groupings, n)
    if free is not None:
        b = np.where(free, b, 0.0)
    bnorm = float(np.linalg.norm(b)) or 1.0
    zero_a = [np.zeros(lev.m) for lev in chain.levels]

    def precond(r: FloatArray) -> FloatArray:
        return chain.solve(r * s0, s0, zero_a)

    r = b - _matvec(groupings, x)
    if free is not None:
        r[~free] = 0.0
    z = precond(r)
    p = z.copy()
    rz = float(r @ z)
    it = 0
    converged = float(np.linalg.norm(r)) <= rtol * bnorm
    while not converged and it < maxiter:
        ap = _matvec(groupings, p)
        if free is not None:
            ap[~free] = 0.0
        pap = float(p @ ap)
        if pap <= 0:
            break
        alpha = rz / pap
        x += alpha * p
        r -= alpha * ap
        it += 1
        if float(np.linalg.norm(r)) <= rtol * bnorm:
            converged = True
            break
        z = precond(r)
        rz_new = float(r @ z)
        p = z + (rz_new / rz) * p
        rz = rz_new
    return x, it, converged


def _map_to(fine: IntArray, m_fine: int, coarse: IntArray) -> IntArray | None:
    """Map fine group → coarse group when every fine group lies in one coarse group."""
    mp = np.zeros(m_fine, dtype=np.intp)
    mp[fine] = coarse
    return mp if np.array_equal(mp[fine], coarse) else None


def _meet(others: Sequence[_Grouping]) -> tuple[IntArray, int, _Grouping | None]:
    """The coarsest common refinement of the groupings.

    A measured grouping that every other one coarsens (returned as third element), else
    the cross-classification.
    """
    by_size = sorted(others, key=lambda g: -g.m)
    for f in by_size:
        assert f.groups is not None
        if all(q is f or _map_to(f.groups, f.m, q.groups) is not None for q in others):  # type: ignore[arg-type]
            return f.groups, f.m, f
    key: NDArray[np.int64] | None = None
    m = 1
    for q in by_size:
        assert q.groups is not None
        k = q.groups.astype(np.int64)
        if key is not None and m * q.m >= 2**62:
            raise ValueError("too many groups to cross-classify")
        key = k if key is None else key * q.m + k
        uniq, inv = np.unique(key, return_inverse=True)
        key = inv.astype(np.int64)
        m = int(uniq.size)
    assert key is not None
    return key.astype(np.intp), m, None


def _reduced_solve(
    groupings: Sequence[_Grouping],
    ident: _Grouping,
    n: int,
    fixed: np.ndarray | None,
    rtol: float,
    maxiter: int,
    require_tree: bool,
    x0: FloatArray | None = None,
) -> tuple[FloatArray, str, int, bool]:
    """Solve by exact reduction to the coarsest common refinement.

    Exact reduction to the coarsest common refinement of the non-identity groupings
    (module docstring), then the chain solver or PCG on the reduced problem.
    """
    s0 = 1.0 / ident.w
    a0 = ident.a.copy()
    if fixed is not None:
        s0 = np.where(fixed, 0.0, s0)
        a0[fixed] = 0.0
    others = [g for g in groupings if g.groups is not None]
    if not others:
        return a0, "tree", 0, True
    g, m, base = _meet(others)
    z = _bsum(g, a0, m)
    sc = _bsum(g, s0, m)
    z2, s2 = z, sc
    reduced: list[_Grouping] = []
    for q in others:
        if q is base:  # the meet's own measurement joins the leaves' information
            own = (q.w > 0) & (sc > 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                s2 = np.where(own, 1.0 / (1.0 / np.where(own, sc, 1.0) + q.w), sc)
                z2 = np.where(own, s2 * (z / np.where(own, sc, 1.0) + q.w * q.a), z)
        else:
            assert q.groups is not None
            mp = _map_to(g, m, q.groups)
            assert mp is not None
            reduced.append(_Grouping(mp, q.m, q.w, q.a, q.names))
    red_fixed = s2 <= 0
    red_ident = _Grouping(
        None,
        m,
        np.where(red_fixed, 1.0, 1.0 / np.where(red_fixed, 1.0, s2)),
        np.where(red_fixed, 0.0, z2),
        ["identity"],
    )
    red = [red_ident, *reduced]
    chain, off = _best_chain(red)
    assert chain is not None
    if require_tree and off:
        raise ValueError(
            "method 'tree' needs the groupings to be nested (a chain); these are not: "
            + ", ".join("/".join(q.names) for q in off)
            + " — use method='pcg'"
        )
    t0 = None if x0 is None else _bsum(g, np.where(s0 > 0, x0, 0.0), m)
    t, it, conv = _pcg(red, chain, off, red_fixed if red_fixed.any() else None, rtol, maxiter, t0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(sc > 0, (t - z) / np.where(sc > 0, sc, 1.0), 0.0)
    x = a0 + s0 * ratio[g]
    return x, ("pcg" if off else "tree"), it, conv


def _design(groupings: Sequence[_Grouping], n: int, cols: IntArray | None):  # type: ignore[no-untyped-def]
    """Weighted sparse design W^{1/2} G (rows with weight 0 dropped) and its rhs."""
    import scipy.sparse as sp

    rows, colidx, vals, rhs = [], [], [], []
    r0 = 0
    for g in groupings:
        sw = np.sqrt(g.w)
        ridx = np.arange(n) if g.groups is None else g.groups
        keep = sw[ridx] > 0
        rows.append(r0 + ridx[keep])
        colidx.append(np.arange(n)[keep])
        vals.append(sw[ridx][keep])
        rhs.append(sw * g.a)
        r0 += g.m
    A = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(colidx))), shape=(r0, n)
    )
    if cols is not None:
        A = A[:, cols]
    return A, np.concatenate(rhs)


def _solve_unconstrained(
    groupings: Sequence[_Grouping],
    n: int,
    method: str,
    fixed: np.ndarray | None,
    rtol: float,
    maxiter: int,
    x0: FloatArray | None = None,
) -> tuple[FloatArray, str, int, bool]:
    ident = next((g for g in groupings if g.groups is None), None)
    usable = ident is not None and bool(np.all(ident.w > 0))
    if method == "auto":
        method = "pcg" if usable else "lsqr"
    if method in ("tree", "pcg"):
        if ident is None or not usable:
            raise ValueError(
                f"method {method!r} needs an identity measurement with a finite variance for "
                "every establishment; use method='lsqr'"
            )
        return _reduced_solve(groupings, ident, n, fixed, rtol, maxiter, method == "tree", x0)
    cols = None if fixed is None else np.flatnonzero(~fixed)
    if method == "dense":
        if n > _DENSE_MAX:
            raise ValueError(f"method 'dense' is for n ≤ {_DENSE_MAX} (verification only)")
        A, rhs = _design(groupings, n, cols)
        sol = np.linalg.lstsq(A.toarray(), rhs, rcond=None)[0]
        it, conv = 0, True
    elif method == "lsqr":
        from scipy.sparse.linalg import lsqr

        A, rhs = _design(groupings, n, cols)
        res = lsqr(A, rhs, atol=rtol, btol=rtol, iter_lim=maxiter)
        sol, it, conv = res[0], int(res[2]), int(res[1]) in (1, 2, 4, 5)
        conv = conv or int(res[1]) == 0
    else:
        raise ValueError(f"unknown method {method!r}")
    x = np.zeros(n)
    if cols is None:
        x = sol
    else:
        x[cols] = sol
    return x, method, it, conv


def _residual(
    groupings: Sequence[_Grouping], x: FloatArray, n: int, free: np.ndarray | None
) -> float:
    b = _rhs(groupings, n)
    r = b - _matvec(groupings, x)
    if free is not None:
        r = r[free]
        b = b[free]
    return float(np.linalg.norm(r) / (np.linalg.norm(b) or 1.0))


def solve_wls(
    n: int,
    observations: Sequence[GroupSumObservation],
    *,
    method: Method = "auto",
    nonnegative: bool = False,
    nonnegative_method: NonnegMethod = "auto",
    rtol: float = 1e-10,
    maxiter: int = 1_000,
    max_nonnegative_rounds: int = 50,
) -> WLSResult:
    """Solve Eq. 1 of the QCEW paper for one attribute of ``n`` establishments.

    Args:
        n: number of establishments (unknowns).
        observations: the noisy group-by answers of this attribute (identity
            included, when available).
        method: solver (module docstring): ``auto``, ``tree``, ``pcg``, ``lsqr``,
            ``dense``.
        nonnegative: constrain x ≥ 0.
        nonnegative_method: ``auto``, ``exact`` (NNLS / ``lsq_linear``, small problems) or
            ``active_set`` (scalable; module docstring).
        rtol: relative tolerance of the iterative solvers.
        maxiter: iteration limit of the iterative solvers (per solve).
        max_nonnegative_rounds: limit of the active-set loop.

    Returns:
        :class:`WLSResult`.
    """
    if not (math.isfinite(rtol) and rtol > 0):
        raise ValueError("rtol must be > 0")
    groupings = _prepare(n, observations)
    if not groupings:
        raise ValueError("no measurement has a finite variance")
    if not nonnegative:
        x, used, it, conv = _solve_unconstrained(groupings, n, method, None, rtol, maxiter)
        return WLSResult(
            x, used, it, conv, _residual(groupings, x, n, None), _objective(groupings, x)
        )
    if nonnegative_method == "auto":
        nonnegative_method = "exact" if n <= _EXACT_NONNEG_MAX else "active_set"
    if nonnegative_method == "exact":
        from scipy.optimize import lsq_linear, nnls

        A, rhs = _design(groupings, n, None)
        if n <= _EXACT_NONNEG_MAX:  # Lawson–Hanson active set, exact
            sol, _ = nnls(A.toarray(), rhs, maxiter=max(50 * n, 1000))
            nit, ok = 0, True
        else:
            res = lsq_linear(
                A,
                rhs,
                bounds=(0.0, np.inf),
                method="trf",
                tol=1e-12,
                lsmr_tol="auto",
                max_iter=maxiter,
            )
            sol, nit, ok = res.x, int(res.nit), bool(res.success)
        x = np.maximum(sol, 0.0)
        free = x > 0
        b = _rhs(groupings, n)
        kkt = _kkt(_matvec(groupings, x) - b, x, b)
        return WLSResult(
            x, "exact", nit, ok, _residual(groupings, x, n, free), _objective(groupings, x), 1, kkt
        )
    if nonnegative_method != "active_set":
        raise ValueError(f"unknown nonnegative_method {nonnegative_method!r}")
    return _active_set(groupings, n, method, rtol, maxiter, max_nonnegative_rounds)


def _kkt(grad: FloatArray, x: FloatArray, b: FloatArray) -> float:
    """Largest KKT violation of min f s.t. x ≥ 0, relative to max|b|.

    Free coordinates need grad = 0, coordinates at 0 need grad ≥ 0.
    """
    scale = float(np.max(np.abs(b))) or 1.0
    at0 = x <= 0
    v_free = np.abs(grad[~at0]).max(initial=0.0)
    v_zero = np.maximum(-grad[at0], 0.0).max(initial=0.0)
    return float(max(v_free, v_zero) / scale)


def _active_set(
    groupings: Sequence[_Grouping],
    n: int,
    method: str,
    rtol: float,
    maxiter: int,
    max_rounds: int,
) -> WLSResult:
    b = _rhs(groupings, n)
    gtol = 1e-9 * (float(np.max(np.abs(b))) or 1.0)
    fixed = np.zeros(n, dtype=bool)
    x, used, iters, conv = _solve_unconstrained(groupings, n, method, None, rtol, maxiter)
    rounds = 0
    done = False
    while rounds < max_rounds:
        rounds += 1
        neg = (x < 0) & ~fixed
        if neg.any():
            fixed |= neg
        else:
            grad = _matvec(groupings, x) - b
            release = fixed & (grad < -gtol)
            if not release.any():
                done = True
                break
            fixed &= ~release
        x, used, it, conv = _solve_unconstrained(groupings, n, method, fixed, rtol, maxiter, x)
        x[fixed] = 0.0
        iters += it
    x = np.maximum(x, 0.0)
    grad = _matvec(groupings, x) - b
    return WLSResult(
        x,
        used,
        iters,
        bool(conv and done),
        _residual(groupings, x, n, ~fixed),
        _objective(groupings, x),
        rounds,
        _kkt(grad, x, b),
    )


def reconstruct_microdata(
    n: int,
    observations: Sequence[GroupSumObservation],
    **options: object,
) -> dict[str, WLSResult]:
    """Solve Eq. 1 per attribute: observations are grouped by their ``attribute``.

    Args:
        n: number of establishments.
        observations: observations of every attribute (``attribute`` set).
        **options: passed to :func:`solve_wls`.

    Returns:
        ``{attribute: WLSResult}`` in the order attributes first appear.
    """
    by_attr: dict[str, list[GroupSumObservation]] = {}
    for m in observations:
        if m.attribute is None:
            raise ValueError(f"measurement {m.name!r} has no attribute")
        by_attr.setdefault(m.attribute, []).append(m)
    return {a: solve_wls(n, ms, **options) for a, ms in by_attr.items()}  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------
# tabulation at QCEW aggregation levels
# --------------------------------------------------------------------------------------


def _with_domain(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """``frame`` with the domain of its supersector as an integer (Int16, as Syn-RI's codes)."""
    ss = pl.col("super_sector").cast(pl.Utf8)
    return frame.with_columns(domain_of_supersector(ss).cast(pl.Int16).alias("domain"))


def tabulate(
    microdata: pl.DataFrame,
    by: int | Sequence[str],
    values: Sequence[str] = ("m1emp", "m2emp", "m3emp", "wage"),
    *,
    count: str | None = "n",
) -> pl.DataFrame:
    """Sum ``values`` of establishment microdata by a grouping.

    Args:
        microdata: one row per establishment (e.g. the input, or the input's public
            columns with the WLS solution as values).
        by: a QCEW aggregation level code
            (:data:`~eree.data.qcew.QCEW_AGGREGATION_LEVELS`) or a list of columns.
            ``domain`` (101 goods-producing: supersectors 1011–1013; 102
            service-providing) is derived from ``super_sector`` when asked for.
        values: columns to sum.
        count: name of the establishment-count column (None: no count).

    Returns:
        One row per non-empty group, sorted by the keys: the keys, ``count``, the sums.
    """
    cols = QCEW_AGGREGATION_LEVELS[by] if isinstance(by, int) else tuple(by)
    if isinstance(by, int) and by not in QCEW_AGGREGATION_LEVELS:
        raise ValueError(f"unknown QCEW aggregation level {by}")
    df: pl.DataFrame = microdata
    if "domain" in cols and "domain" not in microdata.columns:
        df = _with_domain(microdata)  # type: ignore[assignment]
    aggs = ([pl.len().alias(count)] if count else []) + [pl.col(v).sum() for v in values]
    if not cols:
        return df.select(aggs)
    return df.group_by(list(cols)).agg(aggs).sort(list(cols))


def level_summary(
    microdata: pl.DataFrame,
    levels: Sequence[int] = (52, 53, 54, 55, 56, 57, 58, 71, 73, 74, 75, 76, 77, 78),
    variables: Mapping[str, str | None] | None = None,
    *,
    ownership: bool = False,
) -> pl.DataFrame:
    """Per-level summary statistics of cells (the QCEW paper's Tables 8 and 9).

    Args:
        microdata: establishment microdata.
        levels: QCEW aggregation level codes.
        variables: output name → column summed per cell (None = the number of
            establishments); default ``{"n": None, "emp": "m3emp", "w": "wage"}`` as in
            the tables (emp = month-3 employment).
        ownership: group by ``own`` too (QCEW's x1–x8 levels are by ownership); the
            paper's tables are of private establishments only, so the default leaves
            ``own`` out.

    Returns:
        One row per (level, variable): ``level``, ``title``, ``cells``, ``variable``,
        ``min``, ``median``, ``max``, ``mean``, ``std`` (sample standard deviation,
        ddof = 1; the paper rounds these half-to-even to integers).
    """
    variables = variables or {"n": None, "emp": "m3emp", "w": "wage"}
    vals = [c for c in variables.values() if c is not None]
    rows = []
    for lv in levels:
        cols = [c for c in QCEW_AGGREGATION_LEVELS[lv] if ownership or c != "own"]
        t = tabulate(microdata, cols, vals, count="_n")
        for name, col in variables.items():
            x = t.get_column("_n" if col is None else col).cast(pl.Float64).to_numpy()
            rows.append(
                {
                    "level": lv,
                    "title": LEVEL_TITLES[lv],
                    "cells": int(x.size),
                    "variable": name,
                    "min": float(x.min()),
                    "median": float(np.median(x)),
                    "max": float(x.max()),
                    "mean": float(x.mean()),
                    "std": float(x.std(ddof=1)) if x.size > 1 else float("nan"),
                }
            )
    return pl.DataFrame(rows)
