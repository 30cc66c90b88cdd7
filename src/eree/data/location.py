"""Where an input table is: a local path, or a URI read by the engine that supports it.

See docs/design.md#input-locations and docs/spark-cluster.md#inputs-by-uri.

A ``[data]`` path written ``scheme://…`` (``file://``, ``hdfs://``, ``s3a://``, ``s3://``,
``gs://``, ``abfss://``, …) is a URI: it is kept as the text given (a ``str``), never
resolved against the spec's folder, and recorded as given in the manifest. Any other
text is a local path (a :class:`~pathlib.Path`, resolved against the spec's folder by
the spec parser). The Spark engine hands a URI to Spark as it is; the Polars engine
reads ``file://`` URIs as the local path they name and refuses every other scheme
(:func:`local_path`).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

from eree.errors import SpecError

__all__ = [
    "DataPath",
    "data_path",
    "input_label",
    "is_uri",
    "local_path",
    "uri_has_password",
    "uri_name",
    "uri_scheme",
]

#: a local path, or a URI (text with a scheme)
DataPath = Path | str

#: ``scheme://`` at the start (RFC 3986 scheme syntax; one letter would be a drive)
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+)://")


def uri_scheme(p: DataPath | None) -> str | None:
    """The scheme of a URI (lower case), or ``None`` for a local path."""
    if not isinstance(p, str):
        return None
    m = _URI.match(p)
    return m.group(1).lower() if m else None


def is_uri(p: DataPath | None) -> bool:
    """Whether ``p`` is a URI (``scheme://…``) rather than a local path."""
    return uri_scheme(p) is not None


def uri_has_password(uri: str) -> bool:
    """Whether a URI carries a password (``scheme://user:password@host/…``)."""
    try:
        return urlsplit(uri).password is not None
    except ValueError:  # a malformed authority: let the reader refuse it
        return False


def uri_name(uri: str) -> str:
    """The last segment of a URI's path (its file name, for the format by suffix)."""
    return urlsplit(uri).path.rstrip("/").rsplit("/", 1)[-1]


def data_path(p: str | Path) -> DataPath:
    """A URI kept as the text given, anything else a local :class:`~pathlib.Path`."""
    return p if isinstance(p, str) and is_uri(p) else Path(p)


def input_label(p: DataPath) -> str:
    """How the manifest names an input: a URI as given, a local path by its file name."""
    return p if is_uri(p) and isinstance(p, str) else Path(p).name


def local_path(p: DataPath, key: str) -> Path:
    """``p`` as a local path for a reader on this machine (the Polars engine).

    A ``file://`` URI (``file:///abs/path`` or ``file://localhost/abs/path``,
    percent-escapes decoded) is the path it names; a local path is itself.

    Raises:
        SpecError: a URI of another scheme, or a ``file://`` URI naming another host;
            one line naming ``key`` and the remedy (the Spark engine).
    """
    scheme = uri_scheme(p)
    if scheme is None:
        return Path(p)
    assert isinstance(p, str)
    parts = urlsplit(p)
    if scheme == "file" and parts.netloc in ("", "localhost"):
        return Path(url2pathname(unquote(parts.path)))
    where = f"host {parts.netloc!r}" if scheme == "file" else f"scheme {scheme}://"
    raise SpecError(
        f"{key}: {p} ({where}) is read only by the Spark engine: set [engine] kind = "
        '"spark" (or eree protect --engine spark), or give a local path or a file:/// URI'
    )
