"""The accountant against hand computation (docs/design.md#er-ee-privacy)."""

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eree.errors import PrivacyParameterError, SpecError
from eree.privacy.composition import Cost, EpsilonDeltaComposition, GaussianComposition
from eree.release.build import build
from eree.release.spec import parse_spec


def req(name, mech, eps, delta=None, worker=(), d=1, **params):
    """A [[query]] over county (+ worker attributes); d is what the domains must give."""
    q = {"name": name, "by": ["county", *worker], "mechanism": mech, **params}
    if eps is not None:
        q["epsilon"] = eps
    if delta is not None:
        q["delta"] = delta
    return q, d


def account_counts(definition, alpha, reqs):
    """The report of a spec with these queries, through the release's own path."""
    raw = {
        "name": "t",
        "data": {"kind": "eree", "jobs": "jobs.parquet"},
        "privacy": {"definition": definition, **({"alpha": alpha} if alpha else {})},
        "query": [q for q, _ in reqs],
    }
    r = build(parse_spec(raw, Path("."))).report()
    for (_, d), c in zip(reqs, r.charges, strict=True):  # d from the declared domains
        assert c.multiplicity == (d if definition not in ("edge-dp", "node-dp") else 1)
    return r


def sequential(costs):
    return EpsilonDeltaComposition().compose(costs)


def gaussian_composition(mus):
    return GaussianComposition().compose([Cost(mu=m) for m in mus])


def test_mixed_weak_spec_hand_computed():
    # strong establishment marginals + weak worker-attribute marginals with d·ε
    alpha = 0.1
    qs = [
        req("tract_ind_own", "smooth_laplace", 1.0),  # establishment attrs only: ε, δ_min(1)
        req("county_ind", "log_laplace", 0.5),  # ε = 0.5, δ = 0
        req("county_age", "smooth_gamma", 3.0, worker=("age",), d=3),  # 3 cells of ε=1
        req("county_age_sex", "smooth_laplace", 6.0, worker=("age", "sex"), d=6),  # 6 × ε=1
    ]
    r = account_counts("eree-weak", alpha, qs)
    dmin1 = math.exp(-1.0 / (2 * math.log(1.1)))
    t = r.charge("tract_ind_own").total
    assert (t.epsilon, t.delta) == (1.0, pytest.approx(dmin1))
    assert r.charge("county_ind").total == Cost(0.5, 0.0)
    assert r.charge("county_age").per_cell.epsilon == pytest.approx(1.0)
    assert r.charge("county_age").multiplicity == 3
    pc = r.charge("county_age_sex").per_cell
    assert (pc.epsilon, pc.delta) == (1.0, pytest.approx(dmin1))
    assert r.charge("county_age_sex").total.delta == pytest.approx(6 * dmin1)
    assert r.total.epsilon == pytest.approx(1.0 + 0.5 + 3.0 + 6.0)
    assert r.total.delta == pytest.approx(7 * dmin1)
    assert "weak" in r.charge("county_age").guarantee
    assert "weak" not in r.charge("tract_ind_own").guarantee


def test_explicit_delta_is_split_over_the_worker_cells():
    r = account_counts(
        "eree-weak", 0.1, [req("q", "smooth_laplace", 2.0, delta=0.2, worker=("sex",), d=2)]
    )
    c = r.charge("q")
    # δ = 0.2 as written runs as the largest float ≤ 1/5 (the float 0.2 lies above it);
    # halving it is exact: the largest float ≤ 1/10
    assert (c.per_cell.epsilon, c.per_cell.delta) == (1.0, math.nextafter(0.1, 0.0))
    assert (c.total.epsilon, c.total.delta) == (2.0, pytest.approx(0.2))


def test_strong_privacy_is_refused_for_worker_attribute_queries():
    with pytest.raises(PrivacyParameterError, match="weak ER-EE"):
        account_counts("eree", 0.1, [req("q", "smooth_laplace", 2.0, worker=("sex",), d=2)])


def test_strong_spec_without_worker_attributes():
    r = account_counts("eree", 0.2, [req("a", "log_laplace", 1.0), req("b", "smooth_gamma", 2.0)])
    assert r.total == Cost(3.0, 0.0)
    assert all("weak" not in c.guarantee for c in r.charges)


def test_per_cell_parameters_are_checked_after_dividing_by_d():
    # ε = 2 over d = 6 gives ε_cell = 1/3 < 5 ln(1.1) = 0.477: Smooth Gamma refuses
    with pytest.raises(PrivacyParameterError, match="epsilon/5"):
        account_counts(
            "eree-weak", 0.1, [req("q", "smooth_gamma", 2.0, worker=("age", "sex"), d=6)]
        )
    # while ε = 2 for an establishment-only query is fine
    account_counts("eree-weak", 0.1, [req("q", "smooth_gamma", 2.0)])


@pytest.mark.parametrize(
    "definition,mech",
    [("eree", "laplace"), ("edge-dp", "smooth_laplace"), ("node-dp", "laplace")],
)
def test_mechanism_must_match_definition(definition, mech):
    with pytest.raises((PrivacyParameterError, SpecError), match="does not"):
        account_counts(definition, 0.1, [req("q", mech, 1.0)])


def test_dp_baselines():
    r = account_counts("edge-dp", None, [req("a", "laplace", 1.0), req("b", "laplace", 0.5)])
    assert r.total == Cost(1.5, 0.0)
    r = account_counts("node-dp", None, [req("a", "truncated_laplace", 1.0, theta=50)])
    assert r.charge("a").params["scale"] == 50.0
    with pytest.raises(PrivacyParameterError, match="theta"):
        account_counts("node-dp", None, [req("a", "truncated_laplace", 1.0)])


def test_missing_epsilon_is_refused():
    with pytest.raises(PrivacyParameterError, match="epsilon is required"):
        account_counts("eree", 0.1, [req("a", "log_laplace", None)])


@given(st.lists(st.floats(0.01, 10), min_size=1, max_size=20))
def test_sequential_composition_adds(eps):
    c = sequential([Cost(e, 0.0) for e in eps])
    assert c.epsilon == pytest.approx(sum(eps))
    assert c.delta == 0.0


@given(st.lists(st.floats(0.01, 5), min_size=1, max_size=30))
def test_gaussian_composition_is_root_sum_of_squares(mus):
    c = gaussian_composition(mus)
    assert c.mu == pytest.approx(math.sqrt(sum(m * m for m in mus)))
    assert c.mu >= max(mus) - 1e-12


def test_semantics_survive_large_total_epsilon():
    # a big release (ε = 46) makes e^{kε} overflow a double: reported in log form
    import json

    from eree.privacy.semantics import er_ee_semantics

    r = account_counts("eree-weak", 0.1, [req("q", "smooth_laplace", 46.0)])
    sem = er_ee_semantics(r)
    big = [s for s in sem["size_protection"] if s["bayes_factor_bound"] is None]
    assert big and all(s["log_bayes_factor_bound"] == s["k"] * 46.0 for s in big)
    json.dumps(sem, allow_nan=False)
    small = er_ee_semantics(account_counts("eree", 0.1, [req("q", "smooth_laplace", 1.0)]))
    first = small["size_protection"][0]
    assert first["bayes_factor_bound"] == pytest.approx(math.exp(first["k"]))
