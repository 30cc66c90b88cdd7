"""``[data]`` paths given as URIs (``file://``, ``hdfs://``, ``s3a://``, …), through ``eree``.

docs/spec.md#input-files and docs/spark-cluster.md#inputs-by-uri: a URI is kept as
given (never resolved against the spec's folder) and recorded so in the manifest; the
Spark engine reads it with Spark alone (nothing of it is read by Python on the driver);
the Polars engine reads ``file://`` as the local path it names and refuses any other
scheme in one line. Expectations come from those rules and from the plain-path release
of the same files (the same bytes must give the same tables and the same fingerprint).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from unittest import mock

import polars as pl
import pytest

from tests.cli.inputs import assert_clean_failure, judge, run_cli, write_eree_case, write_estab_case

TABLES = ("county", "county_sex")


def _parquet_case(root: Path) -> tuple[Path, Path]:
    """ER-EE Parquet input, the workplace table a folder of two parts; (plain, URI) specs.

    The plain spec names the files relative to its folder; the URI spec names the same
    files by absolute ``file://`` URIs.
    """
    spec = write_eree_case(root, "parquet")
    data = root / "data"
    parts = data / "workplace_parts"
    parts.mkdir()
    wp = pl.read_parquet(data / "workplace.parquet")
    wp.head(5).write_parquet(parts / "part-0.parquet")
    wp.tail(wp.height - 5).write_parquet(parts / "part-1.parquet")
    (data / "workplace.parquet").unlink()
    text = spec.read_text().replace("data/workplace.parquet", "data/workplace_parts")
    spec.write_text(text)
    uri = text
    for rel, p in (
        ("data/workplace_parts", parts),
        ("data/worker.parquet", data / "worker.parquet"),
        ("data/job.parquet", data / "job.parquet"),
    ):
        uri = uri.replace(f'"{rel}"', f'"{p.as_uri()}"')
    assert uri.count("file:///") == 3
    uspec = root / "uri.toml"
    uspec.write_text(uri)
    return spec, uspec


def _csv_case(root: Path, kind: str = "eree") -> tuple[Path, Path]:
    """CSV input (three ER-EE tables, or the establishment file); (plain, URI) specs."""
    spec = write_eree_case(root, "csv") if kind == "eree" else write_estab_case(root, "csv")
    text = spec.read_text()
    uri = text
    for f in sorted((root / "data").glob("*.csv")):
        uri = uri.replace(f'"data/{f.name}"', f'"{f.as_uri()}"')
    assert '"data/' not in uri
    uspec = root / "uri.toml"
    uspec.write_text(uri)
    return spec, uspec


def _protect(spec: Path, out: Path, engine: str, *extra: str) -> None:
    r = run_cli(["protect", str(spec), "--out", str(out), "--engine", engine, *extra])
    assert r.exit_code == 0, r.stderr


def _tables(out: Path, names=TABLES) -> dict[str, pl.DataFrame]:
    return {t: pl.read_parquet(out / "tables" / f"{t}.parquet") for t in names}


def _same_tables(a: Path, b: Path, names=TABLES) -> None:
    ta, tb = _tables(a, names), _tables(b, names)
    for t in names:
        assert ta[t].height > 0
        assert ta[t].equals(tb[t]), t


def _files(out: Path) -> list[str]:
    return json.loads((out / "manifest.json").read_text())["dataset"]["files"]


# ------------------------------------------------------------------------------ Polars


def test_polars_reads_file_uris_as_their_paths(tmp_path):
    """file:// URIs (a folder of Parquet parts; CSV) release the plain paths' tables."""
    for case in (_parquet_case, _csv_case):
        root = tmp_path / case.__name__
        plain, uri = case(root)
        _protect(plain, root / "plain", "polars", "--seed", "7")
        _protect(uri, root / "uri", "polars", "--seed", "7")
        _same_tables(root / "plain", root / "uri")
        # the manifest names a URI as given, a local path by its file name
        given = [v for k, v in _spec_data(uri).items() if k in ("workplace", "worker", "job")]
        assert _files(root / "uri") == given
        assert all(not f.startswith("file:") for f in _files(root / "plain"))


def _spec_data(spec: Path) -> dict[str, str]:
    import tomllib

    return tomllib.loads(spec.read_text())["data"]


def test_relative_paths_are_still_resolved_against_the_spec(tmp_path, monkeypatch):
    """A plain relative path starts at the spec's folder, whatever the working folder."""
    plain, _ = _csv_case(tmp_path / "case")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    _protect(plain, tmp_path / "out", "polars", "--seed", "7")
    assert _files(tmp_path / "out") == ["workplace.csv", "worker.csv", "job.csv"]


@pytest.mark.parametrize(
    "uri", ["hdfs://nonexistent:8020/x.parquet", "s3a://bucket/x", "file://otherhost/x.csv"]
)
def test_polars_refuses_other_schemes_in_one_line(tmp_path, uri):
    spec = write_eree_case(tmp_path)
    spec.write_text(spec.read_text().replace('"data/worker.csv"', f'"{uri}"'))
    out = tmp_path / "out"
    for cmd in (["validate", str(spec)], ["protect", str(spec), "--out", str(out), "--seed", "1"]):
        line = assert_clean_failure(run_cli(cmd), out, "[data].worker", uri)
        assert 'kind = "spark"' in line
        assert not out.exists()


def test_explain_and_spark_validate_without_data_take_uris_as_given(tmp_path):
    """No data read: `explain` and `validate --no-data` on Spark accept any scheme.

    The URIs are not checked for existence by Python (Spark checks them when it reads);
    the same spec on the Polars engine is refused for its hdfs:// input.
    """
    spec = write_eree_case(tmp_path)
    text = spec.read_text().replace('"data/worker.csv"', '"hdfs://namenode:8020/lodes/worker"')
    spec.write_text(text)
    r = run_cli(["explain", str(spec)])
    assert r.exit_code == 0, r.stderr
    spark = tmp_path / "spark.toml"
    spark.write_text(text + '\n[engine]\nkind = "spark"\n')
    r = run_cli(["validate", str(spark), "--no-data"])
    assert r.exit_code == 0, r.stderr
    r = run_cli(["validate", str(spec), "--no-data"])
    assert_clean_failure(r, None, "[data].worker", 'kind = "spark"')


@pytest.mark.parametrize("engine", ["polars", "spark"])
def test_a_uri_with_a_password_is_refused(tmp_path, engine):
    """The manifest records a URI as given: one carrying a password is refused, unshown."""
    spec = write_eree_case(tmp_path)
    secret = "zq9xSECRETKEY"
    uri = f"s3a://AKIAEXAMPLE:{secret}@bucket/worker.csv"
    spec.write_text(spec.read_text().replace('"data/worker.csv"', f'"{uri}"'))
    out = tmp_path / "out"
    r = run_cli(["protect", str(spec), "--out", str(out), "--seed", "1", "--engine", engine])
    line = assert_clean_failure(r, out, "[data].worker", "must not carry a password")
    assert secret not in line
    assert not out.exists()


def test_polars_ledger_fingerprint_is_the_contents_not_the_path(tmp_path):
    """A ledger sees the same dataset through a plain path and through its file:// URI.

    The dataset's second release is accepted only if its content fingerprint equals the
    first one's (docs/design.md#budget-ledger); the manifests record the same one. A
    changed file under the same URI is refused as changed content.
    """
    plain, uri = _parquet_case(tmp_path / "case")
    led = tmp_path / "ledger.sqlite"
    r = run_cli(["ledger", "budget", str(led), "fuzz-eree", "--epsilon", "10", "--delta",
                 "0.5", "--alpha", "0.1"])  # fmt: skip
    assert r.exit_code == 0, r.stderr
    _protect(plain, tmp_path / "r1", "polars", "--ledger", str(led))
    _protect(uri, tmp_path / "r2", "polars", "--ledger", str(led))
    fp = [json.loads((tmp_path / r / "manifest.json").read_text())["dataset"]["fingerprint"]
          for r in ("r1", "r2")]  # fmt: skip
    assert fp[0] and fp[0] == fp[1]
    worker = tmp_path / "case" / "data" / "worker.parquet"
    df = pl.read_parquet(worker)
    df.with_columns(pl.col("sex").reverse()).write_parquet(worker)  # other content
    r = run_cli(["protect", str(uri), "--out", str(tmp_path / "r3"), "--ledger", str(led)])
    assert_clean_failure(r, tmp_path / "r3", "other values", "--new-version")


# ------------------------------------------------------------------------------- Spark


def _python_must_not_read():
    """Patches that fail a release which reads input files with Python on the driver."""

    def refuse(*_a, **_k):
        raise AssertionError("an input given by URI was read by Python on the driver")

    # modules that bind these names when first imported: imported now, unpatched
    import eree.data.establishments
    import eree.data.job_tables
    import eree.engine.spark.checks
    import eree.engine.spark.establishments  # noqa: F401

    return [
        mock.patch("eree.data.io.read_header", refuse),
        mock.patch("eree.data.io.csv_records", refuse),
        mock.patch("eree.engine.spark.checks.parquet_rows", refuse),
        mock.patch("eree.data.job_tables.load_job_tables", refuse),
        mock.patch("eree.data.establishments.load_establishments", refuse),
    ]


def _protect_spark_uri(spec: Path, out: Path, *extra: str) -> None:
    patches = _python_must_not_read()
    for p in patches:
        p.start()
    try:
        _protect(spec, out, "spark", *extra)
    finally:
        for p in patches:
            p.stop()


def _uri_release_equals_plain(
    plain: Path, uri: Path, root: Path, engine: str = "polars", names=TABLES
) -> None:
    """The plain paths' release on ``engine`` and the URIs' on Spark (Python's readers
    patched to fail) publish the same tables (seed 7)."""
    _protect(plain, root / "plain", engine, "--seed", "7")
    _protect_spark_uri(uri, root / "uri", "--seed", "7")
    _same_tables(root / "plain", root / "uri", names)


def test_spark_reads_file_uris_alone(tmp_path):
    """Spark reads file:// URIs itself and releases the plain paths' tables (seeded).

    A folder of Parquet parts and two Parquet files; Python's readers are patched to
    fail, so a success shows none of them ran. The reference is the Polars engine's release of
    the plain paths (the engines release identical tables for the same seed,
    docs/architecture.md); ``test_spark_uri_equals_spark_plain`` (slow) compares with
    Spark's own plain-path release.
    """
    pytest.importorskip("pyspark")
    plain, uri = _parquet_case(tmp_path)
    _uri_release_equals_plain(plain, uri, tmp_path)
    assert all(f.startswith("file:///") for f in _files(tmp_path / "uri"))


@pytest.mark.slow
def test_spark_reads_csv_file_uris_alone(tmp_path):
    """As :func:`test_spark_reads_file_uris_alone`, for CSV: the header read by Spark."""
    pytest.importorskip("pyspark")
    plain, uri = _csv_case(tmp_path)
    _uri_release_equals_plain(plain, uri, tmp_path)


@pytest.mark.slow
def test_spark_uri_equals_spark_plain(tmp_path):
    pytest.importorskip("pyspark")
    for case in (_parquet_case, _csv_case):
        root = tmp_path / case.__name__
        plain, uri = case(root)
        _uri_release_equals_plain(plain, uri, root, "spark")


@pytest.mark.slow
def test_spark_reads_an_establishment_csv_uri_alone(tmp_path):
    pytest.importorskip("pyspark")
    plain, uri = _csv_case(tmp_path, "estab")
    _uri_release_equals_plain(plain, uri, tmp_path, names=("identity", "county"))


@pytest.mark.parametrize(
    ("uri", "must"),
    [
        ("hdfs://nonexistent:8020/x.parquet", "host is unknown"),
        ("s3a://bucket/x", "org.apache.hadoop:hadoop-aws"),
        ("gs://bucket/x.parquet", "gcs-connector"),
        ("FILE:///nonexistent/worker.csv", "not found"),
    ],
)
def test_spark_names_key_uri_and_remedy_in_one_line(tmp_path, uri, must):
    """An input Spark cannot reach: exit 2, one line naming the key, the URI and why."""
    pytest.importorskip("pyspark")
    spec = write_eree_case(tmp_path)
    spec.write_text(spec.read_text().replace('"data/worker.csv"', f'"{uri}"'))
    out = tmp_path / "out"
    r = run_cli(["protect", str(spec), "--out", str(out), "--seed", "1", "--engine", "spark"])
    assert_clean_failure(r, out, "[data].worker", uri, must)
    assert not out.exists()


@pytest.mark.slow
def test_spark_ledger_fingerprint_of_uri_input_is_the_contents(tmp_path):
    """Spark's fingerprint of URI input equals Polars' of the same files by plain path."""
    pytest.importorskip("pyspark")
    plain, uri = _parquet_case(tmp_path / "case")
    led = tmp_path / "ledger.sqlite"
    r = run_cli(["ledger", "budget", str(led), "fuzz-eree", "--epsilon", "10", "--delta",
                 "0.5", "--alpha", "0.1"])  # fmt: skip
    assert r.exit_code == 0, r.stderr
    _protect(plain, tmp_path / "r1", "polars", "--ledger", str(led))
    _protect_spark_uri(uri, tmp_path / "r2", "--ledger", str(led))
    fp = [json.loads((tmp_path / r / "manifest.json").read_text())["dataset"]["fingerprint"]
          for r in ("r1", "r2")]  # fmt: skip
    assert fp[0] and fp[0] == fp[1]


# ------------------------------------------------- corrupted CSV read by Spark through a URI


def _corrupt_cases():
    from tests.cli.corruptions import FILE_CASES, Corruption

    for kind, file, cols in (("eree3", "worker", "worker_id"), ("estab", "estab", "primary_key")):
        for how in FILE_CASES:
            yield Corruption(kind, "csv", file, cols if how == "missing_column" else "", how,
                             None, "reject")  # fmt: skip


#: file-level faults whose line on Spark names a row on Polars (Spark has no row order)
_ROW_NAMED = {"extra_field", "fewer_fields", "blank_line"}


@pytest.mark.slow
@pytest.mark.parametrize("c", list(_corrupt_cases()), ids=lambda c: c.label)
def test_spark_refuses_corrupt_csv_uris_as_local_files(tmp_path, c):
    """A corrupted CSV given by URI: Spark's one line is the local file's, file = the URI.

    The corruption matrix's file-level faults (tests/cli/corruptions.py); the Polars
    engine's line for the plain path is the reference. Faults Polars names by row are
    reported by Spark without a row (no row order), naming the URI.
    """
    pytest.importorskip("pyspark")
    from tests.cli.corruptions import build

    spec = build(c, tmp_path / "case")
    path = tmp_path / "case" / "data" / f"{c.file}.csv"
    uri = path.as_uri()
    uspec = tmp_path / "case" / "uri.toml"
    uspec.write_text(spec.read_text().replace(f'"data/{c.file}.csv"', f'"{uri}"'))
    lines = {}
    for engine, s in (("polars", spec), ("spark", uspec)):
        out = tmp_path / f"out-{engine}"
        r = run_cli(["protect", str(s), "--out", str(out), "--seed", "1", "--engine", engine])
        o = judge(r, out)
        assert o.clean_error and not o.partial and o.leak is None, (engine, o.text)
        lines[engine] = r.stderr.strip()
    assert lines["spark"].startswith(f"error: file {uri}")
    if c.how in _ROW_NAMED:
        assert "row" not in lines["spark"].split(uri)[1] or "a row has" in lines["spark"]
    else:
        assert lines["spark"] == lines["polars"].replace(str(path), uri)
    shutil.rmtree(tmp_path / "case", ignore_errors=True)
