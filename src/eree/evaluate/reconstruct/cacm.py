r"""The toy block of Garfinkel, Abowd & Martindale (CACM 2019), rebuilt by integer programming.

"Understanding database reconstruction attacks on public data" (Communications of the
ACM 62(3), 2019) publishes, for a fictional census block of seven people, counts,
median and mean ages by sex, race and marital status (its Table 1), withholding
statistics of small groups ("(D)"), and shows that they determine every person (its
Table 2). The statistics below are those of the article as we recall them; they are
self-consistent with the article's solution (a test computes them from it) — if a figure
differs from the printed article, this is an equivalent toy block of the same kind.

The attack writes the block as counts :math:`x_{a,s,r,m}` of persons of age a ∈ 0…115,
sex, race (Black, White) and marital status (single, married), and every published
statistic of a group G as linear constraints:

* count: :math:`\sum_G x = n`;
* mean μ published to one decimal: :math:`n(μ - 0.05) \le \sum_G a\,x \le n(μ + 0.05)`;
* median m of an odd count n = 2k + 1: at most k members below m and at most k above;
* median m of an even count n = 2k: the k-th and (k+1)-th ages are m − d and m + d for
  one d (a binary per candidate d, big-M constraints on the counts at or below each).

Which records every solution shares is found as in :mod:`.records` (min :math:`x_r`
under the constraints); a block is *rebuilt* when the solution is unique.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

__all__ = ["CACM_SOLUTION", "CACM_STATISTICS", "GroupStatistic", "rebuild_block", "statistics_of"]

AGES = np.arange(0, 116)
SEXES = ("F", "M")
RACES = ("B", "W")
MARITAL = ("S", "M")


@dataclass(frozen=True)
class GroupStatistic:
    """A published line of the block's table.

    The group (sex, race, marital status; None = any; ``adult``: age ≥ 18) and its
    count, median and mean age (None where withheld, "(D)").
    """

    label: str
    sex: str | None = None
    race: str | None = None
    marital: str | None = None
    adult: bool = False
    count: int | None = None
    median: float | None = None
    mean: float | None = None


#: Table 1 of the article (as recalled; see the module docstring)
CACM_STATISTICS: tuple[GroupStatistic, ...] = (
    GroupStatistic("1A total population", count=7, median=30, mean=38),
    GroupStatistic("2A female", sex="F", count=4, median=30, mean=33.5),
    GroupStatistic("2B male", sex="M", count=3, median=30, mean=44),
    GroupStatistic("2C Black or African American", race="B", count=4, median=51, mean=48.5),
    GroupStatistic("2D white", race="W", count=3, median=24, mean=24),
    GroupStatistic("3A single adults", marital="S", adult=True),
    GroupStatistic("3B married adults", marital="M", adult=True, count=4, median=51, mean=54),
    GroupStatistic("4A Black female", sex="F", race="B", count=3, median=36, mean=36.7),
    GroupStatistic("4B Black male", sex="M", race="B"),
    GroupStatistic("4C white male", sex="M", race="W"),
    GroupStatistic("4D white female", sex="F", race="W"),
)

#: Table 2 of the article: the block's seven persons (age, sex, race, marital status)
CACM_SOLUTION: tuple[tuple[int, str, str, str], ...] = (
    (8, "F", "B", "S"),
    (18, "M", "W", "S"),
    (24, "F", "W", "S"),
    (30, "M", "W", "M"),
    (36, "F", "B", "M"),
    (66, "F", "B", "M"),
    (84, "M", "B", "M"),
)


def _members(g: GroupStatistic, p: tuple[int, str, str, str]) -> bool:
    age, s, r, m = p
    return (
        (g.sex is None or s == g.sex)
        and (g.race is None or r == g.race)
        and (g.marital is None or m == g.marital)
        and (not g.adult or age >= 18)
    )


def statistics_of(
    persons: tuple[tuple[int, str, str, str], ...], groups: tuple[GroupStatistic, ...]
) -> list[tuple[int, float, float] | None]:
    """(count, median, mean to one decimal) of each group with published figures."""
    out: list[tuple[int, float, float] | None] = []
    for g in groups:
        if g.count is None:
            out.append(None)
            continue
        ages = sorted(p[0] for p in persons if _members(g, p))
        out.append((len(ages), float(np.median(ages)), round(float(np.mean(ages)), 1)))
    return out


def rebuild_block(
    groups: tuple[GroupStatistic, ...] = CACM_STATISTICS,
    *,
    married_adults: bool = True,
) -> tuple[list[tuple[int, str, str, str]], int, int]:
    """Rebuild the block from its published statistics.

    Args:
        groups: the published lines.
        married_adults: the public rule that married persons are adults (age ≥ 15),
            which the article's statistics on "married adults" imply.

    Returns:
        (the persons found, sorted; how many of them every solution shares; the number
        of persons), so the block is rebuilt uniquely when the two counts are equal.
    """
    combos = list(itertools.product(AGES, SEXES, RACES, MARITAL))
    n = len(combos)
    age = np.array([c[0] for c in combos], dtype=np.float64)
    rows: list[np.ndarray] = []
    lb: list[float] = []
    ub: list[float] = []
    extra = 0  # binaries of even medians, appended after x
    binaries: list[np.ndarray] = []  # the binaries of each even median

    def member(g: GroupStatistic) -> np.ndarray:
        return np.array([_members(g, (int(c[0]), c[1], c[2], c[3])) for c in combos])

    # (coefficients on x, lower, upper, the binary, its coefficient)
    med_rows: list[tuple[np.ndarray, float, float, int, float]] = []
    for g in groups:
        if g.count is None:
            continue
        mem = member(g).astype(np.float64)
        rows.append(mem)
        lb.append(g.count)
        ub.append(g.count)
        if g.mean is not None:
            rows.append(mem * age)
            lb.append(g.count * (g.mean - 0.05) - 1e-9)
            ub.append(g.count * (g.mean + 0.05) + 1e-9)
        if g.median is None:
            continue
        m = float(g.median)
        k = g.count // 2
        if g.count % 2 == 1:
            rows.append(mem * (age < m))
            lb.append(-np.inf)
            ub.append(k)
            rows.append(mem * (age > m))
            lb.append(-np.inf)
            ub.append(k)
            continue
        ds = [d / 2 for d in range(0, int(2 * m) + 1) if float(m - d / 2).is_integer()]
        ds = [d for d in ds if m + d <= AGES[-1]]
        first = extra
        big = float(g.count)
        for d in ds:
            j = extra
            extra += 1
            lo_a, hi_a = m - d, m + d
            # #(< lo_a) ≤ k − 1 + M(1 − y)  →  # + M y ≤ k − 1 + M
            med_rows.append((mem * (age < lo_a), -np.inf, k - 1 + big, j, big))
            # #(≤ lo_a) ≥ k − M(1 − y)  →  # − M y ≥ k − M
            med_rows.append((mem * (age <= lo_a), k - big, np.inf, j, -big))
            # #(< hi_a) ≤ k + M(1 − y)
            med_rows.append((mem * (age < hi_a), -np.inf, k + big, j, big))
            # #(≤ hi_a) ≥ k + 1 − M(1 − y)
            med_rows.append((mem * (age <= hi_a), k + 1 - big, np.inf, j, -big))
        binaries.append(np.arange(first, extra))
    if married_adults:
        rows.append(np.array([1.0 if (c[3] == "M" and c[0] < 15) else 0.0 for c in combos]))
        lb.append(0.0)
        ub.append(0.0)
    nv = n + extra
    a_rows = [sp.hstack([sp.csr_matrix(r[None, :]), sp.csr_matrix((1, extra))]) for r in rows]
    lbs, ubs = list(lb), list(ub)
    for coef, lo_r, hi_r, jb, bigc in med_rows:
        b = np.zeros(extra)
        b[jb] = bigc
        a_rows.append(sp.hstack([sp.csr_matrix(coef[None, :]), sp.csr_matrix(b[None, :])]))
        lbs.append(lo_r)
        ubs.append(hi_r)
    for idx in binaries:  # exactly one d per even median
        b = np.zeros(extra)
        b[idx] = 1.0
        a_rows.append(sp.hstack([sp.csr_matrix((1, n)), sp.csr_matrix(b[None, :])]))
        lbs.append(1.0)
        ubs.append(1.0)
    a = sp.vstack(a_rows, format="csr")
    cons = LinearConstraint(a, np.array(lbs), np.array(ubs))
    integrality = np.ones(nv)
    ub_v = np.concatenate([np.full(n, 7.0), np.ones(extra)])
    bounds = Bounds(np.zeros(nv), ub_v)

    def solve(c: np.ndarray) -> np.ndarray | None:
        r = milp(c, constraints=[cons], integrality=integrality, bounds=bounds)
        return None if r.x is None or r.status != 0 else np.round(r.x)

    z = solve(np.zeros(nv))
    if z is None:
        return [], 0, 0
    x = z[:n]
    upper = x.copy()
    # one program first: min Σ_{r found} x_r equals the count of persons only if every
    # solution is this one (the total is published)
    c = np.zeros(nv)
    c[:n][x > 0] = 1.0
    alt = solve(c)
    if alt is not None and int(alt[:n][x > 0].sum()) == int(x.sum()):
        todo: np.ndarray = np.zeros(0, dtype=np.int64)
    else:
        todo = np.flatnonzero(x > 0)
    for jj in todo:
        c = np.zeros(nv)
        c[jj] = 1.0
        alt = solve(c)
        if alt is not None:
            np.minimum(upper, alt[:n], out=upper)
    persons = sorted(
        (int(combos[j][0]), combos[j][1], combos[j][2], combos[j][3])
        for j in np.flatnonzero(x > 0)
        for _ in range(int(x[j]))
    )
    return persons, int(upper.sum()), int(x.sum())
