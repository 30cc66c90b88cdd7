r"""The persistent privacy-budget ledger (docs/design.md#budget-ledger).

One SQLite file holds an append-only, hash-chained log of events:

* ``budget`` — an administrator registers a dataset name and its lifetime budget
  (``eree ledger budget``). A release on an unregistered dataset is refused.
* ``version`` — a content fingerprint bound to a dataset name (the first release binds
  version 1; changed content under a known name needs ``new_version=True`` and is linked
  to the previous version). Content is identified by the keyed fingerprint of the
  validated rows (:mod:`eree.data.fingerprint`), never by the name: content already known
  under another name is charged to that name.
* ``bind`` — content already known under one name, released under a second *registered*
  name, is bound to that name too. From then on every release of that content — and every
  earlier one — counts against the budget of every name it is bound to, and a release is
  refused if it would pass any of them (a mistaken release under a generous name cannot
  leave the proper name's budget untouched). The binding is written in the release's
  own transaction: a refused release records nothing (no binding, no version), so a
  name with a small budget cannot lock the data. Each version records the fingerprint
  scheme; a ledger holding content of another scheme is refused (it could not be
  recognised).
* ``reserve`` — a release's cost, reserved in one ``BEGIN IMMEDIATE`` transaction before
  any noise is drawn, with the releasing process's pid, host and start time.
* ``commit`` / ``void`` — the reservation settled: its output is in place, or it never
  will be.

Accounting: every reservation not voided (pending or committed) on any version of a
dataset counts against the dataset's one running total per family, whatever definition
it used: ε and δ add across ``eree``, ``eree-weak``, ``edge-dp``, ``node-dp`` and
``blowfish`` at the dataset's one α; μ-GEDP composes as :math:`\sqrt{\sum \mu^2}`. The
sums use :mod:`eree.privacy.composition` on exact fractions. Every budget key the family
uses is checked (an ER-EE budget registered without δ allows δ = 0); a key it does not use
is an error.

Crash safety: every open of the ledger reconciles. A pending reservation whose process is
gone (same host; pid absent or started at another time) is committed if its complete
output exists — in the output directory, or in its ``.partial`` directory, which is then
renamed into place — and voided otherwise; its leftover partial directories are removed.
Reservations of live processes are never touched. Hence no output exists without its
charge, and a charge is dropped only when its output can no longer appear.

Tamper evidence: each event's ``hash`` is an HMAC-SHA256, under the secret key kept beside
the ledger (``LEDGER.key``, mode 0600), of the previous event's hash and every field of
the event. :meth:`Ledger.verify` recomputes the chain; a reservation is refused on a
ledger that does not verify. Each manifest records its reservation's id and hash.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import shutil
import socket
import sqlite3
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any
from urllib.parse import quote

from eree.errors import BudgetExceededError, LedgerError, PrivacyParameterError
from eree.privacy.budget_values import budget_value, exact_budget, float_budget
from eree.privacy.composition import Composition, Cost, check_chargeable, composition_for
from eree.privacy.definitions import (
    ALPHA_DEFINITIONS,
    EPSILON_DELTA,
    FAMILY_OF_DEFINITION,
    GAUSSIAN,
)
from eree.privacy.ledger_anchor import read_anchor, write_anchor
from eree.privacy.ledger_state import LedgerState, refuse_below_spent, require_scheme
from eree.privacy.release_check import check_releases
from eree.privacy.similarity import SCHEME as SKETCH_SCHEME
from eree.privacy.similarity import seal, similar_dataset, sketch

__all__ = [
    "Charge",
    "Ledger",
    "VerifyResult",
    "budget_value",
    "check_spec_budget",
    "keyed_fingerprint",
]


_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    dataset TEXT NOT NULL,
    body TEXT NOT NULL,
    created TEXT NOT NULL,
    prev TEXT NOT NULL,
    hash TEXT NOT NULL
);
"""
_GENESIS = "0" * 64


def keyed_fingerprint(fingerprint: str, key: bytes) -> str:
    """HMAC-SHA256 of a content fingerprint under a secret key (docs/design.md#release-outputs)."""
    return hmac.new(key, fingerprint.encode("ascii"), hashlib.sha256).hexdigest()


def _canonical(x: Any) -> str:
    return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _proc_start(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot), or None if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may contain spaces; fields after ')' are fixed
    return stat.rsplit(")", 1)[1].split()[19]


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _me() -> dict[str, Any]:
    pid = os.getpid()
    return {"pid": pid, "host": socket.gethostname(), "start": _proc_start(pid), "boot": _boot_id()}


def _process_gone(owner: Mapping[str, Any]) -> bool:
    """True when the process that made a reservation is certainly gone.

    A reservation from another host is never judged gone (it stays pending, counting
    against the budget, until its host reconciles it).
    """
    if owner.get("host") != socket.gethostname():
        return False
    if owner.get("boot") is not None and owner.get("boot") != _boot_id():
        return True  # the machine rebooted since
    pid = int(owner["pid"])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, another user's
    start = owner.get("start")
    if start is not None:
        now = _proc_start(pid)
        if now is not None and now != start:
            return True  # the pid was reused by another process
    return False


def _partials(out_dir: Path, tag: str) -> list[Path]:
    """The partial directories a reservation may have left beside its output."""
    if not out_dir.parent.is_dir():
        return []
    return sorted(out_dir.parent.glob(f".{out_dir.name}.partial-{tag}-*"))


def _manifest_release(d: Path) -> Any:
    try:
        m = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
        return m.get("ledger", {}).get("id")
    except (OSError, ValueError, AttributeError):
        return None


@dataclass
class Charge:
    """A reservation in the ledger (what ``Ledger.charge`` yields).

    Attributes:
        id: the reservation's row id in the ledger.
        hash: its chain hash (recorded in the manifest).
        dataset: the dataset it is charged to (may differ from the spec's name).
        fingerprint: the keyed fingerprint of the content (published in the manifest).
        version: the dataset version of the content.
        tag: the prefix of the partial output directory this release must use.
        notes: what the user must be told (content known under another name, new version).
        spent: the family's running total after this release.
        budget: the dataset's lifetime budget (the ledger's; alpha apart).
        spent_before: the running total before this release; this_release: its cost.
        remaining: per budget key, the largest cost one more release could have.
        budget_of: the dataset whose lifetime budget these figures are (the spec's name
            when the content is bound to it, else ``dataset``); the release was checked
            against the budget of every name its content is bound to (``notes``).
    """

    id: int
    hash: str
    dataset: str
    fingerprint: str
    version: int
    tag: str
    notes: list[str] = field(default_factory=list)
    spent: Cost | None = None
    budget: dict[str, float] = field(default_factory=dict)
    spent_before: Cost | None = None
    this_release: Cost | None = None
    remaining: dict[str, float] = field(default_factory=dict)
    budget_of: str = ""

    def manifest_entry(self) -> dict[str, Any]:
        """What the manifest records of this charge: row id, chain hash, lifetime budget.

        The dataset's lifetime budget: the budget, spent before, this release, spent after
        and what remains (floats: spent rounded up, remaining rounded down).
        """
        entry: dict[str, Any] = {"id": self.id, "chain_hash": self.hash,
                                 "dataset": self.dataset, "version": self.version}  # fmt: skip
        keys = list(self.budget)

        def pick(c: Cost | None) -> dict[str, float | None] | None:
            return None if c is None else {k: c.to_dict()[k] for k in keys}

        if self.budget:
            entry["lifetime_budget"] = {
                "dataset": self.budget_of or self.dataset,
                "budget": dict(self.budget),
                "spent_before": pick(self.spent_before),
                "this_release": pick(self.this_release),
                "spent_after": pick(self.spent),
                "remaining": dict(self.remaining),
            }
        return entry


@dataclass(frozen=True)
class VerifyResult:
    """The result of :meth:`Ledger.verify`: ``ok`` and one line per problem found.

    ``releases`` has one line per release checked that is in order: charged (the ledger
    row and hash its manifest names), or seeded and never charged (not for publication).
    """

    ok: bool
    events: int
    problems: tuple[str, ...]
    releases: tuple[str, ...] = ()


class Ledger:
    """A budget ledger in one SQLite file, with its secret key beside it.

    Opening a ledger creates it (and its key) if absent and reconciles it.

    Args:
        path: the SQLite file.
        reconcile: settle stale reservations now (every command does).
        read_only: an auditor's copy: nothing is written.
        create: create an absent ledger (``eree ledger budget``); False refuses it (a
            release: a mistyped ``--ledger`` must not create a ledger and its key).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        reconcile: bool = True,
        read_only: bool = False,
        create: bool = True,
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        try:
            os.stat(self.path)
        except FileNotFoundError:
            pass
        except OSError as e:  # a name over the file system's limit, a loop of links, …
            raise LedgerError(f"ledger {self.path}: {e.strerror or type(e).__name__}") from None
        if self.path.exists() and not self.path.is_file():
            raise LedgerError(f"ledger {self.path} is not a file")
        if not create and not self.path.exists():  # a mistyped --ledger creates nothing
            raise LedgerError(
                f"no ledger at {self.path}; an administrator creates it by registering a "
                f"budget: eree ledger budget {self.path} NAME --epsilon … (or --mu …)"
            )
        self.key_path = self.path.with_name(self.path.name + ".key")
        self.head_path = self.path.with_name(self.path.name + ".head")
        self._appended = False  # whether the open transaction appended a row
        if read_only:
            self._open_read_only()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise LedgerError(f"ledger {self.path}: {e.strerror or type(e).__name__}") from None
        try:
            with contextlib.closing(self._connect()) as con:
                tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
                if "releases" in tables and "events" not in tables:
                    raise LedgerError(
                        f"ledger {self.path} was written by an older eree without a hash "
                        "chain; start a new ledger and register the budgets again"
                    )
                fresh = "events" not in tables
                con.executescript(_SCHEMA)
        except sqlite3.DatabaseError as e:
            raise LedgerError(f"ledger {self.path} is not an eree ledger ({e})") from None
        self.key = self._load_key(create=fresh or not self._has_events())
        if self._read_head() is None and self._has_events():
            # a ledger kept before the head was anchored outside it: anchor it now
            with contextlib.closing(self._connect()) as con:
                self._advance_head(con)
        if reconcile:
            self.reconcile()

    def _open_read_only(self) -> None:
        """Open a ledger for reading only (an auditor's copy): nothing is written.

        No schema, reconciliation or anchor; the key must be there (the chain is keyed).
        """
        if not self.path.is_file():
            raise LedgerError(f"no ledger at {self.path}")
        wal = self.path.with_name(self.path.name + "-wal")
        if wal.is_file() and wal.stat().st_size > 0:
            # rows still in the write-ahead journal: reading without it would show an older
            # ledger, and merging it needs write access
            raise LedgerError(
                f"ledger {self.path} has rows in its journal {wal.name} and cannot be written "
                "here to merge them; copy the ledger while no release runs, or read it where "
                "it can be written"
            )
        try:
            with contextlib.closing(self._connect()) as con:
                tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        except sqlite3.DatabaseError as e:
            raise LedgerError(f"ledger {self.path} is not an eree ledger ({e})") from None
        if "events" not in tables:
            raise LedgerError(f"ledger {self.path} is not an eree ledger (no events)")
        self.key = self._load_key(create=False)

    # ---------------------------------------------------------------- plumbing
    def _connect(self) -> sqlite3.Connection:
        if self.read_only:  # immutable: no lock, no journal, no -wal or -shm file written
            uri = f"file:{quote(str(self.path.resolve()))}?mode=ro&immutable=1"
            return sqlite3.connect(uri, uri=True, isolation_level=None)
        con = sqlite3.connect(self.path, timeout=120.0, isolation_level=None)
        con.execute("PRAGMA busy_timeout = 120000")
        con.execute("PRAGMA journal_mode=WAL")
        return con

    def _has_events(self) -> bool:
        with contextlib.closing(self._connect()) as con:
            return con.execute("SELECT 1 FROM events LIMIT 1").fetchone() is not None

    def _load_key(self, create: bool) -> bytes:
        """Read the secret key; create it (mode 0600, atomically) for a new ledger."""
        if create and not self.key_path.exists():
            tmp = self.key_path.with_name(f".{self.key_path.name}.{secrets.token_hex(8)}")
            key_hex = secrets.token_bytes(32).hex().encode()
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(fd, "wb") as fp:
                    fp.write(key_hex)
                try:
                    os.link(tmp, self.key_path)  # appears complete, or not at all
                except FileExistsError:
                    pass  # another process won the race: use its key
                except OSError:  # no hard links on this file system: create in place
                    with contextlib.suppress(FileExistsError):
                        fd2 = os.open(self.key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                        with os.fdopen(fd2, "wb") as fp:
                            fp.write(key_hex)
            finally:
                tmp.unlink(missing_ok=True)
        try:
            mode = self.key_path.stat().st_mode
        except FileNotFoundError:
            mode = 0
        if os.name == "posix" and mode & 0o077:
            # whoever can read the key can recompute the keyed fingerprint of candidate
            # data and test guesses of confidential values against the ledger (as ssh does
            # for private keys, a key others can read is refused)
            raise LedgerError(
                f"the ledger's secret key {self.key_path} can be read or written by others "
                f"(mode {stat.S_IMODE(mode):04o}): anyone who reads it can test guesses of "
                f"the data against the ledger; run chmod 600 {self.key_path}"
            )
        if self.key_path.exists() and not self.key_path.is_file():  # a FIFO would block
            raise LedgerError(f"the ledger's secret key {self.key_path} is not a regular file")
        if self.key_path.is_file() and self.key_path.stat().st_size > 1024:
            raise LedgerError(f"the ledger's secret key {self.key_path} is unreadable")
        try:
            key = bytes.fromhex(self.key_path.read_bytes().strip().decode("ascii"))
        except FileNotFoundError:
            raise LedgerError(
                f"the ledger's secret key {self.key_path} is missing: the ledger cannot be "
                "verified nor content recognised; restore the key"
            ) from None
        except (OSError, ValueError):
            raise LedgerError(f"the ledger's secret key {self.key_path} is unreadable") from None
        if len(key) < 16:
            raise LedgerError(f"the ledger's secret key {self.key_path} is too short")
        return key

    def fingerprint(self, content_fingerprint: str) -> str:
        """The keyed fingerprint of content under this ledger's key."""
        return keyed_fingerprint(content_fingerprint, self.key)

    def _hash(self, prev: str, rid: int, kind: str, dataset: str, body: str, created: str) -> str:
        msg = prev + "\n" + _canonical([rid, kind, dataset, body, created])
        return hmac.new(self.key, msg.encode("utf-8"), hashlib.sha256).hexdigest()

    def _append(
        self, con: sqlite3.Connection, kind: str, dataset: str, body: Mapping[str, Any]
    ) -> tuple[int, str]:
        """Append one chained event (inside the caller's transaction)."""
        last = con.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
        seq = con.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
        prev = last[1] if last else _GENESIS
        rid = max(last[0] if last else 0, seq[0] if seq else 0) + 1
        body_s = _canonical(body)
        created = datetime.now(UTC).isoformat(timespec="microseconds")
        h = self._hash(prev, rid, kind, dataset, body_s, created)
        con.execute(
            "INSERT INTO events (id, kind, dataset, body, created, prev, hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (rid, kind, dataset, body_s, created, prev, h),
        )
        self._appended = True
        return rid, h

    @staticmethod
    def _rows(con: sqlite3.Connection) -> list[tuple[int, str, str, str]]:
        return con.execute("SELECT id, kind, dataset, body FROM events ORDER BY id").fetchall()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``); the head anchor follows its commit."""
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            self._appended = False
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            appended, self._appended = self._appended, False
            con.execute("COMMIT")
            if appended:
                self._advance_head(con)
        finally:
            con.close()

    # ---------------------------------------------------------------- head anchor
    # The newest row's id and hash, kept in a file beside the ledger (LEDGER.head, 0600),
    # advanced after every write transaction that added a row. A ledger file replaced by an
    # older copy of itself, or whose last rows were deleted, no longer holds the row the
    # anchor names: verification fails and nothing more can be charged. (Whoever can also
    # rewrite the anchor can roll back; the manifests still name their rows: `ledger verify
    # --release`.)
    def _read_head(self) -> tuple[int, str] | None:
        """The anchor's ``(row id, hash)``, or None (:mod:`eree.privacy.ledger_anchor`)."""
        return read_anchor(self.head_path)

    def _advance_head(self, con: sqlite3.Connection) -> None:
        """Move the anchor to the ledger's newest row, never back (after a commit).

        After the commit, not before: a process killed in between leaves the anchor one
        step behind (harmless), never ahead of the ledger (which would refuse it as
        rolled back). The key file's lock orders concurrent writers of the anchor.
        """
        head = con.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
        if head is None:
            return
        import fcntl

        with open(self.key_path, "rb") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            before = self._read_head()
            if before is None or (before[0] >= 0 and head[0] > before[0]):
                write_anchor(self.head_path, head[0], head[1])

    # ---------------------------------------------------------------- verify
    def _verify(self, con: sqlite3.Connection) -> VerifyResult:
        problems: list[str] = []
        rows = con.execute(
            "SELECT id, kind, dataset, body, created, prev, hash FROM events ORDER BY id"
        ).fetchall()
        prev = _GENESIS
        expect_id = 1
        for rid, kind, dataset, body, created, p, h in rows:
            if rid != expect_id:
                problems.append(f"rows {expect_id}..{rid - 1} are missing (deleted)")
            if p != prev:
                problems.append(f"row {rid}: does not follow the previous row (a row was "
                                "deleted or edited before it)")  # fmt: skip
            if self._hash(p, rid, kind, dataset, body, created) != h:
                problems.append(f"row {rid} ({kind}, dataset {dataset!r}): its content does "
                                "not match its hash (edited)")  # fmt: skip
            prev = h
            expect_id = rid + 1
        seq = con.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
        if seq is not None and seq[0] >= expect_id:
            problems.append(f"rows {expect_id}..{seq[0]} are missing (deleted at the end)")
        head = self._read_head()
        if head is not None:
            row = con.execute("SELECT hash FROM events WHERE id = ?", (head[0],)).fetchone()
            if row is None or row[0] != head[1]:
                problems.append(
                    f"the ledger was rolled back: it does not hold row {head[0]}, the newest "
                    f"row its anchor {self.head_path.name} has seen (an older copy of the "
                    "ledger, or its last rows deleted); restore the newest ledger"
                )
        return VerifyResult(not problems, len(rows), tuple(problems))

    def verify(self, manifests: list[Path] | None = None) -> VerifyResult:
        """Recompute the hash chain; optionally check releases against it.

        Args:
            manifests: ``manifest.json`` files (or release directories) to check: charged,
                or seeded and never charged (:func:`eree.privacy.release_check.check_releases`).
        """
        with contextlib.closing(self._connect()) as con:
            res = self._verify(con)
            problems = list(res.problems)
            releases: list[str] = []
            if manifests:
                query = "SELECT id, kind, hash, dataset FROM events"
                rows = {rid: (kind, h, ds) for rid, kind, h, ds in con.execute(query)}
                bad, releases = check_releases(manifests, rows, LedgerState(self._rows(con)))
                problems += bad
        return VerifyResult(not problems, res.events, tuple(problems), tuple(releases))

    def _require_intact(self, con: sqlite3.Connection) -> None:
        res = self._verify(con)
        if not res.ok:
            raise LedgerError(
                f"ledger {self.path} fails verification ({res.problems[0]}); nothing can be "
                "charged to it until an administrator investigates (`eree ledger verify`)"
            )

    # ---------------------------------------------------------------- administration
    def set_budget(
        self,
        name: str,
        *,
        epsilon: float | str | Fraction | None = None,
        delta: float | str | Fraction | None = None,
        alpha: float | str | Fraction | None = None,
        mu: float | str | Fraction | None = None,
        below_spent: bool = False,
    ) -> dict[str, str]:
        """Register (or change) the lifetime budget of dataset ``name``.

        An ER-EE budget gives ``epsilon`` (δ defaults to 0; α, if given, is the dataset's
        one α, else the first release's); a GEDP budget gives ``mu``. Not both. Each value
        is kept exactly as given (:func:`budget_value`: a decimal text such as ``"0.3"``
        is 3/10; a positive value no float can hold is refused, never registered as 0). Below
        what is spent: refused unless ``below_spent`` (:func:`refuse_below_spent`).
        """
        if not name.strip():
            raise LedgerError("a dataset name must not be empty")
        exact_given = {k: budget_value(name, k, v)
                       for k, v in {"epsilon": epsilon, "delta": delta, "alpha": alpha,
                                    "mu": mu}.items() if v is not None}  # fmt: skip
        given = {k: float(v) for k, v in exact_given.items()}
        for k, v in given.items():
            Cost(epsilon=v)  # finite and ≥ 0, or PrivacyParameterError naming nothing secret
            if k == "alpha" and v <= 0:
                raise PrivacyParameterError(f"budget of {name!r}: alpha must be > 0")
            if k == "delta" and v >= 1:  # δ ≥ 1 allows any event: the budget promises nothing
                raise PrivacyParameterError(
                    f"budget of {name!r}: delta must be < 1 (got {v:g}); a delta of 1 or more "
                    "promises nothing"
                )
            if k == "mu" and v > 1e6:  # μ² must stay finite; μ this large protects nothing
                raise PrivacyParameterError(
                    f"budget of {name!r}: mu must be at most 1e6 (got {v:g}); a test of "
                    "that power distinguishes any two datasets"
                )
        if "mu" in given and set(given) - {"mu"}:
            raise PrivacyParameterError(
                f"budget of {name!r}: give --mu (GEDP) or --epsilon/--delta/--alpha (ER-EE), "
                "not both: a dataset has one privacy family"
            )
        if "mu" in given:
            family = GAUSSIAN
        elif "epsilon" in given:
            family = EPSILON_DELTA
            exact_given.setdefault("delta", Fraction(0))
        else:
            raise PrivacyParameterError(
                f"budget of {name!r}: give --epsilon (ER-EE family) or --mu (GEDP)"
            )
        exact = exact_budget(exact_given)
        with self._transaction() as con:
            self._require_intact(con)
            st = LedgerState(self._rows(con))
            old = st.budgets.get(name)
            if old is not None and old.get("family", family) != family:
                raise PrivacyParameterError(
                    f"dataset {name!r} has a budget of the {old['family']} family; its family "
                    "cannot change"
                )
            if not below_spent:  # a budget below the spent total closes the dataset
                refuse_below_spent(st, name, family, float_budget(exact))
            if family == EPSILON_DELTA and "alpha" in exact:
                a = st.alpha(name)
                if a is not None and st.charges(name, family) and a != given.get("alpha", 0.0):
                    raise PrivacyParameterError(
                        f"dataset {name!r} already has releases at alpha={a:g}; its alpha "
                        "cannot change"
                    )
            self._append(con, "budget", name, {"budget": {**exact, "family": family}})
        return exact

    # ---------------------------------------------------------------- releases
    @contextlib.contextmanager
    def charge(
        self,
        *,
        dataset: str,
        fingerprint: str,
        definition: str,
        alpha: float | None,
        cost: Cost,
        out_dir: str | Path,
        spec_budget: Mapping[str, float] | None = None,
        new_version: bool = False,
        structure: str | None = None,
        scheme: str,
        counts: tuple[Any, Any] | None = None,
    ) -> Iterator[Charge]:
        """Reserve a release on enter; commit on success; void on failure before output.

        Call it after the data are loaded and before any noise is drawn. The body must
        write its output (with :attr:`Charge.tag` as partial-directory tag) to ``out_dir``
        and record :meth:`Charge.manifest_entry` as the manifest's ``ledger``.

        Args:
            dataset: the spec's dataset name.
            fingerprint: the *content* fingerprint of the validated rows (it is keyed here).
            definition, alpha: the release's privacy definition and α.
            cost: the release's total cost.
            out_dir: the release directory.
            spec_budget: the spec's ``[privacy] budget`` (may only lower the ledger's).
            new_version: the content under ``dataset`` changed on purpose.
            structure: the structure fingerprint (:func:`eree.data.fingerprint.
                structure_fingerprint`): the same establishments and jobs seen through other
                columns, or with changed values, are recognised as a known dataset's.
            counts: per workplace, the word of its id and its job count
                (:func:`eree.data.fingerprint.structure_counts`): the ledger keeps a keyed
                sketch of them, and data whose sketch is similar to a known dataset's
                (:mod:`eree.privacy.similarity`) are that dataset's, as for ``structure``.
            scheme: the fingerprint scheme both fingerprints were computed with
                (:data:`eree.data.fingerprint.SCHEME`). A ledger that holds content
                recorded with another scheme is refused (it could not be recognised).

        Raises:
            LedgerError: unregistered dataset, changed content, tampered ledger, …
            BudgetExceededError: the release would pass a budget.
            PrivacyParameterError: a budget key the family does not use; another α.
        """
        out = Path(out_dir).resolve()
        charge = self.reserve(
            dataset=dataset, fingerprint=fingerprint, definition=definition, alpha=alpha,
            cost=cost, out_dir=out, spec_budget=spec_budget, new_version=new_version,
            structure=structure, scheme=scheme, counts=counts,
        )  # fmt: skip
        try:
            yield charge
        except BaseException:
            if _manifest_release(out) == charge.id:  # the output is in place: it counts
                self._settle(charge.id, "commit", {"how": "output in place after an error"})
            else:
                self._settle(charge.id, "void", {"reason": "the release failed before output"})
                for p in _partials(out, charge.tag):
                    shutil.rmtree(p, ignore_errors=True)
            raise
        if _manifest_release(out) != charge.id:
            self._settle(charge.id, "void", {"reason": "no output was written"})
            raise LedgerError(f"release to {out} wrote no output; its charge was voided")
        self._settle(charge.id, "commit", {"how": "release"})

    def reserve(
        self,
        *,
        dataset: str,
        fingerprint: str,
        definition: str,
        alpha: float | None,
        cost: Cost,
        out_dir: str | Path,
        spec_budget: Mapping[str, float] | None = None,
        new_version: bool = False,
        structure: str | None = None,
        scheme: str,
        counts: tuple[Any, Any] | None = None,
    ) -> Charge:
        """Record a pending charge, or refuse it (see :meth:`charge`)."""
        check_chargeable(definition)
        family = FAMILY_OF_DEFINITION[definition]
        comp = composition_for(definition, alpha if definition in ALPHA_DEFINITIONS else None)
        if spec_budget:
            comp.check_budget_keys(spec_budget, f"[privacy] budget of {dataset!r}")
            if "alpha" in spec_budget:
                raise PrivacyParameterError(
                    f"[privacy] budget of {dataset!r}: alpha is set in the ledger, not the spec"
                )
        kfp = self.fingerprint(fingerprint)
        kst = None if structure is None else self.fingerprint(structure)
        sk = None if counts is None else sketch(self.key, *counts)
        out = Path(out_dir).resolve()
        notes: list[str] = []
        with self._transaction() as con:
            self._require_intact(con)
            st = LedgerState(self._rows(con))
            require_scheme(st, scheme, self.path)
            # The same data presented under a second registered name are bound to it: from
            # then on every release of these data, earlier ones included, counts against
            # both budgets (a release under a generous name must not leave the proper
            # name's budget untouched). The binding is part of this release's transaction:
            # a refused release records nothing, so a name with a small budget cannot lock
            # the data for every other name by a release that was refused.
            first = st.by_fp.get(kfp)
            if (first is not None and first[0] != dataset and dataset in st.budgets
                    and kfp not in st.bound.get(dataset, ())):  # fmt: skip
                self._append(con, "bind", dataset, {"fingerprint": kfp, "as": first[0]})
                st = LedgerState(self._rows(con))
            name = dataset
            known = st.by_fp.get(kfp)
            related = st.by_structure.get(kst) if kst is not None else None
            similar = (
                similar_dataset(st.versions, sk, self.key)
                if known is None and related is None
                else None
            )
            version: int
            if known is not None:
                name, version = known
                if name != dataset and dataset in st.budgets:
                    others = [n for n in st.names_of[kfp] if n != dataset]
                    notes.append(
                        f"this content is also in the ledger as dataset "
                        f"{', '.join(repr(n) for n in others)}; the release is charged to "
                        f"every name these data are bound to: "
                        f"{', '.join(repr(n) for n in st.names_of[kfp])}"
                    )
                elif name != dataset:
                    notes.append(
                        f"this content is already in the ledger as dataset {name!r}; the "
                        f"release is charged to {name!r}, not {dataset!r}"
                    )
            else:
                if related is not None:
                    name = related
                elif similar is not None:
                    name = similar
                elif dataset not in st.budgets:
                    raise LedgerError(
                        f"dataset {dataset!r} is not registered in ledger {self.path}; an "
                        f"administrator registers it first: eree ledger budget {self.path} "
                        f"{dataset} --epsilon … (ER-EE) or --mu … (GEDP)"
                    )
                versions = st.versions.get(name, [])
                if versions and not new_version:
                    if related is not None:
                        same = (f"the same establishments and jobs as dataset {name!r} but "
                                "other values or other columns")  # fmt: skip
                    elif similar is not None:
                        same = (f"nearly the same establishments and jobs as dataset "
                                f"{name!r} (the same data for a budget: docs/privacy.md, "
                                "'Same data')")  # fmt: skip
                    else:
                        same = f"data that differ from every version of dataset {name!r}"
                    raise LedgerError(
                        f"{dataset!r}: {same} (latest in the ledger: version "
                        f"{versions[-1]['version']}); if this is a new version of "
                        f"{name!r}, rerun with --new-version"
                    )
                version = len(versions) + 1
                body = {"fingerprint": kfp, "structure": kst, "version": version,
                        "previous": versions[-1]["fingerprint"] if versions else None,
                        "scheme": scheme}  # fmt: skip
                if sk is not None:
                    body.update(sketch=seal(self.key, sk), sketch_scheme=SKETCH_SCHEME)
                self._append(con, "version", name, body)
                if name != dataset:
                    how = "nearly share" if similar is not None else "share"
                    notes.append(
                        f"these data {how} their establishments and jobs with dataset "
                        f"{name!r}; the release is charged to {name!r}, not {dataset!r}"
                    )
                if versions:
                    notes.append(f"recorded as version {version} of dataset {name!r}, "
                                 f"linked to version {version - 1}")  # fmt: skip
            # every name the content is bound to is charged; the figures the user sees are
            # those of the name the spec gave, when it is one of them
            charged = st.names_of.get(kfp, [name]) if known is not None else [name]
            shown = dataset if dataset in charged else name
            figures: dict[str, tuple[Cost, Cost, dict[str, float]]] = {}
            for n in charged:
                if n not in st.budgets:
                    raise LedgerError(f"dataset {n!r} has no registered budget in {self.path}")
                budget = dict(st.budgets[n])
                bfam = budget.pop("family", None)
                if bfam != family:
                    raise LedgerError(
                        f"dataset {n!r} has a budget of the {bfam} family; a {definition!r} "
                        f"release ({family} family) cannot be charged to it"
                    )
                limits = float_budget(budget)
                if definition in ALPHA_DEFINITIONS:
                    a = st.alpha(n)
                    if a is not None and alpha != a:
                        raise PrivacyParameterError(
                            f"dataset {n!r} is released at alpha={a:g} (ER-EE costs add "
                            f"only at one alpha); this release has alpha={alpha}"
                        )
                limits.pop("alpha", None)
                spent_n = comp.compose(st.charges(n, family))
                try:
                    total_n = _check(comp, n, spent_n, cost, limits, "lifetime budget")
                    if spec_budget and n == shown:
                        _check(comp, n, spent_n, cost, dict(spec_budget), "[privacy] budget")
                except BudgetExceededError as e:
                    if notes:
                        raise BudgetExceededError(f"{e}; note: {' '.join(notes)}") from None
                    raise
                figures[n] = (spent_n, total_n, limits)
            spent, total, limits = figures[shown]
            owner = _me()
            tag = secrets.token_hex(6)
            body = {"fingerprint": kfp, "version": version, "definition": definition,
                    "alpha": alpha, "family": family, "cost": cost.exact_dict(),
                    "out_dir": str(out), "tag": tag, "owner": owner,
                    "spec_name": dataset}  # fmt: skip
            rid, h = self._append(con, "reserve", name, body)
        return Charge(rid, h, name, kfp, version, tag, notes, total, dict(limits), spent, cost,
                      comp.remaining(total, limits), shown)  # fmt: skip

    def _settle(self, rid: int, kind: str, extra: Mapping[str, Any]) -> None:
        with self._transaction() as con:
            st = LedgerState(self._rows(con))
            if st.status.get(rid) != "pending":
                return
            self._append(con, kind, st.reserves[rid]["dataset"], {"release": rid, **extra})

    # ---------------------------------------------------------------- reconcile
    def reconcile(self) -> dict[str, int]:
        """Settle reservations whose process is gone; remove their partial directories.

        Returns:
            counts of ``committed``, ``finished`` (a complete output in a partial
            directory renamed into place, then committed), ``voided`` and ``live``
            (pending, process alive or on another host: untouched).
        """
        done = {"committed": 0, "finished": 0, "voided": 0, "live": 0}
        with self._transaction() as con:
            st = LedgerState(self._rows(con))
            pending = [rid for rid, s in st.status.items() if s == "pending"]
            if not pending:
                return done
            if not self._verify(con).ok:
                return done  # never settle on a tampered ledger; verify reports it
            for rid in pending:
                r = st.reserves[rid]
                if not _process_gone(r.get("owner", {})):
                    done["live"] += 1
                    continue
                out = Path(r["out_dir"])
                partials = _partials(out, r["tag"])
                if _manifest_release(out) == rid:
                    self._append(con, "commit", r["dataset"], {"release": rid,
                                 "how": "reconcile: output in place"})  # fmt: skip
                    done["committed"] += 1
                else:
                    complete = [p for p in partials if _manifest_release(p) == rid]
                    finished = False
                    if complete:
                        try:
                            if out.is_dir() and not any(out.iterdir()):
                                out.rmdir()
                            if not out.exists():
                                os.replace(complete[0], out)
                                finished = True
                        except OSError:
                            finished = False
                    if finished:
                        self._append(con, "commit", r["dataset"], {"release": rid,
                                     "how": "reconcile: finished the rename of a complete "
                                            "partial output"})  # fmt: skip
                        done["finished"] += 1
                    else:
                        reason = "reconcile: process gone, no complete output"
                        self._append(con, "void", r["dataset"], {"release": rid,
                                     "reason": reason})  # fmt: skip
                        done["voided"] += 1
                for p in _partials(out, r["tag"]):
                    shutil.rmtree(p, ignore_errors=True)
        return done

    # ---------------------------------------------------------------- reading
    def spent(self, dataset: str, family: str = EPSILON_DELTA) -> Cost:
        """The running total of ``family`` on ``dataset`` (pending and committed charges)."""
        with contextlib.closing(self._connect()) as con:
            st = LedgerState(self._rows(con))
        comp = composition_for("gedp" if family == GAUSSIAN else "eree")
        return comp.compose(st.charges(dataset, family))

    def releases(self, dataset: str | None = None) -> list[dict[str, Any]]:
        """Every reservation (id, dataset, definition, alpha, cost, status, out_dir)."""
        with contextlib.closing(self._connect()) as con:
            st = LedgerState(self._rows(con))
        out = []
        for rid, r in st.reserves.items():
            if dataset is not None and r["dataset"] != dataset:
                continue
            c = Cost.from_exact_dict(r["cost"])
            out.append({"id": rid, "dataset": r["dataset"], "version": r["version"],
                        "definition": r["definition"], "alpha": r["alpha"],
                        "cost": c.to_dict(), "status": st.status[rid],
                        "out_dir": r["out_dir"], "spec_name": r.get("spec_name")})  # fmt: skip
        return out

    def show(self) -> list[dict[str, Any]]:
        """One entry per registered dataset: budget, versions, running total, releases."""
        with contextlib.closing(self._connect()) as con:
            st = LedgerState(self._rows(con))
        out = []
        for name in sorted(set(st.budgets) | set(st.versions)):
            b = dict(st.budgets.get(name, {}))
            fam = b.pop("family", EPSILON_DELTA)
            comp = composition_for("gedp" if fam == GAUSSIAN else "eree")
            total = comp.compose(st.charges(name, fam))
            rel = [rid for rid in st.reserves if st.counts_against(rid, name)]
            shared = sorted({n for fp in st.bound.get(name, ()) for n in st.names_of[fp]} - {name})
            out.append({
                "dataset": name,
                "family": fam,
                "budget": float_budget(b),
                "alpha": st.alpha(name),
                "spent": total.to_dict(),
                "versions": [{"version": v["version"], "fingerprint": v["fingerprint"][:16]}
                             for v in st.versions.get(name, [])],
                "releases": {s: sum(1 for r in rel if st.status[r] == s)
                             for s in ("committed", "pending", "void")},
                "same_data_as": shared,
            })  # fmt: skip
        return out


def _check(
    comp: Composition, name: str, spent: Cost, cost: Cost, limits: Mapping[str, float], what: str
) -> Cost:
    """``comp.check`` with a message that says which budget refused."""
    try:
        return comp.check(name, spent, cost, limits)
    except BudgetExceededError as e:
        raise BudgetExceededError(f"{e} ({what}; already spent: {_fmt(spent)})") from None


def _fmt(c: Cost) -> str:
    parts = []
    for k in ("epsilon", "delta", "mu"):
        v = getattr(c, k)
        if v is not None:
            parts.append(f"{k}={v:.6g}")
    return ", ".join(parts) or "nothing"


def check_spec_budget(dataset: str, definition: str, alpha: float | None, cost: Cost,
                      budget: Mapping[str, float]) -> None:  # fmt: skip
    """Without a ledger: the release alone must fit the spec's budget; every key checked.

    Raises:
        PrivacyParameterError: a budget key the definition's family does not use.
        BudgetExceededError: the release passes the budget.
    """
    comp = composition_for(definition, alpha)
    where = f"[privacy] budget of {dataset!r}"
    comp.check_budget_keys(budget, where)
    if "alpha" in budget:
        raise PrivacyParameterError(f"{where}: alpha is not a budget key of a spec")
    _check(comp, dataset, comp.zero(), cost, budget, "[privacy] budget")
