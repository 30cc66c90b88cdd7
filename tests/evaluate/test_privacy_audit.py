"""The empirical privacy audit (``eree audit privacy``) over every registered mechanism.

Expected verdicts come from the papers' formulas, written here: the true worst-case
privacy loss of each audited pair at noise scale f (f = 1: the mechanism as built; f < 1:
the weakened copy the power check runs):

* edge-DP Laplace: shift 1 at scale f/ε → ε/f. Truncated Laplace: shift θ−1 at scale
  fθ/ε → (θ−1)ε/(θf). ψ-mechanism, Estab-Gaussian, pnc: Gaussian shift γ (Δ) at sd
  fγ/μ (fΔ/μ) → μ/f (Webb et al. Def 6.2, 6.4, 6.8).
* Log-Laplace (Haney et al. Alg 1; workshop Alg 1 with Δ = 1): ln(n+1/α) moves by at most
  ln(1+α) between α-neighbours (n → max((1+α)n, n+1)), noise Lap(2f ln(1+α)/ε) →
  ε/(2f): the claim is met with a factor 2 to spare, so a copy at f = 0.5 is *exactly*
  at its claim and must not be flagged.
* SIGMOD Smooth Laplace, pair |E| 0 → 1: S = max(αx_v, 1) = 1 on both sides, a Laplace
  shift 1 at scale 2f/ε → ε/(2f).
* SIGMOD Smooth Gamma: in units of the noise scale 5fS/ε₁ the count moves by at most
  u = ε₁/(5f) and the scale by at most 1+α, so the loss is at most
  L(u) + 3 ln(1+α), L(u) = sup_z ln((1+(z+u)⁴)/(1+z⁴)) (the shift of the 1/(1+z⁴)
  density) and 3 ln(1+α) (d/d ln s of ln(f(z/s)/s) lies in (−1, 3)); at |E| 0 → 1 it is
  exactly L(u).
* The workshop's smooth variants run with eree's correction S = max(αx_V, 1) (errata.md):
  S = 1 on both sides of the quick pairs, so the output is a shift of 1 under the sum of
  two independent noises, whose loss is at most each one's alone. Smooth Laplace:
  Lap(2f/ε) + Lap(f/ε), the tail ratio tends to e^{ε/(2f)}: as SIGMOD Smooth Laplace.
  Smooth Gamma: (16f/ε)·Z + Lap(f/ε) → at most min(ε/f, L(ε/(16f))), within the claim
  even at f = 0.2 (L(0.625) ≈ 0.69·ε).
* As printed (S = αx_V, kept only to reproduce the workshop's Figure 1), workshop Smooth
  Gamma at x_V 0 → 1 (a Blowfish edge: one worker added): at x_V = 0 the output is
  n + Lap(1/ε), at x_V = 1 it also carries (16α/ε)·Z whose density decays like z⁻⁴, so
  P[M(D′) > t] / P[M(D) > t] → ∞: no ε holds. The audit must flag it.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from eree.cli import app
from eree.evaluate.privacy_audit import (
    CSV_COLUMNS,
    NO_CLAIM,
    VIOLATION,
    AuditResult,
    audit_cases,
    clopper_pearson,
    event_lower_bound,
    run_audit,
    run_case,
    weakened,
    write_outputs,
)
from eree.mechanisms.baselines import EdgeLaplace
from eree.mechanisms.er_ee import LogLaplace, SmoothGamma
from eree.mechanisms.gedp import PsiMechanism
from eree.mechanisms.registry import REGISTRY
from eree.privacy.neighbors import SqrtShift

EPS, ALPHA, THETA, MU = 2.0, 0.1, 50.0, 1.0
EPS1 = EPS - 5 * math.log(1 + ALPHA)  # SIGMOD Smooth Gamma's ε₁


def shift_loss(u: float) -> float:
    """L(u) = sup_z ln((1+(z+u)⁴)/(1+z⁴)), on a fine grid (the sup is at |z| < 2u + 2)."""
    z = np.linspace(-4 * u - 4, 4 * u + 4, 400_001)
    return float(np.max(np.log1p((z + u) ** 4) - np.log1p(z**4)))


def true_loss_bounds(f: float) -> dict[tuple[str, str], tuple[float, float]]:
    """(a lower bound, an upper bound) of each mechanism's worst loss over its quick pairs,
    relative to its claim (loss / claim), at noise scale f."""
    sg_lo = shift_loss(EPS1 / (5 * f)) / EPS
    sg_hi = (shift_loss(EPS1 / (5 * f)) + 3 * math.log(1 + ALPHA)) / EPS
    return {
        ("laplace", ""): (1 / f, 1 / f),
        ("truncated_laplace", ""): ((THETA - 1) / THETA / f, (THETA - 1) / THETA / f),
        ("psi", ""): (1 / f, 1 / f),
        ("estab_gaussian", ""): (1 / f, 1 / f),
        ("pnc", ""): (1 / f, 1 / f),
        ("log_laplace", "sigmod"): (1 / (2 * f), 1 / (2 * f)),
        ("log_laplace", "workshop"): (1 / (2 * f), 1 / (2 * f)),
        ("smooth_gamma", "sigmod"): (sg_lo, sg_hi),
        ("smooth_laplace", "sigmod"): (1 / (2 * f), math.inf),  # (ε, δ): tails beyond ε
        ("smooth_laplace", "workshop"): (1 / (2 * f), math.inf),  # as SIGMOD (+ η′)
        ("smooth_gamma", "workshop"): (0.0, min(1 / f, shift_loss(EPS / (16 * f)) / EPS)),
    }


@pytest.fixture(scope="module")
def quick() -> AuditResult:
    return run_audit(quick=True, n=40_000, scale_factors=(1.0, 0.5, 0.2), seed=3, workers=1)


def _flagged(result: AuditResult, f: float) -> set[tuple[str, str]]:
    v = result.violations(f)
    return set(zip(v["mechanism"].to_list(), v["variant"].to_list(), strict=True))


def test_every_registered_mechanism_and_definition_is_audited(quick: AuditResult) -> None:
    t = quick.table.filter(pl.col("scale_factor") == 1.0)
    got = set(zip(t["mechanism"], t["variant"], t["definition"], strict=True))
    want = {(e.name, e.variant, d) for e in REGISTRY for d in e.definitions}
    assert got == want
    assert t.columns == CSV_COLUMNS
    assert (t["n"] == 40_000).all()


def test_true_scale_no_violation(quick: AuditResult) -> None:
    # every registry line a release accepts keeps its claim (workshop: with the correction)
    assert quick.violations(1.0).height == 0
    # the tight mechanisms' bounds reach most of the claim: the audit has power at f = 1
    t = quick.table.filter(pl.col("scale_factor") == 1.0)
    for name, (lo, _) in true_loss_bounds(1.0).items():
        if lo == 1.0:  # loss exactly at the claim
            best = t.filter(pl.col("mechanism") == name[0], pl.col("variant") == name[1])
            assert best["lower_bound"].max() / best["claimed"][0] > 0.75, name


def test_noise_infusion_has_no_claim_and_no_finite_epsilon(quick: AuditResult) -> None:
    t = quick.table.filter(pl.col("mechanism") == "noise_infusion")
    assert set(t["verdict"]) == {NO_CLAIM}
    assert set(t["scale_factor"]) == {1.0}
    # |E| 0 → 1: a zero stays 0, a count of 1 becomes 1 or 2: the event "o > 0" has p̂ = 1
    # and q̂ = 0 on the m = N/2 evaluation draws; Clopper–Pearson at error b per bound gives
    # p_lo = b^(1/m), q_hi = 1 − b^(1/m): the largest bound N draws can show, ≈ ln(m/ln(1/b))
    zero = t.filter(pl.col("pair").str.contains("=0 ->")).row(0, named=True)
    m, b = zero["n"] // 2, 1 - zero["pair_confidence"]
    assert (zero["p_hat"], zero["q_hat"]) == (1.0, 0.0)
    assert zero["lower_bound"] == pytest.approx(math.log(b ** (1 / m) / (1 - b ** (1 / m))))
    assert zero["lower_bound"] > 3 * EPS


@pytest.mark.parametrize("f", [0.5, 0.2])
def test_power_weakened_copies(quick: AuditResult, f: float) -> None:
    flagged = _flagged(quick, f)
    for name, (lo, hi) in true_loss_bounds(f).items():
        if lo >= 1.25:  # the weakened copy's true loss clearly exceeds the claim
            assert name in flagged, f"{name} at scale {f}: not detected"
        if hi <= 1.0:  # still within its claim (conservative mechanism): must not be flagged
            assert name not in flagged, f"{name} at scale {f}: flagged within its claim"
    # at 0.5, the three conservative ER-EE mechanisms are exactly those not detected
    if f == 0.5:
        assert {("log_laplace", "sigmod"), ("log_laplace", "workshop"),
                ("smooth_gamma", "sigmod")}.isdisjoint(flagged)  # fmt: skip
    if f == 0.2:  # every mechanism with a claim but the corrected workshop Smooth Gamma
        claims = {(e.name, e.variant) for e in REGISTRY if e.definitions != ("none",)}
        assert flagged == claims - {("smooth_gamma", "workshop")}


def test_the_printed_workshop_smooth_gamma_is_flagged() -> None:
    """As printed (S = αx_V; evaluate only) it has no finite ε at x_V 0 → 1."""
    import dataclasses

    case = next(
        c for c in audit_cases(quick=True)
        if (c.registry_entry.name, c.registry_entry.variant) == ("smooth_gamma", "workshop")
        and "|E|=0 -> |E'|=1" in c.pair
    )  # fmt: skip
    printed = dataclasses.replace(case, params={**case.params, "as_printed": True})
    row = run_case(printed, 40_000, 1.0, 3, 0.99, 0.95)
    assert row["verdict"] == VIOLATION  # a lower bound above the claim at 99%
    assert run_case(case, 40_000, 1.0, 3, 0.99, 0.95)["verdict"] != VIOLATION


def test_weakened_copy_scales_the_noise_by_f() -> None:
    f = 0.5
    lap = weakened(EdgeLaplace(query="q", epsilon=EPS), f)
    assert lap.scale == pytest.approx(f / EPS)  # Lap(1/ε)
    ll = weakened(LogLaplace(query="q", epsilon=EPS, alpha=ALPHA), f)
    assert ll.lam == pytest.approx(f * 2 * math.log(1 + ALPHA) / EPS)  # Alg 1
    sg = weakened(SmoothGamma(query="q", epsilon=EPS, alpha=ALPHA), f)
    assert 5 / sg.epsilon1 == pytest.approx(f * 5 / EPS1)  # Alg 2: 5S/ε₁
    psi = weakened(PsiMechanism(query="q", attribute="a", neighbor=SqrtShift(), gamma=0.5,
                                mu=MU), f)  # fmt: skip
    assert psi.sigma == pytest.approx(f * 0.5 / MU)  # σ = γ/μ
    # the claim audited stays the original's
    assert EdgeLaplace(query="q", epsilon=EPS).cost().epsilon == EPS


def test_gedp_tradeoff_is_the_gaussian_curve_at_mu_over_f(quick: AuditResult) -> None:
    """Each quick GEDP pair is a Gaussian shift of exactly μ/f standard deviations
    (module docstring): its threshold tests trace y = Φ(Φ⁻¹(1 − x) − μ/f)."""
    from scipy.stats import norm

    curves = quick.meta["tradeoff"]
    assert {c["mechanism"] for c in curves} == {"psi", "pnc", "estab_gaussian", "adaptive"}
    for c in (c for c in curves if c["scale_factor"] >= 0.5):  # μ/f ≤ 2: both errors ≥ 2%
        x, y = np.array(c["type1"]), np.array(c["type2"])
        # in probit units each point is one estimate of the shift: Φ⁻¹(1 − x) − Φ⁻¹(y) = μ/f
        # (points with both errors in [0.02, 0.98]: standard error ≤ 0.03 at 20,000 draws)
        ok = (x > 0.02) & (x < 0.98) & (y > 0.02) & (y < 0.98)
        assert ok.sum() >= 10
        shift = norm.ppf(1 - x[ok]) - norm.ppf(y[ok])
        mu_f = c["claimed"] / c["scale_factor"]
        assert np.max(np.abs(shift - mu_f)) < 0.12, (c["mechanism"], c["scale_factor"])
        if c["scale_factor"] == 0.5:  # below the claimed curve: the violation, drawn
            assert np.all(y[ok] < norm.cdf(norm.ppf(1 - x[ok]) - c["claimed"]))


def test_clopper_pearson_closed_forms() -> None:
    n, level = 1000, 0.99
    lo, hi = clopper_pearson(np.array([0, n]), n, level)
    assert lo[0] == 0.0 and hi[1] == 1.0
    assert hi[0] == pytest.approx(1 - (1 - level) ** (1 / n))  # no success
    assert lo[1] == pytest.approx((1 - level) ** (1 / n))  # all successes


def test_event_bound_is_zero_for_identical_laws_and_below_a_known_loss() -> None:
    rng = np.random.default_rng(8)
    a, b = rng.laplace(0, 1, 200_000), rng.laplace(0, 1, 200_000)
    assert event_lower_bound(a, b, "eps", 0.0, 0.999).value < 0.05
    b = rng.laplace(1, 1, 200_000)  # shift 1, scale 1: ε = 1 exactly
    v = event_lower_bound(a, b, "eps", 0.0, 0.999).value
    assert 0.8 < v <= 1.0
    g, h = rng.normal(0, 1, 200_000), rng.normal(0.5, 1, 200_000)  # μ = 0.5
    m = event_lower_bound(g, h, "mu", 0.0, 0.999).value
    assert 0.35 < m <= 0.5


def test_outputs_and_cli(quick: AuditResult, tmp_path) -> None:
    paths = write_outputs(quick, tmp_path / "out")
    back = pl.read_csv(paths["results"])
    assert back.height == quick.table.height
    html = paths["report"].read_text()
    assert "privacy audit" in html and VIOLATION in html
    assert html.count("data:image/png;base64") == 2  # bounds/claims and the GEDP trade-off
    runner = CliRunner()
    r = runner.invoke(app, ["audit", "privacy", "--help"])
    assert r.exit_code == 0 and "Example: eree audit privacy" in r.output
    out = tmp_path / "cli"
    r = runner.invoke(app, ["audit", "privacy", "--quick", "--n", "4000", "--mechanism",
                            "laplace", "--workers", "1", "--out", str(out)])  # fmt: skip
    assert r.exit_code == 0, r.output
    t = pl.read_csv(out / "privacy_audit.csv")
    assert set(t["mechanism"]) == {"laplace"} and set(t["scale_factor"]) == {1.0, 0.5}
    assert len(audit_cases(quick=True)) < len(audit_cases(quick=False))


@pytest.mark.slow
def test_full_audit_at_a_million_draws() -> None:
    """The issue's table: N = 10⁶ per input, the true scale and 0.5 (minutes, not CI)."""
    res = run_audit(n=1_000_000, scale_factors=(1.0, 0.5), seed=0, workers=2)
    flagged = _flagged(res, 1.0)
    # no registry line a release accepts breaks its claim (the workshop's smooth variants
    # run with eree's correction; as printed they break it, errata.md)
    assert flagged == set()
    flagged = _flagged(res, 0.5)
    for name, (lo, hi) in true_loss_bounds(0.5).items():
        if lo >= 1.25:
            assert name in flagged
        if hi <= 1.0:
            assert name not in flagged
