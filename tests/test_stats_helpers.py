"""The statistical helpers themselves: they accept the truth and reject a 30% scale error."""

import numpy as np
from scipy import stats as st

from tests.stats import assert_detects, ks_matches, mean_matches, z_score


def test_z_score_of_exact_mean_is_zero():
    assert z_score(np.array([1.0, 3.0]), 2.0, 1.0) == 0.0


def test_mean_check_accepts_true_and_rejects_scaled_normal():
    rng = np.random.default_rng(1)
    x = np.abs(rng.normal(size=20_000))
    e_abs = np.sqrt(2 / np.pi)
    sd_abs = np.sqrt(1 - 2 / np.pi)
    assert mean_matches(x, e_abs, sd_abs)
    assert_detects(lambda s: mean_matches(s, e_abs, sd_abs), 1.3 * x)
    assert_detects(lambda s: mean_matches(s, e_abs, sd_abs), 0.7 * x)


def test_ks_check_accepts_true_and_rejects_scaled_laplace():
    rng = np.random.default_rng(2)
    x = rng.laplace(size=5_000)
    assert ks_matches(x, st.laplace.cdf)
    assert_detects(lambda s: ks_matches(s, st.laplace.cdf), 1.3 * x)
    assert_detects(lambda s: ks_matches(s, st.laplace.cdf), 0.7 * x)
