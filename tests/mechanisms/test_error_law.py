"""``ExpectedError.within(t)`` — P(|published − true| ≤ t) — against the mechanisms' draws.

Each mechanism publishes 40,000 cells of one true value through its own ``__call__`` (the
path a release takes, seeded source) and the table's clamp into the interval
(``published_estimate``); the share of cells within t of the truth is compared with
``within(t)`` at three t — also near 0, where the clamp at 0 binds. Where the law is
exact (integer counts on the grid 1) the two agree within 5 binomial standard errors;
where the grid's rounding is counted against the target (sums, ψ space) ``within`` is a
lower bound, and the grid is too fine there to move the share by more than the tolerance
either way. The power check: the same comparison with the noise scale off by 30% fails.

The closed form of Smooth Gamma's |Z| law is checked against numerical integration of
its density (√2/π)/(1+z⁴) (Haney et al. Algorithm 2).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from eree.mechanisms.base import Cells, Mechanism
from eree.mechanisms.baselines import EdgeLaplace
from eree.mechanisms.er_ee import LogLaplace, SmoothGamma, SmoothLaplace
from eree.mechanisms.error_law import smooth_gamma_abs_cdf
from eree.mechanisms.gedp import EstabGaussian, PsiMechanism
from eree.mechanisms.noise import make_noise_source
from eree.privacy.neighbors import DPNeighbor, LogShift, SqrtShift

N = 40_000
SE_BOUND = 5.0


def _cases() -> list[tuple[str, Mechanism, dict[str, float], str]]:
    common = {"definition": "eree-weak", "worker_cells": 1}
    return [
        ("smooth_laplace", SmoothLaplace(query="q", alpha=0.1, epsilon=2.0, delta=1e-3,
                                         **common), {"count": 50.0, "x_v": 30.0}, "count"),
        ("smooth_gamma", SmoothGamma(query="q", alpha=0.1, epsilon=2.0, **common),
         {"count": 50.0, "x_v": 50.0}, "count"),
        ("log_laplace", LogLaplace(query="q", alpha=0.1, epsilon=1.0, **common),
         {"count": 40.0}, "count"),
        ("edge_laplace", EdgeLaplace(query="q", epsilon=0.5, definition="edge-dp"),
         {"count": 12.0}, "count"),
        ("estab_gaussian", EstabGaussian(query="q", attribute="wage", neighbor=DPNeighbor(),
                                         gamma=1000.0, mu=1.0), {"value": 5000.3}, "value"),
        ("psi_sqrt", PsiMechanism(query="q", attribute="wage", neighbor=SqrtShift(),
                                  gamma=1.0, mu=0.5), {"value": 400.7}, "value"),
        ("psi_log", PsiMechanism(query="q", attribute="wage", neighbor=LogShift(1.0),
                                 gamma=0.2, mu=1.0), {"value": 900.0}, "value"),
        ("psi_sqrt_small", PsiMechanism(query="q", attribute="wage", neighbor=SqrtShift(),
                                        gamma=2.0, mu=1.0), {"value": 3.0}, "value"),
        ("estab_gaussian_near_0", EstabGaussian(query="q", attribute="wage",
                                                neighbor=DPNeighbor(), gamma=1000.0, mu=1.0),
         {"value": 300.0}, "value"),
    ]  # fmt: skip


CASES = _cases()


def _published(mech: Mechanism, at: dict[str, float], stat: str, seed: int) -> np.ndarray:
    cells = {k: np.full(N, v) for k, v in at.items()}
    m = mech(Cells(cells), make_noise_source(seed=seed))
    return m.published_estimate() - at[stat]  # what a table publishes


def _ts(mech: Mechanism, at: dict[str, float]) -> list[float]:
    """Three t around the error's quartiles (so every comparison has power)."""
    e = mech.expected_error(at)
    assert e is not None and e.std is not None
    return [round(e.std * k) if "count" in at else e.std * k for k in (0.4, 1.0, 2.0)]


@pytest.mark.parametrize(("name", "mech", "at", "stat"), CASES, ids=[c[0] for c in CASES])
def test_within_matches_the_published_errors(name, mech, at, stat):
    err = np.abs(_published(mech, at, stat, seed=11))
    e = mech.expected_error(at)
    assert e is not None and e.within is not None
    for t in _ts(mech, at):
        p = e.within(t)
        share = float(np.mean(err <= t))
        se = math.sqrt(max(p * (1 - p), 1e-4) / N)
        assert abs(share - p) <= SE_BOUND * se, (name, t, share, p)


@pytest.mark.parametrize(("name", "mech", "at", "stat"), CASES, ids=[c[0] for c in CASES])
def test_power_a_scale_off_by_30_percent_fails(name, mech, at, stat):
    """The published errors of a mechanism with 1.3× the noise disagree with ``within``."""
    import dataclasses

    field = "epsilon" if hasattr(mech, "epsilon") else "mu"
    weaker = dataclasses.replace(mech, **{field: getattr(mech, field) / 1.3})
    if name == "log_laplace":  # λ = 2 ln(1+α)/ε: a 30% larger λ
        weaker = dataclasses.replace(mech, epsilon=mech.epsilon / 1.3)
    err = np.abs(_published(weaker, at, stat, seed=12))
    e = mech.expected_error(at)
    assert e is not None and e.within is not None
    worst = 0.0
    for t in _ts(mech, at):
        p = e.within(t)
        se = math.sqrt(max(p * (1 - p), 1e-4) / N)
        worst = max(worst, abs(float(np.mean(err <= t)) - p) / se)
    assert worst > SE_BOUND, (name, worst)


@pytest.mark.parametrize("z", [0.0, 0.1, 0.7, 1.0, 2.5, 10.0, 300.0, 2e4])
def test_smooth_gamma_abs_law_is_the_integral_of_its_density(z):
    density = lambda v: (math.sqrt(2) / math.pi) / (1 + v**4)  # noqa: E731
    want = 2 * integrate.quad(density, 0, z, limit=400)[0] if z < 1e3 else (
        1 - 2 * integrate.quad(density, z, math.inf)[0])  # fmt: skip
    assert math.isclose(smooth_gamma_abs_cdf(z), want, rel_tol=1e-9, abs_tol=1e-12)


def _normal_mass(lo: float, hi: float, centre: float, sd: float) -> float:
    """P(lo ≤ N(centre, sd²) ≤ hi) by the error function (the law's own integral)."""
    c = lambda v: math.erf((v - centre) / (sd * math.sqrt(2)))  # noqa: E731
    return 0.5 * (c(hi) - c(lo))


@pytest.mark.parametrize("t", [1e-3, 0.05, 0.4, 0.9, 1.7, 6.0])
def test_published_within_finds_every_crossing_to_the_last_bit(t):
    """``gaussian_published_within`` locates {ω : |g(ω) − x| ≤ t} exactly, not to the scan's
    spacing: g(ω) = |ω| at x = 1 is the union [1 − t, 1 + t] ∪ [−1 − t, −1 + t] (four
    crossings, two for t ≥ 1), whose normal mass is known in closed form. A crossing left
    anywhere in its scan interval (20 sd / 4000 wide) is off by ~10⁻³."""
    from eree.mechanisms.error_law import gaussian_published_within

    centre, sd, x = 0.5, 1.0, 1.0
    within = gaussian_published_within(np.abs, centre, sd, x, 0.0)
    if t < 1:
        want = _normal_mass(x - t, x + t, centre, sd) + _normal_mass(-x - t, -x + t, centre, sd)
    else:
        want = _normal_mass(-x - t, x + t, centre, sd)
    assert within(t) == pytest.approx(want, rel=1e-12, abs=1e-14)
