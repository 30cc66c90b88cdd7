"""The corrupted-input matrix and the fuzz suite on both engines: the same one-line errors.

See docs/design.md#validation ("Both engines give the same errors"). Every case of
:mod:`tests.cli.corruptions` (each column of each file broken in each way, a planted
secret in every bad value) and of the random fuzz of :mod:`tests.cli.test_fuzz`
(malformed inputs, specs and command lines) runs through ``eree protect SPEC --out DIR
--seed 1`` on the Polars engine and with ``--engine spark``, in this process (one Spark
session for all). Each run must be clean (a refusal: exit 2, one line naming the file and
column, nothing written; or a success where the rules allow one), never a traceback, a
wrongly accepted input or a leak, and Spark's line must be Polars' line.

The default suite runs a representative subset (every 16th matrix case and the issue's
named cases, :data:`tests.cli.corruptions.NAMED`; 8 fuzz cases); ``-m slow`` runs the rest. ``python
benchmarks/corrupted_inputs.py`` prints the counts per engine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.corruptions import Corruption, corruptions, fuzz_pair, run_corruption, subset
from tests.cli.test_fuzz import build_bases

pytest.importorskip("pyspark")

CASES = corruptions()
DEFAULT = subset(CASES, 16)
FUZZ_SEED = 101  # other seeds than the Polars fuzz chunks'


def _both(c: Corruption, tmp: Path) -> None:
    polars = run_corruption(c, tmp / "p", "polars")
    spark = run_corruption(c, tmp / "s", "spark")
    assert polars.verdict == "clean", (c.label, polars)
    assert spark.verdict == "clean", (c.label, spark)
    assert spark.line == polars.line, (c.label, polars.line, spark.line)


@pytest.mark.parametrize("case", DEFAULT, ids=lambda c: c.label)
def test_corrupted_input_on_both_engines(tmp_path: Path, case: Corruption) -> None:
    _both(case, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if c not in DEFAULT], ids=lambda c: c.label)
def test_corrupted_input_on_both_engines_everywhere(tmp_path: Path, case: Corruption) -> None:
    _both(case, tmp_path)


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bases(tmp_path_factory.mktemp("fuzz-bases"))


def _fuzz(bases: Path, tmp: Path, seed: int, i: int) -> None:
    judged = fuzz_pair(bases, tmp, seed, i)
    assert judged["polars"].verdict == "clean", judged
    assert judged["spark"].verdict == "clean", judged


@pytest.mark.parametrize("i", range(8))
def test_fuzz_case_on_both_engines(bases: Path, tmp_path: Path, i: int) -> None:
    _fuzz(bases, tmp_path, FUZZ_SEED, i)


@pytest.mark.slow
@pytest.mark.parametrize("i", range(8, 300))
def test_fuzz_case_on_both_engines_more(bases: Path, tmp_path: Path, i: int) -> None:
    _fuzz(bases, tmp_path, FUZZ_SEED, i)
