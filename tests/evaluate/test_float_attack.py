"""The floating-point attack (``eree.evaluate.float_attack``): it finds the old sampler,
and finds nothing in the current sampling layer.

The old sampler is kept here as a fixture: a verbatim copy of the float path of commit
fa97764 (``src/eree/mechanisms/noise.py``: 64 bits → u = (k+½)/2⁵², inverse CDF in
float64, x + noise; ``samplers.py``: Smooth Gamma by rejection from tan(π(u−½)); and the
mechanisms' ``__call__`` bodies), written independently of the attack module's own model
of it. The attack must give > 1% certain answers on the fixture's values for edge-DP
Laplace, SIGMOD Smooth Laplace and Estab-Gaussian (it can fail), and none — on values
published by real releases — for every registered mechanism of the current layer.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from eree.cli import app
from eree.evaluate import float_attack as fa
from eree.evaluate import float_attack_release as far
from eree.evaluate import legacy_sampler as legacy
from eree.evaluate.privacy_audit import float_attack_table, run_audit, write_outputs
from eree.mechanisms.base import Cells
from eree.mechanisms.estimators import psi_estimates
from eree.mechanisms.gedp import pnc_sensitivity
from eree.mechanisms.noise import SeededNoise
from eree.mechanisms.registry import REGISTRY

CELLS = 20_000  # per neighbouring truth: 40,000 attacked cells per mechanism

# ------------------------------------------------------------------ fa97764, verbatim
_TWO52 = float(2**52)


def _uniform_from_bits(bits: np.ndarray) -> np.ndarray:
    k = (bits >> np.uint64(12)).astype(np.float64)
    return (k + 0.5) / _TWO52


def laplace_from_uniform(u: np.ndarray, scale: Any) -> np.ndarray:
    c = u - 0.5
    return -np.asarray(scale, dtype=np.float64) * np.sign(c) * np.log1p(-2.0 * np.abs(c))


def gaussian_from_uniform(u: np.ndarray, scale: Any) -> np.ndarray:
    from scipy.special import ndtri

    return np.asarray(scale, dtype=np.float64) * ndtri(u)


class OldSeededNoise:
    """fa97764's SeededNoise: a seeded PCG64, uniforms from 64-bit words."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.Generator(np.random.PCG64(seed))

    def uniform(self, size: int) -> np.ndarray:
        bits = self._rng.integers(0, 2**64, size=size, dtype=np.uint64, endpoint=False)
        return _uniform_from_bits(bits)

    def add_laplace(self, values: Any, scale: Any) -> np.ndarray:
        v = np.asarray(values, dtype=np.float64)
        return v + laplace_from_uniform(self.uniform(v.size).reshape(v.shape), scale)

    def add_gaussian(self, values: Any, scale: Any) -> np.ndarray:
        v = np.asarray(values, dtype=np.float64)
        return v + gaussian_from_uniform(self.uniform(v.size).reshape(v.shape), scale)


def smooth_gamma_standard(source: OldSeededNoise, size: int) -> np.ndarray:
    out = np.empty(size, dtype=np.float64)
    filled = 0
    while filled < size:
        need = size - filled
        batch = int(need * ((2.0 + math.sqrt(2.0)) / 2.0) * 1.1) + 16
        u = source.uniform(2 * batch)
        z = np.tan(math.pi * (u[:batch] - 0.5))
        accept_p = 2.0 * (1.0 + z * z) / ((1.0 + math.sqrt(2.0)) * (1.0 + z**4))
        z = z[u[batch:] < accept_p]
        take = min(need, z.size)
        out[filled : filled + take] = z[:take]
        filled += take
    return out


def old_release(mech: Any, c: dict[str, np.ndarray], source: OldSeededNoise) -> np.ndarray:
    """The value fa97764's ``mechanism(cells, source)`` published (its estimate)."""
    name, variant = mech.name, mech.variant
    if name in ("laplace", "truncated_laplace"):
        col = "count_truncated" if name == "truncated_laplace" else "count"
        return source.add_laplace(c[col], mech.scale)
    if name == "log_laplace":
        gamma, lam = mech.gamma, mech.lam
        noisy = np.exp(source.add_laplace(np.log(c["count"] + gamma), lam)) - gamma
        return (noisy + gamma) * (1.0 - lam * lam) - gamma if lam < 1 else noisy.copy()
    if (name, variant) == ("smooth_laplace", "sigmod"):
        return source.add_laplace(c["count"], mech.noise_scale(c["x_v"]))
    if (name, variant) == ("smooth_gamma", "sigmod"):
        z = smooth_gamma_standard(source, c["count"].size)
        return c["count"] + mech.noise_scale(c["x_v"]) * z
    if variant == "workshop":  # n + Lap(1/ε), then the smooth term (fa97764's scale was the
        eps = mech.epsilon_cell  # printed αx_V/(ε/f); today's object says max(αx_V, 1))
        with_eta_prime = source.add_laplace(c["count"], 1.0 / eps)
        if name == "smooth_laplace":
            return source.add_laplace(with_eta_prime, mech.smooth_scale(c["x_v"]))
        z = smooth_gamma_standard(source, with_eta_prime.size)
        return with_eta_prime + mech.smooth_scale(c["x_v"]) * z
    if name == "estab_gaussian":
        return source.add_gaussian(c["value"], mech.neighbor.sensitivity(mech.gamma) / mech.mu)
    if name == "psi":
        omega = source.add_gaussian(mech.neighbor.psi(c["value"]), mech.sigma)
        return psi_estimates(omega, mech.neighbor, mech.sigma).estimate
    if name == "pnc":
        sd = pnc_sensitivity(c["bound"], mech.neighbor, mech.gamma) / mech.mu
        return source.add_gaussian(c["clipped"], sd)
    if name == "adaptive":
        use_pnc = mech.choose(c["bound"], c["identity_sum"], c["identity_variance"])
        sd_pnc = pnc_sensitivity(c["bound"], mech.neighbor, mech.gamma) / mech.mu
        centre = np.where(use_pnc, c["clipped"], mech.neighbor.psi(c["value"]))
        noisy = source.add_gaussian(centre, np.where(use_pnc, sd_pnc, mech.sigma))
        est = psi_estimates(noisy, mech.neighbor, mech.sigma)
        return np.where(use_pnc, noisy, est.estimate)
    raise AssertionError(f"no fa97764 float path for {name} {variant}")


APPLICABLE = [i for i, e in enumerate(REGISTRY) if e.name != "noise_infusion"]


def _id(i: int) -> str:
    e = REGISTRY[i]
    return f"{e.name}-{e.variant}" if e.variant else e.name


@pytest.fixture(scope="module")
def old_sampler() -> dict[int, dict[str, Any]]:
    """Per registry line: the fixture's published values (n under each truth) attacked."""
    out = {}
    for i in APPLICABLE:
        sc = fa.scenario(i, CELLS)
        assert sc is not None
        mech = sc.build()
        model = fa.describe(mech)
        assert model is not None
        src = OldSeededNoise(100 + i)
        a = {k: np.asarray(v) for k, v in sc.cells_a.items()}
        b = {k: np.asarray(v) for k, v in sc.cells_b.items()}
        y = np.concatenate([old_release(mech, a, src), old_release(mech, b, src)])
        truth_b = np.arange(2 * CELLS) >= CELLS
        got = fa.attack(model, y, truth_b, fa._concat(a, a), fa._concat(b, b), "legacy")
        out[i] = {"got": got, "y": y, "sc": sc, "model": model}
    return out


# ------------------------------------------------------------------ the old sampler


@pytest.mark.parametrize("i", APPLICABLE, ids=_id)
def test_old_sampler_certain_answers(old_sampler: dict[int, dict[str, Any]], i: int) -> None:
    got = old_sampler[i]["got"]
    e = REGISTRY[i]
    assert got["wrong"] == 0  # every certain answer names the truth (sound)
    assert got["neither"] == 0  # every published value is found under its truth (complete)
    share = got["certain"] / (2 * CELLS)
    if e.variant == "workshop" and e.name != "log_laplace":  # two terms: over-approximated
        assert not got["exact"] and got["certain"] == 0
        return
    assert got["exact"]
    # the three and every other single-term mechanism: the attack finds the sampler
    assert share > 0.01, f"{_id(i)}: {share:.4f}"
    if (e.name, e.variant) in (("laplace", ""), ("smooth_laplace", "sigmod"),
                               ("estab_gaussian", "")):  # fmt: skip
        assert share > 0.02


def test_attacker_model_is_the_old_float_path(old_sampler: dict[int, dict[str, Any]]) -> None:
    """The module's legacy model, drawing from the same words, publishes the fixture's floats."""
    for i in APPLICABLE:
        sc, model = old_sampler[i]["sc"], old_sampler[i]["model"]
        a = {k: np.asarray(v)[:500] for k, v in sc.cells_a.items()}
        mine = fa.legacy_release(model, a, SeededNoise(7))
        theirs = old_release(sc.build(), a, OldSeededNoise(7))
        np.testing.assert_array_equal(mine, theirs, err_msg=_id(i))


@pytest.mark.parametrize("name", ["laplace", "estab_gaussian", "psi", "smooth_gamma"])
def test_unreachable_verdicts_hold_by_brute_force(
    old_sampler: dict[int, dict[str, Any]], name: str
) -> None:
    """Where the search says 'not reachable under the other truth', no k within ±2¹⁷ of the
    bisection point reaches the value either (the monotone search is not fooled)."""
    i = next(j for j in APPLICABLE if REGISTRY[j].name == name and REGISTRY[j].variant
             in ("", "sigmod"))  # fmt: skip
    sc, model, y = old_sampler[i]["sc"], old_sampler[i]["model"], old_sampler[i]["y"][:CELLS]
    b = {k: np.asarray(v) for k, v in sc.cells_b.items()}
    reach_b, _ = fa.legacy_reachable(model, b, y)
    (term,) = model.computation(b, "legacy").terms
    centre = model.computation(b, "legacy").centre
    checked = 0
    for c in np.flatnonzero(~reach_b)[:6]:
        cells = {k: np.full(1, v[c]) for k, v in b.items()}

        def pub(k: np.ndarray, c: int = c, cells: dict = cells) -> np.ndarray:
            z = centre[c] + legacy.legacy_noise(term.law, legacy.legacy_uniform(k), term.scale[c])
            return model.publish(z, {kk: np.broadcast_to(v, k.shape) for kk, v in cells.items()})

        k0 = fa._first_at_least(pub, np.full(1, y[c]), np.zeros(1), np.full(1, _TWO52), 1.0)[0]
        ks = k0 + np.arange(-(2**17), 2**17, dtype=np.float64)
        ks = ks[(ks >= 0) & (ks < _TWO52)]
        assert not np.any(pub(ks) == y[c])
        checked += 1
    assert checked == 6


# ------------------------------------------------------------------ the current layer


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> list[fa.AttackResult]:
    """Every registered mechanism through a real release: 40,000 published cells each."""
    root = tmp_path_factory.mktemp("float_attack")
    return far.run_release_attack(Path(root), n=CELLS, seed=4, legacy=False)


def test_current_layer_release_has_no_certain_answer(released: list[fa.AttackResult]) -> None:
    by = {(r.mechanism, r.variant): r for r in released}
    assert set(by) == {(e.name, e.variant) for e in REGISTRY}
    for (name, variant), r in by.items():
        if name == "noise_infusion":  # no formal guarantee: not a floating-point question
            assert not r.applicable
            continue
        assert r.applicable and r.exact and r.n == 2 * CELLS
        assert r.certain == 0, (name, variant)
        assert r.neither == 0  # every published value is a grid value of the mechanism
        # the old-style float search, replayed through the mechanism, reproduces every value
        assert r.witness_of == 2 * r.n and r.witnessed == r.witness_of, (name, variant)


def test_the_current_check_is_a_real_check(monkeypatch: pytest.MonkeyPatch) -> None:
    i = next(j for j, e in enumerate(REGISTRY) if e.name == "laplace")
    sc = fa.scenario(i, 4)
    assert sc is not None
    model = fa.describe(sc.build())
    assert model is not None
    a = {k: np.asarray(v) for k, v in sc.cells_a.items()}
    b = {k: np.asarray(v) for k, v in sc.cells_b.items()}
    y = np.array([10.0, 10.5, 11.0, 10.0 + 2.0**-30])  # off the grid: reachable under neither
    ra, _ = fa.current_reachable(model, a, y)
    rb, _ = fa.current_reachable(model, b, y)
    assert ra.tolist() == rb.tolist() == [True, False, True, False]
    # a law without full support (noise ≥ 0, as if one-sided) would separate the truths
    monkeypatch.setitem(fa._SUPPORT, "laplace", (0.0, math.inf))
    ra, _ = fa.current_reachable(model, a, y)
    rb, _ = fa.current_reachable(model, b, y)
    assert ra.tolist() == [True, False, True, False]
    assert rb.tolist() == [False, False, True, False]  # 10 is certain: the truth was 10


def test_the_witness_search_can_fail() -> None:
    i = next(j for j, e in enumerate(REGISTRY) if e.name == "estab_gaussian")
    sc = fa.scenario(i, 200)
    assert sc is not None
    mech = sc.build()
    model = fa.describe(mech)
    assert model is not None
    a = {k: np.asarray(v) for k, v in sc.cells_a.items()}
    y = np.asarray(mech(Cells(dict(a)), SeededNoise(3)).estimate)
    ok, omega = fa.current_reachable(model, a, y)
    assert ok.all()
    assert fa.current_witnesses(model, a, y, omega).all()
    assert not fa.current_witnesses(model, a, y, omega + 3.0).any()  # aimed elsewhere


# ------------------------------------------------------------------ the audit


def test_privacy_audit_reports_the_attack(tmp_path: Path) -> None:
    res = run_audit(quick=True, n=2_000, scale_factors=(1.0,), seed=1, workers=1,
                    mechanisms=["laplace", "estab_gaussian", "noise_infusion"])  # fmt: skip
    t = float_attack_table(res)
    assert set(t["mechanism"]) == {"laplace", "estab_gaussian", "noise_infusion"}
    applicable = t.filter(pl.col("certain").is_not_null())
    assert applicable.height == 2
    assert (applicable["certain"] == 0).all()
    assert (applicable["n"] == 2 * fa.CELLS_QUICK).all()
    assert (applicable["witnessed"] == applicable["witness_of"]).all()
    paths = write_outputs(res, tmp_path / "out")
    assert pl.read_csv(paths["float_attack"]).height == 3
    assert "Floating-point attack" in paths["report"].read_text()
    args = ["audit", "privacy", "--quick", "--n", "2000", "--mechanism", "laplace",
            "--workers", "1", "--out", str(tmp_path / "cli")]  # fmt: skip
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "certain answers 0 of 10,000" in r.output
    assert (tmp_path / "cli" / "float_attack.csv").exists()
