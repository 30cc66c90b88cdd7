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
    # suppression in chunks of blocks (each chunk's tables by themselves): still
    # protected, and it withholds at least the small cells
    chunked = suppress_small(truth, exact, blocks_per_chunk=5)
    s5 = rule_audit(chunked, exact)
    assert s5["violations"] == 0 and s5["cells"] == s["cells"]
    assert s5["cells"] - s5["cells_published"] >= s5["sensitive"]


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
    # and the small-cell rule holds against the attacker who uses the exact zeros
    assert r["rule_violations"] == 0 and r["rule_cells_pinned"] == 0


# --- what the exact zeros disclose ------------------------------------------------------
# Both methods print every zero cell exactly, so a cell not printed exactly is known to
# hold a job. The expectations below are worked out by hand from that and the sums.


def _republish(
    exact: pl.DataFrame, cells: list[tuple[str, str | None, str | None]]
) -> pl.DataFrame:
    """``exact`` with the cells (table, attribute, value) withheld (attribute None: C000)."""
    out = exact
    for table, attr, val in cells:
        m = pl.col("table") == table
        if attr is not None:
            m = m & (pl.col(attr) == val)
        out = out.with_columns(
            pl.when(m).then(pl.lit("suppressed")).otherwise(pl.col("status")).alias("status"),
            pl.when(m).then(None).otherwise(pl.col("value")).alias("value"),
        )
    return out


@pytest.fixture()
def pair() -> pl.DataFrame:
    """One block of 2 jobs alike but for sex: 1 man, 1 woman (earnings E02)."""
    return _truth([("B1", {"sex": "M"}, 1), ("B1", {"sex": "F"}, 1)])


def test_the_zero_aware_audit_finds_cells_the_zero_unaware_one_passes() -> None:
    # 3 jobs alike but for sex: 1 man, 2 women; only CS has cells of 1-2 jobs
    truth = _truth([("B1", {"sex": "M"}, 1), ("B1", {"sex": "F"}, 2)])
    exact = exact_tables(truth, DOMAINS)
    pub = _republish(exact, [("wac_cs", "sex", "M"), ("wac_cs", "sex", "F")])
    # an attacker who ignores the zeros: x_M + x_F = 3, x ≥ 0 → each in [0, 3], which
    # covers M's [0, 2] and F's [1, 3]: no violation
    old = rule_audit(pub, exact, zero_aware=False)
    assert old["sensitive"] == 2 and old["violations"] == 0 and old["cells_pinned"] == 0
    # every zero is printed, so a withheld cell holds a job: x_M, x_F ≥ 1 → each in
    # [1, 2]; M's rule [max(1 − 1, 1), 2] = [1, 2] holds, F's [1, 3] does not (F = 3
    # is ruled out: it would leave the man's cell empty)
    new = rule_audit(pub, exact)
    assert new["violations"] == 1 and new["cells_pinned"] == 0


def test_a_one_job_cell_pinned_above_zero(pair: pl.DataFrame) -> None:
    exact = exact_tables(pair, DOMAINS)
    pub = _republish(exact, [("wac_cs", "sex", "M"), ("wac_cs", "sex", "F")])
    # threshold 2: only the 1-job cells are sensitive. Ignoring the zeros, x_M + x_F = 2
    # gives each [0, 2] ⊇ [0, 2]; with them, x_M, x_F ≥ 1 pins both at 1
    old = rule_audit(pub, exact, threshold=2, zero_aware=False)
    assert old["sensitive"] == 2 and old["violations"] == 0 and old["cells_pinned"] == 0
    new = rule_audit(pub, exact, threshold=2)
    assert new["violations"] == 2 and new["cells_pinned"] == 2


def test_a_withheld_zero_takes_the_knowledge_away_for_its_table() -> None:
    truth = _truth(
        [("B1", {"sex": "F", "earnings": "E01"}, 1), ("B1", {"sex": "F", "earnings": "E02"}, 1)]
    )
    exact = exact_tables(truth, DOMAINS)
    both = [("wac_ce", "earnings", "E01"), ("wac_ce", "earnings", "E02")]
    # CE's zero (E03) printed: E01, E02 ≥ 1 and E01 + E02 = C000 = 2 → pinned at 1
    res = rule_audit(_republish(exact, both), exact, threshold=2)
    assert res["sensitive"] == 2
    assert res["cells_pinned"] == 2 and res["violations"] == 2
    assert res["tables_presence_disclosed"] == len(WAC_FAMILIES)
    # E03 (a zero) withheld too: a withheld CE cell may be 0, so E01 ∈ [0, 2], and the
    # rule's lower end is 0 (CE discloses no presence): [0, 2] covered
    res = rule_audit(_republish(exact, [*both, ("wac_ce", "earnings", "E03")]), exact, threshold=2)
    assert res["cells_pinned"] == 0 and res["violations"] == 0
    assert res["tables_presence_disclosed"] == len(WAC_FAMILIES) - 1


WAC_FAMILIES = ("wac_c000", "wac_ca", "wac_ce", "wac_cns", "wac_cr", "wac_ct", "wac_cd", "wac_cs")


def test_what_presence_alone_implies_by_hand() -> None:
    from eree.evaluate.reconstruct.tables import from_frame
    from eree.suppression.rules import protected_lower

    # 2 jobs: a man in 31-33 and a woman in 44-45, alike otherwise. Given only which
    # cells are non-zero: CS has two non-zero cells, so C000 ≥ 2; every family with a
    # single non-zero cell equals C000 (its other cells are printed zeros), so ≥ 2; the
    # cells of CS and CNS ≥ 1 each. The rule's lower end for a 2-job cell is then 2, for
    # a 1-job cell max(1 − 1, 1) = 1.
    truth = _truth(
        [
            ("B1", {"sex": "M", "naics_sector": "31-33"}, 1),
            ("B1", {"sex": "F", "naics_sector": "44-45"}, 1),
        ]
    )
    exact = exact_tables(truth, DOMAINS)
    pub = from_frame(exact)
    t = exact.get_column("value").to_numpy().astype(np.float64)
    lo = protected_lower(pub.derived_relations(), t, np.ones(t.size), 1.0)
    got = exact.with_columns(pl.Series("lo", lo)).filter(pl.col("value") > 0)
    two = got.filter(pl.col("value") == 2)
    one = got.filter(pl.col("value") == 1)
    assert set(two.get_column("table").to_list()) == {
        "wac_c000",
        "wac_ca",
        "wac_ce",
        "wac_cr",
        "wac_ct",
        "wac_cd",
    }
    assert (two.get_column("lo") == 2).all()
    assert one.height == 4 and (one.get_column("lo") == 1).all()
    # every cell withheld, zeros printed: C000 ∈ [2, ∞) covers [2, 3]; x_M = C000 − x_F
    # ∈ [1, ∞) covers [1, 2]: no violation
    withheld = exact.with_columns(
        pl.when(pl.col("value") > 0)
        .then(pl.lit("suppressed"))
        .otherwise(pl.col("status"))
        .alias("status"),
        pl.when(pl.col("value") > 0).then(None).otherwise(pl.col("value")).alias("value"),
    )
    res = rule_audit(withheld, exact)
    assert res["sensitive"] == 10 and res["violations"] == 0 and res["cells_pinned"] == 0


def test_both_methods_protect_against_the_zero_aware_attacker() -> None:
    # the block of the first test: 1 man, 2 women. Built for the attacker who ignores
    # the zeros, each method leaves F's cell at most 2 (x_M ≥ 1 and x_M + x_F = 3 — the
    # first test's audit); built for the zero-aware one, both pass its audit
    truth = _truth([("B1", {"sex": "M"}, 1), ("B1", {"sex": "F"}, 2)])
    exact = exact_tables(truth, DOMAINS)
    for zero_aware in (True, False):
        c = rule_audit(coarsen_jobs(truth, exact, zero_aware=zero_aware)[0], exact)
        s = rule_audit(suppress_small(truth, exact, zero_aware=zero_aware), exact)
        assert c["sensitive"] == s["sensitive"] == 2
        assert (c["violations"], s["violations"]) == ((0, 0) if zero_aware else (1, 1))
        if zero_aware:
            assert c["cells_pinned"] == s["cells_pinned"] == 0


def test_complements_ask_no_more_than_presence_allows() -> None:
    from eree.suppression.rules import PrimaryRules, primary_suppression
    from eree.suppression.secondary import SecondaryConfig, secondary_suppression
    from eree.suppression.tables import tabulate
    from eree.suppression.wac import jobs_from_truth, wac_layout

    # 2 jobs, a man in 31-33 and a woman in 44-45: C000 = 2 is sensitive, but with CS's
    # two non-zero cells each ≥ 1 it cannot go below 2 (the rule asks [2, 3]). Asking
    # for 1 (T − 1) has no witness; asking for max(T − 1, P) = 2 has: nothing is left
    # unprotectable
    truth = _truth(
        [
            ("B1", {"sex": "M", "naics_sector": "31-33"}, 1),
            ("B1", {"sex": "F", "naics_sector": "44-45"}, 1),
        ]
    )
    rules = PrimaryRules(threshold=3, dominance_k=None, p_percent=None)
    tables = tabulate(jobs_from_truth(truth), wac_layout(), ["jobs"], top=rules.top_needed)
    prim = primary_suppression(tables, rules, ("jobs",))
    assert int(prim.primary.sum()) == tables.n_cells  # every cell holds 1 or 2 jobs
    res = secondary_suppression(tables, prim, SecondaryConfig(workers=1, floor=1.0))
    assert res.unprotectable.size == 0


def test_the_same_publication_in_one_process_or_two(
    blocks: tuple[pl.DataFrame, pl.DataFrame],
) -> None:
    """The release maps its chunks over both cores (``release.coarsening_jobs.chunk_map``):
    chunks are independent and a random chunk's seed is fixed by its place, so the bytes
    cannot depend on where a chunk ran."""
    from eree.engine.unitmap import ProcessMap
    from eree.release.coarsening_jobs import chunk_map

    truth, exact = blocks
    assert chunk_map(1) is None  # one chunk: no pool to start
    for rounding in ("deterministic", "random"):
        one, s1 = coarsen_jobs(truth, exact, blocks_per_chunk=4, rounding=rounding, seed=5)
        two, s2 = coarsen_jobs(
            truth,
            exact,
            blocks_per_chunk=4,
            rounding=rounding,
            seed=5,
            mapper=ProcessMap(2, chunksize=1),
        )
        assert s1["chunks"] > 2
        assert one.equals(two)
        assert s1 == s2
