"""Ctrl-C on a running ``eree evaluate``: a real SIGINT keeps the finished replicates."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from eree.synth.qcew import synth_qcew_parametric

# the command as users run it, with one line on stdout per finished replicate so that the
# test knows when to press Ctrl-C (the progress bar is off without a terminal)
SCRIPT = textwrap.dedent(
    """
    import sys
    import eree.evaluate.webb.run as run

    real = run.run_replicates

    def announced(*a, **k):
        inner = k.get("progress")

        def progress(msg):
            print("tick", flush=True)
            if inner is not None:
                inner(msg)

        k["progress"] = progress
        return real(*a, **k)

    run.run_replicates = announced
    from eree.cli import main

    sys.argv = ["eree", *sys.argv[1:]]
    main()
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigint_writes_the_finished_replicates_with_a_note(tmp_path: Path) -> None:
    data = tmp_path / "est.parquet"
    synth_qcew_parametric(3, 1500, n_counties=3).write(data)
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, "evaluate", "webb-table3", "--data", str(data),
         "--trials", "100000", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        ticks = 0
        for line in proc.stdout:
            ticks += line.strip() == "tick"
            if ticks == 3:
                break
        assert ticks == 3, proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
    assert (out / "INTERRUPTED").exists(), err
    note = (out / "INTERRUPTED").read_text()
    assert "partial" in note
    run = json.loads((out / "run.json").read_text())
    assert run["interrupted"] == note.strip()
    kept = int(note.split(" after ")[1].split(" of ")[0])
    assert kept >= 3  # at least the replicates announced before the signal
    assert (out / "results.csv").exists() and (out / "report.html").exists()
    assert f"{kept} of 100000 replicates" in note
    assert not [p for p in tmp_path.iterdir() if ".partial" in p.name]
