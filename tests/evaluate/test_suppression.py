"""Cell suppression: linked tables, primary rules, complementary suppression, the
attacker's LP audit (DESIGN.md §4.3; Webb et al. §2.2 and Appendix E)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp
import typer
from scipy.optimize import linprog
from typer.testing import CliRunner

from eree.errors import DataValidationError
from eree.evaluate.suppression import (
    PrimaryRules,
    SecondaryConfig,
    SuppressionConfig,
    attacker_bounds,
    audit,
    marginals_layout,
    primary_suppression,
    qcew_layout,
    qcew_tables,
    secondary_suppression,
    suppress_establishments,
    tabulate,
)
from eree.evaluate.suppression import lp as lp_module
from eree.evaluate.suppression.tables import Dimension, TableLayout

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
QCEW_DIR = SHARED / "qcew_2016_by_area"
SYN_RI = SHARED / "syn_ri" / "ri44_qbp_2016_1.csv.gz"


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent (needs ../shared/data)")
    return path


# --------------------------------------------------------------------------------------
# Appendix E: five establishments, three counties, three sectors
# --------------------------------------------------------------------------------------

B, C, G, F, A = 50.0, 30.0, 20.0, 40.0, 25.0  # wages of Bob, Carlos, Green, Isaac, Alice


def appendix_e() -> pl.DataFrame:
    """Table 10 of the QCEW paper (the wages are symbols there; any values do)."""
    return pl.DataFrame(
        {
            "establishment": [
                "Bob's Building",
                "Carlos's Construction",
                "Green Hills Farming",
                "Isaac's Foundations",
                "Alice's Apples",
            ],
            "county": ["X", "Y", "Y", "Z", "Z"],
            "sector": ["52", "23", "11", "23", "11"],
            "wage": [B, C, G, F, A],
        }
    )


#: "directly disclosive because they only contain one establishment": fewer than 2
E_RULES = PrimaryRules(threshold=2, dominance_k=None, p_percent=None)


def _cell(tables, county: str = "total", sector: str = "total") -> int:
    c = tables.cells
    return int(c.filter((pl.col("county") == county) & (pl.col("sector") == sector))["cell"][0])


@pytest.fixture
def e_tables():
    return tabulate(appendix_e(), marginals_layout(["county", "sector"]), ["wage"])


def test_appendix_e_tables(e_tables) -> None:
    t = e_tables
    assert t.n_cells == 7  # total, 3 counties, 3 sectors
    assert t.n_relations == 2  # total = Σ counties = Σ sectors
    assert t.values("wage")[_cell(t)] == B + C + G + F + A
    assert t.values("wage")[_cell(t, county="Y")] == C + G
    assert t.values("wage")[_cell(t, sector="11")] == A + G
    assert t.check_additivity("wage") == 0.0


def test_appendix_e_primary_is_county_x_and_sector_52(e_tables) -> None:
    prim = primary_suppression(e_tables, E_RULES)
    expected = {_cell(e_tables, county="X"), _cell(e_tables, sector="52")}
    assert set(np.flatnonzero(prim.primary)) == expected
    assert prim.protection["wage"][_cell(e_tables, county="X")] == pytest.approx(0.1 * B)


def test_appendix_e_without_secondary_the_attacker_recovers_b(e_tables) -> None:
    prim = primary_suppression(e_tables, E_RULES)
    res = audit(e_tables, prim.primary, protection=prim.protection)
    x, s52 = _cell(e_tables, county="X"), _cell(e_tables, sector="52")
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
    pattern[[_cell(e_tables), _cell(e_tables, county="Y")]] = True
    published = {
        _cell(e_tables, county="Z"),
        _cell(e_tables, sector="23"),
        _cell(e_tables, sector="11"),
    }
    assert set(np.flatnonzero(~pattern)) == published
    res = audit(e_tables, pattern, protection=prim.protection)
    assert res.ok
    b = res.bounds.filter(pl.col("cell") == _cell(e_tables, county="X"))
    assert b["lower"][0] == 0.0 and np.isinf(b["upper"][0])


def test_appendix_e_eree_secondary_pattern(e_tables) -> None:
    prim = primary_suppression(e_tables, E_RULES)
    sec = secondary_suppression(e_tables, prim)
    assert sec.unprotectable.size == 0
    # value cost: the smaller county (Y) and the smaller sector (11); the total is kept
    assert set(np.flatnonzero(sec.secondary)) == {
        _cell(e_tables, county="Y"),
        _cell(e_tables, sector="11"),
    }
    res = audit(e_tables, sec.suppressed, protection=prim.protection)
    assert res.ok  # no recovery: nothing pinned, X and 52 keep their protection
    x = res.bounds.filter(pl.col("cell") == _cell(e_tables, county="X"))
    assert x["lower"][0] == 0.0 and x["upper"][0] == pytest.approx(B + C + G)


def test_appendix_e_minimal_patterns(e_tables) -> None:
    """Exhaustive search over single complements: only the total works (the attacker
    then learns X = 52 but not its value); the paper's extra County Y is not needed
    against a linear attacker. eree's value cost prefers two small cells to the large
    total (test above); with unit cost the witness LPs tie between the total and a
    county, and the greedy pass may take two cells (a documented limit)."""
    prim = primary_suppression(e_tables, E_RULES)
    works = []
    for j in np.flatnonzero(~prim.primary):
        pattern = prim.primary.copy()
        pattern[j] = True
        if audit(e_tables, pattern, protection=prim.protection).ok:
            works.append(int(j))
    assert works == [_cell(e_tables)]
    sec = secondary_suppression(e_tables, prim, SecondaryConfig(cost="unit"))
    assert 1 <= sec.secondary.sum() <= 2
    assert audit(e_tables, sec.suppressed, protection=prim.protection).ok


# --------------------------------------------------------------------------------------
# Primary rules on small frames
# --------------------------------------------------------------------------------------


def _groups(values: dict[str, list[float]]) -> pl.DataFrame:
    rows = [(g, v) for g, vs in values.items() for v in vs]
    return pl.DataFrame({"g": [r[0] for r in rows], "x": [r[1] for r in rows]})


def _rules_on(values: dict[str, list[float]], rules: PrimaryRules):
    t = tabulate(_groups(values), marginals_layout(["g"]), ["x"], top=3)
    prim = primary_suppression(t, rules)
    by = dict(zip(t.cells["g"].to_list(), range(t.n_cells), strict=True))
    return t, prim, by


def test_threshold_rule() -> None:
    vals = {"one": [5.0], "two": [5.0, 5.0], "three": [5.0, 5.0, 5.0]}
    only = {"dominance_k": None, "p_percent": None}
    _, p, by = _rules_on(vals, PrimaryRules(threshold=3, **only))
    assert p.primary[by["one"]] and p.primary[by["two"]] and not p.primary[by["three"]]
    _, p, by = _rules_on(vals, PrimaryRules(threshold=2, **only))
    assert p.primary[by["one"]] and not p.primary[by["two"]]
    # protection of threshold cells: protection_percent of the largest contribution
    _, p, by = _rules_on(vals, PrimaryRules(threshold=3, protection_percent=20, **only))
    assert p.protection["x"][by["two"]] == pytest.approx(1.0)


def test_dominance_rule_and_protection() -> None:
    only = {"threshold": None, "p_percent": None, "min_protection": 0.0}
    vals = {"dominated": [90.0, 5.0, 5.0], "balanced": [70.0, 20.0, 10.0]}
    _, p, by = _rules_on(vals, PrimaryRules(dominance_k=80, **only))
    assert p.dominance[by["dominated"]] and not p.dominance[by["balanced"]]
    # the cell total must grow to 90/0.8 = 112.5 for the rule to pass
    assert p.protection["x"][by["dominated"]] == pytest.approx(12.5)
    assert p.protection["x"][by["balanced"]] == 0.0
    # (2, 85): the two largest exceed 85 %
    _, p, by = _rules_on(vals, PrimaryRules(dominance_n=2, dominance_k=85, **only))
    assert p.primary[by["dominated"]] and p.primary[by["balanced"]]
    assert p.protection["x"][by["balanced"]] == pytest.approx(90 / 0.85 - 100)


def test_p_percent_rule_and_protection() -> None:
    only = {"threshold": None, "dominance_k": None, "min_protection": 0.0}
    vals = {"close": [50.0, 45.0, 2.0], "safe": [50.0, 30.0, 20.0]}
    _, p, by = _rules_on(vals, PrimaryRules(p_percent=10, **only))
    assert p.p_rule[by["close"]] and not p.p_rule[by["safe"]]
    # remainder 2 < 10 % of 50: the total must move by 5 − 2 = 3
    assert p.protection["x"][by["close"]] == pytest.approx(3.0)
    _, p, by = _rules_on(vals, PrimaryRules(p_percent=50, **only))
    assert p.p_rule[by["safe"]]  # 20 < 25


def test_min_protection_lower_cap_and_zero_cells() -> None:
    vals = {"zero": [0.0], "small": [0.4]}
    t, p, by = _rules_on(vals, PrimaryRules())
    assert p.primary[by["zero"]] and p.primary[by["small"]]  # threshold
    assert p.protection["x"][by["zero"]] == 1.0  # min_protection
    lo = p.lower_protection("x", t.values("x"))
    assert lo[by["zero"]] == 0.0 and lo[by["small"]] == pytest.approx(0.4)


def test_exempt_cells_are_never_suppressed() -> None:
    df = pl.DataFrame(
        {
            "cnty": ["1", "1", "3"],
            "own": ["1", "5", "5"],
            "naics": ["921110", "236115", "236115"],
            "m1emp": [10.0, 3.0, 4.0],
        }
    )
    t = qcew_tables(df, ["m1emp"])
    p = primary_suppression(t, PrimaryRules(exempt={"own": ("1",)}))
    own = t.cells["own"].to_numpy()
    assert not p.primary[own == "1"].any() and p.exempt[own == "1"].all()
    assert p.primary[own == "5"].any()


def test_rules_reject_bad_parameters() -> None:
    with pytest.raises(ValueError):
        PrimaryRules(dominance_k=120)
    with pytest.raises(ValueError):
        PrimaryRules(threshold=0)
    t = tabulate(_groups({"a": [1.0]}), marginals_layout(["g"]), ["x"], top=1)
    with pytest.raises(ValueError):
        primary_suppression(t, PrimaryRules())  # the p% rule needs x2


# --------------------------------------------------------------------------------------
# The audit's LPs on hand-solvable tables
# --------------------------------------------------------------------------------------


def two_by_two() -> tuple:
    """Rows r ∈ {a, b}, columns c ∈ {u, v}: interior 10, 20 / 30, 40."""
    df = pl.DataFrame(
        {"r": ["a", "a", "b", "b"], "c": ["u", "v", "u", "v"], "x": [10.0, 20.0, 30.0, 40.0]}
    )
    dims = (
        Dimension("r", (("total", None), ("r", "r"))),
        Dimension("c", (("total", None), ("c", "c"))),
    )
    layout = TableLayout(dims, (("total", "total"), ("r", "total"), ("total", "c"), ("r", "c")))
    t = tabulate(df, layout, ["x"])
    idx = {(r, c): i for i, (r, c) in enumerate(zip(t.cells["r"], t.cells["c"], strict=True))}
    return t, idx


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


def _brute_bounds(a: sp.csr_matrix, s: np.ndarray, x: np.ndarray) -> tuple:
    idx = np.flatnonzero(s)
    a_s = a.tocsc()[:, idx]
    b = -(a.tocsc()[:, ~s] @ x[~s])
    lo, hi = np.full(len(x), np.nan), np.full(len(x), np.nan)
    for k, i in enumerate(idx):
        c = np.zeros(idx.size)
        c[k] = 1.0
        r = linprog(c, A_eq=a_s, b_eq=b, bounds=(0, None), method="highs")
        lo[i] = r.x[k]
        r = linprog(-c, A_eq=a_s, b_eq=b, bounds=(0, None), method="highs")
        hi[i] = np.inf if r.status == 3 else r.x[k]
    return lo, hi


def _random_qcew(seed: int, n: int = 120) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    codes = ["236115", "236116", "236220", "238110", "311811", "541110", "541211", "722511"]
    emp = rng.integers(0, 60, n).astype(float) * (rng.random(n) < 0.95)
    return pl.DataFrame(
        {
            "primary_key": [str(i) for i in range(n)],
            "cnty": rng.choice(["1", "3", "5"], n).tolist(),
            "own": rng.choice(["5", "5", "5", "3"], n).tolist(),
            "naics": rng.choice(codes, n).tolist(),
            "m1emp": emp,
            "wage": emp * rng.uniform(5, 15, n),
        }
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_attacker_bounds_match_brute_force_lps(seed: int, monkeypatch) -> None:
    t = qcew_tables(_random_qcew(seed), ["m1emp"])
    rng = np.random.default_rng(seed)
    s = rng.random(t.n_cells) < 0.4
    s[0] = False
    x = t.values("m1emp")
    lo_b, hi_b = _brute_bounds(t.relations, s, x)
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
# Linked tables and the whole pipeline on small QCEW-like frames
# --------------------------------------------------------------------------------------


def test_qcew_tables_structure_and_additivity() -> None:
    df = _random_qcew(3, 300)
    t = qcew_tables(df, ["m1emp", "wage"])
    for a in ("m1emp", "wage"):
        assert t.check_additivity(a) < 1e-12
    codes = set(t.cells["table_code"].to_list())
    assert codes == {str(c) for c in (*range(50, 59), *range(70, 79))}
    state = t.cells.filter(pl.col("table_code") == "50")
    assert state["establishments"][0] == 300
    assert state["m1emp"][0] == pytest.approx(df["m1emp"].sum())
    # QCEW sector codes and the domain level
    assert "31-33" in t.cells.filter(pl.col("table_code") == "54")["industry"].to_list()
    assert set(t.cells.filter(pl.col("table_code") == "52")["industry"]) == {"101", "102"}
    # the largest contributions
    c = t.cells.filter(pl.col("table_code") == "50")
    assert c["m1emp__x1"][0] == df["m1emp"].max()


def test_tabulate_rejects_bad_input() -> None:
    df = _random_qcew(4, 20).with_columns(pl.lit(-1.0).alias("m1emp"))
    with pytest.raises(DataValidationError):
        qcew_tables(df, ["m1emp"])
    with pytest.raises(DataValidationError):
        qcew_tables(_random_qcew(4, 20).drop("cnty"), ["m1emp"])
    bad = _random_qcew(4, 20).with_columns(pl.lit("999").alias("naics3"))
    with pytest.raises(DataValidationError):
        qcew_tables(bad, ["m1emp"])


@pytest.mark.parametrize("seed", [5, 6])
def test_pipeline_protects_every_primary_cell(seed: int) -> None:
    df = _random_qcew(seed, 200)
    cfg = SuppressionConfig(
        attributes=("m1emp", "wage"),
        rules=PrimaryRules(exempt={"own": ("3",)}),
        secondary=SecondaryConfig(keep_tables=("50", "70")),
    )
    res = suppress_establishments(df, cfg)
    assert res.primary.primary.any() and res.secondary is not None
    assert res.secondary.unprotectable.size == 0
    assert res.audit is not None and res.audit.ok
    codes = res.tables.cells["table_code"].to_numpy()
    assert not res.suppressed[res.primary.exempt].any()
    assert not res.secondary.secondary[np.isin(codes, ["50", "70"])].any()
    # the published table withholds exactly the suppressed cells
    pub = res.published()
    assert (pub["m1emp"].is_null().to_numpy() == res.suppressed).all()
    assert ((pub["disclosure_code"] == "N").to_numpy() == res.suppressed).all()
    s = res.summary()
    assert s["suppressed"] == int(res.suppressed.sum()) and s["audit"]["ok"]
    json.dumps(s)
    # without complements, the attacker pins primary cells down
    skip = suppress_establishments(
        df, SuppressionConfig(attributes=("m1emp",), skip_secondary=True)
    )
    assert skip.audit is not None and not skip.audit.ok


def test_pipeline_rejects_several_states() -> None:
    df = _random_qcew(7, 30).with_columns(pl.Series("state", ["44"] * 15 + ["10"] * 15))
    with pytest.raises(DataValidationError):
        suppress_establishments(df, SuppressionConfig(attributes=("m1emp",)))


def test_layout_validation() -> None:
    with pytest.raises(ValueError):
        Dimension("d", (("a", "col"),))
    with pytest.raises(ValueError):
        TableLayout((Dimension("d", (("t", None), ("a", "a"))),), (("nope",),))
    assert len(qcew_layout(domain=False).tables) == 16


# --------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------


def _cli() -> typer.Typer:
    from eree.evaluate.suppression_cli import audit_suppression, suppress

    app = typer.Typer()
    app.command("suppress")(suppress)
    app.command("audit-suppression")(audit_suppression)
    return app


def test_cli_suppress_and_audit(tmp_path: Path) -> None:
    df = _random_qcew(8, 150).with_columns(pl.lit("44").alias("state"))
    # a distinctive confidential value that must never reach the screen
    df = df.with_columns(
        pl.when(pl.col("primary_key") == "0").then(987654.0).otherwise(pl.col("wage")).alias("wage")
    )
    src = tmp_path / "est.csv"
    df.write_csv(src)
    out = tmp_path / "out"
    runner = CliRunner()
    r = runner.invoke(
        _cli(), ["suppress", str(src), "--out", str(out), "--attributes", "m1emp,wage"]
    )
    assert r.exit_code == 0, r.output
    assert "987654" not in r.output
    d = out / "44"
    for f in (
        "published.parquet",
        "published.csv",
        "pattern.parquet",
        "audit.parquet",
        "rates.csv",
        "summary.json",
    ):
        assert (d / f).exists(), f
    summary = json.loads((d / "summary.json").read_text())
    assert summary["audit"]["ok"] and "987654" not in (d / "summary.json").read_text()
    # existing output directory: refused, nothing overwritten
    r = runner.invoke(_cli(), ["suppress", str(src), "--out", str(out)])
    assert r.exit_code == 2
    # audit the published table
    r = runner.invoke(
        _cli(),
        [
            "audit-suppression",
            str(src),
            "--published",
            str(d / "published.parquet"),
            "--attributes",
            "m1emp,wage",
            "--out",
            str(tmp_path / "aud"),
        ],
    )
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "aud" / "summary.json").read_text())[0]["ok"]
    # primary only: cells pinned
    args = ["audit-suppression", str(src), "--primary-only", "--attributes", "m1emp"]
    r = runner.invoke(_cli(), [*args, "--out", str(tmp_path / "aud2")])
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "aud2" / "summary.json").read_text())[0]["ok"] is False


# --------------------------------------------------------------------------------------
# Real data (skipped without ../shared/data)
# --------------------------------------------------------------------------------------


@pytest.mark.shared_data
def test_bls_relations_hold_in_the_real_ri_file() -> None:
    """Every relation of the linked tables whose cells BLS all published adds up
    exactly in the real RI 2016 Q1 file: the attacker's model is the real one."""
    from eree.evaluate.suppression.bls import bls_linked_tables

    t, s = bls_linked_tables(_need(QCEW_DIR), "44")
    full = np.asarray(abs(t.relations)[:, np.flatnonzero(s)].sum(axis=1)).ravel() == 0
    assert full.sum() > 2000
    for a in t.attributes:
        assert np.abs(t.relations[full] @ t.values(a)).max() == 0.0
    assert 0.45 < s.mean() < 0.6  # BLS withholds about half the cells


@pytest.mark.shared_data
def test_syn_ri_subset_suppression() -> None:
    df = pl.read_csv(_need(SYN_RI), infer_schema_length=10_000)
    df = df.filter(pl.col("cnty") == 1)  # one county (1,102 establishments): fast
    res = suppress_establishments(df, SuppressionConfig(attributes=("m3emp",)))
    assert res.audit is not None and res.audit.ok
    assert 0.2 < res.suppressed.mean() < 0.9


@pytest.mark.slow
@pytest.mark.shared_data
def test_bls_publication_audit_pins_cells() -> None:
    """The attacker's LPs on BLS's own RI 2016 Q1 publication recover suppressed cells
    exactly (see docs/cell-suppression.md); eree's own pattern pins none."""
    from eree.evaluate.suppression.bls import bls_linked_tables

    t, s = bls_linked_tables(_need(QCEW_DIR), "44", attributes=("wage",))
    res = audit(t, s, values_known=False)
    pinned = res.pinned
    assert pinned.height > 0
    small = t.counts()[pinned["cell"].to_numpy()] < 3
    assert small.sum() > 0


@pytest.mark.slow
@pytest.mark.shared_data
def test_ri_synthesised_from_bls_files_next_to_bls_rates() -> None:
    from eree.evaluate.suppression.bls import bls_cells, compare_with_bls
    from eree.synth.qcew import synth_qcew_from_area

    est = synth_qcew_from_area(_need(QCEW_DIR), seed=1).establishments
    ri = est.filter(pl.col("state") == 44)
    cfg = SuppressionConfig(
        rules=PrimaryRules(exempt={"own": ("1",)}),
        secondary=SecondaryConfig(keep_tables=("50", "51", "70")),
    )
    res = suppress_establishments(ri, cfg)
    assert res.audit is not None and res.audit.ok  # nothing pinned in eree's pattern
    cmp = compare_with_bls(res, bls_cells(QCEW_DIR, "44"))
    total = cmp.filter(pl.col("table_code") == "all").row(0, named=True)
    assert total["bls_cells_only"] == 0 and total["eree_cells_only"] == 0
    assert abs(total["eree_suppressed_share"] - total["bls_suppressed_share"]) < 0.05


@pytest.mark.slow
def test_compare_with_gedp_small_state() -> None:
    from eree.evaluate.suppression.compare import compare_with_gedp
    from eree.synth.qcew import synth_qcew_parametric

    est = synth_qcew_parametric(seed=3, n_establishments=3000, n_counties=4).establishments
    res = suppress_establishments(est, SuppressionConfig(attributes=("m3emp", "wage")))
    cmp = compare_with_gedp(est, res, trials=1, seed=1)
    row = cmp.filter(pl.col("table_code") == "all", pl.col("attribute") == "m3emp")

    def val(method: str, metric: str, cells: str = "all") -> float:
        r = row.filter(
            pl.col("method") == method, pl.col("metric") == metric, pl.col("cells") == cells
        )
        return float(r["value"][0])

    assert val("gedp", "share_cells_published") == 1.0
    assert val("suppression", "share_cells_published") < 1.0
    assert np.isfinite(val("gedp", "mean_abs_error"))
    st = cmp.filter(
        pl.col("table_code") == "50",
        pl.col("attribute") == "m3emp",
        pl.col("method") == "gedp",
        pl.col("metric") == "median_rel_error",
    )
    assert float(st["value"][0]) < 0.01  # the state total is accurate
