"""Noise sources (DESIGN.md §5).

Every sampling function takes its randomness as an argument; nothing in eree uses a
global RNG. Three modes:

* ``secure`` (the default for releases): uniforms from the operating system's
  cryptographically secure generator (:func:`os.urandom`), turned into Laplace and
  Gaussian noise by inverse CDF and into Smooth Gamma noise by rejection. Fast, but
  floating-point arithmetic on the uniforms is not exact: Mironov-style
  least-significant-bit attacks are possible in principle.
* ``exact`` (opt-in): OpenDP's float-safe samplers add the Laplace and Gaussian noise.
  Noise OpenDP cannot sample (the Smooth Gamma density 1/(1+z^4), ramp distortion
  factors) falls back to the secure source; :attr:`NoiseSource.fallbacks` records where.
* ``seeded`` (experiments and tests): a seeded numpy Generator. Not for publication.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from typing_extensions import override

_TWO52 = float(2**52)

FloatArray = NDArray[np.float64]


def _uniform_from_bits(bits: NDArray[np.uint64]) -> FloatArray:
    """Map 64 random bits to a uniform on the open interval (0, 1), on the grid (k+½)/2⁵².

    52 bits (not 53) so that the largest value, 1 − 2⁻⁵³, is exactly representable and
    never rounds to 1.
    """
    k = (bits >> np.uint64(12)).astype(np.float64)
    return (k + 0.5) / _TWO52


def laplace_from_uniform(u: FloatArray, scale: ArrayLike) -> FloatArray:
    r"""Inverse-CDF Laplace: :math:`x = -b\,\mathrm{sgn}(u-\tfrac12)\ln(1-2|u-\tfrac12|)`."""
    c = u - 0.5
    return -np.asarray(scale, dtype=np.float64) * np.sign(c) * np.log1p(-2.0 * np.abs(c))


def gaussian_from_uniform(u: FloatArray, scale: ArrayLike) -> FloatArray:
    r"""Inverse-CDF Gaussian: :math:`x = \sigma\,\Phi^{-1}(u)`."""
    from scipy.special import ndtri  # imported here: SciPy takes ~0.2 s to import

    return np.asarray(scale, dtype=np.float64) * ndtri(u)


class NoiseSource(ABC):
    """A source of randomness for mechanisms.

    Subclasses supply uniform bits; additive Laplace and Gaussian noise are built on them
    (or, for :class:`ExactNoise`, delegated to OpenDP).
    """

    mode: str = ""

    def __init__(self) -> None:
        self.fallbacks: set[str] = set()

    @abstractmethod
    def uniform(self, size: int) -> FloatArray:
        """``size`` i.i.d. uniforms on the open interval (0, 1)."""

    def add_laplace(self, values: ArrayLike, scale: ArrayLike) -> FloatArray:
        """``values + Lap(scale)``, elementwise; ``scale`` may be a scalar or an array."""
        v = np.asarray(values, dtype=np.float64)
        return v + laplace_from_uniform(self.uniform(v.size).reshape(v.shape), scale)

    def add_gaussian(self, values: ArrayLike, scale: ArrayLike) -> FloatArray:
        """``values + N(0, scale^2)``, elementwise."""
        v = np.asarray(values, dtype=np.float64)
        return v + gaussian_from_uniform(self.uniform(v.size).reshape(v.shape), scale)

    def note_fallback(self, what: str) -> None:  # noqa: B027 - a no-op except in exact mode
        """Record that ``what`` was sampled with the secure source although exact was asked."""

    @property
    def for_publication(self) -> bool:
        """Whether releases drawn from this source may be published (not seeded)."""
        return self.mode != "seeded"

    def describe(self) -> dict[str, Any]:
        """What the manifest records about the randomness (never the seed of a secure source)."""
        return {"mode": self.mode, "seed": None, "fallbacks": sorted(self.fallbacks)}


class SecureNoise(NoiseSource):
    """Uniforms from the operating system's CSPRNG (``os.urandom``)."""

    mode = "secure"

    @override
    def uniform(self, size: int) -> FloatArray:
        if size == 0:
            return np.empty(0, dtype=np.float64)
        bits = np.frombuffer(os.urandom(8 * size), dtype=np.uint64)
        return _uniform_from_bits(bits)


class SeededNoise(NoiseSource):
    """A seeded numpy PCG64 generator: reproducible, for experiments and tests only."""

    mode = "seeded"

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.seed = int(seed)
        self._rng = np.random.Generator(np.random.PCG64(self.seed))

    @override
    def uniform(self, size: int) -> FloatArray:
        bits = self._rng.integers(0, 2**64, size=size, dtype=np.uint64, endpoint=False)
        return _uniform_from_bits(bits)

    def spawn(self, n: int) -> list[SeededNoise]:
        """``n`` independent child sources (for parallel trials)."""
        seeds = self._rng.integers(0, 2**63 - 1, size=n)
        return [SeededNoise(int(s)) for s in seeds]

    @override
    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["seed"] = self.seed
        d["warning"] = "seeded randomness: reproducible, NOT FOR PUBLICATION"
        return d


class ExactNoise(SecureNoise):
    """OpenDP's exact samplers for additive Laplace and Gaussian noise.

    OpenDP measurements have a fixed scale, so cells are grouped by distinct scale and
    each group is passed through one measurement. Other noise falls back to the secure
    source and is recorded in :attr:`fallbacks`.
    """

    mode = "exact"

    def __init__(self) -> None:
        super().__init__()
        import opendp.prelude as dp

        dp.enable_features("contrib")
        self._dp = dp

    def _add(self, values: ArrayLike, scale: ArrayLike, kind: str) -> FloatArray:
        dp = self._dp
        v = np.asarray(values, dtype=np.float64)
        flat = v.ravel()
        scales = np.broadcast_to(np.asarray(scale, dtype=np.float64), v.shape).ravel()
        out = np.empty_like(flat)
        domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
        uniq, inverse = np.unique(scales, return_inverse=True)
        for j, s in enumerate(uniq):
            idx = np.flatnonzero(inverse == j)
            if kind == "L1":
                meas = dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=float(s))
            else:
                meas = dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=float(s))
            out[idx] = np.asarray(meas(flat[idx].tolist()), dtype=np.float64)
        return out.reshape(v.shape)

    @override
    def add_laplace(self, values: ArrayLike, scale: ArrayLike) -> FloatArray:
        return self._add(values, scale, "L1")

    @override
    def add_gaussian(self, values: ArrayLike, scale: ArrayLike) -> FloatArray:
        return self._add(values, scale, "L2")

    @override
    def note_fallback(self, what: str) -> None:
        self.fallbacks.add(what)


def make_noise_source(mode: str = "secure", seed: int | None = None) -> NoiseSource:
    """Build a noise source. ``seed`` implies seeded mode; seeded mode requires a seed."""
    if seed is not None:
        if mode not in ("secure", "seeded"):
            raise ValueError(f"a seed cannot be combined with random mode {mode!r}")
        return SeededNoise(seed)
    if mode == "secure":
        return SecureNoise()
    if mode == "exact":
        return ExactNoise()
    if mode == "seeded":
        raise ValueError("seeded mode needs a seed (--seed S)")
    raise ValueError(f"unknown random mode {mode!r}; expected 'secure', 'exact' or 'seeded'")
