"""Ctrl-C during an experiment: keep the finished work (docs/design.md#command-line)."""

from __future__ import annotations

import time
from pathlib import Path


def absorb_echo(seconds: float = 0.1) -> None:
    """Swallow the repeated interrupt that one Ctrl-C can cause; call on catching the first.

    A Ctrl-C that lands inside a Polars query is raised there as
    :class:`KeyboardInterrupt` and then once more at the interpreter's next signal check,
    which would cut short the saving of the finished work. The echo can fire as early as
    the entry of this function, so the caller retries it::

        while stopped:
            try:
                absorb_echo()
                break
            except KeyboardInterrupt:
                continue

    It waits ``seconds`` and absorbs any further interrupt arriving meanwhile.
    """
    end = time.monotonic() + seconds
    while True:
        try:
            left = end - time.monotonic()
            if left <= 0:
                return
            time.sleep(left)
        except KeyboardInterrupt:
            continue


def write_interrupted_note(folder: Path, meta: dict[str, object]) -> str | None:
    """Write ``INTERRUPTED`` in an output folder when the run was cut short; return its text.

    A run stopped by Ctrl-C returns what it finished with ``meta["interrupted"]``; its
    outputs are written as usual, and this note (also in run.json) says they are partial.
    """
    note = meta.get("interrupted")
    if not note:
        return None
    (folder / "INTERRUPTED").write_text(f"{note}\n", encoding="utf-8")
    return str(note)
