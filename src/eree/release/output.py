"""Writing a release: tables and manifest, atomically (DESIGN.md §7.2)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from eree import __version__
from eree.data.outdir import check_out, make_temp_folder, put_in_place, write_marker
from eree.errors import EreeError
from eree.release.tables import QueryTable

#: Parquet metadata and file marking a seeded (reproducible) release (DESIGN.md §7.2)
SEEDED_MARK = "seeded: NOT FOR PUBLICATION"
NOT_FOR_PUBLICATION = "NOT_FOR_PUBLICATION"


def utc_now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def base_manifest() -> dict[str, Any]:
    """The manifest fields every release has (version, creation time)."""
    return {"eree_version": __version__, "created": utc_now()}


def check_output_dir(out_dir: str | Path, *, force: bool = False) -> Path:
    """Refuse an output path a release cannot be written to, before anything is done.

    The one ``--out`` convention of every command (:func:`eree.data.outdir.check_out`):
    absent or empty, or, with ``force``, an earlier output of eree that holds no release
    recorded in a ledger.

    Raises:
        EreeError: naming the path and what is wrong with it.
    """
    return check_out(out_dir, force=force)


def check_finite(tables: list[QueryTable], extra: Mapping[str, pl.DataFrame] | None = None) -> None:
    """Refuse to publish a non-finite number (DESIGN.md §2.3, §4.4).

    An infinite or NaN published value means a scale or a sum overflowed (for example
    ε so small that 1/ε is infinite, or sums past the largest double); it is refused
    before any file is written. The message names the table and the column, never a
    value.

    Raises:
        EreeError: naming the first table and column holding a non-finite value.
    """
    frames = [(f"table {qt.name!r}", qt.table) for qt in tables]
    frames += [(f"file {rel!r}", frame) for rel, frame in (extra or {}).items()]
    for what, frame in frames:
        for name, dtype in frame.schema.items():
            if dtype.is_float() and not bool(
                frame.get_column(name).is_finite().fill_null(True).all()
            ):
                raise EreeError(
                    f"{what}, column {name!r}: the release would publish a non-finite value "
                    "(a noise scale or a sum overflowed; check epsilon, alpha and the data's "
                    "magnitudes); nothing was written"
                )


def write_release(
    out_dir: Path,
    tables: list[QueryTable],
    manifest: dict[str, Any],
    *,
    csv: bool = True,
    extra: Mapping[str, pl.DataFrame] | None = None,
    seeded: bool = False,
    tag: str | None = None,
    force: bool = False,
    documents: Mapping[str, str] | None = None,
) -> Path:
    """Write ``tables/<query>.parquet`` (+ ``.csv``) and ``manifest.json`` atomically.

    Everything is written to a temporary sibling directory that is renamed into place at
    the end, so a failed run leaves no partial output. An existing non-empty ``out_dir``
    is never overwritten (with ``force``, an earlier output of eree that holds no ledger
    release is replaced once the new one is complete), and nothing is written when a
    table holds a non-finite value (:func:`check_finite`).

    Args:
        extra: further files of the release, relative path → frame (``.parquet`` or
            ``.csv`` by suffix), e.g. ``{"microdata.parquet": frame}``; written with the
            rest, atomically.
        seeded: the noise was seeded: every Parquet file carries the metadata
            ``eree.random = "seeded: NOT FOR PUBLICATION"`` and a ``NOT_FOR_PUBLICATION``
            file is written in the release directory.
        tag: the ledger reservation's tag, put in the partial directory's name so that
            the ledger can find (and finish or remove) it after a crash.
        force: replace an earlier output of eree (:func:`eree.data.outdir.check_out`).
        documents: text files of the release by name (e.g. ``{"report.html": page}``),
            written with the rest, atomically.
    """
    out_dir = check_output_dir(out_dir, force=force)
    check_finite(tables, extra)
    prefix = f".{out_dir.name}.partial-" + (f"{tag}-" if tag else "")
    tmp = make_temp_folder(out_dir, prefix)
    meta = {"eree.random": SEEDED_MARK} if seeded else None
    try:
        (tmp / "tables").mkdir()
        if seeded:
            (tmp / NOT_FOR_PUBLICATION).write_text(
                "This release was made with seeded (reproducible) noise: anyone who knows the "
                "seed can subtract the noise. It must not be published.\n",
                encoding="utf-8",
            )
        for qt in tables:
            qt.table.write_parquet(tmp / "tables" / f"{qt.name}.parquet", metadata=meta)
            if csv:
                qt.table.write_csv(tmp / "tables" / f"{qt.name}.csv")
        for rel, frame in (extra or {}).items():
            dest = tmp / rel
            if Path(rel).is_absolute() or ".." in Path(rel).parts:
                raise EreeError(f"extra release file {rel!r} must be a path inside the release")
            dest.parent.mkdir(parents=True, exist_ok=True)
            if rel.endswith(".parquet"):
                frame.write_parquet(dest, metadata=meta)
            elif rel.endswith(".csv"):
                frame.write_csv(dest)
            else:
                raise EreeError(f"extra release file {rel!r}: use .parquet or .csv")
        for name, text in (documents or {}).items():
            if Path(name).name != name:
                raise EreeError(f"release document {name!r} must be a plain file name")
            (tmp / name).write_text(text, encoding="utf-8")
        with open(tmp / "manifest.json", "w", encoding="utf-8") as fp:
            json.dump(manifest, fp, indent=2, default=_json_default)
            fp.write("\n")
        write_marker(tmp, "eree protect")
        check_output_dir(out_dir, force=force)
        put_in_place(tmp, out_dir)
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
