"""`consistent = true` means additive: every released pair adds up in every release.

Black-box through ``protect`` on the lattice of issue 39 (county, tract, tract × industry,
tract × sex, tract × industry × sex × age): the published tables are read back and every
released (finer, coarser) pair is checked by an independent group-by of the finer table
by the coarser one's keys (county from tract through the public workplace file). A
marginal the never-worse guard does not trust is *held* at its own values (clamped at 0,
rounded) and the others adapt to it; when two such marginals are joined by released
pairs, the one whose own values carry the smaller total variance is held.
"""

import json

import numpy as np
import polars as pl
import pytest

from eree.mechanisms.noise import SeededNoise
from eree.postprocess.hierarchy import refines
from eree.release.protect import protect
from eree.release.spec import load_spec
from tests.release.test_publication import _spec, _write_nested

LATTICE = {
    "county": ["county"],
    "tract": ["tract"],
    "tract_industry": ["tract", "naics_sector"],
    "tract_sex": ["tract", "sex"],
    "tract_industry_sex_age": ["tract", "naics_sector", "sex", "age"],
}
#: tract × sex more precise per cell than the marginals that could inform it: the guard
#: predicts post-processing makes it materially worse in every seed below (held), and the
#: previous code, which kept its own values, broke two or three pairs in every seed
MECHS = {
    "county": ("smooth_laplace", 1.0),
    "tract": ("smooth_laplace", 1.0),
    "tract_industry": ("smooth_laplace", 1.0),
    "tract_sex": ("log_laplace", 50.0),
    "tract_industry_sex_age": ("smooth_laplace", 3.0),
}
POST = "consistent = true\nnonnegative = true\ninteger = true\n"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    r = tmp_path_factory.mktemp("additive")
    _write_nested(r / "data", seed=3)
    return r


def _release(root, post, mechs, seed, tag):
    spec = root / f"{tag}.toml"
    spec.write_text(_spec(post, LATTICE, mechs))
    out = root / f"{tag}{seed}"
    protect(load_spec(spec), out, SeededNoise(seed))
    tables = {n: pl.read_parquet(out / "tables" / f"{n}.parquet") for n in LATTICE}
    return tables, json.loads((out / "manifest.json").read_text())


def _non_additive(root, tables):
    """Every released pair (finer, coarser) whose cells do not add up: (child, parent, cells)."""
    frame = pl.read_parquet(root / "data" / "workplace.parquet").select("tract", "county")
    frame = frame.unique()
    bad, pairs = [], 0
    for child, cby in LATTICE.items():
        for parent, pby in LATTICE.items():
            if not refines(cby, pby):
                continue
            pairs += 1
            t = tables[child]
            if "county" in pby and "county" not in cby:
                t = t.join(frame, on="tract", how="left")
            agg = t.group_by(pby).agg(pl.col("jobs").sum().alias("sum"))
            j = (
                tables[parent]
                .join(agg, on=pby, how="left")
                .with_columns(pl.col("sum").fill_null(0))
            )
            wrong = int((j["jobs"] != j["sum"]).sum())
            if wrong:
                bad.append((child, parent, wrong))
    return bad, pairs


#: the same with tract × industry the doubted one: it has more cells than tract × sex, so
#: the lattice's controlled rounding must put a held marginal's cells first to keep them
DOUBTED = {
    "tract_sex": MECHS,
    "tract_industry": MECHS
    | {"tract_sex": ("smooth_laplace", 2.0), "tract_industry": ("log_laplace", 50.0)},
}


@pytest.mark.parametrize("doubted", list(DOUBTED))
def test_every_released_pair_of_the_lattice_adds_up(root, doubted):
    mechs = DOUBTED[doubted]
    held = 0
    for seed in (0, 1, 2):
        tables, manifest = _release(root, POST, mechs, seed, f"lat{doubted}")
        bad, pairs = _non_additive(root, tables)
        assert pairs == 9  # county ⊂ 4, tract ⊂ 3, tract × industry and × sex ⊂ the finest
        assert bad == [], seed
        pp = manifest["postprocess"]
        assert pp["additivity"]["pairs"] == 9 and pp["additivity"]["largest_discrepancy"] == 0
        for t in tables.values():
            assert t["jobs"].dtype == pl.Int64
            assert t["jobs"].min() >= 0
        q = {x["name"]: x for x in manifest["queries"]}
        if "held" not in pp:
            continue
        held += 1
        assert list(pp["held"]) == [doubted]
        # the held marginal publishes its own values, clamped at 0 and rounded cell by cell
        raw, _ = _release(root, "nonnegative = false\n", mechs, seed, f"raw{doubted}")
        own = np.maximum(np.rint(raw[doubted]["jobs"].to_numpy()), 0)
        np.testing.assert_array_equal(tables[doubted]["jobs"].to_numpy(), own)
        assert "held as an invariant" in q[doubted]["uncertainty"]["jobs"]
        assert "held as an invariant" not in q["tract"]["uncertainty"]["jobs"]
    assert held == 3  # not vacuous: the doubted marginal was held


def test_two_doubted_marginals_joined_by_pairs_hold_the_one_of_least_variance(root):
    # county and tract × sex both far more precise than what could inform them, with
    # Log-Laplace, which publishes each cell's std: at most one can be held; the one whose
    # own values have the smaller Σ std² (it imposes the least noise on the common
    # coarsening) is held, the other publishes the solution, which adds up to it. (The
    # release also compares the configurations' predicted harm, which agrees here: with
    # the variance order reversed in choose_held this test still passes; the order is
    # checked in tests/postprocess/test_guard_hold.py)
    mechs = MECHS | {"county": ("log_laplace", 200.0), "tract_sex": ("log_laplace", 60.0)}
    for seed in (1,):
        tables, manifest = _release(root, POST, mechs, seed, "two")
        raw, _ = _release(root, "nonnegative = false\n", mechs, seed, "tworaw")
        pp = manifest["postprocess"]
        before = pp["never_worse"]["predicted_before_holding"]
        doubted = {n for n, p in before.items() if p["difference"] > 2 * p["difference_se"]}
        assert {"county", "tract_sex"} <= doubted  # not vacuous: both flagged
        total_var = {n: float((raw[n]["jobs_std"] ** 2).sum()) for n in ("county", "tract_sex")}
        want = min(total_var, key=total_var.__getitem__)
        other = ({"county", "tract_sex"} - {want}).pop()
        assert list(pp["held"]) == [want]
        assert other in pp["flagged_not_held"]
        assert _non_additive(root, tables)[0] == []
        own = np.maximum(np.rint(raw[want]["jobs"].to_numpy()), 0)
        np.testing.assert_array_equal(tables[want]["jobs"].to_numpy(), own)


def test_without_rounding_the_pairs_add_up_to_the_solver_tolerance(root):
    mechs = MECHS | {"county": ("log_laplace", 200.0), "tract_sex": ("log_laplace", 60.0)}
    tables, manifest = _release(root, "consistent = true\nnonnegative = true\n", mechs, 1, "real")
    frame = pl.read_parquet(root / "data" / "workplace.parquet").select("tract", "county")
    assert manifest["postprocess"]["additivity"]["largest_discrepancy"] <= 1e-6 * 1e5
    t = tables["tract"].join(frame.unique(), on="tract")
    agg = t.group_by("county").agg(pl.col("jobs").sum())
    j = tables["county"].join(agg, on="county", suffix="_sum")
    total = float(tables["county"]["jobs"].sum())
    assert float((j["jobs"] - j["jobs_sum"]).abs().max()) <= 1e-6 * max(total, 1.0)


def test_a_lattice_solved_by_geographic_unit_publishes_the_values_of_one_solve(root, monkeypatch):
    # every marginal of the lattice determines the county, so no released pair
    # joins two counties: solved one county at a time (every county a block), each cell
    # gets the value of the whole solve (to the least squares' tolerance), and with
    # rounding every pair still adds up
    import eree.release.publication as publication

    post = "consistent = true\nnonnegative = true\n"
    whole, m_whole = _release(root, post, MECHS, 1, "whole")
    monkeypatch.setattr(publication, "BLOCK_CELLS", 1)
    parts, m_parts = _release(root, post, MECHS, 1, "parts")
    counties = whole["county"].height
    assert counties >= 3
    assert "blocks" not in m_whole["postprocess"]
    assert m_parts["postprocess"]["blocks"].startswith(
        f"solved in {counties} independent blocks of county units"
    )
    same = m_whole["postprocess"].get("held") == m_parts["postprocess"].get("held")
    assert same  # the same decision (not vacuous)
    if same:
        for n in LATTICE:
            np.testing.assert_allclose(
                parts[n]["jobs"].to_numpy(), whole[n]["jobs"].to_numpy(), rtol=1e-6, atol=1e-6
            )
    tables, manifest = _release(root, POST, MECHS, 1, "partsint")
    assert "blocks" in manifest["postprocess"]
    assert _non_additive(root, tables) == ([], 9)
