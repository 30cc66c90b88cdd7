"""The budget ledger's state, replayed from its events (:mod:`eree.privacy.ledger`).

The ledger is an append-only log; :class:`LedgerState` reads it from the first event to
the last: the registered budgets, each name's content versions and bindings, and every
reservation with its status. The ledger decides what to charge from this state, inside
the transaction that appends the charge.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

from eree.errors import BudgetExceededError, LedgerError
from eree.privacy.composition import Cost, composition_for
from eree.privacy.definitions import ALPHA_DEFINITIONS, EPSILON_DELTA, GAUSSIAN

__all__ = [
    "OLD_EPSILON_DELTA",
    "LedgerState",
    "family_name",
    "refuse_below_spent",
    "require_scheme",
]

#: the ε-δ family's name in ledgers written before it had its own name
OLD_EPSILON_DELTA = "eree"


def family_name(stored: str) -> str:
    """A family name as stored in the ledger, read under today's name."""
    return EPSILON_DELTA if stored == OLD_EPSILON_DELTA else stored


class LedgerState:
    """The ledger's state, replayed from its events."""

    def __init__(self, rows: list[tuple[int, str, str, str]]) -> None:
        self.budgets: dict[str, dict[str, str]] = {}
        self.versions: dict[str, list[dict[str, Any]]] = {}  # name → versions in order
        self.by_fp: dict[str, tuple[str, int]] = {}  # keyed fingerprint → (name, version)
        self.by_structure: dict[str, str] = {}  # keyed structure fingerprint → name
        self.bound: dict[str, set[str]] = {}  # name → keyed fingerprints bound to it
        self.names_of: dict[str, list[str]] = {}  # keyed fingerprint → names, in order
        self.reserves: dict[int, dict[str, Any]] = {}
        self.status: dict[int, str] = {}
        for rid, kind, dataset, body_s in rows:
            body = json.loads(body_s)
            if kind == "budget":
                budget = body["budget"]
                if "family" in budget:
                    budget["family"] = family_name(budget["family"])
                self.budgets[dataset] = budget
            elif kind == "version":
                self.versions.setdefault(dataset, []).append(body)
                self.by_fp[body["fingerprint"]] = (dataset, body["version"])
                self._bind(dataset, body["fingerprint"])
                if body.get("structure"):
                    self.by_structure.setdefault(body["structure"], dataset)
            elif kind == "bind":
                self._bind(dataset, body["fingerprint"])
            elif kind == "reserve":
                body["dataset"] = dataset
                body["family"] = family_name(body["family"])
                self.reserves[rid] = body
                self.status[rid] = "pending"
            elif kind in ("commit", "void"):
                self.status[int(body["release"])] = "committed" if kind == "commit" else "void"

    def _bind(self, name: str, kfp: str) -> None:
        self.bound.setdefault(name, set()).add(kfp)
        names = self.names_of.setdefault(kfp, [])
        if name not in names:
            names.append(name)

    def counts_against(self, rid: int, dataset: str) -> bool:
        """Whether reservation ``rid`` counts against ``dataset``'s budget.

        It does when it was charged to it, or when its content is bound to it (the same
        data under another name).
        """
        r = self.reserves[rid]
        return r["dataset"] == dataset or r["fingerprint"] in self.bound.get(dataset, ())

    def charges(self, dataset: str, family: str) -> list[Cost]:
        """The costs of ``family`` that count against ``dataset`` (pending or committed)."""
        return [
            Cost.from_exact_dict(r["cost"])
            for rid, r in self.reserves.items()
            if self.counts_against(rid, dataset) and r["family"] == family
            and self.status[rid] != "void"
        ]  # fmt: skip

    def alpha(self, dataset: str) -> float | None:
        """The dataset's one α: its budget's, else its first α-release's; None if neither."""
        b = self.budgets.get(dataset, {})
        if "alpha" in b:
            return float(Fraction(b["alpha"]))
        for rid, r in self.reserves.items():
            if (r["dataset"] == dataset and r["definition"] in ALPHA_DEFINITIONS
                    and self.status[rid] != "void"):  # fmt: skip
                return float(r["alpha"])
        return None


#: the scheme of version records written before the ledger recorded one
_FIRST_SCHEME = "eree-fingerprint-v1"


def require_scheme(st: LedgerState, scheme: str, path: Path) -> None:
    """Refuse a ledger whose recorded content was fingerprinted with another scheme.

    Fingerprints of different schemes never match: content recorded under an older scheme
    would look new and could be charged to a fresh budget. The administrator starts a new
    ledger and registers what remains of each budget (docs/privacy.md).
    """
    other = sorted({v.get("scheme", _FIRST_SCHEME) for vs in st.versions.values() for v in vs}
                   - {scheme})  # fmt: skip
    if other:
        raise LedgerError(
            f"ledger {path} records dataset content with fingerprint scheme {other[0]}, "
            f"this eree computes {scheme}: known content could not be recognised, so "
            "nothing is charged to this ledger; start a new ledger and register the "
            "remaining budgets (see docs/privacy.md, 'Fingerprint schemes')"
        )


def refuse_below_spent(st: LedgerState, name: str, family: str, budget: dict[str, float]) -> None:
    """Refuse a budget for ``name`` below what its releases already spent.

    Such a budget closes the dataset to every further release; ``eree ledger budget``
    sets it only with ``--below-spent``.

    Raises:
        BudgetExceededError: naming each key below the spent total.
    """
    comp = composition_for("gedp" if family == GAUSSIAN else "eree")
    spent = comp.compose(st.charges(name, family))
    over = comp.exceeded(spent, {k: v for k, v in budget.items() if k != "alpha"})
    if over:
        raise BudgetExceededError(
            f"budget of {name!r} is below what its releases already spent ("
            + "; ".join(over)
            + "): that closes the dataset to every further release; give --below-spent "
            "to set it anyway"
        )
