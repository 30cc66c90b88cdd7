"""Releases of in-memory tables: a notebook's Polars, pandas or Arrow frames.

:func:`protect_frames` takes the data as frames instead of files, for every data role
(ER-EE: ``workplace``, ``worker``, ``job`` or one joined ``jobs``; GEDP: ``path``, the
establishment table). The spec's ``[data]`` may then leave those paths out.

One path for files and frames: each frame is written once, as Parquet, and the release
runs exactly as it does on files — the same validation, the same fingerprint (it is
computed from the validated content, not from files), the same tables. Errors name the
frame (``file <in-memory worker frame>, row 3, column 'sex'``), never a temporary file,
and never a cell's value (a pandas column Arrow cannot convert is named by its first
row that breaks the conversion).

Nothing of the data reaches a disk, even when the process is killed (``kill -9``): on
Linux the Parquet bytes live in an anonymous memory file (``memfd_create``), which the
kernel frees when the process ends however it ends; the release reads it through a
symbolic link ``<name>.parquet → /proc/<pid>/fd/<n>`` in a private temporary directory
(mode 0700, removed when the release ends). A kill leaves at most that directory of
dangling links, which holds no data and which the next :func:`protect_frames` removes.
Where there is no ``memfd_create`` the Parquet file is written in that directory
(removed when the release ends, also on error; after a kill, by the next call).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from eree.errors import DataValidationError, SpecError
from eree.mechanisms.noise import NoiseSource
from eree.release.protect import ReleaseResult, protect
from eree.release.spec import parse_spec

__all__ = ["ROLES", "protect_frames"]

#: prefix of the private directory of one call: ``eree-frames-<pid>-<random>``
_PREFIX = "eree-frames-"

#: the data roles a frame may fill, per ``[data] kind``
ROLES = {"eree": ("workplace", "worker", "job", "jobs"), "establishments": ("path",)}


def _to_polars(frame: Any, role: str) -> Any:
    import polars as pl

    if isinstance(frame, pl.DataFrame):
        return frame
    if isinstance(frame, pl.LazyFrame):
        return frame.collect()
    pandas = hasattr(frame, "to_numpy") and hasattr(frame, "columns")
    try:
        return pl.from_pandas(frame) if pandas else pl.from_arrow(frame)
    except (TypeError, ValueError, ImportError) as e:
        if pandas:
            _raise_unconvertible(frame, role)
        # the message of a non-table object names its type, never a cell (no table to read)
        raise SpecError(
            f"frames[{role!r}]: a Polars, pandas or Arrow table is needed "
            f"(got {type(frame).__name__})"
        ) from None if not isinstance(e, ImportError) else e


def _raise_unconvertible(frame: Any, role: str) -> None:
    """Name the first column of a pandas frame Arrow cannot convert, and its first bad row.

    The converter's own message quotes the cell, so it is never shown: the row is the
    shortest prefix of the column that does not convert (bisection), 1-based.
    """
    import polars as pl

    for column in frame.columns:
        values = frame[column]
        try:
            pl.from_pandas(values.to_frame())
            continue
        except (TypeError, ValueError):
            pass
        good, bad = 0, len(values)  # a prefix of `good` rows converts, of `bad` rows not
        while bad - good > 1:
            mid = (good + bad) // 2
            try:
                pl.from_pandas(values.iloc[:mid].to_frame())
                good = mid
            except (TypeError, ValueError):
                bad = mid
        raise DataValidationError(
            "values of mixed types that cannot be read as one column",
            file=_label(role),
            row=bad,
            column=str(column),
            rule="type",
        )
    raise DataValidationError(
        "the frame cannot be converted to a table", file=_label(role), rule="type"
    )


def _label(role: str) -> str:
    return f"<in-memory {'establishment' if role == 'path' else role} frame>"


def protect_frames(
    spec: Mapping[str, Any] | str | Path,
    frames: Mapping[str, Any],
    out_dir: str | Path,
    source: NoiseSource,
    **kwargs: Any,
) -> ReleaseResult:
    """Release in-memory tables under a spec (a dict, TOML text, or a spec file).

    Args:
        spec: the release spec; its ``[data]`` paths for the roles in ``frames`` may be
            absent (they are filled), its other keys are as for a file release.
        frames: role → table (``pl.DataFrame``/``LazyFrame``, ``pandas.DataFrame`` or a
            ``pyarrow.Table``); roles per kind in :data:`ROLES`.
        out_dir, source, kwargs: as :func:`eree.release.protect.protect` (``ledger``, …).

    Raises:
        SpecError: an unknown role, a role given both as a path and a frame, or an object
            that is not a table; DataValidationError naming the frame; the errors of
            :func:`~eree.release.protect.protect`.
    """
    base = Path.cwd()
    if isinstance(spec, Path) or (isinstance(spec, str) and Path(spec).suffix == ".toml"):
        path = Path(spec)
        raw: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
        base = path.resolve().parent
    elif isinstance(spec, str):
        raw = tomllib.loads(spec)
    else:
        raw = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in spec.items()}
    data = dict(raw.get("data") or {})
    kind = data.get("kind", "eree")
    roles = ROLES.get(kind, ())
    for role in frames:
        if role not in roles:
            raise SpecError(
                f"frames: {role!r} is not a data role of kind {kind!r} (roles: {', '.join(roles)})"
            )
        if role in data:
            raise SpecError(f"frames: [data].{role} is given both as a path and as a frame")
    _sweep()
    tmp = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-")
    try:
        with contextlib.ExitStack() as held:
            written: dict[str, str] = {}
            for role, frame in frames.items():
                name = "establishments" if role == "path" else role
                target = Path(tmp) / f"{name}.parquet"
                held.enter_context(_parquet(_to_polars(frame, role), target))
                data[role] = str(target)
                written[str(target)] = _label(role)
            raw["data"] = data
            plan = parse_spec(raw, base)
            # the parser follows links; the release reads the frames through their link
            links: dict[str, Any] = {role: Path(data[role]) for role in frames}
            linked: Any = dataclasses.replace(plan.data, **links)
            plan = dataclasses.replace(plan, data=linked)
            try:
                return protect(plan, out_dir, source, **kwargs)
            except DataValidationError as e:
                label = written.get(e.file) or written.get(str(Path(e.file).absolute()))
                if label is None:
                    raise
                message = str(e).replace(e.file, label)
                e.args = (message,)
                e.file = label
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def _parquet(frame: Any, target: Path) -> Iterator[None]:
    """``frame`` as Parquet at ``target``: in memory behind a link where Linux allows it."""
    memfd = getattr(os, "memfd_create", None)
    if memfd is None or not Path(f"/proc/{os.getpid()}/fd").is_dir():
        frame.write_parquet(target)
        yield
        return
    fd = memfd("eree-frame", getattr(os, "MFD_CLOEXEC", 0))
    try:
        with os.fdopen(os.dup(fd), "wb") as fh:
            frame.write_parquet(fh)
        os.symlink(f"/proc/{os.getpid()}/fd/{fd}", target)
        yield
    finally:
        os.close(fd)


def _sweep() -> None:
    """Remove what a killed call of this user left: directories of a process that is gone."""
    root = Path(tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for d in root.glob(f"{_PREFIX}*-*"):
            pid = d.name.removeprefix(_PREFIX).split("-", 1)[0]
            if not pid.isdigit() or int(pid) == os.getpid() or _alive(int(pid)):
                continue
            with contextlib.suppress(OSError):
                if d.is_dir() and not d.is_symlink() and d.stat().st_uid == os.getuid():
                    shutil.rmtree(d, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
