"""Noise sources: where the random bits come from.

Every sampling function takes its randomness as an argument; nothing in eree uses a
global RNG. A source supplies independent uniformly random 64-bit words; the one sampling
layer (:mod:`eree.mechanisms.sampling`) turns them into correctly rounded noisy values,
the same way in both modes:

* ``secure`` (the default for releases): the operating system's cryptographically secure
  generator (:func:`os.urandom`).
* ``seeded`` (experiments and tests): a seeded numpy PCG64 generator. Reproducible,
  NOT FOR PUBLICATION.
"""

from __future__ import annotations

import hashlib
import os
from abc import ABC, abstractmethod
from typing import Any

import numpy as np
from numpy.typing import NDArray
from typing_extensions import override

FloatArray = NDArray[np.float64]

#: the modes a release may ask for
RANDOM_MODES = ("secure", "seeded")


class NoiseSource(ABC):
    """A source of independent, uniformly random 64-bit words."""

    mode: str = ""

    @abstractmethod
    def bits(self, size: int) -> NDArray[np.uint64]:
        """``size`` independent uniformly random 64-bit words."""

    def integers(self, high: int, size: int) -> NDArray[np.int64]:
        """``size`` exact uniform draws from {0, …, high − 1} (rejection on whole words)."""
        if not 0 < high < 2**62:
            raise ValueError("high must lie in [1, 2**62)")
        limit = (2**64 // high) * high  # words below limit map evenly onto 0..high-1
        out = np.empty(size, dtype=np.int64)
        filled = 0
        while filled < size:
            w = self.bits(size - filled + 8)
            if limit < 2**64:
                w = w[w < np.uint64(limit)]
            take = min(w.size, size - filled)
            out[filled : filled + take] = (w[:take] % np.uint64(high)).astype(np.int64)
            filled += take
        return out

    @property
    def for_publication(self) -> bool:
        """Whether releases drawn from this source may be published (not seeded)."""
        return self.mode != "seeded"

    def order_key(self) -> bytes:
        """The secret key of the release's keyed job order (:mod:`eree.data.job_order`).

        Secure: 32 fresh bytes from the operating system, drawn once per release and never
        written. Seeded: derived from the seed (reproducible), without drawing from the
        noise stream.
        """
        return os.urandom(32)

    def describe(self) -> dict[str, Any]:
        """What the manifest records about the randomness (never the seed of a secure source)."""
        return {
            "mode": self.mode,
            "seed": None,
            "sampler": "float-safe: every noisy value is the exact mechanism's output "
            "rounded to a public grid (docs/privacy.md)",
        }


class SecureNoise(NoiseSource):
    """Words from the operating system's CSPRNG (``os.urandom``)."""

    mode = "secure"

    @override
    def bits(self, size: int) -> NDArray[np.uint64]:
        if size == 0:
            return np.empty(0, dtype=np.uint64)
        return np.frombuffer(os.urandom(8 * size), dtype=np.uint64).copy()


class SeededNoise(NoiseSource):
    """A seeded numpy PCG64 generator: reproducible, for experiments and tests only."""

    mode = "seeded"

    def __init__(self, seed: int) -> None:
        self.seed = int(seed)
        self._rng = np.random.Generator(np.random.PCG64(self.seed))

    @override
    def bits(self, size: int) -> NDArray[np.uint64]:
        return self._rng.integers(0, 2**64, size=size, dtype=np.uint64, endpoint=False)

    @override
    def order_key(self) -> bytes:
        return hashlib.sha256(f"eree job order key\x1f{self.seed}".encode()).digest()

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


def make_noise_source(mode: str = "secure", seed: int | None = None) -> NoiseSource:
    """Build a noise source. ``seed`` implies seeded mode; seeded mode requires a seed."""
    if seed is not None:
        if mode not in RANDOM_MODES:
            raise ValueError(f"a seed cannot be combined with random mode {mode!r}")
        return SeededNoise(seed)
    if mode == "secure":
        return SecureNoise()
    if mode == "seeded":
        raise ValueError("seeded mode needs a seed (--seed S)")
    if mode == "exact":
        raise ValueError(
            "random mode 'exact' was retired: every release is float-safe now, for every "
            "mechanism (docs/privacy.md); use the default 'secure'"
        )
    raise ValueError(f"unknown random mode {mode!r}; expected 'secure' or 'seeded'")
