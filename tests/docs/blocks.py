"""Run the documentation's fenced code blocks as a reader would, from a fresh copy of the repo.

A reader copies a block from README.md or docs/*.md and runs it from the repository root of a
fresh clone with ``../shared`` beside it. :func:`fresh_clone` makes such a tree in a temporary
directory (the files git tracks, or the working tree without outputs when there is no git), and
:func:`run_bash` runs a block there with an ``eree`` command that runs the code under test.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def section(markdown: str, heading: str) -> str:
    """The text under ``heading`` (a whole heading line, e.g. ``## Using eree on your data``)."""
    lines = markdown.splitlines(keepends=True)
    level = heading.split(" ", 1)[0]
    start = next(i for i, line in enumerate(lines) if line.rstrip("\n") == heading)
    end = len(lines)
    for i in range(start + 1, len(lines)):
        m = re.match(r"^(#+) ", lines[i])
        if m and len(m.group(1)) <= len(level):
            end = i
            break
    return "".join(lines[start + 1 : end])


def fenced(markdown: str, lang: str) -> list[str]:
    """Every fenced block of ``markdown`` whose language is ``lang``, in order."""
    return [m.group(2) for m in _FENCE.finditer(markdown) if m.group(1) == lang]


def runnable(markdown: str) -> list[tuple[str, str]]:
    """The ``bash`` and ``python`` blocks of ``markdown`` as (language, code), in order."""
    return [
        (m.group(1), m.group(2))
        for m in _FENCE.finditer(markdown)
        if m.group(1) in ("bash", "python")
    ]


def fresh_clone(tmp: Path, shared: Path | None = None) -> Path:
    """A copy of the repository at ``tmp/repo``; ``tmp/shared`` → ``shared``'s parent if given."""
    dest = tmp / "repo"
    try:
        tracked = subprocess.run(
            ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
        ).stdout.decode()
        files = [f for f in tracked.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
    if files:
        for f in files:
            src = REPO / f
            if src.is_file():
                (dest / f).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / f)
    else:
        shutil.copytree(
            REPO,
            dest,
            ignore=shutil.ignore_patterns(
                ".git", "__pycache__", "*.egg-info", ".*_cache", ".venv*"
            ),
        )
    if shared is not None:
        (tmp / "shared").symlink_to(shared.parent.resolve(), target_is_directory=True)
    return dest


def run_bash(block: str, cwd: Path, *, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run ``block`` with bash (stop at the first failing command) in ``cwd``.

    ``eree`` runs ``python -m eree.cli`` with this interpreter on ``cwd/src``: the code of the
    copy, as ``pip install -e .`` in a fresh clone would; ``python`` is this interpreter (the
    environment eree is installed in, as for a reader who activated it).
    """
    return _run(["bash", "-e", "-o", "pipefail", "-c", block], cwd, timeout)


def run_python(block: str, cwd: Path, *, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run ``block`` with this interpreter in ``cwd``, the copy's ``src`` first on the path."""
    return _run([sys.executable, "-c", block], cwd, timeout)


def run_document(markdown: str, cwd: Path) -> list[subprocess.CompletedProcess]:
    """Run every bash and python block of ``markdown`` in order in ``cwd``.

    Raises:
        AssertionError: a block failed (its output is in the message).
    """
    done = []
    for i, (lang, code) in enumerate(runnable(markdown)):
        r = run_bash(code, cwd) if lang == "bash" else run_python(code, cwd)
        assert r.returncode == 0, (
            f"block {i + 1} ({lang}) failed:\n{code}\n--- stdout\n{r.stdout[-4000:]}"
            f"\n--- stderr\n{r.stderr[-4000:]}"
        )
        done.append(r)
    return done


def _run(argv: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    bin_dir = cwd.parent / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "eree"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m eree.cli "$@"\n')
    shim.chmod(0o755)
    for name in ("python", "python3"):  # the reader's Python is the one eree is installed in
        py = bin_dir / name
        py.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        py.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(cwd / "src")
    env["COLUMNS"] = "100"
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
