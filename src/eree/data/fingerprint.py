"""Content fingerprint of validated input data (DESIGN.md §3.4, §7.2).

A dataset is identified in the budget ledger by what it contains, not by its name or its
files: the fingerprint is a SHA-256 over a canonical serialisation of the *validated*
frames a release reads (:class:`~eree.data.eree_tables.EreeData` or
:class:`~eree.data.establishments.EstablishmentData`). It is

* **order-independent**: columns are taken in name order and rows are sorted by every
  column before hashing, so the same rows in any order give the same fingerprint;
* **format-independent**: the loader has already given every column its validated type
  (codes as strings, confidential values as Float64), so the same rows read from CSV,
  CSV.gz or Parquet give the same fingerprint.

The fingerprint is an *unkeyed* hash of confidential content: it never leaves the
machine. The ledger and the manifest only store :func:`eree.privacy.ledger.keyed_fingerprint`, an
HMAC-SHA256 of it under a secret key (DESIGN.md §7.2), which cannot be brute-forced by
someone who knows every record but one.
"""

from __future__ import annotations

import hashlib
import struct
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

if TYPE_CHECKING:
    from eree.data.eree_tables import EreeData
    from eree.data.establishments import EstablishmentData

__all__ = [
    "content_fingerprint",
    "frame_fingerprint",
    "structure_fingerprint",
]

_VERSION = b"eree-fingerprint-v1"


def _update_column(h: hashlib._Hash, name: str, s: pl.Series) -> None:
    """Feed one column (name, kind, validity, values) into ``h`` unambiguously."""
    nb = name.encode("utf-8")
    h.update(struct.pack("<Q", len(nb)) + nb)
    nulls = s.is_null().to_numpy().astype(np.uint8)
    h.update(struct.pack("<Q", len(nulls)) + nulls.tobytes())
    dt = s.dtype
    if dt.is_float():
        # -0.0 and 0.0 are the same value; normalise so the bytes agree
        vals = (s.cast(pl.Float64).fill_null(0.0) + 0.0).to_numpy().astype("<f8")
        h.update(b"f" + vals.tobytes())
    elif dt.is_integer() or dt == pl.Boolean:
        vals = s.cast(pl.Int64).fill_null(0).to_numpy().astype("<i8")
        h.update(b"i" + vals.tobytes())
    else:
        u = s.cast(pl.Utf8).fill_null("")
        lens = u.str.len_bytes().to_numpy().astype("<u8")
        h.update(b"s" + lens.tobytes())
        h.update(_utf8_bytes(u))


def _utf8_bytes(u: pl.Series) -> bytes | memoryview:
    """The UTF-8 bytes of a text column's values, concatenated (no nulls).

    The same bytes as ``"".join(u.to_list()).encode("utf-8")``, read from the Arrow data
    buffer instead of building one Python string per row.
    """
    arr = u.rechunk().to_arrow(compat_level=pl.CompatLevel.oldest())
    if len(arr) == 0:
        return b""
    buffers = arr.buffers()
    width = 8 if str(arr.type) == "large_string" else 4
    offsets = np.frombuffer(buffers[1], dtype=f"<i{width}")[arr.offset : arr.offset + len(arr) + 1]
    if buffers[2] is None:
        return b""
    return memoryview(buffers[2])[int(offsets[0]) : int(offsets[-1])]


def frame_fingerprint(h: hashlib._Hash, label: str, df: pl.DataFrame) -> None:
    """Feed ``df`` into ``h`` independently of its row and column order."""
    cols = sorted(df.columns)
    # categorical codes (e.g. the Polars engine's Enum-coded jobs) count as their text
    frame = df.select(
        [
            pl.col(c).cast(pl.Utf8)
            if df.schema[c] == pl.Categorical or isinstance(df.schema[c], pl.Enum)
            else pl.col(c)
            for c in cols
        ]
    )
    if cols and frame.height:
        frame = frame.sort(cols, nulls_last=True, maintain_order=False)
    lb = label.encode("utf-8")
    h.update(struct.pack("<QQQ", len(lb), frame.height, len(cols)) + lb)
    for c in cols:
        _update_column(h, c, frame[c])


def content_fingerprint(data: EreeData | EstablishmentData) -> str:
    """The content fingerprint (hex SHA-256) of loaded, validated input data.

    Args:
        data: the frames a release reads, as returned by ``load_eree`` or
            ``load_establishments``.

    Returns:
        64 hex characters. Keep it private: publish only its keyed form
        (:func:`eree.privacy.ledger.keyed_fingerprint`).
    """
    from eree.data.eree_tables import EreeData

    h = hashlib.sha256(_VERSION)
    if isinstance(data, EreeData):
        h.update(b"eree")
        frame_fingerprint(h, "workplaces", data.workplaces)
        frame_fingerprint(h, "jobs", data.jobs)
    else:
        h.update(b"establishments")
        frame_fingerprint(h, "establishments", data.frame)
    return h.hexdigest()


def structure_fingerprint(data: EreeData | EstablishmentData) -> str:
    """A fingerprint of the data's skeleton, whatever columns a spec selects.

    ER-EE: the workplace ids and the workplace id of every job (so, establishment sizes);
    establishments: the ids. Two loads of the same files that select different attribute
    columns have different :func:`content_fingerprint` but the same structure, so the ledger
    can tell "the same data seen through other columns, or with changed values" from "other
    data" (DESIGN.md §3.4). Private like the content fingerprint.
    """
    from eree.data.eree_tables import EreeData

    h = hashlib.sha256(_VERSION + b"-structure")
    if isinstance(data, EreeData):
        wid = data.workplaces.columns[0]
        h.update(b"eree")
        frame_fingerprint(h, "workplaces", data.workplaces.select(wid))
        frame_fingerprint(h, "jobs", data.jobs.select(data.jobs.columns[0]))
    else:
        h.update(b"establishments")
        frame_fingerprint(h, "establishments", data.frame.select(data.id_column))
    return h.hexdigest()
