"""Corrupted input on the Spark engine: the Polars engine's one-line error, never a value.

Spark's own messages quote the offending value (``The value '$500' … cannot be cast``) and
list a header-less file's first row as its "columns"; eree must print exactly what the
Polars engine prints (file, row, column, no value), exit 2, nothing written, no traceback.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tests.cli.inputs import SECRET_WAGE, judge, run_cli, write_eree_case, write_estab_case

pytest.importorskip("pyspark")


def _wage_text(root: Path) -> Path:
    spec = write_estab_case(root)
    f = root / "data" / "estab.csv"
    lines = f.read_text().splitlines()
    lines[1] = lines[1].replace(SECRET_WAGE, "$" + SECRET_WAGE)  # the planted wage, unparseable
    f.write_text("\n".join(lines) + "\n")
    return spec


def _no_header(root: Path) -> Path:
    spec = write_eree_case(root)
    f = root / "data" / "worker.csv"
    f.write_text("\n".join(f.read_text().splitlines()[1:]) + "\n")
    return spec


def _negative(root: Path) -> Path:
    spec = write_estab_case(root, "parquet")
    f = root / "data" / "estab.parquet"
    df = pl.read_parquet(f)
    df.with_columns(pl.when(pl.int_range(pl.len()) == 3).then(-5.0).otherwise(pl.col("m1emp"))
                    .alias("m1emp")).write_parquet(f)  # fmt: skip
    return spec


@pytest.mark.parametrize("case", [_wage_text, _no_header, _negative])
def test_spark_input_errors_are_the_polars_ones(tmp_path, case):
    spec = case(tmp_path)
    lines = {}
    for engine in ("polars", "spark"):
        out = tmp_path / f"rel-{engine}"
        r = run_cli(["protect", str(spec), "--out", str(out), "--seed", "1", "--engine", engine])
        o = judge(r, out)
        assert o.clean_error and not o.traceback and not o.partial, (engine, o.text)
        assert o.leak is None, (engine, o.leak)
        lines[engine] = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert lines["spark"] == lines["polars"]


#: the one line the JVM itself prints when Spark adds its incubator module (not log4j's)
JVM_INCUBATOR = "WARNING: Using incubator modules: jdk.incubator.vector"


def test_spark_start_up_prints_nothing_before_the_error(tmp_path):
    """A fresh process (its own JVM): stderr is the error line, and no line of Spark's."""
    import os
    import subprocess
    import sys

    spec = _no_header(tmp_path)
    out = tmp_path / "rel"
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    r = subprocess.run(
        [sys.executable, "-m", "eree.cli", "protect", str(spec), "--out", str(out),
         "--seed", "1", "--engine", "spark"],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and ln != JVM_INCUBATOR]
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1 and lines[0].startswith("error:"), r.stderr
    assert not out.exists()
