"""Haney et al. §5.2's shape and size attacks on noise infusion as special cases.

The release is the one ``eree audit noise-infusion`` attacks: the marginal
tract × sector × ownership × sex × age of data where every establishment is alone in its
tract, infused with the attack's own factors (:mod:`eree.evaluate.attacks`). It is
written in the table format with each lone establishment's cells in one ``factor``
group (:func:`infusion_frame`), and the reconstruction attacker's interval audit runs on
it. Expectations come from the paper's mathematics (published = f·true with one f per
establishment, so the shares are the true shares, and one known cell gives f and every
cell), and from the existing attack's outcome on the same release — not from the new
code.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from eree.data.job_tables import JobTables
from eree.data.schema import WORKER_DOMAINS
from eree.engine.polars.engine import PolarsEngine
from eree.evaluate.attacks import SHAPE_WORKER_ATTRIBUTES, shape_and_size
from eree.evaluate.haney import ESTABLISHMENT_ATTRIBUTES, marginal_cells
from eree.evaluate.reconstruct import from_frame, interval_audit
from eree.evaluate.reconstruct.release import infusion_frame
from eree.mechanisms.noise import SeededNoise
from eree.mechanisms.noise_infusion import (
    SMALL_CELL_LIMIT,
    NoiseInfusion,
    draw_distortion_factors,
    noise_infusion,
)

T = 0.15


@pytest.fixture(scope="module")
def release():
    """40 establishments, each alone in its tract (sizes 20–400), one infused release."""
    rng = np.random.default_rng(11)
    n = 40
    sizes = rng.integers(20, 400, n)
    ids = [f"w{i:03d}" for i in range(n)]
    wp = pl.DataFrame(
        {
            "workplace_id": ids,
            "tract": [f"t{i:03d}" for i in range(n)],
            "naics_sector": rng.choice(["23", "62"], n).tolist(),
            "ownership": ["A05"] * n,
        }
    )
    wid = np.repeat(np.arange(n), sizes)
    m = wid.size
    jobs = pl.DataFrame(
        {
            "workplace_id": [ids[i] for i in wid],
            "sex": rng.choice(["M", "F"], m).tolist(),
            "age": rng.choice(["A01", "A02", "A03"], m).tolist(),
            "education": rng.choice(["E1", "E2", "E3", "E4"], m).tolist(),
        }
    )
    data = JobTables(wp, jobs, {a: WORKER_DOMAINS[a] for a in ("sex", "age", "education")})
    cells = marginal_cells(data, PolarsEngine(), ESTABLISHMENT_ATTRIBUTES, SHAPE_WORKER_ATTRIBUTES)
    f = draw_distortion_factors(data.n_workplaces, SeededNoise(5), t=T, trials=1)
    y = noise_infusion(
        cells.n, cells.pair_cell, cells.pair_est, cells.pair_h, f, SeededNoise(6),
        small_cell=SMALL_CELL_LIMIT,
    ).noisy  # fmt: skip
    outcomes, _ = shape_and_size(cells, {NoiseInfusion.name: y}, SMALL_CELL_LIMIT)
    found = {o.attack: o for o in outcomes}
    frame = infusion_frame(
        cells.keys, y[0], cells.establishments, list(ESTABLISHMENT_ATTRIBUTES),
        t=T, small_cell=SMALL_CELL_LIMIT,
    )  # fmt: skip
    d = cells.d
    h = cells.n.reshape(-1, d)
    est = cells.establishments.reshape(-1, d)[:, 0]
    nonzero = h > 0
    # the paper's targets: one establishment, >= 2 non-empty cells, all of them >= S
    targets = np.flatnonzero(
        (est == 1) & (nonzero.sum(axis=1) >= 2) & ~np.any(nonzero & (h < SMALL_CELL_LIMIT), axis=1)
    )
    return {"frame": frame, "h": h, "d": d, "targets": targets, "found": found}


def _shape_disclosed(res, h: np.ndarray, d: int, targets: np.ndarray) -> np.ndarray:
    """Per target: every non-empty cell's share interval is the true share (to 1e-6)."""
    ok = np.zeros(targets.size, dtype=bool)
    for k, b in enumerate(targets):
        ix = np.arange(b * d, (b + 1) * d)
        nz = h[b] > 0
        share = h[b][nz] / h[b].sum()
        lo, hi = res.share_lower[ix][nz], res.share_upper[ix][nz]
        ok[k] = bool(np.all(np.abs(lo - share) <= 1e-6) and np.all(np.abs(hi - share) <= 1e-6))
    return ok


def _cells_disclosed(res, h: np.ndarray, d: int, targets: np.ndarray) -> np.ndarray:
    """Per target: every cell's interval is the one point of its true value."""
    lo = res.lower.reshape(-1, d)[targets]
    hi = res.upper.reshape(-1, d)[targets]
    return np.all((lo == h[targets]) & (hi == h[targets]), axis=1)


def _with_known_cell(frame: pl.DataFrame, h: np.ndarray, d: int, targets: np.ndarray):
    """The attacker also knows each target's largest true cell (the paper's "100 males
    aged 20–25"): that cell's range narrows to its value; its published value stays."""
    lower = frame.get_column("lower").to_numpy().copy()
    upper = frame.get_column("upper").to_numpy().copy()
    for b in targets:
        c = int(b * d + np.argmax(h[b]))
        lower[c] = upper[c] = h[b].max()
    return frame.with_columns(pl.Series("lower", lower), pl.Series("upper", upper))


def test_the_existing_attacks_succeed_on_this_release(release) -> None:
    assert release["targets"].size >= 30
    assert release["found"]["shape"].targets == release["targets"].size
    assert release["found"]["shape"].success_rate == 1.0
    assert release["found"]["size"].success_rate == 1.0
    assert release["found"]["size"].detail["all_cells_reconstructed"] == 1.0


def test_shape_attack_is_the_share_audit(release) -> None:
    h, d, targets = release["h"], release["d"], release["targets"]
    res = interval_audit(from_frame(release["frame"]))
    ok = _shape_disclosed(res, h, d, targets)
    assert ok.mean() == release["found"]["shape"].success_rate == 1.0
    # every interval holds the truth (the true values satisfy every constraint)
    lo, hi = res.lower.reshape(-1, d), res.upper.reshape(-1, d)
    assert np.all((lo <= h) & (h <= hi))
    # without a known cell, the factor is pinned only where whole numbers force it
    # (a few small establishments): the size attack needs its known cell in general
    assert _cells_disclosed(res, h, d, targets).mean() < 0.5


def test_size_attack_is_the_interval_audit_with_one_known_cell(release) -> None:
    h, d, targets = release["h"], release["d"], release["targets"]
    frame = _with_known_cell(release["frame"], h, d, targets)
    res = interval_audit(from_frame(frame))
    ok = _cells_disclosed(res, h, d, targets)
    lo, hi = res.lower.reshape(-1, d), res.upper.reshape(-1, d)
    assert np.all((lo <= h) & (h <= hi))
    size = release["found"]["size"]
    assert ok.mean() == size.detail["all_cells_reconstructed"] == 1.0
    totals_lo = res.lower.reshape(-1, d)[targets].sum(axis=1)
    totals_hi = res.upper.reshape(-1, d)[targets].sum(axis=1)
    assert np.all(totals_lo == h[targets].sum(axis=1))
    assert np.all(totals_hi == h[targets].sum(axis=1))
    assert res.summary()["factor_groups_shape_pinned"] >= targets.size


def test_the_attacker_ignoring_the_shared_factor_fails(release) -> None:
    """Weakened: the ratio rows dropped. The shares and cells are then bounded only by
    each cell's own ±t range, which pins neither."""
    h, d, targets = release["h"], release["d"], release["targets"]
    res = interval_audit(from_frame(release["frame"]), factors=False)
    assert _shape_disclosed(res, h, d, targets).mean() < 0.05
    known = from_frame(_with_known_cell(release["frame"], h, d, targets))
    res = interval_audit(known, factors=False)
    assert _cells_disclosed(res, h, d, targets).mean() < 0.05
