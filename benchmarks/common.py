"""Benchmark plumbing: run a step in a fresh process, measure wall time and peak memory."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SHARED_DATA = HERE.parent.parent / "shared" / "data"


def machine() -> dict[str, Any]:
    import numpy
    import polars

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem, 1),
        "python": platform.python_version(),
        "polars": polars.__version__,
        "numpy": numpy.__version__,
    }


def run_child(code: str) -> tuple[float, float, dict[str, Any]]:
    """Run ``code`` in a fresh interpreter; return (wall seconds, peak RSS MiB, its JSON)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    out = proc.stdout.read() if proc.stdout else ""
    err = proc.stderr.read() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"benchmark child failed:\n{err}")
    payload = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    return wall, usage.ru_maxrss / 1024.0, payload


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    keys = runs[0].keys()
    return {k: statistics.median(r[k] for r in runs) for k in keys}
