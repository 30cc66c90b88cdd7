"""The post-processed (publication-grade) variant next to the raw one in the Haney runs."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from eree.evaluate.datasets import load_dataset
from eree.evaluate.haney import POSTPROCESSED, HaneyGrid, postprocessed, run_haney
from eree.evaluate.report import reading, value

GRID = HaneyGrid(epsilons=(1.0, 4.0), alphas=(0.1,), thetas=(50,), trials=3)


@pytest.fixture(scope="module")
def w3():
    return run_haney("haney-workload3", load_dataset(seed=2, jobs=20_000), grid=GRID, seed=3)


def test_postprocessed_is_nonnegative_rounding():
    x = np.array([[-3.2, 0.4, 0.6, 7.5, 2.49]])
    np.testing.assert_array_equal(postprocessed(x), [[0.0, 0.0, 1.0, 8.0, 2.0]])


def test_each_mechanism_has_its_postprocessed_rows(w3):
    r = w3.results
    mechs = set(r["mechanism"])
    raw = {m for m in mechs if not m.endswith(POSTPROCESSED) and m != "noise_infusion"}
    assert raw and {m + POSTPROCESSED for m in raw} <= mechs
    checked = 0
    for m in ("smooth_laplace", "log_laplace", "smooth_gamma"):
        for eps in GRID.epsilons:
            a = value(r, "haney-workload3", m, "l1_ratio", alpha=0.1, epsilon=eps)
            b = value(r, "haney-workload3", m + POSTPROCESSED, "l1_ratio", alpha=0.1, epsilon=eps)
            assert np.isfinite(a) == np.isfinite(b)  # omitted together
            if not np.isfinite(a):
                continue
            checked += 1
            # both ratios are to the same noise-infusion error: the ratio of ratios is the
            # ratio of the two L1 errors
            la = value(r, "haney-workload3", m, "l1", alpha=0.1, epsilon=eps)
            lb = value(r, "haney-workload3", m + POSTPROCESSED, "l1", alpha=0.1, epsilon=eps)
            assert b / a == pytest.approx(lb / la, rel=1e-9)
    assert checked >= 2
    assert any("Post-processed" in s for s in reading(r, "haney-workload3"))
    assert r.filter(pl.col("mechanism").str.ends_with(POSTPROCESSED)).height > 0
