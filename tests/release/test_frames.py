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


def test_a_frame_of_mixed_types_is_named_without_its_value(tmp_path):
    """A pandas column Arrow cannot convert: the frame, row and column, never the cell."""
    spec = write_estab_case(tmp_path)
    pdf = estab_frame().to_pandas()
    pdf["wage"] = pdf["wage"].astype(object)
    pdf.loc[3, "wage"] = "987654.321x"
    with pytest.raises(DataValidationError) as e:
        protect_frames(_spec_without_paths(spec), {"path": pdf}, tmp_path / "r", SeededNoise(1))
    message = str(e.value)
    assert "987654" not in message and "\n" not in message, message
    assert e.value.file == "<in-memory establishment frame>"
    assert (e.value.row, e.value.column) == (4, "wage")
    assert not (tmp_path / "r").exists()


_KILLED = """
import sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
import eree.release.frames as frames
from eree.mechanisms.noise import SeededNoise
from tests.cli.inputs import estab_frame

def stop(*args, **kwargs):
    print("inside", flush=True)
    time.sleep(600)

frames.protect = stop  # the release is under way: the frame has been handed over
frames.protect_frames({spec!r}, {{"path": estab_frame()}}, {out!r}, SeededNoise(1))
"""


def _holds_the_frame(path: Path) -> bool:
    from tests.cli.inputs import SECRET_PREFIX, SECRET_WAGE_BYTES

    try:
        raw = path.read_bytes()
    except OSError:
        return False
    if SECRET_WAGE_BYTES in raw or SECRET_PREFIX.encode() in raw:
        return True
    try:
        frame = pl.read_parquet(path)
    except Exception:  # not a Parquet file
        return False
    return "wage" in frame.columns and 987654.321 in frame["wage"].to_list()


def test_a_kill_9_during_a_frame_release_leaves_no_confidential_byte(tmp_path):
    """SIGKILL while the release runs: no file under $TMPDIR holds the frame, then or later."""
    import os
    import signal
    import subprocess
    import sys

    spec = write_estab_case(tmp_path / "case")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    script = _KILLED.format(
        root=str(Path(__file__).resolve().parents[2]),
        spec=_spec_without_paths(spec),
        out=str(tmp_path / "rel"),
    )
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    proc = subprocess.Popen(
        [sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "inside"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    left = [p for p in tmpdir.rglob("*") if _holds_the_frame(p)]
    assert left == [], left
    assert not (tmp_path / "rel").exists()
