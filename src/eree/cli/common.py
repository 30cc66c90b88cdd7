"""What every ``eree`` command shares: its options, its consoles and its one error exit.

* ``--out`` is a folder (:mod:`eree.data.outdir`): refused when it exists and is not
  empty, unless ``--force`` replaces an earlier output of eree (never a release recorded
  in a ledger).
* ``--quiet`` turns the progress bars off; they are off anyway when standard error is
  not a terminal. Bars go to standard error, results to standard output.
* Bad input: one line ``error: …`` on standard error, exit status 2, nothing written
  (:func:`fail`, the one error exit of every command).
* Results are printed on :data:`console` (standard output), notes and errors on
  :data:`err_console` (standard error): drawn by Rich on a terminal, plain text
  elsewhere (:mod:`eree.cli._program`).

Imports only Typer at module level (``eree --help`` must stay fast).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from eree.cli._program import LazyConsole, Table, escape

__all__ = [
    "DEFAULT_ATTRIBUTES",
    "AsJson",
    "Attributes",
    "DominanceK",
    "DominanceN",
    "EstablishmentFile",
    "ExemptOwn",
    "Force",
    "IdColumn",
    "LodesData",
    "MinProtection",
    "Out",
    "PPercent",
    "Quiet",
    "State",
    "Table",
    "Threshold",
    "WriteCsv",
    "check_out",
    "console",
    "err_console",
    "escape",
    "fail",
    "progress_bar",
    "table_value",
]

#: ``--out``: the output folder of a command that writes one
Out = Annotated[Path, typer.Option("--out", help="output folder (new or empty)")]
#: ``--force``: replace an earlier output of eree
Force = Annotated[
    bool,
    typer.Option(
        "--force",
        help="replace OUT if it holds an earlier output of eree (never a release recorded "
        "in a ledger); without it a non-empty OUT is refused",
    ),
]
#: ``--quiet``: no progress bars
Quiet = Annotated[
    bool, typer.Option("--quiet", "-q", help="no progress bars (they go to standard error)")
]
#: ``--json``: JSON on standard output instead of tables
AsJson = Annotated[bool, typer.Option("--json", help="print JSON instead of tables")]
#: ``--data`` of the commands that run on LODES-like data
#: (:func:`eree.evaluate.datasets.load_dataset`)
LodesData = Annotated[
    Path | None,
    typer.Option(
        "--data",
        help="directory of LODES-like tables (workplace, worker, job; as written by eree "
        "synth lodes)",
    ),
]

# -- the disclosure rules of the commands that read an establishment file -----------------
# (``eree suppress``, ``eree coarsen``): declared once, so the two commands take the same
# options with the same names, defaults and help (docs/cli.md)

#: the confidential attributes by default (``--attributes``)
DEFAULT_ATTRIBUTES = "m1emp,m2emp,m3emp,wage"
#: the establishment file argument
EstablishmentFile = Annotated[
    Path, typer.Argument(help="establishment file (csv, csv.gz, parquet)")
]
#: ``--state``: one state of the file
State = Annotated[
    str | None, typer.Option(help="only this state (default: every state, one by one)")
]
#: ``--id``: the establishment id column
IdColumn = Annotated[str, typer.Option("--id", help="establishment id column")]
#: ``--attributes``: the confidential attributes
Attributes = Annotated[str, typer.Option(help="confidential attributes (comma-separated)")]
#: ``--threshold``: the threshold rule
Threshold = Annotated[
    int, typer.Option(help="sensitive: cells with fewer establishments than this (0: off)")
]
#: ``--dominance-k``: the (n,k) dominance rule's k
DominanceK = Annotated[
    float, typer.Option(help="(n,k) dominance: the n largest > k% of the cell (0: off)")
]
#: ``--dominance-n``: the (n,k) dominance rule's n
DominanceN = Annotated[int, typer.Option(help="n of the dominance rule")]
#: ``--p-percent``: the p% rule
PPercent = Annotated[float, typer.Option(help="p of the p% rule (0: off)")]
#: ``--protection-percent``: protection of threshold cells, % of the largest contribution
ProtectionPercent = Annotated[
    float | None, typer.Option(help="protection of threshold cells, % of the largest")
]
#: ``--min-protection``: the smallest protection level
MinProtection = Annotated[float, typer.Option(help="smallest protection level (attribute units)")]
#: ``--exempt-own``: ownership codes never sensitive
ExemptOwn = Annotated[str, typer.Option(help="ownership codes never sensitive (BLS: 1 federal)")]
#: ``--csv/--no-csv``: also write CSV files
WriteCsv = Annotated[bool, typer.Option(help="also write CSV files")]

#: where results go (standard output); Rich is imported on first output to a terminal
console: Any = LazyConsole()
#: where notes, spinners and errors go (standard error)
err_console: Any = LazyConsole(stderr=True)


def one_line(text: str) -> str:
    """``text`` with every control or line-breaking character written as its escape.

    An error names files, keys and values of the spec as given; a newline (or a NUL, a
    carriage return, a Unicode line separator) in one of them would break the one-line
    error into several, or rewrite the terminal's line.
    """
    return "".join(
        ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


def fail(e: BaseException | str) -> NoReturn:
    """Print ``error: <message>`` on one line of standard error and exit with status 2."""
    err_console.print(f"[bold red]error:[/] {escape(one_line(str(e)))}", soft_wrap=True)
    raise typer.Exit(code=2)


def policy_allows(command: str, what: Any) -> None:
    """Refuse, under the site policy, a command that reads confidential data uncharged.

    Under ``require_ledger`` a command that reads confidential data and cannot be charged
    exits 2 with one line, unless the office file allows it
    (:func:`eree.release.policy.require_uncharged_allowed`). Run before anything is read.
    """
    from eree.errors import EreeError
    from eree.release.policy import require_uncharged_allowed

    try:
        require_uncharged_allowed(command, str(what))
    except EreeError as e:
        fail(e)


def check_out(out: Any, force: bool) -> None:
    """The ``--out`` check every command runs first (exit 2 with one line when refused)."""
    from eree.data.outdir import check_out as check
    from eree.errors import EreeError

    try:
        check(out, force=force)
    except EreeError as e:
        fail(e)


def progress_bar(quiet: bool = False, *, transient: bool = True) -> Any:
    """A Rich progress bar on standard error with the elapsed time and an ETA.

    Disabled with ``quiet`` or when standard error is not a terminal (a log file gets
    no bar). Use as a context manager; ``add_task(description, total=N)`` then
    ``update(task, advance=1)`` (a total of None shows a spinner-like bar without ETA).
    """
    import sys

    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=transient,
        disable=quiet or not sys.stderr.isatty(),
    )


def table_value(v: Any) -> str:
    """A value in a table cell: ``—`` for None, 4 significant digits for a float."""
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
