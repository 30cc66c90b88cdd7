"""Output folders: the one convention of every command that writes one (``--out``).

* ``--out`` is always a folder. It must be absent or empty; an existing non-empty folder
  is refused before any work is done, unless ``--force`` is given.
* ``--force`` replaces a folder only if eree can prove it wrote all of it: its
  :data:`MARKER` file (a regular file, not a link) lists every file eree wrote there with
  its size and an HMAC-SHA256 of its content, and is itself authenticated by an
  HMAC-SHA256 over that list, both under the user's output key (:func:`output_key`:
  ``~/.config/eree/output.key``, mode 0600, or the file named by ``EREE_OUTPUT_KEY``).
  A marker written by hand, or by another account, cannot carry a valid HMAC, so it is
  refused; so is a folder holding anything else — nothing added (a user's notes, a key, a
  ledger, another release further down), renamed, edited or linked. And it must not
  hold a release recorded in a ledger (a ``manifest.json`` with a ``ledger`` entry): a
  published release is never overwritten. The new output is complete before it takes the
  folder's place: the two are exchanged in one atomic step where the system can
  (``renameat2(RENAME_EXCHANGE)`` on Linux); elsewhere the old folder is moved aside first,
  put back on failure, and put back by the next command on that folder if the process was
  killed in between.
* Folders and files are created with the permissions the process umask allows (a
  temporary folder made by :func:`tempfile.mkdtemp` is owner-only; it is widened to the
  umask's folder mode before it is renamed into place). Secrets (the ledger's key,
  ``internal/`` folders of the suppression commands) stay owner-only: their writers set
  their modes explicitly.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from eree.errors import EreeError

#: the hidden file marking a folder as eree's output (what ``--force`` may replace)
MARKER = ".eree-output"
#: the variable naming the output key's file (default: ~/.config/eree/output.key)
KEY_ENV = "EREE_OUTPUT_KEY"


def output_key_path() -> Path:
    """Where the user's output key is kept (``EREE_OUTPUT_KEY``, else the user's config)."""
    named = os.environ.get(KEY_ENV)
    if named:
        return Path(named)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "eree" / "output.key"


def output_key(create: bool) -> bytes | None:
    """The user's secret key that authenticates :data:`MARKER` files, or None.

    Created (32 random bytes, mode 0600, atomically) on first use when ``create``. A key
    that is not a small regular file, or that others can read or write, is not used (a
    marker it signed could be forged): None.
    """
    path = output_key_path()
    if create and not os.path.lexists(path):
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(fd, "wb") as fp:
                    fp.write(secrets.token_bytes(32).hex().encode())
                with contextlib.suppress(FileExistsError):
                    os.link(tmp, path)  # appears complete, or not at all
            finally:
                tmp.unlink(missing_ok=True)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 1024 or st.st_mode & 0o077:
            return None
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return None
        raw = os.read(fd, 1025)
    finally:
        os.close(fd)
    try:
        key = bytes.fromhex(raw.strip().decode("ascii"))
    except ValueError:
        return None
    return key if len(key) >= 16 else None


def _file_mac(key: bytes, path: Path) -> str:
    """HMAC-SHA256 of a file's content under the output key (keyed: never a plain hash)."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    with path.open("rb") as fp:
        for block in iter(lambda: fp.read(1 << 20), b""):
            mac.update(block)
    return mac.hexdigest()


def _marker_mac(key: bytes, doc: dict[str, object]) -> str:
    body = {k: v for k, v in doc.items() if k != "mac"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


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


def _listing(folder: Path) -> tuple[dict[str, Path], list[str]]:
    """The regular files under ``folder`` and the entries that are neither files nor folders.

    Returns the files (relative POSIX path → path; the marker left out) and the odd
    entries (links, devices, FIFOs), sorted.
    """
    files: dict[str, Path] = {}
    odd: list[str] = []
    for root, dirs, names in os.walk(folder):
        for name in dirs + names:
            p = Path(root) / name
            rel = p.relative_to(folder).as_posix()
            if p.is_symlink() or not (p.is_dir() or p.is_file()):
                odd.append(rel)
            elif p.is_file() and rel != MARKER:
                files[rel] = p
        dirs[:] = [d for d in dirs if not (Path(root) / d).is_symlink()]
    return files, sorted(odd)


def _not_eree_only(out: Path) -> str | None:
    """Why ``--force`` may not replace ``out`` (None when eree wrote all of it, unchanged).

    The marker must carry a valid HMAC under this user's output key, and every file it
    lists must have the content HMAC it records: a folder eree cannot prove it wrote is
    never replaced (nor anything in it deleted).
    """
    marker = out / MARKER
    if marker.is_symlink() or not marker.is_file():
        return f"was not written by eree (no {MARKER} file)"
    try:
        if marker.stat().st_size > (64 << 20):
            raise ValueError
        doc = json.loads(marker.read_text(encoding="utf-8"))
        listed = doc.get("files")
    except (OSError, ValueError, AttributeError, RecursionError):
        doc, listed = None, None
    if not isinstance(listed, dict) or not isinstance(doc, dict):
        return f"has a {MARKER} file that lists no files (forged, or written by an older eree)"
    key = output_key(create=False)
    if key is None:
        return (
            f"has a {MARKER} file eree cannot check: no output key of yours at "
            f"{output_key_path()} (or one others can read)"
        )
    if not isinstance(doc.get("mac"), str) or not hmac.compare_digest(
        doc["mac"], _marker_mac(key, doc)
    ):
        return (
            f"has a {MARKER} file eree cannot prove it wrote (written by hand, by another "
            "account or by an older eree)"
        )
    files, odd = _listing(out)
    if odd:
        return f"holds links or special files eree does not write: {', '.join(odd[:3])}"
    extra = sorted(set(files) - set(listed))
    if extra:
        more = f" and {len(extra) - 3} more" if len(extra) > 3 else ""
        return f"holds files eree did not write: {', '.join(extra[:3])}{more}"
    for rel, entry in sorted(listed.items()):
        p = files.get(rel)
        if p is None:
            return f"no longer holds {rel}, which eree wrote (renamed or deleted)"
        st = p.stat()
        if (not isinstance(entry, dict) or st.st_size != entry.get("bytes")
                or not isinstance(entry.get("mac"), str)
                or not hmac.compare_digest(entry["mac"], _file_mac(key, p))):  # fmt: skip
            return f"holds {rel} changed since eree wrote it"
    return None


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
    if out.name in ("", ".", ".."):  # "nosuch/.." would create nosuch, then name its parent
        raise EreeError(
            f"output path {out_dir} does not name a folder of its own (it ends in "
            f"{out.name or '.'!r}); give the folder's own name"
        )
    try:
        os.lstat(out)
    except (FileNotFoundError, NotADirectoryError):
        pass  # the checks below say which
    except OSError as e:  # a name over the file system's limit, a loop of links, …
        raise EreeError(f"output path {out}: {e.strerror or type(e).__name__}") from None
    _restore_aside(out)
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
            why = _not_eree_only(out)
            if why is not None:
                raise EreeError(
                    f"output directory {out} {why}; --force replaces only an output eree "
                    "wrote, unchanged: choose a new directory"
                )
    parent = out.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise EreeError(f"output path {out}: {parent} is not a directory")
    return out


def write_marker(folder: Path, command: str) -> None:
    """Write the :data:`MARKER` file of a finished output folder.

    It records the command, the time, and every file in the folder with its size and an
    HMAC-SHA256 of its content under the user's output key (:func:`output_key`), and an
    HMAC of the whole record (what ``--force`` may replace). Keyed, never a plain hash:
    the folder may hold owner-only files of confidential values (``internal/``), and an
    unkeyed hash of them would let a reader test guesses. Without a usable key (a home
    folder that cannot be written) the marker carries no HMAC and ``--force`` will refuse
    the folder.
    """
    from eree import __version__

    key = output_key(create=True)
    files, _ = _listing(folder)
    doc: dict[str, object] = {
        "written_by": command,
        "eree_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "files": {
            rel: {"bytes": p.stat().st_size, "mac": None if key is None else _file_mac(key, p)}
            for rel, p in sorted(files.items())
        },
    }
    if key is not None:
        doc["mac"] = _marker_mac(key, doc)
    (folder / MARKER).write_text(json.dumps(doc) + "\n", encoding="utf-8")


def make_temp_folder(out: Path, prefix: str) -> Path:
    """A fresh temporary sibling of ``out`` with the umask's folder mode."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=out.parent))
    os.chmod(tmp, folder_mode())
    return tmp


#: the prefix of the hidden sibling an old output is moved to while a new one replaces it
_ASIDE = ".replaced-"


def _restore_aside(out: Path) -> None:
    """Put back an old output a killed ``--force`` left aside (when nothing took its place)."""
    if out.exists() or out.is_symlink() or not out.parent.is_dir():
        return
    for aside in sorted(out.parent.glob(f".{out.name}{_ASIDE}*")):
        old = aside / out.name
        if old.is_dir() and not old.is_symlink():
            os.replace(old, out)
            shutil.rmtree(aside, ignore_errors=True)
            return


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one atomic step (Linux ``renameat2``); False where unsupported."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    if rc != 0:
        err = ctypes.get_errno()
        if err in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: not on this file system
            return False
        raise OSError(err, os.strerror(err), str(b))
    return True


def _aside(out: Path) -> Path | None:
    """Move a non-empty ``out`` to a hidden sibling (returned); remove an empty one."""
    if not out.exists():
        return None
    if not any(out.iterdir()):
        out.rmdir()
        return None
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}{_ASIDE}", dir=out.parent))
    os.replace(out, old / out.name)
    return old


def put_in_place(tmp: Path, out: Path) -> None:
    """Rename the finished folder ``tmp`` to ``out``, replacing what was there.

    ``out`` must have passed :func:`check_out`. An earlier output there (``--force``) is
    exchanged with ``tmp`` in one atomic step and then removed; where that is not
    supported it is moved aside first and removed only after the rename succeeded.
    """
    if out.is_dir() and any(out.iterdir()) and _exchange(tmp, out):
        shutil.rmtree(tmp, ignore_errors=True)  # the old output, now at tmp's name
        return
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
