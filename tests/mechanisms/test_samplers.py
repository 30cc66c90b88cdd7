"""The Smooth Gamma noise Z with density (√2/π)/(1+z⁴)."""

import math

import numpy as np
from scipy import integrate

from eree.mechanisms.noise import SecureNoise, SeededNoise
from eree.mechanisms.noise_laws import LAWS
from eree.mechanisms.samplers import smooth_gamma_cdf, smooth_gamma_density
from tests.stats import assert_detects, assert_ks, assert_mean, ks_matches, mean_matches

N = 40_000


def smooth_gamma_standard(source, n):
    """The sampling layer's unrounded Smooth Gamma draws (within their certified bounds)."""
    z, err, _ = LAWS["smooth_gamma"].fast(source, n)
    assert np.all(err[np.isfinite(err)] < 1e-6)
    return z


def test_density_is_normalised_with_unit_variance_and_mean_abs_one_over_root2():
    # docs/errata.md: the paper's 2.2 and 1.57 are unnormalised integrals
    mass = integrate.quad(smooth_gamma_density, -np.inf, np.inf)[0]
    var = integrate.quad(lambda z: z * z * smooth_gamma_density(z), -np.inf, np.inf)[0]
    mabs = 2 * integrate.quad(lambda z: z * smooth_gamma_density(z), 0, np.inf)[0]
    assert math.isclose(mass, 1.0, rel_tol=1e-9)
    assert math.isclose(var, 1.0, rel_tol=1e-7)
    assert math.isclose(mabs, 1 / math.sqrt(2), rel_tol=1e-9)


def test_cdf_matches_numerical_integral():
    for z in (-30.0, -2.0, -0.3, 0.0, 0.7, 1.0, 5.0, 100.0):
        num = 0.5 + integrate.quad(smooth_gamma_density, 0.0, z, limit=200)[0]
        assert math.isclose(float(smooth_gamma_cdf(np.array(z))), num, abs_tol=1e-10)
    assert float(smooth_gamma_cdf(np.array(np.inf))) == 1.0


def test_sampler_law_ks_and_mean_abs_with_power_check():
    z = smooth_gamma_standard(SeededNoise(5), N)
    assert_ks(z, smooth_gamma_cdf)
    sd_abs = math.sqrt(1 - 0.5)  # E Z^2 = 1, (E|Z|)^2 = 1/2
    assert_mean(np.abs(z), 1 / math.sqrt(2), sd_abs)
    assert_detects(lambda s: ks_matches(s, smooth_gamma_cdf), 1.3 * z)
    assert_detects(lambda s: ks_matches(s, smooth_gamma_cdf), 0.7 * z)
    assert_detects(lambda s: mean_matches(np.abs(s), 1 / math.sqrt(2), sd_abs), 1.3 * z)


def test_truncated_second_moment_matches_unit_variance_density():
    # Z^2 has infinite variance, so test E[Z^2 1{|Z|<=c}] (finite variance) exactly
    c = 30.0
    z = smooth_gamma_standard(SeededNoise(6), N)
    m2 = integrate.quad(lambda t: t * t * smooth_gamma_density(t), -c, c)[0]
    m4 = integrate.quad(lambda t: t**4 * smooth_gamma_density(t), -c, c)[0]
    w = np.where(np.abs(z) <= c, z * z, 0.0)
    assert_mean(w, m2, math.sqrt(m4 - m2 * m2))
    assert m2 > 0.95  # the truncated part carries almost all of Var Z = 1


def test_secure_source_sampler():
    z = smooth_gamma_standard(SecureNoise(), 5000)
    assert z.shape == (5000,) and np.all(np.isfinite(z))
