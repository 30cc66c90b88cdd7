"""The release path holds loaded data as an opaque handle (src/eree/engine/base.py).

Every question about the data is an engine method, so a feature works on every engine or
on none. Checked through ``eree protect``:

* the two features that read the loaded data with Polars calls and crashed on Spark —
  ``[postprocess] consistent = true`` and a ``noise_infusion`` query — give the same
  tables on Spark as on Polars, byte for byte;
* noise infusion's establishments are numbered by id, not by file row: the same data with
  the workplace file's rows in another order give the same seeded table;
* an engine handed another engine's data refuses it; the engines' public-frame answers
  (``workplace_counts``, the establishment index) are the same frames.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from eree.data.job_tables import load_job_tables
from eree.engine.polars.engine import PolarsEngine
from eree.release.spec import load_spec
from tests.cli.inputs import eree_frames, run_cli, write_eree_case, write_frame

NOISE_INFUSION = """
[[query]]
name = "tract_infused"
by = ["tract"]
mechanism = "noise_infusion"
"""

CONSISTENT = """
[[query]]
name = "tract"
by = ["county", "tract"]
mechanism = "smooth_laplace"
epsilon = 1.0

[postprocess]
consistent = true
nonnegative = true
integer = true
"""


def _case(root: Path, extra: str, *, definition: str | None = None) -> Path:
    spec = write_eree_case(root)
    text = spec.read_text()
    if definition is not None:  # noise infusion runs under no formal definition
        text = text.replace('definition = "eree-weak"\nalpha = 0.1', f'definition = "{definition}"')
        text = text.split("[[query]]")[0]
    spec.write_text(text + extra)
    return spec


def _protect(spec: Path, out: Path, engine: str, seed: int = 5) -> dict[str, pl.DataFrame]:
    res = run_cli(
        ["protect", str(spec), "--out", str(out), "--seed", str(seed), "--engine", engine]
    )
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["engine"]["kind"] == engine
    return {p.stem: pl.read_parquet(p) for p in sorted((out / "tables").glob("*.parquet"))}


def _csv_bytes(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "tables").glob("*.csv"))}


@pytest.mark.parametrize(
    ("extra", "definition"),
    [(CONSISTENT, None), (NOISE_INFUSION, "none")],
    ids=["consistent", "noise_infusion"],
)
def test_features_that_read_the_data_give_the_same_tables_on_spark(
    tmp_path, extra, definition
) -> None:
    pytest.importorskip("pyspark")
    spec = _case(tmp_path, extra, definition=definition)
    polars = _protect(spec, tmp_path / "polars", "polars")
    spark = _protect(spec, tmp_path / "spark", "spark")
    assert polars.keys() == spark.keys() and polars
    for name in polars:
        assert_frame_equal(polars[name], spark[name])
    assert _csv_bytes(tmp_path / "polars") == _csv_bytes(tmp_path / "spark")
    if extra is CONSISTENT:  # the feature did its work, on both engines
        for engine in ("polars", "spark"):
            manifest = json.loads((tmp_path / engine / "manifest.json").read_text())
            assert manifest["postprocess"]["consistent"] is True
            assert all(float(v).is_integer() and v >= 0 for v in spark["tract"]["jobs"])


def test_noise_infusion_numbers_establishments_by_id_not_by_file_row(tmp_path) -> None:
    """The distortion factor of an establishment does not depend on where its row lies."""
    spec = _case(tmp_path / "a", NOISE_INFUSION, definition="none")
    a = _protect(spec, tmp_path / "a" / "out", "polars")
    frames = eree_frames()
    write_frame(frames["workplace"].reverse(), tmp_path / "a" / "data" / "workplace.csv")
    b = _protect(spec, tmp_path / "a" / "out2", "polars")
    assert_frame_equal(a["tract_infused"], b["tract_infused"])
    # and the draw is per establishment: another seed gives another table (not vacuous)
    c = _protect(spec, tmp_path / "a" / "out3", "polars", seed=6)
    assert not a["tract_infused"].equals(c["tract_infused"])


def test_an_engine_refuses_another_engines_data(tmp_path) -> None:
    pytest.importorskip("pyspark")
    from eree.engine.spark.data import SparkJobTables
    from eree.engine.spark.engine import SparkEngine

    spec = write_eree_case(tmp_path)
    plan = load_spec(spec)
    data = load_job_tables(plan.data)  # type: ignore[arg-type]
    spark = SparkEngine()
    sdata = spark.to_spark(data)
    assert isinstance(sdata, SparkJobTables)
    with pytest.raises(TypeError, match="Polars engine cannot read SparkJobTables"):
        PolarsEngine().cell_statistics(sdata, ["county"], [])
    with pytest.raises(TypeError, match="Spark engine cannot read"):
        spark.cell_statistics(pl.DataFrame({"a": [1]}), ["county"], [])  # type: ignore[arg-type]


def test_the_public_frame_answers_are_the_same_on_both_engines(tmp_path) -> None:
    pytest.importorskip("pyspark")
    from eree.engine.spark.engine import SparkEngine

    spec = write_eree_case(tmp_path)
    plan = load_spec(spec)
    polars, spark = PolarsEngine(), SparkEngine()
    data = polars.load_job_tables(plan.data)  # type: ignore[arg-type]
    sdata = spark.load_job_tables(plan.data)  # type: ignore[arg-type]
    frame = eree_frames()["workplace"]
    for by in ([], ["county"], ["county", "tract"], ["naics_sector", "county"]):
        p, s = polars.workplace_counts(data, by), spark.workplace_counts(sdata, by)
        assert_frame_equal(p, s)
        # from the mathematics: one row per combination, the counts sum to the workplaces
        assert p.height == (frame.select(by).n_unique() if by else 1)
        assert p["establishments"].sum() == frame.height
    p = polars.establishment_cells(data, ["county"], ["sex"])
    s = spark.establishment_cells(sdata, ["county"], ["sex"])
    assert_frame_equal(p, s)
    ids = sorted(frame["workplace_id"].to_list())
    for wid, idx in zip(p["workplace_id"], p["establishment"], strict=True):
        assert ids[idx] == wid  # the index is the id's rank among all workplaces


@pytest.mark.parametrize(
    "flags",
    ["nonnegative = true", "integer = true", "consistent = true",
     "consistent = true\nnonnegative = true\ninteger = true"],
)  # fmt: skip
def test_a_total_with_publication_grade_tables(tmp_path, flags) -> None:
    """A ``by = []`` query (the total, one cell, no key) beside marginals, post-processed.

    It was a ShapeError (a key frame of no columns has no rows) and, with consistent, a
    join on no keys.
    """
    spec = write_eree_case(tmp_path)
    spec.write_text(
        spec.read_text()
        + '\n[[query]]\nname = "total"\nby = []\nmechanism = "smooth_laplace"\nepsilon = 1.0\n'
        + f"\n[postprocess]\n{flags}\n"
    )
    tables = _protect(spec, tmp_path / "out", "polars")
    total = tables["total"]["jobs"].to_list()
    assert len(total) == 1
    if "nonnegative" in flags:
        assert total[0] >= 0
    if "integer" in flags:
        assert float(total[0]).is_integer()
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    if "consistent" in flags:  # the total is the root of the tree of marginals
        assert manifest["postprocess"]["consistent"] is True


def test_a_ledger_with_no_guarantee_is_refused_before_the_data_are_read(tmp_path) -> None:
    spec = _case(tmp_path, NOISE_INFUSION, definition="none")
    ledger = tmp_path / "l.sqlite"
    res = run_cli(["ledger", "budget", str(ledger), "fuzz-eree", "--epsilon", "10"])
    assert res.exit_code == 0, res.output
    for f in (tmp_path / "data").iterdir():  # nothing to read: a refusal must not need it
        f.unlink()
    out = tmp_path / "out"
    res = run_cli(["protect", str(spec), "--out", str(out), "--ledger", str(ledger)])
    assert res.exit_code == 2
    assert "carries no formal guarantee the ledger can account for" in res.output
    assert "not found" not in res.output and not out.exists()
