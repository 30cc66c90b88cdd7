"""An independent oracle for the sampling layer: OpenDP's float-safe samplers.

OpenDP's Laplace and Gaussian measurements sample the exact continuous laws (with their
own, different, exact arithmetic). Rounded to the grid, their outputs follow the same
law as eree's rounded draws, so a two-sample χ² test on the grid cells must not tell
them apart — and must tell eree at the true scale from OpenDP at 1.3× the scale (power).
OpenDP is slow (≈ 40–130 µs per draw here), so the samples are modest and the test is
a second opinion next to the exact-law χ² tests (test_sampling_laws.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from eree.mechanisms.noise import SeededNoise
from eree.mechanisms.sampling import additive

dp = pytest.importorskip("opendp.prelude")
dp.enable_features("contrib")

N = 20_000
P_FAIL = 1e-6  # false alarm of a correct sampler


def _opendp(kind: str, scale: float, n: int) -> np.ndarray:
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    if kind == "laplace":
        meas = dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=scale)
    else:
        meas = dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=scale)
    return np.asarray(meas([0.0] * n), dtype=np.float64)


def _two_sample_p(a: np.ndarray, b: np.ndarray) -> float:
    """χ² homogeneity test on the grid values, cells pooled to expected counts ≥ 20."""
    values, inv = np.unique(np.concatenate([a, b]), return_inverse=True)
    counts = np.zeros((2, values.size))
    np.add.at(counts[0], inv[: a.size], 1)
    np.add.at(counts[1], inv[a.size :], 1)
    # pool neighbouring grid values (in order) until each pooled cell holds ≥ 40 draws
    pooled, cur = [], np.zeros(2)
    for col in counts.T:
        cur = cur + col
        if cur.sum() >= 40:
            pooled.append(cur)
            cur = np.zeros(2)
    if cur.sum():
        pooled[-1] = pooled[-1] + cur
    table = np.array(pooled).T
    return float(stats.chi2_contingency(table)[1])


@pytest.mark.parametrize(
    ("kind", "scale", "grid"),
    [("laplace", 0.7, 1.0), ("laplace", 3.0, 0.25), ("gaussian", 2.0, 1.0)],
)
def test_rounded_draws_match_opendp_rounded(kind, scale, grid):
    ours = additive(SeededNoise(17), np.zeros(N), kind, scale, grid)
    theirs = np.rint(_opendp(kind, scale, N) / grid) * grid
    assert _two_sample_p(ours, theirs) > P_FAIL
    # power: OpenDP at a scale 30% off is told apart from eree at the true scale
    wrong = np.rint(_opendp(kind, 1.3 * scale, N) / grid) * grid
    assert _two_sample_p(ours, wrong) < P_FAIL
