"""Output to a pipe or a file is plain text, and says what Rich would say on a terminal.

The oracle is Rich itself: its ``escape`` and the text its markup renderer shows.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.markup import escape as rich_escape
from rich.text import Text

from eree.cli._program import PlainTable, escape, plain
from tests.release.conftest import SPEC, write_small_job_tables

# texts dense in what markup is made of: brackets, backslashes, tag starts
_TEXT = st.text(alphabet=st.sampled_from(list("ab[]\\/#@ =1:")), max_size=24)


@settings(max_examples=2000, deadline=None)
@given(_TEXT, _TEXT)
def test_escape_and_plain_agree_with_rich(a: str, b: str) -> None:
    assert escape(a) == rich_escape(a)
    for markup in (
        escape(a),
        f"[bold red]error:[/] {escape(a)}",
        f"[bold]{escape(a)}[/] {escape(b)}",
        f"• {escape(a)}: [bold yellow]{escape(b)}[/]",
    ):
        # Rich also turns :name: into emoji on a terminal; plain text keeps the words
        assert plain(markup) == Text.from_markup(markup, emoji=False).plain, markup


def test_plain_table_aligns_columns() -> None:
    t = PlainTable(title="Release 'x' → out")
    t.add_column("table")
    t.add_column("cells", justify="right")
    t.add_row("a.parquet", "7")
    t.add_row("[bold]total", "1,234")
    assert str(t).splitlines() == [
        "Release 'x' → out",
        "table      cells",
        "---------  -----",
        "a.parquet      7",
        "total      1,234",
    ]


def test_protect_piped_prints_plain_text_without_rich(tmp_path: Path) -> None:
    write_small_job_tables(tmp_path / "data")
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    code = (
        "import sys\n"
        "from eree.cli import main\n"
        f"sys.argv = ['eree', 'protect', {str(spec)!r}, '--out', {str(tmp_path / 'rel')!r},"
        " '--seed', '3']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "print('rich imported:', any(m.split('.')[0] == 'rich' for m in sys.modules),"
        " file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip().endswith("rich imported: False"), out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "seeded randomness (seed 3): NOT FOR PUBLICATION"
    assert lines[1].startswith("Release ")
    assert lines[2].split() == ["table", "mechanism", "cells", "ε", "δ", "μ"]
    assert set(lines[3]) <= {"-", " "}
    assert any(line.split()[0] == "total" for line in lines[4:])
    # the one warning, guarantee-weak (ε = 10 in total: power 1 − e^−10·0.95 ≥ 99%), keeps
    # its code in brackets, the CLI's warning format; nothing else is bracketed
    assert "warning [guarantee-weak] " in out.stdout
    text = re.sub(r"^warning \[[\w-]+\] ", "warning ", out.stdout, flags=re.M)
    assert not any(c in text for c in "│┃━[]")  # no box drawing, no markup
    assert f"manifest: {tmp_path / 'rel' / 'manifest.json'}" in lines


def test_the_program_exits_with_its_status_and_loses_no_output(tmp_path: Path) -> None:
    # `python -m eree.cli` runs eree.cli.run, as the installed `eree` does
    write_small_job_tables(tmp_path / "data")
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    cmd = [sys.executable, "-m", "eree.cli", "protect", str(spec), "--out", str(tmp_path / "rel")]
    ok = subprocess.run(cmd, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[-1] == f"report:   {tmp_path / 'rel' / 'report.html'}"
    assert (tmp_path / "rel" / "manifest.json").is_file()
    again = subprocess.run(cmd, capture_output=True, text=True)  # OUT is not empty now
    assert again.returncode == 2 and again.stdout == ""
    assert again.stderr.count("\n") == 1 and again.stderr.startswith("error: output directory")


def _run_with(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys, threading, time, atexit\n"
        "import eree.cli as cli\n"
        f"def fake():\n{body}\n"
        "cli.main = fake\n"
        "cli.run()\n"
    )
    cmd = [sys.executable, "-c", code]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)


def test_run_keeps_exit_handlers_messages_and_running_threads(tmp_path: Path) -> None:
    # exit handlers run; a buffered write reaches the pipe
    body = "    atexit.register(lambda: print('handler'))\n    print('out', end='')"
    r = _run_with(tmp_path, body)
    assert (r.returncode, r.stdout) == (0, "outhandler\n")
    # a message as exit status: printed, status 1 (as Python does)
    r = _run_with(tmp_path, "    sys.exit('went wrong')")
    assert (r.returncode, r.stderr) == (1, "went wrong\n")
    # a thread still working: Python's own exit waits for it
    r = _run_with(
        tmp_path,
        "    def late():\n        time.sleep(0.3)\n        open('late.txt', 'w').write('x')\n"
        "    threading.Thread(target=late).start()\n    sys.exit(3)",
    )
    assert r.returncode == 3 and (tmp_path / "late.txt").read_text() == "x"


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    # `eree protect ... | head -0`: the reader is gone before the summary is printed
    write_small_job_tables(tmp_path / "data")
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    cmd = [sys.executable, "-m", "eree.cli", "protect", str(spec), "--out", str(tmp_path / "rel")]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait() == 1 and err == "", err
    assert (tmp_path / "rel" / "manifest.json").is_file()  # the release itself is complete


def test_plain_json_is_what_rich_prints(capsys) -> None:
    import io
    import json

    from rich.console import Console

    from eree.cli._program import LazyConsole

    data = {
        "privacy": {"definition": "eree-weak", "ε": 1.5, "μ": None},
        "queries": [{"name": "a", "cells": 3}, {"name": "b", "by": []}],
    }
    text = json.dumps(data)
    rich_out = io.StringIO()
    Console(file=rich_out, color_system=None, width=200).print_json(text)
    LazyConsole().print_json(text)  # pytest's captured stdout is not a terminal
    assert capsys.readouterr().out == rich_out.getvalue()


def test_rich_renderables_and_plain_tables_print_right_on_either_console(capsys) -> None:
    import io

    from rich.console import Console
    from rich.table import Table as RichTable

    from eree.cli._program import LazyConsole

    rich_table = RichTable(title="drawn by Rich")
    rich_table.add_column("a")
    rich_table.add_row("1")
    LazyConsole().print(rich_table)  # off a terminal, still drawn by Rich, not a repr
    out = capsys.readouterr().out
    assert "│ 1 │" in out and "object at" not in out
    t = PlainTable(title="plain")
    t.add_column("a")
    t.add_row(escape("[x]"))  # cells are markup: text in them is escaped
    buf = io.StringIO()
    Console(file=buf, color_system=None, width=80).print(t)  # a Rich console given one
    assert buf.getvalue().splitlines() == ["plain", "a", "---", "[x]"]


def test_demo_piped_prints_its_accuracy_tables_as_text(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "eree.cli", "demo", "--out", str(tmp_path / "d"), "--seed", "1"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "object at 0x" not in out.stdout and "│" not in out.stdout
    lines = out.stdout.splitlines()
    i = lines.index("ER-EE accuracy against the synthetic truth")
    assert lines[i + 1].split()[:2] == ["query", "cells"] and set(lines[i + 2]) <= {"-", " "}
