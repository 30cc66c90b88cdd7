"""The interval audit: linked LP bounds of every cell from all published constraints."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from eree.evaluate.reconstruct import from_frame, interval_audit, linked_bounds
from eree.evaluate.reconstruct.release import from_linked_tables
from eree.suppression import (
    PrimaryRules,
    SecondaryConfig,
    SuppressionConfig,
    suppress_establishments,
)
from tests.suppression.helpers import random_qcew


@pytest.mark.parametrize(("seed", "skip"), [(5, False), (6, False), (5, True)])
def test_reproduces_eree_suppress_audit_exactly(seed: int, skip: bool) -> None:
    df = random_qcew(seed, 200)
    cfg = SuppressionConfig(
        attributes=("m1emp", "wage"),
        rules=PrimaryRules(exempt={"own": ("3",)}),
        secondary=SecondaryConfig(keep_tables=("50", "70")),
        skip_secondary=skip,
        exact_audit=True,
    )
    res = suppress_establishments(df, cfg)
    assert res.audit is not None and res.suppressed.sum() > 0
    for attr in ("m1emp", "wage"):
        pub = from_linked_tables(res.tables, res.suppressed, attr)
        ours = interval_audit(pub)
        if not skip:  # the linked LPs were solved, not only the singleton attack
            assert ours.stats["lp"] > 0 and res.audit.stats["lp"] > 0
        theirs = res.audit.bounds.filter(pl.col("attribute") == attr).sort("cell")
        cells = theirs.get_column("cell").to_numpy()
        lo, hi = theirs.get_column("lower").to_numpy(), theirs.get_column("upper").to_numpy()
        tol = 1e-6 * np.maximum(1.0, np.where(np.isfinite(hi), hi, 0.0))
        assert np.all(np.abs(ours.lower[cells] - lo) <= tol)
        assert np.array_equal(np.isinf(ours.upper[cells]), np.isinf(hi))
        f = np.isfinite(hi)
        assert np.all(np.abs(ours.upper[cells][f] - hi[f]) <= tol[f])
        # the pinned cells are the audit's pinned cells
        assert ours.pinned[cells].sum() == theirs.get_column("pinned").sum()
        # published cells stay their value
        pubm = ~res.suppressed
        vals = res.tables.values(attr)
        assert np.allclose(ours.lower[pubm], vals[pubm]) and np.allclose(
            ours.upper[pubm], vals[pubm]
        )
    if skip:  # without complements the attacker pins cells (the audit's own finding)
        assert not res.audit.ok


def _brute(rel: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = rel.shape[1]
    out_lo, out_hi = np.empty(n), np.empty(n)
    for j in range(n):
        c = np.zeros(n)
        c[j] = 1
        b = list(zip(lo, np.where(np.isinf(hi), None, hi), strict=True))
        r = linprog(c, A_eq=rel, b_eq=np.zeros(rel.shape[0]), bounds=b, method="highs")
        out_lo[j] = r.x[j]
        r = linprog(-c, A_eq=rel, b_eq=np.zeros(rel.shape[0]), bounds=b, method="highs")
        out_hi[j] = np.inf if r.status == 3 else r.x[j]
    return out_lo, out_hi


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_linked_bounds_match_one_lp_over_all_cells(seed: int) -> None:
    """Components, peeling and skipped LPs change nothing: same bounds as one big LP."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 9, size=(4, 5)).astype(float)  # a 4×5 table with margins
    cells = np.concatenate([x.ravel(), x.sum(1), x.sum(0), [x.sum()]])
    n = cells.size
    rows = []
    for i in range(4):
        r = np.zeros(n)
        r[20 + i] = 1
        r[i * 5 : i * 5 + 5] = -1
        rows.append(r)
    for j in range(5):
        r = np.zeros(n)
        r[24 + j] = 1
        r[j:20:5] = -1
        rows.append(r)
    r = np.zeros(n)
    r[29] = 1
    r[20:24] = -1
    rows.append(r)
    rel = sp.csr_matrix(np.array(rows))
    lo, hi = cells.copy(), cells.copy()
    kind = rng.integers(0, 3, size=n)  # 0 exact, 1 suppressed, 2 rounded to 5
    lo[kind == 1], hi[kind == 1] = 0, np.inf
    lo[kind == 2] = np.maximum(0, 5 * np.round(cells[kind == 2] / 5) - 2.5)
    hi[kind == 2] = 5 * np.round(cells[kind == 2] / 5) + 2.5
    got_lo, got_hi = linked_bounds(rel, lo, hi, truth=cells)
    exp_lo, exp_hi = _brute(rel, lo, hi)
    assert np.allclose(got_lo, exp_lo, atol=1e-6)
    assert np.array_equal(np.isinf(got_hi), np.isinf(exp_hi))
    f = np.isfinite(exp_hi)
    assert np.allclose(got_hi[f], exp_hi[f], atol=1e-6)
    got2 = linked_bounds(rel, lo, hi)  # without the truth: the same
    assert np.allclose(got2[0], exp_lo, atol=1e-6)


def test_a_suppressed_cell_alone_in_a_relation_is_pinned_from_the_format() -> None:
    """Block total and age cells, one age suppressed: the total gives it away."""
    f = pl.DataFrame(
        {
            "table": ["t", "a", "a", "a"],
            "block": ["b"] * 4,
            "age": [None, "A1", "A2", "A3"],
            "status": ["exact", "exact", "suppressed", "rounded"],
            "value": [10.0, 4.0, None, 5.0],
            "base": [None, None, None, 5.0],
        }
    )
    res = interval_audit(from_frame(f))
    # A2 + A3 = 6, A3 in [3, 7] (5 ± 2.5 on whole numbers): A2 in [0, 3], A3 in [3, 6]
    assert (res.lower[2], res.upper[2]) == (0.0, 3.0)
    assert (res.lower[3], res.upper[3]) == (3.0, 6.0)
    assert res.narrowed[3] and not res.pinned.any()
    f2 = f.with_columns(pl.Series("status", ["exact", "exact", "suppressed", "exact"]))
    res2 = interval_audit(from_frame(f2))
    assert res2.pinned[2] and res2.lower[2] == res2.upper[2] == 1.0
    assert res2.summary()["cells_pinned"] == 1


def test_one_establishment_cells_pin_the_contribution() -> None:
    f = pl.DataFrame(
        {
            "table": ["t", "s", "s"],
            "area": ["1"] * 3,
            "sector": [None, "x", "y"],
            "status": ["exact", "suppressed", "suppressed"],
            "value": [100.0, None, None],
            "establishments": [3.0, 1.0, 2.0],
        }
    )
    res = interval_audit(from_frame(f, integer=False))
    s = res.summary()
    assert s["establishment_contributions"] == 3
    assert s["establishment_contributions_pinned"] == 0  # two unknowns, one relation
    f2 = f.with_columns(
        pl.Series("status", ["exact", "suppressed", "exact"]),
        pl.Series("value", [100.0, None, 60.0]),
    )
    assert (
        interval_audit(from_frame(f2, integer=False)).summary()[
            "establishment_contributions_pinned"
        ]
        == 1
    )
