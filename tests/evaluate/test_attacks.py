"""The §5.2 attacks: they succeed against input noise infusion and fail against the formal
mechanisms."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from eree.data.job_tables import JobTables
from eree.data.schema import WORKER_DOMAINS
from eree.evaluate.attacks import run_attacks

FORMAL = ("log_laplace", "smooth_gamma", "smooth_laplace", "laplace", "truncated_laplace(theta=50)")
ERE = ("log_laplace", "smooth_gamma", "smooth_laplace")


@pytest.fixture(scope="module")
def one_establishment_data() -> JobTables:
    """120 establishments, each alone in its tract; sizes 20–400. Every second one has
    exactly one worker with a bachelor's degree (E4); the others have none or several."""
    rng = np.random.default_rng(42)
    n = 120
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
    sex = rng.choice(["M", "F"], m)
    age = rng.choice(["A01", "A02", "A03"], m)
    edu = rng.choice(["E1", "E2", "E3"], m).astype(object)
    first = np.r_[0, np.cumsum(sizes)[:-1]]
    edu[first[::2]] = "E4"  # exactly one E4 worker in even establishments
    odd = first[1::2]
    edu[odd] = "E4"
    edu[odd + 1] = "E4"  # two in odd ones
    jobs = pl.DataFrame(
        {
            "workplace_id": [ids[i] for i in wid],
            "sex": sex.tolist(),
            "age": age.tolist(),
            "education": edu.tolist(),
        }
    )
    domains = {a: WORKER_DOMAINS[a] for a in ("sex", "age", "education")}
    return JobTables(wp, jobs, domains)


@pytest.fixture(scope="module")
def audit(one_establishment_data):
    return run_attacks(one_establishment_data, alpha=0.1, epsilon=1.0, trials=10, seed=3)


def test_every_mechanism_is_attacked(audit):
    t = audit.table()
    assert set(t["attack"]) == {"shape", "size", "zeros"}
    assert set(t["mechanism"]) == {"noise_infusion", *FORMAL}
    targets = dict(zip(t["attack"], t["targets"], strict=False))
    assert targets["zeros"] == 60
    assert targets["shape"] >= 50
    assert audit.meta["skipped"] == {}


#: published counts are rounded to the grid 1, so a formal mechanism publishes a cell
#: exactly with its own probability P(|noise| < ½) ≤ 1 − e^{−ε/2} (Lap(1/ε), the least noise
#: of the formal mechanisms at ε = 1 in the audit); an exact pattern over ≥ 2 cells (all
#: proportions, or ≥ 2 preserved zeros) has probability at most its square
EXACT_BY_CHANCE = (1 - math.exp(-1.0 / 2)) ** 2


def test_shape_disclosure(audit):
    assert audit.success("shape", "noise_infusion") == 1.0
    for m in FORMAL:
        assert audit.success("shape", m) <= EXACT_BY_CHANCE, m
    ex = audit.examples["shape_and_size"]
    assert np.allclose(ex["recovered_share"], ex["true_share"], atol=1e-12)


def test_size_and_cells_from_one_known_cell(audit):
    assert audit.success("size", "noise_infusion") == 1.0
    ni = next(o for o in audit.outcomes if o.attack == "size" and o.mechanism == "noise_infusion")
    assert ni.detail["all_cells_reconstructed"] == 1.0
    ex = audit.examples["shape_and_size"]
    assert np.allclose(ex["reconstructed_from_known_cell"], ex["true"], atol=1e-6)
    for m in ERE:
        assert audit.success("size", m) < 0.1, m
    # node-DP drops the big establishments entirely
    assert audit.success("size", "truncated_laplace(theta=50)") < 0.05


def test_preserved_zeros(audit):
    assert audit.success("zeros", "noise_infusion") == 1.0
    ni = next(o for o in audit.outcomes if o.attack == "zeros" and o.mechanism == "noise_infusion")
    assert ni.detail["share_with_one_nonzero_cell"] == 1.0
    for m in FORMAL:
        o = next(o for o in audit.outcomes if o.attack == "zeros" and o.mechanism == m)
        assert o.detail["share_with_one_nonzero_cell"] <= EXACT_BY_CHANCE
        assert o.success_rate < 0.6, m
        assert o.bound is not None and o.success_rate <= o.bound + 0.1, m
    ex = audit.examples["zeros"]
    assert ((ex["true"] == 0) == (ex["published"] == 0)).all()


def test_audit_is_reproducible(one_establishment_data):
    a = run_attacks(one_establishment_data, trials=2, seed=9, attacks=("zeros",))
    b = run_attacks(one_establishment_data, trials=2, seed=9, attacks=("zeros",))
    assert a.table().equals(b.table())
    assert set(a.table()["attack"]) == {"zeros"}


@pytest.mark.slow
@pytest.mark.shared_data
def test_attacks_on_the_pennsylvania_dataset(shared_data):
    from eree.evaluate.datasets import load_dataset

    ds = load_dataset(wac=shared_data / "lodes" / "pa_wac_S000_JT00_2015.csv.gz", seed=1)
    res = run_attacks(ds, alpha=0.1, epsilon=1.0, trials=2, seed=0)
    for attack in ("shape", "size", "zeros"):
        assert res.success(attack, "noise_infusion") == 1.0
    for m in ERE:
        assert res.success("shape", m) == 0.0
        assert res.success("size", m) < 0.2
        assert res.success("zeros", m) < 0.4
