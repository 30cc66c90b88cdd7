"""Content fingerprint of validated data: a multiset hash, order- and format-independent
(docs/design.md#budget-ledger), equal to its definition computed by hand."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import numpy as np
import polars as pl

from eree.data.config import EstablishmentDataConfig, JobTablesConfig
from eree.data.establishments import EstablishmentData, load_establishments
from eree.data.fingerprint import content_fingerprint, fingerprints, structure_fingerprint
from eree.data.job_tables import JobTables, load_job_tables
from eree.privacy.ledger import keyed_fingerprint
from tests.release.conftest import write_small_job_tables
from tests.release.test_gedp import write_small

PUBLIC = ("cnty", "own", "naics", "naics3", "naics4", "naics5", "naics_sector", "super_sector")


def _eree(root: Path, ext: str) -> JobTablesConfig:
    return JobTablesConfig(
        workplace=root / f"workplace.{ext}", worker=root / f"worker.{ext}", job=root / f"job.{ext}"
    )


def _convert(src: Path, dst: Path, ext: str, seed: int) -> None:
    """Every table of ``src`` written to ``dst`` as ``ext`` with its rows shuffled."""
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("workplace", "worker", "job"):
        df = pl.read_parquet(src / f"{name}.parquet").sample(fraction=1.0, shuffle=True, seed=seed)
        df = df.select(list(reversed(df.columns)))  # column order must not matter either
        if ext == "csv":
            df.write_csv(dst / f"{name}.csv")
        else:
            df.write_parquet(dst / f"{name}.parquet")


def test_eree_fingerprint_ignores_format_row_and_column_order(tmp_path):
    write_small_job_tables(tmp_path / "a")
    _convert(tmp_path / "a", tmp_path / "b", "csv", seed=1)
    _convert(tmp_path / "a", tmp_path / "c", "parquet", seed=2)
    fps = {
        content_fingerprint(load_job_tables(_eree(tmp_path / "a", "parquet"))),
        content_fingerprint(load_job_tables(_eree(tmp_path / "b", "csv"))),
        content_fingerprint(load_job_tables(_eree(tmp_path / "c", "parquet"))),
    }
    assert len(fps) == 1
    assert len(next(iter(fps))) == 64


def test_eree_fingerprint_changes_with_one_record(tmp_path):
    write_small_job_tables(tmp_path / "a")
    before = content_fingerprint(load_job_tables(_eree(tmp_path / "a", "parquet")))
    w = pl.read_parquet(tmp_path / "a" / "worker.parquet")
    sex = w["sex"].to_list()
    sex[17] = "F" if sex[17] == "M" else "M"  # one worker's sex flipped
    w.with_columns(pl.Series("sex", sex)).write_parquet(tmp_path / "a" / "worker.parquet")
    assert content_fingerprint(load_job_tables(_eree(tmp_path / "a", "parquet"))) != before


def test_establishment_fingerprint_csv_vs_parquet_shuffled(tmp_path):
    csv = write_small(tmp_path / "e.csv", n=80)
    df = pl.read_csv(csv, infer_schema_length=0).sample(fraction=1.0, shuffle=True, seed=5)
    df = df.with_columns(  # Parquet with numeric types, as a statistical office would store it
        pl.col("m1emp", "m2emp", "m3emp").cast(pl.Int64), pl.col("wage").cast(pl.Float64)
    )
    df.write_parquet(tmp_path / "e.parquet")
    fa = content_fingerprint(load_establishments(EstablishmentDataConfig(csv, public=PUBLIC)))
    fb = content_fingerprint(
        load_establishments(EstablishmentDataConfig(tmp_path / "e.parquet", public=PUBLIC))
    )
    assert fa == fb
    # one wage changed by 0.1: a different dataset
    df2 = df.with_columns(
        pl.when(pl.col("primary_key") == "E0007").then(pl.col("wage") + 0.1)
        .otherwise(pl.col("wage")).alias("wage")
    )  # fmt: skip
    df2.write_parquet(tmp_path / "f.parquet")
    fc = content_fingerprint(
        load_establishments(EstablishmentDataConfig(tmp_path / "f.parquet", public=PUBLIC))
    )
    assert fc != fa


def test_keyed_fingerprint_is_hmac_sha256():
    fp = "ab" * 32
    key = b"k" * 32
    assert keyed_fingerprint(fp, key) == hmac.new(key, fp.encode(), hashlib.sha256).hexdigest()
    assert keyed_fingerprint(fp, b"j" * 32) != keyed_fingerprint(fp, key)


def test_structure_fingerprint_ignores_column_selection(tmp_path):
    write_small_job_tables(tmp_path / "a")
    full = load_job_tables(_eree(tmp_path / "a", "parquet"))
    cfg = _eree(tmp_path / "a", "parquet")
    sub = load_job_tables(JobTablesConfig(workplace=cfg.workplace, worker=cfg.worker, job=cfg.job,
                                   worker_attributes=("sex",),
                                   domains={"sex": ("M", "F")}))  # fmt: skip
    assert content_fingerprint(sub) != content_fingerprint(full)
    assert structure_fingerprint(sub) == structure_fingerprint(full)
    # one job moved to another workplace: another structure
    job = pl.read_parquet(tmp_path / "a" / "job.parquet")
    wids = job["workplace_id"].to_list()
    wids[0] = "w039" if wids[0] != "w039" else "w038"
    job.with_columns(pl.Series("workplace_id", wids)).write_parquet(tmp_path / "a" / "job.parquet")
    assert structure_fingerprint(load_job_tables(cfg)) != structure_fingerprint(full)


# ---------------------------------------------------------------- the definition, by hand
# An independent pure-Python reading of the definition in docs/privacy.md ("Fingerprint
# schemes"): Python integers modulo 2**64, hashlib and struct; nothing from eree.
M64 = (1 << 64) - 1


def _h8(b: bytes) -> int:
    return int.from_bytes(hashlib.sha256(b).digest()[:8], "big")


def _fmix(z: int) -> int:
    z ^= z >> 30
    z = (z * 0xBF58476D1CE4E5B9) & M64
    z ^= z >> 27
    z = (z * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def _word(x: object, kind: str) -> int:
    import math
    import struct

    if kind == "text":
        return _h8(str(x).encode("utf-8"))
    if kind == "float":
        if math.isnan(x):  # type: ignore[arg-type]
            return 0x7FF8000000000000
        return struct.unpack("<Q", struct.pack("<d", float(x) + 0.0))[0]  # type: ignore[arg-type]
    return int(x) & M64  # type: ignore[call-overload]


def _by_hand(family: str, tables: list[tuple[str, dict[str, tuple[str, list]]]]) -> str:
    text = f"eree-fingerprint-v2\n{family}\n"
    for label, cols in tables:
        names = sorted(cols)
        n = len(cols[names[0]][1])
        lanes = []
        for j in range(4):
            total = 0
            for r in range(n):
                acc = 0
                for c in names:
                    kind, values = cols[c]
                    x = values[r]
                    if x is None:
                        v = _fmix(_h8(f"eree-fingerprint-v2|{label}|{c}|null|{j}".encode()))
                    else:
                        s = _h8(f"eree-fingerprint-v2|{label}|{c}|{kind}|{j}".encode())
                        v = _fmix(_word(x, kind) ^ s)
                    acc = _fmix(acc ^ v)
                total = (total + acc) & M64
            lanes.append(total)
        text += f"table {label} rows {n}\n"
        text += "".join(f"column {c} {cols[c][0]}\n" for c in names)
        text += "lanes " + " ".join(f"{s:016x}" for s in lanes) + "\n"
    return hashlib.sha256(text.encode()).hexdigest()


def _estab(frame: pl.DataFrame) -> EstablishmentData:
    return EstablishmentData(frame, EstablishmentDataConfig(Path("x.csv"), public=("own",)))


def test_two_row_establishment_frame_matches_the_definition():
    frame = pl.DataFrame(
        {"primary_key": ["E1", "É2"], "own": ["5", None], "wage": [-0.0, 1234.5],
         "m1emp": [3.0, float("nan")]},
        schema={"primary_key": pl.Utf8, "own": pl.Utf8, "wage": pl.Float64, "m1emp": pl.Float64},
    )  # fmt: skip
    expect = _by_hand("establishments", [("establishments", {
        "primary_key": ("text", ["E1", "É2"]), "own": ("text", ["5", None]),
        "wage": ("float", [0.0, 1234.5]), "m1emp": ("float", [3.0, float("nan")]),
    })])  # fmt: skip
    assert content_fingerprint(_estab(frame)) == expect
    structure = _by_hand(
        "establishments structure", [("establishments", {"primary_key": ("text", ["E1", "É2"])})]
    )
    assert structure_fingerprint(_estab(frame)) == structure


def test_two_row_eree_frames_match_the_definition_with_enum_codes_and_integers():
    wp = pl.DataFrame({"workplace_id": ["w1", "w2"], "county": ["001", "003"]})
    jobs = pl.DataFrame({"workplace_id": ["w2", "w2"], "sex": ["F", None], "n": [7, -1]})
    # the Polars engine keeps jobs as Enum codes: they count as their text
    coded = jobs.with_columns(pl.col("workplace_id").cast(pl.Enum(["w1", "w2"])),
                              pl.col("sex").cast(pl.Enum(["M", "F"])))  # fmt: skip
    expect = _by_hand("eree", [
        ("workplaces", {"workplace_id": ("text", ["w1", "w2"]),
                        "county": ("text", ["001", "003"])}),
        ("jobs", {"workplace_id": ("text", ["w2", "w2"]), "sex": ("text", ["F", None]),
                  "n": ("int", [7, -1])}),
    ])  # fmt: skip
    for j in (jobs, coded):
        data = JobTables(workplaces=wp, jobs=j, domains={})
        assert content_fingerprint(data) == expect
        assert fingerprints(data) == (expect, structure_fingerprint(data))


def test_multiset_semantics_order_duplicates_and_every_value():
    rng = np.random.default_rng(3)
    n = 3000  # more rows than distinct values: the weighted path, and the raw float path
    frame = pl.DataFrame({
        "primary_key": [f"E{i % 700}" for i in range(n)],
        "own": rng.choice(["1", "2", "3", "5"], n).tolist(),
        "wage": rng.integers(0, 10**6, n) / 100.0,
    })  # fmt: skip
    codes_only = frame.drop("wage")
    for f in (frame, codes_only):
        base = content_fingerprint(_estab(f))
        assert content_fingerprint(_estab(f.sample(fraction=1.0, shuffle=True, seed=1))) == base
        assert content_fingerprint(_estab(f.select(list(reversed(f.columns))))) == base
        assert content_fingerprint(_estab(pl.concat([f, f.head(1)]))) != base  # duplicated
        assert content_fingerprint(_estab(f.slice(1))) != base  # dropped
        for row in (0, n // 2, n - 1):
            for c in f.columns:  # any single value changed
                old = f[c][row]
                new = old + 0.01 if c == "wage" else (old + "x")
                g = f.with_columns(f[c].scatter(row, new))
                assert content_fingerprint(_estab(g)) != base, (row, c)
        # a null is not the empty string nor any value
        g = f.with_columns(f["own"].scatter(5, None))
        h = f.with_columns(f["own"].scatter(5, ""))
        assert len({base, content_fingerprint(_estab(g)), content_fingerprint(_estab(h))}) == 3
    # the values of a row swapped between its columns: other rows (columns are salted)
    two = pl.DataFrame({"primary_key": ["a", "c"], "own": ["b", "d"]})
    swapped = pl.DataFrame({"primary_key": ["b", "d"], "own": ["a", "c"]})
    assert content_fingerprint(_estab(two)) != content_fingerprint(_estab(swapped))
