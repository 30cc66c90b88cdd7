"""The publication-grade evaluation's bias per marginal and its oracle weighting.

``eree evaluate publication-grade`` reports, per marginal, the mean bias of the
marginal's total (raw and post-processed, ± Monte Carlo SE, flagged beyond 3 SE) and the
mean L1 error of an oracle: the same least squares weighted by every cell's true noise
variance (evaluation only).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from eree.cli import app
from eree.data.job_tables import load_job_tables
from eree.engine.polars.engine import PolarsEngine
from eree.evaluate.publication_grade import (
    WORKLOADS,
    evaluate,
    results_markdown,
    workload_plan,
)
from eree.evaluate.publication_oracle import true_variance
from eree.mechanisms.noise import SeededNoise
from eree.release import publication
from eree.release.build import build, split_by
from eree.release.counts import count_tables
from eree.release.publication import workplace_attributes
from eree.release.tables import QueryTable


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth") / "s3"
    r = CliRunner().invoke(app, ["synth", "lodes", "--jobs", "30000", "--seed", "3",
                                 "--out", str(out)])  # fmt: skip
    assert r.exit_code == 0, r.output
    return out


SHIFT = 40.0  # jobs added to every post-processed cell of one marginal


def test_a_biased_post_processor_is_flagged_and_its_bias_measured_exactly(state, monkeypatch):
    kw = {"workloads": ["chain-state"], "mechanisms": ["smooth_laplace"], "seeds": 4}
    honest = {r.marginal: r for r in evaluate(state, **kw)}
    real = publication.publication_tables

    def biased(built, tables, frame):
        out, entry = real(built, tables, frame)
        shifted = []
        for t in out:
            if t.name == "county_ind":
                t = QueryTable(t.name, t.table.with_columns(pl.col("jobs") + SHIFT),
                               t.uncertainty, t.notes, t.measurements)  # fmt: skip
            shifted.append(t)
        return shifted, entry

    monkeypatch.setattr(publication, "publication_tables", biased)
    res = {r.marginal: r for r in evaluate(state, **kw)}
    r, h = res["county_ind"], honest["county_ind"]
    # the same seeds, so the same releases: the total moves by SHIFT × cells exactly,
    # its spread over the seeds does not change
    assert r.post_bias - h.post_bias == pytest.approx(SHIFT * r.cells)
    assert r.post_bias_se == pytest.approx(h.post_bias_se)
    assert r.raw_bias == h.raw_bias and r.raw_bias_se == h.raw_bias_se
    assert r.post_biased  # 40 jobs × 80 cells is far beyond 3 SE of the honest total
    assert not any(res[n].post_biased != honest[n].post_biased for n in res if n != "county_ind")
    md = results_markdown(list(res.values()))
    line = next(x for x in md.splitlines() if x.startswith("| smooth_laplace | county_ind |")
                and "raw bias" not in x and x.count("|") == 5)  # fmt: skip
    assert line.rstrip(" |").endswith("**> 3 SE**")


def test_the_oracle_weights_are_the_true_noise_variances(state):
    # Each cell's squared error divided by the oracle's weight has mean 1 if the weight is
    # the cell's true noise variance (the definition of a variance). Laplace noise has
    # kurtosis 6, so e²/v has variance 5: over N cell-releases the mean is 1 ± √(5/N).
    plan = workload_plan(state, WORKLOADS["chain-county"], "smooth_laplace", consistent=False)
    data = load_job_tables(plan.data)
    built = build(plan)
    engine = PolarsEngine()
    ratios: dict[str, list[np.ndarray]] = {}
    for s in range(8):
        for t in count_tables(built, data, engine, SeededNoise(s)):
            q = plan.query(t.name)
            wp, wk = split_by(q, plan.data)
            truth = engine.cell_statistics(data, wp, wk).select("count", "x_v")
            frame = engine.workplace_counts(data, workplace_attributes(plan))
            v = true_variance(built, t, truth, frame)
            err = t.measurements[0].estimate - truth["count"].to_numpy()
            ratios.setdefault(t.name, []).append(err**2 / v)
    for name in ("tract_ind", "tract_ind_sex", "tract_ind_sex_age"):
        r = np.concatenate(ratios[name])
        assert abs(r.mean() - 1.0) < 4 * np.sqrt(5 / r.size), name


def test_the_no_guard_column_is_the_solution_for_every_marginal(state, monkeypatch):
    # without the guard every marginal publishes the consistent solution: where no
    # marginal was held in any seed the two columns are the same releases (equal L1);
    # where one was held in every seed they differ. The guard holds nothing on this
    # state, so the state total is held by force (a stand-in decision: the guard's runs
    # with nothing and with "state" held, the latter published)
    import eree.release.publication as publication
    from eree.postprocess.guard import HoldDecision, Holding

    def hold_state(run, pairs, total_variance):
        first = run(())
        if not first.predictions:  # the no-guard run: nothing held
            return HoldDecision(Holding([], {}), first, first, {(): 0.0})
        return HoldDecision(Holding(["state"], {}), run(("state",)), first,
                            {(): 0.0, ("state",): 0.0})  # fmt: skip

    monkeypatch.setattr(publication, "decide_holding", hold_state)
    res = evaluate(state, workloads=["chain-state"], mechanisms=["smooth_laplace"],
                   seeds=3)  # fmt: skip
    assert all(not np.isnan(r.unguarded) for r in res)
    always = [r for r in res if r.own == r.seeds]
    assert [r.marginal for r in always] == ["state"]
    for r in res:
        assert r.not_additive == 0  # held or not, every pair adds up
    never = [r for r in res if r.own == 0]
    assert len(never) == 3
    # the held state total changes the solution of every marginal below it
    for r in always + never:
        assert r.unguarded != r.post
    md = results_markdown(res)
    assert "no guard L1 ± SE" in md
