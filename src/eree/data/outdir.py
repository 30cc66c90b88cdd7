"""Output folders: the one convention of every command that writes one (``--out``).

* ``--out`` is always a folder. It must be absent or empty; an existing non-empty folder
  is refused before any work is done, unless ``--force`` is given.
* ``--force`` replaces a folder only if eree wrote it (it holds the :data:`MARKER` file)
  and it does not hold a release recorded in a ledger (a ``manifest.json`` with a
  ``ledger`` entry): a published release is never overwritten. The old folder is moved
  aside and removed only once the new output is complete; on failure it is put back.
* Folders and files are created with the permissions the process umask allows (a
  temporary folder made by :func:`tempfile.mkdtemp` is owner-only; it is widened to the
  umask's folder mode before it is renamed into place). Secrets (the ledger's key,
  ``internal/`` folders of the suppression commands) stay owner-only: their writers set
  their modes explicitly.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from eree.errors import EreeError

#: the hidden file marking a folder as eree's output (what ``--force`` may replace)
MARKER = ".eree-output"


def process_umask() -> int:
    """The process umask (read without changing it for longer than one call)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def folder_mode() -> int:
    """The mode a new folder gets under the process umask (0o755 under umask 022)."""
    return 0o777 & ~process_umask()


def file_mode() -> int:
    """The mode a new file gets under the process umask (0o644 under umask 022)."""
    return 0o666 & ~process_umask()


def _holds_ledger_release(out: Path) -> bool:
    """Whether ``out`` holds a release recorded in a ledger (its manifest says so)."""
    manifests = [out / "manifest.json", *out.glob("*/manifest.json")]
    manifests += out.glob("*/*/manifest.json")
    for m in manifests:
        try:
            doc = json.loads(m.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("ledger"):
            return True
    return False


def check_out(out_dir: str | Path, *, force: bool = False) -> Path:
    """Refuse an output folder a command must not write to, before anything is done.

    The path must be absent or an empty folder; a file, a device such as ``/dev/null``,
    a symbolic link (dangling or not) or a non-empty folder is refused. With ``force``,
    a non-empty folder is accepted when eree wrote it (it holds :data:`MARKER`) and it
    holds no release recorded in a ledger.

    Raises:
        EreeError: one line naming the path and what is wrong with it.
    """
    out = Path(out_dir)
    if out.is_symlink():
        raise EreeError(f"output path {out} is a symbolic link; choose a new directory")
    if out.exists():
        if not out.is_dir():
            raise EreeError(f"output path {out} exists and is not a directory; choose a new one")
        if any(out.iterdir()):
            if not force:
                raise EreeError(
                    f"output directory {out} exists and is not empty; choose a new one "
                    "(or --force to replace an earlier output of eree)"
                )
            if _holds_ledger_release(out):
                raise EreeError(
                    f"output directory {out} holds a release recorded in a ledger; a published "
                    "release is never overwritten (--force does not apply): choose a new directory"
                )
            if not (out / MARKER).is_file():
                raise EreeError(
                    f"output directory {out} was not written by eree (no {MARKER} file); "
                    "--force replaces only eree's own outputs: choose a new directory"
                )
    parent = out.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise EreeError(f"output path {out}: {parent} is not a directory")
    return out


def write_marker(folder: Path, command: str) -> None:
    """Write the :data:`MARKER` file of an output folder (the command and the time)."""
    from eree import __version__

    doc = {
        "written_by": command,
        "eree_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    (folder / MARKER).write_text(json.dumps(doc) + "\n", encoding="utf-8")


def make_temp_folder(out: Path, prefix: str) -> Path:
    """A fresh temporary sibling of ``out`` with the umask's folder mode."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=out.parent))
    os.chmod(tmp, folder_mode())
    return tmp


def _aside(out: Path) -> Path | None:
    """Move a non-empty ``out`` to a hidden sibling (returned); remove an empty one."""
    if not out.exists():
        return None
    if not any(out.iterdir()):
        out.rmdir()
        return None
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.replaced-", dir=out.parent))
    os.replace(out, old / out.name)
    return old


def put_in_place(tmp: Path, out: Path) -> None:
    """Rename the finished folder ``tmp`` to ``out``, replacing what was there.

    ``out`` must have passed :func:`check_out`; an earlier output there (``--force``)
    is moved aside first and removed only after the rename succeeded.
    """
    old = _aside(out)
    try:
        os.replace(tmp, out)
    except BaseException:
        if old is not None:
            os.replace(old / out.name, out)
            shutil.rmtree(old, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


@contextmanager
def output_folder(out_dir: str | Path, command: str, *, force: bool = False) -> Iterator[Path]:
    """Write a command's output folder: staged in a temporary sibling, then put in place.

    Yields the temporary folder to write into (umask's mode; :data:`MARKER` is added
    when the block finishes).
    When the block finishes, it replaces ``out_dir`` (see :func:`put_in_place`); when
    it raises, the temporary folder is removed and nothing is written. A command that
    keeps partial work on Ctrl-C catches :class:`KeyboardInterrupt` inside the block,
    writes what it finished (with a note) and re-raises after it.

    Args:
        command: the command's name, recorded in the marker (``"eree evaluate …"``).
        force: replace an earlier output of eree (see :func:`check_out`).
    """
    out = check_out(out_dir, force=force)
    tmp = make_temp_folder(out, f".{out.name}.partial-")
    try:
        yield tmp
        write_marker(tmp, command)
        check_out(out, force=force)  # nothing took the place meanwhile
        put_in_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextmanager
def folder_in_place(out_dir: str | Path, command: str, *, force: bool = False) -> Iterator[Path]:
    """Write a command's output folder in place (for writers that print their own paths).

    Like :func:`output_folder`, but the block writes into ``out_dir`` itself: an earlier
    output there (``force``) is moved aside first, removed when the block finishes and
    put back when it raises (the new, partial folder is then removed).
    """
    out = check_out(out_dir, force=force)
    existed = out.is_dir()
    old = _aside(out)
    out.mkdir(parents=True)
    try:
        yield out
        write_marker(out, command)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        if old is not None:
            os.replace(old / out.name, out)
            shutil.rmtree(old, ignore_errors=True)
        elif existed:
            out.mkdir()
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def relocate(paths: dict[str, Path], tmp: Path, out: Path) -> dict[str, Path]:
    """Paths written under ``tmp`` as they are once the folder is ``out``."""
    return {k: out / Path(p).relative_to(tmp) for k, p in paths.items()}
