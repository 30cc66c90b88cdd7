r"""Establishments from QCEW cells: Webb et al., Appendix A, Algorithms 2, 6 and 7.

**Establishments** (:func:`establishments_from_cells`, Appendix A.4, Algorithm 7): for
each county × ownership × NAICS-6 cell with ``d`` establishments, concentrations
``a_1..a_d ~ i.i.d. Gamma(shape 10, scale 200)`` are drawn once and shared by three
applications of the Dirichlet divider (Algorithm 6: ``p ~ Dirichlet(a)``, values
``p·A``; an all-zero concentration vector becomes all ones), for month-1 employment,
month-3 employment and wages; each application draws its own ``p``. Month 2 follows
Algorithm 2 with η = 0.5. Two documented choices where the paper's algorithms produce
reals but its data (Syn-RI) are integers: each divider's ``p·A`` is rounded by unbiased
systematic rounding within the cell, so that the cell's total is reproduced exactly
(the published establishment count and month-3 employment of every published cell,
and month 1 and wages too), and Algorithm 2's value is rounded half-to-even *before*
its lines 7–11 (so that month 2 is 0 only when month 1 or month 3 is 0). The variance
of Algorithm 2 is taken as printed in the algorithm, σ² = 2η|m3−m1|/(m3+m1) (the
running text says η|m3−m1|/(m1+m3)). Wages are in thousands of dollars by default
(``wage_unit=1000``, the unit of Syn-RI and of CBP's payroll, the data on which the
paper used γ_w = 50): each cell's dollars are rounded half-to-even to whole thousands
before the split; ``wage_unit=1`` keeps dollars exactly.

Everything is numpy/polars vectorised; nothing loops over cells or establishments. The
same seed gives identical output (``numpy.random.Generator``).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from eree.data.qcew import CELL_VALUE_OF_ATTRIBUTE
from eree.synth.qcew_microdata import establishment_frame, naics_columns

__all__ = ["dirichlet_divider", "establishments_from_cells", "month2_employment"]


# --------------------------------------------------------------------------------------
# Algorithms 2 and 6 of Appendix A
# --------------------------------------------------------------------------------------


def month2_employment(
    m1: np.ndarray,
    m3: np.ndarray,
    rng: np.random.Generator,
    eta: float = 0.5,
    *,
    integer: bool = True,
) -> np.ndarray:
    r"""Month-2 employment (Webb et al., Appendix A, Algorithm 2), vectorised.

    0 if m1 = m3 = 0; otherwise
    :math:`m_2 = m_1 + (m_3-m_1)/2 + Z`, :math:`Z\sim N(0,\sigma^2)`,
    :math:`\sigma^2 = 2\eta\,|m_3-m_1|/(m_3+m_1)` (as printed in the algorithm), and
    if :math:`m_2 \le 0`: 0 when m1 = 0 or m3 = 0, else 1.

    Args:
        m1, m3: month-1 and month-3 employment (non-negative).
        rng: the random generator.
        eta: the noise parameter η (0.5 for establishments, Algorithm 7; 1.69 for the
            county × NAICS-4 cells of Algorithm 1).
        integer: round :math:`m_2` half-to-even before lines 7–11 (the paper's data are
            integers); False returns the real-valued algorithm output.
    """
    if not (math.isfinite(eta) and eta > 0):
        raise ValueError("eta must be a finite number > 0")
    a = np.asarray(m1, dtype=np.float64)
    b = np.asarray(m3, dtype=np.float64)
    s = a + b
    var = 2.0 * eta * np.abs(b - a) / np.where(s > 0, s, 1.0)
    m2 = a + (b - a) / 2.0 + rng.standard_normal(a.shape) * np.sqrt(var)
    if integer:
        m2 = np.rint(m2)
    m2 = np.where(m2 <= 0, np.where((a == 0) | (b == 0), 0.0, 1.0), m2)
    return np.where(s == 0, 0.0, m2)


def dirichlet_divider(b: np.ndarray, total: float, rng: np.random.Generator) -> np.ndarray:
    r"""Dirichlet divider (Webb et al., Appendix A, Algorithm 6).

    Splits ``total`` into ``len(b)`` non-negative reals summing to it: an all-zero
    concentration vector becomes all ones, :math:`p \sim Dirichlet(b)`, result ``p·A``.
    """
    conc = np.asarray(b, dtype=np.float64)
    if conc.ndim != 1 or conc.size == 0 or np.any(~np.isfinite(conc)) or np.any(conc < 0):
        raise ValueError("b must be a non-empty vector of finite non-negative numbers")
    if total < 0 or not math.isfinite(total):
        raise ValueError("total must be finite and non-negative")
    if np.all(conc == 0):
        conc = np.ones_like(conc)
    g = np.zeros_like(conc)
    pos = conc > 0
    g[pos] = rng.gamma(conc[pos])
    return g / g.sum() * total


def _segment_dirichlet(
    conc: np.ndarray, starts: np.ndarray, counts: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Algorithm 6 on contiguous segments at once: p ~ Dirichlet(conc[segment])."""
    g = rng.gamma(conc)
    seg = np.add.reduceat(g, starts) if starts.size else np.zeros(0)
    return g / np.repeat(seg, counts)


def _systematic_round(
    quota: np.ndarray,
    totals: np.ndarray,
    starts: np.ndarray,
    counts: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Unbiased systematic rounding within contiguous segments.

    Preserves the integer segment ``totals`` exactly (E[result] = quota).
    """
    fl = np.floor(quota)
    frac = quota - fl
    cs = np.cumsum(frac)
    before = np.repeat(cs[starts] - frac[starts], counts)
    c = cs - before
    u = np.repeat(rng.random(starts.size), counts)
    hits = np.floor(c + u)
    prev = np.concatenate(([0.0], hits[:-1]))
    prev[starts] = np.floor(u[starts])
    res = (fl + hits - prev).astype(np.int64)
    # floating-point guard: fix any off-by-one segment total on its largest entry
    diff = totals - np.add.reduceat(res, starts) if starts.size else totals
    if np.any(diff != 0):
        seg = np.repeat(np.arange(starts.size), counts)
        order = np.lexsort((-quota, seg))
        first = order[np.searchsorted(seg[order], np.arange(starts.size))]
        res[first] += diff
        res = np.maximum(res, 0)
    return res


# --------------------------------------------------------------------------------------
# establishments (Algorithm 7)
# --------------------------------------------------------------------------------------


def establishments_from_cells(
    cells: pl.DataFrame,
    rng: np.random.Generator,
    *,
    year: int = 2016,
    qtr: int = 1,
    shape: float = 10.0,
    scale: float = 200.0,
    eta: float = 0.5,
    wage_unit: float = 1000.0,
) -> pl.DataFrame:
    """Establishment microdata from county × ownership × NAICS-6 cells (Algorithm 7).

    Args:
        cells: agglvl-78 rows with ``area_fips``, ``own_code``, ``industry_code``,
            ``establishments`` and the four :data:`~eree.data.qcew.CELL_VALUES` (no
            suppressed value: impute first). Cells with no establishment are skipped.
        rng: the random generator.
        shape, scale: of the Gamma prior of the concentrations (10 and 200, A.4).
        eta: Algorithm 2's noise parameter for month 2 (0.5, A.4).
        wage_unit: wages are written in units of this many dollars (1000: thousands,
            like Syn-RI; each cell's total is rounded half-to-even first).

    Returns:
        One row per establishment in the
        :data:`~eree.synth.qcew_microdata.ESTABLISHMENT_SCHEMA`, ordered by cell (state,
        county, ownership, NAICS-6); ``primary_key`` = 1..n (Algorithm 7 l. 12).
    """
    if not (shape > 0 and scale > 0 and wage_unit > 0):
        raise ValueError("shape, scale and wage_unit must be > 0")
    c = cells.filter(pl.col("establishments") > 0).sort("area_fips", "own_code", "industry_code")
    d = c.get_column("establishments").to_numpy().astype(np.int64)
    n = int(d.sum())
    starts = np.concatenate(([0], np.cumsum(d)[:-1])).astype(np.int64)
    measure = {
        attr: c.get_column(CELL_VALUE_OF_ATTRIBUTE[attr]).to_numpy()
        for attr in ("m1emp", "m3emp", "wage")
    }
    tot = {
        "m1emp": measure["m1emp"].astype(np.int64),
        "m3emp": measure["m3emp"].astype(np.int64),
        "wage": np.rint(measure["wage"] / wage_unit).astype(np.int64),
    }
    a = rng.gamma(shape, scale, n)  # Alg 7 l. 6, shared by the three dividers
    out: dict[str, np.ndarray] = {}
    for name in ("m1emp", "m3emp", "wage"):  # Alg 7 l. 7–9: three Dirichlet dividers
        p = _segment_dirichlet(a, starts, d, rng)
        out[name] = _systematic_round(p * np.repeat(tot[name], d), tot[name], starts, d, rng)
    out["m2emp"] = month2_employment(out["m1emp"], out["m3emp"], rng, eta).astype(np.int64)
    area = c.get_column("area_fips")
    state = area.str.slice(0, 2).cast(pl.Int64).to_numpy()
    cnty = area.str.slice(2, 3).cast(pl.Int64).to_numpy()
    naics = c.get_column("industry_code").cast(pl.Int64).to_numpy()
    cols = {
        "primary_key": np.arange(1, n + 1, dtype=np.int64),
        "state": np.repeat(state, d),
        "cnty": np.repeat(cnty, d),
        "own": np.repeat(c.get_column("own_code").to_numpy(), d),
        **naics_columns(np.repeat(naics, d)),
        **out,
        "year": np.full(n, year),
        "qtr": np.full(n, qtr),
    }
    return establishment_frame(cols)
