"""Budget escapes through the ledger, each run as a user would run it (the `eree` command in
a subprocess): the same data released under a second registered name, and a ledger file
replaced by an older copy of itself."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.release.conftest import SPEC, write_small_job_tables

#: the spec's total cost: ε = 10, δ ≈ 0.037 (see tests/release/conftest.py)
COST = 10.0
#: a δ budget for one release (0.04) and one for many (0.5)
ONE_DELTA, MANY_DELTA = 0.04, 0.5


def eree(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "eree.cli", *(str(a) for a in args)],
        cwd=cwd, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip


@pytest.fixture
def work(tmp_path):
    write_small_job_tables(tmp_path / "data")
    for name in ("pa-2015", "sandbox"):
        (tmp_path / f"{name}.toml").write_text(SPEC.replace('name = "small"', f'name = "{name}"'))
    return tmp_path


def _show(work: Path, led: Path) -> dict:
    r = eree("ledger", "show", led, "--json", cwd=work)
    assert r.returncode == 0, r.stderr
    return {d["dataset"]: d for d in json.loads(r.stdout)["datasets"]}


def test_data_released_under_a_generous_name_still_count_against_the_proper_one(work):
    led = work / "l.sqlite"
    for name, eps, delta in (("pa-2015", COST, ONE_DELTA), ("sandbox", 100 * COST, MANY_DELTA)):
        assert eree("ledger", "budget", led, name, "--epsilon", eps, "--delta", delta,
                    "--alpha", 0.1, cwd=work).returncode == 0  # fmt: skip
    # by mistake, the real data are released once under the sandbox's name
    r = eree("protect", "sandbox.toml", "--out", "r0", "--ledger", led, cwd=work)
    assert r.returncode == 0, r.stderr
    # pa-2015 has a budget of exactly one release, and these data have had one already
    r = eree("protect", "pa-2015.toml", "--out", "r1", "--ledger", led, cwd=work)
    assert r.returncode == 2, r.stdout + r.stderr
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and "lifetime budget of 'pa-2015'" in err[0], r.stderr
    assert "'sandbox'" in err[0]  # says why: the same data as sandbox
    assert not (work / "r1").exists()
    # the refused release recorded nothing (a refused release must not bind, see below)
    assert _show(work, led)["pa-2015"]["same_data_as"] == []
    # once pa-2015 has room for the sandbox's release and this one, the release is accepted,
    # the data are bound to both names, and every release counts against both budgets
    assert eree("ledger", "budget", led, "pa-2015", "--epsilon", 2 * COST, "--delta",
                MANY_DELTA, "--alpha", 0.1, cwd=work).returncode == 0  # fmt: skip
    r = eree("protect", "pa-2015.toml", "--out", "r1", "--ledger", led, cwd=work)
    assert r.returncode == 0, r.stderr
    shown = _show(work, led)
    assert shown["pa-2015"]["spent"]["epsilon"] == 2 * COST  # the sandbox release counts here
    assert shown["pa-2015"]["same_data_as"] == ["sandbox"]
    assert shown["sandbox"]["same_data_as"] == ["pa-2015"]
    # and the sandbox's generous budget cannot be used for these data any more
    r = eree("protect", "sandbox.toml", "--out", "r2", "--ledger", led, cwd=work)
    assert r.returncode == 2 and "lifetime budget of 'pa-2015'" in r.stderr


def test_a_refused_release_under_a_small_budget_does_not_lock_the_data(work):
    led = work / "l.sqlite"
    for name, eps in (("pa-2015", 3 * COST), ("sandbox", COST / 20)):
        assert eree("ledger", "budget", led, name, "--epsilon", eps, "--delta", MANY_DELTA,
                    "--alpha", 0.1, cwd=work).returncode == 0  # fmt: skip
    assert eree("protect", "pa-2015.toml", "--out", "r0", "--ledger", led, cwd=work).returncode == 0
    # the data under a name registered with a tiny budget: refused
    r = eree("protect", "sandbox.toml", "--out", "z", "--ledger", led, cwd=work)
    assert r.returncode == 2 and "lifetime budget of 'sandbox'" in r.stderr, r.stderr
    shown = _show(work, led)
    assert shown["pa-2015"]["same_data_as"] == [] and shown["sandbox"]["releases"] == {
        "committed": 0, "pending": 0, "void": 0}  # fmt: skip
    # ... and the real name's releases go on
    for out in ("r1", "r2"):
        r = eree("protect", "pa-2015.toml", "--out", out, "--ledger", led, cwd=work)
        assert r.returncode == 0, r.stderr


def test_an_unregistered_second_name_is_charged_to_the_known_one(work):
    led = work / "l.sqlite"
    assert eree("ledger", "budget", led, "sandbox", "--epsilon", 2 * COST, "--delta", MANY_DELTA,
                "--alpha", 0.1, cwd=work).returncode == 0  # fmt: skip
    assert eree("protect", "sandbox.toml", "--out", "r0", "--ledger", led, cwd=work).returncode == 0
    r = eree("protect", "pa-2015.toml", "--out", "r1", "--ledger", led, cwd=work)
    assert r.returncode == 0, r.stderr
    assert "charged to 'sandbox'" in " ".join(r.stdout.split())
    assert _show(work, led)["sandbox"]["spent"]["epsilon"] == 2 * COST


def _register_and_release(work: Path, led: Path, budget: float, outs: list[str]) -> None:
    assert eree("ledger", "budget", led, "pa-2015", "--epsilon", budget, "--delta", MANY_DELTA,
                "--alpha", 0.1, cwd=work).returncode == 0  # fmt: skip
    for out in outs:
        r = eree("protect", "pa-2015.toml", "--out", out, "--ledger", led, cwd=work)
        assert r.returncode == 0, r.stderr


def test_a_ledger_copied_back_over_itself_is_refused(work):
    led = work / "l.sqlite"
    _register_and_release(work, led, 2 * COST, ["r1"])
    shutil.copy(led, work / "old.sqlite")  # the ledger after one release
    _register_and_release(work, led, 2 * COST, ["r2"])  # (re-registering changes nothing)
    shutil.copy(work / "old.sqlite", led)  # ... copied back: one release is forgotten
    for wal in ("-wal", "-shm"):
        Path(str(led) + wal).unlink(missing_ok=True)
    r = eree("protect", "pa-2015.toml", "--out", "r3", "--ledger", led, cwd=work)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "rolled back" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (work / "r3").exists()
    r = eree("ledger", "verify", led, cwd=work)
    assert r.returncode != 0 and "rolled back" in r.stdout + r.stderr


def test_a_ledger_whose_tail_was_deleted_is_refused(work):
    led = work / "l.sqlite"
    _register_and_release(work, led, 3 * COST, ["r1", "r2"])
    con = sqlite3.connect(led)
    (last,) = con.execute("SELECT max(id) FROM events WHERE kind = 'reserve'").fetchone()
    con.execute("DELETE FROM events WHERE id >= ?", (last,))
    con.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'events'", (last - 1,))
    con.commit()
    con.close()
    r = eree("protect", "pa-2015.toml", "--out", "r3", "--ledger", led, cwd=work)
    assert r.returncode == 2 and "rolled back" in r.stderr, r.stdout + r.stderr
    r = eree("ledger", "verify", led, cwd=work)
    assert r.returncode != 0 and "rolled back" in r.stdout + r.stderr


def test_an_untouched_ledger_verifies_and_keeps_its_anchor_current(work):
    led = work / "l.sqlite"
    _register_and_release(work, led, 3 * COST, ["r1", "r2"])
    r = eree("ledger", "verify", led, "--release", work / "r1", "--release", work / "r2", cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr
    head = Path(str(led) + ".head")
    assert head.exists() and (head.stat().st_mode & 0o077) == 0
    con = sqlite3.connect(led)
    top = con.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
    assert head.read_text().split()[:2] == [str(top[0]), top[1]]


def test_a_ledger_key_that_is_a_pipe_is_refused_not_read(work):
    led = work / "l.sqlite"
    assert eree("ledger", "budget", led, "pa-2015", "--epsilon", COST, "--delta", ONE_DELTA,
                "--alpha", 0.1, cwd=work).returncode == 0  # fmt: skip
    key = Path(str(led) + ".key")
    key.unlink()
    os.mkfifo(key, 0o600)
    r = subprocess.run([sys.executable, "-m", "eree.cli", "ledger", "show", str(led)],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 2 and "is not a regular file" in r.stderr, r.stderr


def test_an_auditors_read_only_copy_is_shown_and_verified_without_a_write(work, monkeypatch):
    """`ledger show` and `ledger verify` read a ledger they cannot write as it is.

    (The tests run as a user who can write everywhere; the command is told it cannot.)
    """
    from typer.testing import CliRunner

    from eree.cli import app

    led = work / "l.sqlite"
    _register_and_release(work, led, 3 * COST, ["r1"])
    copy = work / "audit"
    copy.mkdir()
    for suffix in ("", ".key", ".head"):
        shutil.copy(str(led) + suffix, str(copy / "l.sqlite") + suffix)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in copy.iterdir()}
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: mode != os.W_OK)
    # every connection the commands open must be read-only (root could write anyway)
    opened: list[str] = []
    real_connect = sqlite3.connect

    def connect(database, *args, **kwargs):
        opened.append(str(database))
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    runner = CliRunner()
    r = runner.invoke(app, ["ledger", "show", str(copy / "l.sqlite"), "--json"])
    assert r.exit_code == 0, r.output
    (ds,) = json.loads(r.output)["datasets"]
    assert ds["dataset"] == "pa-2015" and ds["spent"]["epsilon"] == COST
    r = runner.invoke(app, ["ledger", "verify", str(copy / "l.sqlite")])
    assert r.exit_code == 0 and "chain intact" in r.output, r.output
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in copy.iterdir()}
    assert after == before  # nothing written: no journal, no anchor, no reconciliation
    assert opened and all("mode=ro" in d for d in opened), opened


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory", "huge"])
def test_an_anchor_that_is_not_a_small_regular_file_is_one_line(work, kind):
    """LEDGER.head as a link to /dev/zero (was a MemoryError) or a FIFO (was a hang)."""
    led = work / "l.sqlite"
    _register_and_release(work, led, 3 * COST, [])
    head = work / "l.sqlite.head"
    head.unlink()
    if kind == "dev-zero":
        head.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(head)
    elif kind == "directory":
        head.mkdir()
    else:
        head.write_text("1 " + "0" * (1 << 20) + "\n")
    for args in (["protect", "pa-2015.toml", "--out", "r", "--ledger", led],
                 ["ledger", "verify", led], ["ledger", "show", led]):  # fmt: skip
        try:
            r = subprocess.run(
                [sys.executable, "-m", "eree.cli", *(str(a) for a in args)], cwd=work,
                capture_output=True, text=True, timeout=120,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            pytest.fail(f"eree {args[0]} hangs on an anchor that is a {kind}")
        assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr, r.stderr
        if kind == "huge" and args[1] == "show":
            continue  # a regular file that does not parse: `show` verifies nothing
        assert r.returncode != 0 and "l.sqlite.head" in r.stdout + r.stderr, (args, r.stderr)
        if args[0] == "protect":
            assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
            assert not (work / "r").exists()


def _near_copy(work: Path, change: str) -> None:
    """The data under data2/: one workplace row without jobs added, or one job moved."""
    import polars as pl

    src, dst = work / "data", work / "data2"
    shutil.copytree(src, dst)
    if change == "empty-workplace":
        wp = pl.read_parquet(dst / "workplace.parquet")
        extra = wp.head(1).with_columns(pl.lit("w999").alias("workplace_id"))
        pl.concat([wp, extra]).write_parquet(dst / "workplace.parquet")
    else:
        job = pl.read_parquet(dst / "job.parquet")
        first = job["workplace_id"][0]
        other = job.filter(pl.col("workplace_id") != first)["workplace_id"][0]
        job = job.with_columns(
            pl.when(pl.int_range(pl.len()) == 0).then(pl.lit(other))
            .otherwise(pl.col("workplace_id")).alias("workplace_id")
        )  # fmt: skip
        job.write_parquet(dst / "job.parquet")
    text = SPEC.replace('name = "small"', 'name = "sandbox"').replace("data/", "data2/")
    (work / "near.toml").write_text(text)


@pytest.mark.parametrize("change", ["empty-workplace", "moved-job"])
def test_near_identical_data_under_another_name_get_no_fresh_budget(work, change):
    led = work / "l.sqlite"
    for name, eps in (("pa-2015", COST), ("sandbox", 100 * COST)):
        assert eree("ledger", "budget", led, name, "--epsilon", eps, "--delta", MANY_DELTA,
                    "--alpha", 0.1, cwd=work).returncode == 0  # fmt: skip
    r = eree("protect", "pa-2015.toml", "--out", "r0", "--ledger", led, cwd=work)
    assert r.returncode == 0, r.stderr  # pa-2015's budget is spent
    _near_copy(work, change)
    r = eree("protect", "near.toml", "--out", "r1", "--ledger", led, cwd=work)
    assert r.returncode == 2 and "nearly the same establishments and jobs" in r.stderr, r.stderr
    assert "'pa-2015'" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = eree("protect", "near.toml", "--out", "r1", "--ledger", led, "--new-version", cwd=work)
    assert r.returncode == 2 and "lifetime budget of 'pa-2015'" in r.stderr, r.stderr
    assert not (work / "r1").exists()
    assert _show(work, led)["sandbox"]["releases"]["committed"] == 0
