"""The report's odds bound of a μ guarantee, at every μ a spec may state (up to 10⁶).

ε(μ) solves δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2) = δ (Dong, Roth & Su 2022,
Corollary 2.13); the check recomputes δ at the returned ε in 50-digit arithmetic (mpmath),
where e^ε cannot overflow. A μ of 31 (ε ≈ 627) once overflowed ``math.exp`` and crashed the
release report after the tables were written.
"""

from __future__ import annotations

import mpmath
import pytest

from eree.release.report_words import ODDS_DELTA, epsilon_of_mu

mpmath.mp.dps = 50


def _delta(eps: float, mu: float) -> mpmath.mpf:
    e, m = mpmath.mpf(eps), mpmath.mpf(mu)
    return mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 2.3, 10.0, 31.0, 100.0, 1e4, 1e6])
def test_epsilon_of_mu_solves_the_tradeoff_at_every_mu(mu):
    eps = epsilon_of_mu(mu)
    assert _delta(eps, mu) <= ODDS_DELTA * (1 + 1e-6)  # ε is an upper end: δ(ε) ≤ δ
    assert _delta(eps * (1 - 1e-6), mu) > ODDS_DELTA * (1 - 1e-3)  # and a tight one
