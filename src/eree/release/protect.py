"""One release, end to end: account → load → engine → mechanisms → write (DESIGN.md §1)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eree.engine.base import Engine
from eree.mechanisms.noise import NoiseSource
from eree.privacy.accountant import PrivacyReport
from eree.privacy.composition import Cost
from eree.privacy.ledger import Ledger, check_budget
from eree.release.build import BuiltPlan, build
from eree.release.output import base_manifest, check_output_dir, dataset_sha256, write_release
from eree.release.spec import Plan
from eree.release.tables import QueryTable


def account(plan: Plan) -> PrivacyReport:
    """The privacy cost of a plan, from its mechanism objects alone (no data read)."""
    return build(plan).report()


def semantics(plan: Plan, report: PrivacyReport) -> dict[str, Any]:
    """What the release guarantees, in words (DESIGN.md §3.3)."""
    from eree.release.family import family_of

    return family_of(plan).semantics(plan, report)


def explain(plan: Plan) -> dict[str, Any]:
    """Everything ``eree explain`` shows: per-query cost and the semantics. Reads no data."""
    from eree.release.cells import check_plan_cells

    cells = {name: qc.to_dict() for name, qc in check_plan_cells(plan).items()}
    report = account(plan)
    return {
        "plan": plan.name,
        "privacy": report.to_dict(),
        "semantics": semantics(plan, report),
        "cells": cells,
    }


@dataclass(frozen=True)
class ReleaseResult:
    out_dir: Path
    manifest: dict[str, Any]
    tables: list[QueryTable]


def _query_by(plan: Plan, name: str) -> list[str] | str:
    q = plan.query(name)
    return q.by if isinstance(q.by, str) else list(q.by)


#: spec settings that are confidential (noise infusion's distortion range)
CONFIDENTIAL_PARAMS = ("s", "t")


def _redacted_spec(raw: dict[str, Any]) -> dict[str, Any]:
    """The plan as given, with noise infusion's confidential s and t withheld."""
    out = dict(raw)
    queries = []
    for q in raw.get("query", []):
        q = dict(q)
        for k in CONFIDENTIAL_PARAMS:
            if k in q:
                q[k] = "withheld (confidential)"
        queries.append(q)
    if "query" in raw:
        out["query"] = queries
    return out


def build_manifest(
    plan: Plan,
    report: PrivacyReport,
    tables: list[QueryTable],
    source: NoiseSource,
    sha256: str,
) -> dict[str, Any]:
    """The manifest of §7.3. Contains public information only (no data-dependent scale)."""
    m = base_manifest()
    m["random"] = source.describe()
    m["dataset"] = {
        "name": plan.name,
        "sha256": sha256,
        "files": [p.name for p in plan.data.input_files()],
    }
    m["spec"] = _redacted_spec(plan.raw)
    priv = report.to_dict()
    m["privacy"] = {
        "definition": report.definition,
        "alpha": report.alpha,
        "neighbor": plan.privacy.neighbor,
        "distance": plan.privacy.distance,
        "total": priv["total"],
        "notes": priv["notes"],
    }
    for k, v in report.extra.items():
        m["privacy"].setdefault(k, v)
    queries = []
    for qt in tables:
        q = plan.query(qt.name)
        entry: dict[str, Any] = {
            "name": qt.name,
            "by": _query_by(plan, qt.name),
            "mechanism": q.mechanism,
            "cells": qt.cells,
            "file": f"tables/{qt.name}.parquet",
        }
        try:
            c = report.charge(qt.name)
            entry.update(
                cost=c.total.to_dict(),
                per_cell=c.per_cell.to_dict(),
                guarantee=c.guarantee,
                multiplicity=c.multiplicity,
                params=c.params,
            )
        except KeyError:
            entry["cost"] = None
        entry["uncertainty"] = qt.uncertainty
        entry["notes"] = list(qt.notes)
        queries.append(entry)
    m["queries"] = queries
    m["semantics"] = semantics(plan, report)
    return m


def protect(
    plan: Plan,
    out_dir: str | Path,
    source: NoiseSource,
    *,
    engine: Engine | None = None,
    ledger: Ledger | str | Path | None = None,
) -> ReleaseResult:
    """Run one release and write it atomically to ``out_dir``.

    The plan's mechanism objects are built and charged before any data is read: a plan
    the accountant refuses never touches the data. With a ledger, the release is reserved
    against the dataset's lifetime budget before any noise is drawn and committed once
    the output is in place (DESIGN.md §3.4).
    """
    from eree.release.cells import check_plan_cells

    check_plan_cells(plan)  # lower bounds from the declared domains, before any data
    built = build(plan)
    report = built.report()
    check_output_dir(out_dir)
    budget = plan.privacy.budget
    if budget and ledger is None:  # no history: the release alone must fit
        check_budget(plan.name, Cost(), report.total, budget)
    sha = dataset_sha256(plan.data.input_files())
    book = Ledger(ledger) if isinstance(ledger, str | Path) else ledger
    rid = None
    if book is not None:
        rid = book.reserve(
            plan.name, sha, plan.privacy.definition, plan.privacy.alpha, report.total,
            budget, out_dir,
        )  # fmt: skip
    try:
        result = _run(built, out_dir, source, engine, report, sha, rid)
    except BaseException:
        if book is not None and rid is not None and not Path(out_dir, "manifest.json").exists():
            book.abort(rid)
        raise
    if book is not None and rid is not None:
        book.commit(rid)
    return result


def _run(
    built: BuiltPlan,
    out_dir: str | Path,
    source: NoiseSource,
    engine: Engine | None,
    report: PrivacyReport,
    sha: str,
    rid: str | None,
) -> ReleaseResult:
    from eree.release.family import family_of

    plan = built.plan
    family = family_of(plan)
    family.check_before_load(plan)
    if engine is None:
        from eree.engine.select import make_engine

        e = plan.engine
        engine = make_engine(e.kind, cores=e.cores, driver_memory=e.driver_memory)
    data = family.load(plan, engine)
    tables = family.release(built, data, engine, source)
    extra_files, extra_manifest = family.postprocess(built, data, tables)
    manifest = build_manifest(plan, report, tables, source, sha)
    if rid is not None:
        manifest["ledger"] = {"id": rid}
    manifest.update(extra_manifest)
    write_release(Path(out_dir), tables, manifest, csv=plan.output.csv, extra=extra_files or None)
    return ReleaseResult(Path(out_dir), manifest, tables)
