"""What every coarsening release shares, whatever its data: the statement, checks, manifest.

A coarsening release (docs/coarsening.md) of establishments (:mod:`eree.release.coarsening`:
the QCEW linked tables) or of job records (:mod:`eree.release.coarsening_jobs`: the LODES
WAC tables) says first that it carries NO FORMAL GUARANTEE, refuses a ledger and follows
the office policy before any data are read, records the same facts of its run in the
manifest and opens its report with the same banner.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eree.engine.base import Engine
from eree.errors import LedgerError
from eree.release.output import base_manifest, check_output_dir
from eree.release.policy import require_uncharged_allowed, site_policy
from eree.release.spec_coarsening import CoarseningPlan

__all__ = [
    "LEDGER_STATEMENT",
    "NO_GUARANTEE",
    "TABLE_FILE",
    "CoarseningRelease",
    "check_before_load",
    "coarsening_report",
    "common_manifest",
    "release_engine",
]

#: what every manifest and report of a coarsened release says first
NO_GUARANTEE = (
    "NO FORMAL GUARANTEE: coarsening (rounding, suppression as last resort) is not a "
    "privacy definition. The risk stated is the audited one: the attacker's linear program "
    "over all published tables together, against the primary rules; it does not cover "
    "integer attacks beyond rounding bounds inward, outside knowledge, or an attacker "
    "who knows how the coarsening was chosen."
)
#: what a coarsening release does with a ledger
LEDGER_STATEMENT = (
    "not charged: a coarsening release has no privacy definition and no cost a ledger can "
    "account for; --ledger is refused, and under a site policy that requires a ledger the "
    'release runs only where the office file allows it (allow_without_ledger = ["coarsen"])'
)
#: the coarsened cells of a release, relative to the release folder
TABLE_FILE = "tables/coarsened"


@dataclass(frozen=True)
class CoarseningRelease:
    """A written coarsening release: its folder and manifest."""

    out_dir: Path
    manifest: dict[str, Any]


def check_before_load(plan: CoarseningPlan, out_dir: Path, ledger: Any, force: bool) -> None:
    """Everything known before any data are read: policy, ledger, output folder.

    Raises:
        SpecError: the site policy requires a ledger and the office file does not allow
            ``"coarsen"``.
        LedgerError: a ledger was given (a coarsening release cannot be charged).
        EreeError: the output folder cannot be written.
    """
    if ledger is not None:
        raise LedgerError(
            "a coarsening release carries no formal guarantee and has no cost a ledger can "
            "account for: nothing can be charged; run it without --ledger"
        )
    require_uncharged_allowed("coarsen", f"the spec {plan.source or plan.name}")
    check_output_dir(out_dir, force=force)


def release_engine(plan: CoarseningPlan, engine: Engine | None) -> Engine:
    """``engine``, or the spec's (``[engine] kind`` with its ``[spark]`` settings)."""
    if engine is not None:
        return engine
    from eree.engine.select import make_engine
    from eree.release.spec import check_spark_settings

    check_spark_settings(plan)  # type: ignore[arg-type]  # reads .engine and .spark
    s = plan.spark
    return make_engine(
        plan.engine.kind, cores=s.cores, driver_memory=s.driver_memory, master=s.master,
        conf=s.conf,
    )  # fmt: skip


def common_manifest(
    plan: CoarseningPlan, engine: Engine, seed: int | None, protection: dict[str, Any]
) -> dict[str, Any]:
    """The manifest's parts every coarsening release has (public facts of the run).

    ``protection``: the release's own ``protection`` entries (rounding, bases, rules), after
    the mode, ``formal_guarantee`` (null) and the statement.
    """
    from eree.data.location import input_label

    m = base_manifest()
    m["random"] = (
        {"mode": "seeded", "seed": seed, "warning": "seeded random rounding: NOT FOR PUBLICATION"}
        if seed is not None
        else {"mode": "secure", "source": "the operating system's secure random source"}
    )
    m["policy"] = site_policy().describe()
    m["dataset"] = {
        "name": plan.name,
        "fingerprint": None,
        "fingerprint_note": "not computed: a coarsening release is not charged to a ledger",
        "files": [input_label(p) for p in plan.data.input_files()],
    }
    m["spec"] = plan.raw
    m["engine"] = engine.describe()
    m["protection"] = {
        "mode": plan.protection.mode,
        "formal_guarantee": None,
        "statement": NO_GUARANTEE,
        **protection,
    }
    m["privacy"] = {
        "definition": None,
        "total": None,
        "notes": ["no privacy definition: " + NO_GUARANTEE],
    }
    m["ledger"] = {"charged": False, "statement": LEDGER_STATEMENT}
    return m


def merged_groups(protection: dict[str, Any]) -> str:
    """The manifest's merged categories in words (``code (members); …``; "" for none)."""
    merges = protection.get("merges", {})
    groups = [g for kind in ("areas", "industries") for g in merges.get(kind, [])]
    return "; ".join(f"{g['code']} ({', '.join(g['members'])})" for g in groups)


def coarsening_report(m: dict[str, Any]) -> str:
    """The release's report.html: the statement first, then the audited risk and the cells."""
    from eree.htmlpage import page, table

    risk = m["audited_risk"]
    rows = []
    for st, v in m["summary"].items():
        for a, s in v["attributes"].items():
            b = s["by_status"]
            au = risk["per_state"][st][a]
            rows.append([
                st, a, s["cells"], s["cells_published"], b["exact"],
                b["rounded"] + b["random_rounded"], b["suppressed"],
                s["information_loss"], au["violations"], au["cells_pinned"],
            ])  # fmt: skip
    headers = ["state", "attribute", "cells", "published", "exact", "rounded", "suppressed",
               "information loss", "violations", "pinned"]  # fmt: skip
    p = m["protection"]
    sections = [
        f'<div class="banner">{html.escape(p["statement"])}</div>',
        "<h2>Audited risk</h2>",
        f"<p>{html.escape(risk['method'])}: <b>{risk['violations']}</b> violations "
        f"({html.escape(risk['violations_meaning'])}); <b>{risk['cells_pinned']}</b> cells "
        f"pinned ({html.escape(risk['cells_pinned_meaning'])}).</p>",
        table(headers, rows, left=2, digits=3),
        "<h2>Method</h2>",
        f"<p>Rounding: {html.escape(p['rounding_meaning'])}. Rules: "
        f"{html.escape(str(p['rules']))}.</p>",
        f"<p>Ledger: {html.escape(m['ledger']['statement'])}.</p>",
    ]
    groups = merged_groups(p)
    if groups:
        sections.insert(
            -1,
            "<p>Categories merged (each group published as one category, its members' own "
            f"cells not published): {html.escape(groups)}.</p>",
        )
    if m["random"]["mode"] == "seeded":
        sections.insert(0, '<div class="banner">SEEDED: NOT FOR PUBLICATION</div>')
    return page(f"Coarsened release {m['dataset']['name']}", sections)
