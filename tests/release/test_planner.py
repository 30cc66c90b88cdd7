"""``eree plan``: targets to budgets, and a total split — against closed forms computed here.

Expectations come from the papers' error laws, solved by hand in each test:

* Smooth Laplace (Haney et al. Alg 3): noise 2S/ε_cell·Lap(1), S = max(α·x_v, 1); a count
  is published within t of the truth exactly when |noise| < ⌊t⌋ + ½ (grid 1), so the
  smallest ε meeting P ≥ c is d·2S·ln(1/(1−c))/(⌊t⌋ + ½).
* Smooth Gamma (Alg 2): std 5S/ε₁, ε₁ = ε_cell − 5 ln(1+α); a cv target gives ε₁ = 5S/(cv·n).
* Log-Laplace (Alg 1, Lemma 8.2): std (n+γ)·√((1−λ²)²/(1−4λ²) − 1), λ = 2 ln(1+α)/ε_cell,
  solved for λ here by bisection.
* ψ = √x (Webb et al. Thm 6.6): Var = 2σ²(2x + σ²), σ = γ/μ; a cv target solves the
  quadratic in σ².
* A total split over statistics whose relative E|error| is aᵢ/εᵢ: the minimiser of
  Σ wᵢaᵢ/εᵢ under Σ εᵢ = E is εᵢ ∝ √(wᵢaᵢ) (Lagrange); under Σ μᵢ² = M² with aᵢ/μᵢ it is
  μᵢ ∝ (wᵢaᵢ)^(1/3).

Every planned value is rounded up (targets) or down (a total) to three significant digits;
the tests check the 1% that rounding allows and that one step below misses the target.
"""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eree.cli import app
from eree.release.planner import PlanError, plan_budget
from eree.release.spec import load_spec

RUNNER = CliRunner()


def _up3(x: float) -> float:
    scale = 10.0 ** (math.floor(math.log10(x)) - 2)
    return math.ceil(x / scale - 1e-9) * scale


def _lodes_spec(tmp_path: Path, queries: str, extra: str = "") -> Path:
    d = tmp_path / "data"
    d.mkdir(exist_ok=True)
    for f in ("workplace", "worker", "job"):
        (d / f"{f}.parquet").touch()  # eree plan reads no data: empty files suffice
    p = tmp_path / "spec.toml"
    p.write_text(
        f"""# a comment the completed spec keeps
name = "plan-test"
[data]
kind = "eree"
workplace = "data/workplace.parquet"
worker = "data/worker.parquet"
job = "data/job.parquet"
[privacy]
definition = "eree-weak"
alpha = 0.1
{extra}
{queries}
""",
        encoding="utf-8",
    )
    return p


def _gedp_spec(tmp_path: Path, queries: str, extra: str = "", neighbor: str = '"sqrt"') -> Path:
    (tmp_path / "est.parquet").touch()
    p = tmp_path / "spec.toml"
    p.write_text(
        f"""name = "plan-gedp"
[data]
kind = "establishments"
path = "est.parquet"
id = "primary_key"
public = ["state", "cnty"]
confidential = ["m1emp", "wage"]
[privacy]
definition = "gedp"
neighbor = {neighbor}
distance = {{ m1emp = 0.5, wage = 2.0 }}
{extra}
{queries}
""",
        encoding="utf-8",
    )
    return p


# ------------------------------------------------------------------ targets


@pytest.mark.parametrize(("d_by", "d"), [('["county"]', 1), ('["county", "sex"]', 2),
                                         ('["county", "age", "sex"]', 6)])  # fmt: skip
@pytest.mark.parametrize(
    ("rel", "at", "conf", "share"),
    [(0.1, 50, 0.9, 1.0), (0.05, 200, 0.95, 0.3), (0.2, 10, 0.8, 0.5)],
)
def test_smooth_laplace_relative_target_is_the_closed_form(tmp_path, d_by, d, rel, at, conf, share):
    spec = _lodes_spec(
        tmp_path,
        f"""[[query]]
name = "q"
by = {d_by}
mechanism = "smooth_laplace"
target = {{ relative_error = {rel}, at = {at}, confidence = {conf}, largest_share = {share} }}
""",
    )
    got = plan_budget(load_spec(spec)).statistics[0].chosen
    s = max(0.1 * max(share * at, 1.0), 1.0)
    reach = math.floor(rel * at + 1e-9) + 0.5  # |error| ≤ t ⇔ |noise| < ⌊t⌋ + ½ on the grid 1
    eps = d * 2 * s * math.log(1 / (1 - conf)) / reach
    # δ defaults to d·δ_min(ε_cell), always valid; the target alone sets ε
    assert got == pytest.approx(_up3(eps), rel=1e-9)


@pytest.mark.parametrize(("cv", "at"), [(0.05, 100), (0.2, 30), (0.01, 5000)])
def test_smooth_gamma_cv_target_is_the_closed_form(tmp_path, cv, at):
    spec = _lodes_spec(
        tmp_path,
        f"""[[query]]
name = "q"
by = ["county", "sex"]
mechanism = "smooth_gamma"
target = {{ cv = {cv}, at = {at}, largest_share = 0.2 }}
""",
    )
    got = plan_budget(load_spec(spec)).statistics[0].chosen
    s = max(0.1 * 0.2 * at, 1.0)
    eps1 = 5 * s / (cv * at)
    assert got == pytest.approx(_up3(2 * (eps1 + 5 * math.log(1.1))), rel=1e-9)


@pytest.mark.parametrize(("cv", "at"), [(0.05, 100), (0.1, 20), (0.02, 1000)])
def test_log_laplace_cv_target_solves_lemma_8_2(tmp_path, cv, at):
    spec = _lodes_spec(
        tmp_path,
        f"""[[query]]
name = "q"
by = ["county"]
mechanism = "log_laplace"
target = {{ cv = {cv}, at = {at} }}
""",
    )
    got = plan_budget(load_spec(spec)).statistics[0].chosen
    gamma = 10.0

    def sd(lam: float) -> float:
        return (at + gamma) * math.sqrt((1 - lam**2) ** 2 / (1 - 4 * lam**2) - 1)

    lo, hi = 1e-9, 0.4999
    for _ in range(200):  # sd grows with λ: the largest λ with sd ≤ cv·at
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sd(mid) <= cv * at else (lo, mid)
    eps = 2 * math.log(1.1) / lo
    assert got == pytest.approx(_up3(eps), rel=1e-6)


@pytest.mark.parametrize(("cv", "at"), [(0.1, 400.0), (0.02, 10_000.0)])
def test_psi_sqrt_cv_target_solves_theorem_6_6(tmp_path, cv, at):
    spec = _gedp_spec(
        tmp_path,
        f"""[[query]]
name = "identity"
by = "identity"
mechanism = "psi"
target = {{ wage = {{ cv = {cv}, at = {at} }} }}
""",
    )
    st = plan_budget(load_spec(spec)).statistics
    assert [s.statistic for s in st] == ["wage"]
    # 2σ⁴ + 4xσ² − (cv·x)² = 0
    x = at
    s2 = (-4 * x + math.sqrt(16 * x * x + 8 * (cv * x) ** 2)) / 4
    assert st[0].chosen == pytest.approx(_up3(2.0 / math.sqrt(s2)), rel=1e-6)


def test_the_planned_value_is_the_smallest_that_meets_the_target(tmp_path):
    """One step of the last significant digit below misses the target (minimality)."""
    import dataclasses

    spec = _lodes_spec(
        tmp_path,
        """[[query]]
name = "q"
by = ["county", "sex"]
mechanism = "smooth_gamma"
target = { relative_error = 0.1, at = 80, confidence = 0.9, largest_share = 0.5 }
""",
    )
    r = plan_budget(load_spec(spec))
    s = r.statistics[0]
    assert s.achieved >= 0.9
    mech = r.built.queries[0].mechanisms[0]
    step = 10.0 ** (math.floor(math.log10(s.chosen)) - 2)
    lower = dataclasses.replace(mech, epsilon=s.chosen - step)
    e = lower.expected_error({"count": 80.0, "x_v": 40.0, "count_truncated": 80.0})
    assert e.within(8.0) < 0.9


# ------------------------------------------------------------------ a total split


@pytest.mark.parametrize("share", [None, 0.5, 0.02])
def test_split_of_epsilon_is_the_lagrange_solution(tmp_path, share):
    """Two Smooth Laplace queries: relative E|error| = aᵢ/εᵢ with aᵢ = 2·S·dᵢ/at."""
    plan = "[plan]\nepsilon = 40\nat = 200" + (f"\nlargest_share = {share}" if share else "")
    spec = _lodes_spec(tmp_path, """[[query]]
name = "a"
by = ["county"]
mechanism = "smooth_laplace"
epsilon = 1.0
weight = 3.0
[[query]]
name = "b"
by = ["county", "age", "sex"]
mechanism = "smooth_laplace"
epsilon = 1.0
""", extra=plan)  # fmt: skip
    r = plan_budget(load_spec(spec))
    sens = max(0.1 * (share or 1.0) * 200, 1.0)  # S = max(α·x_v, 1), x_v = share·at
    a = {"a": 3.0 * 2 * sens * 1 / 200, "b": 1.0 * 2 * sens * 6 / 200}  # w·2S·d/at
    root = {k: math.sqrt(v) for k, v in a.items()}
    want = {k: 40 * v / sum(root.values()) for k, v in root.items()}
    got = {s.query: s.chosen for s in r.statistics}
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=0.01), (got, want)
    assert sum(got.values()) <= 40
    assert r.total == pytest.approx(sum(got.values()))
    assert r.total >= 40 * 0.99


def test_split_of_mu_is_the_lagrange_solution(tmp_path):
    """ψ = x (dp): relative E|error| = γ·√(2/π)/(μ·at): μᵢ ∝ (wᵢaᵢ)^(1/3), Σμᵢ² = M²."""
    spec = _gedp_spec(tmp_path, """[[query]]
name = "state"
by = ["state"]
mechanism = "psi"
mu = { m1emp = 1.0, wage = 1.0 }
weight = 2.0
[[query]]
name = "county"
by = ["state", "cnty"]
mechanism = "psi"
mu = { wage = 1.0 }
""", extra="[plan]\nmu = 1.5\nat = { m1emp = 100, wage = 1000 }", neighbor='"dp"')  # fmt: skip
    r = plan_budget(load_spec(spec))
    c = math.sqrt(2 / math.pi)
    a = {("state", "m1emp"): 2 * 0.5 * c / 100, ("state", "wage"): 2 * 2.0 * c / 1000,
         ("county", "wage"): 2.0 * c / 1000}  # fmt: skip
    cube = {k: v ** (1 / 3) for k, v in a.items()}
    norm = math.sqrt(sum(v * v for v in cube.values()))
    got = {(s.query, s.statistic): s.chosen for s in r.statistics}
    for k, v in cube.items():
        assert got[k] == pytest.approx(1.5 * v / norm, rel=0.01), (got, k)
    assert math.sqrt(sum(v * v for v in got.values())) <= 1.5


def test_targets_are_floors_of_a_split(tmp_path):
    spec = _lodes_spec(tmp_path, """[[query]]
name = "a"
by = ["county"]
mechanism = "smooth_laplace"
target = { relative_error = 0.02, at = 100, largest_share = 0.1 }
[[query]]
name = "b"
by = ["county", "sex"]
mechanism = "smooth_laplace"
weight = 100
""", extra="[plan]\nepsilon = 30")  # fmt: skip
    r = plan_budget(load_spec(spec))
    a = next(s for s in r.statistics if s.query == "a")
    assert a.achieved >= 0.9
    assert r.total <= 30


def test_a_total_below_what_the_targets_need_is_refused(tmp_path):
    spec = _lodes_spec(tmp_path, """[[query]]
name = "a"
by = ["county"]
mechanism = "smooth_laplace"
target = { relative_error = 0.01, at = 100 }
""", extra="[plan]\nepsilon = 1")  # fmt: skip
    with pytest.raises(PlanError, match=r"\[plan\].epsilon = 1 is less than"):
        plan_budget(load_spec(spec))


def test_a_target_the_mechanism_cannot_judge_is_refused_with_the_reason(tmp_path):
    spec = _lodes_spec(
        tmp_path,
        """[[query]]
name = "a"
by = ["county"]
mechanism = "smooth_laplace"
target = { ci_half_width = 5, at = 100 }
""",
    )
    with pytest.raises(PlanError, match="publishes no confidence interval"):
        plan_budget(load_spec(spec))


# ------------------------------------------------------------------ the command


def test_plan_writes_a_completed_spec_that_validates_and_keeps_comments(tmp_path):
    spec = _lodes_spec(
        tmp_path,
        """[[query]]
name = "a"
by = ["county", "sex"]
mechanism = "log_laplace"
target = { cv = 0.05, at = 100 }
[[query]]
name = "b"
by = ["county"]
mechanism = "smooth_gamma"
epsilon = 3.0
""",
    )
    out = tmp_path / "elsewhere" / "planned.toml"
    out.parent.mkdir()
    r = RUNNER.invoke(app, ["plan", str(spec), "--write", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text(encoding="utf-8")
    assert "# a comment the completed spec keeps" in text
    raw = tomllib.loads(text)
    assert raw["query"][1]["epsilon"] == 3.0  # an unplanned query is untouched
    assert raw["data"]["workplace"] == "../data/workplace.parquet"  # rebased
    assert raw["query"][0]["epsilon"] == plan_budget(load_spec(spec)).statistics[0].chosen
    v = RUNNER.invoke(app, ["explain", str(out)])
    assert v.exit_code == 0 and "target-not-met" not in v.output, v.output
    again = RUNNER.invoke(app, ["plan", str(spec), "--write", str(out)])
    assert again.exit_code == 2 and "exists" in again.output


def test_plan_json_and_a_spec_without_values_is_refused_by_explain(tmp_path):
    spec = _lodes_spec(
        tmp_path,
        """[[query]]
name = "a"
by = ["county"]
mechanism = "smooth_laplace"
target = { relative_error = 0.1, at = 50 }
""",
    )
    r = RUNNER.invoke(app, ["plan", str(spec), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["parameter"] == "epsilon" and d["statistics"][0]["planned"]
    e = RUNNER.invoke(app, ["explain", str(spec)])
    assert e.exit_code == 2 and "eree plan SPEC --write FILE" in e.output, e.output


def test_validate_warns_when_a_stated_epsilon_misses_its_target(tmp_path):
    spec = _lodes_spec(
        tmp_path,
        """[[query]]
name = "a"
by = ["county"]
mechanism = "smooth_laplace"
epsilon = 0.5
target = { relative_error = 0.1, at = 50 }
""",
    )
    r = RUNNER.invoke(app, ["explain", str(spec)])
    assert r.exit_code == 0 and "target-not-met" in r.output and "not met" in r.output


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("{ relative_error = 0.1 }", "at (the representative cell size) is required"),
        ("{ relative_error = 0.1, cv = 0.1, at = 5 }", "exactly one of"),
        ("{ cv = 0.1, at = 5, confidence = 0.9 }", "confidence applies to a relative_error"),
        ("{ relative_error = 0.1, at = 5, confidence = 1 }", "confidence must lie in"),
        ("{ relative_error = -1, at = 5 }", "relative_error must be a number > 0"),
        ("{ relative_error = 0.1, at = 5, largest_share = 2 }", "largest_share must lie in"),
        ("{ relative_error = 0.1, at = 5, size = 3 }", "unknown key 'size'"),
        ("0.1", "must be a table"),
    ],
)
def test_a_malformed_target_is_one_line_naming_the_key(tmp_path, target, message):
    spec = _lodes_spec(
        tmp_path,
        f"""[[query]]
name = "a"
by = ["county"]
mechanism = "smooth_laplace"
target = {target}
""",
    )
    r = RUNNER.invoke(app, ["plan", str(spec)])
    assert r.exit_code == 2, r.output
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "query 'a'" in lines[0] and message in lines[0], r.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("[plan]\nmu = 2", "[plan].mu does not apply to the ER-EE family"),
        ("[plan]\nepsilon = 0", "[plan].epsilon must be a number > 0"),
        ("[plan]\nepsilon = 5\nshare = 1", "unknown key 'share'"),
        ("[plan]\nepsilon = 5\nat = { wage = 5 }", "[plan].at must be a number > 0"),
        ("[plan]\nepsilon = 5\nlargest_share = 0", "[plan].largest_share must be a number > 0"),
        ("[plan]\nepsilon = 5\nlargest_share = 1.5", "[plan].largest_share must lie in (0, 1]"),
    ],
)
def test_a_malformed_plan_section_is_one_line(tmp_path, extra, message):
    spec = _lodes_spec(tmp_path, """[[query]]
name = "a"
by = ["county"]
mechanism = "smooth_laplace"
epsilon = 1
weight = 2
""", extra=extra)  # fmt: skip
    r = RUNNER.invoke(app, ["plan", str(spec)])
    assert r.exit_code == 2, r.output
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert len(lines) == 1 and message in lines[0], r.output


def test_gedp_targets_name_confidential_attributes_and_need_plan_at(tmp_path):
    spec = _gedp_spec(
        tmp_path,
        """[[query]]
name = "identity"
by = "identity"
mechanism = "psi"
target = { state = { cv = 0.1, at = 5 } }
""",
    )
    r = RUNNER.invoke(app, ["plan", str(spec)])
    assert r.exit_code == 2 and "not a confidential column" in r.output
    spec = _gedp_spec(tmp_path, """[[query]]
name = "identity"
by = "identity"
mechanism = "psi"
mu = { wage = 1 }
""", extra="[plan]\nmu = 2")  # fmt: skip
    r = RUNNER.invoke(app, ["plan", str(spec)])
    assert r.exit_code == 2 and "[plan].at.wage" in r.output, r.output


def test_noise_infusion_has_no_budget_to_plan(tmp_path):
    spec = (
        _lodes_spec(
            tmp_path,
            """[[query]]
name = "a"
by = ["county"]
mechanism = "noise_infusion"
""",
        )
        .read_text(encoding="utf-8")
        .replace('definition = "eree-weak"\nalpha = 0.1', 'definition = "none"')
    )
    (tmp_path / "spec.toml").write_text(spec, encoding="utf-8")
    r = RUNNER.invoke(app, ["plan", str(tmp_path / "spec.toml")])
    assert r.exit_code == 2 and "noise infusion has no formal budget" in r.output, r.output


def test_a_query_own_at_sets_its_representative_cell_in_a_split(tmp_path):
    """Smooth Laplace with S = 1 (x_v small): relative E|error| = 2·d/(ε·at); εᵢ ∝ √(dᵢ/atᵢ)."""
    spec = _lodes_spec(tmp_path, """[[query]]
name = "a"
by = ["county"]
mechanism = "smooth_laplace"
epsilon = 1.0
at = 20
[[query]]
name = "b"
by = ["county", "age", "sex"]
mechanism = "smooth_laplace"
epsilon = 1.0
at = 2000
""", extra="[plan]\nepsilon = 30\nlargest_share = 0.001")  # fmt: skip
    r = plan_budget(load_spec(spec))
    root = {"a": math.sqrt(2 * 1 / 20), "b": math.sqrt(2 * 6 / 2000)}
    got = {s.query: s.chosen for s in r.statistics}
    for k, v in root.items():
        assert got[k] == pytest.approx(30 * v / sum(root.values()), rel=0.01), got
    assert {s.query: s.at for s in r.statistics} == {"a": 20.0, "b": 2000.0}
    assert not any("split at [plan].at" in n for n in r.notes)  # each query has its own at
    spec.write_text(spec.read_text(encoding="utf-8").replace("at = 2000\n", ""), "utf-8")
    r = plan_budget(load_spec(spec))
    assert any(n.startswith("split at [plan].at for b:") for n in r.notes), r.notes


@pytest.mark.parametrize(("at", "jpe"), [(5000, None), (5000, 50.0), (100, None)])
def test_split_share_defaults_to_the_public_variance_model(tmp_path, at, jpe):
    """Without largest_share, x_v = min(5.05·k^−0.585, 1)·at with k = at / jobs per
    establishment (16 by default): the split follows εᵢ ∝ √(wᵢ·2Sᵢdᵢ/at)."""
    extra = f"[plan]\nepsilon = 30\nat = {at}" + (
        f"\njobs_per_establishment = {jpe}" if jpe else ""
    )
    spec = _lodes_spec(tmp_path, """[[query]]
name = "a"
by = ["county"]
mechanism = "smooth_laplace"
epsilon = 1.0
[[query]]
name = "b"
by = ["county", "sex"]
mechanism = "log_laplace"
epsilon = 1.0
""", extra=extra)  # fmt: skip
    r = plan_budget(load_spec(spec))
    k = at / (jpe or 16.0)
    share = min(5.05 * k**-0.585, 1.0)
    sens = max(0.1 * share * at, 1.0)
    got = {s.query: s for s in r.statistics}
    assert got["a"].x_v == pytest.approx(max(share * at, 1.0), rel=1e-9)
    assert got["b"].x_v is None  # Log-Laplace does not read x_v
    # the planned Smooth Laplace error is the law at that x_v: E|error|/at = 2S/(ε·at)
    assert got["a"].relative_error == pytest.approx(2 * sens / (got["a"].chosen * at), rel=1e-9)


@pytest.mark.parametrize(("half", "at"), [(20.0, 100), (5.0, 30)])
def test_log_laplace_ci_half_width_target_solves_its_interval(tmp_path, half, at):
    """The published 95% interval (ñ+γ)e^{±q} − γ, q = λ ln 20 (Alg 1): its expected
    half-width at n is (n+γ)·sinh(q)/(1−λ²) (E[ñ+γ] = (n+γ)/(1−λ²), Lemma 8.2)."""
    spec = _lodes_spec(
        tmp_path,
        f"""[[query]]
name = "q"
by = ["county"]
mechanism = "log_laplace"
target = {{ ci_half_width = {half}, at = {at} }}
""",
    )
    got = plan_budget(load_spec(spec)).statistics[0].chosen
    gamma = 10.0

    def width(lam: float) -> float:
        return (at + gamma) * math.sinh(lam * math.log(20.0)) / (1 - lam**2)

    lo, hi = 1e-9, 0.999
    for _ in range(200):  # the half-width grows with λ: the largest λ meeting it
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if width(mid) <= half else (lo, mid)
    assert got == pytest.approx(_up3(2 * math.log(1.1) / lo), rel=1e-6)


@pytest.mark.parametrize("mechanism", ["log_laplace", "smooth_laplace", "smooth_gamma"])
@pytest.mark.parametrize(
    ("target", "key"),
    [
        ("{ relative_error = 1e308, at = 50 }", "target.relative_error"),
        ("{ relative_error = 0.1, at = 1e308 }", "target.at"),
        ("{ cv = 1e300, at = 1e10 }", "target.cv"),
        ("{ ci_half_width = 1e308, at = 50 }", "target.ci_half_width"),
    ],
)
def test_a_target_beyond_a_float_is_one_line_naming_its_key(tmp_path, mechanism, target, key):
    """relative_error = 1e308 made an error bound of inf jobs (an OverflowError traceback in
    the error law's grid steps); a target's error and size must be counted in grid steps."""
    spec = _lodes_spec(
        tmp_path,
        f"""[[query]]
name = "q"
by = ["county"]
mechanism = "{mechanism}"
target = {target}
""",
    )
    out = tmp_path / "planned.toml"
    r = RUNNER.invoke(app, ["plan", str(spec), "--write", str(out)])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and isinstance(r.exception, SystemExit), r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and key in lines[0] and "at most 1e+15" in lines[0], r.output
    assert not out.exists()


def test_a_large_target_within_a_float_is_planned(tmp_path):
    """At the limit (an error of 1e15 jobs) the plan is made: the guard is no refusal of
    what the error law can count."""
    spec = _lodes_spec(
        tmp_path,
        """[[query]]
name = "q"
by = ["county"]
mechanism = "smooth_laplace"
target = { relative_error = 1e5, at = 1e10 }
""",
    )
    got = plan_budget(load_spec(spec)).statistics[0].chosen
    assert got > 0 and math.isfinite(got)
