"""Float-safe noise (issue 23): the noise step of every mechanism, old float path vs new.

Sub-commands (each prints a table and a JSON summary; ``--json PATH`` also writes it):

``noise`` — time per million cells of each mechanism's noise step, **old vs new, side by
side in one process**. The "new" side calls the mechanism object as a release does
(``EdgeLaplace(query="q", epsilon=1.0)(Cells({"count": n}), source)``): the sampling
layer (:func:`eree.mechanisms.sampling.rounded_noisy`) plus the mechanism's own
published std/CI arrays. The "old" side is a faithful copy, in this file, of the float
path of commit fa97764 for the same mechanism (``baseline_*``: 64 random bits →
uniform (k+½)/2⁵² → inverse CDF → value + noise; Smooth Gamma by rejection from a
Cauchy) followed by the same std/CI arrays fa97764's mechanism computed. Both sides draw
their 64-bit words from the same source object (``SecureNoise``, or ``SeededNoise`` with
``--source seeded``). Per repetition the cell arrays are drawn afresh (realistic counts:
integers 0..5000, heavy-tailed); the sides alternate (which side goes first rotates with
the repetition); Cells are built outside the timed region (data
handling, not noise). Reported: the median over the repetitions of the wall time and of
the process CPU time, per million cells, and new/old. The 1-minute load average is
recorded before every repetition.

``slow`` — how often the sampler's slow path (Arb) runs, from ``sampling.STATS``: slow
draws per million draws at each mechanism's default grid and at a deliberately fine grid,
with the per-draw cost of the slow path (``sampling._slow``, which ``sampling._settle``
calls for each candidate its per-cell bound leaves uncertain, and Smooth Gamma's exact
rejection decision ``SmoothGammaLaw._decide`` are wrapped with a timer in this process;
nothing under src/ is changed). At the default grids slow draws are rare, so it also
prints the **expected** rate 𝔼[2·err/r] computed from the per-cell certified error
bounds (``Law.fast``'s, which ``Law.precise`` gives the candidates of the first tier: a
draw goes slow when its fractional position within the grid cell is within err/r of a
rounding boundary; with noise much wider than the grid that position is uniform), which
has no sampling noise.

``profile`` — where the CPU time of the new noise step goes. The mechanism call, split
into ``rounded_noisy`` and the mechanism's own work; then ``rounded_noisy`` re-run step by
step on the arguments the mechanism handed it: a copy in this file of src/'s tiered
layer (each law's ``Law.draw``, NumPy step by NumPy step for Laplace and Gaussian, whole
for Smooth Gamma with its first rejection batch broken down on indented lines; the
scalar-bound test; ``sampling._settle`` on the candidates as one step), with the number
of candidates. Before timing, the copies are checked against src/ on seeded words (same
draws, same published values: "copies match src/"). ``--cprofile`` adds a cProfile of
the mechanism call.

``release`` — ``eree protect`` of ``examples/pa-lodes.toml`` (its [data] pointed at
``--data``), the old code (``PYTHONPATH=--old-src``) and the new (this checkout's src)
alternately in fresh processes; median wall time and new/old.

``check-baseline`` — runs fa97764's own mechanisms (``--old-src``, a child process, seeded)
and this file's ``baseline_*`` copies on the same seeds and data: the published arrays
must be identical (they are: the "old" side is fa97764's float path, bit for bit).

    python benchmarks/bench_noise.py noise --cells 1000000 --reps 9
    python benchmarks/bench_noise.py noise --cells 1000000 --reps 9 --source seeded
    python benchmarks/bench_noise.py slow --cells 1000000 --reps 5
    python benchmarks/bench_noise.py profile --cells 1000000 --reps 7 [--cprofile]
    eree synth lodes --wac ../shared/data/lodes/pa_wac_S000_JT00_2015.csv.gz --out /tmp/pa --seed 1
    git worktree add /tmp/eree-old fa97764
    python benchmarks/bench_noise.py check-baseline --old-src /tmp/eree-old/src
    python benchmarks/bench_noise.py noise --cells 1000000 --reps 9 --old-bits fa97764
    python benchmarks/bench_noise.py release --old-src /tmp/eree-old/src --data /tmp/pa --runs 7
    git worktree remove /tmp/eree-old --force
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine

from eree.evaluate.legacy_sampler import (
    legacy_noise,
    legacy_smooth_gamma,
    legacy_uniform,
    legacy_uniforms,
)
from eree.mechanisms import noise_laws, sampling
from eree.mechanisms.base import Cells, Measurement
from eree.mechanisms.baselines import EdgeLaplace, TruncatedLaplace
from eree.mechanisms.er_ee import LogLaplace, SmoothGamma, SmoothLaplace, laplace_quantile
from eree.mechanisms.estimators import psi_estimates, z_value
from eree.mechanisms.gedp import EstabGaussian, Pnc, PsiMechanism, pnc_sensitivity
from eree.mechanisms.noise import NoiseSource, SecureNoise, SeededNoise
from eree.privacy.neighbors import DPNeighbor, SqrtShift

ROOT = Path(__file__).resolve().parents[1]

# --------------------------------------------------------------------------------------
# The old float path (commit fa97764), copied: src/eree/mechanisms/noise.py, samplers.py
# --------------------------------------------------------------------------------------

#: ``noise --old-bits fa97764``: the old side reads os.urandom exactly as fa97764's
#: SecureNoise did (np.frombuffer, no copy) instead of today's ``SecureNoise.bits``
OLD_BITS_EXACT = False


def baseline_uniform(source: NoiseSource, size: int) -> np.ndarray:
    """fa97764 ``NoiseSource.uniform`` (:func:`eree.evaluate.legacy_sampler.legacy_uniforms`).

    The words come from today's ``source.bits`` (the same source object as the new side);
    with ``OLD_BITS_EXACT`` from ``os.urandom`` as fa97764's SecureNoise read them.
    """
    if OLD_BITS_EXACT and isinstance(source, SecureNoise) and size:  # fa97764: no copy
        bits = np.frombuffer(os.urandom(8 * size), dtype=np.uint64)
        return legacy_uniform((bits >> np.uint64(12)).astype(np.float64))
    return legacy_uniforms(source, size)


def baseline_add_laplace(source: NoiseSource, values: Any, scale: Any) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    u = baseline_uniform(source, v.size).reshape(v.shape)
    return v + legacy_noise("laplace", u, scale)


def baseline_add_gaussian(source: NoiseSource, values: Any, scale: Any) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    u = baseline_uniform(source, v.size).reshape(v.shape)
    return v + legacy_noise("gaussian", u, scale)


def baseline_smooth_gamma_standard(source: NoiseSource, size: int) -> np.ndarray:
    """fa97764's rejection sampler (:func:`eree.evaluate.float_attack.legacy_smooth_gamma`)."""
    return legacy_smooth_gamma(source, size)


def _withheld(noisy: np.ndarray, name: str) -> Measurement:
    return Measurement(noisy, noisy, None, None, None, "withheld", "withheld", name)


# fa97764's mechanism __call__ bodies (same arrays computed, same Measurement returned)


def baseline_edge_laplace(c: dict[str, Any], source: NoiseSource, p: dict[str, Any]) -> Measurement:
    scale = 1.0 / p["epsilon"]
    noisy = baseline_add_laplace(source, c["count"], scale)
    half = laplace_quantile(scale, 0.95)
    std = np.full(noisy.shape, math.sqrt(2.0) * scale)
    return Measurement(noisy, noisy, std, noisy - half, noisy + half, "public", "public", "laplace")


def baseline_truncated_laplace(
    c: dict[str, Any], source: NoiseSource, p: dict[str, Any]
) -> Measurement:
    noisy = baseline_add_laplace(source, c["count_truncated"], p["theta"] / p["epsilon"])
    return _withheld(noisy, "truncated_laplace")


def baseline_smooth_laplace(
    c: dict[str, Any], source: NoiseSource, p: dict[str, Any]
) -> Measurement:
    scale = 2.0 * np.maximum(p["alpha"] * c["x_v"], 1.0) / p["epsilon"]
    return _withheld(baseline_add_laplace(source, c["count"], scale), "smooth_laplace")


def baseline_log_laplace(c: dict[str, Any], source: NoiseSource, p: dict[str, Any]) -> Measurement:
    alpha, eps, confidence = p["alpha"], p["epsilon"], 0.95
    lam, gamma = 2.0 * math.log1p(alpha) / eps, 1.0 / alpha
    n = c["count"]
    noisy = np.exp(baseline_add_laplace(source, np.log(n + gamma), lam)) - gamma
    estimate = (noisy + gamma) * (1.0 - lam * lam) - gamma if lam < 1 else noisy.copy()
    q = laplace_quantile(lam, confidence)
    ci_low = (noisy + gamma) * math.exp(-q) - gamma
    ci_high = (noisy + gamma) * math.exp(q) - gamma
    factor = math.sqrt((1.0 - lam * lam) ** 2 / (1.0 - 4.0 * lam * lam) - 1.0)
    std = (np.maximum(estimate, 0.0) + gamma) * factor
    return Measurement(noisy, estimate, std, ci_low, ci_high, "m", "estimated")


def baseline_smooth_gamma(c: dict[str, Any], source: NoiseSource, p: dict[str, Any]) -> Measurement:
    n = c["count"]
    eps1 = p["epsilon"] - 5.0 * math.log1p(p["alpha"])
    scale = 5.0 * np.maximum(p["alpha"] * c["x_v"], 1.0) / eps1
    z = baseline_smooth_gamma_standard(source, n.size).reshape(n.shape)
    return _withheld(n + scale * z, "smooth_gamma")


def baseline_estab_gaussian(
    c: dict[str, Any], source: NoiseSource, p: dict[str, Any]
) -> Measurement:
    sd = p["neighbor"].sensitivity(p["gamma"]) / p["mu"]
    noisy = baseline_add_gaussian(source, c["value"], sd)
    std = np.full(noisy.shape, sd)
    z = z_value(0.95)
    return Measurement(
        noisy,
        noisy.copy(),
        std,
        np.maximum(noisy - z * sd, 0.0),
        np.maximum(noisy + z * sd, 0.0),
        "m",
        "public",
        "estab_gaussian",
    )


def baseline_psi(c: dict[str, Any], source: NoiseSource, p: dict[str, Any]) -> Measurement:
    nb, sigma = p["neighbor"], p["gamma"] / p["mu"]
    omega = baseline_add_gaussian(source, nb.psi(c["value"]), sigma)
    est = psi_estimates(omega, nb, sigma, 0.95)
    std = None if est.variance is None else np.sqrt(est.variance)
    return Measurement(
        omega,
        est.estimate,
        std,
        est.ci_low,
        est.ci_high,
        est.method,
        "withheld" if std is None else est.variance_kind,
        "psi",
    )


def baseline_pnc(c: dict[str, Any], source: NoiseSource, p: dict[str, Any]) -> Measurement:
    delta = pnc_sensitivity(c["bound"], p["neighbor"], p["gamma"])
    sd = delta / p["mu"]
    noisy = baseline_add_gaussian(source, c["clipped"], sd)
    z = z_value(0.95)
    return Measurement(
        noisy,
        noisy.copy(),
        sd.copy(),
        np.maximum(noisy - z * sd, 0.0),
        np.maximum(noisy + z * sd, 0.0),
        "m",
        "public",
        "pnc",
    )


# --------------------------------------------------------------------------------------
# Data and mechanisms
# --------------------------------------------------------------------------------------


def cell_data(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Realistic per-cell statistics (fresh per repetition).

    counts: floor(LogNormal(1, 1.6)) clipped to 5000 (≈ 27% zeros, median 2, heavy tail);
    x_v: the largest establishment's count, ⌈count·U(0.05, 1)⌉ (0 for empty cells);
    count_truncated: count with cells of x_v ≥ θ = 100 losing their largest establishment;
    value: group sums ~ 10^U(3, 7), integers (Estab-Gaussian);
    bound: the public pnc bound u* ≥ x_v (x_v·1.3 + 5).
    """
    count = np.minimum(np.floor(rng.lognormal(1.0, 1.6, n)), 5000.0)
    x_v = np.where(count > 0, np.ceil(count * rng.uniform(0.05, 1.0, n)), 0.0)
    x_v = np.minimum(x_v, count)
    trunc = np.where(x_v >= 100, count - x_v, count)
    value = np.rint(10.0 ** rng.uniform(3.0, 7.0, n))
    bound = x_v * 1.3 + 5.0
    return {
        "count": count,
        "x_v": x_v,
        "count_truncated": trunc,
        "value": value,
        "clipped": count,
        "bound": bound,
    }


class Case:
    """One mechanism: the new object, the old float path, the cell columns each reads."""

    def __init__(
        self,
        name: str,
        family: str,
        make: Callable[[float | None], Any],
        columns: dict[str, str],
        old: Callable[[dict[str, Any], NoiseSource, dict[str, Any]], Measurement],
        params: dict[str, Any],
        fine_grid: float,
    ) -> None:
        self.name, self.family, self.make = name, family, make
        self.columns, self.old, self.params, self.fine_grid = columns, old, params, fine_grid

    def cells(self, data: dict[str, np.ndarray]) -> tuple[Cells, dict[str, np.ndarray]]:
        cols = {k: data[v] for k, v in self.columns.items()}
        return Cells(cols), cols


def cases() -> list[Case]:
    a, eps = 0.1, 1.0
    sq, dp = SqrtShift(), DPNeighbor()
    return [
        Case(
            "edge-DP Laplace (1/ε)",
            "laplace",
            lambda g: EdgeLaplace(query="q", epsilon=eps, definition="edge-dp", grid=g),
            {"count": "count"},
            baseline_edge_laplace,
            {"epsilon": eps},
            2.0**-30,
        ),
        Case(
            "Smooth Laplace (2·max(αx_v,1)/ε)",
            "laplace",
            lambda g: SmoothLaplace(query="q", alpha=a, epsilon=eps, grid=g),
            {"count": "count", "x_v": "x_v"},
            baseline_smooth_laplace,
            {"alpha": a, "epsilon": eps},
            2.0**-30,
        ),
        Case(
            "Log-Laplace (log space, 2⁻²⁰)",
            "laplace",
            lambda g: LogLaplace(query="q", alpha=a, epsilon=eps, grid=g),
            {"count": "count"},
            baseline_log_laplace,
            {"alpha": a, "epsilon": eps},
            2.0**-30,
        ),
        Case(
            "truncated Laplace (θ=100)",
            "laplace",
            lambda g: TruncatedLaplace(
                query="q", epsilon=eps, theta=100.0, definition="node-dp", grid=g
            ),
            {"count_truncated": "count_truncated"},
            baseline_truncated_laplace,
            {"epsilon": eps, "theta": 100.0},
            2.0**-30,
        ),
        Case(
            "Estab-Gaussian (dp ψ, γ=50, μ=0.15)",
            "gaussian",
            lambda g: EstabGaussian(
                query="q", attribute="wage", neighbor=dp, gamma=50.0, mu=0.15, grid=g
            ),
            {"value": "value"},
            baseline_estab_gaussian,
            {"neighbor": dp, "gamma": 50.0, "mu": 0.15},
            2.0**-16,
        ),
        Case(
            "ψ-mechanism (ψ=√, γ=0.5, μ=0.7, 2⁻²⁰)",
            "gaussian",
            lambda g: PsiMechanism(
                query="q", attribute="emp", neighbor=sq, gamma=0.5, mu=0.7, grid=g
            ),
            {"value": "count"},
            baseline_psi,
            {"neighbor": sq, "gamma": 0.5, "mu": 0.7},
            2.0**-30,
        ),
        Case(
            "pnc (ψ=√, γ=0.5, μ=0.6)",
            "gaussian",
            lambda g: Pnc(query="q", attribute="emp", neighbor=sq, gamma=0.5, mu=0.6, grid=g),
            {"clipped": "clipped", "bound": "bound"},
            baseline_pnc,
            {"neighbor": sq, "gamma": 0.5, "mu": 0.6},
            2.0**-30,
        ),
        Case(
            "Smooth Gamma (5·max(αx_v,1)/ε₁)",
            "smooth_gamma",
            lambda g: SmoothGamma(query="q", alpha=a, epsilon=eps, grid=g),
            {"count": "count", "x_v": "x_v"},
            baseline_smooth_gamma,
            {"alpha": a, "epsilon": eps},
            2.0**-30,
        ),
    ]


TARGET = {"laplace": 1.3, "gaussian": 2.0, "smooth_gamma": 2.0}


def make_source(kind: str, seed: int) -> NoiseSource:
    return SecureNoise() if kind == "secure" else SeededNoise(seed)


def load() -> float:
    return round(os.getloadavg()[0], 2)


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


# --------------------------------------------------------------------------------------
# noise: old vs new per mechanism
# --------------------------------------------------------------------------------------


def cmd_noise(args: argparse.Namespace) -> dict[str, Any]:
    global OLD_BITS_EXACT
    OLD_BITS_EXACT = args.old_bits == "fa97764"
    cs = [c for c in cases() if not args.only or any(o in c.name for o in args.only)]
    mechs = {c.name: c.make(None) for c in cs}
    src = {"old": make_source(args.source, 11), "new": make_source(args.source, 12)}
    sides = ["old", "new"]

    def call(side: str, c: Case, cells: Cells, cols: dict[str, Any]) -> Callable[[], Any]:
        if side == "old":
            return lambda: c.old(cols, src["old"], c.params)
        return lambda: mechs[c.name](cells, src["new"])

    # warm-up (imports of SciPy, python-flint; first-call caches), not timed
    warm = cell_data(np.random.default_rng(0), 10_000)
    for c in cs:
        cells, cols = c.cells(warm)
        for side in sides:
            call(side, c, cells, cols)()
    rows: dict[str, dict[str, list[float]]] = {
        c.name: {f"{s}_{k}": [] for s in sides for k in ("wall", "cpu")} for c in cs
    }
    loads = []
    slow0 = (sampling.STATS.draws, sampling.STATS.slow)
    per_m = 1e6 / args.cells
    for rep in range(args.reps):
        loads.append(load())
        data = cell_data(np.random.default_rng(1000 + rep), args.cells)
        order = sides[rep % len(sides) :] + sides[: rep % len(sides)]  # rotate who goes first
        for c in cs:
            cells, cols = c.cells(data)
            for side in order:
                w, cpu = timed(call(side, c, cells, cols))
                rows[c.name][f"{side}_wall"].append(w * per_m)
                rows[c.name][f"{side}_cpu"].append(cpu * per_m)
        print(f"rep {rep + 1}/{args.reps} done (load {loads[-1]})", file=sys.stderr, flush=True)
    result = []
    for c in cs:
        r = rows[c.name]
        med = {k: statistics.median(v) for k, v in r.items()}
        x: dict[str, Any] = {"mechanism": c.name, "family": c.family, "target": TARGET[c.family]}
        for side in sides:
            x[f"{side}_s_per_M"] = med[f"{side}_wall"]
            x[f"{side}_cpu_s_per_M"] = med[f"{side}_cpu"]
        x["ratio_wall_new"] = med["new_wall"] / med["old_wall"]
        x["ratio_cpu_new"] = med["new_cpu"] / med["old_cpu"]
        x["runs"] = {k: [round(v, 4) for v in vs] for k, vs in r.items()}
        result.append(x)
    print(
        f"\nnoise step per million cells, {args.source} source, {args.cells:,} cells, "
        f"median of {args.reps}; load (1 min) {min(loads)}–{max(loads)}; old side's words: "
        f"{args.old_bits}"
    )
    print(
        "| mechanism | old wall | new wall | new/old wall | old CPU | new CPU | new/old CPU "
        "| target |"
    )
    print("| --- " + "| ---: " * 7 + "|")
    for x in result:
        print(
            f"| {x['mechanism']} | {x['old_s_per_M'] * 1e3:.0f} ms | {x['new_s_per_M'] * 1e3:.0f}"
            f" ms | {x['ratio_wall_new']:.2f}× | {x['old_cpu_s_per_M'] * 1e3:.0f} ms | "
            f"{x['new_cpu_s_per_M'] * 1e3:.0f} ms | {x['ratio_cpu_new']:.2f}× "
            f"| ≤ {x['target']}× |"
        )
    slow = (sampling.STATS.draws - slow0[0], sampling.STATS.slow - slow0[1])
    print(f"slow-path draws during the timed runs: {slow[1]} of {slow[0]:,}")
    return {"source": args.source, "old_bits": args.old_bits, "cells": args.cells,
            "reps": args.reps, "loads": loads,
            "results": result, "slow_draws": slow[1], "draws": slow[0]}  # fmt: skip


# --------------------------------------------------------------------------------------
# slow: the slow path's rate and cost
# --------------------------------------------------------------------------------------


class SlowTimer:
    """Wraps sampling._slow and SmoothGammaLaw._decide with a per-call timer (this process)."""

    def __init__(self) -> None:
        self.slow: list[float] = []
        self.slow_cpu: list[float] = []  # thread CPU time of the same calls
        self.decide: list[float] = []
        self._orig_slow = sampling._slow
        self._orig_decide = noise_laws.SmoothGammaLaw._decide

    def __enter__(self) -> SlowTimer:
        orig_slow, orig_decide = self._orig_slow, self._orig_decide

        def slow(*a: Any, **k: Any) -> Any:
            t, c = time.perf_counter(), time.thread_time()
            try:
                return orig_slow(*a, **k)
            finally:
                self.slow.append(time.perf_counter() - t)
                self.slow_cpu.append(time.thread_time() - c)

        def decide(law: Any, *a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return orig_decide(law, *a, **k)
            finally:
                self.decide.append(time.perf_counter() - t)

        sampling._slow = slow  # type: ignore[assignment]
        noise_laws.SmoothGammaLaw._decide = decide  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: Any) -> None:
        sampling._slow = self._orig_slow  # type: ignore[assignment]
        noise_laws.SmoothGammaLaw._decide = self._orig_decide  # type: ignore[method-assign]


class ErrorProbe:
    """Records E[2·err/r] of every ``rounded_noisy`` call: the expected slow-path rate.

    Wraps ``rounded_noisy`` where the mechanisms look it up and re-computes the per-cell
    error bound (the accounting of ``sampling._settle``, copied) for every cell from the
    same centre and terms, with the laws' ``fast`` (the bounds ``Law.precise`` gives) on a
    seeded source of its own (same distribution). The first tier's scalar bound covers
    the per-cell one outside the tails, so a draw goes slow exactly when its per-cell bound
    leaves its grid cell uncertain: this is the slow path's rate.
    """

    def __init__(self) -> None:
        self.expected: list[float] = []
        self.n = 0
        self.elapsed = 0.0  # the probe's own time (subtracted from the timed calls)

    def probe(self, centre: Any, terms: Any, grid: Any) -> None:
        c = np.asarray(centre.value, dtype=np.float64).ravel()
        shape = np.shape(centre.value)
        r = np.broadcast_to(np.asarray(grid, dtype=np.float64), shape).ravel()
        err = np.broadcast_to(np.asarray(centre.error, dtype=np.float64), shape).ravel().copy()
        total_abs = np.abs(c)
        src = SeededNoise(99 + self.n)
        U = noise_laws.U
        for t in terms:
            w, e_w, _ = t.law.fast(src, c.size)
            b = np.broadcast_to(t.scale, shape).ravel()
            noise = b * w
            with np.errstate(invalid="ignore"):
                e_t = b * (e_w + t.rel_error * (np.abs(w) + e_w) * (1 + t.rel_error)) + U * np.abs(
                    noise
                )
            err += np.where(b == 0, 0.0, e_t)
            total_abs += np.abs(noise)
        err += (len(terms) + 1) * U * total_abs
        err *= noise_laws.SAFETY
        x = np.minimum(2.0 * err / r, 1.0)
        self.expected.append(float(np.sum(x)))
        self.n += c.size

    def __enter__(self) -> ErrorProbe:
        import eree.mechanisms.baselines as mb
        import eree.mechanisms.er_ee as me
        import eree.mechanisms.gedp as mg

        self._mods = [m for m in (sampling, me, mg, mb) if hasattr(m, "rounded_noisy")]
        self._orig = sampling.rounded_noisy
        orig = self._orig

        def wrapped(source: Any, centre: Any, terms: Any, grid: Any) -> Any:
            t = time.perf_counter()
            self.probe(centre, terms, grid)
            self.elapsed += time.perf_counter() - t
            return orig(source, centre, terms, grid)

        for m in self._mods:
            m.rounded_noisy = wrapped  # type: ignore[attr-defined]
        return self

    def __exit__(self, *exc: Any) -> None:
        for m in self._mods:
            m.rounded_noisy = self._orig  # type: ignore[attr-defined]

    @property
    def rate_per_million(self) -> float:
        return 1e6 * sum(self.expected) / max(self.n, 1)


def cmd_slow(args: argparse.Namespace) -> dict[str, Any]:
    cs = [c for c in cases() if not args.only or any(o in c.name for o in args.only)]
    out = []
    # warm-up: python-flint import and first Arb call
    with SlowTimer():
        c0 = cs[0]
        cells, _ = c0.cells(cell_data(np.random.default_rng(0), 20_000))
        c0.make(2.0**-30)(cells, SecureNoise())
    for c in cs:
        for label, grid in (("default", None), ("fine", c.fine_grid)):
            mech = c.make(grid)
            loads, walls = [], []
            s0 = (sampling.STATS.draws, sampling.STATS.slow)
            sampling.STATS.max_refinements = 0
            with SlowTimer() as tm, ErrorProbe() as probe:
                for rep in range(args.reps):
                    data = cell_data(np.random.default_rng(5000 + rep), args.cells)
                    cells, _ = c.cells(data)
                    loads.append(load())
                    e0 = probe.elapsed
                    w, _ = timed(lambda: mech(cells, SecureNoise()))  # noqa: B023
                    walls.append(w - (probe.elapsed - e0))
            draws = sampling.STATS.draws - s0[0]
            slow = sampling.STATS.slow - s0[1]
            row = {
                "mechanism": c.name,
                "grid": label,
                "grid_value": mech.grid,
                "draws": draws,
                "slow": slow,
                "slow_per_M": 1e6 * slow / max(draws, 1),
                "expected_slow_per_M": probe.rate_per_million,
                "slow_us_median": 1e6 * statistics.median(tm.slow) if tm.slow else None,
                "slow_us_mean": 1e6 * statistics.fmean(tm.slow) if tm.slow else None,
                "slow_us_max": 1e6 * max(tm.slow) if tm.slow else None,
                "slow_cpu_us_median": 1e6 * statistics.median(tm.slow_cpu) if tm.slow else None,
                "slow_cpu_us_max": 1e6 * max(tm.slow_cpu) if tm.slow else None,
                "slow_total_s": sum(tm.slow),
                "refinements_max": sampling.STATS.max_refinements if slow else None,
                "decide_calls": len(tm.decide),
                "decide_us_median": 1e6 * statistics.median(tm.decide) if tm.decide else None,
                "decide_us_max": 1e6 * max(tm.decide) if tm.decide else None,
                "call_s_per_M_median": statistics.median(walls) * 1e6 / args.cells,
                "loads": loads,
            }
            out.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)

    def f(x: float | None, fmt: str = "{:.0f}") -> str:
        return "—" if x is None else fmt.format(x)

    print(f"\nslow path, {args.cells:,} cells × {args.reps} repetitions per line, secure source")
    print(
        "| mechanism | grid | draws | slow draws | slow / M draws | expected / M (𝔼 2·err/r) "
        "| µs per slow draw, wall: median / mean / max | CPU: median / max | max refinements "
        "| exact rejection decisions | call ms/M (median, probe excluded) |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for x in out:
        g = x["grid_value"]
        gs = f"2^{int(math.log2(g))}" if g != 1 else "1"
        dec = f"{x['decide_calls']}" + (
            f" ({x['decide_us_max']:.0f} µs max)" if x["decide_calls"] else ""
        )
        wall = "/".join(f(x[k]) for k in ("slow_us_median", "slow_us_mean", "slow_us_max"))
        cpu = "/".join(f(x[k]) for k in ("slow_cpu_us_median", "slow_cpu_us_max"))
        print(
            f"| {x['mechanism']} | {x['grid']} {gs} | {x['draws']:,} | {x['slow']:,} | "
            f"{x['slow_per_M']:.3g} | {x['expected_slow_per_M']:.3g} | {wall} | {cpu} | "
            f"{f(x['refinements_max'])} | {dec} | {x['call_s_per_M_median'] * 1e3:.0f} |"
        )
    return {"cells": args.cells, "reps": args.reps, "results": out}


# --------------------------------------------------------------------------------------
# profile: where the new noise step's time goes
# --------------------------------------------------------------------------------------
#
# The functions below are step-by-step copies of src/'s ``rounded_noisy`` (tiered),
# ``LaplaceLaw.draw``, ``GaussianLaw.draw`` and the first batch of ``SmoothGammaLaw.draw``
# (sampling.py), with a CPU-time mark after each step. ``profile`` checks them against
# src/ on seeded words before timing (same Draw, same published values) and reports the
# result, so a change in src/ that the copies miss shows up as "copies match src/: False".


class _Marks:
    """(step name, process CPU time since the previous mark) pairs."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, float]] = []
        self.t = time.process_time()

    def __call__(self, name: str) -> None:
        now = time.process_time()
        self.steps.append((name, now - self.t))
        self.t = now


def _steps_draw(law: Any, source: NoiseSource, n: int, mark: _Marks) -> Any:
    """``law.draw(source, n)`` step by step (Laplace, Gaussian); Smooth Gamma's whole."""
    S = sampling
    if isinstance(law, S.LaplaceLaw):
        words = source.bits(n)
        mark("laplace draw: source.bits(n)")
        m = words & S._MASK63
        tail = np.flatnonzero(m < S._LAP_TAIL_M)
        mark("laplace draw: m = w & mask; tail = flatnonzero(m < 2⁴³)")
        v = m.astype(np.float64)
        v += 0.5
        v *= S._TWO_M63
        mark("laplace draw: V̂ = (m+½)·2⁻⁶³ (in place)")
        w = np.log(v, out=v)
        mark("laplace draw: ln V̂")
        flip = np.bitwise_and(words, S._SIGN, out=m)
        flip ^= S._SIGN
        w.view(np.uint64)[...] ^= flip
        mark("laplace draw: W = ∓ln V̂ (sign bit xor)")
        return S.Draw(w, {"words": words, "ext": {}}, tail, S._LAP_WMAX, S._LAP_EW)
    if isinstance(law, S.GaussianLaw):
        pairs = (n + 1) // 2
        words = source.bits(2 * pairs)
        mark("gaussian draw: source.bits(n)")
        w1, w2 = words[0::2], words[1::2]
        tp = np.flatnonzero((w1 < S._G_LO) | (w1 > S._G_HI))
        tail = np.stack([2 * tp, 2 * tp + 1], axis=1).ravel()
        tail = tail[tail < n]
        mark("gaussian draw: tail (V̂₁ < 2⁻²⁰ or > 1 − 2⁻¹²)")
        v1 = w1.astype(np.float64)
        v1 += 0.5
        v1 *= S._TWO_M64
        mark("gaussian draw: V̂₁ (strided words)")
        lg = np.log(v1, out=v1)
        lg *= -2.0
        mark("gaussian draw: −2 ln V̂₁")
        r = np.sqrt(lg, out=lg)
        mark("gaussian draw: R = sqrt")
        th = w2.astype(np.float64)
        th += 0.5
        th *= S._TWO_M64
        th *= 2.0 * math.pi
        mark("gaussian draw: θ = 2πV̂₂ (strided words)")
        out = np.empty(2 * pairs)
        np.multiply(r, np.cos(th), out=out[0::2])
        mark("gaussian draw: R·cos θ (strided write)")
        np.multiply(r, np.sin(th, out=th), out=out[1::2])
        mark("gaussian draw: R·sin θ (strided write)")
        states = {"words": words.reshape(pairs, 2), "ext": {}}
        return S.Draw(out[:n], states, tail, S._G_RMAX, S._G_EW)
    d = law.draw(source, n)  # Smooth Gamma: broken down separately (_sg_breakdown)
    mark(f"{law.name} draw: law.draw (whole)")
    return d


def _steps_rounded_noisy(
    source: NoiseSource, centre: Any, terms: Any, grid: Any
) -> tuple[list[tuple[str, float]], np.ndarray, int]:
    """``sampling.rounded_noisy`` step by step: (steps, the published values, candidates).

    The same operations as src/: each law's ``draw``; y = c + Σ b·ŵ; one scalar bound for
    every cell outside the laws' tails; the candidates (within that bound of a rounding
    boundary, or in a tail) settled by ``sampling._settle`` (per-cell bounds from
    ``Law.precise``, then the slow path), which is timed as one step.
    """
    S, U = sampling, noise_laws.U
    mark = _Marks()
    c = np.asarray(centre.value, dtype=np.float64)
    shape = c.shape
    n = c.size
    rr = np.asarray(grid, dtype=np.float64)
    r = np.broadcast_to(rr, shape).ravel()
    cf = c.ravel()
    cerr = np.broadcast_to(np.asarray(centre.error, dtype=np.float64), shape).ravel()
    if n == 0:
        return mark.steps, c.copy(), 0
    bound = float(np.max(centre.error))
    total_max = float(max(cf.max(), -cf.min()))
    mark("setup: views; scalar bound starts at max centre.error, max |c|")
    y: np.ndarray | None = None
    draws, scales, tails = [], [], []
    for t in terms:
        d = _steps_draw(t.law, source, n, mark)
        scale = np.asarray(t.scale, dtype=np.float64)
        b = np.broadcast_to(scale, shape).ravel()
        bmax = float(scale.max())
        mark("term: bmax = max(scale)")
        noise = np.multiply(b, d.w)
        if y is None:
            noise += cf
            y = noise
        else:
            y += noise
        mark("term: y = c + b·ŵ")
        rel = t.rel_error
        bound += bmax * (d.ew + rel * (d.wmax + d.ew) * (1.0 + rel)) + U * bmax * d.wmax * (1 + U)
        total_max += bmax * d.wmax * (1 + U)
        draws.append(d)
        scales.append(b)
        tails.append(d.tail)
    bound += (len(terms) + 1) * U * total_max
    bound *= S._SAFETY * (1 + 2.0**-20)
    assert y is not None
    thr: Any
    if rr.ndim:
        q = np.divide(y, r, out=y)
        thr = 0.5 - bound / r
    else:
        q = np.multiply(y, 1.0 / float(rr), out=y)
        thr = 0.5 - bound / float(rr)
    mark("q = y/r; threshold ½ − bound/r")
    k = np.rint(q)
    mark("k = rint(q)")
    dist = np.subtract(q, k, out=q)
    np.abs(dist, out=dist)
    mark("|q − k|")
    cand = np.flatnonzero(dist >= thr)
    mark("candidates: flatnonzero(|q − k| ≥ threshold)")
    for tail in tails:
        if tail.size:
            cand = np.union1d(cand, tail)
    mark("candidates ∪ the laws' tails")
    if cand.size:
        k[cand] = S._settle(source, centre, terms, draws, scales, cf, cerr, r, cand)
    mark("_settle(candidates): Law.precise, per-cell test, slow path")
    k *= r
    k += 0.0
    mark("out = k·r (+0.0)")
    return mark.steps, k.reshape(shape), int(cand.size)


def _sg_breakdown(source: NoiseSource, n: int) -> tuple[list[tuple[str, float]], np.ndarray]:
    """The first batch of ``SmoothGammaLaw.draw`` step by step: (steps, its accepted ẑ).

    (m = n proposals, batch = 1.75n + 16: that batch almost always fills all n cells.)
    """
    S = sampling
    law = S.LAWS["smooth_gamma"]
    mark = _Marks()
    out = np.empty(n)
    words_out = np.empty((n, 2), dtype=np.uint64)
    ext: dict[int, list[Any]] = {}
    forced: list[int] = []
    batch = int(n * 1.75) + 16
    words = source.bits(2 * batch).reshape(batch, 2)
    mark("sg: source.bits(3.5n)")
    w0 = words[:, 0]
    mm = w0 & S._MASK63
    tail = mm < S._SG_TAIL_P
    mark("sg: P's bits, tail (P < 2⁻⁴⁰)")
    p = mm.astype(np.float64)
    p += 0.5
    p *= S._TWO_M64
    p *= math.pi
    z = np.tan(p, out=p)
    np.divide(1.0, z, out=z)
    z.view(np.uint64)[...] ^= np.bitwise_and(w0, S._SIGN, out=mm)
    mark("sg: Ẑ = ±1/tan(πP̂) (in place)")
    z2 = z * z
    a = z2 + 1.0
    z2 *= z2
    z2 += 1.0
    a /= z2
    a *= S._SG_K
    mark("sg: â = K(1+ẑ²)/(1+ẑ⁴)")
    v = words[:, 1].astype(np.float64)
    v += 0.5
    v *= S._TWO_M64
    v -= a
    accept = v < -S._SG_MARGIN
    unsure = np.abs(v, out=a) <= S._SG_MARGIN
    unsure |= tail
    mark("sg: V̂ − â, accept, unsure (margin 2⁻⁴² or tail)")
    for j in np.flatnonzero(unsure):
        accept[j] = law._decide_one(source, words[j], ext, -1 - int(j))
    mark("sg: unsure proposals (_decide_one)")
    idx = np.flatnonzero(accept)[:n]
    k = idx.size
    out[:k] = z[idx]
    words_out[:k] = words[idx]
    mark("sg: gather accepted (ẑ, words)")
    for key in [x for x in ext if x < 0]:
        pos = int(np.searchsorted(idx, -1 - key))
        st = ext.pop(key)
        if pos < k and idx[pos] == -1 - key:
            ext[pos] = st
            forced.append(pos)
    big = np.flatnonzero((words_out[:k, 0] & S._MASK63) < S._SG_Z_M)
    _ = np.union1d(big, np.asarray(forced, dtype=np.int64))
    mark("sg: exactly decided cells; tail cells (|Ẑ| > 1024)")
    return mark.steps, out[:k]


def _copies_match(centre: Any, terms: Any, grid: Any, seed: int) -> bool:
    """The step-by-step copies against src/ on the same seeded words: same Draw, same values."""
    n = np.asarray(centre.value).size
    ok = True
    for t in terms:
        ref = t.law.draw(SeededNoise(seed), n)
        got = _steps_draw(t.law, SeededNoise(seed), n, _Marks())
        ok &= bool(
            np.array_equal(ref.w, got.w)
            and np.array_equal(ref.tail, got.tail)
            and (ref.wmax, ref.ew) == (got.wmax, got.ew)
        )
        if isinstance(t.law, noise_laws.SmoothGammaLaw):
            _, z = _sg_breakdown(SeededNoise(seed), n)
            ok &= bool(np.array_equal(ref.w[: z.size], z))
    ref_out = sampling.rounded_noisy(SeededNoise(seed), centre, terms, grid)
    _, got_out, _ = _steps_rounded_noisy(SeededNoise(seed), centre, terms, grid)
    return ok and bool(np.array_equal(ref_out, got_out))


class LayerTimer:
    """CPU time inside ``rounded_noisy`` (wrapped where the mechanisms look it up).

    Also keeps the arguments of the last call (the centre, terms and grid the mechanism
    handed to the layer), which ``profile`` re-runs step by step.
    """

    def __init__(self) -> None:
        self.cpu = 0.0
        self.args: tuple[Any, ...] = ()

    def __enter__(self) -> LayerTimer:
        import eree.mechanisms.er_ee as me
        import eree.mechanisms.gedp as mg

        # sampling: ``additive`` (edge-DP/truncated Laplace, Estab-Gaussian, pnc) looks it up there
        self._mods, self._orig = [sampling, me, mg], sampling.rounded_noisy
        orig = self._orig

        def wrapped(*a: Any) -> Any:
            self.args = a
            t = time.process_time()
            try:
                return orig(*a)
            finally:
                self.cpu += time.process_time() - t

        for m in self._mods:
            m.rounded_noisy = wrapped  # type: ignore[attr-defined]
        return self

    def __exit__(self, *exc: Any) -> None:
        for m in self._mods:
            m.rounded_noisy = self._orig  # type: ignore[attr-defined]


def cmd_profile(args: argparse.Namespace) -> dict[str, Any]:
    """CPU time (process_time, ms per million cells, median over --reps) step by step."""
    cs = [c for c in cases() if not args.only or any(o in c.name for o in args.only)]
    src = SecureNoise() if args.source == "secure" else SeededNoise(3)
    report: dict[str, Any] = {}
    scale = 1e3 * 1e6 / args.cells
    for c in cs:
        mech = c.make(None)
        per_step: dict[str, list[float]] = {}
        totals, whole, layer, old, cands = [], [], [], [], []
        # warm-up (first-call imports and caches), not timed; its arguments check the copies
        cells, cols = c.cells(cell_data(np.random.default_rng(0), 10_000))
        with LayerTimer() as lt:
            mech(cells, src)
        c.old(cols, src, c.params)
        match = _copies_match(*lt.args[1:], seed=17)
        for rep in range(args.reps):
            data = cell_data(np.random.default_rng(7000 + rep), args.cells)
            cells, cols = c.cells(data)
            with LayerTimer() as lt:
                whole.append(timed(lambda: mech(cells, src))[1])  # noqa: B023
            layer.append(lt.cpu)
            _, centre, terms, grid = lt.args
            t0 = time.process_time()
            steps, _, n_cand = _steps_rounded_noisy(src, centre, terms, grid)
            totals.append(time.process_time() - t0)
            cands.append(n_cand)
            if c.family == "smooth_gamma":
                steps += [("  " + k, v) for k, v in _sg_breakdown(src, args.cells)[0]]
            for k, v in steps:
                per_step.setdefault(k, []).append(v)
            old.append(timed(lambda: c.old(cols, src, c.params))[1])  # noqa: B023
        med = {k: statistics.median(v) * scale for k, v in per_step.items()}
        summary = {
            "old_call": statistics.median(old) * scale,
            "new_call": statistics.median(whole) * scale,
            "new_rounded_noisy": statistics.median(layer) * scale,
            "new_outside_rounded_noisy": statistics.median(
                [w - x for w, x in zip(whole, layer, strict=True)]
            ) * scale,
            "steps_sum": statistics.median(totals) * scale,
            "candidates_per_M": statistics.median(cands) * 1e6 / args.cells,
            "copies_match_src": match,
        }  # fmt: skip
        print(
            f"\n### {c.name} — CPU ms per million cells, median of {args.reps}; load {load()}\n"
            f"old call {summary['old_call']:.0f}; new call {summary['new_call']:.0f} = "
            f"rounded_noisy {summary['new_rounded_noisy']:.0f} + the mechanism's own work "
            f"{summary['new_outside_rounded_noisy']:.0f}; rounded_noisy re-timed step by step "
            f"(sum {summary['steps_sum']:.0f}; {summary['candidates_per_M']:.0f} candidates "
            f"per million cells to _settle; copies match src/: {match}):"
        )
        for k, v in med.items():
            print(f"  {v:7.1f}  {k}")
        report[c.name] = {"summary": summary, "steps": med}
        if args.cprofile:
            data = cell_data(np.random.default_rng(1), args.cells)
            cells, _ = c.cells(data)
            pr = cProfile.Profile()
            pr.enable()
            mech(cells, src)
            pr.disable()
            out = io.StringIO()
            pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(12)
            print(out.getvalue())
    return {"cells": args.cells, "reps": args.reps, "cpu_ms_per_M": report}


# --------------------------------------------------------------------------------------
# release: eree protect, old code vs new, alternately
# --------------------------------------------------------------------------------------


def pa_spec(data: Path, dest: Path) -> Path:
    """examples/pa-lodes.toml with its [data] paths pointed at ``data``."""
    text = (ROOT / "examples" / "pa-lodes.toml").read_text()
    for t in ("workplace", "worker", "job"):
        text = text.replace(f'{t} = "pa/{t}.parquet"', f'{t} = "{data / (t + ".parquet")}"')
    assert str(data) in text
    dest.write_text(text)
    return dest


def cmd_release(args: argparse.Namespace) -> dict[str, Any]:
    old_src, new_src = args.old_src.resolve(), (ROOT / "src").resolve()
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    spec = pa_spec(args.data.resolve(), work / "pa-lodes.toml")
    envs = {}
    for side, src in (("old", old_src), ("new", new_src)):
        env = dict(os.environ)
        env["PYTHONPATH"] = str(src)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "eree")], check=True)
        where = subprocess.run(
            [sys.executable, "-c", "import eree; print(eree.__file__)"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert where.startswith(str(src)), (side, where)
        envs[side] = env
    rows = []
    for i in range(args.runs + 1):  # the first pair warms the page cache, not counted
        order = ("old", "new") if i % 2 == 0 else ("new", "old")
        row: dict[str, Any] = {"load": load()}
        for side in order:
            out = work / f"release-{side}"
            shutil.rmtree(out, ignore_errors=True)
            cmd = [sys.executable, "-m", "eree.cli", "protect", str(spec), "--out", str(out)]
            if args.seed is not None:
                cmd += ["--seed", str(args.seed)]
            t0, r0 = time.perf_counter(), os.times()
            subprocess.run(cmd, env=envs[side], check=True, stdout=subprocess.DEVNULL)
            r1 = os.times()
            row[f"{side}_s"] = time.perf_counter() - t0
            row[f"{side}_cpu_s"] = (r1.children_user - r0.children_user) + (
                r1.children_system - r0.children_system
            )
        if i > 0:
            rows.append(row)
        print(json.dumps({"warm-up" if i == 0 else f"run {i}": row}), file=sys.stderr, flush=True)
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0] if k != "load"}
    med["ratio_wall"] = med["new_s"] / med["old_s"]
    med["ratio_cpu"] = med["new_cpu_s"] / med["old_cpu_s"]
    loads = [r["load"] for r in rows]
    print(
        f"\nPA release (examples/pa-lodes.toml on {args.data}), median of {args.runs}, "
        f"load {min(loads)}–{max(loads)}"
    )
    print("| | old (fa97764) | new | new/old |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| wall | {med['old_s']:.2f} s | {med['new_s']:.2f} s | {med['ratio_wall']:.2f}× |")
    print(
        f"| CPU | {med['old_cpu_s']:.2f} s | {med['new_cpu_s']:.2f} s | {med['ratio_cpu']:.2f}× |"
    )
    return {"runs": rows, "median": med, "seed": args.seed}


OLD_CHILD = """
import sys, numpy as np
sys.path.insert(0, {src!r})
import eree
assert eree.__file__.startswith({src!r}), eree.__file__
from eree.mechanisms.base import Cells
from eree.mechanisms.baselines import EdgeLaplace, TruncatedLaplace
from eree.mechanisms.er_ee import LogLaplace, SmoothGamma, SmoothLaplace
from eree.mechanisms.gedp import EstabGaussian, Pnc, PsiMechanism
from eree.mechanisms.noise import SeededNoise
from eree.privacy.neighbors import DPNeighbor, SqrtShift
d = dict(np.load({data!r}))
sq, dp = SqrtShift(), DPNeighbor()
mechs = [
    (EdgeLaplace(query="q", epsilon=1.0), {{"count": d["count"]}}),
    (SmoothLaplace(query="q", alpha=0.1, epsilon=1.0), {{"count": d["count"], "x_v": d["x_v"]}}),
    (LogLaplace(query="q", alpha=0.1, epsilon=1.0), {{"count": d["count"]}}),
    (TruncatedLaplace(query="q", epsilon=1.0, theta=100.0),
     {{"count_truncated": d["count_truncated"]}}),
    (EstabGaussian(query="q", attribute="wage", neighbor=dp, gamma=50.0, mu=0.15),
     {{"value": d["value"]}}),
    (PsiMechanism(query="q", attribute="emp", neighbor=sq, gamma=0.5, mu=0.7),
     {{"value": d["count"]}}),
    (Pnc(query="q", attribute="emp", neighbor=sq, gamma=0.5, mu=0.6),
     {{"clipped": d["clipped"], "bound": d["bound"]}}),
    (SmoothGamma(query="q", alpha=0.1, epsilon=1.0), {{"count": d["count"], "x_v": d["x_v"]}}),
]
out = {{}}
for i, (m, cols) in enumerate(mechs):
    r = m(Cells(cols), SeededNoise(100 + i))
    out[f"{{i}}_noisy"] = r.noisy
    out[f"{{i}}_estimate"] = r.estimate
    if r.std is not None:
        out[f"{{i}}_std"] = np.broadcast_to(r.std, r.noisy.shape)
    if r.ci_low is not None:
        out[f"{{i}}_lo"] = r.ci_low
        out[f"{{i}}_hi"] = r.ci_high
np.savez({out!r}, **out)
"""


def cmd_check_baseline(args: argparse.Namespace) -> dict[str, Any]:
    """fa97764's own mechanisms (seeded, in a child process on --old-src) against the
    ``baseline_*`` copies of this file on the same seeds: the arrays must be identical."""
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    data = cell_data(np.random.default_rng(42), args.cells)
    np.savez(work / "check-data.npz", **data)
    code = OLD_CHILD.format(
        src=str(args.old_src.resolve()),
        data=str(work / "check-data.npz"),
        out=str(work / "check-old.npz"),
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    old = dict(np.load(work / "check-old.npz"))
    rows = []
    for i, c in enumerate(cases()):
        _, cols = c.cells(data)
        r = c.old(cols, SeededNoise(100 + i), c.params)
        mine = {
            "noisy": r.noisy,
            "estimate": r.estimate,
            "std": r.std,
            "lo": r.ci_low,
            "hi": r.ci_high,
        }
        same = {}
        for k, v in mine.items():
            ref = old.get(f"{i}_{k}")
            if ref is None or v is None:
                same[k] = (ref is None) == (v is None)
            else:
                same[k] = bool(np.array_equal(np.broadcast_to(v, ref.shape), ref))
        rows.append({"mechanism": c.name, "identical": all(same.values()), **same})
        print(f"{c.name}: {'identical' if all(same.values()) else 'DIFFERENT'} {same}")
    return {"cells": args.cells, "results": rows}


def commit_of_src() -> str:
    """HEAD of this checkout, with '+dirty' when src/ differs from it (others commit too)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "src"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()  # fmt: skip
    return head + ("+dirty" if dirty else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("noise", "slow", "profile"):
        p = sub.add_parser(name)
        p.add_argument("--cells", type=int, default=1_000_000)
        p.add_argument("--reps", type=int, default=7 if name == "noise" else 5)
        p.add_argument("--source", choices=("secure", "seeded"), default="secure")
        p.add_argument("--only", nargs="*", default=None, help="substrings of mechanism names")
        p.add_argument("--json", type=Path, default=None)
        if name == "profile":
            p.add_argument("--cprofile", action="store_true")
        if name == "noise":
            p.add_argument(
                "--old-bits",
                choices=("source", "fa97764"),
                default="source",
                help="old side's words: today's SecureNoise.bits (default) or fa97764's "
                "os.urandom read without the copy",
            )
    p = sub.add_parser("release")
    p.add_argument("--old-src", type=Path, required=True, help="src/ of a worktree of fa97764")
    p.add_argument("--data", type=Path, default=Path("/tmp/pa"))
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/eree-bench-noise"))
    p.add_argument("--json", type=Path, default=None)
    p = sub.add_parser("check-baseline")
    p.add_argument("--old-src", type=Path, required=True, help="src/ of a worktree of fa97764")
    p.add_argument("--cells", type=int, default=200_000)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/eree-bench-noise"))
    p.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    print(f"src at {commit_of_src()}", file=sys.stderr, flush=True)
    commands = {
        "noise": cmd_noise,
        "slow": cmd_slow,
        "profile": cmd_profile,
        "release": cmd_release,
        "check-baseline": cmd_check_baseline,
    }
    res = commands[args.cmd](args)
    res["machine"] = machine()
    res["commit"] = commit_of_src()
    res["load_end"] = load()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(res, indent=2, default=str))


if __name__ == "__main__":
    main()
