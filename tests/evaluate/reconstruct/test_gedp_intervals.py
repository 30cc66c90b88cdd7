"""A GEDP release carries its cells' standard errors into the interval audit.

Expectations from the mechanisms' laws: a pnc answer is a Gaussian draw around the true
(unclipped) sum with the published std (noise and the grid's rounding variance), so over
many releases z = (answer − x)/std has E[z²] = 1; a cell's own band is the central 95%
band of N(estimate, std²); the interval audit only narrows bands.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy.stats import norm

from eree.evaluate.reconstruct import interval_audit
from eree.evaluate.reconstruct.release import from_linked_tables
from eree.evaluate.suppression_compare import TABLE7_MU, gedp_cell_release
from eree.suppression import qcew_tables
from tests.suppression.helpers import random_qcew

MU = {q: (m[0] * 4, m[1] * 4) for q, m in TABLE7_MU.items()}


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    return random_qcew(3, 300).with_columns(pl.col("m1emp").alias("m3emp"))


def test_pnc_cells_standard_errors_are_the_spread_of_their_answers(frame: pl.DataFrame) -> None:
    tables = qcew_tables(frame, ["m3emp"])
    x = tables.values("m3emp")
    codes = tables.cells.get_column("table_code").to_numpy()
    # QCEW aggregation levels answered by one pnc query each: state and county totals,
    # state and county × ownership × NAICS-5
    pnc = np.isin(codes, ["50", "70", "57", "77"])
    z2 = []
    for seed in range(20):
        est, sd = gedp_cell_release(frame, tables, ["m3emp"], seed=seed, mu=MU)["m3emp"]
        z2.append(((est[pnc] - x[pnc]) / sd[pnc]) ** 2)
    z = np.concatenate(z2)
    n = z.size
    assert n >= 200
    # E[z²] = 1; sd of the mean of n χ²₁ draws is √(2/n): 4 of them
    assert abs(z.mean() - 1.0) < 4 * np.sqrt(2.0 / n)
    # power: stds 30% off in either direction would be seen
    for k in (0.7, 1.3):
        assert abs((z / k**2).mean() - 1.0) > 4 * np.sqrt(2.0 / n)


def test_the_reader_gives_each_cell_its_gaussian_band_and_the_audit_narrows_it(
    frame: pl.DataFrame,
) -> None:
    tables = qcew_tables(frame, ["m3emp"])
    est, sd = gedp_cell_release(frame, tables, ["m3emp"], seed=1, mu=MU)["m3emp"]
    pub = from_linked_tables(tables, np.zeros(tables.n_cells, bool), "m3emp", estimate=est, std=sd)
    assert pub.status_counts() == {"noisy": tables.n_cells}
    n = tables.n_cells
    level = 1.0 - 0.05 / n  # simultaneous bands (Bonferroni): jointly consistent
    ia = interval_audit(pub, level=level)
    q = norm.ppf(1.0 - 0.025 / n) * sd
    inside = est - q > 0  # not clipped at 0
    assert np.allclose(ia.own_upper - est, q)
    assert np.allclose((ia.own_upper - ia.own_lower)[inside], 2 * q[inside])
    assert np.all(ia.lower >= ia.own_lower - 1e-6) and np.all(ia.upper <= ia.own_upper + 1e-6)
    assert ia.stats["inconsistent_components"] == 0
    assert ia.narrowed.sum() > 0 and ia.summary()["noise_bands"]
    x = tables.values("m3emp")
    assert np.all((ia.lower <= x + 1e-6) & (x <= ia.upper + 1e-6))
