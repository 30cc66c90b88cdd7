"""Writing a release: tables and manifest, atomically (docs/design.md#release-outputs)."""

from __future__ import annotations

import gzip
import io
import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from eree import __version__
from eree.data.outdir import check_out, make_temp_folder, put_in_place, write_marker
from eree.errors import EreeError
from eree.mechanisms.base import Measurement
from eree.privacy.release_check import (
    NOT_FOR_PUBLICATION,
    SEEDED_KEY,
    SEEDED_MARK,
    SEEDED_NAME_MARK,
    seeded_name,
)
from eree.release.tables import QueryTable


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
    """Refuse to publish a non-finite number (docs/design.md#validation, #what-may-be-published).

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
                    "(a noise scale or a sum overflowed; check epsilon, alpha, mu, "
                    "[privacy].distance and the data's magnitudes); nothing was written"
                )


class ReleaseWriter:
    """Writes a release into a temporary sibling directory, renamed into place at the end.

    Tables are written as they are produced (:meth:`write_table`), so a release never
    holds more than one table in memory when nothing after the mechanisms needs them;
    :meth:`finish` writes the extra files and ``manifest.json`` and renames the
    directory into place. Used as a context manager: on any error (or without
    :meth:`finish`) the temporary directory is removed, so a failed run leaves no
    partial output. An existing non-empty ``out_dir`` is never overwritten, and a
    table holding a non-finite value is refused (:func:`check_finite`).

    Args:
        out_dir: the release directory (absent or empty).
        csv: write ``tables/<query>.csv`` next to each Parquet table.
        seeded: the noise was seeded: every Parquet file carries the metadata
            ``eree.random = "seeded: NOT FOR PUBLICATION"``, every CSV and agency-layout
            file has ``NOT-FOR-PUBLICATION`` in its name before the extension
            (:func:`~eree.privacy.release_check.seeded_name`; a gzip file also in its
            header's file-name field), and a ``NOT_FOR_PUBLICATION`` file is written in
            the release directory.
        tag: the ledger reservation's tag, put in the partial directory's name so that
            the ledger can find (and finish or remove) it after a crash.
        force: replace an earlier output of eree (:func:`eree.data.outdir.check_out`)
            once the new release is complete.
    """

    def __init__(
        self,
        out_dir: Path,
        *,
        csv: bool = True,
        seeded: bool = False,
        tag: str | None = None,
        force: bool = False,
    ) -> None:
        self.force = force
        self.out_dir = check_output_dir(out_dir, force=force)
        self.csv = csv
        self.seeded = seeded
        self.tag = tag
        self._meta = {SEEDED_KEY: SEEDED_MARK} if seeded else None
        self._tmp: Path | None = None

    def __enter__(self) -> ReleaseWriter:
        prefix = f".{self.out_dir.name}.partial-" + (f"{self.tag}-" if self.tag else "")
        self._tmp = make_temp_folder(self.out_dir, prefix)
        (self._tmp / "tables").mkdir()
        if self.seeded:
            (self._tmp / NOT_FOR_PUBLICATION).write_text(
                "This release was made with seeded (reproducible) noise: anyone who knows the "
                "seed can subtract the noise. It must not be published.\n",
                encoding="utf-8",
            )
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self._tmp is not None:  # not finished: remove everything written so far
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    @property
    def _dir(self) -> Path:
        if self._tmp is None:
            raise RuntimeError("ReleaseWriter used outside its 'with' block")
        return self._tmp

    def write_table(self, qt: QueryTable) -> WrittenTable:
        """Write one table (Parquet, and CSV when asked); return its on-disk description.

        Key columns held as categories (:class:`polars.Enum`, as the engines give them
        for large tables) are written as text, in streaming batches, so the file is the
        same as for a text-keyed table and no text copy of the whole table is made.
        """
        check_finite([qt])
        frame = qt.table.lazy().with_columns(
            pl.col(c).cast(pl.Utf8)
            for c, t in qt.table.schema.items()
            if isinstance(t, pl.Enum | pl.Categorical)
        )
        tables = self._dir / "tables"
        frame.sink_parquet(tables / f"{qt.name}.parquet", metadata=self._meta)
        if self.csv:
            frame.sink_csv(tables / self.name(f"{qt.name}.csv"))
        return WrittenTable(
            qt.name,
            self.out_dir / "tables" / f"{qt.name}.parquet",
            qt.table.height,
            qt.uncertainty,
            qt.notes,
        )

    def name(self, rel: str) -> str:
        """The name a text file of the release is written under (seeded: marked)."""
        return seeded_name(rel) if self.seeded else rel

    def write_bytes(self, rel: str, data: bytes) -> str:
        """Write a further file of the release (e.g. an agency-layout file).

        Returns:
            The path it was written under, inside the release: ``rel``, or in a seeded
            release ``rel`` marked (:meth:`name`), a gzip file's header naming it
            ``NOT-FOR-PUBLICATION`` too (its content unchanged).
        """
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            raise EreeError(f"release file {rel!r} must be a path inside the release")
        rel = self.name(rel)
        if self.seeded and rel.endswith(".gz"):
            data = _gzip_marked(gzip.decompress(data))
        dest = self._dir / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        return rel

    def staged(self, name: str) -> Path:
        """Where table ``name`` is while the release is being written."""
        return self._dir / "tables" / f"{name}.parquet"

    def finish(
        self,
        manifest: dict[str, Any],
        extra: Mapping[str, pl.DataFrame] | None = None,
        documents: Mapping[str, str] | None = None,
    ) -> Path:
        """Write the extra files and ``manifest.json``; rename the release into place.

        Args:
            manifest: the manifest.
            extra: further files of the release, relative path → frame (``.parquet`` or
                ``.csv`` by suffix), e.g. ``{"microdata.parquet": frame}``.
            documents: text files of the release by name (e.g. ``{"report.html": page}``).
        """
        tmp = self._dir
        check_finite([], extra)
        for rel, frame in (extra or {}).items():
            dest = tmp / rel
            if Path(rel).is_absolute() or ".." in Path(rel).parts:
                raise EreeError(f"extra release file {rel!r} must be a path inside the release")
            dest.parent.mkdir(parents=True, exist_ok=True)
            if rel.endswith(".parquet"):
                frame.write_parquet(dest, metadata=self._meta)
            elif rel.endswith(".csv"):
                frame.write_csv(tmp / self.name(rel))
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
        check_output_dir(self.out_dir, force=self.force)
        put_in_place(tmp, self.out_dir)
        self._tmp = None
        return self.out_dir


def _gzip_marked(data: bytes) -> bytes:
    """``data`` gzip-compressed, the header's original-file-name field the seeded mark."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename=SEEDED_NAME_MARK, fileobj=buf, mode="wb", mtime=0) as gz:
        gz.write(data)
    return buf.getvalue()


@dataclass(frozen=True)
class WrittenTable:
    """A table already written to its release: everything but the values stays in memory.

    Attributes:
        name: the query name (file stem).
        path: where the table is once the release is in place.
        cells: number of published cells.
        uncertainty: statistic → how its std/CI were obtained (or why withheld).
        notes: public remarks (warnings, defaults used).
        measurements: none (a written table is not post-processed any more).
    """

    name: str
    path: Path
    cells: int
    uncertainty: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    measurements: tuple[Measurement, ...] = ()

    @property
    def table(self) -> pl.DataFrame:
        """The published table, read back from the release."""
        return pl.read_parquet(self.path)


@dataclass(frozen=True)
class UnwrittenTable:
    """A query answered and charged but not written (``publish = false``).

    Its answers were used by the release (pnc's bounds) and exist nowhere else: no file,
    no report section; the manifest lists it with ``file = null``.

    Attributes:
        name: the query name.
        cells: number of cells answered (per establishment for an identity query).
        uncertainty: statistic → how its std/CI were obtained.
        notes: public remarks.
        measurements: none (the answers are not kept).
    """

    name: str
    cells: int
    uncertainty: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    measurements: tuple[Measurement, ...] = ()

    @classmethod
    def of(cls, qt: QueryTable) -> UnwrittenTable:
        """The description of ``qt``, whose values are dropped."""
        return cls(qt.name, qt.table.height, dict(qt.uncertainty), tuple(qt.notes))


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

    All tables at once, through a :class:`ReleaseWriter` (same arguments): nothing is
    written when a table holds a non-finite value (:func:`check_finite`).

    Args:
        documents: text files of the release by name (e.g. ``{"report.html": page}``),
            written with the rest, atomically.
    """
    writer = ReleaseWriter(out_dir, csv=csv, seeded=seeded, tag=tag, force=force)
    check_finite(tables, extra)
    with writer:
        for qt in tables:
            writer.write_table(qt)
        return writer.finish(manifest, extra, documents)


def _json_default(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, tuple | set | frozenset):
        return list(o)
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
