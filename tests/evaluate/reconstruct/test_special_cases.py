"""Haney et al. §5.2's preserved-zeros attack on noise infusion, as a special case.

A block holds one establishment; half the blocks have exactly one worker with a
bachelor's degree (E4). The release is block × education × sex × age by input noise
infusion (``eree protect``). Zeros stay zeros, so the reconstruction's only E4
combination in such a block is that worker's, and it is certain (its cell's range
starts at 1): the attacker learns the worker's sex and age in every such block, as the
paper's attack does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from eree.evaluate.reconstruct import ReconstructConfig, interval_audit, reconstruct
from eree.evaluate.reconstruct.release import read_release
from eree.mechanisms.noise import SeededNoise
from eree.release.protect import protect
from eree.release.spec import load_spec


def _data(d: Path) -> dict[str, tuple[str, str]]:
    rng = np.random.default_rng(7)
    n = 16
    sizes = rng.integers(15, 40, n)
    blocks = [f"4200100010010{i:02d}" for i in range(n)]
    wp = pl.DataFrame(
        {
            "workplace_id": [f"w{i}" for i in range(n)],
            "block": blocks,
            "naics_sector": ["62"] * n,
            "ownership": ["A05"] * n,
        }
    )
    wid = np.repeat(np.arange(n), sizes)
    m = wid.size
    sex = rng.choice(["M", "F"], m).astype(object)
    age = rng.choice(["A01", "A02", "A03"], m).astype(object)
    edu = rng.choice(["E1", "E2", "E3"], m).astype(object)
    first = np.r_[0, np.cumsum(sizes)[:-1]]
    edu[first[::2]] = "E4"
    target = {blocks[i]: (str(sex[first[i]]), str(age[first[i]])) for i in range(0, n, 2)}
    workers = pl.DataFrame(
        {
            "worker_id": [f"p{j}" for j in range(m)],
            "sex": sex.tolist(),
            "age": age.tolist(),
            "education": edu.tolist(),
        }
    )
    jobs = pl.DataFrame(
        {"worker_id": [f"p{j}" for j in range(m)], "workplace_id": [f"w{i}" for i in wid]}
    )
    wp.write_parquet(d / "workplace.parquet")
    workers.write_parquet(d / "worker.parquet")
    jobs.write_parquet(d / "job.parquet")
    return target


def test_preserved_zeros_give_away_the_lone_graduate(tmp_path: Path) -> None:
    target = _data(tmp_path)
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'name = "zeros"\n[data]\nkind = "eree"\nworkplace = "workplace.parquet"\n'
        'worker = "worker.parquet"\njob = "job.parquet"\n'
        'workplace_attributes = ["block", "naics_sector", "ownership"]\n'
        'worker_attributes = ["age", "sex", "education"]\n[privacy]\ndefinition = "none"\n'
        '[[query]]\nname = "bsae"\nby = ["block", "education", "sex", "age"]\n'
        'mechanism = "noise_infusion"\n'
    )
    protect(load_spec(spec), tmp_path / "rel", SeededNoise(5))
    pub, _ = read_release(tmp_path / "rel")
    rec = reconstruct(pub, ReconstructConfig(unit="block")).frame()
    e4 = rec.filter(pl.col("education") == "E4")
    hits = 0
    for block, (sex, age) in target.items():
        mine = e4.filter(pl.col("unit") == block)
        assert mine.height == 1  # one E4 combination: the others are published zeros
        r = mine.row(0, named=True)
        assert (r["sex"], r["age"]) == (sex, age) and r["certain"] >= 1
        hits += 1
    assert hits == len(target) == 8
    # and no other E4 combination is possible: their cells are published zeros
    ia = interval_audit(pub)
    cells = pub.cells.with_columns(pl.Series("upper", ia.upper))
    for block, (sex, age) in target.items():
        others = cells.filter(
            (pl.col("block") == block)
            & (pl.col("education") == "E4")
            & ((pl.col("sex") != sex) | (pl.col("age") != age))
        )
        assert others.height == 5 and (others.get_column("upper") == 0).all()
