"""Writing a release: tables and manifest, atomically (DESIGN.md §7.2)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from eree import __version__
from eree.errors import EreeError
from eree.release.tables import QueryTable


def _expand(files: Iterable[Path]) -> list[Path]:
    """Files, with each directory (a partitioned table) replaced by its files, sorted."""
    out: list[Path] = []
    for f in files:
        p = Path(f)
        out += sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p]
    return out


def dataset_sha256(files: Iterable[Path]) -> str:
    """SHA-256 identifying the input: the hash of each file's name and bytes, in order.

    A directory (a table written as several Parquet files) stands for its files, in
    sorted order.
    """
    h = hashlib.sha256()
    for f in _expand(files):
        fh = hashlib.sha256()
        with open(f, "rb") as fp:
            for chunk in iter(lambda: fp.read(1 << 20), b""):
                fh.update(chunk)
        h.update(Path(f).name.encode())
        h.update(fh.digest())
    return h.hexdigest()


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def base_manifest() -> dict[str, Any]:
    return {"eree_version": __version__, "created": utc_now()}


def write_release(
    out_dir: Path,
    tables: list[QueryTable],
    manifest: dict[str, Any],
    *,
    csv: bool = True,
    extra: Mapping[str, pl.DataFrame] | None = None,
) -> Path:
    """Write ``tables/<query>.parquet`` (+ ``.csv``) and ``manifest.json`` atomically.

    Everything is written to a temporary sibling directory that is renamed into place at
    the end, so a failed run leaves no partial output. An existing non-empty ``out_dir``
    is never overwritten.

    Args:
        extra: further files of the release, relative path → frame (``.parquet`` or
            ``.csv`` by suffix), e.g. ``{"microdata.parquet": frame}``; written with the
            rest, atomically.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise EreeError(f"output directory {out_dir} exists and is not empty; choose a new one")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    try:
        (tmp / "tables").mkdir()
        for qt in tables:
            qt.table.write_parquet(tmp / "tables" / f"{qt.name}.parquet")
            if csv:
                qt.table.write_csv(tmp / "tables" / f"{qt.name}.csv")
        for rel, frame in (extra or {}).items():
            dest = tmp / rel
            if Path(rel).is_absolute() or ".." in Path(rel).parts:
                raise EreeError(f"extra release file {rel!r} must be a path inside the release")
            dest.parent.mkdir(parents=True, exist_ok=True)
            if rel.endswith(".parquet"):
                frame.write_parquet(dest)
            elif rel.endswith(".csv"):
                frame.write_csv(dest)
            else:
                raise EreeError(f"extra release file {rel!r}: use .parquet or .csv")
        with open(tmp / "manifest.json", "w", encoding="utf-8") as fp:
            json.dump(manifest, fp, indent=2, default=_json_default)
            fp.write("\n")
        if out_dir.exists():
            out_dir.rmdir()
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


def _json_default(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, tuple | set | frozenset):
        return list(o)
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
