"""Releases of in-memory tables (Polars, pandas, Arrow) through the same path as files."""

from __future__ import annotations

import tempfile
from pathlib import Path

import polars as pl
import pytest

from eree.errors import DataValidationError, SpecError
from eree.mechanisms.noise import SecureNoise, SeededNoise
from eree.release.frames import protect_frames
from eree.release.protect import protect
from eree.release.spec import load_spec
from tests.cli.inputs import eree_frames, estab_frame, write_eree_case, write_estab_case


def _spec_without_paths(spec: Path) -> str:
    lines = spec.read_text().splitlines()
    drop = ("workplace =", "worker =", "job =", "jobs =", "path =")
    return "\n".join(ln for ln in lines if not ln.startswith(drop)) + "\n"


def _tables(out: Path) -> dict[str, pl.DataFrame]:
    return {p.name: pl.read_parquet(p) for p in sorted((out / "tables").glob("*.parquet"))}


@pytest.mark.parametrize("kind", ["polars", "pandas", "arrow"])
def test_frames_release_exactly_what_the_files_release(tmp_path, kind):
    spec = write_eree_case(tmp_path)  # the files, from the same frames
    by_file = protect(load_spec(spec), tmp_path / "files", SeededNoise(5))
    frames = eree_frames()
    if kind == "pandas":
        frames = {k: v.to_pandas() for k, v in frames.items()}
    elif kind == "arrow":
        frames = {k: v.to_arrow() for k, v in frames.items()}
    by_frame = protect_frames(
        _spec_without_paths(spec), frames, tmp_path / "frames", SeededNoise(5)
    )
    assert by_frame.manifest["privacy"] == by_file.manifest["privacy"]
    a, b = _tables(tmp_path / "files"), _tables(tmp_path / "frames")
    assert a.keys() == b.keys() and all(a[k].equals(b[k]) for k in a)


def test_a_gedp_frame_and_the_same_fingerprint_in_a_ledger(tmp_path):
    from eree.privacy.ledger import Ledger

    spec = write_estab_case(tmp_path)
    led = Ledger(tmp_path / "budget.sqlite")
    led.set_budget("fuzz-estab", mu=20)
    protect(load_spec(spec), tmp_path / "r1", SecureNoise(), ledger=led)
    res = protect_frames(
        _spec_without_paths(spec), {"path": estab_frame()}, tmp_path / "r2", SecureNoise(),
        ledger=led,
    )  # fmt: skip
    # the content fingerprint is the files' one: the same dataset version, not "new data"
    assert res.manifest["ledger"]["version"] == 1
    assert res.manifest["ledger"]["lifetime_budget"]["spent_before"]["mu"] > 0


def test_errors_name_the_frame_and_leave_nothing_behind(tmp_path):
    spec = write_eree_case(tmp_path)
    frames = eree_frames()
    frames["worker"] = frames["worker"].with_columns(
        pl.when(pl.int_range(pl.len()) == 2).then(pl.lit("Z")).otherwise(pl.col("sex"))
        .alias("sex")
    )  # fmt: skip
    before = set(Path(tempfile.gettempdir()).glob("eree-frames-*"))
    with pytest.raises(DataValidationError) as e:
        protect_frames(_spec_without_paths(spec), frames, tmp_path / "rel", SeededNoise(1))
    assert e.value.file == "<in-memory worker frame>" and e.value.row == 3
    assert e.value.column == "sex" and "eree-frames-" not in str(e.value)
    assert set(Path(tempfile.gettempdir()).glob("eree-frames-*")) == before
    assert not (tmp_path / "rel").exists()


def test_roles_are_checked(tmp_path):
    spec = write_eree_case(tmp_path)
    with pytest.raises(SpecError, match="not a data role"):
        protect_frames(_spec_without_paths(spec), {"people": eree_frames()["worker"]},
                       tmp_path / "r", SeededNoise(1))  # fmt: skip
    with pytest.raises(SpecError, match="both as a path and as a frame"):
        protect_frames(spec, {"worker": eree_frames()["worker"]}, tmp_path / "r",
                       SeededNoise(1))  # fmt: skip
    with pytest.raises(SpecError, match="Polars, pandas or Arrow"):
        protect_frames(_spec_without_paths(spec), {**eree_frames(), "worker": [1, 2]},
                       tmp_path / "r", SeededNoise(1))  # fmt: skip
