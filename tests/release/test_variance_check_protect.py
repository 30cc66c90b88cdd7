"""The release checks its own variance model on the published parent/child gaps (issue 39).

Black-box through ``protect`` on issue 39's lattice (county, tract, tract × industry,
tract × sex, tract × industry × sex × age; Smooth Laplace, weak ER-EE α 0.1) over data
on which the public variance model is exact: every tract has one establishment, so each
cell's largest establishment is the whole cell (x_v = n) and the model's x_v =
min(c·k^−β, 1)·n with k = 1 is n. The model's scale is then mutated by 30% (its α, so
that the noise variance it predicts above the smallest sensitivity's is × 1.3 or × 0.7)
while the mechanism's noise stays the same.

Expectations from the statistic's distribution: the check standardises its statistic by
its distribution simulated under the model, and fires beyond 3.5 standard deviations
(two-sided 0.05% where it is normal), so with the right model it fires in none of the
fixed seeds; with the model's variance 30% too high the gaps are smaller than it predicts
(z < 0, factor < 1, theory 1/√1.3 ≈ 0.88 where the floor is negligible), 30% too low
larger (z > 0, factor > 1, theory 1/√0.7 ≈ 1.20). The action rescales the model by the
measured factor, after which the check no longer fires, and every pair still adds up.
"""

import dataclasses
import json

import numpy as np
import polars as pl
import pytest

import eree.release.publication as publication
from eree.mechanisms.noise import SeededNoise
from eree.release.protect import protect
from eree.release.spec import load_spec

LATTICE = {
    "county": (["county"], 1),
    "tract": (["tract"], 1),
    "tract_ind": (["tract", "naics_sector"], 1),
    "tract_sex": (["tract", "sex"], 2),
    "tract_ind_sex_age": (["tract", "naics_sector", "sex", "age"], 3),
}
SEEDS = (0, 1, 2)


def _write(root, tracts=600, seed=0):
    """One establishment of 100–400 jobs per tract, 50 tracts per county."""
    rng = np.random.default_rng(seed)
    n = tracts
    wp = pl.DataFrame({
        "workplace_id": [f"w{i}" for i in range(n)], "state": ["42"] * n,
        "county": [f"42{i // 50:03d}" for i in range(n)],
        "tract": [f"42{i // 50:03d}{i:06d}" for i in range(n)],
        "block": [f"b{i}" for i in range(n)],
        "naics_sector": rng.choice(["11", "23", "52"], n).tolist(), "ownership": ["A05"] * n,
    })  # fmt: skip
    wid = np.repeat(wp["workplace_id"].to_numpy(), rng.integers(100, 400, n))
    m = wid.size
    worker = pl.DataFrame({
        "worker_id": [f"p{i}" for i in range(m)],
        "age": rng.choice(["A01", "A02", "A03"], m).tolist(),
        "sex": rng.choice(["M", "F"], m).tolist(),
        "race": ["A1"] * m, "ethnicity": ["A1"] * m, "education": ["E1"] * m,
        "earnings": ["E01"] * m,
    })  # fmt: skip
    job = pl.DataFrame({"worker_id": worker["worker_id"], "workplace_id": wid.tolist()})
    (root / "data").mkdir(parents=True)
    wp.write_parquet(root / "data" / "workplace.parquet")
    worker.write_parquet(root / "data" / "worker.parquet")
    job.write_parquet(root / "data" / "job.parquet")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    r = tmp_path_factory.mktemp("vcheck")
    _write(r)
    s = ('name = "vcheck"\n[data]\nworkplace = "data/workplace.parquet"\n'
         'worker = "data/worker.parquet"\njob = "data/job.parquet"\n'
         '[privacy]\ndefinition = "eree-weak"\nalpha = 0.1\n')  # fmt: skip
    for name, (by, eps) in LATTICE.items():
        s += (f'[[query]]\nname = "{name}"\nby = {json.dumps(by)}\n'
              f'mechanism = "smooth_laplace"\nepsilon = {eps}\n')  # fmt: skip
    s += "[postprocess]\nconsistent = true\nnonnegative = true\ninteger = true\n"
    (r / "spec.toml").write_text(s)
    return r


def _check(root, seed, tag):
    out = root / f"{tag}{seed}"
    with pytest.warns():  # the weak-guarantee warning of ε 8 in total
        protect(load_spec(root / "spec.toml"), out, SeededNoise(seed))
    return json.loads((out / "manifest.json").read_text())["postprocess"]


def _mutate(monkeypatch, variance_factor):
    """The public model's scale off: its predicted S (above the floor) × √factor."""
    model = publication.smooth_model

    def off(mech):
        m = model(mech)
        return None if m is None else dataclasses.replace(m, alpha=m.alpha * variance_factor**0.5)

    monkeypatch.setattr(publication, "smooth_model", off)


def test_right_model_does_not_fire(root):
    for seed in SEEDS:
        pp = _check(root, seed, "right")
        vc = pp["variance_check"]
        assert vc["fired"] is False, (seed, vc["z"])
        assert abs(vc["z"]) <= vc["threshold"] == 3.5
        assert vc["action"].startswith("none")
        # every released pair has at least 8 parent cells here (12 counties): all 9 enter
        assert len(vc["pairs"]) == 9
        assert "rescaled" not in json.dumps(pp["weights"])


@pytest.mark.parametrize("variance_factor", [1.3, 0.7])
def test_model_off_by_30_percent_fires_and_is_rescaled(root, monkeypatch, variance_factor):
    _mutate(monkeypatch, variance_factor)
    for seed in SEEDS:
        pp = _check(root, seed, f"off{variance_factor}_")
        vc = pp["variance_check"]
        assert vc["fired"] is True, (seed, vc["z"])
        # direction: a model predicting too much variance sees gaps smaller than predicted
        if variance_factor > 1:
            assert vc["z"] < -3.5 and vc["factor"] < 1.0
        else:
            assert vc["z"] > 3.5 and vc["factor"] > 1.0
        # the action: the model rescaled by the factor squared, for the weights too …
        assert vc["action"].startswith("the modelled variances")
        assert all("rescaled by the measured factor" in w for w in pp["weights"].values())
        # … after which the model describes the gaps, and every pair still adds up
        assert vc["after_rescaling"]["fired"] is False
        assert pp["additivity"]["largest_discrepancy"] == 0.0
        assert pp["additivity"]["pairs"] == 9
