"""``kill -9`` of a process with busy workers leaves none of its children running.

Each case runs a script in a subprocess that opens one of eree's process pools and keeps
its workers busy, waits until the workers are burning CPU, kills the script with
``SIGKILL`` and then requires every process the script had started (the workers and
multiprocessing's resource tracker) to be gone within :data:`WAIT` seconds. The pools:

* the LP pool (:func:`eree.suppression.linked.lp_pool`) with its worker inside one long C
  call that holds the interpreter lock (``sum`` over a huge ``range``, as an LP solve is):
  only the kernel's parent-death signal can end it;
* the process map of the job-record release (:class:`eree.engine.unitmap.ProcessMap`),
  two workers in the same C call;
* the portable watch alone (``kernel=False``), a worker spinning in Python steps.

Each worker's task first leaves a file named by its process id, so the kill comes once
every worker has spent 0.3 s of CPU inside its task (not in starting up).

Processes are read from ``/proc`` (Linux only).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import eree

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

#: seconds a dead parent's workers may take to go (the watch polls every 0.2 s)
WAIT = 15.0

ENV = {**os.environ, "PYTHONPATH": str(Path(eree.__file__).resolve().parents[1])}

#: a worker's task: say it started (a file named by its process id), then stay busy
BUSY = """
import os, sys
from pathlib import Path

def busy(i):
    Path(sys.argv[1], str(os.getpid())).touch()
    if sys.argv[2] == "c":
        return sum(range(10**14))  # one C call holding the interpreter lock, as an LP solve
    while True:  # Python steps
        pass
"""

LP_POOL = (
    BUSY
    + """
import time
from eree.suppression.linked import lp_pool

if __name__ == "__main__":
    with lp_pool(2) as pool:
        pool.submit(busy, 0)
        time.sleep(600)
"""
)

PROCESS_MAP = (
    BUSY
    + """
from eree.engine.unitmap import ProcessMap

if __name__ == "__main__":
    for _ in ProcessMap(2, chunksize=1).map(busy, [0, 1]):
        pass
"""
)

WATCH_ONLY = (
    BUSY
    + """
import multiprocessing, time
from concurrent.futures import ProcessPoolExecutor
from eree.engine.parent_watch import exit_with_parent

if __name__ == "__main__":
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=ctx, initializer=exit_with_parent,
                             initargs=(os.getpid(), False)) as pool:
        pool.submit(busy, 0)
        time.sleep(600)
"""
)


def _stat(pid: int) -> list[str] | None:
    """``/proc/PID/stat``'s fields after the command name (state first); None if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.rindex(")") + 2 :].split()


def _children(pid: int) -> dict[int, str]:
    """The processes whose parent is ``pid``: their ids and start times."""
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            f = _stat(int(d.name))
            if f is not None and int(f[1]) == pid:
                out[int(d.name)] = f[19]
    return out


def _alive(pid: int, start: str) -> bool:
    f = _stat(pid)
    return f is not None and f[19] == start and f[0] not in ("Z", "X")


def _cpu_ticks(pid: int) -> int:
    f = _stat(pid)
    return 0 if f is None else int(f[11]) + int(f[12])


def _kill_and_watch(tmp_path: Path, script: str, busy_workers: int, how: str) -> None:
    path = tmp_path / "pool_script.py"
    path.write_text(script)
    flags = tmp_path / "busy"
    flags.mkdir()
    p = subprocess.Popen(
        [sys.executable, str(path), str(flags), how], env=ENV, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        started: dict[int, int] = {}
        while True:  # until each worker has spent 0.3 s of CPU (100 Hz ticks) in its task
            assert p.poll() is None, p.stderr.read().decode() if p.stderr else ""
            for f in flags.iterdir():
                started.setdefault(int(f.name), _cpu_ticks(int(f.name)))
            if len(started) >= busy_workers and all(
                _cpu_ticks(k) - t0 >= 30 for k, t0 in started.items()
            ):
                break
            assert time.monotonic() < deadline, f"workers never got busy: {started}"
            time.sleep(0.1)
        kids = _children(p.pid)  # the workers and the resource tracker
        assert set(started) <= set(kids), (started, kids)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    deadline = time.monotonic() + WAIT
    left = kids
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = {k: s for k, s in left.items() if _alive(k, s)}
    for k in left:  # do not leave them running on a red test
        os.kill(k, signal.SIGKILL)
    assert not left, f"children still running {WAIT} s after the parent's kill -9: {left}"


def test_the_lp_pools_worker_dies_with_its_parent(tmp_path):
    _kill_and_watch(tmp_path, LP_POOL, 1, "c")


def test_the_process_maps_workers_die_with_their_parent(tmp_path):
    _kill_and_watch(tmp_path, PROCESS_MAP, 2, "c")


def test_the_portable_watch_alone_ends_a_worker_whose_parent_died(tmp_path):
    _kill_and_watch(tmp_path, WATCH_ONLY, 1, "python")
