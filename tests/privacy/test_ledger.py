"""The budget ledger: registered budgets, identity by content, one total
per family, exact costs, reconciliation after a crash, tamper evidence.
See docs/design.md#budget-ledger.

Expected totals are computed by hand in each test (e.g. √(3²+4²) = 5), never with the
ledger's own helpers.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from fractions import Fraction
from pathlib import Path

import pytest

import eree.privacy.ledger as ledger_mod
from eree.errors import BudgetExceededError, LedgerError, PrivacyParameterError
from eree.privacy.composition import Cost
from eree.privacy.ledger import Ledger
from eree.release.output import write_release

FP_A = "a" * 64  # content fingerprints (the ledger keys them)
FP_B = "b" * 64
SCHEME = "eree-fingerprint-v2"


def _release(led: Ledger, out: Path, *, dataset="pa", fp=FP_A, definition="eree", alpha=0.1,
             cost=None, spec_budget=None, new_version=False):  # fmt: skip
    """One release through the ledger's context manager, writing a real (empty) release."""
    with led.charge(
        dataset=dataset, fingerprint=fp, definition=definition, alpha=alpha,
        cost=cost if cost is not None else Cost(epsilon=1.0, delta=0.0), out_dir=out,
        spec_budget=spec_budget, new_version=new_version, scheme=SCHEME,
    ) as charge:  # fmt: skip
        write_release(out, [], {"ledger": charge.manifest_entry()}, tag=charge.tag)
    return charge


def _events(path: Path) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT id, kind, dataset, body FROM events ORDER BY id").fetchall()
    finally:
        con.close()


def _statuses(led: Ledger) -> list[str]:
    return [r["status"] for r in led.releases()]


def test_unregistered_dataset_is_refused(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    with pytest.raises(LedgerError, match="'pa' is not registered"):
        _release(led, tmp_path / "o")
    assert not (tmp_path / "o").exists() and led.releases() == []


def test_renamed_dataset_is_charged_to_the_known_name(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.set_budget("pa", epsilon=2.0, alpha=0.1)
    _release(led, tmp_path / "o1", cost=Cost(epsilon=1.5, delta=0))
    # same content under a new, unregistered name: charged to 'pa', which has 0.5 left
    with pytest.raises(BudgetExceededError, match=r"'pa'.*already in the ledger as dataset 'pa'"):
        _release(led, tmp_path / "o2", dataset="pa-renamed", cost=Cost(epsilon=1.0, delta=0))
    ch = _release(led, tmp_path / "o3", dataset="pa-renamed", cost=Cost(epsilon=0.5, delta=0))
    assert ch.dataset == "pa" and any("charged to 'pa'" in n for n in ch.notes)
    assert led.spent("pa").exact_epsilon == Fraction(2)  # 1.5 + 0.5


def test_changed_content_needs_new_version_and_is_linked(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.set_budget("pa", epsilon=3.0, alpha=0.1)
    _release(led, tmp_path / "o1")
    with pytest.raises(LedgerError, match="--new-version"):
        _release(led, tmp_path / "o2", fp=FP_B)
    ch = _release(led, tmp_path / "o3", fp=FP_B, new_version=True)
    assert ch.version == 2 and ch.dataset == "pa"
    (entry,) = led.show()
    assert [v["version"] for v in entry["versions"]] == [1, 2]
    # both versions share the dataset's one running total: 1 + 1
    assert entry["spent"]["epsilon"] == 2.0
    # the old content is still recognised as version 1, without --new-version
    assert _release(led, tmp_path / "o4").version == 1
    with pytest.raises(BudgetExceededError):  # 3 spent of 3
        _release(led, tmp_path / "o5", fp=FP_B)


def test_every_key_of_the_family_is_checked(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.set_budget("pa", epsilon=1.0, alpha=0.1)  # δ not given: δ = 0
    with pytest.raises(BudgetExceededError, match="epsilon"):
        _release(led, tmp_path / "o1", cost=Cost(epsilon=10.0, delta=0.0))
    with pytest.raises(BudgetExceededError, match="delta"):
        _release(led, tmp_path / "o2", cost=Cost(epsilon=0.5, delta=1e-9))
    assert led.releases() == []
    led.set_budget("ri", mu=5.0)
    _release(led, tmp_path / "g1", dataset="ri", fp=FP_B, definition="gedp", alpha=None,
             cost=Cost(mu=3.0))  # fmt: skip
    _release(led, tmp_path / "g2", dataset="ri", fp=FP_B, definition="gedp", alpha=None,
             cost=Cost(mu=4.0))  # √(9 + 16) = 5: exactly the budget  # fmt: skip
    with pytest.raises(BudgetExceededError, match="mu"):
        _release(led, tmp_path / "g3", dataset="ri", fp=FP_B, definition="gedp", alpha=None,
                 cost=Cost(mu=0.1))  # fmt: skip


def test_budget_keys_of_another_family_are_errors(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    with pytest.raises(PrivacyParameterError, match="not both"):
        led.set_budget("pa", epsilon=1.0, mu=1.0)
    led.set_budget("pa", epsilon=30.0, alpha=0.1)
    # the reviewer's spec: { epsilon = 1, mu = 1 } on an ER-EE release
    with pytest.raises(PrivacyParameterError, match="'mu'"):
        _release(led, tmp_path / "o", cost=Cost(epsilon=10.0, delta=0),
                 spec_budget={"epsilon": 1.0, "mu": 1.0})  # fmt: skip
    led.set_budget("ri", mu=3.0)
    with pytest.raises(PrivacyParameterError, match="'epsilon'"):
        _release(led, tmp_path / "g", dataset="ri", fp=FP_B, definition="gedp", alpha=None,
                 cost=Cost(mu=1.0), spec_budget={"epsilon": 1.0, "mu": 2.0})  # fmt: skip
    # a GEDP release cannot be charged to an ER-EE budget
    with pytest.raises(LedgerError, match="budget of the epsilon-delta family"):
        _release(led, tmp_path / "h", dataset="pa", fp=FP_A, definition="gedp", alpha=None,
                 cost=Cost(mu=1.0))  # fmt: skip
    assert led.releases() == []


def test_one_total_across_four_definitions(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.set_budget("pa", epsilon=8.0, alpha=0.1)
    for i, d in enumerate(("eree", "edge-dp", "node-dp", "blowfish")):
        _release(led, tmp_path / f"o{i}", definition=d,
                 alpha=None if d in ("edge-dp", "node-dp") else 0.1,
                 cost=Cost(epsilon=2.0, delta=0.0))  # fmt: skip
    assert led.spent("pa").exact_epsilon == Fraction(8)  # 2 + 2 + 2 + 2
    with pytest.raises(BudgetExceededError):
        _release(led, tmp_path / "o9", definition="eree-weak", cost=Cost(epsilon=0.5, delta=0))


def test_budget_of_two_admits_one_release_at_two_whatever_the_definition(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.set_budget("pa", epsilon=2.0, alpha=0.1)
    _release(led, tmp_path / "o0", definition="eree", cost=Cost(epsilon=2.0, delta=0))
    for i, d in enumerate(("edge-dp", "node-dp", "blowfish")):
        with pytest.raises(BudgetExceededError):
            _release(led, tmp_path / f"o{i + 1}", definition=d, cost=Cost(epsilon=2.0, delta=0),
                     alpha=None if d != "blowfish" else 0.1)  # fmt: skip
    assert _statuses(led) == ["committed"]


def test_one_alpha_per_dataset(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.set_budget("pa", epsilon=10.0)
    _release(led, tmp_path / "o1", definition="eree", alpha=0.1)
    with pytest.raises(PrivacyParameterError, match=r"alpha=0\.1"):
        _release(led, tmp_path / "o2", definition="eree-weak", alpha=0.2)


def test_spec_budget_only_lowers_the_ledger_budget(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.set_budget("pa", epsilon=10.0, alpha=0.1)
    with pytest.raises(BudgetExceededError, match="lifetime budget"):
        _release(led, tmp_path / "o1", cost=Cost(epsilon=11.0, delta=0),
                 spec_budget={"epsilon": 100.0})  # fmt: skip
    with pytest.raises(BudgetExceededError, match=r"\[privacy\] budget"):
        _release(led, tmp_path / "o2", cost=Cost(epsilon=4.0, delta=0),
                 spec_budget={"epsilon": 3.0})  # fmt: skip
    _release(led, tmp_path / "o3", cost=Cost(epsilon=4.0, delta=0))
    assert led.releases()[0]["cost"]["epsilon"] == 4.0


def test_costs_are_stored_exactly(tmp_path):
    path = tmp_path / "l.sqlite"
    led = Ledger(path)
    led.set_budget("pa", epsilon=1.0, alpha=0.1)
    _release(led, tmp_path / "o", cost=Cost(epsilon=0.1, delta=0.0))
    con = sqlite3.connect(path)
    (body,) = con.execute("SELECT body FROM events WHERE kind='reserve'").fetchone()
    # 0.1 as a float is exactly 3602879701896397 / 2**55
    assert json.loads(body)["cost"]["epsilon"] == "3602879701896397/36028797018963968"


def test_hand_edited_or_deleted_rows_are_detected(tmp_path):
    path = tmp_path / "l.sqlite"
    led = Ledger(path)
    led.set_budget("pa", epsilon=3.0, alpha=0.1)
    for i in range(3):
        _release(led, tmp_path / f"o{i}")
    assert led.verify([tmp_path / "o0", tmp_path / "o2"]).ok
    con = sqlite3.connect(path)
    # the reviewer's edit: set a release's epsilon to 0
    (rid, body) = con.execute("SELECT id, body FROM events WHERE kind='reserve'").fetchone()
    b = json.loads(body)
    b["cost"]["epsilon"] = "0"
    con.execute("UPDATE events SET body=? WHERE id=?", (json.dumps(b), rid))
    con.commit()
    res = Ledger(path).verify()
    assert not res.ok and any(f"row {rid}" in p and "edited" in p for p in res.problems)
    with pytest.raises(LedgerError, match="fails verification"):
        _release(Ledger(path), tmp_path / "o9")
    # put it back, then delete a row in the middle and one at the end
    con.execute("UPDATE events SET body=? WHERE id=?", (body, rid))
    con.commit()
    assert Ledger(path).verify().ok
    con.execute("DELETE FROM events WHERE id = 3")
    con.commit()
    assert not Ledger(path).verify().ok
    last = con.execute("SELECT max(id) FROM events").fetchone()[0]
    con.execute("DELETE FROM events WHERE id >= 3")
    con.commit()
    res = Ledger(path).verify()
    assert not res.ok and any("deleted" in p for p in res.problems), (last, res)
    # a release manifest naming a row that is gone no longer checks out
    assert not Ledger(path).verify([tmp_path / "o2"]).ok


def test_a_deleted_ledger_or_key_does_not_reset_the_budget(tmp_path):
    path = tmp_path / "l.sqlite"
    led = Ledger(path)
    led.set_budget("pa", epsilon=1.0, alpha=0.1)
    _release(led, tmp_path / "o1")
    path.unlink()
    # a fresh ledger in its place is refused: the anchor beside it has seen four rows
    with pytest.raises(LedgerError, match="rolled back"):
        _release(Ledger(path), tmp_path / "o2")
    path = tmp_path / "other.sqlite"
    led = Ledger(path)
    led.set_budget("pa", epsilon=1.0, alpha=0.1)
    Path(str(path) + ".key").unlink()
    with pytest.raises(LedgerError, match="secret key"):
        Ledger(path)


def test_key_file_is_private(tmp_path):
    Ledger(tmp_path / "l.sqlite").set_budget("pa", epsilon=1.0)
    assert (Path(tmp_path / "l.sqlite.key").stat().st_mode & 0o777) == 0o600


def test_not_a_ledger(tmp_path):
    bad = tmp_path / "x.sqlite"
    bad.write_text("not a database\n" * 100)
    with pytest.raises(LedgerError, match="not an eree ledger"):
        Ledger(bad)
    with pytest.raises(LedgerError, match="not a file"):
        Ledger(tmp_path)


# ------------------------------------------------------------------ crash recovery
def _dead_owner() -> dict:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    owner = ledger_mod._me()
    owner.update(pid=p.pid, start="1")  # a process that has exited
    return owner


def _reserve_as(monkeypatch, led, owner, out, **kw):
    monkeypatch.setattr(ledger_mod, "_me", lambda: owner)
    try:
        return led.reserve(dataset="pa", fingerprint=FP_A, definition="eree", alpha=0.1,
                           cost=Cost(epsilon=1.0, delta=0.0), out_dir=out, scheme=SCHEME,
                           **kw)  # fmt: skip
    finally:
        monkeypatch.undo()


def test_reconcile_settles_only_dead_processes(tmp_path, monkeypatch):
    path = tmp_path / "l.sqlite"
    led = Ledger(path)
    led.set_budget("pa", epsilon=10.0, alpha=0.1)
    live_proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = ledger_mod._me()
        live.update(pid=live_proc.pid, start=ledger_mod._proc_start(live_proc.pid))
        # 1. crashed before writing anything, leaving an incomplete partial directory
        c1 = _reserve_as(monkeypatch, led, _dead_owner(), tmp_path / "none")
        half = tmp_path / f".none.partial-{c1.tag}-x1"
        (half / "tables").mkdir(parents=True)
        # 2. crashed after writing the complete output in its partial dir, before the rename
        c2 = _reserve_as(monkeypatch, led, _dead_owner(), tmp_path / "partial")
        full = tmp_path / f".partial.partial-{c2.tag}-x2"
        full.mkdir()
        (full / "manifest.json").write_text(json.dumps({"ledger": {"id": c2.id}}))
        # 3. crashed after the rename, before the commit
        c3 = _reserve_as(monkeypatch, led, _dead_owner(), tmp_path / "placed")
        (tmp_path / "placed").mkdir()
        (tmp_path / "placed" / "manifest.json").write_text(json.dumps({"ledger": {"id": c3.id}}))
        # 4. a live release, mid-write: must not be touched
        c4 = _reserve_as(monkeypatch, led, live, tmp_path / "live")
        busy = tmp_path / f".live.partial-{c4.tag}-x4"
        busy.mkdir()
        assert led.spent("pa").exact_epsilon == Fraction(4)  # pending charges count
        # the next open reconciles
        led2 = Ledger(path)
        st = {r["id"]: r["status"] for r in led2.releases()}
        assert st == {c1.id: "void", c2.id: "committed", c3.id: "committed", c4.id: "pending"}
        assert not half.exists() and not full.exists()
        assert json.loads((tmp_path / "partial" / "manifest.json").read_text())["ledger"]["id"] \
            == c2.id  # fmt: skip
        assert busy.exists()  # the live release's partial directory is left alone
        assert led2.spent("pa").exact_epsilon == Fraction(3)  # c2 + c3 + c4 (pending)
        assert led2.verify().ok
    finally:
        live_proc.kill()
        live_proc.wait()
    # once the live one is gone, it is voided
    assert {r["id"]: r["status"] for r in Ledger(path).releases()}[c4.id] == "void"
    assert not busy.exists()


def test_failure_before_output_voids_the_charge(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.set_budget("pa", epsilon=10.0, alpha=0.1)
    with pytest.raises(RuntimeError), led.charge(
        dataset="pa", fingerprint=FP_A, definition="eree", alpha=0.1,
        cost=Cost(epsilon=1.0, delta=0.0), out_dir=tmp_path / "o", scheme=SCHEME,
    ):  # fmt: skip
        raise RuntimeError("noise failed")
    assert _statuses(led) == ["void"]
    assert led.spent("pa").exact_epsilon == 0


# ------------------------------------------------------------------ concurrency
@pytest.mark.parametrize("k", [1, 3, 7])
def test_ten_concurrent_releases_exactly_k_succeed(tmp_path, k):
    path = tmp_path / "l.sqlite"
    Ledger(path).set_budget("pa", epsilon=float(k), alpha=0.1)
    ok, refused, other = [], [], []
    barrier = threading.Barrier(10)

    def go(i):
        barrier.wait()
        try:
            _release(Ledger(path), tmp_path / f"o{i}")
            ok.append(i)
        except BudgetExceededError:
            refused.append(i)
        except Exception as e:  # pragma: no cover - reported by the assertion
            other.append(repr(e))

    threads = [threading.Thread(target=go, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert other == []
    assert len(ok) == k and len(refused) == 10 - k
    assert Ledger(path).spent("pa").exact_epsilon == Fraction(k)
    outputs = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("o"))
    assert outputs == sorted(f"o{i}" for i in ok)


def test_old_ledger_without_chain_is_refused(tmp_path):
    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE releases (id TEXT PRIMARY KEY, dataset TEXT, sha256 TEXT)")
    con.commit()
    with pytest.raises(LedgerError, match="older eree without a hash chain"):
        Ledger(path)


def test_definition_without_guarantee_cannot_be_charged(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.set_budget("pa", epsilon=1.0)
    with pytest.raises(LedgerError, match="no formal guarantee"):
        _release(led, tmp_path / "o", definition="none", alpha=None, cost=Cost())


def test_partial_directory_carries_the_reservation_tag(tmp_path, monkeypatch):
    """A crash inside the write leaves a partial directory the ledger can attribute."""
    led = Ledger(tmp_path / "l.sqlite")
    led.set_budget("pa", epsilon=1.0, alpha=0.1)
    seen = []

    def crash(*a, **k):
        seen.extend(p.name for p in tmp_path.iterdir() if ".partial-" in p.name)
        raise OSError("disk full")

    monkeypatch.setattr("eree.data.outdir.os.replace", crash)
    with pytest.raises(OSError, match="disk full"):
        _release(led, tmp_path / "o")
    (charge,) = led.releases()
    tag = json.loads(sqlite3.connect(tmp_path / "l.sqlite").execute(
        "SELECT body FROM events WHERE kind='reserve'").fetchone()[0])["tag"]  # fmt: skip
    assert len(seen) == 1 and seen[0].startswith(f".o.partial-{tag}-")
    assert charge["status"] == "void"
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]


def test_content_recorded_under_another_fingerprint_scheme_is_refused(tmp_path):
    """A ledger holding content fingerprinted with an older scheme cannot recognise it
    under the new one: every release is refused (one line, nothing charged)."""
    path = tmp_path / "l.sqlite"
    led = Ledger(path)
    led.set_budget("pa", epsilon=10.0, alpha=0.1)
    led.set_budget("other", epsilon=10.0, alpha=0.1)
    _release(led, tmp_path / "o1")
    version = [r for r in _events(path) if r[1] == "version"]
    assert json.loads(version[0][3])["scheme"] == SCHEME  # recorded with the content
    # the same ledger seen by a release computing another scheme: refused, for any name
    for name in ("pa", "other"):
        with pytest.raises(LedgerError) as e, led.charge(
            dataset=name, fingerprint=FP_B, definition="eree", alpha=0.1,
            cost=Cost(epsilon=1.0, delta=0.0), out_dir=tmp_path / "o2",
            scheme="eree-fingerprint-v3",
        ):  # fmt: skip
            raise AssertionError("must not be reached")
        msg = str(e.value)
        assert "\n" not in msg and SCHEME in msg and "eree-fingerprint-v3" in msg
        assert "new ledger" in msg
    assert led.spent("pa").exact_epsilon == 1 and len(led.releases()) == 1


def test_version_records_without_a_scheme_are_the_first_scheme(tmp_path):
    """Records written before the scheme was stored (the sort-based v1) are refused too."""
    path = tmp_path / "l.sqlite"
    led = Ledger(path)
    led.set_budget("pa", epsilon=10.0, alpha=0.1)
    # a version record as an older eree wrote it: no "scheme" key
    with led._transaction() as con:
        led._append(
            con,
            "version",
            "pa",
            {
                "fingerprint": led.fingerprint(FP_A),
                "structure": None,
                "version": 1,
                "previous": None,
            },
        )
    assert Ledger(path).verify().ok
    with pytest.raises(LedgerError, match="eree-fingerprint-v1"):
        _release(led, tmp_path / "o")
    assert led.releases() == []


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o666, 0o622])
def test_a_key_others_can_read_or_write_is_refused(tmp_path, mode):
    """Like ssh: a secret key readable by group or others is refused, with the remedy."""
    led = Ledger(tmp_path / "budget.sqlite")
    led.set_budget("d", epsilon=1)
    os.chmod(led.key_path, mode)
    with pytest.raises(LedgerError, match=f"mode {mode:04o}.*chmod 600"):
        Ledger(tmp_path / "budget.sqlite")
    os.chmod(led.key_path, 0o600)
    assert Ledger(tmp_path / "budget.sqlite").verify().ok
    os.chmod(led.key_path, 0o400)  # read-only for its owner is fine
    assert Ledger(tmp_path / "budget.sqlite").verify().ok


def test_a_ledger_that_calls_the_epsilon_delta_family_eree_is_read_as_before(tmp_path, monkeypatch):
    """Ledgers written before the ε-δ family had its own name store it as "eree"."""
    import eree.privacy.ledger as ledger_module
    import eree.privacy.ledger_state as state_module

    path = tmp_path / "l.sqlite"
    with monkeypatch.context() as m:  # what an earlier eree wrote
        m.setattr(ledger_module, "EPSILON_DELTA", "eree")
        m.setattr(state_module, "EPSILON_DELTA", "eree")
        m.setattr(ledger_module, "FAMILY_OF_DEFINITION",
                  {**ledger_module.FAMILY_OF_DEFINITION, "eree": "eree"})  # fmt: skip
        old = Ledger(path)
        old.set_budget("pa", epsilon=2.0, alpha=0.1)
        _release(old, tmp_path / "o1")
    stored = [
        json.loads(body) for _, kind, _, body in _events(path) if kind in ("budget", "reserve")
    ]
    assert stored[0]["budget"]["family"] == "eree" and stored[1]["family"] == "eree"
    led = Ledger(path)
    assert led.verify().ok
    (entry,) = led.show()
    assert entry["family"] == "epsilon-delta" and entry["spent"]["epsilon"] == 1.0
    _release(led, tmp_path / "o2")  # 1 + 1 = 2: allowed, and the old charge counted
    with pytest.raises(BudgetExceededError):
        _release(led, tmp_path / "o3")
