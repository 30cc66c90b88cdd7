"""Noise sources: uniformly random 64-bit words, exact integers, modes and their manifests."""

import numpy as np
import pytest
from scipy import stats as st

from eree.mechanisms.noise import SecureNoise, SeededNoise, make_noise_source

N = 20_000


def test_seeded_is_reproducible_and_marked_not_for_publication():
    a, b = SeededNoise(7), SeededNoise(7)
    assert np.array_equal(a.bits(100), b.bits(100))
    assert not a.for_publication
    d = a.describe()
    assert d["mode"] == "seeded" and d["seed"] == 7 and "NOT FOR PUBLICATION" in d["warning"]


def test_secure_source_describes_no_seed():
    s = SecureNoise()
    assert s.for_publication
    d = s.describe()
    assert d["mode"] == "secure" and d["seed"] is None and "float-safe" in d["sampler"]


@pytest.mark.parametrize("src", [SeededNoise(1), SecureNoise()], ids=["seeded", "secure"])
def test_words_are_uniform_bit_by_bit(src):
    w = src.bits(N)
    assert w.dtype == np.uint64 and w.shape == (N,)
    ones = np.array([((w >> np.uint64(b)) & np.uint64(1)).sum() for b in range(64)])
    # each bit is Bernoulli(½): 6 sd around N/2 (a stuck bit is N/2 away)
    assert np.all(np.abs(ones - N / 2) < 6 * np.sqrt(N / 4))
    assert len(np.unique(w)) == N  # 64-bit words do not repeat by chance


@pytest.mark.parametrize("high", [1, 2, 3, 7, 2**40 + 3])
def test_integers_are_exactly_uniform(high):
    x = SeededNoise(5).integers(high, N)
    assert x.min() >= 0 and x.max() < high
    if high <= 7:  # χ² against the uniform law on {0, …, high−1}
        counts = np.bincount(x, minlength=high)
        if high > 1:
            assert st.chisquare(counts).pvalue > 1e-6
        biased = np.bincount(np.minimum(x, high - 2), minlength=high) if high > 2 else None
        if biased is not None:  # power: a folded top value is detected
            assert st.chisquare(biased).pvalue < 1e-6


def test_make_noise_source_modes():
    assert isinstance(make_noise_source(), SecureNoise)
    assert isinstance(make_noise_source(seed=1), SeededNoise)
    with pytest.raises(ValueError, match="retired"):
        make_noise_source("exact")
    with pytest.raises(ValueError, match="needs a seed"):
        make_noise_source("seeded")
    with pytest.raises(ValueError, match="unknown random mode"):
        make_noise_source("quantum")
