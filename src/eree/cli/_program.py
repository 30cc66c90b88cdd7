"""The ``eree`` program's machinery: a fast start, plain output off a terminal, a fast exit.

Every command gets these without asking:

* Lazy imports: ``import eree.cli`` imports Typer and the standard library only (``eree
  --help`` must stay fast); a command imports what it needs when it runs, and the
  experiment and suppression commands are imported only when their group is used
  (:class:`LazyGroup`).
* A fast start: a command line with plain parameters runs without Typer's parsing
  (:func:`plain_call`), which would import Pydantic.
* Output to a terminal is drawn by Rich (colours, boxed tables). Output to a pipe or a
  file is plain text (the same words, tables as aligned columns, no markup) and does
  not import Rich, which is most of a short command's output time (:class:`LazyConsole`,
  :func:`Table`).
* A fast exit: once the command has returned, the process ends without the
  interpreter's teardown (:func:`run_and_exit`).

The options, the error line and the progress bars every command shares are in
:mod:`eree.cli.common`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, NoReturn

import typer
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:  # pragma: no cover
    from typer._click.core import Command, Context


class LazyGroup(TyperGroup):
    """A command group whose experiment commands are imported on first use.

    The experiment modules (and through them SciPy and plotting) take most of a second to
    import; docs/design.md#data-flow wants them imported only when an experiment runs. The group
    lists a lazy command by name with a fixed one-line help and imports the real command
    only when it is resolved (run, or asked for its own ``--help``).
    """

    #: command name -> one-line help shown in the parent's listing before loading
    lazy_help: ClassVar[dict[str, str]] = {}
    #: the Typer app this group was built from (set by :func:`lazy_typer`)
    source: ClassVar[typer.Typer | None] = None
    #: what registers the lazy commands on their Typer apps (imports them; set by
    #: :func:`lazy_typer`)
    registers: ClassVar[tuple[Callable[[], None], ...]] = ()

    _loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for register in self.registers:
            register()
        if self.source is not None:
            built = typer.main.get_group(self.source)
            for name, cmd in built.commands.items():
                self.commands.setdefault(name, cmd)

    def list_commands(self, ctx: Context) -> list[str]:
        names = list(super().list_commands(ctx))
        if not self.lazy_help:  # a group made only of experiments
            self._load()
            return list(super().list_commands(ctx))
        return names + [n for n in self.lazy_help if n not in names]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if cmd_name in self.lazy_help and cmd_name not in self.commands:
            return TyperCommand(cmd_name, help=self.lazy_help[cmd_name])
        if not self.lazy_help and cmd_name not in self.commands:
            self._load()
        return verbatim_examples(super().get_command(ctx, cmd_name))

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        if args and (args[0] in self.lazy_help or not self.lazy_help):
            self._load()
        return super().resolve_command(ctx, args)


def verbatim_examples(cmd: Any) -> Any:
    r"""Keep each command's ``Example:`` line unwrapped in its help (click's ``\\b`` mark).

    A wrapped example cannot be copied and run; click re-wraps every paragraph except one
    that starts with a ``\\b`` line. Applied to a command and, for a group, to its
    commands.
    """
    if cmd is None:
        return cmd
    help_text = getattr(cmd, "help", None)
    if help_text and "\n\nExample: " in help_text:
        cmd.help = help_text.replace("\n\nExample: ", "\n\n\b\nExample: ")
    for sub in getattr(cmd, "commands", {}).values():
        verbatim_examples(sub)
    return cmd


def lazy_typer(
    lazy_help: dict[str, str] | None = None,
    register: Callable[[], None] | None = None,
    **kwargs: Any,
) -> typer.Typer:
    """A Typer app built as a :class:`LazyGroup` that knows its own source app.

    Args:
        lazy_help: the lazy commands of this app, listed before they are loaded.
        register: registers the lazy commands (of every lazy app; run once).
        kwargs: as for :class:`typer.Typer`.
    """
    kwargs.setdefault("rich_markup_mode", None)  # plain help: Rich costs --help ~0.3 s
    t = typer.Typer(**kwargs)
    t.info.cls = type(
        "_Lazy",
        (LazyGroup,),
        {
            "lazy_help": dict(lazy_help or {}),
            "source": t,
            "registers": (register,) if register else (),
        },
    )
    return t


def run_and_exit(main: Callable[[], None]) -> NoReturn:
    """Run ``main``, then exit without the interpreter's teardown.

    At exit, Python frees every module and every object of Polars and NumPy one by one:
    about 70 ms of a 0.7 s release of a state (``benchmarks/bench_release.py``), work the
    operating system does at once when the process ends. So once the command has
    returned, the exit handlers run, standard output and error are flushed, and the
    process ends with the command's exit status (:func:`os._exit`). Every command closes
    its output files before it returns. Should a thread of the command still be running,
    or the command fail with a traceback, Python exits as usual. A closed standard
    output (the reader of a pipe gone) ends the program with status 1, quietly.
    """
    import atexit
    import contextlib
    import os
    import threading

    try:
        main()
        code: object = 0
    except SystemExit as e:
        code = e.code
    except BrokenPipeError:
        # the reader of standard output went away (`eree ... | head -1`): nothing more
        # can reach it; as Python's documentation advises, status 1 and no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    main_thread = threading.main_thread()
    if any(t is not main_thread and t.is_alive() and not t.daemon for t in threading.enumerate()):
        sys.exit(code)  # type: ignore[arg-type]
    if code is None:
        code = 0
    elif not isinstance(code, int):  # what SystemExit does with a message: print it, status 1
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing reaches it
            stream.flush()
    os._exit(code)


#: Rich markup: a tag ``[…]`` (starting with a letter, ``#``, ``/`` or ``@``) and the
#: backslashes before it (an odd number escapes the tag, each pair is one backslash)
_TAG = re.compile(r"(\\*)\[([a-z#/@][^\[]*?)\]")


def escape(text: str) -> str:
    """``text`` with everything Rich would read as markup escaped.

    Rich's rule: a backslash before a tag makes the tag literal, so each backslash
    already before a tag is doubled and one more is added. A text ending in one
    backslash gets a second, so that markup following it stays markup.
    """
    out = _TAG.sub(lambda m: f"{m.group(1) * 2}\\[{m.group(2)}]", text)
    if out.endswith("\\") and not out.endswith("\\\\"):
        out += "\\"
    return out


def plain(markup: str) -> str:
    r"""The text Rich shows for ``markup``, without its styles.

    Tags go; ``\[`` in text between tags is a ``[``; before a tag, an odd number of
    backslashes makes the tag literal text and each pair is one backslash.
    """
    out, at = [], 0
    for m in _TAG.finditer(markup):
        out.append(markup[at : m.start()].replace("\\[", "["))
        slashes, tag = m.group(1), m.group(2)
        out.append("\\" * (len(slashes) // 2))
        if len(slashes) % 2:
            out.append(f"[{tag}]")
        at = m.end()
    out.append(markup[at:].replace("\\[", "["))
    return "".join(out)


def _terminal(stderr: bool) -> bool:
    stream = sys.stderr if stderr else sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


class PlainTable:
    """A table shown as plain aligned columns: a title line, a header and the rows.

    The subset of :class:`rich.table.Table` that eree's commands use; cells are Rich
    markup, shown without their styles.
    """

    def __init__(self, title: str | None = None, **_: Any) -> None:
        self.title = title
        self.columns: list[str] = []
        self.right: list[bool] = []
        self.rows: list[list[str]] = []

    def add_column(self, header: str = "", *, justify: str = "left", **_: Any) -> None:
        """A column (``justify="right"`` aligns it right)."""
        self.columns.append(plain(str(header)))
        self.right.append(justify == "right")

    def add_row(self, *cells: Any) -> None:
        """A row of cells (markup, or None for an empty cell)."""
        self.rows.append(["" if c is None else plain(str(c)) for c in cells])

    def __str__(self) -> str:
        rows = [self.columns, *self.rows]
        width = [max(len(r[i]) if i < len(r) else 0 for r in rows) for i in range(len(rows[0]))]

        def line(r: list[str]) -> str:
            cells = [
                (c.rjust(w) if right else c.ljust(w))
                for c, w, right in zip(r, width, self.right, strict=False)
            ]
            return "  ".join(cells).rstrip()

        out = [plain(self.title)] if self.title else []
        out += [line(self.columns), "  ".join("-" * w for w in width), *map(line, self.rows)]
        return "\n".join(out)

    def __rich__(self) -> Any:
        """As text when a Rich console prints it (its file is a terminal, stdout is not)."""
        from rich.text import Text

        return Text(str(self))


def Table(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 (stands for Rich's class)
    """A :class:`rich.table.Table` for a terminal, a :class:`PlainTable` otherwise."""
    if not _terminal(stderr=False):
        return PlainTable(*args, **kwargs)
    from rich.table import Table as RichTable

    return RichTable(*args, **kwargs)


class LazyConsole:
    """Where a command prints: Rich on a terminal (made on first use), plain text elsewhere.

    Importing Rich costs ``eree --help`` ~0.2 s and a short command's plain output most
    of its time, so off a terminal :meth:`print` and :meth:`print_json` write plain text
    (:func:`plain`) and Rich is not imported.
    """

    def __init__(self, stderr: bool = False) -> None:
        self._stderr = stderr
        self._console: Any = None

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """:meth:`rich.console.Console.print`; off a terminal, the objects as plain text."""
        rich_only = any(
            not isinstance(o, str | PlainTable)
            and (hasattr(o, "__rich_console__") or hasattr(o, "__rich__"))
            for o in objects
        )
        if rich_only or _terminal(self._stderr):  # Rich draws what only Rich can
            self.__getattr__("print")(*objects, **kwargs)
            return
        text = " ".join(plain(o) if isinstance(o, str) else str(o) for o in objects)
        print(text, file=sys.stderr if self._stderr else sys.stdout)

    def print_json(self, text: str) -> None:
        """JSON indented by two spaces (:meth:`rich.console.Console.print_json` on a terminal)."""
        if _terminal(self._stderr):
            self.__getattr__("print_json")(text)
            return
        import json

        stream = sys.stderr if self._stderr else sys.stdout
        print(json.dumps(json.loads(text), indent=2, ensure_ascii=False), file=stream)

    def status(self, *args: Any, **kwargs: Any) -> Any:
        """A spinner while a step runs (:meth:`rich.console.Console.status`).

        Only on a terminal: elsewhere it would show nothing, so Rich is not imported.
        """
        from contextlib import nullcontext

        if not _terminal(self._stderr):
            return nullcontext()
        return self.__getattr__("status")(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self._stderr)
        return getattr(self._console, name)


#: parameter settings that change only how ``--help`` shows a parameter
_COSMETIC = frozenset(
    {"default", "param_decls", "help", "show_default", "metavar", "rich_help_panel", "hidden",
     "show_choices", "show_envvar"}
)  # fmt: skip


class _Plain(NamedTuple):
    """A plain parameter of a command (:func:`_plain_params`)."""

    name: str
    kind: type  # bool (a flag), str, int, Path or list (a repeatable text option)
    default: Any  # ``...``: required
    names: dict[str, Any]  # option names -> the flag's value (None: takes a value); {} positional


def _plain_params(callback: Any) -> list[_Plain] | None:
    """The parameters of a Typer command, or None if one is not plain.

    Plain: text, an integer or a path (optionally ``None`` by default), a boolean flag,
    or a repeatable text option (``list[str] | None``, ``None`` by default); declared
    without settings beyond those that change ``--help`` (no callback, environment
    variable, prompt, range, parser, ...). Read with Typer's own reader
    (:func:`typer.utils.get_params_from_function`), as Typer reads them.
    """
    import types
    import typing

    from typer.models import ArgumentInfo, OptionInfo
    from typer.utils import get_params_from_function

    out = []
    for meta in get_params_from_function(callback).values():
        info, kind = meta.default, meta.annotation
        if not isinstance(info, OptionInfo | ArgumentInfo):
            info = OptionInfo(default=info) if info is not meta.empty else ArgumentInfo()
        fresh = type(info)()
        if any(v != getattr(fresh, k) for k, v in vars(info).items() if k not in _COSMETIC):
            return None
        if typing.get_origin(kind) in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(kind) if a is not type(None)]
            if len(args) != 1 or info.default is not None:
                return None
            kind = args[0]
        if kind == list[str] and isinstance(info, OptionInfo) and info.default is None:
            kind = list  # a repeatable text option (None when not given)
        elif kind not in (str, int, Path) and (kind is not bool or isinstance(info, ArgumentInfo)):
            return None
        names: dict[str, Any] = {}
        if isinstance(info, OptionInfo):
            flag = meta.name.replace("_", "-")
            own = f"--{flag}/--no-{flag}" if kind is bool else f"--{flag}"
            for decl in info.param_decls or (own,):
                on, _, off = decl.partition("/")
                names[on.strip()] = True if kind is bool else None
                if off:
                    names[off.strip()] = False
        out.append(_Plain(meta.name, kind, info.default, names))
    return out


def _plain_values(params: list[_Plain], argv: Sequence[str]) -> dict[str, Any] | None:
    """The keyword arguments Typer would pass for ``argv``, or None (see :func:`plain_call`)."""
    import re

    by_name = {n: p for p in params for n in p.names}
    positional = [p for p in params if not p.names]
    given: dict[str, Any] = {}
    args = iter(argv)
    for a in args:
        if not a.startswith("-") or a == "-":  # the next positional argument
            free = [p for p in positional if p.name not in given]
            if not free:
                return None
            given[free[0].name] = a
            continue
        key, eq, value = a.partition("=")
        p = by_name.get(key)
        if p is None or (p.name in given and p.kind is not list):
            return None
        if p.kind is bool:
            if eq:
                return None
            given[p.name] = p.names[key]
            continue
        if not eq:
            nxt = next(args, None)
            if nxt is None or nxt.startswith("-"):
                return None
            value = nxt
        if p.kind is list:
            given.setdefault(p.name, []).append(value)
            continue
        given[p.name] = value
    kwargs: dict[str, Any] = {}
    for p in params:
        if p.name not in given:
            if p.default is ...:
                return None
            kwargs[p.name] = p.default
        elif p.kind is int:
            if not re.fullmatch(r"-?(0|[1-9][0-9]*)", given[p.name]):
                return None
            kwargs[p.name] = int(given[p.name])
        elif p.kind is Path:
            if not given[p.name]:
                return None
            kwargs[p.name] = Path(given[p.name])
        else:
            kwargs[p.name] = given[p.name]
    return kwargs


def plain_call(app: typer.Typer, argv: Sequence[str]) -> bool:
    """Run a top-level command of ``app`` with plain parameters without Typer's parsing.

    Typer converts every parameter through Pydantic, whose import costs a short command
    (``eree protect`` on a small dataset) about a tenth of a second. A command line that
    names a top-level command of ``app`` whose parameters are all plain
    (:func:`_plain_params`), gives each option at most once (``--name value``,
    ``--name=value`` or a bare flag) and writes integers as digits runs here, with the
    values Typer would pass. Anything else (``--help``, a missing or unknown parameter,
    a value Typer would refuse or convert) returns False without running anything, and
    the caller runs ``app``: the messages and exit codes stay Typer's.

    The root callback of ``app`` is not run: for an app whose root callback acts only
    on its own options (which come before the command name).
    """
    from typer.main import get_command_name

    if not argv or argv[0].startswith("-"):
        return False
    found = [
        c
        for c in app.registered_commands
        if c.callback is not None
        and (c.name or get_command_name(c.callback.__name__)) == argv[0]
        and not c.context_settings
    ]
    if len(found) != 1:
        return False
    params = _plain_params(found[0].callback)
    kwargs = None if params is None else _plain_values(params, argv[1:])
    if kwargs is None:
        return False
    try:
        found[0].callback(**kwargs)  # type: ignore[misc]
    except typer.Exit as e:
        raise SystemExit(e.exit_code) from None
    return True
