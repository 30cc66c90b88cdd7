"""Establishment microdata and its validation (docs/design.md#validation).

See QCEW-like, docs/design.md#establishment-data.

One row per establishment: an id (``primary_key`` in QCEW files), public attributes
(``cnty``, ``own``, ``naics`` and its prefixes) and confidential non-negative numeric
attributes (``m1emp``, ``m2emp``, ``m3emp``, ``wage``). The loaded frame has the id and
the public attributes as text (Utf8) and the confidential attributes as Float64.

Files: CSV, CSV.gz or Parquet (read through :mod:`eree.data.io`). The first column of
Webb et al.'s Syn-RI file (``ri44_qbp_2016_1.csv.gz``) has an empty name and holds R's
row numbers: it is never read (only the declared columns are), and it is not a column of
the result.

**Derived NAICS columns.** When a requested public column among ``naics3``, ``naics4``,
``naics5``, ``naics_sector``, ``super_sector`` is absent from the file, it is derived from
the 6-digit ``naics`` code (which must then be in the file):

* ``naics3``/``naics4``/``naics5``: the 3/4/5-digit prefixes;
* ``naics_sector``: the 2-digit prefix, as in the Syn-RI file (so manufacturing appears
  as 31, 32, 33 — not the "31-33" range label);
* ``super_sector``: the BLS NAICS-based supersector code of that 2-digit sector
  (:data:`eree.data.qcew.SUPERSECTOR_OF_SECTOR`, the mapping of the Syn-RI file).

**Validation** rejects the whole input with a
:class:`~eree.errors.DataValidationError` naming the file, the 1-based data row and the
column: missing or duplicated ids, a required column missing, values that do not parse,
confidential values missing/negative/NaN/infinite, public values missing or outside a
declared domain, NAICS codes that cannot be split. Messages never contain a confidential
value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from eree.data.config import EstablishmentDataConfig
from eree.data.io import (
    check_domain,
    check_nonnegative_finite,
    check_not_missing,
    check_unique,
    first_repeat,
    first_true,
    read_header,
    read_table,
)
from eree.data.location import local_path
from eree.data.qcew import SUPERSECTOR_OF_SECTOR
from eree.errors import DataValidationError

__all__ = [
    "NAICS_DERIVED",
    "EstablishmentData",
    "derive_naics_columns",
    "load_establishments",
]

#: public columns that can be derived from ``naics``
NAICS_DERIVED: tuple[str, ...] = ("naics3", "naics4", "naics5", "naics_sector", "super_sector")

_NAICS_RE = re.compile(r"^[0-9]{6}$")


@dataclass(frozen=True)
class EstablishmentData:
    """Loaded, validated establishment microdata.

    Attributes:
        frame: the id column, then the public attributes (Utf8, in config order), then
            the confidential attributes (Float64). Row order is the file's.
        config: the configuration it was loaded with.
        derived: public columns derived from ``naics`` (absent from the file).
    """

    frame: pl.DataFrame
    config: EstablishmentDataConfig
    derived: tuple[str, ...] = ()

    @property
    def id_column(self) -> str:
        """The establishment id column."""
        return self.config.id

    @property
    def public(self) -> tuple[str, ...]:
        """The public attribute columns."""
        return tuple(self.config.public)

    @property
    def columns(self) -> tuple[str, ...]:
        """The names of the loaded columns (derived ones included)."""
        frame = self.frame
        names = frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns
        return tuple(names)

    @property
    def confidential(self) -> tuple[str, ...]:
        """The confidential attribute columns."""
        return tuple(self.config.confidential)

    @property
    def n(self) -> int:
        """Number of establishments (public)."""
        return self.frame.height


def derive_naics_columns(
    frame: pl.DataFrame,
    columns: tuple[str, ...] | list[str],
    *,
    naics: str = "naics",
    file: str = "<frame>",
) -> pl.DataFrame:
    """Add the requested :data:`NAICS_DERIVED` columns, computed from the ``naics`` column.

    Raises:
        DataValidationError: a code that is not 6 digits, or whose sector has no
            supersector (row and column named, the code itself is public).
    """
    want = [c for c in columns if c in NAICS_DERIVED]
    if not want:
        return frame
    codes = frame.get_column(naics).cast(pl.Utf8)
    ok = codes.str.contains(_NAICS_RE.pattern).fill_null(False)
    idx = first_true(~ok)
    if idx is not None:
        raise DataValidationError(
            "NAICS code must have exactly 6 digits to derive " + ", ".join(want),
            file=file,
            row=idx + 1,
            column=naics,
            rule="naics-format",
        )
    sector = codes.str.slice(0, 2)
    if "super_sector" in want:
        known = pl.Series(list(SUPERSECTOR_OF_SECTOR), dtype=pl.Utf8)
        idx = first_true(~sector.is_in(known.implode()))
        if idx is not None:
            raise DataValidationError(
                "NAICS sector (the first two digits) has no BLS supersector",
                file=file,
                row=idx + 1,
                column=naics,
                rule="naics-sector",
            )
    new: list[pl.Series] = []
    for c in want:
        if c == "naics_sector":
            s = sector
        elif c == "super_sector":
            s = sector.replace_strict(SUPERSECTOR_OF_SECTOR, return_dtype=pl.Utf8)
        else:
            s = codes.str.slice(0, int(c[-1]))
        new.append(s.alias(c))
    return frame.with_columns(new)


def role_errors(config: EstablishmentDataConfig, file: str) -> None:
    roles: dict[str, str] = {}
    for role, cols in (
        ("id", [config.id]),
        ("public", list(config.public)),
        ("confidential", list(config.confidential)),
    ):
        for c in cols:
            if c in roles:
                raise DataValidationError(
                    f"column is declared twice ({roles[c]} and {role})",
                    file=file,
                    column=c,
                    rule="roles",
                )
            roles[c] = role
    if not config.confidential:
        raise DataValidationError(
            "no confidential attribute declared ([data].confidential)", file=file, rule="roles"
        )
    for attr in config.domains:
        if attr not in config.public:
            raise DataValidationError(
                "a domain is declared for a column that is not a public attribute",
                file=file,
                column=attr,
                rule="domain",
            )


def load_establishments(config: EstablishmentDataConfig) -> EstablishmentData:
    """Load and validate establishment input (CSV, CSV.gz, Parquet, or a directory).

    A directory is a partitioned table: its ``*.parquet`` files (searched recursively,
    in sorted path order) are read one by one and validated together (ids unique across
    all of them); an error names the part file and the row within it.

    Raises:
        DataValidationError: see the module docstring; the error names file, row
            (1-based, header excluded) and column, never a confidential value.
    """
    path = local_path(config.path, "[data].path")  # a file:// URI: its local path
    parts = _parts(path)
    try:
        return _load(config, parts, str(path))
    except DataValidationError as exc:
        if len(parts) < 2 or exc.row is None or exc.file != str(path):
            raise  # a single file, or already addressed to its part
        raise _in_part(exc, parts) from None


#: per part file of the table being loaded: (file, first row in the concatenation)
_Part = tuple[Path, int]


def _parts(path: Path) -> list[_Part]:
    """The files of a table: the file itself, or a directory's ``*.parquet`` files."""
    if not path.is_dir():
        return [(path, 0)]
    files = sorted(path.rglob("*.parquet"))
    if not files:
        raise DataValidationError(
            "is a directory without Parquet files", file=str(path), rule="file-missing"
        )
    return [(f, -1) for f in files]  # first rows filled in as the parts are read


def _locate(parts: list[_Part], row: int) -> tuple[Path, int]:
    """The part file holding 1-based ``row`` of the concatenated table, and its row there."""
    file, start = parts[0]
    for f, first in parts:
        if 0 <= first < row:
            file, start = f, first
    return file, row - start


def _in_part(exc: DataValidationError, parts: list[_Part]) -> DataValidationError:
    """``exc`` (a row of the concatenated table) re-addressed to its part file and row."""
    assert exc.row is not None
    prefix = f"file {exc.file!s}, row {exc.row}" + (
        f", column {exc.column!r}" if exc.column is not None else ""
    )
    message = str(exc)[len(prefix) + 2 :]
    file, row = _locate(parts, exc.row)
    return DataValidationError(message, file=str(file), row=row, column=exc.column, rule=exc.rule)


def _check_unique_ids(df: pl.DataFrame, column: str, parts: list[_Part], file: str) -> None:
    """Ids unique across every part (a repeated id names both part files and rows)."""
    if len(parts) == 1:
        check_unique(df, column, file)
        return
    repeat = first_repeat(df.get_column(column))
    if repeat is None:
        return
    idx, first, _ = repeat
    first_file, first_row = _locate(parts, first + 1)
    at_file, at_row = _locate(parts, idx + 1)
    raise DataValidationError(
        f"id appears more than once (first in file {first_file}, row {first_row})",
        file=str(at_file),
        row=at_row,
        column=column,
        rule="duplicate-id",
    )


def _load(config: EstablishmentDataConfig, parts: list[_Part], file: str) -> EstablishmentData:
    role_errors(config, file)
    # file-level problems (missing, unreadable, no header) first
    expected = [config.id, *config.public, *config.confidential]
    header = read_header(parts[0][0], expected=expected)
    present = set(header) - {""}  # the Syn-RI row-number column is never read
    to_derive = tuple(c for c in config.public if c in NAICS_DERIVED and c not in present)
    columns: dict[str, type[pl.DataType]] = {config.id: pl.Utf8}
    for c in config.public:
        if c not in to_derive:
            columns[c] = pl.Utf8
    if to_derive and "naics" not in columns:
        columns["naics"] = pl.Utf8
    for c in config.confidential:
        columns[c] = pl.Float64
    frames, rows = [], 0
    for i, (f, _) in enumerate(parts):
        frames.append(read_table(f, columns))
        parts[i] = (f, rows)
        rows += frames[-1].height
    df = frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical", rechunk=False)
    del frames
    check_not_missing(df, [config.id], file, rule="missing-id")
    _check_unique_ids(df, config.id, parts, file)
    read_public = [c for c in config.public if c not in to_derive]
    check_not_missing(df, read_public, file)
    if to_derive:
        check_not_missing(df, ["naics"], file)
        df = derive_naics_columns(df, to_derive, file=file)
    check_nonnegative_finite(df, config.confidential, file)
    for attr, domain in config.domains.items():
        check_domain(df, attr, domain, file)
    frame = df.select(
        [
            pl.col(config.id).cast(pl.Utf8),
            *[pl.col(c).cast(pl.Utf8) for c in config.public],
            *[pl.col(c).cast(pl.Float64) for c in config.confidential],
        ]
    )
    return EstablishmentData(frame, config, to_derive)
