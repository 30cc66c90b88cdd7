"""``eree protect --engine`` and the spec's ``[engine]`` section (docs/design.md#core-objects)."""

from __future__ import annotations

import json

import pytest

from tests.cli.inputs import assert_clean_failure, run_cli, write_eree_case


def test_engine_option_polars_runs_and_unknown_engine_is_refused(tmp_path) -> None:
    spec = write_eree_case(tmp_path)
    out = tmp_path / "rel"
    res = run_cli(["protect", str(spec), "--out", str(out), "--seed", "3", "--engine", "polars"])
    assert res.exit_code == 0, res.output
    assert json.loads((out / "manifest.json").read_text())["queries"]
    bad = tmp_path / "rel2"
    res = run_cli(["protect", str(spec), "--out", str(bad), "--seed", "3", "--engine", "dask"])
    assert_clean_failure(res, bad, "polars, spark")


def test_unknown_engine_in_the_spec_is_refused(tmp_path) -> None:
    spec = write_eree_case(tmp_path)
    spec.write_text(spec.read_text() + '\n[engine]\nkind = "dask"\n')
    out = tmp_path / "rel"
    res = run_cli(["protect", str(spec), "--out", str(out), "--seed", "3"])
    assert_clean_failure(res, out, "[engine].kind")


def test_spark_options_on_the_command_line_are_checked_as_the_spec_is(tmp_path) -> None:
    spec = write_eree_case(tmp_path)
    base = ["protect", str(spec), "--seed", "3", "--engine", "spark"]
    for i, (extra, must) in enumerate([
        (["--master", "spark:/host:7077"], "--master must be a Spark master URL"),
        (["--conf", "spark.executor.memory"], "--conf spark.executor.memory: give"),
        (["--conf", "spark.executor.memory=lots"], '--conf "spark.executor.memory" must be a size'),
        (["--conf", "executor.cores=2"], '--conf "executor.cores": not a Spark setting'),
        (["--conf", "spark.master=yarn"], "--master"),
    ]):  # fmt: skip
        out = tmp_path / f"o{i}"
        assert_clean_failure(run_cli([*base, "--out", str(out), *extra]), out, must)


def test_spark_connect_is_refused_in_one_line(tmp_path, monkeypatch) -> None:
    pytest.importorskip("pyspark")
    monkeypatch.setenv("SPARK_REMOTE", "sc://127.0.0.1:15002")
    spec = write_eree_case(tmp_path)
    out = tmp_path / "rel"
    res = run_cli(["protect", str(spec), "--out", str(out), "--seed", "3", "--engine", "spark"])
    assert_clean_failure(res, out, "Spark Connect (SPARK_REMOTE) is not supported", "--master")


def test_secret_spark_settings_are_withheld_from_the_manifest(tmp_path) -> None:
    """Spark's own redaction rule: a key naming a secret, password, token or access key."""
    spec = write_eree_case(tmp_path)
    spec.write_text(
        spec.read_text() + '\n[engine]\nkind = "polars"\n[engine.conf]\n'
        '"spark.hadoop.fs.s3a.secret.key" = "Zq8sEcReT"\n"spark.executor.memory" = "2g"\n'
    )
    out = tmp_path / "rel"
    res = run_cli(["protect", str(spec), "--out", str(out), "--seed", "3"])
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["spec"]["engine"]["conf"] == {
        "spark.hadoop.fs.s3a.secret.key": "withheld", "spark.executor.memory": "2g"
    }  # fmt: skip
    assert manifest["engine"]["kind"] == "polars"
    for f in out.rglob("*"):
        assert not f.is_file() or b"Zq8sEcReT" not in f.read_bytes(), f
