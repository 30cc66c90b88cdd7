"""One release, end to end: account → load → engine → mechanisms → write.

See docs/design.md#data-flow.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from eree.data.config import JobTablesConfig
from eree.data.location import input_label
from eree.data.schema import JOB_TYPES
from eree.engine.base import Engine
from eree.errors import LedgerError
from eree.mechanisms.noise import NoiseSource
from eree.privacy.accountant import PrivacyReport
from eree.release.build import BuiltPlan, build
from eree.release.output import (
    ReleaseWriter,
    UnwrittenTable,
    WrittenTable,
    base_manifest,
    check_finite,
    check_output_dir,
)
from eree.release.policy import SitePolicy, site_policy
from eree.release.spec import Plan, check_spark_settings
from eree.release.tables import QueryTable

if TYPE_CHECKING:  # pragma: no cover - the ledger is imported only by a release that has one
    from eree.privacy.ledger import Charge, Ledger


def semantics(plan: Plan, report: PrivacyReport) -> dict[str, Any]:
    """What the release guarantees, in words (docs/design.md#semantics)."""
    from eree.release.family import family_of

    return family_of(plan).semantics(plan, report)


def explain(plan: Plan, n_establishments: int | None = None) -> dict[str, Any]:
    """Everything ``eree explain`` shows: per-query cost, semantics and accuracy preview.

    Reads no data; ``n_establishments`` (public: the workplace frame) sharpens the
    preview and its warnings when the caller has read the frame (``eree validate``).
    """
    from eree.release.cells import check_plan_cells
    from eree.release.preview import preview

    cells = {name: qc.to_dict() for name, qc in check_plan_cells(plan).items()}
    built = build(plan)
    report = built.report()
    return {
        "plan": plan.name,
        "privacy": report.to_dict(),
        "semantics": semantics(plan, report),
        "cells": cells,
        "preview": preview(built, n_establishments),
    }


@dataclass(frozen=True)
class ReleaseResult:
    """A written release: its directory, manifest and tables.

    ``tables`` are the in-memory tables when post-processing needed them all, otherwise
    the written ones (each read back from the release when its ``table`` is used).
    """

    out_dir: Path
    manifest: dict[str, Any]
    tables: list[QueryTable | WrittenTable | UnwrittenTable]


def _query_by(plan: Plan, name: str) -> list[str] | str:
    q = plan.query(name)
    return q.by if isinstance(q.by, str) else list(q.by)


#: spec settings that are confidential (noise infusion's distortion range)
CONFIDENTIAL_PARAMS = ("s", "t")

#: the manifest's ``dataset.fingerprint_note`` of a release not charged to a ledger: its
#: ``dataset.fingerprint`` is null. A fingerprint keyed with a fresh key that is then
#: thrown away identifies the data to nobody, so it is not computed (on national data it
#: was the costliest step of a release).
NO_LEDGER_FINGERPRINT = (
    "not computed: this release was not charged to a ledger, and a fingerprint keyed "
    "with a key nobody keeps would identify the data to nobody"
)


def _redacted_spec(raw: dict[str, Any]) -> dict[str, Any]:
    """The plan as given, with the values it must not show withheld.

    Noise infusion's confidential s and t, and the values of the ``[spark.conf]``
    settings Spark itself treats as secret.
    """
    out = dict(raw)
    spark = raw.get("spark")
    if isinstance(spark, dict) and isinstance(spark.get("conf"), dict):
        from eree.engine.spark.settings import redacted_conf

        out["spark"] = {**spark, "conf": redacted_conf(spark["conf"])}
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


def keyed_plan(plan: Plan, source: NoiseSource) -> Plan:
    """``plan`` whose job tables carry the release's secret order key (data never read).

    The key (:meth:`~eree.mechanisms.noise.NoiseSource.order_key`) orders each worker's
    jobs when some are dropped (docs/privacy.md#several-jobs-per-worker); it lives in the
    loader's configuration only and is never written.
    """
    if not isinstance(plan.data, JobTablesConfig) or not plan.data.selects_jobs:
        return plan
    return replace(plan, data=replace(plan.data, order_key=source.order_key()))


def jobs_description(cfg: JobTablesConfig) -> dict[str, Any]:
    """What the released jobs are and what k means (public: the spec's choices).

    docs/privacy.md#several-jobs-per-worker.
    """
    k = cfg.jobs_per_worker
    if not cfg.selects_jobs:
        rule = "each worker holds exactly one job (checked)"
    elif cfg.primary_only:
        rule = (
            "each worker's primary job: the highest-earning (by the job's earnings), ties "
            "in a keyed random order (a secret per-release key, never written)"
            + ("; kept when it is private" if cfg.private_only else "")
        )
    else:
        rule = (
            f"at most k = {k} jobs per worker: the first k in a keyed random order (a "
            "secret per-release key, never written)"
        )
    return {
        "job_type": cfg.job_type,
        "job_type_meaning": JOB_TYPES[cfg.job_type],
        "max_jobs_per_worker": k,
        "rule": rule,
        "meaning": (
            f"a worker contributes at most {k} job{'s' if k != 1 else ''}; every query's "
            "epsilon (delta) covers a worker with that many jobs as well as an "
            "establishment's alpha-change (docs/privacy.md#several-jobs-per-worker)"
        ),
    }


def build_manifest(
    plan: Plan,
    report: PrivacyReport,
    tables: Sequence[QueryTable | WrittenTable | UnwrittenTable],
    source: NoiseSource,
    fingerprint: str | None,
    policy: SitePolicy | None = None,
    engine: Engine | None = None,
) -> dict[str, Any]:
    """The manifest. Contains public information only (no data-dependent scale).

    See docs/design.md#release-outputs.

    ``fingerprint`` is the keyed content fingerprint of a release charged to a ledger, or
    ``None`` without one (see :func:`protect`). ``engine``: the engine that scanned the
    data, recorded by :meth:`~eree.engine.base.Engine.describe` (for Spark: the master
    and Spark's version).
    """
    m = base_manifest()
    m["random"] = source.describe()
    m["policy"] = (policy or site_policy()).describe()  # the policy the release ran under
    m["dataset"] = {
        "name": plan.name,
        "fingerprint": fingerprint,
        "files": [input_label(p) for p in plan.data.input_files()],
    }
    if fingerprint is None:
        m["dataset"]["fingerprint_note"] = NO_LEDGER_FINGERPRINT
    if isinstance(plan.data, JobTablesConfig):
        m["dataset"]["jobs"] = jobs_description(plan.data)
    m["spec"] = _redacted_spec(plan.raw)
    if engine is not None:
        m["engine"] = engine.describe()
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
        if isinstance(qt, UnwrittenTable):  # publish = false: answered, charged, not written
            entry.update(file=None, published=False)
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
    new_version: bool = False,
    force: bool = False,
) -> ReleaseResult:
    """Run one release and write it atomically to ``out_dir``.

    The plan's mechanism objects are built and charged before any data is read: a plan
    the accountant refuses never touches the data. With a ledger (docs/design.md#budget-ledger), the
    data are loaded and fingerprinted, then the release is reserved against the dataset's
    registered lifetime budget (a spec's ``[privacy] budget`` may only lower it) before
    any noise is drawn, and committed once the output is in place.

    Args:
        new_version: the data under the spec's name changed on purpose (a new version).
        force: replace an earlier output of eree in ``out_dir`` that holds no release
            recorded in a ledger (:func:`eree.data.outdir.check_out`). Never with a
            ledger: a release charged to a ledger goes to a new or empty folder.

    Raises:
        LedgerError: seeded noise with a ledger, an unregistered dataset, changed content
            without ``new_version``, a ledger that fails verification.
        BudgetExceededError: the release would pass a budget.
    """
    from eree.release.cells import check_plan_cells
    from eree.release.family import family_of

    check_plan_cells(plan)  # lower bounds from the declared domains, before any data
    built = build(plan)
    report = built.report()
    policy = site_policy()
    if policy.require_ledger and ledger is None and source.for_publication:
        where = "PATH" if policy.ledger is None else f"{policy.ledger} (the office's ledger)"
        raise LedgerError(
            f"the site policy ({policy.source}) requires every publishable release to be "
            f"charged to a ledger: add --ledger {where} (a seeded experiment, --seed, is "
            "allowed without one and is never published)"
        )
    if ledger is not None:  # the office's ledger, when the policy names one
        policy.check_ledger(Path(ledger) if isinstance(ledger, str | Path) else ledger.path)
    if force and ledger is not None and Path(out_dir).is_dir() and any(Path(out_dir).iterdir()):
        raise LedgerError(
            f"output folder {out_dir} is not empty: a release charged to a ledger is written "
            "only to a new or empty folder (--force does not apply)"
        )
    check_output_dir(out_dir, force=force)
    budget = plan.privacy.budget
    if budget and ledger is None:  # no history: the release alone must fit
        from eree.privacy.ledger import check_spec_budget

        check_spec_budget(plan.name, plan.privacy.definition, plan.privacy.alpha,
                          report.total, budget)  # fmt: skip
    if ledger is not None and source.describe().get("mode") == "seeded":
        raise LedgerError(
            "seeded randomness is never charged as a release: --seed cannot be combined "
            "with --ledger (a seeded release is NOT FOR PUBLICATION)"
        )
    if ledger is not None:  # known from the spec: refused before any data are read
        from eree.privacy.composition import check_chargeable

        check_chargeable(plan.privacy.definition)
    if isinstance(ledger, str | Path):
        from eree.privacy.ledger import Ledger

        ledger = Ledger(ledger, create=False)
    book = ledger
    family = family_of(plan)
    family.check_before_load(plan)
    if engine is None:
        from eree.engine.select import make_engine

        check_spark_settings(plan)

        s = plan.spark
        engine = make_engine(
            plan.engine.kind,
            cores=s.cores,
            driver_memory=s.driver_memory,
            master=s.master,
            conf=s.conf,
        )
    # every configured column is read and checked, with or without a ledger: one verdict
    # on the data (eree validate's), whatever the release (docs/design.md#validation);
    # without a ledger nothing identifies the data (NO_LEDGER_FINGERPRINT): no fingerprint
    data = family.load(keyed_plan(plan, source), engine, narrow=False)
    if book is None:
        return _warn(_run(built, out_dir, source, engine, report, data, None, None, force, policy))
    from eree.data.fingerprint import SCHEME

    fingerprint, structure = engine.fingerprints(data)
    counts = engine.structure_counts(data)
    with book.charge(
        dataset=plan.name, fingerprint=fingerprint, definition=plan.privacy.definition,
        alpha=plan.privacy.alpha, cost=report.total, spec_budget=budget, out_dir=out_dir,
        new_version=new_version, structure=structure, scheme=SCHEME, counts=counts,
    ) as charge:  # fmt: skip
        result = _run(
            built, out_dir, source, engine, report, data, charge.fingerprint, charge, False,
            policy,
        )  # fmt: skip
    return _warn(result)  # after the charge is committed


def _warn(result: ReleaseResult) -> ReleaseResult:
    """Issue each manifest warning as a Python :class:`~eree.errors.ReleaseWarning`.

    For callers of the Python API; the CLI prints the warnings itself and ignores these.
    """
    import warnings as pywarnings

    from eree.errors import ReleaseWarning

    for w in result.manifest.get("warnings") or []:
        text = f"[{w.get('code')}] {w.get('message')}"
        if w.get("remedy"):
            text += f" → {w['remedy']}"
        pywarnings.warn(ReleaseWarning(text), stacklevel=3)
    return result


class _TableFrames(Mapping[str, pl.DataFrame]):
    """The published tables by name, for the report.

    A written table is read back on access, one at a time, its text columns as
    categories (a code per cell, not a string).
    """

    def __init__(
        self, tables: Sequence[QueryTable | WrittenTable | UnwrittenTable], writer: ReleaseWriter
    ) -> None:
        self._tables = {t.name: t for t in tables if not isinstance(t, UnwrittenTable)}
        self._writer = writer

    def __getitem__(self, name: str) -> pl.DataFrame:
        t = self._tables[name]
        if isinstance(t, WrittenTable):  # not in place yet: read from the staging folder
            return (
                pl.scan_parquet(self._writer.staged(name))
                .with_columns(pl.col(pl.Utf8).cast(pl.Categorical))
                .collect(engine="streaming")
            )
        return t.table

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)


def _agency_files(
    plan: Plan,
    frames: Mapping[str, pl.DataFrame],
    tables: Sequence[QueryTable | WrittenTable | UnwrittenTable],
    counts: Any,
    writer: ReleaseWriter,
    manifest: dict[str, Any],
) -> None:
    """Write the ``[output] format`` files (docs/product-lodes-wac.md, docs/product-qcew.md)."""
    if plan.output.format is None:
        return
    from datetime import UTC, datetime

    from eree.release.agency import agency_output

    measurements = {t.name: t.measurements for t in tables}
    created = datetime.now(UTC).date()
    out = agency_output(plan, frames, measurements, counts, created)
    if out is None:
        return
    written = {rel: writer.write_bytes(rel, data) for rel, data in out.files.items()}
    files = out.manifest.get("files")
    manifest["agency_files"] = {
        **out.manifest,
        **({"files": sorted(written[f] for f in files)} if files is not None else {}),
    }


def _run(
    built: BuiltPlan,
    out_dir: str | Path,
    source: NoiseSource,
    engine: Engine,
    report: PrivacyReport,
    data: Any,
    fingerprint: str | None,
    charge: Charge | None,
    force: bool = False,
    policy: SitePolicy | None = None,
) -> ReleaseResult:
    from eree.release.family import family_of
    from eree.release.report import REPORT_FILE, release_report

    plan = built.plan
    family = family_of(plan)
    seeded = source.describe().get("mode") == "seeded"
    tag = None if charge is None else charge.tag
    with ReleaseWriter(
        Path(out_dir), csv=plan.output.csv, seeded=seeded, tag=tag, force=force
    ) as writer:
        tables: list[QueryTable | WrittenTable | UnwrittenTable] = []
        extra_files: dict[str, Any] = {}
        extra_manifest: dict[str, Any] = {}
        # publish = false: answered (pnc reads it) and charged, never written
        unwritten = {q.name for q in plan.queries if not q.publish}
        if family.needs_tables(plan):  # post-processing reads every table: all in memory
            kept = list(family.answer_queries(built, data, engine, source))
            extra_files, extra_manifest = family.postprocess(built, data, engine, kept)
            check_finite(kept, extra_files or None)  # before any file is written
            for qt in kept:
                if qt.name in unwritten:
                    tables.append(UnwrittenTable.of(qt))
                    continue
                writer.write_table(qt)
                tables.append(qt)
        else:  # each table goes to disk as it is produced; one in memory at a time
            for qt in family.answer_queries(built, data, engine, source, streaming=True):
                if qt.name in unwritten:
                    tables.append(UnwrittenTable.of(qt))
                else:
                    tables.append(writer.write_table(qt))
                del qt
        manifest = build_manifest(plan, report, tables, source, fingerprint, policy, engine)
        if charge is not None:
            manifest["ledger"] = charge.manifest_entry()
            manifest["dataset"]["ledger_name"] = charge.dataset
            if charge.notes:
                manifest["ledger"]["notes"] = list(charge.notes)
        manifest.update(extra_manifest)
        from eree.release.accuracy import published_accuracy
        from eree.release.preview import accuracy_tradeoffs, plan_warnings

        # the one place a release's plan warnings join the manifest's list
        n_est = family.n_establishments(data, engine)
        manifest.setdefault("warnings", []).extend(plan_warnings(built, n_est))
        frames = _TableFrames(tables, writer)
        # after the release its published values are public: accuracy at its own cells
        manifest["accuracy"] = published_accuracy(built, frames, n_est)
        manifest["accuracy_tradeoff"] = accuracy_tradeoffs(built, n_est, manifest["accuracy"])
        _agency_files(plan, frames, tables, family.frame_counts(data, engine), writer, manifest)
        report_html = release_report(manifest, frames, extra_files)
        writer.finish(manifest, extra_files or None, {REPORT_FILE: report_html})
    return ReleaseResult(Path(out_dir), manifest, tables)
