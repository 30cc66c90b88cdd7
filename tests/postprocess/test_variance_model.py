"""The public variance model and the never-worse guard (eree.postprocess.variance_model,
eree.postprocess.guard)."""

import numpy as np

from eree.mechanisms.base import Cells
from eree.mechanisms.er_ee import SmoothGamma, SmoothLaplace
from eree.mechanisms.noise import SeededNoise
from eree.postprocess.guard import GuardInput, never_worse
from eree.postprocess.variance_model import NoiseShape, SmoothVarianceModel, simulate_noise
from eree.release.publication import smooth_model


def test_the_model_s_scale_is_the_mechanisms_scale():
    # Smooth Laplace: Var = 2(2S/ε)², Smooth Gamma: (5S/ε₁)², S = max(αx_v, 1)
    sl = smooth_model(SmoothLaplace(query="q", alpha=0.1, epsilon=1.0))
    assert np.isclose(sl.v1, 8.0) and np.isclose(sl.v0, 0.0) and np.isclose(sl.s_min, 1.0)
    g = SmoothGamma(query="q", alpha=0.1, epsilon=2.0)
    sg = smooth_model(g)
    assert np.isclose(sg.v1, (5 / g.epsilon1) ** 2) and np.isclose(sg.s_min, 1.0)
    np.testing.assert_allclose(sl.variance_at(np.array([0.0, 50.0])), [8.0, 8.0 * 25])


def test_the_mechanism_s_realised_variance_is_the_model_s():
    # 40,000 Smooth Laplace cells at x_v = 100 (S = 10, Var = 800). The sample variance of
    # Laplace noise has sd σ²·√(5/N) (kurtosis 6): ±4 sd is 4·800·√(5/40000) = 35.8.
    mech = SmoothLaplace(query="q", alpha=0.1, epsilon=1.0)
    model = smooth_model(mech)
    n = np.full(40_000, 500.0)
    m = mech(Cells({"count": n, "x_v": np.full(n.size, 100.0)}), SeededNoise(4))
    s2 = float(np.var(m.estimate - n))
    want = float(model.variance_at(np.array([100.0]))[0])
    tol = 4 * want * np.sqrt(5 / n.size)
    assert abs(s2 - want) < tol
    assert abs(s2 - 1.2 * want) > tol  # power: a 20% wrong scale would be caught


def test_prediction_uses_only_published_values_and_the_frame():
    m = SmoothVarianceModel(alpha=0.1, v0=0.0, v1=8.0, beta=0.3, scale=1.0)
    pub = np.array([0.0, 1000.0, -1000.0, 1000.0])
    k = np.array([1.0, 1.0, 1.0, 1000.0])
    v = m.variance(pub, k)
    # x̂ = k^-0.3 |ñ|: one establishment holding 1000 jobs → S = 100; 1000 establishments →
    # x̂ = 1000^0.7 ≈ 125.9 → S ≈ 12.6
    np.testing.assert_allclose(v, [8.0, 8e4, 8e4, 8.0 * (0.1 * 1000**0.7) ** 2])
    # the share min(c·k^-β, 1) with c = 5, β = 0.5: k = 16 → 5/4 → capped at 1 (x̂ = 1000,
    # S = 100); k = 400 → 5/20 = 1/4 (x̂ = 250, S = 25)
    m2 = SmoothVarianceModel(alpha=0.1, v0=0.0, v1=8.0, beta=0.5, scale=5.0)
    v2 = m2.variance(np.array([1000.0, 1000.0]), np.array([16.0, 400.0]))
    np.testing.assert_allclose(v2, [8.0 * 100.0**2, 8.0 * 25.0**2])


def test_simulated_noise_has_the_asked_variance():
    rng = np.random.default_rng(0)
    t = np.zeros(200_000)
    for kind in ("laplace", "quartic", "gaussian"):
        x = simulate_noise(NoiseShape(kind), t, np.full(t.size, 9.0), rng)
        assert abs(x.var() - 9.0) < 9.0 * (0.1 if kind == "quartic" else 0.03), kind


def _inputs(names, est):
    return [
        GuardInput(n, est[n], np.zeros(est[n].size, bool), NoiseShape("gaussian"),
                   weight=lambda p: np.ones(p.size), true_variance=lambda t, r: np.ones(t.size))
        for n in names
    ]  # fmt: skip


def test_the_guard_keeps_own_values_where_post_processing_would_hurt():
    est = {"a": np.full(100, 10.0), "b": np.full(100, 5.0)}
    var = {n: np.ones(100) for n in est}

    def bad(e, v, names):  # a "post-processing" that adds an error of 3 to every cell of a
        return {n: e[n] + (3.0 if n == "a" else 0.0) for n in names}

    g = never_worse(_inputs(["a", "b"], est), var, bad, nonnegative=False, integer=False)
    assert "a" in g.own and g.predictions["a"].ratio > 1

    def good(e, v, names):  # halves every error around the (pseudo-)truth
        return {n: est[n] + 0.5 * (e[n] - est[n]) for n in names}

    g = never_worse(_inputs(["a", "b"], est), var, good, nonnegative=False, integer=False)
    assert g.consistent == ["a", "b"] and g.own == []
