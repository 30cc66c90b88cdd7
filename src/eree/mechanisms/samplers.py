"""The Smooth Gamma noise law (Haney et al. Alg 2): density, CDF and constants.

Draws come from the float-safe sampling layer (:mod:`eree.mechanisms.sampling`, law
``smooth_gamma``); this module states the law itself.
"""

from __future__ import annotations

import math

import numpy as np

from eree.mechanisms.noise import FloatArray

#: Normalising constant of the Smooth Gamma density: \int 1/(1+z^4) dz = pi/sqrt(2).
SMOOTH_GAMMA_NORMALISER = math.pi / math.sqrt(2.0)
#: Rejection envelope constant M = sup f/g for f = (sqrt2/pi)/(1+z^4), g = standard Cauchy.
SMOOTH_GAMMA_ENVELOPE = (2.0 + math.sqrt(2.0)) / 2.0


def smooth_gamma_density(z: FloatArray) -> FloatArray:
    r"""Normalised density :math:`f(z) = \frac{\sqrt2}{\pi}\frac{1}{1+z^4}` (Haney et al. Alg 2).

    E[Z] = 0, Var[Z] = 1, E|Z| = 1/sqrt(2). (The paper's Lemma G quotes the unnormalised
    integrals 2.2 and 1.57; see docs/errata.md.)
    """
    z = np.asarray(z, dtype=np.float64)
    return (1.0 / SMOOTH_GAMMA_NORMALISER) / (1.0 + z**4)


def smooth_gamma_cdf(z: FloatArray) -> FloatArray:
    r"""CDF of the normalised 1/(1+z^4) density, in closed form.

    With :math:`F_0(z)=\int_0^z \frac{dt}{1+t^4}
    = \frac{1}{4\sqrt2}\ln\frac{z^2+\sqrt2 z+1}{z^2-\sqrt2 z+1}
    + \frac{1}{2\sqrt2}\left[\arctan(\sqrt2 z+1)+\arctan(\sqrt2 z-1)\right]`,
    :math:`F(z) = \tfrac12 + F_0(z)/(\pi/\sqrt2)`.
    """
    z = np.asarray(z, dtype=np.float64)
    r2 = math.sqrt(2.0)
    with np.errstate(over="ignore", invalid="ignore"):
        log_term = np.log((z * z + r2 * z + 1.0) / (z * z - r2 * z + 1.0)) / (4.0 * r2)
        atan_term = (np.arctan(r2 * z + 1.0) + np.arctan(r2 * z - 1.0)) / (2.0 * r2)
    f0 = np.where(np.isfinite(z), log_term + atan_term, np.sign(z) * SMOOTH_GAMMA_NORMALISER / 2)
    return 0.5 + f0 / SMOOTH_GAMMA_NORMALISER
