"""``--force`` replaces only an output eree wrote, unchanged, and never hides the old one.

Each case is run as a user runs it (``eree synth lodes --force`` in a subprocess): the
folder must be left exactly as it was — the user's files, a ledger, a release recorded in
a ledger further down — and the message names what stopped it (a file name, never data).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eree.data.outdir import MARKER, put_in_place


def synth(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "eree.cli", "synth", "lodes", "--out", str(out), "--jobs", "600",
         "--seed", "3", *extra],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else b"<dir>")
        for p in sorted(folder.rglob("*"))
        if not p.is_symlink()
    }


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("force") / "out"
    assert synth(out).returncode == 0
    return out


def fresh(made: Path, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    subprocess.run(["cp", "-a", str(made), str(out)], check=True)
    return out


def _ledger_release_manifest() -> str:
    return json.dumps({"ledger": {"id": 3, "chain_hash": "ab" * 32}})


CASES = {
    "a user's file": lambda o: (o / "analysis.R").write_text("summary(x)\n"),
    "a private key": lambda o: (
        (o / ".ssh").mkdir(),
        (o / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n"),
    ),
    "a ledger kept inside": lambda o: (
        (o / "budget.sqlite").write_bytes(b"SQLite format 3\x00" + bytes(100)),
        (o / "budget.sqlite.key").write_text("00" * 32),
    ),
    "a recorded release three levels down": lambda o: (
        (o / "a" / "b" / "c").mkdir(parents=True),
        (o / "a" / "b" / "c" / "manifest.json").write_text(_ledger_release_manifest()),
    ),
    "a file eree wrote, renamed": lambda o: (o / "job.parquet").rename(o / "job.old"),
    "a file eree wrote, edited": lambda o: (o / "job.parquet").write_bytes(b"edited"),
    "a forged marker": lambda o: (
        (o / MARKER).write_text(""),
        (o / "analysis.R").write_text("x\n"),
    ),
    "a marker that is a link": lambda o: (
        (o / MARKER).rename(o / "m.json"),
        (o / MARKER).symlink_to(o / "m.json"),
    ),
    "a link to elsewhere": lambda o: (o / "home").symlink_to(Path.home()),
    "a marker forged to list a private key": lambda o: _forge(o, "id_ed25519", None),
    "a marker signed with another key": lambda o: _forge(o, "id_ed25519", b"x" * 32),
}


def _forge(out: Path, name: str, key: bytes | None) -> None:
    """A user's private key in the folder, and a marker listing everything there as eree
    would (sizes, times, and content HMACs under ``key``, or none), signed with ``key``."""
    import hashlib
    import hmac

    (out / name).write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    files = {
        p.relative_to(out).as_posix(): p for p in out.rglob("*") if p.is_file() and p.name != MARKER
    }

    def mac(data: bytes) -> str | None:
        return None if key is None else hmac.new(key, data, hashlib.sha256).hexdigest()

    doc: dict = {
        "written_by": "eree synth lodes",
        "eree_version": "0",
        "created": "2026-01-01T00:00:00+00:00",
        "files": {
            rel: {
                "bytes": p.stat().st_size,
                "mtime_ns": p.stat().st_mtime_ns,
                "mac": mac(p.read_bytes()),
            }
            for rel, p in sorted(files.items())
        },
    }
    body = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    doc["mac"] = mac(body) or "00" * 32
    (out / MARKER).write_text(json.dumps(doc))


@pytest.mark.parametrize("case", sorted(CASES))
def test_force_refuses_and_touches_nothing(made, tmp_path, case):
    out = fresh(made, tmp_path)
    CASES[case](out)
    before = snapshot(out)
    r = synth(out, "--force")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), r.stderr
    assert "Traceback" not in r.stderr
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # nothing left beside it


def test_force_replaces_an_untouched_output_and_leaves_nothing_hidden(made, tmp_path):
    out = fresh(made, tmp_path)
    old = (out / "job.parquet").read_bytes()
    r = synth(out, "--force", "--scale", "1.0")
    assert r.returncode == 0, r.stderr
    listed = json.loads((out / MARKER).read_text())["files"]
    assert set(listed) == {p.relative_to(out).as_posix() for p in out.rglob("*")
                           if p.is_file() and p.name != MARKER}  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert (out / "job.parquet").read_bytes() == old  # same seed, same data, replaced


def test_an_old_output_a_killed_force_left_aside_is_put_back(made, tmp_path):
    """The fallback path (no atomic exchange): the old output is moved aside, and a kill
    before the new one is in place must not leave it hidden: the next command restores it."""
    out = fresh(made, tmp_path)
    before = snapshot(out)
    aside = tmp_path / ".out.replaced-abc123"
    aside.mkdir()
    os.replace(out, aside / "out")  # what a kill right after moving it aside leaves
    r = synth(out)  # without --force: the folder is back, so it is refused as non-empty
    assert r.returncode == 2 and "not empty" in r.stderr
    assert snapshot(out) == before and not aside.exists()


def test_put_in_place_swaps_atomically(tmp_path):
    old, new = tmp_path / "out", tmp_path / "new"
    old.mkdir()
    (old / "a").write_text("old")
    new.mkdir()
    (new / "a").write_text("new")
    put_in_place(new, old)
    assert (old / "a").read_text() == "new" and not new.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize("name", ["nosuch/..", ".", "nosuch/../.."])
def test_an_output_path_that_names_no_folder_of_its_own_creates_nothing(tmp_path, name):
    r = subprocess.run(
        [sys.executable, "-m", "eree.cli", "synth", "lodes", "--out", name, "--jobs", "300"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 2 and "does not name a folder of its own" in r.stderr, r.stderr
    assert list(tmp_path.iterdir()) == []  # no nosuch/ left behind


LONG = "x" * 300  # over every common file system's 255-byte limit on one name


@pytest.mark.parametrize(
    "args",
    [
        ["synth", "lodes", "--out", LONG, "--jobs", "300"],
        ["ledger", "show", f"{LONG}.sqlite"],
        ["ledger", "verify", f"{LONG}.sqlite"],
        ["ledger", "budget", f"{LONG}.sqlite", "pa", "--epsilon", "1"],
    ],
    ids=["out", "ledger-show", "ledger-verify", "ledger-budget"],
)
def test_a_name_over_the_file_system_limit_is_one_line(tmp_path, args):
    r = subprocess.run([sys.executable, "-m", "eree.cli", *args], capture_output=True,
                       text=True, cwd=tmp_path)  # fmt: skip
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), r.stderr
    assert "File name too long" in lines[0] and "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == []
