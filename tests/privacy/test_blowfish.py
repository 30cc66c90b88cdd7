"""The workshop's Blowfish policy (papers/002_*, §4.2–4.3): edges, d_G, accounting, explain."""

import math

import pytest

from eree.errors import PrivacyParameterError, SpecError
from eree.privacy.blowfish import (
    EstablishmentRecord,
    PolicyGraph,
    alpha_close,
    blowfish_semantics,
    eq4,
    eq5,
    multiset_difference_size,
    paper_size_steps,
    size_steps,
    workforces,
)

NP = ("tract 1", "62", "A05")


def rec(workforce, private=(), public=NP):
    return EstablishmentRecord.of(workforce, private=private, public=public)


G = PolicyGraph(0.1)  # nested reading (default)
GP = PolicyGraph(0.1, reading="printed")


# ------------------------------------------------------------------ records and α-closeness


def test_record_from_list_or_histogram_is_the_same_multiset():
    a = rec(["F", "F", "M"])
    b = rec({"M": 1, "F": 2})
    assert a == b and a.size == 3 and a.h == {"F": 2, "M": 1}
    assert rec({"F": 0}) == rec([])  # zero counts are dropped


def test_alpha_close_is_the_pointwise_histogram_bound_and_exact_at_the_boundary():
    s = rec({"F": 10, "M": 10}).h
    assert alpha_close(rec({"F": 11, "M": 11}).h, s, 0.1)  # 11 <= 1.1 * 10
    assert not alpha_close(rec({"F": 12, "M": 10}).h, s, 0.1)
    assert not alpha_close(rec({"F": 10, "M": 10, "X": 1}).h, s, 0.1)  # new type: 1 > 1.1 * 0
    # α = 0.3 is not exact in binary: 13 <= 1.3 * 10 must still hold
    assert alpha_close(rec({"F": 13}).h, rec({"F": 10}).h, 0.3)
    # one-sided, as printed: anything below S is α-close to S (the empty set too)
    assert alpha_close(rec({}).h, s, 0.1)
    assert multiset_difference_size(rec({"F": 12, "M": 9}).h, s) == 2


# ------------------------------------------------------------------ edges on small examples


@pytest.mark.parametrize(
    "u,v,rule",
    [
        # Eq. 4, one worker more or less (workers protected as under DP)
        (rec({"F": 10, "M": 10}), rec({"F": 11, "M": 10}), "eq4"),
        (rec({"F": 11, "M": 10}), rec({"F": 10, "M": 10}), "eq4"),  # undirected
        (rec({"F": 2}), rec({"F": 2, "X": 1}), "eq4"),  # a worker of a new type
        (rec({}), rec({"F": 1}), "eq4"),  # the first worker
        # Eq. 4, α-close growth of every cell
        (rec({"F": 10, "M": 10}), rec({"F": 11, "M": 11}), "eq4"),
        (rec({"F": 100, "M": 50}), rec({"F": 110, "M": 55}), "eq4"),
        (rec({"F": 100, "M": 50}), rec({"F": 105, "M": 50}), "eq4"),
        # Eq. 5: private attributes differ, same workforce and public attributes
        (rec({"F": 3}, private=("p",)), rec({"F": 3}, private=("q",)), "eq5"),
    ],
)
def test_edges(u, v, rule):
    assert G.edge_rule(u, v) == rule and G.is_edge(v, u)
    assert GP.is_edge(u, v)  # every nested edge is an edge as printed


@pytest.mark.parametrize(
    "u,v",
    [
        (rec({"F": 10, "M": 10}), rec({"F": 12, "M": 10})),  # one cell beyond (1+α)
        (rec({"F": 3}), rec({"F": 5})),  # two workers, 5 > 1.1 * 3
        (rec({"F": 100, "M": 50}), rec({"F": 111, "M": 50})),  # 111 > 110
        (rec({"F": 10}), rec({"F": 10})),  # no change
        (rec({"F": 10}), rec({"F": 10}, public=("tract 2", "62", "A05"))),  # public attrs
        (rec({"F": 10}), rec({"F": 11}, public=("tract 1", "62", "A00"))),
        (rec({"F": 3}, private=("p",)), rec({"F": 4}, private=("q",))),  # both change
        (rec({"F": 10, "M": 10}), rec({"F": 11, "M": 9})),  # replace a worker: not nested
    ],
)
def test_not_edges_nested(u, v):
    assert not G.is_edge(u, v) and G.edge_rule(u, v) is None


def test_printed_reading_makes_every_workforce_adjacent_to_empty_and_to_singletons():
    """Eq. 4 as printed: α-closeness is one-sided and |S′∖S| = 1 does not need S ⊆ S′."""
    big = rec({"F": 500, "M": 300})
    assert GP.is_edge(big, rec({}))  # S ~ ∅: h(∅) <= (1+α) h(S)
    assert GP.is_edge(big, rec({"X": 1}))  # |{X} ∖ S| = 1
    assert GP.is_edge(rec({"F": 10, "M": 10}), rec({"F": 11, "M": 9}))
    assert not G.is_edge(big, rec({})) and not G.is_edge(big, rec({"X": 1}))
    # hence d_G <= 2 between any two workforces: size is not protected by α at all
    universe = [rec(w) for w in workforces(("F", "M"), 6)]
    for a, b in [({"F": 6}, {"M": 6}), ({"F": 1}, {"F": 6}), ({}, {"F": 3, "M": 3})]:
        assert GP.distance(rec(a), rec(b), universe) <= 2
        assert G.distance(rec(a), rec(b), universe) > 2


def test_eq4_and_eq5_are_the_printed_predicates():
    s, s2 = rec({"F": 10}), rec({"F": 11})
    assert eq4(s, s2, 0.1) and eq4(s2, s, 0.1)  # 10 <= 1.1 * 11 (one-sided bound)
    assert eq4(s, s2, 0.1, reading="nested") and not eq4(s2, s, 0.1, reading="nested")
    assert not eq4(s, s2.__class__(s2.workforce, ("p",), NP), 0.1)  # P must match
    assert eq5(rec({"F": 1}, private=("a",)), rec({"F": 1}, private=("b",)))
    assert not eq5(rec({"F": 1}), rec({"F": 1}))


def test_additive_delta_widens_the_worker_edge():
    g2 = PolicyGraph(0.1, additive=2)
    assert g2.is_edge(rec({"F": 3}), rec({"F": 5})) and not G.is_edge(rec({"F": 3}), rec({"F": 5}))
    assert not g2.is_edge(rec({"F": 3}), rec({"F": 6}))


@pytest.mark.parametrize(
    "kwargs,err",
    [
        ({"alpha": 0.0}, PrivacyParameterError),
        ({"alpha": float("nan")}, PrivacyParameterError),
        ({"alpha": 0.1, "additive": 0}, PrivacyParameterError),
        ({"alpha": 0.1, "additive": 1.5}, PrivacyParameterError),
        ({"alpha": 0.1, "reading": "loose"}, ValueError),
    ],
)
def test_policy_parameters_are_checked(kwargs, err):
    with pytest.raises(err):
        PolicyGraph(**kwargs)


# ------------------------------------------------------------------ d_G


def test_public_attributes_are_infinitely_far_and_private_attributes_one_step():
    a, b = rec({"F": 5}), rec({"F": 5}, public=("tract 2", "62", "A05"))
    assert G.distance(a, b, [a, b]) == math.inf
    p, q = rec({"F": 5}, private=("x",)), rec({"F": 5}, private=("y",))
    assert G.distance(p, q, [p, q]) == 1
    # private attributes and workforce both change: two steps (Eq. 5 then Eq. 4)
    r = rec({"F": 6}, private=("y",))
    u = [p, q, r, rec({"F": 6}, private=("x",))]
    assert G.distance(p, r, u) == 2


def test_bfs_distance_equals_the_size_chain_for_one_worker_type():
    alpha = 0.1
    universe = [rec({"F": k}) for k in range(0, 41)]
    for x in (0, 1, 3, 9, 10, 15, 22):
        for y in (x + 1, 2 * x + 1, 40):
            if y <= 40:
                assert G.distance(rec({"F": x}), rec({"F": y}), universe) == size_steps(x, y, alpha)


def test_size_chain_against_the_papers_closed_form():
    # §4.3: y <= (1+α)^k x  ⇒  e^{kε}. With whole workers the chain differs:
    assert paper_size_steps(15, 18, 0.1) == 2 and size_steps(15, 18, 0.1) == 3  # floors
    assert paper_size_steps(1, 2, 0.1) == 8 and size_steps(1, 2, 0.1) == 1  # one-worker edge
    assert size_steps(100, 110, 0.1) == paper_size_steps(100, 110, 0.1) == 1
    # for x >= 1/α each step multiplies by at most 1+α, so d_G >= k
    for x in range(10, 200, 7):
        for r in (1.05, 1.5, 3.0):
            y = math.ceil(r * x)
            assert size_steps(x, y, 0.1) >= paper_size_steps(x, y, 0.1)


def test_two_worker_types_bfs():
    universe = [rec(w) for w in workforces(("F", "M"), 24)]
    base = rec({"F": 10, "M": 10})
    assert G.distance(base, rec({"F": 11, "M": 11}), universe) == 1
    assert G.distance(base, rec({"F": 12, "M": 10}), universe) == 2
    assert G.distance(base, rec({"F": 12, "M": 12}), universe) == 2  # 10→11→12 in both cells
    assert G.distance(base, rec({"F": 11, "M": 9}), universe) == 2  # down then up


# ------------------------------------------------------------------ accounting and explain

BLOWFISH_SPEC = """
name = "small"
[data]
kind = "eree"
workplace = "data/workplace.parquet"
worker = "data/worker.parquet"
job = "data/job.parquet"
[privacy]
definition = "blowfish"
alpha = 0.1
[[query]]
name = "county_industry"
by = ["county", "naics_sector"]
mechanism = "smooth_laplace"
variant = "workshop"
epsilon = 1.0
[[query]]
name = "county"
by = ["county"]
mechanism = "log_laplace"
variant = "workshop"
additive = 2
epsilon = 1.0
[[query]]
name = "county_sex"
by = ["county", "sex"]
mechanism = "smooth_gamma"
variant = "workshop"
epsilon = 2.0
[[query]]
name = "county_age"
by = ["county", "age"]
mechanism = "smooth_gamma"
epsilon = 6.0
"""


@pytest.fixture
def blowfish_spec(tmp_path):
    from tests.release.conftest import write_small_job_tables

    write_small_job_tables(tmp_path / "data")
    p = tmp_path / "spec.toml"
    p.write_text(BLOWFISH_SPEC)
    return p


def test_explain_blowfish_charges_and_semantics(blowfish_spec):
    from eree.release.protect import explain
    from eree.release.spec import load_spec

    ex = explain(load_spec(blowfish_spec))
    priv = ex["privacy"]
    assert priv["definition"] == "blowfish"
    assert priv["total"]["epsilon"] == pytest.approx(10.0)
    q = {c["query"]: c for c in priv["queries"]}
    assert q["county_sex"]["multiplicity"] == 2 and q["county_sex"]["per_cell"]["epsilon"] == 1.0
    assert q["county_sex"]["params"]["beta"] == pytest.approx(0.25)
    assert q["county"]["params"]["gamma"] == pytest.approx(20.0)  # Δ/α = 2/0.1
    assert "workshop log_laplace, Δ=2" in q["county"]["guarantee"]
    assert q["county_age"]["params"]["variant"] == "sigmod"
    assert q["county_industry"]["per_cell"]["delta"] == pytest.approx(
        math.exp(-1 / (2 * math.log(1.1)))
    )
    assert any("parallel composition" in n for n in priv["notes"])
    assert any("eta'" in n for n in priv["notes"])
    sem = ex["semantics"]
    text = " ".join(sem["statements"])
    for phrase in ("Eq. 4", "Eq. 5", "differential privacy", "(1+0.1)^k", "not protected"):
        assert phrase in text
    edges = sem["tables"][0]["rows"]
    assert [r[1] for r in edges] == ["yes", "yes", "no", "no", "yes"]
    sizes = sem["tables"][1]["rows"]
    assert sizes[1][:2] == [1.1, 1] and sizes[2][1] == 5  # ⌈ln 1.5 / ln 1.1⌉ = 5


def test_blowfish_semantics_bounds():
    from eree.privacy.accountant import Cost, PrivacyReport

    sem = blowfish_semantics(PrivacyReport("blowfish", 0.1, (), Cost(epsilon=1.0, delta=0.0)))
    two = next(s for s in sem["size_protection"] if s["size_ratio"] == 2.0)
    assert two["k"] == 8 and two["bayes_factor_bound"] == pytest.approx(math.exp(8))


def _plan(blowfish_spec, replace):
    from eree.release.spec import load_spec

    text = BLOWFISH_SPEC
    for a, b in replace:
        assert a in text
        text = text.replace(a, b)
    blowfish_spec.write_text(text)
    return load_spec(blowfish_spec)


@pytest.mark.parametrize(
    "replace,match",
    [
        ([('definition = "blowfish"', 'definition = "eree-weak"')], 'use definition = "blowfish"'),
        (
            [('variant = "workshop"\nadditive = 2', "additive = 2")],
            r"additive does not apply to log_laplace; it applies to: "
            r'log_laplace \(variant = "workshop"\)',
        ),
        (  # per cell ε = 0.6/2 = 0.3 < 4 ln 1.1 = 0.381
            [('variant = "workshop"\nepsilon = 2.0', 'variant = "workshop"\nepsilon = 0.6')],
            r"alpha \+ 1 <= e\^\(epsilon/4\)",
        ),
        ([("additive = 2", "additive = 1.0\nforce = false\nepsilon_x = 1")], "epsilon_x"),
        ([("alpha = 0.1\n", "")], "alpha is required"),
    ],
)
def test_blowfish_plan_refusals(blowfish_spec, replace, match):
    from eree.release.protect import explain

    with pytest.raises((PrivacyParameterError, SpecError), match=match):
        explain(_plan(blowfish_spec, replace))


def test_cli_explain_prints_the_policy(blowfish_spec):
    from typer.testing import CliRunner

    from eree.cli import app

    res = CliRunner().invoke(app, ["explain", str(blowfish_spec)])
    assert res.exit_code == 0, res.output
    assert "Blowfish" in res.output and "Eq. 5" in res.output
    assert "Which record changes are edges" in res.output


def test_protect_runs_workshop_variants(blowfish_spec, tmp_path):
    from eree.mechanisms.noise import SeededNoise
    from eree.release.protect import protect
    from eree.release.spec import load_spec

    res = protect(load_spec(blowfish_spec), tmp_path / "out", SeededNoise(2))
    t = {q.name: q.table for q in res.tables}
    assert t["county_sex"]["jobs_std"].null_count() == t["county_sex"].height  # smooth: withheld
    assert t["county"]["jobs_std"].null_count() == 0  # Log-Laplace: public λ
    assert res.manifest["privacy"]["definition"] == "blowfish"
    assert res.manifest["semantics"]["definition"] == "blowfish"
