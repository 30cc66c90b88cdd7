"""Neighbor functions and uncertainty intervals.

See Webb et al. §5, docs/design.md#gaussian-establishment-dp.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eree.errors import PrivacyParameterError, SpecError
from eree.privacy.neighbors import (
    CombinedNeighbor,
    DPNeighbor,
    LogShift,
    NeighborFunction,
    SqrtShift,
    check_neighbor_conditions,
    combine,
    heterogeneous,
    neighbor_from_callable,
    neighbor_from_spec,
)

PRINTED = 0.05 + 1e-9  # a value printed to one decimal is within half a unit of it


def printed_equal(value: float, printed: float, half_unit: float = PRINTED) -> bool:
    return abs(value - printed) <= half_unit


# --------------------------------------------------------------------------------------
# Table 2 and §5.4.2, to the paper's printed precision
# --------------------------------------------------------------------------------------

TABLE2_SQRT = [  # ψ = √x, γ = 0.5
    (3, 1.5, 5.0),
    (36, 30.2, 42.2),
    (360, 341.3, 379.2),
    (36_000, 35_810.5, 36_190.0),
]
TABLE2_LOG = [  # ψ = log x, γ = 0.1 (the paper prints 39.786.2 for 39,786.2)
    (3, 2.7, 3.3),
    (36, 32.6, 39.8),
    (360, 325.7, 397.9),
    (36_000, 32_574.1, 39_786.2),
]


@pytest.mark.parametrize(("x", "low", "high"), TABLE2_SQRT)
def test_table2_sqrt(x: float, low: float, high: float) -> None:
    lo, hi = SqrtShift().uncertainty_interval(x, 0.5)
    assert printed_equal(lo, low) and printed_equal(hi, high), (lo, hi)


@pytest.mark.parametrize(("x", "low", "high"), TABLE2_LOG)
def test_table2_log(x: float, low: float, high: float) -> None:
    lo, hi = LogShift(0.0).uncertainty_interval(x, 0.1)
    assert printed_equal(lo, low) and printed_equal(hi, high), (lo, hi)


def test_table2_vectorised() -> None:
    xs = np.array([r[0] for r in TABLE2_SQRT], dtype=float)
    lo, hi = SqrtShift().uncertainty_interval(xs, 0.5)
    assert np.all(np.abs(lo - [r[1] for r in TABLE2_SQRT]) <= PRINTED)
    assert np.all(np.abs(hi - [r[2] for r in TABLE2_SQRT]) <= PRINTED)


def test_person_examples_section_5_4_2() -> None:
    s = SqrtShift()
    lo, hi = s.uncertainty_interval(20_000, 100)
    assert printed_equal(lo, 1_715.7) and printed_equal(hi, 58_284.3)
    lo, hi = s.uncertainty_interval(1_000_000, 100)
    assert lo == pytest.approx(810_000, abs=1e-6) and hi == pytest.approx(1_210_000, abs=1e-6)
    # "any decrease in wages by $190,000 or increase by up to $210,000"
    assert 1_000_000 - lo == pytest.approx(190_000) and hi - 1_000_000 == pytest.approx(210_000)


def test_interval_lower_end_clamps_at_zero() -> None:
    lo, hi = SqrtShift().uncertainty_interval(0.1, 0.5)
    assert lo == 0.0 and hi == pytest.approx((math.sqrt(0.1) + 0.5) ** 2)
    lo, hi = DPNeighbor().uncertainty_interval(3.0, 5.0)
    assert lo == 0.0 and hi == 8.0


# --------------------------------------------------------------------------------------
# sqrt ⊕ DP (§5.4.4, Thm 5.10) and heterogeneous (Thm 5.11)
# --------------------------------------------------------------------------------------


def closed_form_sqrt_dp(x: np.ndarray, gamma: float, d: float) -> np.ndarray:
    """§5.4.4: ψ*(x) = x/d for x ≤ d²/(4γ²), else √x/γ − d/(4γ²)."""
    return np.where(
        x <= d * d / (4 * gamma * gamma), x / d, np.sqrt(x) / gamma - d / (4 * gamma**2)
    )


@pytest.mark.parametrize(("gamma", "d"), [(0.5, 1.0), (100.0, 1000.0), (0.1, 3.0), (50.0, 50.0)])
def test_combine_sqrt_dp_matches_closed_form(gamma: float, d: float) -> None:
    c = combine((SqrtShift(), gamma), (DPNeighbor(), d))
    assert c.default_gamma == 1.0
    assert c.breakpoints[1] == pytest.approx(d * d / (4 * gamma * gamma), rel=1e-12)
    x = np.concatenate([[0.0], np.logspace(-4, 13, 400)])
    expected = closed_form_sqrt_dp(x, gamma, d)
    np.testing.assert_allclose(c.psi(x), expected, rtol=1e-12, atol=1e-12)
    # the derivative is the min of the scaled derivatives
    xp = x[1:]
    np.testing.assert_allclose(
        c.derivative(xp), np.minimum(1 / d, 0.5 / (gamma * np.sqrt(xp))), rtol=1e-12
    )
    np.testing.assert_allclose(c.inverse(c.psi(x)), x, rtol=1e-9, atol=1e-9)


def test_combined_sqrt_dp_is_a_neighbor_function() -> None:
    c = combine((SqrtShift(), 0.5), (DPNeighbor(), 1.0))
    check_neighbor_conditions(c.psi, name="ψ*")
    h = heterogeneous((SqrtShift(), 0.5), (DPNeighbor(), 1.0))
    check_neighbor_conditions(h.psi, name="ψ*")


COMBOS = [
    ((SqrtShift(), 0.5), (DPNeighbor(), 1.0)),
    ((SqrtShift(), 50.0), (LogShift(1.0), 0.1)),
    ((LogShift(1.0), 0.2), (DPNeighbor(), 10.0)),
    ((SqrtShift(2.0), 0.5), (SqrtShift(), 0.3)),
]


@settings(max_examples=60, deadline=None)
@given(x=st.floats(min_value=0.0, max_value=1e9), which=st.integers(0, len(COMBOS) - 1))
def test_thm_5_10_and_5_11_interval_containment(x: float, which: int) -> None:
    parts = COMBOS[which]
    star = combine(*parts)
    lo_s, hi_s = star.uncertainty_interval(x, 1.0)
    het = heterogeneous(*parts)
    lo_h, hi_h = het.uncertainty_interval(x, 1.0)
    tol = 1e-9 * max(1.0, x)
    for f, g in parts:
        lo, hi = f.uncertainty_interval(x, g)
        # Thm 5.10: each part's interval ⊆ the combined interval
        assert lo_s <= lo + tol and hi <= hi_s + tol
        # Thm 5.11: the heterogeneous interval ⊆ each part's interval
        assert lo <= lo_h + tol and hi_h <= hi + tol


def test_combine_more_than_two_parts_and_spec_roundtrip() -> None:
    c = combine((SqrtShift(), 0.5), (DPNeighbor(), 1.0), (LogShift(1.0), 0.05))
    x = np.logspace(-3, 9, 200)
    for f, g in c.parts:
        lo, hi = f.uncertainty_interval(x, g)
        clo, chi = c.uncertainty_interval(x, 1.0)
        assert np.all(clo <= lo + 1e-9 * x) and np.all(hi <= chi + 1e-9 * x)
    again = neighbor_from_spec(c.to_spec())
    assert again == c
    np.testing.assert_allclose(again.psi(x), c.psi(x))


def test_combined_sensitivity() -> None:
    # heterogeneous with dp grows linearly: an establishment's value moves by at most d
    h = heterogeneous((SqrtShift(), 0.5), (DPNeighbor(), 7.0))
    assert h.sensitivity(1.0) == pytest.approx(7.0)
    assert math.isinf(combine((SqrtShift(), 0.5), (DPNeighbor(), 7.0)).sensitivity(1.0))
    assert DPNeighbor().sensitivity(3.0) == 3.0
    assert math.isinf(SqrtShift().sensitivity(0.5)) and math.isinf(LogShift(1.0).sensitivity(0.1))


def test_combined_rejects_bad_parts() -> None:
    with pytest.raises(PrivacyParameterError):
        CombinedNeighbor(((SqrtShift(), 0.5),))
    with pytest.raises(PrivacyParameterError):
        combine((SqrtShift(), 0.0), (DPNeighbor(), 1.0))
    with pytest.raises(PrivacyParameterError, match="not defined at 0"):
        heterogeneous((LogShift(0.0), 0.1), (DPNeighbor(), 1.0))
    with pytest.raises(PrivacyParameterError, match="distance"):
        combine(SqrtShift(), DPNeighbor(2.0))


# --------------------------------------------------------------------------------------
# Built-ins: inverses, derivatives, Thm 5.3
# --------------------------------------------------------------------------------------

BUILTINS: list[NeighborFunction] = [
    SqrtShift(),
    SqrtShift(1.0),
    LogShift(1.0),
    LogShift(0.5),
    DPNeighbor(),
    combine((SqrtShift(), 0.5), (DPNeighbor(), 1.0)),
    heterogeneous((SqrtShift(), 0.5), (LogShift(1.0), 0.1)),
]


@pytest.mark.parametrize("f", BUILTINS, ids=lambda f: f.describe())
def test_inverse_and_derivative(f: NeighborFunction) -> None:
    x = np.concatenate([[0.0], np.logspace(-6, 12, 300)])
    np.testing.assert_allclose(f.inverse(f.psi(x)), x, rtol=1e-8, atol=1e-9)
    assert f.inverse(f.psi0 - 1.0) == 0.0  # clamped below ψ(0)
    xm = np.logspace(-3, 9, 50)
    h = xm * 1e-6
    numeric = (f.psi(xm + h) - f.psi(xm - h)) / (2 * h)
    np.testing.assert_allclose(f.derivative(xm), numeric, rtol=1e-5)
    check_neighbor_conditions(f.psi, name=f.describe())
    assert isinstance(f.psi(3.0), float)


@settings(max_examples=100, deadline=None)
@given(
    x=st.floats(min_value=0.01, max_value=1e8),
    y=st.floats(min_value=0.01, max_value=1e8),
    t=st.floats(min_value=0.01, max_value=10.0),
    which=st.integers(0, len(BUILTINS) - 1),
)
def test_theorem_5_3(x: float, y: float, t: float, which: int) -> None:
    f = BUILTINS[which]
    x, y = min(x, y), max(x, y)
    lx, hx = f.uncertainty_interval(x, t)
    ly, hy = f.uncertainty_interval(y, t)
    tol = 1e-7 * max(1.0, y)
    # (3) absolute length grows with the value; (4) relative length shrinks
    assert (hy - ly) >= (hx - lx) - tol
    assert (hy - ly) / y <= (hx - lx) / x + 1e-7 * max(1.0, (hx - lx) / x)
    # symmetry of Def 5.2: |ψ(x) − ψ(y)| ≤ t ⟺ y ∈ I(x) ⟺ x ∈ I(y)
    close = abs(f.psi(x) - f.psi(y)) <= t
    if abs(abs(f.psi(x) - f.psi(y)) - t) > 1e-9 * max(1.0, abs(f.psi(y))):
        assert close == (lx <= y <= hx) == (ly <= x <= hy)


# --------------------------------------------------------------------------------------
# User-defined ψ: the four conditions
# --------------------------------------------------------------------------------------


def test_user_defined_valid() -> None:
    f = neighbor_from_callable(lambda x: np.cbrt(x + 1.0), name="cbrt(x+1)")
    x = np.logspace(-3, 9, 40)
    np.testing.assert_allclose(f.inverse(f.psi(x)), x, rtol=1e-9)
    np.testing.assert_allclose(f.derivative(x), (x + 1.0) ** (-2 / 3) / 3, rtol=1e-5)
    lo, hi = f.uncertainty_interval(100.0, 0.2)
    assert lo == pytest.approx((101 ** (1 / 3) - 0.2) ** 3 - 1) and hi > 100
    assert f.kind == "custom" and f.asymptotic_slope == 0.0


@pytest.mark.parametrize(
    ("func", "condition"),
    [
        (lambda x: -np.sqrt(x), r"\(1\) strictly increasing"),
        (lambda x: np.minimum(x, 5.0), r"\(1\) strictly increasing"),
        (lambda x: np.where(x > 0, np.sqrt(x), -1.0), r"\(2\) continuous"),
        (lambda x: np.log(x), r"\(2\) continuous"),
        (lambda x: x * x, r"\(3\) concave"),
        (lambda x: np.where(x < 10, x, 10 + 2 * (x - 10)), r"\(3\) concave"),
        (lambda x: 1.0 - 1.0 / (x + 1.0), r"\(4\) x ↦ ψ\(eˣ\) convex"),
        (np.arctan, r"\(4\) x ↦ ψ\(eˣ\) convex"),
    ],
)
def test_user_defined_violations_name_the_condition(func: object, condition: str) -> None:
    with pytest.raises(PrivacyParameterError, match=condition):
        neighbor_from_callable(func)  # type: ignore[arg-type]


def test_user_defined_slope_at_infinity() -> None:
    f = neighbor_from_callable(lambda x: x / 2 + np.sqrt(x), slope_at_infinity=0.5)
    assert f.sensitivity(1.0) == pytest.approx(2.0)
    assert math.isinf(neighbor_from_callable(lambda x: x / 2 + np.sqrt(x)).sensitivity(1.0))
    with pytest.raises(PrivacyParameterError, match="slope_at_infinity"):
        neighbor_from_callable(np.sqrt, slope_at_infinity=0.1)


def test_user_defined_errors_are_typed() -> None:
    def boom(x: np.ndarray) -> np.ndarray:
        raise RuntimeError("user bug")

    with pytest.raises(PrivacyParameterError, match="could not be evaluated"):
        neighbor_from_callable(boom)


# --------------------------------------------------------------------------------------
# Spec forms
# --------------------------------------------------------------------------------------


def test_neighbor_from_spec_forms() -> None:
    assert neighbor_from_spec("sqrt") == SqrtShift(0.0)
    assert neighbor_from_spec({"kind": "sqrt"}) == SqrtShift(0.0)
    assert neighbor_from_spec({"kind": "sqrt_shift", "a": 1.0}) == SqrtShift(1.0)
    assert neighbor_from_spec({"kind": "log_shift", "a": 1.0}) == LogShift(1.0)
    assert neighbor_from_spec("dp") == DPNeighbor()
    assert neighbor_from_spec({"kind": "dp", "d": 2}).default_gamma == 2.0
    c = neighbor_from_spec(
        {"kind": "combine", "parts": [{"kind": "sqrt", "gamma": 0.5}, {"kind": "dp", "d": 1.0}]}
    )
    assert c == combine((SqrtShift(), 0.5), (DPNeighbor(), 1.0))
    h = neighbor_from_spec(
        {
            "kind": "heterogeneous",
            "parts": [{"kind": "sqrt", "gamma": 0.5}, {"kind": "log_shift", "a": 1, "gamma": 0.1}],
        }
    )
    assert isinstance(h, CombinedNeighbor) and h.kind == "heterogeneous"
    for f in (SqrtShift(), SqrtShift(2.0), LogShift(1.0), DPNeighbor(), DPNeighbor(3.0), c, h):
        assert neighbor_from_spec(f.to_spec()) == f
    assert neighbor_from_spec(c) is c


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        ("log", SpecError, "log_shift"),
        ("sqr", SpecError, "did you mean 'sqrt'"),
        ({"kind": "log_shift"}, SpecError, "a > 0"),
        ({"kind": "log_shift", "a": 0.0}, PrivacyParameterError, "a > 0"),
        ({"kind": "log_shift", "a": -1.0}, PrivacyParameterError, "a > 0"),
        ({"kind": "sqrt_shift", "b": 1.0}, SpecError, "unknown key 'b'"),
        ({"kind": "sqrt_shift", "a": "1"}, SpecError, "must be a number"),
        ({"kind": "dp", "d": 0}, PrivacyParameterError, "d > 0"),
        ({"kind": "combine", "parts": [{"kind": "sqrt", "gamma": 0.5}]}, SpecError, "two"),
        ({"kind": "combine", "parts": [{"kind": "sqrt"}, "dp"]}, SpecError, "gamma"),
        (3, SpecError, "name or a table"),
        ("log_shift", SpecError, "needs parameters"),
    ],
)
def test_neighbor_from_spec_errors(value: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        neighbor_from_spec(value)


# ----------------------------------------------------------------- the charged distance


def test_exact_built_ins_charge_nothing():
    from eree.privacy.neighbors import DPNeighbor, LogShift, SqrtShift

    for f in (SqrtShift(), SqrtShift(2.0), LogShift(1.0), DPNeighbor()):
        assert f.psi_excess == 0.0


def test_a_combined_psi_charges_its_float_definition():
    """ψ̃ (float breakpoints and offsets) is within psi_excess of ψ*; a perturbed piece is
    seen, and the ψ-mechanism draws its noise for γ + 2·psi_excess."""
    import dataclasses
    import math

    from eree.mechanisms.gedp import PsiMechanism
    from eree.privacy.neighbors import DPNeighbor, LogShift, SqrtShift, combine

    c = combine((LogShift(1.0), 0.3), (SqrtShift(), 1.0))
    eta = c.psi_excess
    assert 0 < eta < 1e-12  # the offsets' float rounding: a few ulp
    m = PsiMechanism(query="q", attribute="a", neighbor=c, gamma=1.0, mu=0.5)
    assert m.distance >= 1.0 + 2 * eta and m.distance > 1.0  # rounded up past γ
    assert m.sigma == m.distance / 0.5 and math.isclose(m.sigma, 2.0, rel_tol=1e-11)
    # power: an offset off by 1e-6, a breakpoint off by 0.1%: both show in the bound
    off = list(c._offsets)
    off[-1] += 1e-6
    bad = dataclasses.replace(c)
    object.__setattr__(bad, "_offsets", tuple(off))
    assert bad.psi_excess >= 1e-6
    d = combine((SqrtShift(), 0.5), (DPNeighbor(), 100.0))
    brk = list(d.breakpoints)
    brk[1] *= 1.001
    moved = dataclasses.replace(d)
    object.__setattr__(moved, "_breaks", tuple(brk))
    assert moved.psi_excess > 1e6 * max(d.psi_excess, 1e-30)
