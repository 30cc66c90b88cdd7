r"""Blocks solved without an integer program: exact tables that split into independent groups.

When every cell of a unit is published exactly and the tables' attribute sets split into
**groups** — the largest sets pairwise disjoint, every other set inside one of them (the
WAC families: age × education with its age margin; earnings; sector; race; ethnicity;
sex; and the block total) — the integer program of :mod:`.records` needs no solver:

* **consistent datasets**: a unit's records are consistent with its tables exactly when
  each group's finest table is the records' margin on that group (the coarser tables of
  a group are sums of its finest one, checked here: any mismatch or unlisted count sends
  the unit back to the integer program). Any N-long list of group values per group, one
  list per group, zipped, is such a dataset, and every one is of that form.
* **the records chosen**: the attacker's tie-break (the independence prior of
  :mod:`.records`) costs the same for every consistent dataset — it is a sum over the
  groups' margins, which the tables fix — so any consistent dataset is an optimum. The
  one chosen here is the *north-west corner* of the groups sorted by count (most frequent
  value first, ties by code): the jobs are lined up, each group's values laid along the
  line in that order, and the records read off. It is a vertex of the polytope of
  consistent tables, as the solver's answer is, and puts the most frequent values
  together.
* **certain records** (every consistent dataset holds them): for a combination r with
  group values v_g, N jobs and G groups,
  :math:`\min x_r = \max\big(0, \sum_g n_g(v_g) - (G-1)N\big)` — the jobs outside r
  are among the N − n_g(v_g) jobs of some group with another value (a union bound, so
  no dataset has fewer), and lining the groups' other values up one after another along
  a circle of N jobs reaches it (so some dataset has exactly that many): the Fréchet
  lower bound, sharp for margins of disjoint groups.
* **determined units**: the dataset is unique exactly when at most one group has more
  than one value (two jobs differing in two groups can swap one of them).

The test ``test_closed_form_equals_the_integer_program`` checks the certain counts and
the determined units against the integer program and a brute-force enumeration.
"""

from __future__ import annotations

import numpy as np

__all__ = ["closed_form", "north_west", "split_groups"]


def _mixed(codes: np.ndarray, radix: np.ndarray) -> np.ndarray:
    out = np.zeros(codes.shape[0], dtype=np.int64)
    for j in range(codes.shape[1]):
        out = out * int(radix[j]) + codes[:, j]
    return out


def split_groups(present: np.ndarray) -> list[np.ndarray] | None:
    """The groups of a unit's tables, or ``None`` when they do not split.

    ``present``: cells × attributes, whether the cell's table classifies by the attribute.
    Returns one boolean mask per group (the largest attribute sets, pairwise disjoint and
    covering every attribute), in the order of the attributes.
    """
    pats = np.unique(present, axis=0)
    sizes = pats.sum(axis=1)
    maximal = [
        pats[i]
        for i in range(pats.shape[0])
        if sizes[i] > 0
        and not any(
            sizes[j] > sizes[i] and np.all(pats[j] >= pats[i]) for j in range(pats.shape[0])
        )
    ]
    if not maximal:
        return None
    cover = np.sum(maximal, axis=0)
    if np.any(cover != 1):  # overlapping groups, or an attribute no table classifies by
        return None
    return sorted(maximal, key=lambda m: int(np.flatnonzero(m)[0]))


def north_west(
    groups: list[tuple[np.ndarray, np.ndarray, np.ndarray]], k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The north-west corner dataset of the groups' margins, and its Fréchet minimum.

    ``groups``: per group, (its attributes' indices, values × those attributes codes,
    counts > 0), every group's counts summing to the same N. Returns (combinations ×
    ``k`` codes, copies, the least copies of each combination in any dataset with these
    margins).
    """
    n = int(groups[0][2].sum())
    lines = []
    for _, _, counts in groups:
        order = np.lexsort((np.arange(counts.size), -counts))
        lines.append(np.repeat(order, counts[order]))
    idx = np.stack(lines, axis=1)  # n × G: each job's value index per group
    combos, x = np.unique(idx, axis=0, return_counts=True)
    g = len(groups)
    share = np.zeros(combos.shape[0], dtype=np.int64)
    out = np.full((combos.shape[0], k), -1, dtype=np.int64)
    for gi, (attrs, codes, counts) in enumerate(groups):
        share += counts[combos[:, gi]]
        out[:, attrs] = codes[combos[:, gi]]
    m = np.minimum(np.maximum(0, share - (g - 1) * n), x)
    return out, x.astype(np.int64), m.astype(np.int64)


def closed_form(
    cc: np.ndarray, lo: np.ndarray, hi: np.ndarray, noisy: np.ndarray, radix: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The records of one unit whose exact tables split into groups, or ``None``.

    Args:
        cc: the unit's cells × attributes, value codes (−1: the cell's table does not
            classify by the attribute).
        lo, hi: each cell's interval (exact: lo = hi).
        noisy: per cell, published with noise.
        radix: values per attribute (for keys).

    Returns:
        (combinations × attributes codes, copies x, certain copies m), or ``None`` when
        the unit is not of this form (a cell not exact, groups that overlap, tables that
        disagree) and needs the integer program.
    """
    if cc.shape[0] == 0 or noisy.any() or not np.array_equal(lo, hi) or not np.isfinite(lo).all():
        return None
    if np.any(lo != np.round(lo)) or np.any(lo < 0):
        return None
    k = cc.shape[1]
    present = cc >= 0
    pats, inverse = np.unique(present, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    sizes = pats.sum(axis=1)
    # the largest attribute sets: not inside another
    maximal = [
        i
        for i in range(pats.shape[0])
        if sizes[i] > 0
        and not any(
            j != i and sizes[j] > sizes[i] and np.all(pats[j] >= pats[i])
            for j in range(pats.shape[0])
        )
    ]
    if not maximal:
        return None
    cover = np.zeros(k, dtype=np.int64)
    for i in maximal:
        cover += pats[i]
    if np.any(cover != 1):  # overlapping groups, or an attribute no table classifies by
        return None
    n_total: int | None = None
    groups: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (attrs, keys' codes, counts)
    for i in maximal:
        pm = pats[i]
        rows = np.flatnonzero(inverse == i)
        keys = _mixed(cc[rows][:, pm], radix[pm])
        _, first, cnt = np.unique(keys, return_index=True, return_counts=True)
        if np.any(cnt > 1):
            return None  # a combination listed twice: leave it to the integer program
        vals = lo[rows][first]
        total = int(vals.sum())
        if n_total is None:
            n_total = total
        elif total != n_total:
            return None
        # every coarser table of this group: its cells must be the sums of the finest
        for q in range(pats.shape[0]):
            if q == i or not np.all(pm >= pats[q]):
                continue
            qm = pats[q]
            qrows = np.flatnonzero(inverse == q)
            if not qm.any():  # the unit's total
                if np.any(lo[qrows] != total):
                    return None
                continue
            fine = _mixed(cc[rows][first][:, qm], radix[qm])
            coarse = _mixed(cc[qrows][:, qm], radix[qm])
            uq, qcnt = np.unique(coarse, return_counts=True)
            if np.any(qcnt > 1):
                return None
            sums = {int(a): 0.0 for a in uq}
            for a, v in zip(fine, vals, strict=True):
                if int(a) not in sums:
                    if v > 0:
                        return None  # a count in a combination the coarser table omits
                    continue
                sums[int(a)] += float(v)
            if any(sums[int(a)] != float(v) for a, v in zip(coarse, lo[qrows], strict=True)):
                return None
        pos = vals > 0
        groups.append((np.flatnonzero(pm), cc[rows][first][pos][:, pm], vals[pos].astype(np.int64)))
    # patterns inside no group (cannot happen once the groups cover every attribute)
    for q in range(pats.shape[0]):
        if not any(np.all(pats[i] >= pats[q]) for i in maximal):
            return None
    n = int(n_total or 0)
    if n == 0:
        return np.zeros((0, k), dtype=np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return north_west(groups, k)
