"""Reading input tables (CSV, CSV.gz, Parquet) with declared column types.

Also the reusable row-level checks of docs/design.md#validation.

Every problem is a :class:`~eree.errors.DataValidationError` naming the file, the 1-based
data row (header excluded) and the column. Messages never contain a value read from a
data column, except ids where a caller explicitly asks for them (ids may be printed,
docs/design.md#validation): a row that does not parse, is missing, or is outside its domain is
identified by its position only, because worker attributes and establishment measures
are confidential.

Nothing is dropped or coerced silently: a value that does not parse as its declared type
rejects the whole input, and so do blank ids and NaN/infinite/negative measures (through
the helpers below).
"""

from __future__ import annotations

import codecs
import csv
import difflib
import gzip
import io
import zlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import polars as pl

from eree.data.location import is_uri, uri_name
from eree.errors import DataValidationError

__all__ = [
    "CSV_SUFFIXES",
    "TableFormat",
    "check_domain",
    "check_input_file",
    "check_nonnegative_finite",
    "check_not_missing",
    "check_unique",
    "csv_header",
    "csv_records",
    "first_repeat",
    "first_true",
    "missing_column_error",
    "read_header",
    "read_table",
    "table_format",
]

TableFormat = Literal["csv", "parquet"]

_PARQUET_SUFFIXES = (".parquet", ".pq")
#: file names read as CSV (case-insensitive; anything else by its own suffix)
CSV_SUFFIXES = (".csv", ".csv.gz", ".txt", ".txt.gz")


def table_format(path: str | Path) -> TableFormat:
    """The format of ``path`` from its name: ``.parquet``/``.pq`` or ``.csv``/``.csv.gz``.

    A URI's name is the last segment of its path (:func:`eree.data.location.uri_name`).

    Raises:
        DataValidationError: the suffix is not one of the supported ones.
    """
    name = (uri_name(path) if isinstance(path, str) and is_uri(path) else Path(path).name).lower()
    if name.endswith(_PARQUET_SUFFIXES):
        return "parquet"
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    raise DataValidationError(
        "unsupported file type; expected .csv, .csv.gz or .parquet",
        file=str(path),
        rule="file-type",
    )


def _open_text(path: Path) -> io.TextIOBase:
    if path.name.lower().endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


#: what reading a CSV or gzip stream can raise on a corrupt, truncated or non-UTF-8 file
_CSV_READ_ERRORS = (OSError, EOFError, zlib.error, UnicodeDecodeError, csv.Error)


def _unreadable_csv(path: Path, exc: BaseException, row: int | None = None) -> DataValidationError:
    """The error for a CSV that cannot be read; says why by exception type, never by content."""
    gz = path.name.lower().endswith(".gz")
    if isinstance(exc, EOFError | zlib.error | gzip.BadGzipFile):
        why = "corrupt or truncated gzip stream"
    elif isinstance(exc, UnicodeDecodeError):
        why = "not UTF-8 text"
    elif isinstance(exc, csv.Error):
        why = "malformed CSV (check quoting)"
    elif gz and isinstance(exc, OSError):
        why = "corrupt or truncated gzip stream"
    else:
        why = f"cannot be read ({type(exc).__name__})"
    return DataValidationError(why, file=str(path), row=row, rule="unparseable")


def check_input_file(p: Path) -> None:
    """Refuse a data path that is missing or not a regular file (e.g. a directory).

    Raises:
        DataValidationError: ``rule`` ``file-missing``.
    """
    if p.is_dir():
        raise DataValidationError(
            "is a directory, not a data file", file=str(p), rule="file-missing"
        )
    if p.exists() and not p.is_file():  # reading a FIFO would block, a device never end
        raise DataValidationError(
            "is not a regular file (a pipe or a device)", file=str(p), rule="file-missing"
        )
    if not p.is_file():
        raise DataValidationError("file not found", file=str(p), rule="file-missing")


def _looks_like_number(field: str) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def _is_header(names: Sequence[str], expected: Collection[str] | None) -> bool:
    """Whether a CSV's first line may be printed as a header.

    A first line is taken for a header (and its names may appear in messages) only when
    it names at least one expected column and no field of it reads as a number; anything
    else may be a data row, whose fields are confidential (docs/design.md#validation).
    """
    if expected is None or not any(n in expected for n in names):
        return False
    return not any(_looks_like_number(n) for n in names if n.strip())


def read_header(path: str | Path, expected: Collection[str] | None = None) -> list[str]:
    """Column names of a CSV (first line) or Parquet (schema) file, exactly as stored.

    Args:
        path: the file.
        expected: column names the caller needs. With them, a CSV whose first line names
            none of them is refused as having no header, without printing any field of
            that line (it may be a data row). Without them, duplicated names are reported
            without the name.

    Raises:
        DataValidationError: the file is missing, a directory, empty, unreadable, has no
            header or has duplicated column names.
    """
    p = Path(path)
    fmt = table_format(p)
    check_input_file(p)
    if fmt == "parquet":
        try:
            names = list(pl.read_parquet_schema(p))
        except Exception as exc:  # pyarrow / polars raise various types
            raise DataValidationError(
                f"not a readable Parquet file ({type(exc).__name__})",
                file=str(p),
                rule="unparseable",
            ) from None
        header_ok = True
    else:
        try:
            with _open_text(p) as fh:
                first = next(csv.reader(fh, strict=True), None)
        except _CSV_READ_ERRORS as exc:
            raise _unreadable_csv(p, exc) from None
        return csv_header(first, str(p), expected)
    _check_unique_names(names, str(p), header_ok)
    return names


def csv_header(
    first: Sequence[str] | None, file: str, expected: Collection[str] | None = None
) -> list[str]:
    """A CSV's first record checked as its header, as :func:`read_header` checks it.

    For a reader that gets the first record itself (the Spark engine reading a URI);
    ``file`` is what errors name.

    Raises:
        DataValidationError: no first record (``empty``), a first record that does not
            look like a header (``no-header``), duplicated names (``duplicate-column``).
    """
    if first is None:
        raise DataValidationError("file is empty (no header)", file=file, rule="empty")
    names = list(first)
    header_ok = _is_header(names, expected)
    if expected is not None and not header_ok:
        wanted = sorted(expected)
        raise DataValidationError(
            "the first line does not look like a header (it names none of the required "
            f"columns {', '.join(repr(c) for c in wanted)}, or holds numbers); is the "
            "header line missing? (its fields are not shown: it may be a data row)",
            file=file,
            row=None,
            rule="no-header",
        )
    _check_unique_names(names, file, header_ok)
    return names


def _check_unique_names(names: Sequence[str], file: str, header_ok: bool) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise DataValidationError(
                "column name appears more than once in the header",
                file=file,
                column=name if header_ok else None,
                rule="duplicate-column",
            )
        seen.add(name)


def missing_column_error(
    file: str, missing: Sequence[str], present: Sequence[str]
) -> DataValidationError:
    """The error for required columns absent from a table (both engines' loaders).

    Names the missing columns, the closest present name to the first (a likely typo)
    and the columns the file has: column names, never a value.
    """
    first = missing[0]
    hint = difflib.get_close_matches(first, present, n=1)
    msg = f"required column(s) missing: {', '.join(repr(m) for m in missing)}"
    if hint:
        msg += f" (did you mean {hint[0]!r}?)"
    msg += f"; the file has: {', '.join(repr(c) for c in present)}"
    return DataValidationError(msg, file=file, column=first, rule="missing-column")


_BLOCK = 1 << 22  # bytes per block of the vectorised record check


def _records_fast(path: Path, width: int) -> int | None:
    """:func:`_scan_csv` for a valid CSV without quotes, vectorised; ``None`` otherwise.

    Without a quote character a CSV record is a line and its fields are separated by
    commas, so counting commas per line (NumPy, one block of bytes at a time) proves what
    Python's strict reader would: every record has ``width`` fields (a blank line counts
    as a record and is not checked), and the file is UTF-8. A file with a quote, a NUL,
    a carriage return that does not end a line, or any record of another width returns
    ``None``: the strict reader then reads it and names the problem and its row.
    """
    import numpy as np

    opener = gzip.open if path.name.lower().endswith(".gz") else open
    records = -1  # the header is the first line
    tail = b""
    first = True
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with opener(path, "rb") as fh:
            while True:
                block = fh.read(_BLOCK)
                last = not block
                if first and block.startswith(codecs.BOM_UTF8):
                    block = block[len(codecs.BOM_UTF8) :]
                first = False
                decoder.decode(block, final=last)  # raises on bad UTF-8
                data = tail + block
                if last:
                    if not data:
                        break
                    if not data.endswith(b"\n"):
                        data += b"\n"
                    tail = b""
                else:
                    cut = data.rfind(b"\n") + 1
                    data, tail = data[:cut], data[cut:]
                    if not data:
                        continue
                if b'"' in data or b"\0" in data or data.count(b"\r") != data.count(b"\r\n"):
                    return None
                a = np.frombuffer(data, dtype=np.uint8)
                ends = np.flatnonzero(a == 10)
                starts = np.concatenate(([0], ends[:-1] + 1))
                # each line's bytes, newline included (never empty): its commas
                per_line = np.add.reduceat(a == 44, starts, dtype=np.int64)
                length = ends - starts
                crlf = a[np.maximum(ends - 1, 0)] == 13
                blank = (length == 0) | ((length == 1) & crlf)
                if records < 0:  # the header line: its width was read by the strict reader
                    per_line, blank = per_line[1:], blank[1:]
                if np.any((per_line != width - 1) & ~blank):
                    return None
                records += len(ends)
                if last:
                    break
    except (OSError, EOFError, zlib.error, UnicodeDecodeError):
        return None
    return max(records, 0)


def _scan_csv(path: Path, width: int) -> int:
    """Check every CSV record has ``width`` fields; return the number of data records.

    A file without quotes is checked vectorised (:func:`_records_fast`); any other
    file, and any file that fails that check, is read with Python's strict CSV reader,
    so a corrupt or truncated gzip stream, bad UTF-8, bad quoting or a record with more
    or fewer fields than the header is found here and reported by its 1-based data row
    (header excluded), never by content. A blank line counts as a record (of missing values,
    which the callers' checks reject), as it does for the reader that loads the data.

    Raises:
        DataValidationError: ``rule`` ``field-count`` or ``unparseable``.
    """
    fast = _records_fast(path, width)
    if fast is not None:
        return fast
    row = 0
    try:
        with _open_text(path) as fh:
            reader = csv.reader(fh, strict=True)
            next(reader, None)
            for rec in reader:
                row += 1
                if rec and len(rec) != width:
                    raise DataValidationError(
                        f"row has {'more' if len(rec) > width else 'fewer'} fields "
                        f"({len(rec)}) than the header ({width})",
                        file=str(path),
                        row=row,
                        rule="field-count",
                    )
    except _CSV_READ_ERRORS as exc:
        raise _unreadable_csv(
            path, exc, row=row + 1 if isinstance(exc, csv.Error) else None
        ) from None
    return row


def csv_records(path: str | Path, header: Sequence[str]) -> int:
    """The number of data records :func:`read_table` reads from a CSV, checked as it checks them.

    For a reader other than Polars' (the Spark engine's), which must accept exactly the
    files :func:`read_table` accepts: every record has the header's width, the file is
    UTF-8 and parses, with the same one-line errors. A plain file (no quote, NUL or
    stray carriage return) is checked in bounded memory; any other file is read here as
    :func:`read_table` reads it (one column). A blank line counts as a record, as it
    does for :func:`read_table` (which then refuses it as a row of missing values).

    Raises:
        DataValidationError: ``rule`` ``field-count`` or ``unparseable``.
    """
    p = Path(path)
    fast = _records_fast(p, len(header))
    if fast is not None:
        return fast
    return _read_raw(p, [header[0]], list(header)).height


def _read_raw(path: Path, columns: list[str], header: list[str]) -> pl.DataFrame:
    """Read ``columns`` of ``path``; CSV columns all as strings (parsed later)."""
    if table_format(path) == "parquet":
        try:
            return pl.read_parquet(path, columns=columns)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            raise DataValidationError(
                f"could not read Parquet data ({type(exc).__name__})",
                file=str(path),
                rule="unparseable",
            ) from None
    n_records = _scan_csv(path, len(header))
    try:
        df = pl.read_csv(
            path,
            columns=columns,
            infer_schema=False,
            encoding="utf8",
            raise_if_empty=False,
        )
    except BaseException as exc:  # a Rust panic is a BaseException
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        # Polars' message may quote the offending line: never pass it on.
        raise DataValidationError(
            f"could not be parsed as CSV ({type(exc).__name__}; check quoting and encoding)",
            file=str(path),
            rule="unparseable",
        ) from None
    if df.height != n_records:
        raise DataValidationError(
            "the CSV reader and the strict check disagree on the number of rows; check "
            "quoting and line endings",
            file=str(path),
            rule="unparseable",
        )
    return df.select(columns)


def _describe(dtype: pl.DataType) -> str:
    if dtype == pl.Utf8:
        return "text"
    if dtype.is_integer():
        return "an integer"
    if dtype.is_float():
        return "a number"
    return str(dtype)


def _cast_column(s: pl.Series, target: pl.DataType, path: Path) -> pl.Series:
    """Cast ``s`` to ``target`` or raise naming the first row that does not parse."""
    src = s.dtype
    if src == target:
        return s
    if target == pl.Utf8:
        if src in (pl.Categorical, pl.Null) or isinstance(src, pl.Enum) or src.is_integer():
            return s.cast(pl.Utf8)
        raise DataValidationError(
            f"column is stored as {src}, expected text or integer codes",
            file=str(path),
            column=s.name,
            rule="type",
        )
    if not (
        src.is_numeric() or src in (pl.Utf8, pl.Categorical, pl.Null) or isinstance(src, pl.Enum)
    ):
        # booleans, dates, times and nested types are never numbers (docs/design.md#validation)
        raise DataValidationError(
            f"column is stored as {src}, expected {_describe(target)}",
            file=str(path),
            column=s.name,
            rule="type",
        )
    if src == pl.Categorical or isinstance(src, pl.Enum):
        s = s.cast(pl.Utf8)
        src = s.dtype
    try:
        out = s.cast(target, strict=False)
    except Exception:
        raise DataValidationError(
            f"column of type {src} cannot be read as {_describe(target)}",
            file=str(path),
            column=s.name,
            rule="type",
        ) from None
    bad = out.is_null() & s.is_not_null()
    if target.is_integer() and src.is_float():
        # float -> int must be lossless (no silent truncation of 1.5 to 1)
        bad = bad | (out.cast(pl.Float64) != s.cast(pl.Float64)).fill_null(False)
    idx = first_true(bad)
    if idx is not None:
        raise DataValidationError(
            f"value does not parse as {_describe(target)}",
            file=str(path),
            row=idx + 1,
            column=s.name,
            rule="type",
        )
    return out


def read_table(
    path: str | Path,
    columns: Mapping[str, pl.DataType | type[pl.DataType]],
    *,
    optional: Mapping[str, pl.DataType | type[pl.DataType]] | None = None,
    allow_empty: bool = False,
) -> pl.DataFrame:
    """Read the declared columns of a CSV, CSV.gz or Parquet file with their types.

    CSV files are read as text and each column is then cast to its declared type; the
    first value that does not parse is reported by row and column. Parquet columns are
    cast the same way (integer ids become text; a float is accepted as an integer only
    when it is integral). Other columns of the file are ignored. Row order is kept and
    no row is dropped (a blank line in a CSV becomes a row of missing values, which the
    callers' missing-value checks then reject).

    Args:
        path: the file.
        columns: required columns and their types, e.g. ``{"workplace_id": pl.Utf8}``.
        optional: columns read (and type-checked) only when the file has them.
        allow_empty: accept a file with a header and no data rows (refused by default:
            a release of nothing is a mistake in the input).

    Returns:
        A frame with the required columns, then the optional ones present, in the order
        given.

    Raises:
        DataValidationError: file missing/unreadable (``rule`` ``file-missing``,
            ``unparseable``), no header (``no-header``), a CSV row with more or fewer
            fields than the header (``field-count``), no data rows (``no-rows``),
            required column missing (``missing-column``), value that does not parse or
            a column of the wrong type (``type``).
    """
    p = Path(path)
    if p.is_dir():  # a partitioned table: its Parquet files in sorted order, one frame
        return _read_folder(p, columns, optional, allow_empty)
    header = read_header(p, expected=[*columns, *(optional or {})])
    present = set(header)
    missing = [c for c in columns if c not in present]
    if missing:
        raise missing_column_error(str(p), missing, header)
    wanted: dict[str, pl.DataType] = {c: _as_dtype(t) for c, t in columns.items()}
    for c, t in (optional or {}).items():
        if c in present and c not in wanted:
            wanted[c] = _as_dtype(t)
    df = _read_raw(p, list(wanted), header)
    if df.height == 0 and not allow_empty:
        raise DataValidationError("file has a header but no data rows", file=str(p), rule="no-rows")
    return pl.DataFrame([_cast_column(df.get_column(c), t, p) for c, t in wanted.items()])


def _read_folder(
    p: Path,
    columns: Mapping[str, pl.DataType | type[pl.DataType]],
    optional: Mapping[str, pl.DataType | type[pl.DataType]] | None,
    allow_empty: bool,
) -> pl.DataFrame:
    """A folder of Parquet files (a partitioned table) read as one table.

    The ``*.parquet`` files under ``p`` (recursively) in sorted order, each read and
    checked as a file; a later error's row counts the rows of the files in that order
    (the folder is named as the file).
    """
    files = sorted(f for f in p.rglob("*.parquet"))
    if not files:
        raise DataValidationError(
            "folder holds no .parquet file (a partitioned table is a folder of Parquet files)",
            file=str(p),
            rule="file-missing",
        )
    parts = [read_table(f, columns, optional=optional, allow_empty=True) for f in files]
    names = [*columns, *(c for c in (optional or {}) if any(c in f.columns for f in parts))]
    df = pl.concat(
        [f.with_columns(pl.lit(None, dtype=_as_dtype((optional or {})[c])).alias(c)
                        for c in names if c not in f.columns).select(names) for f in parts]
    )  # fmt: skip
    if df.height == 0 and not allow_empty:
        raise DataValidationError("file has a header but no data rows", file=str(p), rule="no-rows")
    return df


def _as_dtype(t: pl.DataType | type[pl.DataType]) -> pl.DataType:
    return t() if isinstance(t, type) else t


# --------------------------------------------------------------------------------------
# Row-level checks. Each raises on the FIRST offending row (1-based, header excluded).
# ``row_offset`` shifts the reported row when ``df`` is a slice of a larger file.
# --------------------------------------------------------------------------------------


def first_true(mask: pl.Series) -> int | None:
    """0-based index of the first ``True`` of a boolean series (nulls count as False)."""
    if mask.len() == 0:
        return None
    m = mask.fill_null(False)
    if not m.any():
        return None
    return int(m.arg_max())  # type: ignore[arg-type]


def _missing_mask(s: pl.Series) -> pl.Series:
    if s.dtype == pl.Utf8:
        return s.is_null() | (s.str.strip_chars() == "")
    return s.is_null()


def check_not_missing(
    df: pl.DataFrame,
    columns: Iterable[str],
    file: str | Path,
    *,
    rule: str = "missing-value",
    row_offset: int = 0,
) -> None:
    """Reject null or blank values in ``columns``.

    Raises:
        DataValidationError: naming the first row and column with a missing value.
    """
    for c in columns:
        idx = first_true(_missing_mask(df.get_column(c)))
        if idx is not None:
            what = "id" if rule == "missing-id" else "value"
            raise DataValidationError(
                f"missing {what} (null or blank)",
                file=str(file),
                row=idx + 1 + row_offset,
                column=c,
                rule=rule,
            )


def first_repeat(s: pl.Series) -> tuple[int, int, Any] | None:
    """The first value of ``s`` seen before: (its index, the first occurrence's, value).

    ``None`` when every value is distinct (checked first by hashes: distinct hashes imply
    distinct values).
    """
    if s.null_count() == 0 and s.hash().n_unique() == s.len():
        return None
    idx = first_true(~s.is_first_distinct())
    if idx is None:
        return None
    value = s[idx]
    return idx, first_true(s == value) or 0, value


def check_unique(
    df: pl.DataFrame,
    column: str,
    file: str | Path,
    *,
    rule: str = "duplicate-id",
    message: str = "id appears more than once (first in row {first_row})",
    row_offset: int = 0,
) -> None:
    """Reject a value of ``column`` occurring twice; the second occurrence is reported.

    The message names the row of the first occurrence, never the value (not even an id:
    an error message repeats no data value, docs/design.md#validation).

    Args:
        message: format string with the field ``first_row``.

    Raises:
        DataValidationError: naming the row of the first repeated id.
    """
    repeat = first_repeat(df.get_column(column))
    if repeat is None:
        return
    idx, first, _ = repeat
    raise DataValidationError(
        message.format(first_row=first + 1 + row_offset),
        file=str(file),
        row=idx + 1 + row_offset,
        column=column,
        rule=rule,
    )


def check_domain(
    df: pl.DataFrame,
    column: str,
    domain: Collection[str],
    file: str | Path,
    *,
    row_offset: int = 0,
) -> None:
    """Reject values of a categorical column outside its declared domain (or missing).

    The message lists the declared domain but never the offending value, which may be
    confidential.

    Raises:
        DataValidationError: naming the first row whose value is not in ``domain``.
    """
    s = df.get_column(column)
    if s.dtype != pl.Utf8:
        s = s.cast(pl.Utf8)
    allowed = pl.Series(list(domain), dtype=pl.Utf8)
    bad = ~s.is_in(allowed.implode()).fill_null(False)
    idx = first_true(bad | s.is_null())
    if idx is not None:
        listed = ", ".join(str(v) for v in domain)
        raise DataValidationError(
            f"value missing or not in declared domain of {column!r} ({listed})",
            file=str(file),
            row=idx + 1 + row_offset,
            column=column,
            rule="domain",
        )


def check_nonnegative_finite(
    df: pl.DataFrame,
    columns: Iterable[str],
    file: str | Path,
    *,
    row_offset: int = 0,
) -> None:
    """Reject missing, NaN, infinite or negative values of confidential numeric columns.

    The message says which of the four it is, never the value.

    Raises:
        DataValidationError: naming the first offending row of the first offending column
            (``rule`` ``missing-value``, ``not-finite`` or ``negative``).
    """
    for c in columns:
        s = df.get_column(c)
        if not s.dtype.is_numeric():
            raise DataValidationError(
                f"column is stored as {s.dtype}, expected a number",
                file=str(file),
                column=c,
                rule="type",
            )
        checks: list[tuple[pl.Series, str, str]] = [(s.is_null(), "missing value", "missing-value")]
        if s.dtype.is_float():
            checks.append((~s.is_finite(), "value is NaN or infinite", "not-finite"))
        if not s.dtype.is_unsigned_integer():
            checks.append(((s < 0), "value is negative", "negative"))
        rows = [(first_true(mask), msg, rule) for mask, msg, rule in checks]
        found = [(i, msg, rule) for i, msg, rule in rows if i is not None]
        if found:
            i, msg, rule = min(found, key=lambda t: t[0])
            raise DataValidationError(
                msg, file=str(file), row=i + 1 + row_offset, column=c, rule=rule
            )
