"""The Spark engine gives frames identical to the Polars engine's (docs/design.md#data-flow).

One SparkSession serves the whole module (starting it takes seconds). Heavier checks
are marked ``slow``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

pytest.importorskip("pyspark")

from eree.data.config import JobTablesConfig
from eree.data.job_tables import JobTables, load_job_tables
from eree.data.schema import NAICS_SECTORS, OWNERSHIP_CODES
from eree.engine.polars.engine import PolarsEngine
from eree.engine.spark.data import SparkJobTables
from eree.engine.spark.engine import SparkEngine
from eree.errors import DataValidationError, SpecError
from eree.synth.lodes import synth_parametric
from tests.engine.polars.test_engine import ESTABS, JOBS, make_data


@pytest.fixture(scope="module")
def engine(spark) -> SparkEngine:
    return SparkEngine(spark)


@pytest.fixture(scope="module")
def synth_files(tmp_path_factory) -> JobTablesConfig:
    return synth_parametric(seed=11, n_jobs=20_000).write(tmp_path_factory.mktemp("synth"))


@pytest.fixture(scope="module")
def synth(synth_files) -> JobTables:
    """The synthetic data, with declared domains for three workplace attributes too."""
    data = load_job_tables(synth_files)
    counties = (*sorted(data.workplaces["county"].unique()), "99999")
    extra = {"county": counties, "naics_sector": NAICS_SECTORS, "ownership": OWNERSHIP_CODES}
    return replace(data, domains={**data.domains, **extra})


@pytest.fixture(scope="module")
def hand() -> JobTables:
    """The hand-made example; one object, so the engine codes it once."""
    return make_data(ESTABS, JOBS)


def same(spark_engine: SparkEngine, data, polars_data: JobTables, wp_by, wk_by, **kw) -> None:
    expected = PolarsEngine().cell_statistics(polars_data, wp_by, wk_by, **kw)
    got = spark_engine.cell_statistics(data, wp_by, wk_by, **kw)
    assert_frame_equal(got, expected)  # columns, dtypes, row order, values


# ---------------------------------------------------------------- hand-made example


@pytest.mark.parametrize(
    "wp_by,wk_by",
    [([], []), (["county"], []), (["county", "naics_sector"], ["age", "sex"]), ([], ["age"])],
)  # fmt: skip
def test_hand_made_example(engine, hand, wp_by, wk_by):
    same(engine, hand, hand, wp_by, wk_by, truncate_below=4)


def test_hand_made_worked_example_and_public_zeros(engine, hand):
    data = hand
    stats = engine.cell_statistics(data, ["county"], ["sex"], complete=True)
    assert_frame_equal(
        stats, PolarsEngine().cell_statistics(data, ["county"], ["sex"], complete=True)
    )
    row = stats.filter((pl.col("county") == "c1") & (pl.col("sex") == "M")).row(0, named=True)
    assert (row["count"], row["x_v"], row["establishments"]) == (8, 5, 2)
    c3 = stats.filter(pl.col("county") == "c3")
    assert c3["count"].to_list() == [0, 0] and not c3["has_establishment"].any()
    assert_frame_equal(
        engine.establishment_cells(data, ["county"], ["sex"]),
        PolarsEngine().establishment_cells(data, ["county"], ["sex"]),
    )


def test_refusals(engine, hand):
    with pytest.raises(SpecError, match="not a workplace attribute"):
        engine.cell_statistics(hand, ["tract"], [])
    with pytest.raises(SpecError, match="not a worker attribute"):
        engine.cell_statistics(hand, [], ["race"])
    with pytest.raises(SpecError, match="no declared domain"):
        engine.cell_statistics(hand, ["naics_sector"], [], complete=True)
    # a workplace value outside its declared domain (complete=True) is refused
    narrow = replace(hand, domains={**hand.domains, "county": ("c1", "c3")})
    with pytest.raises(SpecError, match="outside the declared domains"):
        engine.cell_statistics(narrow, ["county"], [], complete=True)
    # a job at an unknown workplace and a value outside its domain are refused, not dropped
    bad = make_data(ESTABS, [*JOBS, ("e9", "M", "A01")])
    with pytest.raises(SpecError, match="missing from the workplace table"):
        engine.cell_statistics(bad, [], [])
    bad = make_data(ESTABS, [*JOBS, ("e1", "X", "A01")])
    with pytest.raises(SpecError, match=r"\['sex'\].*outside their declared domain"):
        engine.cell_statistics(bad, ["county"], ["age", "sex"])


# ---------------------------------------------------------------- synthetic data


@pytest.mark.parametrize(
    "wp_by,wk_by,kw",
    [
        (["county", "naics_sector"], [], {}),
        (["county", "naics_sector"], ["age"], {}),
        (["tract", "ownership"], ["age", "sex"], {"truncate_below": 20}),
        ([], [], {"truncate_below": 50}),
    ],
)
def test_synthetic_marginals(engine, synth, wp_by, wk_by, kw):
    same(engine, synth, synth, wp_by, wk_by, **kw)


def test_synthetic_complete_with_declared_domains(engine, synth):
    same(engine, synth, synth, ["county", "ownership"], ["sex"], complete=True, truncate_below=10)


def test_spark_native_parquet_path(engine, synth_files, synth):
    """Spark reads and validates the Parquet files itself; no Polars frame involved."""
    sdata = engine.read_parquet(synth_files.workplace, synth_files.worker, synth_files.job)
    assert isinstance(sdata, SparkJobTables)
    assert sorted(sdata.workplaces.columns) == sorted(synth.workplaces.columns)
    assert sdata.domains == {a: synth.domains[a] for a in sdata.domains}
    same(engine, sdata, synth, ["county", "naics_sector", "ownership"], ["age", "sex"],
         truncate_below=25)  # fmt: skip
    same(engine, sdata, synth, [], ["race"])
    assert_frame_equal(
        engine.establishment_cells(sdata, ["county"], ["sex"]),
        PolarsEngine().establishment_cells(synth, ["county"], ["sex"]),
    )


def test_workplace_only_load_matches_ids_without_a_join(engine, spark, synth_files, synth,
                                                        tmp_path):  # fmt: skip
    """No worker attribute loaded: ids proven to match by order and twin files or lanes.

    Same cell statistics as Polars; an invalid input found on that path is named by the
    rule-by-rule checks, and a worker table out of order takes the join. Job files that
    hold the worker files' ids row for row need no lane; others are matched by lanes.
    """
    import eree.engine.spark.validate as se

    job = pl.read_parquet(synth_files.job)
    worker = pl.read_parquet(synth_files.worker)
    assert job["worker_id"].is_sorted() and worker["worker_id"].is_sorted()
    cfg = replace(synth_files, worker_attributes=())
    paths: list[str] = []  # per load: "order", "join" (the ids were not in order) or "error"
    named: list[int] = []
    real_order, real_named = se._validate_and_code_by_order, se._validate_three
    real_lanes = se.id_lanes
    lanes: list[int] = []  # per load by order: 1 when the worker ids were matched by lanes

    def by_order(*a, **k):
        lanes.append(0)
        try:
            coded = real_order(*a, **k)
        except DataValidationError:
            paths.append("error")
            raise
        paths.append("join" if coded is None else "order")
        return coded

    def id_lanes(*a, **k):
        lanes[-1] = 1
        return real_lanes(*a, **k)

    def rule_by_rule(*a, **k):  # runs only when the fused checks flag something
        named.append(1)
        return real_named(*a, **k)

    se._validate_and_code_by_order, se._validate_three = by_order, rule_by_rule
    se.id_lanes = id_lanes
    try:
        sdata = engine.load(cfg)
        assert paths == ["order"] and not named  # proven by order: no join, no error
        assert lanes == [0]  # the job file holds the worker file's ids row for row
        same(engine, sdata, synth, ["county", "naics_sector", "ownership"], [],
             truncate_below=25)  # fmt: skip

        def rule_of(**tables: pl.DataFrame) -> str | None:
            files = {"workplace": synth_files.workplace, "worker": synth_files.worker,
                     "job": synth_files.job}  # fmt: skip
            for k, df in tables.items():
                files[k] = tmp_path / f"{k}_{len(paths)}.parquet"
                df.write_parquet(files[k])
            try:
                engine.load(replace(cfg, **files))
            except DataValidationError as err:
                return err.rule
            return None

        # an establishment without jobs counts in its cell's establishments, not its jobs
        wp = pl.read_parquet(synth_files.workplace)
        empty = wp.head(1).with_columns(pl.lit("w_no_jobs").alias("workplace_id"))
        wp_path = tmp_path / "workplace_empty.parquet"
        pl.concat([wp, empty]).write_parquet(wp_path)
        with_empty = replace(cfg, workplace=wp_path)
        same(engine, engine.load(with_empty), load_job_tables(with_empty),
             ["county", "naics_sector", "ownership"], [], truncate_below=25)  # fmt: skip
        assert paths[-1] == "order"

        last = job["worker_id"][-1]
        # sorted, unique, same count, but one job's worker is not in the worker table
        bad = job.with_columns(
            pl.when(pl.col("worker_id") == last).then(pl.lit(last + "z"))
            .otherwise(pl.col("worker_id")).alias("worker_id"))  # fmt: skip
        assert rule_of(job=bad) == "unknown-worker" and paths[-1] == "error"
        assert lanes[-1] == 1  # one job's worker differs: not twins, matched by lanes
        # one worker with two jobs, another with none: same counts, jobs still sorted
        first = job["worker_id"][0]
        twice = job.with_columns(
            pl.when(pl.col("worker_id") == last).then(pl.lit(first))
            .otherwise(pl.col("worker_id")).alias("worker_id"))  # fmt: skip
        assert rule_of(job=twice) == "multiple-jobs" and paths[-1] == "error"
        # a job at an unknown workplace
        lost = job.with_columns(
            pl.when(pl.col("worker_id") == last).then(pl.lit("nowhere"))
            .otherwise(pl.col("workplace_id")).alias("workplace_id"))  # fmt: skip
        assert rule_of(job=lost) == "unknown-workplace" and paths[-1] == "error"
        assert lanes[-1] == 0  # twins: the workplace check refuses it
        # a blank worker id, the same in both tables (first in order): a missing id
        blank_worker = pl.concat([worker.head(1).with_columns(pl.lit(" ").alias("worker_id")),
                                  worker])  # fmt: skip
        blank_job = pl.concat([job.head(1).with_columns(pl.lit(" ").alias("worker_id")), job])
        assert blank_worker["worker_id"].is_sorted()
        assert rule_of(worker=blank_worker, job=blank_job) == "missing-id"
        assert paths[-1] == "error"
        # valid, the jobs in two files, the workers in one: not twins, matched by lanes
        split = tmp_path / f"job_split_{len(paths)}"
        split.mkdir()
        job.head(5_000).write_parquet(split / "part-0.parquet")
        job.slice(5_000).write_parquet(split / "part-1.parquet")
        n = len(named)
        engine.load(replace(cfg, job=split))
        assert paths[-1] == "order" and lanes[-1] == 1 and len(named) == n
        # a repeated worker id (not strictly increasing), the last worker dropped
        rep = pl.concat([worker.head(1), worker.slice(0, worker.height - 1)])
        assert rule_of(worker=rep) == "duplicate-id" and paths[-1] == "join"
        # valid, jobs unsorted: only the worker ids need to be in order, still proven
        n = len(named)
        assert rule_of(job=job.sample(fraction=1.0, shuffle=True, seed=3)) is None
        assert paths[-1] == "order" and len(named) == n
        # valid, workers unsorted: the join codes it, no error
        assert rule_of(worker=worker.sample(fraction=1.0, shuffle=True, seed=3)) is None
        assert paths[-1] == "join" and len(named) == n
        # fewer workers than jobs
        assert rule_of(worker=worker.head(10)) == "unknown-worker" and paths[-1] == "error"
    finally:
        se._validate_and_code_by_order, se._validate_three = real_order, real_named
        se.id_lanes = real_lanes


def test_order_proof_across_packed_files(spark, tmp_path):
    """Parts of a partitioned table packed into one Spark partition out of id order.

    Spark packs small files into a partition largest first, so the ids do not increase
    across the partition; each file's run does, and the runs are disjoint: proven.
    """
    from eree.engine.spark.id_order import id_lanes, ids_in_order

    ids = [f"k{i:05d}" for i in range(3_000)]
    parts = {"part-0.parquet": ids[:100], "part-1.parquet": ids[100:1_000],
             "part-2.parquet": ids[1_000:]}  # fmt: skip
    for name, chunk in parts.items():
        (tmp_path / "t").mkdir(exist_ok=True)
        pl.DataFrame({"k": chunk}).write_parquet(tmp_path / "t" / name)
    keys = ("spark.sql.files.openCostInBytes", "spark.sql.files.minPartitionNum")
    saved = {k: spark.conf.get(k, None) for k in keys}
    spark.conf.set(keys[0], "0")  # pack every part into one partition
    spark.conf.set(keys[1], "1")
    try:
        df = spark.read.parquet(str(tmp_path / "t"))
        assert df.rdd.getNumPartitions() == 1  # all three parts in one partition
        assert ids_in_order(df, "k")
        flat = spark.createDataFrame([(i,) for i in ids], "k string")
        (n, miss, lanes), (n_flat, _, lanes_flat) = id_lanes([df, flat], "k", [7])
        assert (n, miss) == (len(ids), 0) and (n, lanes) == (n_flat, lanes_flat)
        # a repeated id in another file (each file still increasing): overlapping runs
        pl.DataFrame({"k": [ids[500]]}).write_parquet(tmp_path / "t" / "part-3.parquet")
        assert not ids_in_order(spark.read.parquet(str(tmp_path / "t")), "k")
    finally:
        for k, v in saved.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)


def test_order_proof_pieces(spark):
    """The order check and the lane sums on hand-made id lists.

    The lanes are checked against Spark's xxHash64 of each row, summed modulo 2⁶⁴ here.
    """
    from eree.engine.spark.id_order import id_lanes, ids_in_order

    def df(ids: list[str | None], parts: int = 1):
        return spark.createDataFrame([(i,) for i in ids], "k string").coalesce(parts)

    assert ids_in_order(df(["a", "b", "c"]), "k")
    assert not ids_in_order(df(["a", "b", "b"]), "k")
    assert not ids_in_order(df(["b", "a"]), "k")
    assert not ids_in_order(df(["a", None, "c"]), "k")
    assert ids_in_order(df([]), "k")
    ids = [f"w{i:04d}" for i in range(50)]
    assert ids_in_order(df(ids, 3), "k")  # split over partitions, still in order

    def lanes(*frames):
        return [lane for _, _, lane in id_lanes(frames, "k", [7, 8])]

    split = lanes(df(ids, 3), df(ids[::-1], 2))  # same set, any order or split
    assert split[0] == split[1]
    other = lanes(df(ids), df([*ids[:-1], "w9999"]))  # same count, one id different
    assert other[0][0] != other[1][0] and other[0][1] != other[1][1]
    twice = lanes(df(ids), df([ids[0], *ids[:-1]]))  # one id twice, another missing
    assert twice[0] != twice[1]
    # the lanes: rows, missing ids, Σ xxHash64(key, id) mod 2**64 per key
    from pyspark.sql import functions as sf

    sample = ["a", "b", " ", None]
    one = spark.createDataFrame([(i,) for i in sample], "k string")
    key = 2**62 + 12345  # Spark's xxHash64 of (key, id) on each row, summed here
    by_row = one.select(sf.xxhash64(sf.lit(key), sf.col("k")).alias("h")).collect()
    expect = sum(r["h"] % (1 << 64) for r in by_row) % (1 << 64)
    assert id_lanes([one], "k", [key]) == [(4, 2, [expect])]
    assert id_lanes([one.limit(0)], "k", [key]) == [(0, 0, [0])]


def test_order_proof_from_the_files(spark, tmp_path):
    """The order proof read from the Parquet files by PyArrow (no row through Spark's JVM).

    Distinct ids in increasing runs with disjoint ranges are proven, in any file order
    and any row-group order; a repeated id (in one file or across two), a null id or
    shuffled ids are not; a file PyArrow cannot read as Parquet leaves it to Spark's
    proof (``None``). What Spark's own proof proves on the same files, it proves too.
    Twin files are the same only when every pair holds the same ids row for row, none
    missing (null, empty or blank), integers as their decimal text.
    """
    from eree.engine.spark.id_order import files_in_order, ids_in_order, twin_files_in_order

    def table(name: str, **parts: list) -> tuple[bool, int] | None:
        d = tmp_path / name
        d.mkdir()
        for part, ids in parts.items():  # small row groups: several per file
            pl.DataFrame({"k": ids}).write_parquet(d / f"{part}.parquet", row_group_size=100)
        df = spark.read.parquet(str(d))
        got = files_in_order(spark, df.inputFiles(), "k")
        if got is not None:
            assert got[1] == sum(len(ids) for ids in parts.values())  # every row read
            # what Spark's proof (runs of file blocks) proves, this one (runs of ids) does
            assert got[0] or not ids_in_order(df, "k")
        return got

    ids = [f"k{i:05d}" for i in range(1_000)]
    # files written highest ids first; a file whose row groups are out of order
    assert table("sorted", a=ids[600:], b=ids[:300], c=ids[300:600]) == (True, 1_000)
    assert table("groups", a=ids[500:] + ids[:500]) == (True, 1_000)
    assert table("twice_across", a=ids[:500], b=ids[499:]) == (False, 1_001)
    assert table("twice_within", a=[*ids[:10], ids[9], *ids[10:20]]) == (False, 21)
    assert table("null", a=[*ids[:10], None, *ids[10:20]]) == (False, 21)
    shuffled = pl.Series(ids).shuffle(seed=5).to_list()
    assert table("shuffled", a=shuffled) == (False, 1_000)
    # integer ids: their decimal text, as Spark casts them (10–12 and 20–21: in order)
    assert table("ints", a=[20, 21], b=[10, 11, 12]) == (True, 5)

    # twins: each file beside the file of the same rank in the other table, by name
    def twins(name: str, files: dict, twin_files: dict):
        paths = []
        for table, parts in (("a", files), ("b", twin_files)):
            d = tmp_path / name / table
            d.mkdir(parents=True)
            for part, chunk in parts.items():
                pl.DataFrame({"k": chunk}).write_parquet(d / f"{part}.parquet", row_group_size=70)
            paths.append(spark.read.parquet(str(d)).inputFiles())
        return twin_files_in_order(spark, paths[0], "k", paths[1], "k")

    halves = {"p0": ids[:400], "p1": ids[400:]}
    assert twins("same", halves, halves) == (True, 1_000, True)
    other = [*ids[:399], "k00399z"]  # one id differs
    assert twins("differs", halves, {"p0": other, "p1": ids[400:]}) == (True, 1_000, False)
    swapped = [*ids[:398], ids[399], ids[398]]  # the same ids, not in the same order
    assert twins("swapped", halves, {"p0": swapped, "p1": ids[400:]}) == (True, 1_000, False)
    # the same ids, cut elsewhere: not twins (the lanes match them)
    assert twins("cut", halves, {"p0": ids[:300], "p1": ids[300:]}) == (True, 1_000, False)
    assert twins("longer", halves, {"p0": [*ids[:400], "k9"], "p1": ids[400:]}).same is False
    assert twins("shorter", halves, {"p0": ids[:399], "p1": ids[400:]}).same is False
    assert twins("fewer", halves, {"p0": ids}) == (True, 1_000, False)
    nulls = {"p0": [*ids[:10], None, *ids[11:400]], "p1": ids[400:]}
    assert twins("twin_null", halves, nulls) == (True, 1_000, False)
    blank = {"p0": ["", *ids[:399]], "p1": ids[400:]}  # "" and " ": missing ids
    assert twins("empty", blank, blank) == (True, 1_000, False)
    blank = {"p0": [" ", *ids[:399]], "p1": ids[400:]}
    assert twins("blank", blank, blank) == (True, 1_000, False)
    ints = {"p0": [10, 11, 12], "p1": [20, 21]}
    assert twins("ints", ints, {"p0": ["10", "11", "12"], "p1": ["20", "21"]}).same is True
    assert twins("ints_text", ints, {"p0": ["10", "11", "012"], "p1": ["20", "21"]}).same is False
    # not Parquet to PyArrow: no verdict here
    csv = tmp_path / "t.csv"
    csv.write_text("k\na\nb\n")
    assert files_in_order(spark, [csv.as_uri()], "k") is None
    fake = tmp_path / "fake.parquet"
    fake.write_text("k\na\nb\n")
    assert files_in_order(spark, [fake.as_uri()], "k") is None
    assert files_in_order(spark, [], "k") is None


# ---------------------------------------------------------------- heavier checks


@pytest.mark.slow
@pytest.mark.parametrize(
    "wp_by,wk_by",
    [
        (["tract", "naics_sector", "ownership"], ["age", "sex", "race"]),
        (["block"], ["earnings"]),
        (["state"], ["ethnicity", "education"]),
        (["naics_sector"], ["age", "sex"]),
    ],
)
def test_more_marginals(engine, synth, wp_by, wk_by):
    same(engine, synth, synth, wp_by, wk_by, truncate_below=15)


@pytest.mark.slow
def test_without_persist_and_release(spark, hand, synth):
    engine = SparkEngine(spark, persist=False)
    same(engine, hand, hand, ["county"], ["age", "sex"], truncate_below=4)
    engine = SparkEngine(spark)
    engine.prepare(synth)
    same(engine, synth, synth, ["county"], ["age"])
    engine.unpersist()
    same(engine, synth, synth, ["county"], ["age"])


@pytest.mark.slow
def test_joined_csv_form(engine, spark, synth_files, synth, tmp_path: Path):
    s = synth_parametric(seed=11, n_jobs=20_000)
    path = tmp_path / "jobs.csv.gz"
    import gzip

    with gzip.open(path, "wb") as fh:
        s.joined().write_csv(fh)
    config = JobTablesConfig(jobs=path)
    sdata = SparkJobTables.from_config(spark, config)
    same(engine, sdata, load_job_tables(config), ["county"], ["age", "sex"], truncate_below=30)
    same(engine, sdata, synth, ["county"], ["age", "sex"], truncate_below=30)


def _write(tmp_path: Path, name: str, df: pl.DataFrame) -> Path:
    p = tmp_path / f"{name}.parquet"
    df.write_parquet(p)
    return p


@pytest.mark.slow
def test_spark_loader_rejects_bad_input(spark, tmp_path: Path):
    s = synth_parametric(seed=5, n_jobs=2_000)
    wp = _write(tmp_path, "workplace", s.workplace)
    wk = _write(tmp_path, "worker", s.worker)
    jb = _write(tmp_path, "job", s.job)
    SparkJobTables.from_parquet(spark, wp, wk, jb)  # valid

    def rejects(rule: str, **files: pl.DataFrame) -> None:
        paths = {"workplace": wp, "worker": wk, "job": jb}
        for k, df in files.items():
            paths[k] = _write(tmp_path, f"bad_{k}", df)
        with pytest.raises(DataValidationError) as err:
            SparkJobTables.from_parquet(spark, paths["workplace"], paths["worker"], paths["job"])
        assert err.value.rule == rule

    first_wp = s.workplace["workplace_id"][0]
    rejects("duplicate-id", workplace=pl.concat([s.workplace, s.workplace.head(1)]))
    rejects("missing-value", workplace=s.workplace.with_columns(
        pl.when(pl.col("workplace_id") == first_wp).then(None).otherwise(pl.col("county"))
        .alias("county")))  # fmt: skip
    rejects("domain", worker=s.worker.with_columns(pl.lit("X").alias("sex")))
    rejects("unknown-workplace", job=s.job.with_columns(pl.lit("nowhere").alias("workplace_id")))
    rejects("multiple-jobs", job=pl.concat([s.job, s.job.head(1)]))
    rejects("no-job", job=s.job.slice(1))
    rejects("missing-column", job=s.job.drop("workplace_id"))
    rejects("missing-id", worker=s.worker.with_columns(pl.lit(None, pl.Utf8).alias("worker_id")))
    # each worker-side rule alone (the fused check flags them, the named check names them)
    rejects("duplicate-id", worker=pl.concat([s.worker, s.worker.head(1)]))
    rejects("unknown-worker", job=s.job.with_columns(
        pl.when(pl.col("worker_id") == s.job["worker_id"][0]).then(pl.lit("nobody"))
        .otherwise(pl.col("worker_id")).alias("worker_id")))  # fmt: skip
    rejects("domain", worker=s.worker.with_columns(
        pl.when(pl.col("worker_id") == s.worker["worker_id"][0]).then(None)
        .otherwise(pl.col("age")).alias("age")))  # fmt: skip
    rejects("missing-id", job=s.job.with_columns(
        pl.when(pl.col("worker_id") == s.job["worker_id"][0]).then(None)
        .otherwise(pl.col("workplace_id")).alias("workplace_id")))  # fmt: skip
    # no unmatched id at all, only repeats on both sides: caught by the pair count
    rejects("duplicate-id", worker=pl.concat([s.worker, s.worker.head(1)]),
            job=pl.concat([s.job, s.job.head(1)]))  # fmt: skip


# ------------------------------------------------- establishments (docs/design.md#core-objects)


@pytest.fixture(scope="module")
def qcew_file(tmp_path_factory) -> Path:
    from eree.synth.qcew import synth_qcew_parametric

    frame = synth_qcew_parametric(seed=5, n_establishments=3_000).establishments
    # a non-integer attribute too, so that the exact sums are exercised beyond integers
    frame = frame.with_columns((pl.col("wage") / 7.0).alias("wage"))
    path = tmp_path_factory.mktemp("qcew") / "estabs.parquet"
    frame.write_parquet(path)
    return path


def test_establishment_protocol_identical_to_polars(engine, qcew_file):
    from eree.data.config import EstablishmentDataConfig

    cfg = EstablishmentDataConfig(path=qcew_file)
    pe = PolarsEngine()
    pdata = pe.load_establishments(cfg)
    sdata = engine.load_establishments(cfg)  # read and validated by Spark
    attrs = ["m1emp", "m3emp", "wage"]
    assert_frame_equal(engine.identity_values(sdata, attrs), pe.identity_values(pdata, attrs))
    for by in ([], ["cnty"], ["cnty", "naics_sector", "own"]):
        assert_frame_equal(engine.group_sums(sdata, by, attrs), pe.group_sums(pdata, by, attrs))
    ids = pdata.frame.get_column("primary_key")
    bounds = pl.DataFrame(
        {"primary_key": ids, "m3emp": (pl.int_range(ids.len(), eager=True) % 97).cast(pl.Float64)}
    )
    for by in ([], ["naics_sector"]):
        assert_frame_equal(
            engine.group_max_bounds(sdata, by, bounds), pe.group_max_bounds(pdata, by, bounds)
        )
        assert_frame_equal(
            engine.clipped_group_sums(sdata, by, bounds, ["m3emp"]),
            pe.clipped_group_sums(pdata, by, bounds, ["m3emp"]),
        )


def test_spark_establishment_loader_refuses_bad_values(engine, tmp_path):
    from eree.data.config import EstablishmentDataConfig

    frame = pl.DataFrame(
        {"primary_key": ["a", "b", "c"], "cnty": ["001"] * 3, "naics": ["111110"] * 3,
         "m1emp": [1.0, -7777.0, 3.0]},
    )  # fmt: skip
    path = tmp_path / "bad.parquet"
    frame.write_parquet(path)
    cfg = EstablishmentDataConfig(
        path=path, public=("cnty", "naics_sector"), confidential=("m1emp",)
    )
    with pytest.raises(DataValidationError) as err:
        engine.load_establishments(cfg)
    assert err.value.rule == "negative" and err.value.column == "m1emp"
    assert "7777" not in str(err.value)  # never a confidential value
    dup = frame.with_columns(pl.lit("a").alias("primary_key"), pl.col("m1emp").abs())
    dup.write_parquet(path)
    with pytest.raises(DataValidationError) as err:
        engine.load_establishments(cfg)
    assert err.value.rule == "duplicate-id"


# ---------------------------------------- whole releases: same tables from both engines


def _release_tables(spec: str, base: Path, out: Path, engine_kind: str) -> dict[str, pl.DataFrame]:
    import tomllib

    from eree.mechanisms.noise import SeededNoise
    from eree.release.protect import protect
    from eree.release.spec import parse_spec

    raw = tomllib.loads(spec)
    raw["engine"] = {"kind": engine_kind}
    plan = parse_spec(raw, base)
    res = protect(plan, out, SeededNoise(7))
    return {t.name: t.table for t in res.tables}


def test_protect_same_tables_on_both_engines_eree(spark, synth_files, tmp_path):
    spec = f"""
name = "parity-eree"
[data]
workplace = "{synth_files.workplace}"
worker = "{synth_files.worker}"
job = "{synth_files.job}"
[privacy]
definition = "eree-weak"
alpha = 0.1
[[query]]
name = "county_sector_age"
by = ["county", "naics_sector", "age"]
mechanism = "smooth_laplace"
epsilon = 3.0
[[query]]
name = "total"
by = []
mechanism = "smooth_gamma"
epsilon = 1.0
"""
    polars = _release_tables(spec, tmp_path, tmp_path / "p", "polars")
    spark_ = _release_tables(spec, tmp_path, tmp_path / "s", "spark")
    assert polars.keys() == spark_.keys()
    for name in polars:
        assert_frame_equal(spark_[name], polars[name])


def test_protect_same_tables_on_both_engines_gedp(spark, qcew_file, tmp_path):
    spec = f"""
name = "parity-gedp"
[data]
kind = "establishments"
path = "{qcew_file}"
public = ["cnty", "own", "naics_sector", "naics5"]
confidential = ["m1emp", "m3emp", "wage"]
[privacy]
definition = "gedp"
neighbor = "sqrt"
distance = {{ m1emp = 0.5, m3emp = 0.5, wage = 50.0 }}
[[query]]
name = "identity"
by = "identity"
mechanism = "psi"
mu = {{ m1emp = 0.7, m3emp = 0.7, wage = 0.15 }}
[[query]]
name = "state"
by = []
mechanism = "pnc"
mu = {{ m1emp = 0.2, m3emp = 0.2, wage = 0.10 }}
[[query]]
name = "county_naics5"
by = ["cnty", "naics5"]
mechanism = "pnc"
mu = {{ m1emp = 0.7, m3emp = 0.7, wage = 0.15 }}
[[query]]
name = "sector"
by = ["naics_sector"]
mechanism = "psi"
mu = {{ m1emp = 0.3, m3emp = 0.3, wage = 0.1 }}
[pnc]
zeta = 0.01
bounds_from = "identity"
[postprocess]
microdata = true
"""
    polars = _release_tables(spec, tmp_path, tmp_path / "p", "polars")
    spark_ = _release_tables(spec, tmp_path, tmp_path / "s", "spark")
    assert polars.keys() == spark_.keys()
    for name in polars:
        assert_frame_equal(spark_[name], polars[name])
    micro_p = pl.read_parquet(next((tmp_path / "p").rglob("microdata*.parquet")))
    micro_s = pl.read_parquet(next((tmp_path / "s").rglob("microdata*.parquet")))
    assert_frame_equal(micro_s, micro_p)


@pytest.mark.slow
def test_spark_fingerprint_equals_the_polars_one(engine, synth_files, tmp_path) -> None:
    """The ledger sees the same content whichever engine loaded it (docs/privacy.md)."""
    from eree.data.config import EstablishmentDataConfig
    from eree.data.fingerprint import content_fingerprint, structure_fingerprint
    from eree.engine.spark.establishments import load_establishments_spark
    from eree.engine.spark.fingerprint import spark_fingerprint
    from tests.release.test_gedp import write_small

    spark_data = engine.load_job_tables(synth_files)
    assert spark_data.hashed is not None  # workplace ids hashed once, during validation
    # and hashed per job (data not read by from_config), declared domains not used
    unhashed = replace(spark_data, hashed=None, domains={})
    for polars_data in (PolarsEngine().load_job_tables(synth_files), load_job_tables(synth_files)):
        for sdata in (spark_data, unhashed):
            assert spark_fingerprint(sdata, structure=False) == content_fingerprint(polars_data)
            assert spark_fingerprint(sdata, structure=True) == structure_fingerprint(polars_data)
    # establishments: text ids and codes, confidential doubles (a -0.0 and a NaN-free wage)
    csv = write_small(tmp_path / "e.csv", n=50)
    df = pl.read_csv(csv, infer_schema_length=0)
    df.with_columns(pl.when(pl.col("primary_key") == "E0003").then(pl.lit("-0.0"))
                    .otherwise(pl.col("wage")).alias("wage")).write_csv(csv)  # fmt: skip
    cfg = EstablishmentDataConfig(csv, public=("cnty", "own", "naics"))
    from eree.data.establishments import load_establishments

    est = load_establishments(cfg)
    sest = load_establishments_spark(engine.spark, cfg)
    assert spark_fingerprint(sest, structure=False) == content_fingerprint(est)
    assert spark_fingerprint(sest, structure=True) == structure_fingerprint(est)


def test_spark_structure_counts_equal_the_polars_ones(engine, synth_files, tmp_path) -> None:
    """The ledger's similarity sketch reads the same (id word, job count) pairs on both
    engines (a workplace without jobs counts 0; establishments: all 0)."""
    from eree.data.config import EstablishmentDataConfig
    from eree.data.establishments import load_establishments
    from eree.data.fingerprint import structure_counts
    from eree.engine.spark.establishments import load_establishments_spark
    from tests.release.test_gedp import write_small

    def pairs(wc) -> list[tuple[int, int]]:
        return sorted(zip(wc[0].tolist(), wc[1].tolist(), strict=True))

    polars_data = load_job_tables(synth_files)
    expected = pairs(structure_counts(polars_data))
    assert sum(n for _, n in expected) == polars_data.jobs.height
    assert pairs(engine.structure_counts(engine.load_job_tables(synth_files))) == expected
    csv = write_small(tmp_path / "e.csv", n=50)
    cfg = EstablishmentDataConfig(csv, public=("cnty", "own", "naics"))
    got = pairs(engine.structure_counts(load_establishments_spark(engine.spark, cfg)))
    assert got == pairs(structure_counts(load_establishments(cfg))) and len(got) == 50


def test_value_counts_from_the_files(spark, tmp_path):
    """Rows per value of a column, counted by PyArrow from the files, summed by Spark.

    The expected counts are Polars' own count of the same values (as text); a value
    repeated across row groups and files is summed, nulls are one value, integers count
    as their decimal text, and a column not dictionary-encoded in the file counts the same.
    """
    from eree.engine.spark.file_counts import value_counts

    rng = list(range(3_000))
    words = [None if i % 97 == 0 else f"w{(i * 7919) % 211:03d}" for i in rng]
    d = tmp_path / "text"
    d.mkdir()
    pl.DataFrame({"w": words[:1_000]}).write_parquet(d / "a.parquet", row_group_size=300)
    plain = {"use_dictionary": False}  # the values as they are, no dictionary in the file
    pl.DataFrame({"w": words[1_000:]}).write_parquet(
        d / "b.parquet", use_pyarrow=True, pyarrow_options=plain
    )
    ints = [i % 13 for i in rng]
    pl.DataFrame({"w": ints}).write_parquet(tmp_path / "ints.parquet", row_group_size=500)

    def counted(path) -> dict:
        files = spark.read.parquet(str(path)).inputFiles()
        rows = value_counts(spark, files, "w", "v", "n").collect()
        assert len({r["v"] for r in rows}) == len(rows)  # one row per value
        return {r["v"]: r["n"] for r in rows}

    def expected(values: list) -> dict:
        frame = pl.DataFrame({"v": [None if v is None else str(v) for v in values]})
        return dict(frame.group_by("v").len().iter_rows())

    got = counted(d)
    assert got == expected(words) and sum(got.values()) == len(words)
    assert counted(tmp_path / "ints.parquet") == expected(ints)


def test_spark_fingerprint_sql_with_awkward_names_and_values(spark) -> None:
    """The fingerprint's SQL text quotes any column name (a backtick, braces, a dot) and
    any declared domain value (quotes, backslashes, a newline, non-ASCII, ``{df}``), and
    keeps nulls, NaN, -0.0 and booleans apart: the same content and structure
    fingerprints as Polars' (tests/data/test_fingerprint.py defines them)."""
    import math
    from types import SimpleNamespace

    from pyspark.sql.types import (
        BooleanType,
        DoubleType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    from eree.data.fingerprint import content_fingerprint, structure_fingerprint
    from eree.engine.spark.fingerprint import spark_fingerprints, sql_string

    odd = ["O'Brien", "back\\slash", "two\nlines", "é ü 名", "{df}", "a`b", ""]
    for v in odd:
        assert spark.sql("SELECT " + sql_string(v)).first()[0] == v
    names = ["id key", "t`{x}", "f.1", "n", "b"]
    rows = [
        (f"e{i}", odd[i % len(odd)] if i % 5 else None,
         [1.5, math.nan, -0.0, None, 1e300][i % 5], i - 3 if i % 4 else None, i % 3 == 0)
        for i in range(23)
    ]  # fmt: skip
    polars = pl.DataFrame(
        rows, schema={"id key": pl.Utf8, "t`{x}": pl.Utf8, "f.1": pl.Float64, "n": pl.Int64,
                      "b": pl.Boolean}, orient="row", strict=False,
    )  # fmt: skip
    assert polars.get_column("f.1").is_nan().sum() > 0 and polars.get_column("f.1").null_count()
    types = [StringType(), StringType(), DoubleType(), LongType(), BooleanType()]
    sdf = spark.createDataFrame(
        rows, StructType([StructField(n, t) for n, t in zip(names, types, strict=True)])
    )
    pdata = SimpleNamespace(frame=polars, id_column="id key")
    for domains in ({}, {"t`{x}": odd}):  # words looked up in a literal map, or hashed
        sdata = SimpleNamespace(frame=sdf, config=SimpleNamespace(id="id key"), domains=domains)
        assert spark_fingerprints(sdata) == (
            content_fingerprint(pdata),
            structure_fingerprint(pdata),  # type: ignore[arg-type]
        )
