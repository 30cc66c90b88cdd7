"""``eree protect --engine`` and the spec's ``[engine]`` section (docs/design.md#core-objects)."""

from __future__ import annotations

import json

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
