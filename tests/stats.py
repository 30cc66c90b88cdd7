"""Statistical test helpers with tolerances derived from the sample size.

A check passes when the statistic is within ``Z_CRIT`` standard errors of its expected
value (two-sided false-alarm probability ≈ 6e-5 under the CLT) or when a KS test's
p-value exceeds ``P_MIN``. Tests call :func:`assert_detects` to prove power: the same
check must fail on data whose noise scale is off by 30%.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import stats

Z_CRIT = 4.0
P_MIN = 1e-4


def z_score(sample: np.ndarray, expected_mean: float, expected_sd: float) -> float:
    """(mean − expected_mean) / (expected_sd/√N), the CLT z-score of a sample mean."""
    sample = np.asarray(sample, dtype=float)
    return float((sample.mean() - expected_mean) / (expected_sd / np.sqrt(sample.size)))


def mean_matches(sample: np.ndarray, expected_mean: float, expected_sd: float) -> bool:
    return abs(z_score(sample, expected_mean, expected_sd)) < Z_CRIT


def ks_matches(sample: np.ndarray, cdf: Callable[[np.ndarray], np.ndarray]) -> bool:
    return bool(stats.kstest(np.asarray(sample, dtype=float), cdf).pvalue > P_MIN)


def assert_mean(sample: np.ndarray, expected_mean: float, expected_sd: float) -> None:
    z = z_score(sample, expected_mean, expected_sd)
    assert abs(z) < Z_CRIT, f"sample mean off by z = {z:.2f} standard errors"


def assert_ks(sample: np.ndarray, cdf: Callable[[np.ndarray], np.ndarray]) -> None:
    p = stats.kstest(np.asarray(sample, dtype=float), cdf).pvalue
    assert p > P_MIN, f"KS test rejects the distribution (p = {p:.2e})"


def assert_detects(check: Callable[[np.ndarray], bool], wrong_sample: np.ndarray) -> None:
    """Power check: ``check`` must reject a sample drawn with the wrong scale."""
    assert not check(wrong_sample), "the test does not detect a 30% error in the noise scale"
