"""Typed, actionable errors.

Messages may name files, rows, columns, ids and parameters. They never contain
confidential values (counts, sizes, wages, x_v, data-dependent noise scales).
"""

from __future__ import annotations


class EreeError(Exception):
    """Base class of every error eree raises on purpose."""


class SpecError(EreeError):
    """The release spec (TOML) is malformed or inconsistent."""


class DataValidationError(EreeError):
    """Input data violates a rule of docs/design.md#validation.

    Attributes:
        file: the input file (or table name) at fault.
        row: 1-based data row number (header excluded), or None for file-level problems.
        column: the column at fault, or None.
        rule: short name of the violated rule.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str,
        row: int | None = None,
        column: str | None = None,
        rule: str = "",
    ) -> None:
        self.file = file
        self.row = row
        self.column = column
        self.rule = rule
        where = [f"file {file!s}"]
        if row is not None:
            where.append(f"row {row}")
        if column is not None:
            where.append(f"column {column!r}")
        super().__init__(f"{', '.join(where)}: {message}")


class PrivacyParameterError(EreeError):
    """Privacy parameters violate a mechanism's or definition's condition."""


class BudgetExceededError(EreeError):
    """A release would take a dataset past its declared lifetime budget."""


class LedgerError(EreeError):
    """The budget ledger refuses a release or an operation.

    For example: an unregistered dataset, changed content without ``--new-version``, a
    tampered or unreadable ledger.
    """


class EngineError(EreeError):
    """The engine cannot run as asked, or a result of it cannot be trusted.

    For example: a Spark master or setting that cannot be used, executors that cannot run
    the code the release sends them, a result that did not reach the driver whole.
    """


class ReleaseWarning(UserWarning):
    """A warning of a release (``eree validate``/``protect``), as a Python warning.

    The Python API (:func:`eree.release.protect.protect`) issues one per manifest warning,
    with its code, message and remedy; the CLI prints them itself.
    """
