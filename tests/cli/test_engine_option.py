"""``eree protect --engine``, the spec's ``[engine]`` section and the Spark engine's own
``[spark]`` (docs/design.md#core-objects)."""

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
    """Spark's own redaction rule: a key naming a secret, password, token or access key.

    The spec is Spark's; ``--engine polars`` sets its ``[spark]`` settings aside, saying so.
    """
    spec = write_eree_case(tmp_path)
    spec.write_text(
        spec.read_text() + '\n[engine]\nkind = "spark"\n[spark.conf]\n'
        '"spark.hadoop.fs.s3a.secret.key" = "Zq8sEcReT"\n"spark.executor.memory" = "2g"\n'
    )
    out = tmp_path / "rel"
    res = run_cli(["protect", str(spec), "--out", str(out), "--seed", "3", "--engine", "polars"])
    assert res.exit_code == 0, res.output
    assert "note: --engine polars: the spec's Spark settings ([spark.conf]) are not used" in (
        " ".join(res.stderr.split())
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["spec"]["spark"]["conf"] == {
        "spark.hadoop.fs.s3a.secret.key": "withheld", "spark.executor.memory": "2g"
    }  # fmt: skip
    assert manifest["engine"]["kind"] == "polars"
    for f in out.rglob("*"):
        assert not f.is_file() or b"Zq8sEcReT" not in f.read_bytes(), f


#: the Spark settings that were in [engine] before they had a section of their own
MOVED = {
    '[engine]\nkind = "spark"\nmaster = "local[2]"\n': "[engine] master moved to [spark] master",
    "[engine]\ncores = 2\n": "[engine] cores moved to [spark] cores",
    '[engine]\ndriver_memory = "4g"\n': "[engine] driver_memory moved to [spark] driver_memory",
    '[engine.conf]\n"spark.executor.memory" = "2g"\n': "[engine.conf] moved to [spark.conf]",
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_the_old_engine_keys_are_refused_naming_where_they_moved(tmp_path, old) -> None:
    spec = write_eree_case(tmp_path)
    spec.write_text(spec.read_text() + "\n" + old)
    out = tmp_path / "rel"
    assert_clean_failure(run_cli(["protect", str(spec), "--out", str(out)]), out, MOVED[old])
    assert_clean_failure(run_cli(["validate", str(spec), "--no-data"]), None, MOVED[old])


SPARK_SETTINGS = {
    'master = "local[2]"': "[spark] master",
    "cores = 3": "[spark] cores",
    'driver_memory = "2g"': "[spark] driver_memory",
    'conf = { "spark.executor.memory" = "2g" }': "[spark.conf]",
}


@pytest.mark.parametrize("kind", ['[engine]\nkind = "polars"\n', ""])
@pytest.mark.parametrize("setting", sorted(SPARK_SETTINGS))
def test_spark_settings_for_the_polars_engine_are_refused(tmp_path, kind, setting) -> None:
    """A setting that would do nothing is refused, not ignored: the Polars engine reads the
    data in this process, wherever [spark] says the release should run."""
    spec = write_eree_case(tmp_path)
    spec.write_text(spec.read_text() + f"\n{kind}[spark]\n{setting}\n")
    must = (
        f"{SPARK_SETTINGS[setting]} is a Spark setting, and the engine is 'polars'",
        'set [engine] kind = "spark" (or run with --engine spark)',
    )
    out = tmp_path / "rel"
    assert_clean_failure(run_cli(["protect", str(spec), "--out", str(out), "--seed", "3"]), out,
                         *must)  # fmt: skip
    assert_clean_failure(run_cli(["validate", str(spec), "--no-data"]), None, *must)


def test_the_command_line_spark_options_for_the_polars_engine_are_refused(tmp_path) -> None:
    spec = write_eree_case(tmp_path)
    out = tmp_path / "rel"
    for extra, where in ((["--master", "local[2]"], "--master"),
                         (["--conf", "spark.executor.memory=2g"], "--conf")):  # fmt: skip
        res = run_cli(["protect", str(spec), "--out", str(out), "--seed", "3", *extra])
        assert_clean_failure(res, out, f"{where} is a Spark setting, and the engine is 'polars'")


def test_engine_spark_on_the_command_line_takes_the_spark_settings(tmp_path, monkeypatch) -> None:
    """``--engine spark`` makes a Polars spec's [spark] settings apply: the run gets past the
    settings check to Spark itself (here refused at once: Spark Connect is not supported)."""
    pytest.importorskip("pyspark")
    monkeypatch.setenv("SPARK_REMOTE", "sc://127.0.0.1:15002")
    spec = write_eree_case(tmp_path)
    spec.write_text(spec.read_text() + '\n[engine]\nkind = "polars"\n[spark]\ncores = 3\n')
    out = tmp_path / "rel"
    res = run_cli(["protect", str(spec), "--out", str(out), "--seed", "3", "--engine", "spark"])
    assert_clean_failure(res, out, "Spark Connect (SPARK_REMOTE) is not supported")
    res = run_cli(["protect", str(spec), "--out", str(out), "--seed", "3"])
    assert_clean_failure(res, out, "[spark] cores is a Spark setting")
