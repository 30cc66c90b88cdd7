"""A charged release on Spark, small data: what the content fingerprint costs.

The engine matrix's small ER-EE case (12 workplaces, 36 jobs; tests/release/engine_matrix.py,
the base case charged to a ledger) released with ``eree protect --engine spark --ledger``,
each run a fresh process and a fresh ledger (``eree ledger budget`` first, not timed);
the median wall time of ``--runs`` runs is reported, ``--engine polars`` beside it. Then,
in one more fresh process, the data are loaded by the Spark engine and the two
fingerprints (content and structure, what a charged release computes) are timed alone,
with the number of py4j commands the driver sent while building and running them.
``uptime``'s load average is printed before the runs (the machine may be shared).

    python benchmarks/bench_spark_fingerprint.py [--runs 5] [--workdir /tmp/eree-bench-fp]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine  # noqa: E402

_CHILD = """
import json, sys, time
sys.path.insert(0, {root!r})
from py4j import clientserver, java_gateway
from eree.engine.select import make_engine
from eree.release.family import family_of
from eree.release.spec import load_spec

calls = [0]
for cls in (clientserver.ClientServerConnection, java_gateway.GatewayConnection):
    send = cls.send_command
    def counted(self, command, _send=send):
        calls[0] += 1
        return _send(self, command)
    cls.send_command = counted
plan = load_spec({spec!r})
engine = make_engine("spark")
data = family_of(plan).load(plan, engine)
engine.fingerprints(data)  # warm: the first Spark job pays for code generation
c0, t0 = calls[0], time.perf_counter()
fp = engine.fingerprints(data)
print(json.dumps({{"seconds": time.perf_counter() - t0, "py4j_calls": calls[0] - c0,
                  "content": fp[0]}}))
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{ROOT / 'src'}{os.pathsep}{ROOT}"
    return env


def _eree(*args: str) -> float:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "eree.cli", *args], env=_env(),
                       capture_output=True, text=True, check=False)  # fmt: skip
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"eree {' '.join(args)} failed:\n{r.stderr[-2000:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/eree-bench-fp"))
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.release.engine_matrix import base_values, make_case, write_case

    shutil.rmtree(args.workdir, ignore_errors=True)
    args.workdir.mkdir(parents=True)
    case = make_case("eree", {**base_values("eree"), "charge": "charge ledger"})
    w = write_case(case, args.workdir)
    load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    walls: dict[str, list[float]] = {"spark": [], "polars": []}
    for i in range(args.runs):
        for engine in walls:
            ledger = args.workdir / f"ledger-{engine}-{i}.sqlite"
            _eree("ledger", "budget", str(ledger), w.name, *w.budget)
            out = args.workdir / f"out-{engine}-{i}"
            walls[engine].append(_eree("protect", str(w.spec), "--out", str(out), "--engine",
                                       engine, "--ledger", str(ledger)))  # fmt: skip
    child = subprocess.run(
        [sys.executable, "-c", _CHILD.format(root=str(ROOT), spec=str(w.spec))],
        env=_env(), capture_output=True, text=True, check=False,
    )  # fmt: skip
    if child.returncode != 0:
        raise SystemExit(child.stderr[-2000:])
    fp = json.loads(child.stdout.strip().splitlines()[-1])
    print(json.dumps({
        "machine": machine(),
        "uptime_before": load.strip(),
        "uptime_after": subprocess.run(["uptime"], capture_output=True, text=True,
                                       check=False).stdout.strip(),
        "case": case.id + " (charged to a ledger)",
        "runs": args.runs,
        "protect_wall_s": {e: [round(x, 2) for x in v] for e, v in walls.items()},
        "protect_median_s": {e: round(statistics.median(v), 2) for e, v in walls.items()},
        "fingerprints_in_process_s": round(fp["seconds"], 2),
        "fingerprints_py4j_calls": fp["py4j_calls"],
        "content_fingerprint": fp["content"],
    }, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
