"""Input noise infusion (Haney et al. §5.1): the ramp factors, the cell sums, the
small-cell law, preserved zeros, and one factor per establishment across every cell and
marginal of a release."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from eree.engine.polars.engine import PolarsEngine
from eree.errors import PrivacyParameterError
from eree.mechanisms.noise import SeededNoise
from eree.mechanisms.noise_infusion import (
    DEFAULT_S,
    DEFAULT_T,
    draw_distortion_factors,
    infuse,
    noise_infusion,
    ramp_cdf,
    ramp_magnitude_ppf,
    ramp_moments,
    ramp_pdf,
)
from eree.release.protect import protect
from eree.release.spec import load_spec
from tests.release.conftest import write_small_job_tables
from tests.stats import assert_detects, assert_ks, assert_mean, ks_matches, mean_matches

S, T = DEFAULT_S, DEFAULT_T


def test_ramp_density_integrates_to_one_and_matches_cdf():
    f = np.linspace(1 - T - 0.01, 1 + T + 0.01, 200_001)
    dens = ramp_pdf(f, S, T)
    assert np.trapezoid(dens, f) == pytest.approx(1.0, abs=1e-4)
    cdf = ramp_cdf(f, S, T)
    assert cdf[0] == 0.0 and cdf[-1] == 1.0
    assert np.all(np.diff(cdf) >= -1e-15)
    num = np.concatenate([[0.0], np.cumsum((dens[1:] + dens[:-1]) / 2 * np.diff(f))])
    assert np.max(np.abs(num - cdf)) < 1e-4
    # the ramp falls from the inner edge: density highest next to the gap
    assert ramp_pdf(1 + S, S, T) == pytest.approx(1 / (T - S))
    assert ramp_pdf(1 + T, S, T) == pytest.approx(0.0, abs=1e-9)
    assert ramp_pdf(1.0, S, T) == 0.0 and ramp_pdf(1 + T + 1e-6, S, T) == 0.0


def test_magnitude_inverse_cdf():
    u = np.array([0.0, 0.5, 1.0])
    d = ramp_magnitude_ppf(u, S, T)
    assert d[0] == pytest.approx(S) and d[-1] == pytest.approx(T)
    # CDF of delta at the median is 1/2
    assert 1 - ((T - d[1]) / (T - S)) ** 2 == pytest.approx(0.5)


def test_factors_follow_the_ramp_law_with_power():
    f = draw_distortion_factors(200_000, SeededNoise(1))
    assert f.shape == (200_000,)
    delta = np.abs(f - 1)
    assert delta.min() >= S - 1e-12 and delta.max() <= T + 1e-12
    assert_ks(f, lambda x: ramp_cdf(x, S, T))
    mean_abs, mean_sq = ramp_moments(S, T)
    assert_mean(delta, mean_abs, math.sqrt(mean_sq - mean_abs**2))
    assert_mean((f > 1).astype(float), 0.5, 0.5)  # each side carries mass 1/2
    # power: distortions 30% too large are detected by both checks
    wrong = 1 + 1.3 * (f - 1)
    assert_detects(lambda x: ks_matches(x, lambda y: ramp_cdf(y, S, T)), wrong)
    sd = math.sqrt(mean_sq - mean_abs**2)
    assert_detects(lambda x: mean_matches(np.abs(x - 1), mean_abs, sd), wrong)


def test_factors_for_trials_and_parameters():
    f = draw_distortion_factors(50, SeededNoise(2), s=0.1, t=0.3, trials=7)
    assert f.shape == (7, 50)
    d = np.abs(f - 1)
    assert d.min() >= 0.1 - 1e-12 and d.max() <= 0.3 + 1e-12
    for s, t in ((0.2, 0.1), (0.0, 0.1), (0.1, 1.0), (math.nan, 0.2)):
        with pytest.raises(PrivacyParameterError):
            draw_distortion_factors(3, SeededNoise(0), s=s, t=t)


def _pairs():
    # 3 establishments, 4 cells; establishment 0 spans cells 0 and 1
    cell = np.array([0, 1, 1, 2])
    est = np.array([0, 0, 1, 2])
    h = np.array([10.0, 4.0, 6.0, 1.0])
    n = np.array([10.0, 10.0, 1.0, 0.0])
    return cell, est, h, n


def test_cells_are_factor_weighted_sums():
    cell, est, h, n = _pairs()
    f = np.array([1.1, 0.9, 1.2])
    assert np.allclose(infuse(cell, est, h, f, 4), [11.0, 4.4 + 5.4, 1.2, 0.0])
    ft = np.stack([f, 2 - f])
    out = infuse(cell, est, h, ft, 4)
    assert out.shape == (2, 4)
    assert np.allclose(out[1], [9.0, 3.6 + 6.6, 0.8, 0.0])
    res = noise_infusion(n, cell, est, h, f, SeededNoise(0))
    assert res.noisy[0] == pytest.approx(11.0) and res.noisy[1] == pytest.approx(9.8)
    assert res.std is None and res.ci_low is None
    assert res.noisy[3] == 0.0  # zero stays zero


def test_zeros_stay_zero_and_positive_counts_stay_positive():
    rng = np.random.default_rng(3)
    n_est, n_cells = 300, 400
    est = np.arange(n_est)
    cell = rng.integers(0, n_cells, n_est)
    h = rng.integers(1, 40, n_est).astype(float)
    n = np.bincount(cell, weights=h, minlength=n_cells)
    assert (n == 0).sum() > 50
    f = draw_distortion_factors(n_est, SeededNoise(4), trials=25)
    out = noise_infusion(n, cell, est, h, f, SeededNoise(5)).noisy
    assert out.shape == (25, n_cells)
    assert np.all(out[:, n == 0] == 0.0)
    assert np.all(out[:, n > 0] >= 1.0)


def test_small_cell_replacement_law():
    """True counts in (0, 2.5) become a uniform draw from {1, 2}, whatever the truth."""
    k = 40_000
    n = np.where(np.arange(k) % 2 == 0, 1.0, 2.0)
    cell = np.arange(k)
    est = np.arange(k)
    f = np.full(k, 1.1)
    out = noise_infusion(n, cell, est, n, f, SeededNoise(6)).noisy
    assert set(np.unique(out)) == {1.0, 2.0}
    for truth in (1.0, 2.0):
        ones = (out[n == truth] == 1.0).astype(float)
        assert_mean(ones, 0.5, 0.5)
    # power: a law 30% off (P(1) = 0.35) is detected
    wrong = (np.random.default_rng(7).random(k // 2) < 0.35).astype(float)
    assert_detects(lambda x: mean_matches(x, 0.5, 0.5), wrong)
    # counts at or above S are never replaced; S is a parameter
    out3 = noise_infusion(np.array([3.0]), [0], [0], [3.0], np.array([1.1]), SeededNoise(0))
    assert out3.noisy[0] == pytest.approx(3.3)
    out5 = noise_infusion(np.array([3.0]), [0], [0], [3.0], np.array([1.1]), SeededNoise(0),
                          small_cell=5.0)  # fmt: skip
    assert out5.noisy[0] in {1.0, 2.0, 3.0, 4.0, 5.0}
    with pytest.raises(PrivacyParameterError):
        noise_infusion(np.array([3.0]), [0], [0], [3.0], np.array([1.1]), SeededNoise(0),
                       small_cell=0.5)  # fmt: skip


SPEC = """
name = "small-ni"
[data]
kind = "eree"
workplace = "data/workplace.parquet"
worker = "data/worker.parquet"
job = "data/job.parquet"
[privacy]
definition = "none"
[[query]]
name = "by_sex"
by = ["tract", "naics_sector", "ownership", "sex"]
mechanism = "noise_infusion"
[[query]]
name = "by_age"
by = ["tract", "naics_sector", "ownership", "age"]
mechanism = "noise_infusion"
[[query]]
name = "by_establishment_attributes"
by = ["tract", "naics_sector", "ownership"]
mechanism = "noise_infusion"
[[query]]
name = "total"
by = []
mechanism = "noise_infusion"
"""


@pytest.fixture
def ni_release(tmp_path: Path):
    write_small_job_tables(tmp_path / "data", seed=3)
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    plan = load_spec(spec)
    result = protect(plan, tmp_path / "out", SeededNoise(11))
    return plan, result, tmp_path


def test_one_factor_per_establishment_across_cells_and_marginals(ni_release):
    """Through the release path: every cell of a one-establishment combination, in every
    marginal of the release, is the true count times the same factor."""
    plan, result, root = ni_release
    from eree.data.job_tables import load_job_tables

    data = load_job_tables(plan.data)
    eng = PolarsEngine()
    wp = ["tract", "naics_sector", "ownership"]
    ratios: dict[tuple[str, ...], list[float]] = {}
    for q in ("by_sex", "by_age", "by_establishment_attributes"):
        wk = {"by_sex": ["sex"], "by_age": ["age"]}.get(q, [])
        stats = eng.cell_statistics(data, wp, wk)
        pub = pl.read_parquet(root / "out" / "tables" / f"{q}.parquet")
        j = stats.join(pub, on=[*wp, *wk], how="inner")
        assert j.height == stats.height
        # zeros stay zero
        assert (j.filter(pl.col("count") == 0)["jobs"] == 0).all()
        one = j.filter(pl.col("establishments") == 1, pl.col("count") >= 3)
        for r in one.iter_rows(named=True):
            ratios.setdefault(tuple(r[k] for k in wp), []).append(r["jobs"] / r["count"])
    checked = 0
    for key, rs in ratios.items():
        if len(rs) >= 3:  # cells of at least two marginals
            assert max(rs) - min(rs) < 1e-9, key
            half = 2.0**-25  # factors are rounded to the grid 2⁻²⁴
            assert S - half <= abs(rs[0] - 1) <= T + half
            checked += 1
    assert checked >= 5
    # the output has no standard error and the manifest says there is no guarantee
    pub = pl.read_parquet(root / "out" / "tables" / "by_sex.parquet")
    assert pub["jobs_std"].null_count() == pub.height
    assert result.manifest["privacy"]["definition"] == "none"


def test_total_of_release_is_sum_over_all_establishments(ni_release):
    _, _, root = ni_release
    total = pl.read_parquet(root / "out" / "tables" / "total.parquet")["jobs"][0]
    by_est = pl.read_parquet(root / "out" / "tables" / "by_establishment_attributes.parquet")
    # every establishment's jobs are in both with the same factor; small cells aside the
    # sums agree: a small cell (true n ∈ {1, 2}, drawn 1 or 2) differs from its distorted
    # sum f·n ∈ [1 − T, 2(1 + T)] by at most max(2 − (1 − T), 2(1 + T) − 1) = 1 + 2T
    small = (by_est["jobs"] <= 2).sum()
    assert abs(by_est["jobs"].sum() - total) <= (1 + 2 * T) * small + 1e-6
