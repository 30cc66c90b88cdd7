"""Coarsening of the WAC tables under the small-cell rule, audited by the interval LP.

Expectations come from the LP on hand-made blocks and from the rule (a cell of 1–2 jobs
must stay uncertain by ±1 job), never from the optimizer's own output.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from eree.data.schema import WORKER_DOMAINS
from eree.evaluate.reconstruct import job_truth
from eree.evaluate.reconstruct.coarsen_wac import coarsen_jobs, rule_audit
from eree.evaluate.reconstruct.frontier import ATTRIBUTES, exact_tables, suppress_small
from eree.synth.lodes import synth_parametric

KEYS = ["table", "block", *ATTRIBUTES]
DOMAINS = {a: WORKER_DOMAINS[a] for a in ATTRIBUTES if a in WORKER_DOMAINS} | {
    "naics_sector": ("31-33", "44-45")
}
ONE = {
    "age": "A02",
    "earnings": "E02",
    "naics_sector": "31-33",
    "race": "A1",
    "ethnicity": "A1",
    "education": "E2",
}


def _truth(rows: list[tuple[str, dict[str, str], int]]) -> pl.DataFrame:
    return pl.DataFrame([{"unit": b, **ONE, **attrs, "true": n} for b, attrs, n in rows]).select(
        "unit", *ATTRIBUTES, "true"
    )


@pytest.fixture()
def seven() -> pl.DataFrame:
    """One block of 7 jobs alike but for sex: 1 man, 6 women. The man's cell is the only
    one with 1–2 jobs; every other non-zero cell holds 6 or 7."""
    return _truth([("B1", {"sex": "M"}, 1), ("B1", {"sex": "F"}, 6)])


def _publish(exact: pl.DataFrame, changes: dict[tuple[str, str | None], dict]) -> pl.DataFrame:
    """``exact`` with some cells republished: (table, sex) → status, value, base."""
    out = exact.with_columns(
        pl.lit(None, dtype=pl.Float64).alias("base"),
        pl.lit(None, dtype=pl.Float64).alias("lower"),
        pl.lit(None, dtype=pl.Float64).alias("upper"),
    )
    for (table, sex), ch in changes.items():
        m = (pl.col("table") == table) & (
            pl.col("sex").is_null() if sex is None else pl.col("sex") == sex
        )
        out = out.with_columns(
            [pl.when(m).then(pl.lit(v)).otherwise(pl.col(k)).alias(k) for k, v in ch.items()]
        )
    return out


def test_exact_tables_are_flagged_one_violation_per_small_cell(seven: pl.DataFrame) -> None:
    exact = exact_tables(seven, DOMAINS)
    res = rule_audit(exact, exact)
    assert res["sensitive"] == 1
    assert res["violations"] == 1  # published exactly: a point, not [0, 2]
    assert res["information_loss"] == 0.0


def test_the_lp_undoes_a_rounded_small_cell_beside_exact_margins(seven: pl.DataFrame) -> None:
    exact = exact_tables(seven, DOMAINS)
    # the man's cell rounded to 5 (published 0: [0, 2] on its own) passes cell by cell,
    # but C000 = 7 and women = 6 are exact: x_M = 7 − 6 = 1, pinned
    pub = _publish(exact, {("wac_cs", "M"): {"status": "rounded", "value": 0.0, "base": 5.0}})
    res = rule_audit(pub, exact)
    assert res["violations"] == 1 and res["cells_pinned"] == 1


def test_a_rounded_partner_in_the_relation_protects_the_small_cell(seven: pl.DataFrame) -> None:
    exact = exact_tables(seven, DOMAINS)
    # women rounded to 3: 6 → [4.5, 7.5], whole numbers [5, 7]; x_M = 7 − x_F ∈ [0, 2]:
    # the man's cell covers [1 − 1, 1 + 1], and nothing is pinned
    pub = _publish(
        exact,
        {
            ("wac_cs", "M"): {"status": "rounded", "value": 0.0, "base": 5.0},
            ("wac_cs", "F"): {"status": "rounded", "value": 6.0, "base": 3.0},
        },
    )
    res = rule_audit(pub, exact)
    assert res["violations"] == 0 and res["cells_pinned"] == 0


def test_rounding_the_block_total_instead_does_not_protect(seven: pl.DataFrame) -> None:
    exact = exact_tables(seven, DOMAINS)
    # C000 rounded to 3 ([5, 7]) with women exact leaves x_M ∈ [0, 1] from CS alone, but
    # every other family (e.g. CA: one cell of 7, exact) sums to C000, so C000 = 7 and
    # x_M = 1 again: the total is a hub, rounding it alone protects nothing
    pub = _publish(
        exact,
        {
            ("wac_cs", "M"): {"status": "rounded", "value": 0.0, "base": 5.0},
            ("wac_c000", None): {"status": "rounded", "value": 6.0, "base": 3.0},
        },
    )
    res = rule_audit(pub, exact)
    assert res["violations"] == 1


def test_coarsening_protects_the_block_with_the_fewest_cells_coarsened(
    seven: pl.DataFrame,
) -> None:
    exact = exact_tables(seven, DOMAINS)
    pub, stats = coarsen_jobs(seven, exact)
    res = rule_audit(pub, exact)
    assert res["violations"] == 0 and res["cells_pinned"] == 0
    assert stats["violations_check"] == 0
    # the least a publication can coarsen: the man's cell (its own interval must hold
    # [0, 2]) and one partner in a relation of his that closes no other relation — the
    # women's cell (C000 is a hub, above); no cell needs to be suppressed
    coarse = pub.filter(pl.col("status") != "exact")
    assert sorted(coarse.get_column("sex").to_list()) == ["F", "M"]
    assert set(coarse.get_column("table").to_list()) == {"wac_cs"}
    assert res["cells_published"] == res["cells"]
    # suppression under the same rule withholds both cells of CS
    supp = rule_audit(suppress_small(seven, exact), exact)
    assert supp["violations"] == 0 and supp["cells_published"] == res["cells"] - 2
    assert res["information_loss"] < supp["information_loss"]


@pytest.fixture(scope="module")
def blocks(tmp_path_factory: pytest.TempPathFactory) -> tuple[pl.DataFrame, pl.DataFrame]:
    d: Path = tmp_path_factory.mktemp("jobs")
    s = synth_parametric(5, 150, n_counties=1, tracts_per_county=2, blocks_per_tract=8)
    s.workplace.write_parquet(d / "workplace.parquet")
    s.worker.write_parquet(d / "worker.parquet")
    s.job.write_parquet(d / "job.parquet")
    truth = job_truth(d, "block", ATTRIBUTES)
    doms = dict(DOMAINS)
    doms["naics_sector"] = sorted(truth.get_column("naics_sector").unique().to_list())
    return truth, exact_tables(truth, doms)


def test_many_blocks_protected_and_a_weakened_coarsening_flagged(
    blocks: tuple[pl.DataFrame, pl.DataFrame],
) -> None:
    truth, exact = blocks
    pub, stats = coarsen_jobs(truth, exact, blocks_per_chunk=5)
    assert stats["chunks"] > 1
    res = rule_audit(pub, exact)
    assert res["sensitive"] > 20
    assert res["violations"] == 0
    # every true value lies in its published cell's own interval; zero cells exact
    j = pub.join(
        exact.select(*KEYS, pl.col("value").alias("t")), on=KEYS, how="left", nulls_equal=True
    )
    half = pl.col("base") / 2
    inside = (
        pl.when(pl.col("status") == "exact")
        .then(pl.col("value") == pl.col("t"))
        .when(pl.col("status") == "rounded")
        .then((pl.col("t") - pl.col("value")).abs() <= half)
        .when(pl.col("status") == "range")
        .then((pl.col("lower") <= pl.col("t")) & (pl.col("t") <= pl.col("upper")))
        .otherwise(pl.col("value").is_null())
    )
    assert j.select(inside.all()).item()
    assert j.filter(pl.col("t") == 0).select((pl.col("status") == "exact").all()).item()
    # weakened: every cell that is not small put back to exact → flagged
    sens = (pl.col("t") >= 1) & (pl.col("t") <= 2)
    w = j.with_columns(
        pl.when(sens).then(pl.col("status")).otherwise(pl.lit("exact")).alias("status"),
        pl.when(sens).then(pl.col("value")).otherwise(pl.col("t")).alias("value"),
        *[pl.when(sens).then(pl.col(c)).alias(c) for c in ("base", "lower", "upper")],
    ).drop("t")
    assert rule_audit(w, exact)["violations"] > 0


def test_random_rounding_protected_and_seeded(blocks: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    truth, exact = blocks
    a, _ = coarsen_jobs(truth, exact, rounding="random", seed=3)
    b, _ = coarsen_jobs(truth, exact, rounding="random", seed=3)
    assert a.equals(b)
    assert set(a.get_column("status").unique().to_list()) <= {
        "exact",
        "rounded",
        "range",
        "suppressed",
    }
    assert rule_audit(a, exact)["violations"] == 0


def test_coarsening_publishes_more_than_suppression_at_the_same_rule(
    blocks: tuple[pl.DataFrame, pl.DataFrame],
) -> None:
    truth, exact = blocks
    c = rule_audit(coarsen_jobs(truth, exact)[0], exact)
    s = rule_audit(suppress_small(truth, exact), exact)
    assert c["violations"] == 0 and s["violations"] == 0
    assert c["cells_published"] > s["cells_published"]
    # per block the suppression pattern is taken where it loses less: never more loss
    assert c["information_loss"] <= s["information_loss"] + 1e-12


def test_bad_arguments_refused(seven: pl.DataFrame) -> None:
    exact = exact_tables(seven, DOMAINS)
    with pytest.raises(ValueError, match="threshold"):
        coarsen_jobs(seven, exact, threshold=0)
    with pytest.raises(ValueError, match="blocks_per_chunk"):
        coarsen_jobs(seven, exact, blocks_per_chunk=0)
    with pytest.raises(ValueError, match="bases"):
        coarsen_jobs(seven, exact, bases=(3.0, 2.0))
    other = exact.with_columns(pl.lit("B9").alias("block"))
    with pytest.raises(ValueError, match="exact tables do not"):
        rule_audit(other, exact)
    assert np.isfinite(rule_audit(exact, exact)["information_loss"])


def test_the_frontier_attacks_the_coarsened_release(tmp_path: Path) -> None:
    from eree.evaluate.reconstruct import ReconstructConfig
    from eree.evaluate.reconstruct.frontier import frontier_jobs

    d = tmp_path / "jobs"
    d.mkdir()
    s = synth_parametric(3, 60, n_counties=1, tracts_per_county=1, blocks_per_tract=6)
    for name in ("workplace", "worker", "job"):
        getattr(s, name).write_parquet(d / f"{name}.parquet")
    small = ReconstructConfig(unit="block", max_candidates=2000)
    res = frontier_jobs(d, tmp_path / "w", methods=("coarsened",), cfg=small).to_dicts()
    (r,) = res
    assert r["method"] == "coarsened"
    # the release's constraints hold for the truth: what every solution shares is true
    assert r["share_certain_correct"] in (1.0, None)
    assert r["mean_abs_error"] > 0 and r["cells_pinned"] == 0
