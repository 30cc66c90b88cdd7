r"""Content fingerprint of validated input data (docs/design.md#budget-ledger, #release-outputs).

A dataset is identified in the budget ledger by what it contains, not by its name or its
files: the fingerprint summarises the *validated* frames a release reads
(:class:`~eree.data.job_tables.JobTables` or
:class:`~eree.data.establishments.EstablishmentData`) as a **multiset of rows**. It is

* **order-independent**: a sum over rows, so the same rows in any order give the same
  fingerprint (no sort); duplicated rows count as often as they occur;
* **format-independent**: the loader has already given every column its validated type
  (codes as text, confidential values as Float64), so the same rows read from CSV,
  CSV.gz or Parquet give the same fingerprint;
* **engine-independent**: every step is a 64-bit integer operation (wrapping multiply,
  xor, logical right shift) or a SHA-256, so Spark computes the same value with Spark SQL
  expressions (:func:`eree.engine.spark.fingerprint.spark_fingerprints`: one SQL query
  per table).

Definition (scheme ``eree-fingerprint-v2``; all arithmetic modulo 2⁶⁴):

* ``fmix(z)``: ``z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27;
  z *= 0x94D049BB133111EB; z ^= z >> 31`` (the SplitMix64 finaliser).
* ``salt(s)``: the first 8 bytes, big-endian, of SHA-256 of the UTF-8 text ``s``.
* A column's *kind* is ``text`` (strings, categorical codes), ``int`` (integers,
  booleans as 0/1) or ``float``. A value's *word* ``w``: text — the first 8 bytes,
  big-endian, of SHA-256 of its UTF-8 bytes; int — its two's-complement 64 bits; float —
  the IEEE-754 binary64 bits of ``x + 0.0`` (so −0.0 is 0.0), every NaN as
  ``0x7FF8000000000000``.
* For table ``T``, column ``c`` of kind ``k`` and lane ``j`` ∈ {0, 1, 2, 3}: the value
  hash is ``fmix(w ^ salt("eree-fingerprint-v2|T|c|k|j"))``, and a null's is
  ``fmix(salt("eree-fingerprint-v2|T|c|null|j"))``.
* A row's hash in lane ``j``: ``acc = 0``, then for each column in name order
  ``acc = fmix(acc ^ value hash)``.
* Lane sum ``S_j``: the sum of the rows' hashes in lane ``j`` (a multiset hash).
* The fingerprint: hex SHA-256 of the UTF-8 text ``"eree-fingerprint-v2\n" + family +
  "\n"`` followed, per table in a fixed order, by ``"table T rows N\n"``, one line
  ``"column c k\n"`` per column in name order and ``"lanes S_0 S_1 S_2 S_3\n"`` (16
  lower-case hex digits each). Families: ``eree`` (tables ``workplaces``, ``jobs``),
  ``establishments`` (table ``establishments``) and their ``… structure`` skeletons.

Four independent 64-bit lanes make an accidental collision of two different multisets
about as likely as a 256-bit one; the fingerprint is not meant to resist someone who
crafts data to collide (whoever can do that can simply change one record).

The fingerprint is an *unkeyed* hash of confidential content: it never leaves the
machine. The ledger and the manifest only store :func:`eree.privacy.ledger.keyed_fingerprint`,
an HMAC-SHA256 of it under a secret key (docs/design.md#release-outputs), which cannot be
brute-forced by
someone who knows every record but one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

if TYPE_CHECKING:
    from eree.data.establishments import EstablishmentData
    from eree.data.job_tables import JobTables

__all__ = [
    "LANES",
    "SCHEME",
    "content_fingerprint",
    "fingerprints",
    "fmix64",
    "salt",
    "structure_counts",
    "structure_fingerprint",
    "summary_digest",
    "value_salts",
]

#: the fingerprint scheme; the ledger records it beside every fingerprint it stores
SCHEME = "eree-fingerprint-v2"
LANES = 4
MASK = (1 << 64) - 1
_C1 = 0xBF58476D1CE4E5B9
_C2 = 0x94D049BB133111EB
#: the word of every NaN (Java's ``Double.doubleToLongBits`` canonical NaN)
NAN_BITS = 0x7FF8000000000000
_CHUNK = 1 << 20  # rows hashed at a time (bounded temporary memory)


def salt(text: str) -> int:
    """The first 8 bytes, big-endian, of SHA-256 of ``text`` (an unsigned 64-bit int).

    Also the word of a text value (see :class:`_TextWords`).
    """
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def fmix64(z: int) -> int:
    """The SplitMix64 finaliser of one unsigned 64-bit integer."""
    z &= MASK
    z ^= z >> 30
    z = (z * _C1) & MASK
    z ^= z >> 27
    z = (z * _C2) & MASK
    return z ^ (z >> 31)


def value_salts(table: str, column: str, kind: str, lane: int) -> tuple[int, int]:
    """``(salt of the values, hash of a null)`` of a column in a lane (module docstring)."""
    return (
        salt(f"{SCHEME}|{table}|{column}|{kind}|{lane}"),
        fmix64(salt(f"{SCHEME}|{table}|{column}|null|{lane}")),
    )


def summary_digest(
    family: str, tables: Sequence[tuple[str, int, Sequence[tuple[str, str]], Sequence[int]]]
) -> str:
    """The fingerprint from per-table ``(label, rows, [(column, kind)], lane sums)``."""
    lines = [SCHEME, family]
    for label, n, cols, lanes in tables:
        lines.append(f"table {label} rows {n}")
        lines += [f"column {c} {k}" for c, k in cols]
        lines.append("lanes " + " ".join(f"{s & MASK:016x}" for s in lanes))
    return hashlib.sha256(("\n".join(lines) + "\n").encode("utf-8")).hexdigest()


def _fmix(z: np.ndarray) -> np.ndarray:
    """:func:`fmix64` on a uint64 array, in place (returns it)."""
    z ^= z >> np.uint64(30)
    z *= np.uint64(_C1)
    z ^= z >> np.uint64(27)
    z *= np.uint64(_C2)
    z ^= z >> np.uint64(31)
    return z


def kind_of(dtype: pl.DataType) -> str:
    """The fingerprint kind of a Polars column type: ``text``, ``int`` or ``float``."""
    if dtype.is_float() or dtype.is_decimal():  # (decimals count as their float value)
        return "float"
    if dtype.is_integer() or dtype == pl.Boolean:
        return "int"
    return "text"


class _TextWords:
    """Words of text values: SHA-256 once per distinct value, shared between columns.

    The Polars engine's jobs carry workplace ids as an Enum whose categories are the
    workplace table's id column in order: both are hashed once.
    """

    def __init__(self) -> None:
        self._cache: list[tuple[pl.Series, np.ndarray]] = []

    def words(self, distinct: pl.Series) -> np.ndarray:
        for s, w in self._cache:
            if s.len() == distinct.len() and s.equals(distinct):
                return w
        sha = hashlib.sha256
        raw = b"".join([sha(v).digest() for v in distinct.cast(pl.Binary).to_list()])
        digests = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 32)
        w = np.ascontiguousarray(digests[:, :8]).view(">u8").ravel().astype(np.uint64)
        self._cache.append((distinct, w))
        return w

    def codes(self, s: pl.Series, dtype: pl.DataType) -> tuple[np.ndarray, np.ndarray]:
        """Per row, the index of its value among the distinct values; their words.

        Nulls get the index ``len(words)``.
        """
        if isinstance(dtype, pl.Enum):  # (reading an Enum's dtype copies its categories)
            distinct = pl.Series(dtype.categories, dtype=pl.Utf8)
            phys = s.to_physical()
        else:
            u = s.cast(pl.Utf8)
            if u.null_count() == 0 and u.n_unique() == u.len():
                return np.arange(u.len(), dtype=np.int64), self.words(u.rename(""))
            distinct = u.drop_nulls().unique(maintain_order=True)
            phys = u.cast(pl.Enum(distinct)).to_physical()
        words = self.words(distinct.rename(""))
        codes = phys.fill_null(len(words)).to_numpy()
        return codes, words


def _numeric_words(s: pl.Series, kind: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Words of an int or float column and its null mask (``None``: no nulls)."""
    null = s.is_null().to_numpy() if s.null_count() else None
    if kind == "float":
        x = s.cast(pl.Float64).fill_null(0.0).to_numpy().astype(np.float64) + 0.0
        w = x.view(np.uint64).copy()
        w[np.isnan(x)] = np.uint64(NAN_BITS)
    else:
        w = s.cast(pl.Int64).fill_null(0).to_numpy().astype(np.int64).view(np.uint64)
    return w, null


def _table_lanes(
    label: str, df: pl.DataFrame, text: _TextWords
) -> tuple[str, int, list[tuple[str, str]], list[int]]:
    """One table's ``(label, rows, [(column, kind)], lane sums)`` (module docstring)."""
    cols = sorted(df.columns)
    schema = df.schema
    kinds = [(c, kind_of(schema[c])) for c in cols]
    n = df.height
    coded: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    raw: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
    for c, k in kinds:
        if k == "text":
            coded[c] = text.codes(df[c], schema[c])
        else:
            raw[c] = _numeric_words(df[c], k)
    # per lane and coded column, the hash of every distinct value (+ the null's, last)
    tables: dict[tuple[str, int], np.ndarray] = {}
    for c, k in kinds:
        if c in coded:
            for j in range(LANES):
                vs, nh = value_salts(label, c, k, j)
                t = _fmix(coded[c][1] ^ np.uint64(vs))
                tables[c, j] = np.append(t, np.uint64(nh))
    weights: np.ndarray | None = None
    rows: dict[str, np.ndarray] = {}
    cards = [len(coded[c][1]) + 1 for c in cols] if not raw else []
    if cards and n and max(cards) <= n and float(np.prod(np.array(cards, float))) < 2.0**62:
        # all columns coded, none all-distinct: hash each distinct row once, weighted by
        # its multiplicity (rows are numbered in mixed radix by their codes)
        total = int(np.prod(cards))

        def keys(lo: int, hi: int) -> np.ndarray:
            if len(cols) == 1:
                return coded[cols[0]][0][lo:hi]
            key = np.zeros(hi - lo, dtype=np.int64)
            for c, card in zip(cols, cards, strict=True):
                key *= card
                key += coded[c][0][lo:hi]
            return key

        if total <= 4 * n:  # dense: count chunk by chunk, no key array for all rows
            counts = np.zeros(total, dtype=np.int64)
            for lo in range(0, n, _CHUNK):
                counts += np.bincount(keys(lo, min(n, lo + _CHUNK)), minlength=total)
            distinct = np.flatnonzero(counts)
            weights = counts[distinct].astype(np.uint64)
            del counts
        else:
            vc = pl.Series("k", keys(0, n)).value_counts(name="n")
            distinct = vc["k"].to_numpy().astype(np.int64)
            weights = vc["n"].to_numpy().astype(np.uint64)
        rest = distinct
        for c, card in zip(reversed(cols), reversed(cards), strict=True):
            rows[c] = rest % card
            rest = rest // card
    sums = []
    m = len(weights) if weights is not None else n
    for j in range(LANES):
        s = np.uint64(0)
        for lo in range(0, m, _CHUNK):
            hi = min(m, lo + _CHUNK)
            acc = np.zeros(hi - lo, dtype=np.uint64)
            for c, k in kinds:
                if c in coded:
                    idx = rows[c][lo:hi] if weights is not None else coded[c][0][lo:hi]
                    v = tables[c, j][idx]
                else:
                    w, null = raw[c]
                    vs, nh = value_salts(label, c, k, j)
                    v = _fmix(w[lo:hi] ^ np.uint64(vs))
                    if null is not None:
                        v[null[lo:hi]] = np.uint64(nh)
                acc ^= v
                _fmix(acc)
            if weights is not None:
                acc *= weights[lo:hi]
            s += acc.sum(dtype=np.uint64)
        sums.append(int(s))
    return label, n, kinds, sums


def _tables(data: JobTables | EstablishmentData, structure: bool) -> list[tuple[str, pl.DataFrame]]:
    from eree.data.job_tables import JobTables

    if isinstance(data, JobTables):
        if structure:
            return [
                ("workplaces", data.workplaces.select(data.workplaces.columns[0])),
                ("jobs", data.jobs.select(data.jobs.columns[0])),
            ]
        return [("workplaces", data.workplaces), ("jobs", data.jobs)]
    if structure:
        return [("establishments", data.frame.select(data.id_column))]
    return [("establishments", data.frame)]


def family_name(data: object, structure: bool) -> str:
    """``eree`` or ``establishments``, with `` structure`` for the skeleton."""
    base = "eree" if hasattr(data, "jobs") else "establishments"
    return f"{base} structure" if structure else base


def _fingerprint(data: JobTables | EstablishmentData, structure: bool, text: _TextWords) -> str:
    with np.errstate(over="ignore"):
        lanes = [_table_lanes(label, df, text) for label, df in _tables(data, structure)]
    return summary_digest(family_name(data, structure), lanes)


def content_fingerprint(data: JobTables | EstablishmentData) -> str:
    """The content fingerprint (hex SHA-256) of loaded, validated input data.

    Args:
        data: the frames a release reads, as returned by ``load_job_tables`` or
            ``load_establishments``.

    Returns:
        64 hex characters. Keep it private: publish only its keyed form
        (:func:`eree.privacy.ledger.keyed_fingerprint`).
    """
    return _fingerprint(data, False, _TextWords())


def structure_fingerprint(data: JobTables | EstablishmentData) -> str:
    """A fingerprint of the data's skeleton, whatever columns a spec selects.

    ER-EE: the workplace ids and the workplace id of every job (so, establishment sizes);
    establishments: the ids. Two loads of the same files that select different attribute
    columns have different :func:`content_fingerprint` but the same structure, so the ledger
    can tell "the same data seen through other columns, or with changed values" from "other
    data" (docs/design.md#budget-ledger). Private like the content fingerprint.
    """
    return _fingerprint(data, True, _TextWords())


def fingerprints(data: JobTables | EstablishmentData) -> tuple[str, str]:
    """``(content, structure)`` fingerprints, hashing each distinct text value once."""
    text = _TextWords()
    return _fingerprint(data, False, text), _fingerprint(data, True, text)


def structure_counts(data: JobTables | EstablishmentData) -> tuple[np.ndarray, np.ndarray]:
    """Per workplace (establishment) row, the word of its id and its number of jobs.

    The input of the ledger's similarity sketch (:mod:`eree.privacy.similarity`): words as
    in the fingerprint (first 8 bytes of SHA-256 of the id's text), counts as Int64 (0 for
    a workplace without jobs; establishment data: all 0). Confidential (sizes): the
    ledger keeps only a keyed sketch of them.
    """
    from eree.data.job_tables import JobTables

    text = _TextWords()
    if isinstance(data, JobTables):
        wid = data.workplaces.columns[0]
        jid = data.jobs.columns[0]
        ids = data.workplaces.get_column(wid).cast(pl.Utf8)
        per = data.jobs.select(pl.col(jid).cast(pl.Utf8).alias("id")).group_by("id").len(name="n")
        joined = pl.DataFrame({"id": ids}).join(per, on="id", how="left", maintain_order="left")
        counts = joined.get_column("n").fill_null(0).cast(pl.Int64).to_numpy()
    else:
        ids = data.frame.get_column(data.id_column).cast(pl.Utf8)
        counts = np.zeros(ids.len(), dtype=np.int64)
    codes, words = text.codes(ids.rename(""), pl.Utf8())
    words = np.append(words, np.uint64(0))  # (a null id: cannot be, validated data)
    return words[codes], counts
