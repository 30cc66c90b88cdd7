"""Metrics of docs/design.md#evaluation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import rankdata, spearmanr

from eree.evaluate.metrics import (
    ALL,
    POPULATION_BINS,
    abs_error,
    average_l1,
    average_ranks,
    l1_per_cell,
    l1_ratio,
    mean_spearman,
    mse,
    relative_abs_error,
    share_within,
    signed_difference_quartiles,
    spearman_rows,
    stratified_mean,
    stratum_of,
)

LABELS = [b[2] for b in POPULATION_BINS]


def test_population_bins_are_left_closed():
    pop = np.array([0, 99.9, 100, 9_999, 10_000, 99_999, 100_000, 5e6])
    assert stratum_of(pop).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert LABELS == ["0-100", "100-10k", "10k-100k", "100k+"]
    with pytest.raises(ValueError):
        stratum_of(np.array([-1.0]))


def test_l1_and_ratio():
    truth = np.array([10.0, 0.0, 5.0])
    noisy = np.array([[11.0, 1.0, 5.0], [9.0, -3.0, 8.0]])
    assert np.allclose(abs_error(noisy, truth), [[1, 1, 0], [1, 3, 3]])
    assert np.allclose(l1_per_cell(noisy, truth), [1, 2, 1.5])
    assert average_l1(noisy, truth) == pytest.approx(9 / 6)
    assert l1_ratio(3.0, 1.5) == 2.0
    assert math.isnan(l1_ratio(1.0, 0.0))
    assert np.allclose(relative_abs_error(noisy[0], truth), [1 / 11, 1.0, 0.0])
    assert mse(noisy, truth) == pytest.approx((1 + 1 + 0 + 1 + 9 + 9) / 6)
    q = signed_difference_quartiles(noisy, truth)
    assert q[1] == pytest.approx(np.median([1, 1, 0, -1, -3, 3]))


def test_stratified_mean():
    v = np.array([1.0, 2.0, 3.0, 10.0])
    strata = np.array([0, 1, 1, 3])
    out = stratified_mean(v, strata, LABELS)
    assert list(out) == [ALL, *LABELS]
    assert out[ALL] == (4.0, 4)
    assert out["100-10k"] == (2.5, 2)
    assert math.isnan(out["10k-100k"][0]) and out["10k-100k"][1] == 0


def test_ranks_and_spearman_match_scipy_with_ties():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 6, size=(5, 40)).astype(float)
    b = rng.normal(size=(5, 40)) + a
    assert np.allclose(average_ranks(a), rankdata(a, axis=1))
    r = spearman_rows(a, b)
    ref = [spearmanr(a[i], b[i]).statistic for i in range(5)]
    assert np.allclose(r, ref)
    # a vector is compared with every row
    r1 = spearman_rows(b, a[0])
    assert np.allclose(r1, [spearmanr(b[i], a[0]).statistic for i in range(5)])
    assert mean_spearman(b, b) == pytest.approx(1.0)
    assert mean_spearman(b, -b) == pytest.approx(-1.0)
    assert math.isnan(mean_spearman(np.ones((2, 5)), b[:2, :5]))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=2, max_size=30))
def test_average_ranks_property(xs):
    a = np.array(xs, dtype=float)
    r = average_ranks(a)[0]
    assert np.allclose(r, rankdata(a))
    assert r.sum() == pytest.approx(len(xs) * (len(xs) + 1) / 2)


def test_share_within():
    assert share_within([0.1, 0.5, 0.2], [0.15, 0.2, 0.3], 0.1) == pytest.approx(2 / 3)
