"""Noise sources: uniforms in (0,1), Laplace/Gaussian laws, modes and their manifests."""

import math

import numpy as np
import pytest
from scipy import stats as st

from eree.mechanisms.noise import (
    ExactNoise,
    SecureNoise,
    SeededNoise,
    gaussian_from_uniform,
    laplace_from_uniform,
    make_noise_source,
)
from tests.stats import assert_detects, assert_ks, ks_matches

N = 20_000


def test_seeded_is_reproducible_and_marked_not_for_publication():
    a, b = SeededNoise(7), SeededNoise(7)
    assert np.array_equal(a.uniform(100), b.uniform(100))
    assert not a.for_publication
    d = a.describe()
    assert d["mode"] == "seeded" and d["seed"] == 7 and "NOT FOR PUBLICATION" in d["warning"]


def test_secure_source_describes_no_seed():
    s = SecureNoise()
    assert s.for_publication
    assert s.describe() == {"mode": "secure", "seed": None, "fallbacks": []}


def test_uniforms_lie_strictly_inside_unit_interval():
    for src in (SeededNoise(1), SecureNoise()):
        u = src.uniform(N)
        assert u.min() > 0 and u.max() < 1
        assert_ks(u, st.uniform.cdf) if isinstance(src, SeededNoise) else None


def test_extreme_uniforms_give_finite_noise():
    from eree.mechanisms.noise import _uniform_from_bits

    u = _uniform_from_bits(np.array([0, 2**64 - 1], dtype=np.uint64))
    assert u[0] > 0 and u[1] < 1
    assert np.all(np.isfinite(laplace_from_uniform(u, 1.0)))
    assert np.all(np.isfinite(gaussian_from_uniform(u, 1.0)))


@pytest.mark.parametrize("scale", [0.5, 3.0])
def test_seeded_laplace_law_with_power_check(scale):
    noise = SeededNoise(11).add_laplace(np.zeros(N), scale)

    def check(s):
        return ks_matches(s, st.laplace(scale=scale).cdf)

    assert check(noise)
    assert_detects(check, 1.3 * noise)
    assert_detects(check, 0.7 * noise)


def test_seeded_gaussian_law_with_power_check():
    noise = SeededNoise(12).add_gaussian(np.zeros(N), 2.0)

    def check(s):
        return ks_matches(s, st.norm(scale=2.0).cdf)

    assert check(noise)
    assert_detects(check, 1.3 * noise)


def test_secure_laplace_law():
    noise = SecureNoise().add_laplace(np.zeros(N), 1.0)
    # secure randomness cannot be seeded: use a very small false-alarm level
    assert st.kstest(noise, st.laplace.cdf).pvalue > 1e-7


def test_per_cell_scales_are_applied_elementwise():
    scales = np.where(np.arange(N) % 2 == 0, 1.0, 10.0)
    noise = SeededNoise(3).add_laplace(np.zeros(N), scales)
    assert_ks(noise[::2], st.laplace(scale=1.0).cdf)
    assert_ks(noise[1::2], st.laplace(scale=10.0).cdf)


def test_exact_mode_uses_opendp_and_has_the_right_law():
    src = ExactNoise()
    x = src.add_laplace(np.full(3000, 5.0), np.where(np.arange(3000) < 1500, 1.0, 2.0))
    assert st.kstest(x[:1500] - 5, st.laplace(scale=1.0).cdf).pvalue > 1e-7
    assert st.kstest(x[1500:] - 5, st.laplace(scale=2.0).cdf).pvalue > 1e-7
    g = src.add_gaussian(np.zeros(2000), 3.0)
    assert st.kstest(g, st.norm(scale=3.0).cdf).pvalue > 1e-7
    assert src.describe()["mode"] == "exact"


def test_make_noise_source_modes():
    assert isinstance(make_noise_source(), SecureNoise)
    assert isinstance(make_noise_source(seed=1), SeededNoise)
    assert isinstance(make_noise_source("exact"), ExactNoise)
    with pytest.raises(ValueError, match="needs a seed"):
        make_noise_source("seeded")
    with pytest.raises(ValueError, match="unknown random mode"):
        make_noise_source("quantum")
    assert math.isfinite(make_noise_source(seed=2).uniform(1)[0])
