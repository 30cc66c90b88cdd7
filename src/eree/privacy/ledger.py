"""The persistent privacy-budget ledger (DESIGN.md §3.4).

One SQLite file records every release of a dataset: dataset identity (name + SHA-256 of
its input files), definition, α, cost. A release is charged in two steps:

1. :meth:`Ledger.reserve` — inside one ``BEGIN IMMEDIATE`` transaction (so concurrent
   releases serialise and can never overspend) it adds up everything already spent on
   the dataset, *including reservations still pending*, refuses the release if it would
   pass the lifetime budget, and records it as ``pending``. No noise has been drawn yet.
2. :meth:`Ledger.commit` once the output directory is in place (its manifest names the
   release id), or :meth:`Ledger.abort` if the release failed before writing anything.

A crash between the two leaves a ``pending`` row: it keeps counting against the budget
(so nothing is ever overspent) until :meth:`Ledger.reconcile` finds its output (→
committed) or finds none (→ removed). Thus no output exists without its charge, and a
charge without output is removed only once it is certain no output was written.

Composition: ε-δ costs add (for ER-EE only at the same α); μ-GEDP costs compose as
sqrt(Σ μ²).
"""

from __future__ import annotations

import json
import math
import sqlite3
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from eree.errors import BudgetExceededError, EreeError, PrivacyParameterError
from eree.privacy.accountant import Cost

_SCHEMA = """
CREATE TABLE IF NOT EXISTS releases (
    id TEXT PRIMARY KEY,
    dataset TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    definition TEXT NOT NULL,
    alpha REAL,
    epsilon REAL,
    delta REAL,
    mu REAL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'committed')),
    out_dir TEXT,
    created TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS releases_dataset ON releases (dataset);
"""


@dataclass(frozen=True)
class Spent:
    """What has been spent on a dataset under one definition (and α)."""

    cost: Cost
    releases: int


def _family(definition: str) -> str:
    return "eree" if definition in ("eree", "eree-weak") else definition


class Ledger:
    """A budget ledger in one SQLite file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as con:
                con.executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as e:
            raise EreeError(
                f"ledger {self.path} cannot be opened as a budget ledger (SQLite database): "
                f"{type(e).__name__}"
            ) from None

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")
        return con

    @staticmethod
    def _spent(
        con: sqlite3.Connection, dataset: str, definition: str, alpha: float | None
    ) -> Spent:
        rows = con.execute(
            "SELECT definition, alpha, epsilon, delta, mu FROM releases WHERE dataset = ?",
            (dataset,),
        ).fetchall()
        fam = _family(definition)
        eps = dl = mu2 = 0.0
        n = 0
        for d, a, e, de, m in rows:
            if _family(d) != fam:
                continue
            if fam in ("eree", "blowfish") and a is not None and alpha is not None and a != alpha:
                raise PrivacyParameterError(
                    f"dataset {dataset!r} already has ER-EE releases at alpha={a}; guarantees "
                    f"compose only for the same alpha (this release: alpha={alpha})"
                )
            eps += e or 0.0
            dl += de or 0.0
            mu2 += (m or 0.0) ** 2
            n += 1
        if fam == "gedp":
            return Spent(Cost(mu=math.sqrt(mu2)), n)
        return Spent(Cost(epsilon=eps, delta=dl), n)

    def spent(self, dataset: str, definition: str, alpha: float | None = None) -> Spent:
        with self._connect() as con:
            return self._spent(con, dataset, definition, alpha)

    def reserve(
        self,
        dataset: str,
        sha256: str,
        definition: str,
        alpha: float | None,
        cost: Cost,
        budget: dict[str, float] | None,
        out_dir: str | Path,
    ) -> str:
        """Charge a release as pending, or refuse it if it would pass ``budget``."""
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            spent = self._spent(con, dataset, definition, alpha).cost
            if budget:
                check_budget(dataset, spent, cost, budget)
            rid = uuid.uuid4().hex
            con.execute(
                "INSERT INTO releases VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
                (rid, dataset, sha256, definition, alpha, cost.epsilon, cost.delta, cost.mu,
                 str(Path(out_dir).resolve()), datetime.now(UTC).isoformat()),
            )  # fmt: skip
            con.execute("COMMIT")
            return rid
        except BaseException:
            con.execute("ROLLBACK")
            raise
        finally:
            con.close()

    def commit(self, release_id: str) -> None:
        with self._connect() as con:
            con.execute("UPDATE releases SET status = 'committed' WHERE id = ?", (release_id,))

    def abort(self, release_id: str) -> None:
        with self._connect() as con:
            con.execute("DELETE FROM releases WHERE id = ? AND status = 'pending'", (release_id,))

    def reconcile(self) -> dict[str, int]:
        """Settle pending rows left by a crash: commit those whose output exists, drop others."""
        done = {"committed": 0, "removed": 0}
        with self._connect() as con:
            rows = con.execute(
                "SELECT id, out_dir FROM releases WHERE status = 'pending'"
            ).fetchall()
            for rid, out_dir in rows:
                manifest = Path(out_dir) / "manifest.json"
                found = False
                if manifest.exists():
                    try:
                        found = json.loads(manifest.read_text()).get("ledger", {}).get("id") == rid
                    except (OSError, ValueError):
                        found = False
                if found:
                    con.execute("UPDATE releases SET status='committed' WHERE id=?", (rid,))
                    done["committed"] += 1
                elif not Path(out_dir).exists():
                    con.execute("DELETE FROM releases WHERE id=?", (rid,))
                    done["removed"] += 1
        return done

    def history(self, dataset: str | None = None) -> list[dict[str, object]]:
        with self._connect() as con:
            con.row_factory = sqlite3.Row
            q = "SELECT * FROM releases" + (" WHERE dataset = ?" if dataset else "")
            return [dict(r) for r in con.execute(q, (dataset,) if dataset else ())]


def check_budget(dataset: str, spent: Cost, cost: Cost, budget: dict[str, float]) -> None:
    if cost.mu is not None or "mu" in budget:
        total = math.sqrt((spent.mu or 0.0) ** 2 + (cost.mu or 0.0) ** 2)
        limit = budget.get("mu")
        if limit is not None and total > limit * (1 + 1e-12):
            raise BudgetExceededError(
                f"dataset {dataset!r}: this release (mu={cost.mu:.4g}) would bring the total to "
                f"mu={total:.4g}, past the lifetime budget mu={limit:g} (already spent "
                f"mu={spent.mu or 0.0:.4g})"
            )
        return
    for key in ("epsilon", "delta"):
        limit = budget.get(key)
        if limit is None:
            continue
        total = (getattr(spent, key) or 0.0) + (getattr(cost, key) or 0.0)
        if total > limit * (1 + 1e-12):
            raise BudgetExceededError(
                f"dataset {dataset!r}: this release ({key}={getattr(cost, key) or 0.0:.4g}) would "
                f"bring the total to {key}={total:.4g}, past the lifetime budget {key}={limit:g} "
                f"(already spent {key}={getattr(spent, key) or 0.0:.4g})"
            )
