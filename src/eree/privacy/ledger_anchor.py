"""The ledger's head anchor, ``LEDGER.head``: the newest row's id and hash, kept outside it.

See :mod:`eree.privacy.ledger` ("head anchor") and docs/privacy.md, "Rollback".
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from eree.errors import LedgerError

__all__ = ["read_anchor", "write_anchor"]


def read_anchor(head_path: Path) -> tuple[int, str] | None:
    """The anchor's ``(row id, hash)``; None when there is none.

    Read as a small regular file only (at most 256 bytes, opened without blocking): an
    anchor that is a FIFO, a device (a link to ``/dev/zero``) or a folder is refused
    in one line, never read until memory or patience runs out. An anchor that cannot
    be parsed reads as ``(-1, "unreadable")`` and fails verification.

    Raises:
        LedgerError: the anchor is not a regular file.
    """
    try:
        fd = os.open(head_path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        if head_path.is_symlink():
            raise LedgerError(
                f"the ledger's anchor {head_path} is a link to nothing; an "
                "administrator investigates (`eree ledger verify`)"
            ) from None
        return None
    except OSError as e:
        raise LedgerError(
            f"the ledger's anchor {head_path} cannot be read ({e.strerror or type(e).__name__})"
        ) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise LedgerError(
                f"the ledger's anchor {head_path} is not a regular file; an "
                "administrator investigates (`eree ledger verify`)"
            )
        data = os.read(fd, 257)
    finally:
        os.close(fd)
    try:
        if len(data) > 256:
            raise ValueError
        rid, h = data.decode("ascii").split()[:2]
        return int(rid), h
    except ValueError:
        return (-1, "unreadable")


def write_anchor(head_path: Path, rid: int, h: str) -> None:
    """Replace the anchor atomically with ``rid h`` (mode 0600, synced before the rename)."""
    tmp = head_path.with_name(f".{head_path.name}.{secrets.token_hex(8)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fp:
            fp.write(f"{rid} {h}\n")
            fp.flush()
            os.fsync(fp.fileno())
        os.rename(tmp, head_path)  # atomic replacement on POSIX
    finally:
        tmp.unlink(missing_ok=True)
