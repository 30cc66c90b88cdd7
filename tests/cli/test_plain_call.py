"""Commands run without Typer's parsing get exactly the values Typer would pass."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from typer.testing import CliRunner

from eree import cli
from eree.cli import release
from eree.cli._program import _plain_params, _plain_values, plain_call


def typer_kwargs(func: Any, argv: list[str]) -> dict[str, Any] | None:
    """The keyword arguments Typer passes to ``func`` for ``argv`` (None: refused)."""
    seen: dict[str, Any] = {}

    @functools.wraps(func)
    def record(**kwargs: Any) -> None:
        seen.update(kwargs)

    app = typer.Typer()
    app.command(name="cmd")(record)
    app.command(name="other")(lambda: None)  # two commands: the name is required
    result = CliRunner().invoke(app, ["cmd", *argv])
    return seen if result.exit_code == 0 else None


PROTECT = [
    ["spec.toml", "--out", "o"],
    ["--out=o", "spec.toml", "--seed", "7", "--force"],
    ["spec.toml", "--out", "o", "--ledger", "b.sqlite", "--engine", "spark", "--new-version",
     "--random", "exact", "--seed", "0"],
    ["spec.toml", "--out", "o", "--master", "yarn", "--conf", "spark.a=1", "--conf=spark.b=2"],
]  # fmt: skip


@pytest.mark.parametrize("argv", PROTECT)
def test_protect_values_are_typers(argv: list[str]) -> None:
    params = _plain_params(release.protect)
    assert params is not None
    got = _plain_values(params, argv)
    assert got is not None
    assert got == typer_kwargs(release.protect, argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["spec.toml"],  # --out missing
        ["spec.toml", "--out", "o", "--help"],
        ["spec.toml", "--out", "o", "--seed", "x"],  # not an integer
        ["spec.toml", "--out", "o", "--seed", "-3"],  # a value that looks like an option
        ["spec.toml", "--out", "o", "--seed", "07"],  # Typer's conversion, not ours
        ["spec.toml", "--out", "o", "--out", "p"],  # given twice
        ["spec.toml", "--out", "o", "--force=yes"],
        ["spec.toml", "other.toml", "--out", "o"],  # one argument too many
        ["spec.toml", "--out", "o", "--unknown", "1"],
        ["spec.toml", "--out"],
    ],
)
def test_anything_unusual_is_left_to_typer(argv: list[str]) -> None:
    params = _plain_params(release.protect)
    assert params is not None
    assert _plain_values(params, argv) is None


def _example_argv(params: Any) -> list[str]:
    argv: list[str] = []
    for i, p in enumerate(params):
        value = {int: str(i + 2), Path: f"dir/p{i}", str: f"text{i}", list: f"k{i}=v"}.get(p.kind)
        if not p.names:
            argv.append(value)
        elif p.kind is bool:
            argv.append(next(iter(p.names)))
        else:
            argv += [next(iter(p.names)), value]
    return argv


def test_every_plain_command_gets_typers_values_with_every_option_given() -> None:
    plain = 0
    for info in cli.app.registered_commands:
        params = _plain_params(info.callback)
        if params is None:
            continue
        plain += 1
        argv = _example_argv(params)
        assert _plain_values(params, argv) == typer_kwargs(info.callback, argv), argv
    assert plain >= 3  # explain, validate, protect at least


def test_commands_with_other_parameters_are_not_plain() -> None:
    def opt(x: Annotated[int, typer.Option(min=1)] = 3) -> None: ...

    def ctx(c: typer.Context) -> None: ...

    def lst(x: Annotated[list[int] | None, typer.Option()] = None) -> None: ...

    for f in (opt, ctx, lst):
        assert _plain_params(f) is None


def test_plain_call_leaves_groups_and_help_to_typer() -> None:
    assert not plain_call(cli.app, [])
    assert not plain_call(cli.app, ["--version"])
    assert not plain_call(cli.app, ["ledger", "show", "x.sqlite"])  # a group
    assert not plain_call(cli.app, ["protect", "--help"])


def test_protect_from_the_command_line_imports_no_pydantic(tmp_path: Path) -> None:
    # the whole process as users run it; a bad spec path: one error line, exit 2
    code = (
        "import sys\n"
        "from eree.cli import main\n"
        f"sys.argv = ['eree', 'protect', {str(tmp_path / 'none.toml')!r}, '--out', "
        f"{str(tmp_path / 'out')!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as e:\n"
        "    print('exit', e.code, 'pydantic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["exit", "2", "False"], out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error:"), out.stderr
    assert not (tmp_path / "out").exists()
