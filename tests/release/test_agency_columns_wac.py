"""A LODES WAC file from the agency's own columns and codes (``[output] columns, codes``).

The small census-coded job tables of the agency-format tests, renamed as an agency might
keep them — the block in ``geo``, ages as ``young``/``mid``/``old`` in ``agegrp``, sex as
``1``/``2`` in ``gender``, the sector in ``ind`` — are released with ``[output.columns]``
and ``[output.codes]`` mapping them to the layout. Expected: the file passes ``eree
check-format`` and is, cell for cell, the file of the same data under eree's names and
codes released with the same seed (the mapping changes names, never numbers). A mapping
that leaves a declared code outside the layout's is refused before any data are read.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from eree.cli import app
from tests.release.layout_reader import read_lodes_wac
from tests.release.test_agency_formats import _census_block_frames, _check, _preset

runner = CliRunner()
AGES = {"young": "A01", "mid": "A02", "old": "A03"}
SEXES = {"1": "M", "2": "F"}
OWN = """
[output.columns]
block = "geo"
age = "agegrp"
sex = "gender"
naics_sector = "ind"

[output.codes]
age = { young = "A01", mid = "A02", old = "A03" }
sex = { "1" = "M", "2" = "F" }
"""
DATA = """
workplace_attributes = ["geo", "ind"]
worker_attributes = ["agegrp", "gender", "race", "ethnicity", "education", "earnings"]

[data.domains]
agegrp = ["young", "mid", "old"]
gender = ["1", "2"]
race = ["A1", "A2", "A3", "A4", "A5", "A7"]
ethnicity = ["A1", "A2"]
education = ["E1", "E2", "E3", "E4"]
earnings = ["E01", "E02", "E03"]
"""


def _own_spec(spec: str) -> str:
    spec = spec.replace('job = "job.parquet"\n', 'job = "job.parquet"\n' + DATA, 1)
    for a, b in (('"block"', '"geo"'), ('"age"', '"agegrp"'), ('"sex"', '"gender"'),
                 ('"naics_sector"', '"ind"')):  # fmt: skip
        spec = spec.replace(f"by = [{a}", f"by = [{b}").replace(f", {a}", f", {b}")
    return spec + OWN


def _release(root: Path, spec: str) -> Path:
    (root / "spec.toml").write_text(spec)
    r = runner.invoke(app, ["protect", str(root / "spec.toml"), "--out", str(root / "rel"),
                            "--seed", "7"])  # fmt: skip
    assert r.exit_code == 0, r.output
    return root / "rel" / "agency" / "pa_wac_S000_JT00_2016.NOT-FOR-PUBLICATION.csv.gz"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    eree = tmp_path_factory.mktemp("eree_names")
    frames = _census_block_frames(eree)
    own = tmp_path_factory.mktemp("own_names")
    wp = frames["workplace"].rename({"block": "geo", "naics_sector": "ind"})
    wk = (
        frames["worker"]
        .rename({"age": "agegrp", "sex": "gender"})
        .with_columns(
            pl.col("agegrp").replace({v: k for k, v in AGES.items()}),
            pl.col("gender").replace({v: k for k, v in SEXES.items()}),
        )
    )
    wp.write_parquet(own / "workplace.parquet")
    wk.write_parquet(own / "worker.parquet")
    frames["job"].write_parquet(own / "job.parquet")
    spec = _preset("lodes-wac", "2016")
    return {"eree": _release(eree, spec), "own": _release(own, _own_spec(spec)),
            "own_root": own}  # fmt: skip


def test_own_columns_write_the_same_wac_file_that_passes(files: dict[str, Path]) -> None:
    r = _check(files["own"], "lodes-wac")
    assert r.exit_code == 0, r.output
    own, eree = read_lodes_wac(files["own"]), read_lodes_wac(files["eree"])
    assert own == eree
    assert sum(row["C000"] for row in own) > 0  # type: ignore[misc]
    moe = files["own"].with_name("pa_wac_S000_JT00_2016_moe.NOT-FOR-PUBLICATION.csv.gz")
    assert _check(moe, "lodes-wac", "--moe").exit_code == 0


@pytest.mark.parametrize(
    ("change", "words"),
    [
        # a declared age code the mapping leaves out is not a LODES age
        (lambda s: s.replace(', old = "A03" }', " }"), "the declared codes of 'agegrp'"),
        (lambda s: s.replace('age = "agegrp"', 'years = "agegrp"'), "'years' is not a LODES WAC"),
        (lambda s: s.replace("sex = {", "w_geocode = {"), "'w_geocode' has no codes to map"),
        (lambda s: s.replace('block = "geo"\n', ""), 'by = ["block"]'),
        (
            lambda s: s.replace('job_type = "JT00"\n', 'job_type = "JT00"\nlevels = [70]\n'),
            "[output].levels applies only with a QCEW format",
        ),
    ],
)
def test_a_wrong_mapping_is_refused_before_any_data(
    files: dict[str, Path], tmp_path: Path, change, words: str
) -> None:
    spec = change(_own_spec(_preset("lodes-wac", "2016")))
    (tmp_path / "spec.toml").write_text(spec)
    # no data next to the spec: a refusal names the spec key, not a missing file
    r = runner.invoke(app, ["protect", str(tmp_path / "spec.toml"), "--out",
                            str(tmp_path / "rel"), "--seed", "1"])  # fmt: skip
    assert r.exit_code == 2, r.output
    assert words in r.output and "Traceback" not in r.output, r.output
    assert not (tmp_path / "rel").exists()


def test_a_workplace_code_outside_the_layout_is_refused_by_column(
    files: dict[str, Path], tmp_path: Path
) -> None:
    own = files["own_root"]
    wp = pl.read_parquet(own / "workplace.parquet").with_columns(pl.lit("99").alias("ind"))
    for name in ("worker", "job"):
        (tmp_path / f"{name}.parquet").write_bytes((own / f"{name}.parquet").read_bytes())
    wp.write_parquet(tmp_path / "workplace.parquet")
    (tmp_path / "spec.toml").write_text(_own_spec(_preset("lodes-wac", "2016")))
    r = runner.invoke(app, ["protect", str(tmp_path / "spec.toml"), "--out",
                            str(tmp_path / "rel"), "--seed", "1"])  # fmt: skip
    assert r.exit_code == 2, r.output
    assert "column 'ind'" in r.output and "LODES naics_sector codes" in r.output, r.output
    # the value is not echoed (the temporary folder's name may hold "99" itself: pytest-699)
    assert "99" not in r.output.replace(str(tmp_path), "").replace("workplace.parquet", "")
