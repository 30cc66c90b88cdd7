r"""The float sampler eree used before the float-safe layer, kept as the attacker's model.

It is the sampler of commit fa97764 (``git show fa97764:src/eree/mechanisms/noise.py``):
64 random bits → :math:`u = (k+\frac12)/2^{52}`, k = bits >> 12 → inverse CDF in float64.
:mod:`eree.evaluate.float_attack` asks which published values it could have produced;
``benchmarks/bench_noise.py`` times the float-safe layer against it. Nothing publishes
with it.
"""

from __future__ import annotations

import math

import numpy as np

from eree.mechanisms.noise import FloatArray, NoiseSource

__all__ = [
    "legacy_accept",
    "legacy_noise",
    "legacy_smooth_gamma",
    "legacy_uniform",
    "legacy_uniforms",
]

#: 2⁵², the number of uniforms of the legacy grid
TWO52 = 2.0**52


def legacy_uniform(k: FloatArray) -> FloatArray:
    """fa97764's uniform on the grid (k + ½)/2⁵² (k = bits >> 12, as a float)."""
    return (np.asarray(k, dtype=np.float64) + 0.5) / TWO52


def legacy_noise(law: str, u: FloatArray, scale: FloatArray) -> FloatArray:
    """fa97764's float noise from uniforms u, evaluated exactly as the old code did.

    ``smooth_gamma``: the Cauchy proposal's value scale·tan(π(u − ½)) (the old sampler
    then accepted or rejected it).
    """
    if law == "laplace":  # noise.laplace_from_uniform
        c = u - 0.5
        return -np.asarray(scale, dtype=np.float64) * np.sign(c) * np.log1p(-2.0 * np.abs(c))
    if law == "gaussian":  # noise.gaussian_from_uniform
        from scipy.special import ndtri

        return np.asarray(scale, dtype=np.float64) * ndtri(u)
    if law == "smooth_gamma":  # samplers.smooth_gamma_standard's proposal, then n + scale*z
        return np.asarray(scale, dtype=np.float64) * np.tan(math.pi * (u - 0.5))
    raise ValueError(f"no legacy sampler for the law {law!r}")


def legacy_accept(z: FloatArray) -> FloatArray:
    """fa97764's Smooth Gamma acceptance probability of the proposal z."""
    with np.errstate(over="ignore", invalid="ignore"):
        return 2.0 * (1.0 + z * z) / ((1.0 + math.sqrt(2.0)) * (1.0 + z**4))


def legacy_uniforms(source: NoiseSource, n: int) -> FloatArray:
    """fa97764's ``NoiseSource.uniform``: ``n`` uniforms (k + ½)/2⁵² from the source's words."""
    return legacy_uniform((source.bits(n) >> np.uint64(12)).astype(np.float64))


def legacy_smooth_gamma(source: NoiseSource, size: int) -> FloatArray:
    """fa97764's samplers.smooth_gamma_standard (rejection from a standard Cauchy)."""
    out = np.empty(size, dtype=np.float64)
    filled = 0
    while filled < size:
        need = size - filled
        batch = int(need * ((2.0 + math.sqrt(2.0)) / 2.0) * 1.1) + 16
        u = legacy_uniforms(source, 2 * batch)
        z = np.tan(math.pi * (u[:batch] - 0.5))
        z = z[u[batch:] < legacy_accept(z)]
        take = min(need, z.size)
        out[filled : filled + take] = z[:take]
        filled += take
    return out
