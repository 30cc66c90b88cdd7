"""Releases of in-memory tables: a notebook's Polars, pandas or Arrow frames.

:func:`protect_frames` takes the data as frames instead of files, for every data role
(ER-EE: ``workplace``, ``worker``, ``job`` or one joined ``jobs``; GEDP: ``path``, the
establishment table). The spec's ``[data]`` may then leave those paths out.

One path for files and frames: each frame is written once, as Parquet, to a private
temporary directory (mode 0700, removed when the release ends, also on error), and the
release runs exactly as it does on files — the same validation, the same fingerprint (it
is computed from the validated content, not from files), the same tables. Errors name the
frame (``file <in-memory worker frame>, row 3, column 'sex'``), never the temporary file.
"""

from __future__ import annotations

import tempfile
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eree.errors import DataValidationError, SpecError
from eree.mechanisms.noise import NoiseSource
from eree.release.protect import ReleaseResult, protect
from eree.release.spec import parse_spec

__all__ = ["ROLES", "protect_frames"]

#: the data roles a frame may fill, per ``[data] kind``
ROLES = {"eree": ("workplace", "worker", "job", "jobs"), "establishments": ("path",)}


def _to_polars(frame: Any, role: str) -> Any:
    import polars as pl

    if isinstance(frame, pl.DataFrame):
        return frame
    if isinstance(frame, pl.LazyFrame):
        return frame.collect()
    try:
        return pl.from_pandas(frame) if hasattr(frame, "to_numpy") else pl.from_arrow(frame)
    except (TypeError, ValueError, ImportError) as e:
        raise SpecError(
            f"frames[{role!r}]: a Polars, pandas or Arrow table is needed "
            f"(got {type(frame).__name__}: {e})"
        ) from None


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
    with tempfile.TemporaryDirectory(prefix="eree-frames-") as tmp:
        written: dict[str, str] = {}
        for role, frame in frames.items():
            name = "establishments" if role == "path" else role
            target = Path(tmp) / f"{name}.parquet"
            _to_polars(frame, role).write_parquet(target)
            data[role] = str(target)
            written[str(target)] = written[str(target.resolve())] = _label(role)
        raw["data"] = data
        plan = parse_spec(raw, base)
        try:
            return protect(plan, out_dir, source, **kwargs)
        except DataValidationError as e:
            label = written.get(e.file) or written.get(str(Path(e.file).resolve()))
            if label is None:
                raise
            message = str(e).replace(e.file, label)
            e.args = (message,)
            e.file = label
            raise
