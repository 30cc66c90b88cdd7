"""Worker processes that end when the process that started them dies.

eree's worker processes (:class:`eree.engine.unitmap.ProcessMap`'s pool, the LP pool of
:func:`eree.suppression.linked.lp_pool`) are started with ``spawn``. When their parent
ends normally the pools stop them; when it is killed (``kill -9``, the out-of-memory
killer) nothing would, and a worker busy in an LP would run on, an orphan holding memory
and a core. :func:`exit_with_parent` is the pools' initializer, run first in each worker:

* on Linux it asks the kernel to send the worker ``SIGKILL`` the moment its parent dies
  (``prctl(PR_SET_PDEATHSIG)`` through ``ctypes``): it ends the worker even inside a long
  C call that holds the interpreter lock (an LP solve);
* everywhere, a daemon thread looks at the parent every :data:`POLL_SECONDS` and ends
  the worker (``os._exit``) once the parent is gone (the worker is then reparented, so
  ``os.getppid()`` changes). It needs the interpreter lock, so it ends a worker at its
  next Python step; it is the fallback where the kernel signal is not available.

A parent that died before the initializer ran is caught by the same comparison at
start. Linux sends the signal when the *thread* that started the worker ends: a pool
must be used from a thread that outlives it (eree opens and closes each pool in one
call, in the calling thread).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

__all__ = ["POLL_SECONDS", "exit_with_parent", "kernel_parent_signal"]

#: how often the portable watch looks at the parent (seconds)
POLL_SECONDS = 0.2

#: prctl(2) option: the signal sent to this process when its parent dies
_PR_SET_PDEATHSIG = 1


def kernel_parent_signal() -> bool:
    """Ask the kernel for ``SIGKILL`` when the parent dies; whether it was granted."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0
    except (OSError, AttributeError):  # no libc, or no prctl in it
        return False


def _watch(parent: int) -> None:
    while True:
        time.sleep(POLL_SECONDS)
        if os.getppid() != parent:
            os._exit(1)


def exit_with_parent(parent: int, kernel: bool = True) -> None:
    """Initializer of a worker process: end it when process ``parent`` dies.

    Args:
        parent: the starting process's id (``os.getpid()`` there, passed as the pool's
            ``initargs``).
        kernel: also ask the kernel's signal (Linux); ``False`` leaves the portable
            watch alone (for its own test).
    """
    if kernel:
        kernel_parent_signal()
    if os.getppid() != parent:  # died before the signal was asked for
        os._exit(1)
    threading.Thread(target=_watch, args=(parent,), name="eree-parent-watch", daemon=True).start()
