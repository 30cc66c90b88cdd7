"""The attacker's audit: LP bounds on hand-solvable tables, against brute force."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from eree.suppression import (
    attacker_bounds,
    audit,
    primary_suppression,
    qcew_tables,
    tabulate,
)
from eree.suppression import lp as lp_module
from eree.suppression.secondary import Witness
from tests.suppression.helpers import (
    E_RULES,
    B,
    brute_bounds,
    cell_of,
    random_qcew,
    two_by_two,
)


def test_appendix_e_without_secondary_the_attacker_recovers_b(e_tables) -> None:
    prim = primary_suppression(e_tables, E_RULES)
    res = audit(e_tables, prim.primary, protection=prim.protection)
    x, s52 = cell_of(e_tables, county="X"), cell_of(e_tables, sector="52")
    b = res.bounds.filter(pl.col("cell").is_in([x, s52]))
    # total − Y − Z and total − sector 23 − sector 11 both give 𝔹 exactly
    assert b["lower"].to_list() == pytest.approx([B, B])
    assert b["upper"].to_list() == pytest.approx([B, B])
    assert b["pinned"].all() and b["narrowed"].all()
    assert not res.ok


def test_appendix_e_papers_secondary_pattern_protects(e_tables) -> None:
    """The paper's pattern: also suppress the total and County Y; publish Z, 23, 11."""
    prim = primary_suppression(e_tables, E_RULES)
    pattern = prim.primary.copy()
    pattern[[cell_of(e_tables), cell_of(e_tables, county="Y")]] = True
    published = {
        cell_of(e_tables, county="Z"),
        cell_of(e_tables, sector="23"),
        cell_of(e_tables, sector="11"),
    }
    assert set(np.flatnonzero(~pattern)) == published
    res = audit(e_tables, pattern, protection=prim.protection)
    assert res.ok
    b = res.bounds.filter(pl.col("cell") == cell_of(e_tables, county="X"))
    assert b["lower"][0] == 0.0 and np.isinf(b["upper"][0])


def test_audit_2x2_interior_suppressed() -> None:
    t, idx = two_by_two()
    assert t.n_cells == 9 and t.n_relations == 6 and t.check_additivity("x") == 0
    s = np.zeros(t.n_cells, bool)
    for k in (("a", "u"), ("a", "v"), ("b", "u"), ("b", "v")):
        s[idx[k]] = True
    lo, hi = attacker_bounds(t.relations, s, t.values("x"))
    # a,u ∈ [max(0, row a − col v), min(row a, col u)] = [0, 30]
    assert (lo[idx["a", "u"]], hi[idx["a", "u"]]) == pytest.approx((0.0, 30.0))
    assert (lo[idx["b", "v"]], hi[idx["b", "v"]]) == pytest.approx((30.0, 60.0))
    assert (lo[idx["a", "v"]], hi[idx["a", "v"]]) == pytest.approx((0.0, 30.0))


def test_audit_single_suppression_is_pinned_and_total_unbounded() -> None:
    t, idx = two_by_two()
    s = np.zeros(t.n_cells, bool)
    s[idx["a", "u"]] = True
    res = audit(t, s)
    assert res.pinned.height == 1 and res.bounds["upper"][0] == pytest.approx(10.0)
    # suppress the whole column u and the grand total: unbounded above
    s = np.zeros(t.n_cells, bool)
    for k in (
        ("a", "u"),
        ("b", "u"),
        ("total", "u"),
        ("total", "total"),
        ("a", "total"),
        ("b", "total"),
    ):
        s[idx[k]] = True
    lo, hi = attacker_bounds(t.relations, s, t.values("x"))
    assert np.isinf(hi[idx["total", "total"]]) and lo[idx["total", "total"]] == pytest.approx(60)
    # zeros pin through non-negativity: row a = 0 published forces a,u = a,v = 0
    df = pl.DataFrame({"r": ["a", "a", "b"], "c": ["u", "v", "u"], "x": [0.0, 0.0, 5.0]})
    t2 = tabulate(df, t.layout, ["x"])
    s2 = t2.cells["r"].is_in(["a"]).to_numpy() & (t2.cells["c"] != "total").to_numpy()
    s2 |= (t2.cells["r"] == "total").to_numpy() & (t2.cells["c"] != "total").to_numpy()
    r2 = audit(t2, s2)
    a_cells = r2.bounds.filter(pl.col("r") == "a")
    assert a_cells["pinned"].all() and (a_cells["upper"] == 0).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_attacker_bounds_match_brute_force_lps(seed: int, monkeypatch) -> None:
    t = qcew_tables(random_qcew(seed), ["m1emp"])
    rng = np.random.default_rng(seed)
    s = rng.random(t.n_cells) < 0.4
    s[0] = False
    x = t.values("m1emp")
    lo_b, hi_b = brute_bounds(t.relations, s, x)
    lo, hi = attacker_bounds(t.relations, s, x)
    np.testing.assert_allclose(lo[s], lo_b[s], atol=1e-6)
    np.testing.assert_allclose(hi[s], hi_b[s], atol=1e-6)
    # unknown suppressed values (a publication audited from its public cells only)
    lo_u, hi_u = attacker_bounds(t.relations, s, np.where(s, 0.0, x), values_known=False)
    np.testing.assert_allclose(lo_u[s], lo_b[s], atol=1e-6)
    np.testing.assert_allclose(hi_u[s], hi_b[s], atol=1e-6)
    # the public linprog path gives the same bounds as the warm-started one
    monkeypatch.setenv("EREE_LP", "linprog")
    assert not lp_module.warm_start_available()
    lo_l, hi_l = attacker_bounds(t.relations, s, x)
    np.testing.assert_allclose(lo_l[s], lo_b[s], atol=1e-6)
    np.testing.assert_allclose(hi_l[s], hi_b[s], atol=1e-6)


# --------------------------------------------------------------------------------------
# Attacks without LPs; bounds certified by feasible points
# --------------------------------------------------------------------------------------


def test_singleton_and_chained_singleton_attacks_pin_without_lps() -> None:
    """Suppress (a,u) and the row total (a): column u = (a,u) + (b,u) has one unknown,
    so (a,u) = 40 − 30 = 10; then row a = (a,u) + (a,v) = 10 + 20 = 30."""
    t, idx = two_by_two()
    s = np.zeros(t.n_cells, bool)
    s[idx["a", "u"]] = s[idx["a", "total"]] = True
    res = audit(t, s)
    b = res.bounds.sort("cell")
    assert b["pinned"].all()
    got = {int(c): (lo, hi) for c, lo, hi in zip(b["cell"], b["lower"], b["upper"], strict=True)}
    assert got[idx["a", "u"]] == pytest.approx((10.0, 10.0))
    assert got[idx["a", "total"]] == pytest.approx((30.0, 30.0))
    assert res.stats["lp"] == 0 and res.stats["peeled"] == 2


def _interior(t, idx) -> np.ndarray:
    s = np.zeros(t.n_cells, bool)
    for k in (("a", "u"), ("a", "v"), ("b", "u"), ("b", "v")):
        s[idx[k]] = True
    return s


def _rectangle(idx) -> Witness:
    cells = np.array([idx["a", "u"], idx["a", "v"], idx["b", "u"], idx["b", "v"]])
    order = np.argsort(cells)
    return Witness(int(cells[0]), "x", cells[order], np.array([1.0, -1.0, -1.0, 1.0])[order])


def test_certified_bounds_from_a_witness_equal_the_exact_intervals() -> None:
    """Interior 10, 20 / 30, 40 suppressed; the rectangle y = (+1, −1, −1, +1) can step
    +20 (until (a,v) = 0) and −10 (until (a,u) = 0): (a,u) ∈ [0, 30], (a,v) ∈ [0, 30],
    (b,u) ∈ [10, 40], (b,v) ∈ [30, 60] — the exact attacker intervals, with no LP."""
    t, idx = two_by_two()
    s = _interior(t, idx)
    res = audit(t, s, witnesses=[_rectangle(idx)])
    assert res.stats["lp"] == 0 and res.stats["certified"] == 4
    b = {int(r["cell"]): (r["lower"], r["upper"]) for r in res.bounds.to_dicts()}
    assert b[idx["a", "u"]] == pytest.approx((0.0, 30.0))
    assert b[idx["a", "v"]] == pytest.approx((0.0, 30.0))
    assert b[idx["b", "u"]] == pytest.approx((10.0, 40.0))
    assert b[idx["b", "v"]] == pytest.approx((30.0, 60.0))
    assert res.ok


def test_a_cell_the_witnesses_cannot_certify_is_solved_exactly() -> None:
    """Protection 35 on (a,u) = 10 needs an upper bound of 45; the attacker's exact
    maximum is 30, so the certified bound cannot reach it: the audit solves that cell's
    LPs and reports it narrowed."""
    t, idx = two_by_two()
    s = _interior(t, idx)
    u = np.zeros(t.n_cells)
    u[idx["a", "u"]] = 35.0
    res = audit(t, s, witnesses=[_rectangle(idx)], protection={"x": u})
    assert res.stats["lp"] >= 1
    row = res.bounds.filter(pl.col("cell") == idx["a", "u"]).to_dicts()[0]
    assert row["upper"] == pytest.approx(30.0) and row["upper_exact"]
    assert row["narrowed"] and not res.ok


def test_a_false_witness_is_rejected() -> None:
    """y moving (a,u) alone breaks row a and column u: it is not a direction of the
    attacker's system and must not certify anything."""
    t, idx = two_by_two()
    s = _interior(t, idx)
    bad = Witness(idx["a", "u"], "x", np.array([idx["a", "u"]]), np.array([1.0]))
    res = audit(t, s, witnesses=[bad])
    assert res.stats["witnesses_rejected"] == 1
    exact = audit(t, s, exact=True)
    assert res.bounds["lower"].to_list() == pytest.approx(exact.bounds["lower"].to_list())
    assert res.bounds["upper"].to_list() == pytest.approx(exact.bounds["upper"].to_list())


@pytest.mark.parametrize("seed", [3, 4])
def test_certified_audit_agrees_with_the_exact_audit(seed: int) -> None:
    """Certified bounds lie inside the attacker's exact interval; pinned and narrowed
    flags are the same either way."""
    from eree.suppression import SuppressionConfig, suppress_establishments

    res = suppress_establishments(
        random_qcew(seed, 200), SuppressionConfig(attributes=("m1emp", "wage"))
    )
    assert res.secondary is not None and res.secondary.witnesses
    kw = {"protection": res.primary.protection, "primary": res.primary.primary}
    cert = audit(res.tables, res.suppressed, witnesses=res.secondary.witnesses, **kw)
    exact = audit(res.tables, res.suppressed, exact=True, **kw)
    assert cert.stats["certified"] > 0
    c, e = cert.bounds, exact.bounds
    assert c["pinned"].to_list() == e["pinned"].to_list()
    assert c["narrowed"].to_list() == e["narrowed"].to_list()
    tol = 1e-6 * np.maximum(1.0, e["value"].to_numpy())
    assert np.all(c["lower"].to_numpy() >= e["lower"].to_numpy() - tol)
    assert np.all(c["upper"].to_numpy() <= e["upper"].to_numpy() + tol)
    ex = c["upper_exact"].to_numpy()
    assert np.allclose(c["upper"].to_numpy()[ex], e["upper"].to_numpy()[ex])
    assert cert.ok and exact.ok
