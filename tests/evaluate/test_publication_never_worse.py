"""The never-worse promise of publication-grade tables, measured (issue 26).

On the 200,000-job synthetic state of docs/publication-grade.md, with Smooth Gamma (the
mechanism where the first variance model failed): no post-processed marginal may be
worse than its raw values by more than two standard errors of the paired difference
over 20 seeded releases. Power: the first version's model (x_v share k^-0.3) fails the
same check on the same releases (tract × sex of ``lattice-tract`` 0.81x with Smooth
Gamma, 0.86x with Smooth Laplace), so the test can tell a good model from a bad one.
"""

from __future__ import annotations

import functools

import pytest
from typer.testing import CliRunner

from eree.cli import app
from eree.evaluate.publication_grade import evaluate
from eree.postprocess.variance_model import SmoothVarianceModel

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth") / "s6"
    r = CliRunner().invoke(app, ["synth", "lodes", "--jobs", "200000", "--seed", "6",
                                 "--out", str(out)])  # fmt: skip
    assert r.exit_code == 0, r.output
    return out


def _worse(data, workloads=("chain-finest-weak", "chain-state", "lattice-tract")):
    res = evaluate(data, workloads=list(workloads), mechanisms=["smooth_gamma"], seeds=20)
    return [(r.workload, r.marginal, round(r.ratio, 2)) for r in res if r.worse_beyond_2se]


def test_no_marginal_worse_than_raw_beyond_two_se(state):
    assert _worse(state) == []


def test_issue_39_lattice_is_additive_and_never_worse(state):
    # every released pair adds up in the published tables of every seed (checked by the
    # evaluation from the tables, not the release's own check), and no marginal is worse
    # than raw beyond 2 SE; the power check below uses the same 2-SE comparison
    res = evaluate(state, workloads=["lattice-tract"], mechanisms=["smooth_laplace"], seeds=20)
    assert [r.marginal for r in res if r.not_additive] == []
    assert sum(r.pairs for r in res) == 9
    assert [r.marginal for r in res if r.worse_beyond_2se] == []


def test_power_the_lattice_check_fails_under_the_first_model(state, monkeypatch):
    # the same 2-SE check on the same releases fails with the first model's weights
    # (tract × sex 0.86x, 20 seeds): the check can tell
    first = functools.partial(SmoothVarianceModel, beta=0.3, scale=1.0)
    monkeypatch.setattr("eree.release.publication.SmoothVarianceModel", first)
    res = evaluate(state, workloads=["lattice-tract"], mechanisms=["smooth_laplace"], seeds=20)
    assert [r.marginal for r in res if r.worse_beyond_2se] == ["tract_sex"]
    assert [r.marginal for r in res if r.not_additive] == []  # additive all the same


def test_power_the_first_model_fails_the_same_check(state, monkeypatch):
    first = functools.partial(SmoothVarianceModel, beta=0.3, scale=1.0)
    monkeypatch.setattr("eree.release.publication.SmoothVarianceModel", first)
    worse = _worse(state)
    # with the two-pass weights the first model no longer makes chain-finest-weak's
    # tract or chain-state's county worse (they were 0.78x and 0.67x when this test was
    # written, and this test failed on them before issue 39); issue 39's lattice still
    # shows the model's error: tract × sex 0.81x
    assert ("lattice-tract", "tract_sex") in {(w, m) for w, m, _ in worse}
