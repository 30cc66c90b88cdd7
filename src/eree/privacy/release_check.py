"""Release directories checked against the budget ledger (``eree ledger verify --release``).

A charged release's manifest names its ledger row and chain hash (``ledger.id``,
``ledger.chain_hash``); both must be in the ledger. A seeded release is never charged
(``--seed`` with ``--ledger`` is refused): its manifest says ``random.mode = "seeded"`` and
names no ledger row, its directory holds :data:`NOT_FOR_PUBLICATION`, every Parquet table
carries :data:`SEEDED_MARK`, and no charge of the ledger names its directory; such a
release is reported as seeded, not for publication and never charged.

What is trusted: the ledger (a keyed hash chain that :meth:`~eree.privacy.ledger.Ledger.verify`
proves intact). A manifest, the marks and the tables are claims that anyone who can write
the directory can edit, so the checks cross them with each other and with the ledger: a
manifest that says seeded but names a ledger row, lacks a seeded mark, or sits where the
ledger says a charged release was written is a problem; so is a manifest that names a row
while its directory carries a seeded release's marks, or a row another release names too.
A seeded verdict never vouches for publication: it says the release must not be published.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eree.privacy.ledger_state import LedgerState

__all__ = [
    "NOT_FOR_PUBLICATION",
    "SEEDED_KEY",
    "SEEDED_MARK",
    "SEEDED_NAME_MARK",
    "check_releases",
    "seeded_name",
    "unmarked_name",
]

#: the file in a seeded (reproducible) release's directory (docs/design.md#release-outputs)
NOT_FOR_PUBLICATION = "NOT_FOR_PUBLICATION"
#: the key and value of every Parquet table's metadata in a seeded release
SEEDED_KEY = "eree.random"
SEEDED_MARK = "seeded: NOT FOR PUBLICATION"
#: the mark in the name of every CSV and agency-layout file of a seeded release, before
#: its extension (``wac_c000.NOT-FOR-PUBLICATION.csv``,
#: ``pa_wac_S000_JT00_2015.NOT-FOR-PUBLICATION.csv.gz``): text files carry no metadata,
#: and a line or a column inside them would break the agencies' layouts
SEEDED_NAME_MARK = "NOT-FOR-PUBLICATION"
_EXTENSIONS = (".csv.gz", ".csv")


def seeded_name(name: str) -> str:
    """``name`` (a path) with :data:`SEEDED_NAME_MARK` before its ``.csv``/``.csv.gz``."""
    for ext in _EXTENSIONS:
        if name.endswith(ext):
            return f"{name[: -len(ext)]}.{SEEDED_NAME_MARK}{ext}"
    return f"{name}.{SEEDED_NAME_MARK}"


def unmarked_name(name: str) -> tuple[str, bool]:
    """(``name`` without the seeded mark, whether it had it): the inverse of seeded_name."""
    for ext in (*_EXTENSIONS, ""):
        mark = f".{SEEDED_NAME_MARK}{ext}"
        if name.endswith(mark):
            return name[: -len(mark)] + ext, True
    return name, False


def check_releases(
    manifests: list[Path], rows: Mapping[int, tuple[str, str, str]], state: LedgerState
) -> tuple[list[str], list[str]]:
    """(problems, one line per release in order) for ``manifests``.

    Args:
        manifests: ``manifest.json`` files or release directories.
        rows: the ledger's rows: id → (kind, chain hash, dataset).
        state: the ledger's state (its reservations and their status).
    """
    problems: list[str] = []
    releases: list[str] = []
    seen_rows: dict[Any, Path] = {}
    for m in manifests:
        mp = Path(m) / "manifest.json" if Path(m).is_dir() else Path(m)
        try:
            manifest = json.loads(mp.read_text(encoding="utf-8"))
            if not isinstance(manifest, dict):
                raise ValueError
        except (OSError, ValueError):
            problems.append(f"{mp}: not a readable manifest")
            continue
        entry = manifest.get("ledger") or {}
        random = manifest.get("random") or {}
        if isinstance(random, dict) and random.get("mode") == "seeded":
            problem, line = _seeded_release(mp, manifest, state)
            (problems if problem else releases).append(line)
            continue
        if not isinstance(entry, dict) or "id" not in entry:
            problems.append(f"{mp}: names no ledger row: this release was not charged to a "
                            "ledger (its manifest does not say it was seeded)")  # fmt: skip
            continue
        rid = entry["id"]
        row = rows.get(rid) if isinstance(rid, int) else None
        if row is None or row[0] != "reserve" or row[1] != entry.get("chain_hash"):
            problems.append(f"{mp}: its ledger row {rid} is not in the ledger with that hash")
            continue
        _, marked = _seeded_tables(mp.parent)
        if marked or (mp.parent / NOT_FOR_PUBLICATION).exists():
            problems.append(f"{mp}: names ledger row {rid}, but its directory carries a "
                            "seeded release's marks (NOT FOR PUBLICATION): a seeded release "
                            "given a charged one's row")  # fmt: skip
            continue
        if rid in seen_rows:
            problems.append(f"{mp}: names ledger row {rid}, as {seen_rows[rid]} does: two "
                            "releases for one charge (a copy, or a manifest copied)")  # fmt: skip
            continue
        seen_rows[rid] = mp
        releases.append(f"{mp}: charged: ledger row {rid} (dataset {row[2]!r}), the hash "
                        "its manifest records")  # fmt: skip
    return problems, releases


def _seeded_tables(release_dir: Path) -> tuple[int, int]:
    """(Parquet tables of the release, how many carry the seeded mark in their metadata)."""
    import pyarrow.parquet as pq

    tables = sorted((release_dir / "tables").glob("*.parquet"))
    marked = 0
    for t in tables:
        try:
            meta = pq.read_metadata(t).metadata or {}
        except (OSError, ValueError):
            continue
        marked += meta.get(SEEDED_KEY.encode()) == SEEDED_MARK.encode()
    return len(tables), marked


def _seeded_release(mp: Path, manifest: Mapping[str, Any], st: LedgerState) -> tuple[bool, str]:
    """(is it a problem, the line) for a manifest that says its release was seeded."""
    entry = manifest.get("ledger")
    if entry:
        row = entry.get("id") if isinstance(entry, dict) else entry
        return True, (f"{mp}: says seeded (never charged) yet names ledger row {row}: the "
                      "manifest was edited")  # fmt: skip
    if not (mp.parent / NOT_FOR_PUBLICATION).is_file():
        return True, (f"{mp}: says seeded, but its directory has no {NOT_FOR_PUBLICATION} "
                      "file (removed, or the manifest edited)")  # fmt: skip
    n, marked = _seeded_tables(mp.parent)
    if marked < n:
        return True, (f"{mp}: says seeded, but {n - marked} of its {n} Parquet tables lack "
                      "the seeded mark (tables of another release, or the manifest "
                      "edited)")  # fmt: skip
    here = str(mp.parent.resolve())
    for rid, body in st.reserves.items():
        if body.get("out_dir") == here and st.status.get(rid) != "void":
            return True, (f"{mp}: says seeded (never charged), but ledger row {rid} charged a "
                          f"release written to {here}: the manifest was edited, or a seeded "
                          "release replaced a charged one")  # fmt: skip
    seed = manifest.get("random", {}).get("seed")
    return False, (f"{mp}: seeded (seed {seed}): NOT FOR PUBLICATION, and never charged to a "
                   "ledger (no row of this ledger names it)")  # fmt: skip
