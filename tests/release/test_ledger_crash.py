"""kill -9 of real `eree protect --ledger` processes (docs/design.md#budget-ledger, slow).

Twenty releases are killed with SIGKILL at random moments — half anywhere in the run,
half in the window after their reservation — four at a time. After the next command
(`eree ledger show`), every charge not voided must have its complete output, every output
its committed charge, no charge may be pending, no partial directory may remain, and the
chain must verify.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import eree
from eree.privacy.ledger import Ledger

from .conftest import SPEC, write_small_job_tables

ENV = {**os.environ, "PYTHONPATH": str(Path(eree.__file__).resolve().parents[1])}
EREE = [sys.executable, "-m", "eree.cli"]


def _reserved(led: Path, out: Path) -> bool:
    con = sqlite3.connect(f"file:{led}?mode=ro", uri=True, timeout=30)
    try:
        rows = con.execute("SELECT body FROM events WHERE kind = 'reserve'").fetchall()
    finally:
        con.close()
    return any(json.loads(b)["out_dir"] == str(out.resolve()) for (b,) in rows)


@pytest.mark.slow
def test_twenty_kill9_releases_leave_every_charge_with_its_output(tmp_path):
    write_small_job_tables(tmp_path / "data")
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    led = tmp_path / "ledger.sqlite"
    Ledger(led).set_budget("small", epsilon=1e6, delta=0.99, alpha=0.1)
    t0 = time.perf_counter()
    subprocess.run([*EREE, "protect", spec, "--out", tmp_path / "r_ref", "--ledger", led],
                   env=ENV, check=True, capture_output=True)  # fmt: skip
    T = time.perf_counter() - t0
    rng = random.Random(20)
    delays = [rng.uniform(0, 1.1 * T) if i % 2 == 0 else rng.uniform(0, 0.3) for i in range(20)]

    def one(i: int) -> None:
        out = tmp_path / f"r{i:02d}"
        p = subprocess.Popen([*EREE, "protect", str(spec), "--out", str(out), "--ledger",
                              str(led)], env=ENV, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)  # fmt: skip
        if i % 2:  # wait for the reservation, then kill inside the release
            while p.poll() is None and not _reserved(led, out):
                time.sleep(0.002)
        time.sleep(delays[i])
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
        p.wait()

    for start in range(0, 20, 4):
        ts = [threading.Thread(target=one, args=(i,)) for i in range(start, start + 4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    r = subprocess.run([*EREE, "ledger", "show", led], env=ENV, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr

    rel = {x["id"]: x for x in Ledger(led, reconcile=False).releases()}
    assert [x for x in rel.values() if x["status"] == "pending"] == []
    for rid, x in rel.items():
        if x["status"] == "committed":
            m = json.loads((Path(x["out_dir"]) / "manifest.json").read_text())
            assert m["ledger"]["id"] == rid
            for q in m["queries"]:
                assert (Path(x["out_dir"]) / q["file"]).is_file()
    for d in tmp_path.iterdir():
        assert ".partial-" not in d.name
        if d.is_dir() and d.name.startswith("r"):
            rid = json.loads((d / "manifest.json").read_text())["ledger"]["id"]
            assert rel[rid]["status"] == "committed"
    assert Ledger(led, reconcile=False).verify().ok
    # the reservations that were made: at least the reference and some killed ones
    assert len(rel) >= 2
