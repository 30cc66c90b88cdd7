r"""When two datasets are "the same data" for a budget: a keyed sketch of their structure.

Exact fingerprints (:mod:`eree.data.fingerprint`) recognise the same rows; one added
workplace row without jobs, or one job moved to another workplace, makes new content. For
a budget such data are the same data: they describe the same people and the same
establishments. The ledger therefore also keeps, per dataset version, a **keyed bottom-k
sketch** of the job → establishment structure and treats two datasets as the same data
when their estimated similarity reaches :data:`THRESHOLD`.

Definition (scheme ``eree-sketch-v1``):

* The structure of a dataset is a set of *tokens*: for every workplace (establishment)
  row, the token ``(w, 0)``, and for its ``c`` jobs the tokens ``(w, 1) … (w, c)``; ``w``
  is the 64-bit word of the id (the first 8 bytes of SHA-256 of its text, as in the
  fingerprint). Establishment data have no jobs: one token per establishment.
* The similarity of two datasets is the Jaccard index of their token sets,
  :math:`J = |A \cap B| / |A \cup B|` — for job counts this is the weighted Jaccard
  :math:`\sum_w \min(c_w, c'_w) / \sum_w \max(c_w, c'_w)` (plus the workplace tokens).
  One added empty workplace gives :math:`J = T/(T+1)`, one moved job
  :math:`J = (T-1)/(T+1)`, T the number of tokens (jobs + workplaces).
* Each token is hashed with SipHash-2-4 (a pseudorandom function) under a 128-bit key
  derived from the ledger's secret key: :math:`h = \mathrm{SipHash}_K(w \,\|\, j)`, the
  16-byte message of the two words little-endian. The sketch is the :data:`K` smallest
  hashes (all of them when there are fewer tokens).
* Estimate: :math:`\hat J = |U \cap A_k \cap B_k| / |U|`, U the :data:`K` smallest values
  of :math:`A_k \cup B_k` (the bottom-k estimator; exact when both sets are smaller than
  K). Its standard error is about :math:`\sqrt{J(1-J)/K}` (0.019 at J = 0.9): data
  with :math:`J \ge 0.99` are recognised and data with :math:`J \le 0.8` are not, each
  except with probability below :math:`10^{-6}` (``tests/privacy/test_similarity.py``
  measures it).

What is stored (:func:`seal`): the K keyed hashes, padded to exactly K values and each
masked with a one-time pad drawn from HMAC-SHA-256 under a second key derived from the
ledger's key and a fresh random nonce per record — never an id, a count or an unkeyed
hash. The hashes themselves would tell the data's size: the K-th smallest of T uniform
values is about K/T of the range, and fewer than K values is T exactly. Sealed, every
record is K + 1 uniformly random words whatever the data. Whoever holds the ledger's key
(the office) can unseal them and test guesses about job counts, as they can with the
fingerprints. A real hash equal to the padding word (2^64 − 1, probability 2^-64 per
token) is dropped from the sketch: the estimate then uses K − 1 values.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "SCHEME",
    "THRESHOLD",
    "K",
    "seal",
    "similarity",
    "siphash24",
    "sketch",
    "sketch_key",
    "unseal",
]

#: the sketch scheme, recorded beside every sketch in the ledger
SCHEME = "eree-sketch-v1"
#: the number of hashes a sketch keeps
K = 256
#: two datasets whose estimated similarity reaches this are the same data for a budget
THRESHOLD = 0.9

_U64 = np.uint64
_C = (0x736F6D6570736575, 0x646F72616E646F6D, 0x6C7967656E657261, 0x7465646279746573)


def _rotl(x: np.ndarray, b: int, t: np.ndarray) -> None:
    """Rotate ``x`` left by ``b`` bits, in place (``t``: scratch of the same shape)."""
    np.right_shift(x, _U64(64 - b), out=t)
    np.left_shift(x, _U64(b), out=x)
    np.bitwise_or(x, t, out=x)


def _round(v0: np.ndarray, v1: np.ndarray, v2: np.ndarray, v3: np.ndarray, t: np.ndarray) -> None:
    """One SipRound, in place."""
    v0 += v1
    _rotl(v1, 13, t)
    v1 ^= v0
    _rotl(v0, 32, t)
    v2 += v3
    _rotl(v3, 16, t)
    v3 ^= v2
    v0 += v3
    _rotl(v3, 21, t)
    v3 ^= v0
    v2 += v1
    _rotl(v1, 17, t)
    v1 ^= v2
    _rotl(v2, 32, t)


def siphash24(key: bytes, words: Sequence[np.ndarray], tail: int) -> np.ndarray:
    """SipHash-2-4 of many messages of one length, vectorised (Aumasson & Bernstein 2012).

    Args:
        key: 16 bytes.
        words: the message's full 8-byte words, each an array (one entry per message),
            read little-endian as uint64.
        tail: the last block: the message length in bytes, mod 256, shifted left by 56,
            OR the remaining (< 8) bytes little-endian.

    Returns:
        the 64-bit hash of each message (uint64 array).
    """
    k0 = int.from_bytes(key[:8], "little")
    k1 = int.from_bytes(key[8:16], "little")
    n = len(words[0]) if words else 1
    with np.errstate(over="ignore"):
        v0 = np.full(n, k0 ^ _C[0], dtype=np.uint64)
        v1 = np.full(n, k1 ^ _C[1], dtype=np.uint64)
        v2 = np.full(n, k0 ^ _C[2], dtype=np.uint64)
        v3 = np.full(n, k1 ^ _C[3], dtype=np.uint64)
        t = np.empty(n, dtype=np.uint64)
        blocks: list[np.ndarray | np.uint64] = [np.asarray(w, dtype=np.uint64) for w in words]
        blocks.append(_U64(tail))
        for m in blocks:
            v3 ^= m
            for _ in range(2):
                _round(v0, v1, v2, v3, t)
            v0 ^= m
        v2 ^= _U64(0xFF)
        for _ in range(4):
            _round(v0, v1, v2, v3, t)
        v0 ^= v1
        v0 ^= v2
        v0 ^= v3
        return v0


def sketch_key(ledger_key: bytes) -> bytes:
    """The sketch's 128-bit SipHash key, derived from the ledger's secret key."""
    return hmac.new(ledger_key, SCHEME.encode("ascii"), hashlib.sha256).digest()[:16]


def sketch(ledger_key: bytes, words: np.ndarray, counts: np.ndarray) -> list[str]:
    """The keyed bottom-K sketch of a structure (module docstring), as sorted hex strings.

    Args:
        ledger_key: the ledger's secret key.
        words: per workplace (establishment) row, the 64-bit word of its id.
        counts: per row, its number of jobs (zeros for establishment data).
    """
    words = np.asarray(words, dtype=np.uint64)
    counts = np.asarray(counts, dtype=np.int64)
    key = sketch_key(ledger_key)
    # tokens (w, 0..c) per row, in chunks of rows so that memory stays bounded
    best = np.empty(0, dtype=np.uint64)
    per = counts + 1
    ends = np.cumsum(per)
    start = 0
    chunk = 1 << 20
    while start < len(words):
        base = int(ends[start - 1]) if start else 0
        stop = int(np.searchsorted(ends, base + chunk, side="right"))
        stop = max(stop, start + 1)
        reps = per[start:stop]
        w = np.repeat(words[start:stop], reps)
        first = np.repeat(np.cumsum(reps) - reps, reps)
        j = (np.arange(len(w), dtype=np.int64) - first).astype(np.uint64)
        h = siphash24(key, [w, j], 16 << 56)
        best = np.concatenate([best, h])
        if len(best) > K:
            best = np.partition(best, K - 1)[:K]
        start = stop
    return [f"{int(v):016x}" for v in np.sort(best)]


def similarity(a: Sequence[str], b: Sequence[str]) -> float:
    """The bottom-k estimate of the Jaccard similarity of two sketches (module docstring)."""
    if not a or not b:
        return 0.0
    sa, sb = {int(x, 16) for x in a}, {int(x, 16) for x in b}
    union = sorted(sa | sb)[:K]
    return sum(1 for u in union if u in sa and u in sb) / len(union)


#: the padding word of a sealed sketch with fewer than K hashes (never a kept hash)
_PAD = (1 << 64) - 1


def _mask(ledger_key: bytes, nonce: bytes, n: int) -> list[int]:
    """The first n one-time-pad words: HMAC-SHA-256 under the sealing key, of nonce ‖ i."""
    key = hmac.new(ledger_key, (SCHEME + "/seal").encode("ascii"), hashlib.sha256).digest()
    return [
        int.from_bytes(hmac.new(key, nonce + i.to_bytes(4, "big"), hashlib.sha256).digest()[:8])
        for i in range(n)
    ]


def seal(ledger_key: bytes, sk: Sequence[str], nonce: bytes | None = None) -> list[str]:
    """A sketch as the ledger stores it: the nonce, then K masked words (module docstring).

    ``nonce``: 16 bytes; a fresh random one when None (tests pass one to be repeatable).
    """
    values = [int(x, 16) for x in sk if int(x, 16) != _PAD][:K]
    values += [_PAD] * (K - len(values))
    nonce = os.urandom(16) if nonce is None else nonce
    pad = _mask(ledger_key, nonce, K)
    return [nonce.hex(), *(f"{v ^ m:016x}" for v, m in zip(values, pad, strict=True))]


def unseal(ledger_key: bytes, sealed: Sequence[str]) -> list[str]:
    """The sketch a :func:`seal` record holds (its padding removed)."""
    nonce, words = bytes.fromhex(sealed[0]), sealed[1:]
    pad = _mask(ledger_key, nonce, len(words))
    values = (int(w, 16) ^ m for w, m in zip(words, pad, strict=True))
    return [f"{v:016x}" for v in values if v != _PAD]


def similar_dataset(
    versions: Mapping[str, Sequence[Mapping[str, Any]]],
    sk: list[str] | None,
    ledger_key: bytes,
) -> str | None:
    """The first dataset (in ledger order) with a version whose sketch is similar to ``sk``.

    Similar: the estimated similarity reaches :data:`THRESHOLD`. ``versions``: per
    dataset name, its version records as the ledger stores them (sketches sealed under
    ``ledger_key``, :func:`seal`) (versions recorded
    without a sketch, or with another sketch scheme, are compared by their exact
    fingerprints only, elsewhere).
    """
    if sk is None:
        return None
    for name, records in versions.items():
        for v in records:
            theirs = v.get("sketch")
            if (theirs and v.get("sketch_scheme") == SCHEME
                    and similarity(sk, unseal(ledger_key, theirs)) >= THRESHOLD):  # fmt: skip
                return name
    return None
