"""The GEDP release path: plan validation, accounting from the plan, release_gedp."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from eree.data.establishments import EstablishmentData, load_establishments
from eree.errors import PrivacyParameterError, SpecError
from eree.mechanisms.noise import SeededNoise
from eree.release.build import build, validate_gedp_plan
from eree.release.gedp import (
    gedp_plan_semantics,
    release_gedp,
)
from eree.release.spec import parse_spec

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
SYN_RI = SHARED_DATA / "syn_ri" / "ri44_qbp_2016_1.csv.gz"
EMP = ("m1emp", "m2emp", "m3emp")
PUBLIC = ["cnty", "own", "naics", "naics3", "naics4", "naics5", "naics_sector", "super_sector"]


def mu(e: float, w: float | None = None) -> dict[str, float]:
    d = dict.fromkeys(EMP, e)
    if w is not None:
        d["wage"] = w
    return d


def paper_spec(path: str, *, wages: bool) -> dict[str, Any]:
    """Section 8.1 (employment only, μ ≈ 2.28) or Table 7 (with wages, μ ≈ 2.31)."""
    w = (lambda x: x) if wages else (lambda x: None)
    conf = [*EMP, "wage"] if wages else list(EMP)
    dist: dict[str, float] = dict.fromkeys(EMP, 0.5)
    if wages:
        dist["wage"] = 50.0
    return {
        "name": "syn-ri-2016q1",
        "data": {
            "kind": "establishments",
            "path": path,
            "id": "primary_key",
            "public": PUBLIC,
            "confidential": conf,
        },
        "privacy": {"definition": "gedp", "neighbor": "sqrt", "distance": dist},
        "query": [
            {"name": "identity", "by": "identity", "mechanism": "psi", "mu": mu(0.7, w(0.15))},
            {"name": "state", "by": [], "mechanism": "pnc", "mu": mu(0.2, w(0.10))},
            {"name": "naics5", "by": ["naics5"], "mechanism": "pnc", "mu": mu(0.6, w(0.15))},
            {"name": "county", "by": ["cnty"], "mechanism": "pnc", "mu": mu(0.6, w(0.15))},
            {
                "name": "county_naics5",
                "by": ["cnty", "naics5"],
                "mechanism": "pnc",
                "mu": mu(0.7, w(0.15)),
            },
        ],
        "pnc": {"zeta": 0.01, "bounds_from": "identity"},
    }


def plan_of(raw: dict[str, Any], base: Path = Path(".")) -> Any:
    return parse_spec(copy.deepcopy(raw), base)


# --------------------------------------------------------------------------------------
# Accounting from the plan alone
# --------------------------------------------------------------------------------------


def test_explain_section_8_1_mu_total_2_28(tmp_path: Path) -> None:
    plan = plan_of(paper_spec("does-not-exist.csv", wages=False), tmp_path)
    report = build(plan).report()  # no data is read
    assert round(report.total.mu or 0.0, 2) == 2.28
    assert len(report.charges) == 5 and len(report.extra["measurements"]) == 15
    sem = gedp_plan_semantics(plan, report)
    text = "\n".join(sem["statements"])
    assert "μ_total = 2.28" in text
    assert sem["tables"][0]["columns"] == ["x", *EMP]
    assert [r[0] for r in sem["tables"][0]["rows"]][-1] == "36,000"


def test_explain_table_7_mu_total_2_31(tmp_path: Path) -> None:
    plan = plan_of(paper_spec("does-not-exist.csv", wages=True), tmp_path)
    report = build(plan).report()
    assert round(report.total.mu or 0.0, 2) == 2.31
    assert [round(c.total.mu or 0.0, 2) for c in report.charges] == [1.22, 0.36, 1.05, 1.05, 1.22]
    sem = gedp_plan_semantics(plan, report)
    assert any("μ_total = 2.31" in s for s in sem["statements"])
    pnc = [c for c in report.charges if c.mechanism == "pnc"]
    assert pnc
    assert all(c.params["zeta"] == 0.01 and c.params["bounds_from"] == "identity" for c in pnc)


def _toml_value(v: Any) -> str:
    if isinstance(v, str):
        return '"' + v + '"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"


def to_toml(raw: dict[str, Any]) -> str:
    """Enough TOML for the specs of this module."""
    lines = [f"name = {_toml_value(raw['name'])}"]
    for section in ("data", "privacy", "pnc"):
        if section in raw:
            lines.append(f"[{section}]")
            lines += [f"{k} = {_toml_value(v)}" for k, v in raw[section].items()]
    for q in raw["query"]:
        lines.append("[[query]]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in q.items() if v is not None]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("wages", "expected"), [(False, "2.28"), (True, "2.31")])
def test_eree_explain_prints_mu_total(tmp_path: Path, wages: bool, expected: str) -> None:
    """``eree explain`` on the paper's two configurations (§8.1 and Table 7)."""
    from typer.testing import CliRunner

    from eree.cli import app

    spec = tmp_path / "spec.toml"
    spec.write_text(to_toml(paper_spec("not-read.csv", wages=wages)), encoding="utf-8")
    result = CliRunner().invoke(app, ["explain", str(spec)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert f"μ_total = {expected}" in result.output
    assert "35,810.5" in result.output  # the Table 2 interval around 36,000 (sqrt, γ = 0.5)


def _set(raw: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    raw = copy.deepcopy(raw)
    *head, last = path.split(".")
    node: Any = raw
    for k in head:
        node = node[int(k)] if k.isdigit() else node[k]
    if value is _DELETE:
        del node[last]
    else:
        node[int(last) if last.isdigit() else last] = value
    return raw


_DELETE = object()


@pytest.mark.parametrize(
    ("path", "value", "error", "match"),
    [
        ("query.1.mu", {"m1emp": 0.2, "cnty": 0.1}, SpecError, "not confidential"),
        ("query.1.by", ["m1emp"], SpecError, "public attributes"),
        ("query.1.by", ["primary_key"], SpecError, "id column"),
        ("pnc", {"zeta": 0.01}, SpecError, "bounds_from"),
        ("query.0.mechanism", "estab_gaussian", SpecError, "psi query"),
        ("query.0.mu", {"m1emp": 0.7}, SpecError, "no bounds"),
        ("query.0.by", ["cnty"], SpecError, 'by = "identity"'),
        ("query.1.epsilon", 1.0, SpecError, "epsilon"),
        ("query.1.mechanism", "laplace", SpecError, "mu does not apply to laplace"),
        ("query.1.mu", _DELETE, SpecError, "mu per confidential"),
        ("query.4.complete", True, SpecError, "complete"),
        ("privacy.distance", {"m1emp": 0.5}, PrivacyParameterError, "m2emp"),
        ("query.1.mechanism", "estab_gaussian", PrivacyParameterError, "sensitivity"),
    ],
)
def test_validation(
    tmp_path: Path, path: str, value: Any, error: type[Exception], match: str
) -> None:
    raw = _set(paper_spec("x.csv", wages=False), path, value)
    with pytest.raises(error, match=match):
        plan = plan_of(raw, tmp_path)
        build(plan).report()


def test_pnc_identity_is_refused(tmp_path: Path) -> None:
    raw = _set(paper_spec("x.csv", wages=False), "query.1.by", "identity")
    with pytest.raises(SpecError, match="identity query must use the psi"):
        validate_gedp_plan(plan_of(raw, tmp_path))


@pytest.mark.parametrize(
    ("path", "value", "match"),
    [
        ("query.1.by", "identity", "identity query must use the psi"),
        ("pnc", {"zeta": 0.01}, "adaptive needs \\[pnc\\] bounds_from"),
        ("query.0.mu", {"m1emp": 0.7}, "adaptive attributes .* have no bounds"),
    ],
)
def test_adaptive_needs_the_bounds_of_pnc(
    tmp_path: Path, path: str, value: Any, match: str
) -> None:
    """adaptive (docs/design.md#gedp-mechanisms) reads the identity query's answers as pnc does."""
    raw = _set(paper_spec("x.csv", wages=False), "query.1.mechanism", "adaptive")
    assert plan_of(raw, tmp_path).query(raw["query"][1]["name"]).mechanism == "adaptive"
    build(plan_of(raw, tmp_path)).report()  # valid as it stands
    with pytest.raises(SpecError, match=match):
        validate_gedp_plan(plan_of(_set(raw, path, value), tmp_path))


# --------------------------------------------------------------------------------------
# Release on a small dataset
# --------------------------------------------------------------------------------------


def write_small(path: Path, seed: int = 0, n: int = 60) -> Path:
    rng = np.random.default_rng(seed)
    naics = rng.choice(["236115", "445110", "722511", "541110", "311811"], n)
    emp = np.floor(rng.pareto(1.3, n) * 8).astype(int)
    df = pl.DataFrame(
        {
            "primary_key": [f"E{i:04d}" for i in range(n)],
            "cnty": rng.choice(["1", "3", "5"], n).tolist(),
            "own": ["5"] * n,
            "naics": naics.tolist(),
            "m1emp": emp.tolist(),
            "m2emp": (emp + rng.integers(0, 3, n)).tolist(),
            "m3emp": (emp + rng.integers(0, 3, n)).tolist(),
            "wage": (emp * rng.uniform(5, 20, n)).round(1).tolist(),
        }
    )
    df.write_csv(path)
    return path


@pytest.fixture
def small(tmp_path: Path) -> tuple[Any, EstablishmentData]:
    raw = paper_spec(str(write_small(tmp_path / "e.csv")), wages=True)
    plan = plan_of(raw, tmp_path)
    return plan, load_establishments(plan.data)


def stats_cols(attrs: list[str] | tuple[str, ...]) -> list[str]:
    return [c for a in attrs for c in (a, f"{a}_std", f"{a}_ci_low", f"{a}_ci_high")]


def test_release_tables(small: tuple[Any, EstablishmentData]) -> None:
    plan, data = small
    report = build(plan).report()
    tables = release_gedp(plan, data, SeededNoise(3), report)
    assert [t.name for t in tables] == [q.name for q in plan.queries]
    by = {t.name: t for t in tables}
    attrs = [*EMP, "wage"]
    ident = by["identity"].table
    assert ident.columns == ["primary_key", *stats_cols(attrs)]
    assert (
        ident.get_column("primary_key").to_list() == data.frame.get_column("primary_key").to_list()
    )
    assert by["state"].table.columns == stats_cols(attrs) and by["state"].table.height == 1
    county = by["county"].table
    assert county.columns == ["cnty", *stats_cols(attrs)]
    assert county.get_column("cnty").to_list() == ["1", "3", "5"]
    assert by["county_naics5"].table.columns[:2] == ["cnty", "naics5"]
    for t in tables:
        assert t.table.null_count().sum_horizontal().item() == 0  # sqrt/pnc: all publishable
        assert set(t.uncertainty) == set(attrs)
        lo = t.table.get_column("m1emp_ci_low").to_numpy()
        hi = t.table.get_column("m1emp_ci_high").to_numpy()
        assert np.all(lo <= hi)
    assert "estimated from the noisy answer" in by["identity"].uncertainty["m1emp"]
    assert "public" in by["county"].uncertainty["wage"]
    assert "rounded to the public grid" in by["county"].uncertainty["wage"]
    # deterministic given the seed; different seeds differ
    again = release_gedp(plan, data, SeededNoise(3), report)
    assert all(a.table.equals(b.table) for a, b in zip(tables, again, strict=True))
    other = release_gedp(plan, data, SeededNoise(4), report)
    assert not tables[1].table.equals(other[1].table)


def test_bounds_query_runs_first(small: tuple[Any, EstablishmentData], tmp_path: Path) -> None:
    plan, data = small
    raw = copy.deepcopy(plan.raw)
    raw["query"] = raw["query"][1:] + raw["query"][:1]  # identity listed last
    plan2 = plan_of(raw, tmp_path)
    tables = release_gedp(plan2, data, SeededNoise(3), build(plan2).report())
    assert [t.name for t in tables] == ["state", "naics5", "county", "county_naics5", "identity"]
    ref = {t.name: t for t in release_gedp(plan, data, SeededNoise(3), build(plan).report())}
    for t in tables:  # same noise order: identity first in both
        assert t.table.equals(ref[t.name].table)


def test_report_must_match_plan(small: tuple[Any, EstablishmentData], tmp_path: Path) -> None:
    plan, data = small
    other = plan_of(_set(plan.raw, "query.1.mu", mu(0.3, 0.1)), tmp_path)
    with pytest.raises(PrivacyParameterError, match="does not match"):
        release_gedp(plan, data, SeededNoise(1), build(other).report())


def test_other_neighbors_and_estab_gaussian(tmp_path: Path) -> None:
    path = str(write_small(tmp_path / "e.csv"))
    raw = paper_spec(path, wages=False)
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
    plan = plan_of(raw, tmp_path)
    data = load_establishments(plan.data)
    tables = release_gedp(plan, data, SeededNoise(5), build(plan).report())
    ident = tables[0].table
    assert ident.get_column("m1emp_std").null_count() == ident.height  # no estimator known
    assert "no standard error" in tables[0].uncertainty["m1emp"]
    assert tables[1].table.get_column("m1emp_std").null_count() == 0  # pnc: public variance
    # person-level DP: ψ(x) = x, Estab-Gaussian with Δ = d
    raw["privacy"] = {"definition": "gedp", "neighbor": {"kind": "dp", "d": 2.0}}
    raw["query"] = [
        {"name": "county", "by": ["cnty"], "mechanism": "estab_gaussian", "mu": mu(0.5)}
    ]
    raw.pop("pnc")
    plan = plan_of(raw, tmp_path)
    (t,) = release_gedp(plan, data, SeededNoise(6), build(plan).report())
    # sd Δ/μ = 2/0.5 = 4, plus the rounding to the grid 1 (variance 1/12 averaged over
    # the true value's position in the grid cell)
    np.testing.assert_allclose(t.table.get_column("m2emp_std").to_numpy(), (16 + 1 / 12) ** 0.5)


# --------------------------------------------------------------------------------------
# Nothing published depends on confidential data except through noisy answers
# --------------------------------------------------------------------------------------


def pin_noisy_answers(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """Every mechanism's rounded noisy answers become fixed draws, whatever the truth.

    All noise goes through :func:`eree.mechanisms.sampling.rounded_noisy`; it is replaced
    (where the GEDP mechanisms look it up) by draws that ignore the true values and scales.
    """
    import eree.mechanisms.adaptive as adaptive_mod
    import eree.mechanisms.gedp as gedp_mod
    import eree.mechanisms.sampling as sampling_mod

    calls = {"n": 0}

    def pinned(source, centre, terms, grid):
        calls["n"] += 1
        shape = np.shape(centre.value)
        return np.random.default_rng([seed, calls["n"]]).normal(8.0, 4.0, size=shape)

    for mod in (sampling_mod, gedp_mod, adaptive_mod):
        monkeypatch.setattr(mod, "rounded_noisy", pinned, raising=False)


def test_published_tables_depend_on_data_only_through_noisy_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two datasets with the same public frame and different confidential values.

    With the mechanisms' noisy answers pinned, every published table must be identical.
    This fails if a true variance (ψ-mechanism), a per-establishment bound not computed
    from the noisy identity answers, or any other data-dependent quantity is published.
    """
    a = write_small(tmp_path / "a.csv", seed=1)
    b_df = pl.read_csv(a, infer_schema=False)
    rng = np.random.default_rng(99)
    for c in (*EMP, "wage"):
        b_df = b_df.with_columns(pl.Series(c, rng.integers(0, 5000, b_df.height).astype(str)))
    b = tmp_path / "b.csv"
    b_df.write_csv(b)
    raw = paper_spec(str(a), wages=True)
    raw["query"].append(
        {"name": "county_psi", "by": ["cnty"], "mechanism": "psi", "mu": mu(0.3, 0.1)}
    )
    plan_a = plan_of(raw, tmp_path)
    plan_b = plan_of(_set(raw, "data.path", str(b)), tmp_path)
    da, db = load_establishments(plan_a.data), load_establishments(plan_b.data)
    assert not da.frame.equals(db.frame)
    pin_noisy_answers(monkeypatch, 7)
    ta = release_gedp(plan_a, da, SeededNoise(7), build(plan_a).report())
    pin_noisy_answers(monkeypatch, 7)
    tb = release_gedp(plan_b, db, SeededNoise(7), build(plan_b).report())
    for x, y in zip(ta, tb, strict=True):
        assert x.table.equals(y.table), x.name
        assert x.uncertainty == y.uncertainty


# --------------------------------------------------------------------------------------
# Syn-RI, the paper's Table 7 configuration
# --------------------------------------------------------------------------------------


@pytest.mark.shared_data
@pytest.mark.skipif(not SYN_RI.is_file(), reason="../shared/data (Syn-RI) is absent")
def test_syn_ri_table_7_release(tmp_path: Path) -> None:
    plan = plan_of(paper_spec(str(SYN_RI), wages=True), tmp_path)
    report = build(plan).report()
    data = load_establishments(plan.data)
    tables = {t.name: t.table for t in release_gedp(plan, data, SeededNoise(2016), report)}
    assert {k: v.height for k, v in tables.items()} == {
        "identity": 25_420,
        "state": 1,
        "naics5": 484,
        "county": 5,
        "county_naics5": 1620,
    }
    truth = data.frame.group_by("cnty").agg(pl.col(*EMP).sum()).sort("cnty")
    county = tables["county"]
    for a in EMP:
        z = (county.get_column(a) - truth.get_column(a)) / county.get_column(f"{a}_std")
        assert np.all(np.abs(z.to_numpy()) < 5)  # unclipped with prob ≥ 0.99; Gaussian noise
    state = tables["state"]
    total = float(data.frame.get_column("m3emp").sum())
    assert abs(state.item(0, "m3emp") - total) < 5 * state.item(0, "m3emp_std")
    assert not any(math.isnan(v) for v in tables["identity"].get_column("m1emp_std").to_list())


def test_log_shift_with_a_large_distance_releases_through_the_command(tmp_path: Path) -> None:
    """ψ = log(x + 1) with γ_wage = 50 (σ = γ/μ ≈ 71 and 83: e^{σ²} is past the float
    range): ``eree protect`` releases (was an OverflowError traceback in the plug-in
    variance). Each ψ-mechanism table's wage std is √v̂ = e^ω √(1 − e^{−σ²}) = e^ω
    (Thm 6.6 with x̃ + a = e^{ω−σ²/2}), and its published upper CI end is
    e^{ω + zσ} − 1 (§6.1), so std = (ci_high + 1)·e^{−zσ} wherever ci_high > 0."""
    from scipy.stats import norm

    from tests.cli.inputs import judge, run_cli, write_estab_case

    spec = write_estab_case(tmp_path, "parquet")
    text = spec.read_text().replace(
        'neighbor = "sqrt"', 'neighbor = { kind = "log_shift", a = 1.0 }'
    )
    text = text.replace("wage = 0.15", "wage = 0.7", 1).replace("wage = 0.15", "wage = 0.6")
    text += ('[[query]]\nname = "own"\nby = ["own"]\nmechanism = "psi"\n'
             "mu = { m1emp = 0.6, m2emp = 0.6, m3emp = 0.6, wage = 0.6 }\n"
             '[[query]]\nname = "naics"\nby = ["naics"]\nmechanism = "adaptive"\n'
             "mu = { m1emp = 0.6, m2emp = 0.6, m3emp = 0.6, wage = 0.6 }\n")  # fmt: skip
    assert "log_shift" in text and "wage = 50.0" in text and "0.15" not in text
    spec.write_text(text)
    out = tmp_path / "out"
    o = judge(run_cli(["protect", str(spec), "--out", str(out), "--seed", "7"]), out)
    assert o.ok and not o.traceback, o.text
    z = float(norm.ppf(0.975))
    checked = 0
    for table, mu in (("identity", 0.7), ("own", 0.6)):
        t = pl.read_parquet(out / "tables" / f"{table}.parquet").filter(pl.col("wage_ci_high") > 0)
        std = (t["wage_ci_high"].to_numpy() + 1.0) * math.exp(-z * 50.0 / mu)
        np.testing.assert_allclose(t["wage_std"].to_numpy(), std, rtol=1e-9)
        checked += t.height
    assert checked >= 5
