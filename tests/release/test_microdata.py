"""Protected establishment microdata from a GEDP release (Webb et al. §7).

See docs/design.md#post-processing, #release-outputs.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from eree.data.establishments import load_establishments
from eree.engine.polars.engine import PolarsEngine
from eree.errors import EreeError, SpecError
from eree.mechanisms.noise import SeededNoise
from eree.postprocess.sqrt_space import anchored_total
from eree.postprocess.wls import solve_wls
from eree.release.build import build
from eree.release.gedp import release_gedp
from eree.release.microdata import (
    MICRODATA_FILE,
    build_microdata,
    check_microdata_plan,
    microdata_measurements,
    public_frame,
    tabulate_levels,
)
from eree.release.output import write_release
from eree.release.protect import protect
from eree.release.spec import parse_spec
from eree.release.tables import QueryTable

from .test_gedp import EMP, PUBLIC, mu, paper_spec, write_small

ATTRS = [*EMP, "wage"]


def plan_with(path: Path, **postprocess: bool) -> Any:
    raw = paper_spec(str(path), wages=True)
    raw["postprocess"] = {"microdata": True, **postprocess}
    return parse_spec(copy.deepcopy(raw), path.parent)


@pytest.fixture
def small(tmp_path: Path) -> tuple[Any, Path]:
    path = write_small(tmp_path / "e.csv", n=300)
    return plan_with(path), path


def test_protect_writes_microdata_and_manifest(small: tuple[Any, Path], tmp_path: Path) -> None:
    plan, _ = small
    out = tmp_path / "rel"
    res = protect(plan, out, SeededNoise(7))
    md = pl.read_parquet(out / MICRODATA_FILE)
    data = load_establishments(plan.data)
    assert md.columns == ["primary_key", *PUBLIC, *ATTRS]
    assert md.height == data.n
    assert md.select(["primary_key", *PUBLIC]).equals(public_frame(data, PolarsEngine()))
    assert all(md.schema[a] == pl.Float64 for a in ATTRS)
    m = json.loads((out / "manifest.json").read_text())
    assert m["microdata"] == json.loads(json.dumps(res.manifest["microdata"]))
    entry = m["microdata"]
    assert entry["file"] == MICRODATA_FILE and entry["rows"] == data.n
    assert entry["nonnegative"] is False
    assert "weighted least squares" in entry["method"]
    for a in ATTRS:
        info = entry["attributes"][a]
        assert info["converged"] and info["relative_residual"] < 1e-8
        kinds = {x["query"]: x["variance"] for x in info["measurements"]}
        assert kinds["identity"].startswith("estimated")
        assert kinds["county"].startswith("public")
    # the microdata is protected: not the true values
    assert not np.allclose(md["m1emp"].to_numpy(), data.frame["m1emp"].to_numpy())


def test_microdata_is_the_wls_solution_and_tabulates_to_it(small: tuple[Any, Path]) -> None:
    plan, _ = small
    data = load_establishments(plan.data)
    tables = release_gedp(plan, data, SeededNoise(11), build(plan).report())
    public = public_frame(data, PolarsEngine())
    md = build_microdata(plan, tables, public)
    meas, _ = microdata_measurements(plan, tables, public)
    by = {t.name: t.table for t in tables}
    for a in ATTRS:
        ms = [m for m in meas if m.attribute == a]
        assert len(ms) == len(plan.queries)
        dense = solve_wls(data.n, ms, method="dense").x
        x = md.frame[a].to_numpy()
        np.testing.assert_allclose(x, dense, rtol=1e-6, atol=1e-6 * np.abs(dense).max())
        # identity measurement is the identity estimate, in establishment order; the
        # published column is that estimate clamped into its own CI (docs/design.md#post-processing)
        ident = next(m for m in ms if m.groups is None)
        t = by["identity"]
        lo, hi = t[f"{a}_ci_low"].to_numpy(), t[f"{a}_ci_high"].to_numpy()
        np.testing.assert_array_equal(np.minimum(np.maximum(ident.values, lo), hi),
                                      t[a].to_numpy())  # fmt: skip
        np.testing.assert_allclose(ident.variances, by["identity"][f"{a}_std"].to_numpy() ** 2)
        # tabulating the microdata by a measured grouping gives the WLS group sums
        county = (
            md.frame.group_by("cnty").agg(pl.col(a).sum()).sort("cnty").get_column(a).to_numpy()
        )
        cm = next(m for m in ms if m.name == "county")
        assert cm.groups is not None
        np.testing.assert_allclose(county, np.bincount(cm.groups, x, cm.n_groups))
        keys = by["county"]["cnty"].to_list()
        assert keys == sorted(keys)  # group ids follow the published table's rows
    tabs = tabulate_levels(md.frame, ATTRS, levels=(50, 70, 75))
    assert tabs[50].height == 1 and tabs[70].height == 3
    assert tabs[50]["wage"][0] == pytest.approx(md.frame["wage"].to_numpy().sum())
    assert tabs[70]["m3emp"].to_numpy().sum() == pytest.approx(md.frame["m3emp"].to_numpy().sum())


def test_microdata_depends_on_confidential_data_only_through_tables(
    small: tuple[Any, Path], tmp_path: Path
) -> None:
    plan, path = small
    data = load_establishments(plan.data)
    # a second file: same establishments and public attributes, other confidential values
    other = pl.read_csv(path).with_columns(
        (pl.col("m1emp") * 3 + 1).alias("m1emp"), (pl.col("wage") + 7.5).alias("wage")
    )
    path_b = tmp_path / "b" / "e.csv"
    path_b.parent.mkdir()
    other.write_csv(path_b)
    plan_b = plan_with(path_b)
    data_b = load_establishments(plan_b.data)
    tables = release_gedp(plan, data, SeededNoise(3), build(plan).report())
    tables_b = release_gedp(plan_b, data_b, SeededNoise(3), build(plan_b).report())
    md = build_microdata(plan, tables, public_frame(data, PolarsEngine())).frame
    # the same tables with the other file's frame (confidential columns included: ignored)
    md_x = build_microdata(plan, tables, data_b.frame).frame
    assert md.equals(md_x)
    # the other file's release: its microdata is the post-processing of its own tables
    out_b = protect(plan_b, tmp_path / "rel_b", SeededNoise(3))
    md_b = pl.read_parquet(out_b.out_dir / MICRODATA_FILE)
    assert md_b.equals(
        build_microdata(plan_b, tables_b, public_frame(data_b, PolarsEngine())).frame
    )
    # m2emp/m3emp are unchanged and so are their tables (same noise): same microdata columns
    for a in ("m2emp", "m3emp"):
        assert md_b[a].equals(md[a])
    assert not md_b["m1emp"].equals(md["m1emp"])


def test_nonnegative(small: tuple[Any, Path], tmp_path: Path) -> None:
    _, path = small
    plan = plan_with(path, nonnegative=True)
    res = protect(plan, tmp_path / "nn", SeededNoise(5))
    md = pl.read_parquet(tmp_path / "nn" / MICRODATA_FILE)
    for a in ATTRS:
        assert md[a].min() >= 0  # type: ignore[operator]
    entry = res.manifest["microdata"]
    assert entry["nonnegative"] is True
    assert all(v["kkt_violation"] < 1e-6 for v in entry["attributes"].values())
    free = build_microdata(plan, res.tables, md, nonnegative=False).frame
    assert any(free[a].min() < 0 for a in ATTRS)  # type: ignore[operator]


def test_zero_variance_pnc_cells_are_left_out(small: tuple[Any, Path]) -> None:
    plan, _ = small
    data = load_establishments(plan.data)
    tables = release_gedp(plan, data, SeededNoise(2), build(plan).report())
    patched = []
    for t in tables:
        if t.name == "county":  # a pnc group whose Δ_ℓ = 0: published variance 0
            ms = []
            for m in t.measurements:
                if m.statistic == "m1emp":
                    std = m.std.copy()
                    std[0] = 0.0
                    m = dataclasses.replace(m, std=std)
                ms.append(m)
            t = dataclasses.replace(t, measurements=tuple(ms))
        patched.append(t)
    meas, notes = microdata_measurements(plan, patched, public_frame(data, PolarsEngine()))
    cm = next(m for m in meas if m.name == "county" and m.attribute == "m1emp")
    assert np.isinf(cm.variances[0]) and np.all(np.isfinite(cm.variances[1:]))
    note = next(n for n in notes["m1emp"] if n["query"] == "county")
    assert note["cells_used"] == note["cells"] - 1 and "left_out" in note
    build_microdata(plan, patched, public_frame(data, PolarsEngine()))  # still solvable


def test_refused_before_reading_data(tmp_path: Path) -> None:
    raw = paper_spec(str(tmp_path / "missing.csv"), wages=False)
    raw["privacy"] = {
        "definition": "gedp",
        "neighbor": {
            "kind": "combine",
            "parts": [{"kind": "sqrt", "gamma": 0.5}, {"kind": "dp", "d": 1.0}],
        },
    }
    raw["query"] = [
        {"name": "identity", "by": "identity", "mechanism": "psi", "mu": mu(0.7)},
        {"name": "county", "by": ["cnty"], "mechanism": "pnc", "mu": mu(0.6)},
    ]
    raw["postprocess"] = {"microdata": True}
    plan = parse_spec(raw, tmp_path)
    with pytest.raises(SpecError, match="publishes no variance estimate"):
        check_microdata_plan(plan)
    # the data file cannot be parsed: the refusal comes before loading; nothing is written
    (tmp_path / "missing.csv").write_text("not,a\nvalid,file\n")
    with pytest.raises(SpecError, match="publishes no variance estimate"):
        protect(plan, tmp_path / "out", SeededNoise(1))
    assert not (tmp_path / "out").exists()


def test_other_neighbors(small: tuple[Any, Path]) -> None:
    plan, path = small
    raw = copy.deepcopy(plan.raw)
    raw["privacy"]["neighbor"] = {"kind": "log_shift", "a": 1.0}
    raw["privacy"]["distance"] = {a: 0.1 for a in ATTRS}
    raw["query"][2]["mechanism"] = "psi"  # naics5 by the ψ-mechanism: plug-in v̂
    p = parse_spec(raw, path.parent)
    data = load_establishments(p.data)  # type: ignore[arg-type]
    tables = release_gedp(p, data, SeededNoise(4), build(p).report())
    md = build_microdata(p, tables, public_frame(data, PolarsEngine()))
    notes = md.manifest_entry()["attributes"]["m1emp"]["measurements"]
    assert {n["query"]: n["mechanism"] for n in notes}["naics5"] == "psi"


def test_write_release_extra_files(tmp_path: Path) -> None:
    t = QueryTable("q", pl.DataFrame({"a": [1.0]}))
    frame = pl.DataFrame({"x": [1, 2]})
    write_release(tmp_path / "ok", [t], {}, extra={"microdata.parquet": frame, "d/x.csv": frame})
    assert pl.read_parquet(tmp_path / "ok" / "microdata.parquet").equals(frame)
    assert (tmp_path / "ok" / "d" / "x.csv").exists()
    for bad in ("../escape.parquet", "x.json"):
        with pytest.raises(EreeError):
            write_release(tmp_path / "bad", [t], {}, extra={bad: frame})
        assert not (tmp_path / "bad").exists()
        assert not (tmp_path / "escape.parquet").exists()


def test_microdata_not_for_eree_plans(tmp_path: Path) -> None:
    raw = {
        "name": "x",
        "data": {"kind": "eree", "jobs": "jobs.parquet"},
        "privacy": {"definition": "edge-dp"},
        "query": [{"name": "c", "by": ["county"], "mechanism": "laplace", "epsilon": 1.0}],
        "postprocess": {"microdata": True},
    }
    with pytest.raises(SpecError, match="GEDP"):
        check_microdata_plan(parse_spec(raw, tmp_path))


def test_adaptive_answers_are_wls_observations(tmp_path: Path) -> None:
    """Group-bys answered by the adaptive mechanism
    enter the WLS like any other measurement: the published value with the published
    See ψ or pnc per group, docs/design.md#gedp-mechanisms.
    variance of the mechanism that answered each cell."""
    path = write_small(tmp_path / "e.csv", n=300)
    raw = paper_spec(str(path), wages=True)
    raw["postprocess"] = {"microdata": True}
    for q in raw["query"]:
        if q["by"] != "identity":
            q["mechanism"] = "adaptive"
    plan = parse_spec(copy.deepcopy(raw), path.parent)
    data = load_establishments(plan.data)
    tables = release_gedp(plan, data, SeededNoise(5), build(plan).report())
    public = public_frame(data, PolarsEngine())
    md = build_microdata(plan, tables, public)
    meas, notes = microdata_measurements(plan, tables, public)
    by = {t.name: t.table for t in tables}
    chosen: set[str] = set()
    for a in ATTRS:
        for m in (m for m in meas if m.attribute == a and m.groups is not None):
            t = by[m.name]
            chosen |= set(t[f"{a}_mechanism"].to_list())
            # the published column is the estimate clamped into its own CI
            # (docs/design.md#post-processing)
            lo, hi = t[f"{a}_ci_low"].to_numpy(), t[f"{a}_ci_high"].to_numpy()
            used = np.isfinite(m.variances)
            np.testing.assert_array_equal(
                np.minimum(np.maximum(m.values, lo), hi)[used], t[a].to_numpy()[used]
            )
            np.testing.assert_allclose(m.variances[used], t[f"{a}_std"].to_numpy()[used] ** 2)
        assert {x["mechanism"] for x in notes[a] if x["query"] != "identity"} == {"adaptive"}
        dense = solve_wls(data.n, [m for m in meas if m.attribute == a], method="dense").x
        np.testing.assert_allclose(
            md.frame[a].to_numpy(), dense, rtol=1e-6, atol=1e-6 * np.abs(dense).max()
        )
    assert chosen <= {"pnc", "psi"} and chosen


def test_sqrt_space_fit_of_adaptive_answers(tmp_path: Path) -> None:
    """With ``microdata_fit = "sqrt-space"`` the ψ-answered cells of adaptive queries (and
    the identity's) carry their ψ-space answers ω — |ω| = √(x̃ + σ²) (Thm 6.6: x̃ = ω² − σ²),
    ω = √(CI high) − zσ where ω + zσ ≥ 0 (§6.1 CI) —, the pnc cells none; the microdata's
    total is the anchor (the one-group query is replaced by it)."""
    path = write_small(tmp_path / "e.csv", n=300)
    raw = paper_spec(str(path), wages=True)
    raw["postprocess"] = {"microdata": True, "microdata_fit": "sqrt-space"}
    for q in raw["query"]:
        if q["by"] != "identity":
            q["mechanism"] = "adaptive"
    plan = parse_spec(copy.deepcopy(raw), path.parent)
    data = load_establishments(plan.data)
    tables = release_gedp(plan, data, SeededNoise(5), build(plan).report())
    public = public_frame(data, PolarsEngine())
    md = build_microdata(plan, tables, public)
    meas, _ = microdata_measurements(plan, tables, public)
    by = {t.name: t.table for t in tables}
    z = 1.959963984540054
    for a in ATTRS:
        sigma = {q["name"]: (50.0 if a == "wage" else 0.5) / q["mu"][a] for q in raw["query"]}
        for m in (m for m in meas if m.attribute == a):
            sa = m.sqrt_answers
            t = by[m.name]
            if m.groups is None:
                assert sa is not None and sa.answered.all()
                assert sa.sigma == pytest.approx(sigma[m.name]) and sa.a == 0
                continue
            psi = t[f"{a}_mechanism"].to_numpy() == "psi"
            if not psi.any():  # every cell answered by pnc: nothing to fit in √-space
                assert sa is None
                continue
            assert sa is not None and sa.sigma == pytest.approx(sigma[m.name]) and sa.a == 0
            np.testing.assert_array_equal(sa.answered, psi)
            w = sa.omega[psi]
            np.testing.assert_allclose(np.abs(w), np.sqrt(m.values[psi] + sa.sigma**2))
            hi = t[f"{a}_ci_high"].to_numpy()[psi]
            ok = w + z * sa.sigma >= 0
            np.testing.assert_allclose(w[ok], np.sqrt(hi[ok]) - z * sa.sigma, atol=1e-9)
        anchor = anchored_total(data.n, [m for m in meas if m.attribute == a])
        assert anchor is not None
        assert md.frame[a].sum() == pytest.approx(anchor[0], abs=1e-2 * np.sqrt(anchor[1]))
        assert md.results[a].method.startswith("sqrt-space/")
    assert md.manifest_entry()["fit"].startswith("sqrt-space")
