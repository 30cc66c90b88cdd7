r"""Rounding to a base: deterministic, and unbiased random rounding.

* **Deterministic** (:func:`round_to_base`): the nearest multiple of ``base`` (halves
  up), so the true value lies in :math:`[v - b/2,\ v + b/2]`. Anyone can redo it, and
  overlapping tables rounded this way can often be undone by a linear program
  (:mod:`.check` measures it).
* **Unbiased random** (:func:`random_round`): with :math:`T = qb + r`,
  :math:`0 \le r < b`, publish :math:`(q+1)b` with probability :math:`r/b`, else
  :math:`qb`; :math:`E[v] = T` and the true value lies in :math:`(v - b,\ v + b)`.
  Whether an agency may use it (it is random, like noise) is a policy choice: the spec
  says which. Its randomness comes from the operating system's secure source
  (:func:`rounding_rng`); a seed is for experiments only and is said in the output.
"""

from __future__ import annotations

import secrets

import numpy as np

__all__ = ["random_round", "round_to_base", "rounding_rng"]


def rounding_rng(seed: int | None = None) -> np.random.Generator:
    """The random source of random rounding: OS entropy, or ``seed`` (experiments only)."""
    return np.random.default_rng(secrets.randbits(128) if seed is None else seed)


def round_to_base(values: np.ndarray, base: float | np.ndarray) -> np.ndarray:
    """The nearest multiple of ``base`` (halves rounded up); ``base`` > 0."""
    v = np.asarray(values, dtype=np.float64)
    b = np.asarray(base, dtype=np.float64)
    if np.any(b <= 0):
        raise ValueError("a rounding base must be positive")
    return np.floor(v / b + 0.5) * b


def random_round(
    values: np.ndarray, base: float | np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Unbiased random rounding to a multiple of ``base`` (see the module docstring)."""
    v = np.asarray(values, dtype=np.float64)
    b = np.asarray(base, dtype=np.float64)
    if np.any(b <= 0):
        raise ValueError("a rounding base must be positive")
    q = np.floor(v / b)
    r = v - q * b
    up = rng.random(v.shape) < r / b
    return (q + up) * b
