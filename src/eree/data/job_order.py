r"""The keyed order in which a worker's jobs are kept: docs/privacy.md#several-jobs-per-worker.

A worker with more jobs than the release keeps (k, or one primary job) has them ordered
by a word computed from a secret per-release key and the job's own ids:
``SHA-256(hex(key) + "\x1f" + worker id + "\x1f" + workplace id)`` as 64 lowercase hex
digits, ascending. The key is drawn independently of the data (the release's secure
source; derived from the seed in seeded mode, :meth:`eree.mechanisms.noise.NoiseSource.
order_key`) and never written: the order is a uniformly random permutation of each
worker's jobs, the same for every engine (Spark computes the same word with ``sha2``),
and it favours no workplace by its id (the rule it replaced kept the smallest ids).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable

__all__ = ["KEY_BYTES", "SEPARATOR", "fresh_key", "order_words"]

#: length of an order key (256 bits)
KEY_BYTES = 32
#: the separator between the key and the ids in the hashed text (unit separator)
SEPARATOR = "\x1f"


def fresh_key() -> bytes:
    """A new secret order key from the operating system's secure generator."""
    return secrets.token_bytes(KEY_BYTES)


def order_words(key: bytes, worker_ids: Iterable[str], workplace_ids: Iterable[str]) -> list[str]:
    """Each job's order word (64 hex digits): the first k words of a worker are kept."""
    prefix = key.hex() + SEPARATOR
    return [
        hashlib.sha256(f"{prefix}{k}{SEPARATOR}{w}".encode()).hexdigest()
        for k, w in zip(worker_ids, workplace_ids, strict=True)
    ]
