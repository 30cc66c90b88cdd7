"""The conventions every ``eree`` command shares: options, the error line, progress.

* ``--out`` is a folder (:mod:`eree.data.outdir`): refused when it exists and is not
  empty, unless ``--force`` replaces an earlier output of eree (never a release recorded
  in a ledger).
* ``--quiet`` turns the progress bars off; they are off anyway when standard error is
  not a terminal. Bars go to standard error, results to standard output.
* Bad input: one line ``error: …`` on standard error, exit status 2, nothing written.

Imports only Typer and Rich at module level (``eree --help`` must stay fast).
"""

from __future__ import annotations

from typing import Annotated, Any, NoReturn

import typer

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


class LazyConsole:
    """A Rich console made on first use (importing Rich costs ``eree --help`` ~0.2 s)."""

    def __init__(self, stderr: bool = False) -> None:
        self._stderr = stderr
        self._console: Any = None

    def status(self, *args: Any, **kwargs: Any) -> Any:
        """A spinner while a step runs (:meth:`rich.console.Console.status`).

        Only on a terminal: elsewhere it would show nothing, so Rich is not imported.
        """
        import sys
        from contextlib import nullcontext

        if not (sys.stderr if self._stderr else sys.stdout).isatty():
            return nullcontext()
        return self.__getattr__("status")(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self._stderr)
        return getattr(self._console, name)


def escape(text: str) -> str:
    """Rich markup escaped (:func:`rich.markup.escape`, imported on first use)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def fail(e: BaseException | str) -> NoReturn:
    """Print ``error: <message>`` on one line of standard error and exit with status 2."""
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True).print(f"[bold red]error:[/] {escape(str(e))}", soft_wrap=True)
    raise typer.Exit(code=2)


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
