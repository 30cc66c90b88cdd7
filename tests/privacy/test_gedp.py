"""μ-GEDP accounting, budget allocation and semantics (Webb et al. §5, §8).

See docs/design.md#gaussian-establishment-dp, #semantics.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from eree.errors import PrivacyParameterError, SpecError
from eree.privacy.gedp import (
    SEMANTICS_SIZES,
    allocate_mu,
    budget_table,
    explain_gedp_lines,
    gedp_semantics,
    make_gedp_definition,
    person_interval,
    power_bound,
)
from eree.privacy.neighbors import DPNeighbor, LogShift, SqrtShift, combine
from eree.release.build import build
from eree.release.gedp import accounting_plan

EMP = ("m1emp", "m2emp", "m3emp")
EMP_DIST = dict.fromkeys(EMP, 0.5)
ALL_DIST = {**EMP_DIST, "wage": 50.0}

#: §8.1 (confidential QCEW, employment only): budgets per month
SECTION_8_1 = [
    ("identity", "psi", 0.7),
    ("state", "pnc", 0.2),
    ("naics5", "pnc", 0.6),
    ("county", "pnc", 0.6),
    ("county_naics5", "pnc", 0.7),
]
#: Table 7: (query, μ_{q,e} per month, μ_{q,w}) and the printed μ_q, μ_q²/μ², μ_{q,w}²/μ_q²
TABLE_7 = [
    ("identity", 0.70, 0.15, 1.22, 0.281, 0.015),
    ("state", 0.20, 0.10, 0.36, 0.024, 0.077),
    ("naics5", 0.60, 0.15, 1.05, 0.207, 0.020),
    ("county", 0.60, 0.15, 1.05, 0.207, 0.020),
    ("county_naics5", 0.70, 0.15, 1.22, 0.281, 0.015),
]


def section_8_1_measurements() -> list[tuple[str, str, dict[str, float]]]:
    return [(q, m, dict.fromkeys(EMP, mu)) for q, m, mu in SECTION_8_1]


def table_7_mu() -> dict[str, dict[str, float]]:
    return {q: {**dict.fromkeys(EMP, e), "wage": w} for q, e, w, *_ in TABLE_7}


def table_7_measurements() -> list[tuple[str, str, dict[str, float]]]:
    mech = dict((q, m) for q, m, _ in SECTION_8_1)
    return [(q, mech[q], mu) for q, mu in table_7_mu().items()]


# --------------------------------------------------------------------------------------
# Accountant
# --------------------------------------------------------------------------------------


def test_mu_total_section_8_1_is_2_28() -> None:
    rep = build(
        accounting_plan(
            "sqrt", EMP_DIST, section_8_1_measurements(), zeta=0.01, bounds_from="identity"
        )
    ).report()
    assert rep.definition == "gedp"
    expected = math.sqrt(3 * (0.7**2 + 0.2**2 + 0.6**2 + 0.6**2 + 0.7**2))
    assert rep.total.mu == pytest.approx(expected, rel=1e-12)
    assert round(rep.total.mu or 0.0, 2) == 2.28
    assert len(rep.extra["measurements"]) == 15
    assert rep.charge("identity").total.mu == pytest.approx(0.7 * math.sqrt(3))
    assert rep.charge("state").params["zeta"] == 0.01


def test_mu_total_table_7_is_2_31() -> None:
    rep = build(
        accounting_plan("sqrt", ALL_DIST, table_7_measurements(), zeta=0.01, bounds_from="identity")
    ).report()
    assert round(rep.total.mu or 0.0, 2) == 2.31
    assert len(rep.extra["measurements"]) == 20
    for q, _e, _w, mu_q, _s, _ws in TABLE_7:
        assert round(rep.charge(q).total.mu or 0.0, 2) == mu_q
    sig = rep.charge("identity").params["sigma"]
    assert sig["m1emp"] == pytest.approx(0.5 / 0.7) and sig["wage"] == pytest.approx(50 / 0.15)
    d = rep.to_dict()
    assert d["total"]["mu"] == rep.total.mu and d["neighbor"] == "sqrt"
    assert d["distance"] == ALL_DIST


def test_table_7_columns_reproduced() -> None:
    rows = {r["query"]: r for r in budget_table(table_7_mu(), focus="wage")}
    for q, _e, _w, mu_q, share, wshare in TABLE_7:
        assert round(rows[q]["mu_q"], 2) == mu_q
        assert round(rows[q]["share"], 3) == share
        assert round(rows[q]["focus_share"], 3) == wshare
    assert round(rows["total"]["mu_q"], 2) == 2.31


def test_allocate_mu_reproduces_table_7() -> None:
    mu = table_7_mu()
    total = math.sqrt(sum(m * m for v in mu.values() for m in v.values()))
    q_shares = {q: sum(m * m for m in v.values()) / total**2 for q, v in mu.items()}
    # two-level form: query share of μ², then per-attribute share of μ_q²
    out = {}
    for q, v in mu.items():
        q2 = sum(m * m for m in v.values())
        out.update(
            allocate_mu(
                total * math.sqrt(q_shares[q]), {q: 1.0}, {a: m * m / q2 for a, m in v.items()}
            )
        )
    for q, v in mu.items():
        for a, m in v.items():
            assert out[q][a] == pytest.approx(m, rel=1e-12)
    # nested form, shares of μ² directly
    nested = {q: {a: m * m / total**2 for a, m in v.items()} for q, v in mu.items()}
    again = allocate_mu(total, nested)
    for q, v in mu.items():
        for a, m in v.items():
            assert again[q][a] == pytest.approx(m, rel=1e-12)
    # from the *printed* shares and μ ≈ 2.31: the per-month budgets to printed precision
    printed = allocate_mu(
        2.31,
        {q: s for q, *_, s, _ws in TABLE_7},
        {**dict.fromkeys(EMP, (1 - 0.015) / 3), "wage": 0.015},
    )
    assert round(printed["identity"]["m1emp"], 2) == 0.70
    assert round(printed["county"]["m1emp"], 2) == 0.60


@settings(max_examples=50, deadline=None)
@given(
    total=st.floats(min_value=0.01, max_value=50),
    shares=st.dictionaries(
        st.sampled_from(["a", "b", "c", "d"]), st.floats(min_value=0.01, max_value=10), min_size=1
    ),
    attrs=st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=3, unique=True),
)
def test_allocate_mu_composes_back_to_total(
    total: float, shares: dict[str, float], attrs: list[str]
) -> None:
    out = allocate_mu(total, shares, attrs)
    mus = [(q, a, m) for q, v in out.items() for a, m in v.items()]
    rep = build(
        accounting_plan("sqrt", dict.fromkeys(attrs, 0.5), [(q, "psi", v) for q, v in out.items()])
    ).report()
    assert rep.total.mu == pytest.approx(total, rel=1e-9)
    assert len(mus) == len(shares) * len(attrs)


def test_allocate_mu_errors() -> None:
    with pytest.raises(PrivacyParameterError):
        allocate_mu(0.0, {"q": 1.0}, ["a"])
    with pytest.raises(PrivacyParameterError, match="attributes"):
        allocate_mu(1.0, {"q": 1.0})
    with pytest.raises(PrivacyParameterError, match="zero"):
        allocate_mu(1.0, {"q": 0.0}, ["a"])
    with pytest.raises(PrivacyParameterError):
        allocate_mu(1.0, {"q": -1.0}, ["a"])


@pytest.mark.parametrize(
    ("measurements", "distance", "match"),
    [
        ([("q", "laplace", {"m1emp": 1.0})], EMP_DIST, "not a GEDP mechanism"),
        ([("q", "psi", {})], EMP_DIST, "mu per confidential attribute"),
        ([("q", "psi", {"m1emp": 0.0})], EMP_DIST, "finite"),
        ([("q", "psi", {"m1emp": float("inf")})], EMP_DIST, "finite"),
        ([("q", "psi", {"wage": 1.0})], EMP_DIST, "no distance"),
        ([("q", "estab_gaussian", {"m1emp": 1.0})], EMP_DIST, "finite ψ-neighbor sensitivity"),
        ([], EMP_DIST, "at least one query"),
        ([("q", "psi", {"m1emp": 1.0})], {"m1emp": 0.0}, "> 0"),
    ],
)
def test_account_gedp_errors(
    measurements: list[tuple[str, str, dict[str, float]]], distance: dict[str, float], match: str
) -> None:
    with pytest.raises((PrivacyParameterError, SpecError), match=match):
        build(accounting_plan("sqrt", distance, measurements)).report()


def test_estab_gaussian_with_linear_growth() -> None:
    rep = build(
        accounting_plan({"kind": "dp", "d": 1.0}, {}, [("q", "estab_gaussian", {"m1emp": 0.5})])
    ).report()
    c = rep.charge("q")
    assert c.params["sensitivity"]["m1emp"] == 1.0 and c.params["sigma"]["m1emp"] == 2.0
    het = {
        "kind": "heterogeneous",
        "parts": [{"kind": "sqrt", "gamma": 0.5}, {"kind": "dp", "d": 4}],
    }
    rep = build(accounting_plan(het, None, [("q", "estab_gaussian", {"m1emp": 2.0})])).report()
    assert rep.charge("q").params["sigma"]["m1emp"] == pytest.approx(2.0)
    assert rep.extra["distance"] == {"m1emp": 1.0}  # γ* = 1 by default


def test_definition_per_attribute_neighbors() -> None:
    d = make_gedp_definition(
        {"m1emp": "sqrt", "wage": {"kind": "log_shift", "a": 1.0}}, {"m1emp": 0.5, "wage": 0.1}
    )
    assert d.neighbor("m1emp") == SqrtShift() and d.neighbor("wage") == LogShift(1.0)
    assert d.neighbor_spec() == {"m1emp": "sqrt", "wage": {"kind": "log_shift", "a": 1.0}}
    lo, hi = d.interval("m1emp", 36.0)
    assert (lo, hi) == (30.25, 42.25)
    with pytest.raises(PrivacyParameterError, match="no ψ"):
        make_gedp_definition({"m1emp": "sqrt"}, {"m1emp": 0.5, "wage": 0.1})
    with pytest.raises(SpecError, match="not measured"):
        make_gedp_definition({"m1emp": "sqrt", "other": "sqrt"}, {"m1emp": 0.5})
    with pytest.raises(PrivacyParameterError, match="no distance"):
        make_gedp_definition("sqrt", {"m1emp": 0.5}, ["wage"])


# --------------------------------------------------------------------------------------
# Semantics
# --------------------------------------------------------------------------------------


def test_power_bound() -> None:
    for x in (0.01, 0.05, 0.3):
        assert power_bound(x, 0.0) == pytest.approx(x)
        assert power_bound(x, 1.0) == pytest.approx(norm.cdf(norm.ppf(x) + 1.0))
    assert power_bound(0.05, 2.31) == pytest.approx(0.7470, abs=1e-4)
    with pytest.raises(PrivacyParameterError):
        power_bound(0.0, 1.0)


def test_person_interval_section_5_4_2() -> None:
    s = SqrtShift()
    # X is the only worker: the establishment interval itself
    lo, hi = person_interval(s, 100.0, 20_000.0, 20_000.0)
    assert abs(lo - 1_715.7) <= 0.05 and abs(hi - 58_284.3) <= 0.05
    # establishment total $1,000,000: X's wage can move down 190,000 or up 210,000
    lo, hi = person_interval(s, 100.0, 1_000_000.0, 20_000.0)
    assert lo == pytest.approx(20_000 - 190_000) and hi == pytest.approx(20_000 + 210_000)
    # wider intervals with group privacy k·γ ↔ k·μ
    lo2, hi2 = person_interval(s, 100.0, 1_000_000.0, 20_000.0, m=2)
    assert lo2 < lo and hi2 > hi


def test_semantics_dict() -> None:
    d = make_gedp_definition("sqrt", ALL_DIST)
    sem = gedp_semantics(d, 2.31)
    rows = sem["intervals"]["m1emp"]
    assert [r["x"] for r in rows] == list(SEMANTICS_SIZES)
    by_x = {r["x"]: (r["low"], r["high"]) for r in rows}
    assert abs(by_x[36_000][0] - 35_810.5) <= 0.05 and abs(by_x[36_000][1] - 36_190.0) <= 0.05
    firms = sem["firms"]["examples"]
    # docs/errata.md: ℓ establishments → ℓ·μ (not (ℓ−1)·μ)
    assert [f["mu"] for f in firms] == pytest.approx([ell * 2.31 for ell in (1, 2, 5, 10)])
    assert "ℓ·μ" in sem["firms"]["statement"]
    tests = sem["hypothesis_test"]["examples"]
    assert tests[1]["max_power"] == pytest.approx(power_bound(0.05, 2.31))
    p = sem["persons"]["examples"]["m1emp"]
    assert all(r["down"] >= 0 and r["up"] > 0 for r in p)
    assert "Φ(Φ⁻¹(x) + μ)" in sem["hypothesis_test"]["statement"]


def test_explain_lines_section_8_1() -> None:
    rep = build(
        accounting_plan(
            "sqrt", EMP_DIST, section_8_1_measurements(), zeta=0.01, bounds_from="identity"
        )
    ).report()
    text = "\n".join(explain_gedp_lines(rep))
    assert "μ_total = 2.28" in text
    assert "ψ(x) = √x" in text and "m1emp = 0.5" in text
    assert "36,000 → [35,810.5, 36,190.0]" in text
    assert "power ≤ Φ(Φ⁻¹(x) + μ)" in text
    assert "Firms" in text and "Persons" in text


def test_explain_lines_table_7() -> None:
    rep = build(
        accounting_plan("sqrt", ALL_DIST, table_7_measurements(), zeta=0.01, bounds_from="identity")
    ).report()
    lines = explain_gedp_lines(rep)
    assert any("μ_total = 2.31" in line for line in lines)
    assert any(line.strip().startswith("wage:") for line in lines)


def test_explain_lines_with_combined_and_dp() -> None:
    c = combine((SqrtShift(), 0.5), (DPNeighbor(), 1.0))
    rep = build(accounting_plan(c, None, [("q", "psi", {"m1emp": 1.0})])).report()
    lines = explain_gedp_lines(rep)
    assert any("Thm 5.10" in line for line in lines)
    d = make_gedp_definition(c, None, ["m1emp"])
    assert explain_gedp_lines(rep, d) == lines
