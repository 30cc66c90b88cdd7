"""Peak memory of a release per cell of its query: the figure behind release/cells.py's estimate.

For n in ``--sizes``, one edge-DP Laplace query over age × sex with n declared values
each (n² cells) on the small ER-EE input of ``tests/cli/inputs.py``, released by
``eree protect SPEC --out DIR --seed 1`` in its own process; prints the process's peak
resident memory, and the bytes per cell above the smallest size's peak. Several runs
per size: the median.

    PYTHONPATH=src:. python benchmarks/bench_cell_memory.py --sizes 10 1000 2000 4000
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.cli.inputs import write_eree_case

_MEASURE = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
    "capture_output=True); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def spec_for(root: Path, n: int) -> Path:
    """The n × n-cell release's spec under ``root``."""
    spec = write_eree_case(root)

    def values(real: list[str], prefix: str) -> str:
        return (
            "["
            + ", ".join(f'"{v}"' for v in real + [f"{prefix}{i}" for i in range(n - len(real))])
            + "]"
        )

    head = spec.read_text().split("[privacy]")[0]
    spec.write_text(
        head
        + f"[data.domains]\nage = {values(['A01', 'A02', 'A03'], 'a')}\n"
        + f"sex = {values(['M', 'F'], 's')}\n"
        + '[privacy]\ndefinition = "edge-dp"\n'
        + '[[query]]\nname = "big"\nby = ["age", "sex"]\nmechanism = "laplace"\nepsilon = 1.0\n'
        + '[output]\nmax_cells = 100000000\n[engine]\nmemory = "1t"\n'
    )
    return spec


def peak_kib(spec: Path, out: Path) -> int:
    """Peak resident memory (KiB) of one ``eree protect`` process."""
    cmd = [sys.executable, "-m", "eree.cli", "protect", str(spec), "--out", str(out), "--seed", "1"]
    r = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], capture_output=True, text=True,
                       check=True, env=dict(os.environ))  # fmt: skip
    return int(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 1000, 2000, 4000])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="eree-cell-memory-"))
    base = None
    print("cells        peak MiB   bytes/cell above the smallest")
    for n in args.sizes:
        spec = spec_for(tmp / f"n{n}", n)
        peaks = [peak_kib(spec, tmp / f"out{n}-{r}") for r in range(args.runs)]
        peak = statistics.median(peaks)
        base = peak if base is None else base
        per_cell = (peak - base) * 1024 / (n * n) if n * n > args.sizes[0] ** 2 else float("nan")
        print(f"{n * n:>12,} {peak / 1024:>10,.0f} {per_cell:>10,.0f}", flush=True)


if __name__ == "__main__":
    main()
