"""Reconstruction of records per unit: known answers from the mathematics."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from eree.evaluate.reconstruct import ReconstructConfig, from_frame, measure, reconstruct

AGES = ("A1", "A2", "A3")
SEXES = ("F", "M")
RACES = ("R1", "R2")


def _tables(
    truth: dict[tuple[str, str, str, str], int],
    tables: dict[str, tuple[str, ...]],
    *,
    status: str = "exact",
    scale: float | None = None,
    law: str | None = None,
    values: dict[tuple[str, ...], float] | None = None,
) -> pl.DataFrame:
    """Every cell of each table (by block and the named attributes), zeros included."""
    doms = {"age": AGES, "sex": SEXES, "race": RACES}
    blocks = sorted({k[0] for k in truth})
    rows = []
    for name, attrs in tables.items():
        for b in blocks:
            for combo in itertools.product(*[doms[a] for a in attrs]):
                key = dict(zip(attrs, combo, strict=True))
                n = sum(
                    c
                    for (bb, a, s, r), c in truth.items()
                    if bb == b
                    and all({"age": a, "sex": s, "race": r}[k] == v for k, v in key.items())
                )
                row = {"table": name, "block": b, "age": None, "sex": None, "race": None}
                row |= key
                row |= {"status": status, "value": float(n), "scale": scale, "law": law}
                rows.append(row)
    f = pl.DataFrame(rows, schema_overrides={"scale": pl.Float64, "law": pl.Utf8})
    return f


def _truth_frame(truth: dict[tuple[str, str, str, str], int]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"unit": b, "age": a, "sex": s, "race": r, "true": n} for (b, a, s, r), n in truth.items()]
    )


def _random_truth(seed: int, blocks: int, max_jobs: int) -> dict[tuple[str, str, str, str], int]:
    rng = np.random.default_rng(seed)
    out: dict[tuple[str, str, str, str], int] = {}
    for b in range(blocks):
        for _ in range(int(rng.integers(1, max_jobs + 1))):
            k = (f"b{b}", AGES[rng.integers(3)], SEXES[rng.integers(2)], RACES[rng.integers(2)])
            out[k] = out.get(k, 0) + 1
    return out


ONE_WAY = {"t": (), "a": ("age",), "s": ("sex",), "r": ("race",)}
FULL = ONE_WAY | {"asr": ("age", "sex", "race")}


def test_a_block_whose_exact_tables_determine_its_jobs_is_rebuilt_completely() -> None:
    truth = _random_truth(3, 12, 15)
    pub = from_frame(_tables(truth, FULL))
    rec = reconstruct(pub, ReconstructConfig(unit="block"))
    m = measure(rec, _truth_frame(truth))
    assert m["share_rebuilt_exactly"] == 1.0 and m["share_units_rebuilt_exactly"] == 1.0
    assert m["share_uniques_inferred"] == 1.0
    # every record is certain: the full table is published
    assert m["certain_records"] == m["records"] and m["share_certain_correct"] == 1.0


def test_one_way_margins_pin_a_one_job_block_and_its_worker() -> None:
    truth = {("b0", "A2", "F", "R2"): 1, ("b1", "A1", "M", "R1"): 2}
    rec = reconstruct(from_frame(_tables(truth, ONE_WAY)), ReconstructConfig(unit="block"))
    m = measure(rec, _truth_frame(truth))
    assert m["share_rebuilt_exactly"] == 1.0 and m["certain_records"] == 3


def _brute_min(truth_block: dict[tuple[str, str, str], int]) -> dict[tuple[str, str, str], int]:
    """min over every integer table with the same one-way margins of each combination."""
    n = sum(truth_block.values())
    combos = list(itertools.product(AGES, SEXES, RACES))

    def margins(t: dict[tuple[str, str, str], int]) -> tuple:
        return tuple(
            tuple(sum(c for k, c in t.items() if k[i] == v) for v in dom)
            for i, dom in enumerate((AGES, SEXES, RACES))
        )

    target = margins(truth_block)
    best = {c: n for c in combos}
    for multiset in itertools.combinations_with_replacement(range(len(combos)), n):
        t: dict[tuple[str, str, str], int] = {}
        for i in multiset:
            t[combos[i]] = t.get(combos[i], 0) + 1
        if margins(t) == target:
            for c in combos:
                best[c] = min(best[c], t.get(c, 0))
    return best


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_certain_records_are_exactly_those_in_every_consistent_dataset(seed: int) -> None:
    truth = _random_truth(seed, 6, 5)
    rec = reconstruct(from_frame(_tables(truth, ONE_WAY)), ReconstructConfig(unit="block"))
    f = rec.frame()
    for b in sorted({k[0] for k in truth}):
        tb = {k[1:]: c for k, c in truth.items() if k[0] == b}
        exp = _brute_min(tb)
        got = {
            (r["age"], r["sex"], r["race"]): r["certain"]
            for r in f.filter(pl.col("unit") == b).to_dicts()
        }
        for c, m in exp.items():
            assert got.get(c, 0) == m, (b, c)
    m = measure(rec, _truth_frame(truth))
    assert m["share_certain_correct"] == 1.0  # certain records are in the truth


def test_the_attacker_weakened_by_one_table_rebuilds_less() -> None:
    truth = _random_truth(5, 15, 12)
    frame = _tables(truth, FULL)
    full = measure(
        reconstruct(from_frame(frame), ReconstructConfig(unit="block")), _truth_frame(truth)
    )
    assert full["share_rebuilt_exactly"] == 1.0
    weak = measure(
        reconstruct(
            from_frame(frame), ReconstructConfig(unit="block", tables=("t", "a", "s", "r"))
        ),
        _truth_frame(truth),
    )
    assert weak["share_rebuilt_exactly"] < 0.9
    assert weak["certain_records"] < full["certain_records"]


def test_noisy_tables_give_the_most_likely_records() -> None:
    """Laplace noise smaller than ½ on every cell: the L1 optimum is the truth."""
    truth = _random_truth(7, 8, 10)
    f = _tables(truth, FULL, status="noisy", scale=1.0, law="laplace")
    rng = np.random.default_rng(0)
    f = f.with_columns(pl.col("value") + pl.Series(rng.uniform(-0.3, 0.3, f.height)))
    rec = reconstruct(from_frame(f), ReconstructConfig(unit="block"))
    m = measure(rec, _truth_frame(truth))
    assert m["share_rebuilt_exactly"] == 1.0
    g = f.with_columns(pl.lit("gaussian").alias("law"))
    m2 = measure(reconstruct(from_frame(g), ReconstructConfig(unit="block")), _truth_frame(truth))
    assert m2["share_rebuilt_exactly"] == 1.0


def test_noisy_confidence_follows_the_threshold() -> None:
    """A one-job block, noisy cells equal to the truth, Laplace scale b.

    The cheapest alternative without the record moves one attribute: two one-way cells
    and two cells of the full table change by 1, NLL + 4/b (dropping the job: 5/b). The
    record is certain when 4/b > τ = ln 20 ≈ 3.0: at b = 1 (4) but not at b = 2 (2).
    """
    truth = {("b0", "A2", "F", "R2"): 1}
    cfg = ReconstructConfig(unit="block", noisy_zero=-1.0)
    for b, certain in ((1.0, 1), (2.0, 0), (1.3, 1), (1.4, 0)):  # 4/1.3 = 3.08, 4/1.4 = 2.86
        f = _tables(truth, FULL, status="noisy", law="laplace", scale=b)
        rec = reconstruct(from_frame(f), cfg)
        assert int(rec.count.sum()) == 1 and int(rec.certain.sum()) == certain, b
