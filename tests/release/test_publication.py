"""`[postprocess] consistent / nonnegative / integer` on ER-EE count releases.

See docs/design.md#post-processing.
"""

import json
import tomllib

import numpy as np
import polars as pl
import pytest

from eree.errors import SpecError
from eree.mechanisms.noise import SeededNoise
from eree.postprocess.hierarchy import refines
from eree.release.protect import protect
from eree.release.spec import load_spec, parse_spec

QUERIES = {
    "county": ["county"],
    "county_industry": ["county", "naics_sector"],
    "tract_industry": ["tract", "naics_sector"],
    "tract_industry_age": ["tract", "naics_sector", "age"],
    "tract_industry_age_sex": ["tract", "naics_sector", "age", "sex"],
    "tract_industry_race": ["tract", "naics_sector", "race"],
}
MECH = {
    "county": ("log_laplace", 1.0),
    "county_industry": ("smooth_gamma", 3.0),
    "tract_industry": ("smooth_laplace", 1.0),
    "tract_industry_age": ("smooth_laplace", 3.0),
    "tract_industry_age_sex": ("smooth_laplace", 6.0),
    "tract_industry_race": ("smooth_laplace", 6.0),
    "county_sex": ("smooth_laplace", 2.0),
    "county_industry_sex": ("smooth_laplace", 2.0),
}


def _write_nested(root, seed=0):
    """60 establishments, tracts nested in counties, small cells (many true zeros)."""
    rng = np.random.default_rng(seed)
    n = 60
    tract = rng.integers(0, 10, n)
    wp = pl.DataFrame({
        "workplace_id": [f"w{i}" for i in range(n)],
        "state": ["42"] * n,
        "county": [f"42{t // 4:03d}" for t in tract],
        "tract": [f"42{t // 4:03d}{t:06d}" for t in tract],
        "block": [f"b{i}" for i in range(n)],
        "naics_sector": rng.choice(["11", "23", "52"], n).tolist(),
        "ownership": ["A05"] * n,
    })  # fmt: skip
    sizes = rng.integers(1, 30, n)
    wid = np.repeat(wp["workplace_id"].to_numpy(), sizes)
    m = wid.size
    worker = pl.DataFrame({
        "worker_id": [f"p{i}" for i in range(m)],
        "age": rng.choice(["A01", "A02", "A03"], m).tolist(),
        "sex": rng.choice(["M", "F"], m).tolist(),
        "race": rng.choice(["A1", "A2", "A4"], m, p=[0.8, 0.15, 0.05]).tolist(),
        "ethnicity": ["A1"] * m, "education": ["E1"] * m, "earnings": ["E01"] * m,
    })  # fmt: skip
    job = pl.DataFrame({"worker_id": worker["worker_id"], "workplace_id": wid.tolist()})
    root.mkdir(parents=True)
    wp.write_parquet(root / "workplace.parquet")
    worker.write_parquet(root / "worker.parquet")
    job.write_parquet(root / "job.parquet")


def _spec(post: str, queries=QUERIES, mechs=None) -> str:
    s = """name = "nested"
[data]
workplace = "data/workplace.parquet"
worker = "data/worker.parquet"
job = "data/job.parquet"
[privacy]
definition = "eree-weak"
alpha = 0.1
"""
    for name, by in queries.items():
        mech, eps = (mechs or MECH)[name]
        s += f'[[query]]\nname = "{name}"\nby = {json.dumps(by)}\nmechanism = "{mech}"\n'
        s += f"epsilon = {eps}\n"
    return s + "[postprocess]\n" + post


@pytest.fixture
def nested(tmp_path):
    _write_nested(tmp_path / "data")
    return tmp_path


def _release(root, post, seed=7, tag="a", mechs=None):
    spec = root / "spec.toml"
    spec.write_text(_spec(post, mechs=mechs))
    out = root / f"out{seed}{tag}"
    protect(load_spec(spec), out, SeededNoise(seed))
    tables = {n: pl.read_parquet(out / "tables" / f"{n}.parquet") for n in QUERIES}
    return tables, json.loads((out / "manifest.json").read_text())


def _check_pairs(root, tables, queries, consistent):
    """Every released pair among ``consistent`` marginals adds up exactly (independent
    group-by of the child table by the parent's keys); returns the number of pairs."""
    frame = pl.read_parquet(root / "data" / "workplace.parquet").select("tract", "county")
    frame = frame.unique()
    pairs = 0
    for child, cby in queries.items():
        for parent, pby in queries.items():
            if not refines(cby, pby) or child not in consistent or parent not in consistent:
                continue
            pairs += 1
            t = tables[child]
            if "county" in pby and "county" not in cby:
                t = t.join(frame, on="tract", how="left")
            agg = t.group_by(pby).agg(pl.col("jobs").sum().alias("sum"))
            j = tables[parent].join(agg, on=pby, how="left")
            assert j["sum"].null_count() == 0
            assert (j["jobs"] == j["sum"]).all(), f"{child} does not add up to {parent}"
    for t in tables.values():
        assert t["jobs"].dtype == pl.Int64
        assert t["jobs"].min() >= 0
    return pairs


def test_every_released_pair_adds_up_exactly(nested):
    tables, manifest = _release(nested, "consistent = true\nnonnegative = true\ninteger = true\n")
    raw, _ = _release(nested, "nonnegative = false\n", tag="raw")  # same seed, same noise
    pp = manifest["postprocess"]
    kept = pp.get("held", {})
    # every pair adds up, the held marginals' too (they are invariants of the solve)
    pairs = _check_pairs(nested, tables, QUERIES, list(QUERIES))
    assert pairs >= 10  # the check is not vacuous
    # a marginal the guard doubted is held at its own values, clamped and rounded
    for name in kept:
        want = np.maximum(np.rint(raw[name]["jobs"].to_numpy()), 0)
        np.testing.assert_array_equal(tables[name]["jobs"].to_numpy(), want)
        q = manifest["queries"][list(QUERIES).index(name)]
        assert "own published values" in q["uncertainty"]["jobs"]
    for t in tables.values():
        assert t["jobs_ci_low"].null_count() == t.height  # raw CIs are not carried over
    assert pp["consistent"] and pp["integer"] and pp["nonnegative"]
    assert set(pp["never_worse"]["predicted"]) == set(QUERIES)
    assert "public variance model" in pp["weights"]["tract_industry"]  # the model is named
    assert pp["weights"]["county"].startswith("published variance")
    q = {x["name"]: x for x in manifest["queries"]}
    free = [n for n in QUERIES if n not in kept]
    assert "post-processed" in q[free[0]]["uncertainty"]["jobs"]


LATTICE = {
    "county": ["county"],
    "county_sex": ["county", "sex"],
    "county_industry": ["county", "naics_sector"],
    "tract_industry_age_sex": ["tract", "naics_sector", "age", "sex"],
}


def test_a_lattice_release_is_consistent_nonnegative_and_integer(nested):
    # tract × industry × age × sex refines both county × sex and county × industry
    # the finest marginal the least precise per cell: consistency helps every marginal
    mech = {"county": ("smooth_laplace", 4.0), "county_sex": ("smooth_laplace", 8.0),
            "county_industry": ("smooth_laplace", 8.0),
            "tract_industry_age_sex": ("smooth_laplace", 3.0)}  # fmt: skip
    spec = nested / "lattice.toml"
    post = "consistent = true\nnonnegative = true\ninteger = true\n"
    spec.write_text(_spec(post, LATTICE, mech))
    protect(load_spec(spec), nested / "lat", SeededNoise(11))
    tables = {n: pl.read_parquet(nested / "lat" / "tables" / f"{n}.parquet") for n in LATTICE}
    manifest = json.loads((nested / "lat" / "manifest.json").read_text())
    pp = manifest["postprocess"]
    assert pp["solver"] == "lattice"
    pairs = _check_pairs(nested, tables, LATTICE, list(LATTICE))  # held ones too
    assert pairs == 5


def test_without_consistency_cells_are_clamped_and_rounded_alone(nested):
    raw, _ = _release(nested, "nonnegative = false\n", seed=3)
    post, m = _release(nested, "nonnegative = true\ninteger = true\n", seed=3, tag="b")
    for name in QUERIES:
        want = np.maximum(np.rint(raw[name]["jobs"].to_numpy()), 0)
        np.testing.assert_array_equal(post[name]["jobs"].to_numpy(), want)
    assert m["postprocess"]["consistent"] is False


def test_raw_release_is_unchanged_without_the_options(nested):
    raw, m = _release(nested, "nonnegative = false\n", seed=3)
    assert "postprocess" not in m
    assert raw["county"]["jobs"].dtype == pl.Float64


def test_a_lattice_of_marginals_is_accepted_when_the_spec_is_read(tmp_path):
    queries = {"county_sex": ["county", "sex"], "county_industry": ["county", "naics_sector"],
               "tract_industry_age_sex": ["tract", "naics_sector", "age", "sex"]}  # fmt: skip
    # tract × industry × age × sex refines both county × sex and county × industry
    parse_spec(tomllib.loads(_spec("consistent = true\n", queries)), tmp_path)
    dup = {"a": ["county", "sex"], "county_sex": ["sex", "county"]}
    mechs = {**MECH, "a": MECH["county_sex"]}
    with pytest.raises(SpecError, match="same marginal"):
        parse_spec(tomllib.loads(_spec("consistent = true\n", dup, mechs)), tmp_path)


def test_integer_and_consistent_are_refused_for_establishment_releases(tmp_path):
    raw = {
        "name": "e",
        "data": {"kind": "establishments", "path": "x.csv", "confidential": ["m1emp"]},
        "privacy": {"definition": "gedp", "neighbor": "sqrt", "distance": {"m1emp": 0.5}},
        "query": [{"name": "identity", "by": "identity", "mechanism": "psi",
                   "mu": {"m1emp": 0.5}}],
        "postprocess": {"integer": True},
    }  # fmt: skip
    with pytest.raises(SpecError, match="ER-EE count releases"):
        parse_spec(raw, tmp_path)


def test_postprocess_keys_must_be_booleans(tmp_path):
    raw = tomllib.loads(_spec('consistent = "yes"\n'))
    with pytest.raises(SpecError, match="true or false"):
        parse_spec(raw, tmp_path)


def test_gedp_estimates_never_fall_outside_their_own_interval(tmp_path):
    # The ψ identity estimate x̃ = ω² − σ² is negative for ω < σ while the §6.1 interval is
    # clamped at ψ(0) = 0; pnc's CI is clamped at 0 too. The published estimate is clamped
    # the same way, so it always lies in its interval (docs/design.md#post-processing).
    from eree.data.establishments import load_establishments
    from eree.release.build import build
    from eree.release.gedp import release_gedp
    from tests.release.test_gedp import paper_spec, plan_of, write_small

    plan = plan_of(paper_spec(str(write_small(tmp_path / "e.csv", n=200)), wages=True), tmp_path)
    data = load_establishments(plan.data)
    tables = release_gedp(plan, data, SeededNoise(5), build(plan).report())
    clamped = 0
    for t in tables:
        for m in t.measurements:
            a = m.statistic
            est = t.table[a].to_numpy()
            lo, hi = t.table[f"{a}_ci_low"].to_numpy(), t.table[f"{a}_ci_high"].to_numpy()
            assert np.all((lo <= est) & (est <= hi)), (t.name, a)
            outside = (m.estimate < lo) | (m.estimate > hi)
            clamped += int(outside.sum())
            # inside the interval the mechanism's estimate is published unchanged
            np.testing.assert_array_equal(est[~outside], m.estimate[~outside])
            assert "clamped into its own CI" in t.uncertainty[a]
    assert clamped > 0  # the check above is not vacuous: some estimates were outside


def test_gedp_consistent_tables_are_tabulations_of_nonnegative_microdata(tmp_path):
    from tests.release.test_gedp import paper_spec, write_small

    raw = paper_spec(str(write_small(tmp_path / "e.csv", n=200)), wages=True)
    protect(parse_spec(raw, tmp_path), tmp_path / "raw", SeededNoise(2))  # same noise
    raw["postprocess"] = {"microdata": True, "nonnegative": True, "consistent": True}
    protect(parse_spec(raw, tmp_path), tmp_path / "out", SeededNoise(2))
    names = ("identity", "state", "naics5", "county", "county_naics5")
    t = {n: pl.read_parquet(tmp_path / "out" / "tables" / f"{n}.parquet") for n in names}
    own = {n: pl.read_parquet(tmp_path / "raw" / "tables" / f"{n}.parquet") for n in names}
    md = pl.read_parquet(tmp_path / "out" / "microdata.parquet")
    m = json.loads((tmp_path / "out" / "manifest.json").read_text())
    kept = m["postprocess"].get("kept_own_values", {})
    checks = m["postprocess"]["never_worse"]["checks"]
    assert len(checks) == 4 * len(names)  # every (table, attribute) was checked
    assert set(kept) == {k for k, c in checks.items() if c["bias_ratio"] > 1.0}
    attrs = ["m1emp", "m2emp", "m3emp", "wage"]
    tabulated = 0
    for a in attrs:
        for name, table in t.items():
            assert table[a].min() >= 0, (name, a)
            if f"{name}.{a}" in kept:  # its own published values, with their std and CI
                np.testing.assert_array_equal(
                    table[a].to_numpy(), np.maximum(own[name][a].to_numpy(), 0.0)
                )
                assert table[f"{a}_ci_low"].null_count() == 0
            else:
                assert table[f"{a}_ci_low"].null_count() == table.height
                tabulated += 1
        if f"identity.{a}" not in kept:
            ident = t["identity"].join(md.select("primary_key", pl.col(a).alias("md")),
                                       on="primary_key")  # fmt: skip
            np.testing.assert_array_equal(ident[a].to_numpy(), ident["md"].to_numpy())
        # every coarser table is the sum of the finer one (floating-point sums)
        pairs = (
            ("county_naics5", "county", ["cnty"]),
            ("county_naics5", "naics5", ["naics5"]),
            ("county", "state", []),
            ("identity", "state", []),
        )
        for child, parent, keys in pairs:
            if f"{child}.{a}" in kept or f"{parent}.{a}" in kept:
                continue
            src = t[child] if child != "identity" else md
            agg = (src.group_by(keys).agg(pl.col(a).sum().alias("s")) if keys
                   else src.select(pl.col(a).sum().alias("s")))  # fmt: skip
            j = (
                t[parent].join(agg, on=keys)
                if keys
                else pl.concat([t[parent], agg], how="horizontal")
            )
            np.testing.assert_allclose(j[a].to_numpy(), j["s"].to_numpy(), rtol=1e-9)
    assert tabulated >= 10  # most tables are tabulations (the checks above are not vacuous)
    assert m["postprocess"]["consistent"] is True


def test_gedp_consistent_needs_microdata(tmp_path):
    from tests.release.test_gedp import paper_spec

    raw = paper_spec("x.csv", wages=False)
    raw["postprocess"] = {"consistent": True}
    with pytest.raises(SpecError, match="microdata = true"):
        parse_spec(raw, tmp_path)


def test_the_report_names_the_tables_left_unadjusted_and_why(nested):
    """A review board reads which tables the never-worse guard left as their own values."""
    import html
    import re

    # tract × industry × race far more precise per cell than anything that could inform it:
    # post-processing cannot improve it, the guard keeps it
    mechs = MECH | {"tract_industry_race": ("smooth_laplace", 60.0)}
    _, manifest = _release(nested, "consistent = true\nnonnegative = true\ninteger = true\n",
                           mechs=mechs)  # fmt: skip
    pp = manifest["postprocess"]
    kept = pp.get("held", {})
    assert kept  # this fixture's most precise marginal is held (not vacuous)
    page = (nested / "out7a" / "report.html").read_text(encoding="utf-8")
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert "not adjusted" in text
    assert "the others were adjusted to add up to them: every table adds up" in text
    assert f"every one of the {pp['additivity']['pairs']} released pairs" in text
    for name in kept:
        ratio = pp["never_worse"]["predicted_before_holding"][name]["predicted_ratio"]
        assert f"{name}: published as its own values" in text
        assert f"{ratio:.0%} of its own" in text
    for name in QUERIES:
        if name not in kept:
            assert f"{name}: published as its own values" not in text


POST = "consistent = true\nnonnegative = true\ninteger = true\n"


def _calibrated_release(root, post, tag):
    """The release of ``post`` with the evaluation's per-release variance calibration (an
    experiment of ``eree evaluate publication-grade``, not a spec key)."""
    import dataclasses

    spec = root / "spec.toml"
    spec.write_text(_spec(post))
    plan = load_spec(spec)
    plan = dataclasses.replace(
        plan, postprocess=dataclasses.replace(plan.postprocess, variance_calibration=True)
    )
    out = root / f"out7{tag}"
    protect(plan, out, SeededNoise(7))
    tables = {n: pl.read_parquet(out / "tables" / f"{n}.parquet") for n in QUERIES}
    return tables, json.loads((out / "manifest.json").read_text())


def test_variance_calibration_fits_one_multiplier_per_modelled_marginal(nested):
    # each marginal weighted by the public model (Smooth Laplace, Smooth Gamma) gets a
    # multiplier fitted to the release's own parent/child discrepancies; a published
    # variance (Log-Laplace's county) gets none
    tables, manifest = _calibrated_release(nested, POST, tag="cal")
    pp = manifest["postprocess"]
    cal = pp["variance_calibration"]
    modelled = {n for n, (mech, _) in MECH.items() if n in QUERIES and mech != "log_laplace"}
    assert set(cal["multipliers"]) == modelled
    assert all(0.05 <= c <= 20 for c in cal["multipliers"].values())
    assert all(cal["parent_cells"][n] > 0 for n in modelled)
    assert "no privacy cost" in cal["method"]
    assert "calibrated on this release's published values" in pp["weights"]["tract_industry"]
    assert "calibrated" not in pp["weights"]["county"]
    _check_pairs(nested, tables, QUERIES, list(QUERIES))
    _, default = _release(nested, POST, tag="nocal")
    assert "variance_calibration" not in default["postprocess"]  # releases never calibrate


def test_a_model_that_underpredicts_gets_larger_multipliers(nested, monkeypatch):
    # the same published values (same seed) weighted by a model whose largest-share
    # constant is 20 times smaller: its modelled variance above the floor is smaller
    # everywhere, so the multipliers fitted to the same discrepancies can only grow
    import functools

    from eree.postprocess.variance_model import SmoothVarianceModel

    _, base = _calibrated_release(nested, POST, tag="m1")
    monkeypatch.setattr("eree.release.publication.SmoothVarianceModel",
                        functools.partial(SmoothVarianceModel, scale=5.05 / 20))  # fmt: skip
    _, small = _calibrated_release(nested, POST, tag="m2")
    a = base["postprocess"]["variance_calibration"]["multipliers"]
    b = small["postprocess"]["variance_calibration"]["multipliers"]
    assert all(b[n] >= a[n] for n in a)
    assert sum(b[n] > 1.5 * a[n] for n in a) >= 2  # not vacuous: the fit moved


def test_variance_calibration_is_not_a_spec_key(tmp_path):
    # not offered to releases: it made some marginals worse than raw (publication-grade.md)
    with pytest.raises(SpecError, match="variance_calibration"):
        parse_spec(tomllib.loads(_spec(POST + "variance_calibration = true\n")), tmp_path)


def test_a_tree_solved_block_by_block_publishes_the_values_of_one_solve(nested, monkeypatch):
    # on a tree every cell's value depends only on its root cell's subtree (the bottom-up
    # and top-down passes never cross root cells): solved one root cell at a time, each
    # marginal that publishes the consistent solution in both releases has the same cells
    import eree.release.publication as publication

    post = "consistent = true\nnonnegative = true\ninteger = true\n"
    whole, m_whole = _release(nested, post, tag="whole")
    monkeypatch.setattr(publication, "BLOCK_CELLS", 1)  # every root cell a block
    parts, m_parts = _release(nested, post, tag="parts")
    counties = whole["county"].height
    assert counties >= 3
    assert "blocks" not in m_whole["postprocess"]
    assert m_parts["postprocess"]["blocks"].startswith(f"solved in {counties} independent blocks")
    held_whole = m_whole["postprocess"].get("held", {})
    both = [n for n in QUERIES if list(m_parts["postprocess"].get("held", {})) == list(held_whole)]
    assert len(both) >= 3  # not vacuous
    for n in both:
        np.testing.assert_array_equal(parts[n]["jobs"].to_numpy(), whole[n]["jobs"].to_numpy())
    assert _check_pairs(nested, parts, QUERIES, list(QUERIES)) >= 3
    # the guard's predictions estimate the same ratio from independent draws (the blocks
    # take the generator's numbers in another order): within 4 SE of their difference
    for n in QUERIES:
        a = m_whole["postprocess"]["never_worse"]["predicted"][n]
        b = m_parts["postprocess"]["never_worse"]["predicted"][n]
        diff_se = (a["se"] ** 2 + b["se"] ** 2) ** 0.5
        assert abs(a["predicted_ratio"] - b["predicted_ratio"]) <= 4 * diff_se


def test_switching_the_never_worse_guard_off_is_not_a_spec_key(tmp_path):
    # a release always runs the guard; only the evaluation switches it off
    with pytest.raises(SpecError, match="without_guard"):
        parse_spec(tomllib.loads(_spec(POST + "without_guard = true\n")), tmp_path)
