"""Stress the budget ledger with real `eree protect --ledger` processes.

See docs/design.md#budget-ledger.

1. Concurrency: for each k, 10 concurrent releases (ε = 1 each) on a dataset whose
   registered budget is ε = k; counts how many succeed (must be exactly k), how many are
   refused for the budget, and any other outcome.
2. kill -9: ``--kills`` releases, ``--parallel`` at a time, each killed with SIGKILL at a
   random moment (uniform over [0, 1.1 T], T the duration of an undisturbed release);
   then one ``eree ledger show`` (the next command, which reconciles) and a check that
   every charge not voided has its complete output, every output has its committed charge,
   no charge is left pending, no partial directory is left, and the chain verifies.

    python benchmarks/ledger_stress.py [--ks 1 3 7] [--kills 20] [--parallel 4] [--seed 0]
        [--workdir /tmp/eree-ledger-stress]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.release.conftest import SPEC, write_small_job_tables  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
EREE = [sys.executable, "-m", "eree.cli"]


def eree(*args: object, check: bool = False) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([*EREE, *map(str, args)], env=ENV, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"eree {' '.join(map(str, args))} failed: {r.stderr}")
    return r


def setup(work: Path, epsilon: float) -> tuple[Path, Path]:
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    write_small_job_tables(work / "data")
    spec = work / "spec.toml"
    spec.write_text(SPEC)  # dataset "small": ε = 10, δ ≈ 0.037 per release at α = 0.1
    led = work / "ledger.sqlite"
    eree("ledger", "budget", led, "small", "--epsilon", epsilon, "--delta", 0.99, "--alpha", 0.1,
         check=True)  # fmt: skip
    return spec, led


def concurrency(work: Path, k: int, n: int = 10) -> dict[str, int]:
    spec, led = setup(work, epsilon=10.0 * k)  # each release costs ε = 10
    procs = [
        subprocess.Popen(
            [*EREE, "protect", str(spec), "--out", str(work / f"r{i}"), "--ledger", str(led)],
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(n)
    ]
    ok = refused = other = 0
    for p in procs:
        out, _ = p.communicate()
        flat = " ".join(out.split())
        if p.returncode == 0:
            ok += 1
        elif "lifetime budget" in flat:
            refused += 1
        else:
            other += 1
            print(flat[-300:], file=sys.stderr)
    shown = json.loads(eree("ledger", "show", led, "--json", check=True).stdout)
    spent = shown["datasets"][0]["spent"]["epsilon"]
    outputs = sum(1 for i in range(n) if (work / f"r{i}" / "manifest.json").exists())
    return {"k": k, "succeeded": ok, "refused": refused, "other": other, "outputs": outputs,
            "spent_epsilon": spent}  # fmt: skip


def check_invariants(work: Path, led: Path) -> dict[str, object]:
    """Every charge has its complete output and every output its charge."""
    from eree.privacy.ledger import Ledger

    book = Ledger(led, reconcile=False)  # read only: the CLI command already reconciled
    rel = {r["id"]: r for r in book.releases()}
    problems = []
    for rid, r in rel.items():
        out = Path(r["out_dir"])
        if r["status"] == "pending":
            problems.append(f"charge {rid} still pending")
        if r["status"] == "committed":
            m = out / "manifest.json"
            if not m.exists():
                problems.append(f"charge {rid}: no output")
                continue
            man = json.loads(m.read_text())
            if man["ledger"]["id"] != rid:
                problems.append(f"charge {rid}: output names another charge")
            for q in man["queries"]:
                if not (out / q["file"]).exists():
                    problems.append(f"charge {rid}: table {q['file']} missing")
    for d in work.iterdir():
        if d.name.startswith("k") and d.is_dir():
            m = d / "manifest.json"
            if not m.exists():
                problems.append(f"{d.name}: a directory without a complete output")
                continue
            rid = json.loads(m.read_text())["ledger"]["id"]
            if rel.get(rid, {}).get("status") != "committed":
                problems.append(f"{d.name}: output without a committed charge")
        if ".partial-" in d.name:
            problems.append(f"{d.name}: partial directory left")
    v = book.verify()
    if not v.ok:
        problems.extend(v.problems)
    status = [r["status"] for r in rel.values()]
    import sqlite3
    from collections import Counter

    how = Counter(
        json.loads(b).get("how") or json.loads(b).get("reason")
        for (b,) in sqlite3.connect(led).execute(
            "SELECT body FROM events WHERE kind IN ('commit', 'void')")
    )  # fmt: skip
    return {"committed": status.count("committed"), "void": status.count("void"),
            "pending": status.count("pending"), "settled_by": dict(how),
            "problems": problems}  # fmt: skip


def _reserved(led: Path, out: Path) -> bool:
    import sqlite3

    con = sqlite3.connect(f"file:{led}?mode=ro", uri=True, timeout=30)
    try:
        rows = con.execute("SELECT body FROM events WHERE kind = 'reserve'").fetchall()
    finally:
        con.close()
    return any(json.loads(b)["out_dir"] == str(out.resolve()) for (b,) in rows)


def _window(led: Path) -> float:
    """Seconds from the reference release's reservation to its commit (the critical window)."""
    import sqlite3
    from datetime import datetime

    con = sqlite3.connect(led)
    t = dict(con.execute("SELECT kind, created FROM events WHERE kind IN ('reserve', 'commit')"))
    dt = datetime.fromisoformat(t["commit"]) - datetime.fromisoformat(t["reserve"])
    return dt.total_seconds()


def kills(work: Path, n: int, parallel: int, rng: random.Random) -> dict[str, object]:
    """Half the kills at a uniform moment of the whole run, half at a uniform moment of the
    window after the reservation (where a crash can leave a charge or a partial output)."""
    import threading

    spec, led = setup(work, epsilon=1e6)
    t0 = time.perf_counter()
    eree("protect", spec, "--out", work / "k_ref", "--ledger", led, check=True)
    T = time.perf_counter() - t0
    W = _window(led)
    log: list[dict[str, object]] = []

    def one(i: int) -> None:
        out = work / f"k{i:02d}"
        mode = "uniform" if i % 2 == 0 else "after-reserve"
        p = subprocess.Popen([*EREE, "protect", str(spec), "--out", str(out), "--ledger",
                              str(led)], env=ENV, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)  # fmt: skip
        start = time.perf_counter()
        if mode == "uniform":
            time.sleep(rng.uniform(0, 1.1 * T))
        else:
            while p.poll() is None and not _reserved(led, out):
                time.sleep(0.002)
            time.sleep(rng.uniform(0, 1.5 * W))
        alive = p.poll() is None
        if alive:
            p.send_signal(signal.SIGKILL)
        p.wait()
        log.append({"i": i, "mode": mode, "at": round(time.perf_counter() - start, 3),
                    "killed": alive})  # fmt: skip

    for s0 in range(0, n, parallel):
        ts = [threading.Thread(target=one, args=(i,)) for i in range(s0, min(n, s0 + parallel))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    pending = check_invariants_raw(led)
    eree("ledger", "show", led, check=True)  # the next command reconciles
    after = check_invariants(work, led)
    outputs = sum(1 for d in work.iterdir() if d.name.startswith("k") and d.is_dir())
    return {"kills": n, "parallel": parallel, "T_seconds": round(T, 2),
            "window_seconds": round(W, 3),
            "killed": sum(1 for x in log if x["killed"]),
            "finished_before_kill": sum(1 for x in log if not x["killed"]),
            "pending_before_next_command": pending, "output_dirs": outputs, **after,
            "log": sorted(log, key=lambda x: int(x["i"]))}  # type: ignore[arg-type]  # fmt: skip


def check_invariants_raw(led: Path) -> int:
    import sqlite3

    con = sqlite3.connect(led)
    rows = con.execute("SELECT kind, body FROM events").fetchall()
    res = sum(1 for k, _ in rows if k == "reserve")
    settled = sum(1 for k, _ in rows if k in ("commit", "void"))
    return res - settled


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ks", type=int, nargs="+", default=[1, 3, 7])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/eree-ledger-stress"))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    out: dict[str, object] = {"concurrency": [], "kill": None}
    for k in a.ks:
        r = concurrency(a.workdir / f"conc{k}", k)
        print(json.dumps(r), flush=True)
        out["concurrency"].append(r)  # type: ignore[attr-defined]
    r2 = kills(a.workdir / "kill", a.kills, a.parallel, rng)
    print(json.dumps(r2), flush=True)
    out["kill"] = r2
    (a.workdir / "results.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
