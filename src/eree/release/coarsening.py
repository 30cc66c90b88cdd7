"""A coarsening release: the protection mode with no formal guarantee, end to end.

See docs/coarsening.md. A spec with ``[protection] mode = "coarsening"``
(:mod:`eree.release.spec_coarsening`) is released here, on the normal path of a release
(``eree protect``):

1. **Before any data are read**: the site policy (a coarsening release cannot be charged:
   under ``require_ledger`` it is refused unless the office file allows ``"coarsen"``,
   exactly as ``eree coarsen``), a ``--ledger`` is refused (nothing to charge: no
   privacy definition, no cost), the output folder is checked.
2. The engine (Polars or Spark) loads and validates the establishments; the public
   columns and the attributes' values come back as one Polars frame (the linked tables
   and the attacker's LP run in memory, one state at a time).
3. Per state and attribute, the QCEW linked tables are coarsened by the optimizer
   (:func:`eree.suppression.coarsening.greedy_coarsen`): rounded to bases, suppression as
   the last resort, until the attacker's LP over all published tables finds no sensitive
   cell narrowed below its protection interval. A violation left is an error: nothing is
   written.
4. Written through the release transaction (:class:`~eree.release.output.ReleaseWriter`:
   staged in a hidden sibling, renamed into place; an interrupted or killed run leaves no
   release): ``tables/coarsened.parquet`` (and ``.csv``) with status flags,
   ``manifest.json``, ``report.html`` and, with ``[output] format = "qcew-by-area"``,
   the QCEW by-area files (:mod:`eree.release.coarsened_qcew`).

The manifest and the report say first that the release carries NO FORMAL GUARANTEE, then
its audited risk: sensitive cells narrowed below the rule (0, or nothing is written) and
cells pinned to one value though published coarsened, per state and attribute.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from eree.data.config import EstablishmentDataConfig
from eree.engine.base import Engine
from eree.errors import EreeError
from eree.release.coarsening_common import (
    LEDGER_STATEMENT,
    NO_GUARANTEE,
    TABLE_FILE,
    CoarseningRelease,
    check_before_load,
    coarsening_report,
    common_manifest,
    release_engine,
)
from eree.release.output import ReleaseWriter
from eree.release.spec_coarsening import CoarseningPlan

if TYPE_CHECKING:
    from eree.suppression.merges import CategoryMerges

__all__ = [
    "LEDGER_STATEMENT",
    "NO_GUARANTEE",
    "ROUNDING_NOTE",
    "TABLE_FILE",
    "CoarseningRelease",
    "check_merge_data",
    "coarsen_state",
    "coarsening_release",
    "establishment_frame",
    "suppression_config_of",
]

#: the rounding kinds, in words (the agency's choice)
ROUNDING_NOTE = {
    "deterministic": "deterministic: each coarsened cell published as the range of its base "
    "that holds it, [k·base, (k+1)·base) (bases 5, 10, 20, 40, …: each coarser range holds "
    "the finer one); a cell the other tables already pin more closely may be published "
    "finer (exact, rounded to the nearest multiple of a base: |published − true| ≤ base/2, "
    "or a size class)",
    "random": "unbiased random rounding: up or down to a multiple of each cell's base with "
    "the probabilities that keep the expected value (|published − true| < base); whether "
    "the agency may use it is its own policy choice",
}
#: the public columns the linked tables read when the data have them
_PUBLIC = ("state", "cnty", "own", "naics", "naics3", "naics4", "naics5", "super_sector")


def suppression_config_of(plan: CoarseningPlan) -> Any:
    """The :class:`~eree.suppression.SuppressionConfig` of ``[protection]``'s rules."""
    from eree.suppression import PrimaryRules, SuppressionConfig

    p = plan.protection
    rules = PrimaryRules(
        threshold=p.threshold or None,
        dominance_n=p.dominance_n,
        dominance_k=p.dominance_k or None,
        p_percent=p.p_percent or None,
        min_protection=p.min_protection,
        exempt={"own": p.exempt_own} if p.exempt_own else {},
    )
    return SuppressionConfig(rules=rules, attributes=p.attributes)


def coarsen_state(
    part: pl.DataFrame,
    cfg: Any,
    rounding: str,
    seed: int | None,
    merges: CategoryMerges | None = None,
) -> dict[str, Any]:
    """Coarsen one state's linked tables (``merges``: the categories published as one).

    Returns ``tables`` (the linked tables, confidential), ``publications`` (attribute →
    :class:`~eree.suppression.coarsening.Publication`), ``frames`` (each attribute's cells
    with status flags, as published), ``attributes`` (attribute → summary: counts, loss,
    audit) and ``sensitive_cells``. ``seed`` (experiments only) seeds the i-th attribute
    with ``seed + i``.
    """
    from eree.suppression import primary_suppression, qcew_tables
    from eree.suppression.coarsening import greedy_coarsen
    from eree.suppression.linked import BasisMemory

    tables = qcew_tables(
        part, cfg.attributes, domain=cfg.domain, top=cfg.rules.top_needed, merges=merges
    )
    prim = primary_suppression(tables, cfg.rules, cfg.attributes)
    out: dict[str, Any] = {"tables": tables, "frames": [], "publications": {}, "attributes": {}}
    # the attributes share the tables' relations: each one's LPs start where the last
    # attribute's ended (where the simplex starts only; the same bounds)
    memory = BasisMemory(tables.n_cells, tables.relations.shape[0])
    for i, a in enumerate(cfg.attributes):
        res = greedy_coarsen(
            tables,
            a,
            prim,
            rounding=rounding,
            seed=None if seed is None else seed + i,
            memory=memory,
        )
        out["publications"][a] = res.publication
        out["frames"].append(res.publication.to_frame(tables, a))
        out["attributes"][a] = res.summary()
    out["sensitive_cells"] = int(prim.primary.sum())
    return out


def establishment_frame(plan: CoarseningPlan, engine: Engine) -> pl.DataFrame:
    """The establishments as one Polars frame, loaded and validated by ``engine``.

    The public columns the linked tables read and the published attributes' values (by
    id, :meth:`~eree.engine.base.Engine.identity_values`): what every engine gives the
    same way.
    """
    assert isinstance(plan.data, EstablishmentDataConfig)  # a job-table plan: coarsening_jobs
    data = engine.load_establishments(plan.data)
    public = [c for c in _PUBLIC if c in data.columns]
    ids = engine.public_columns(data, [data.id_column, *public])
    values = engine.identity_values(data, plan.protection.attributes)
    frame = ids.join(values, on=data.id_column, how="inner", validate="1:1")
    return frame.with_columns(pl.col(c).cast(pl.Utf8) for c in public)


#: the codes the QCEW by-area files are named by (state + county FIPS)
_FIPS = {"state": (r"^[0-9]{1,2}$", "state FIPS code (1–2 digits)"),
         "cnty": (r"^[0-9]{1,3}$", "county FIPS code (1–3 digits)")}  # fmt: skip


def check_fips(frame: pl.DataFrame, plan: CoarseningPlan) -> None:
    """Refuse state or county codes that are not FIPS codes (they name the agency files).

    Raises:
        DataValidationError: naming the file and the column (the engine's load does not
            keep the file's row numbers; no value is printed).
    """
    from eree.data.location import input_label
    from eree.errors import DataValidationError

    assert isinstance(plan.data, EstablishmentDataConfig)
    for column, (pattern, what) in _FIPS.items():
        bad = ~frame.get_column(column).cast(pl.Utf8).str.contains(pattern)
        if bool(bad.fill_null(True).any()):
            raise DataValidationError(
                f"a value is not a {what}, and [output].format names each file by its area "
                "(state + county FIPS)",
                file=input_label(plan.data.path),
                column=column,
                rule="fips",
            )


def check_merge_data(frame: pl.DataFrame, plan: CoarseningPlan) -> None:
    """Refuse merges the data do not support (:func:`eree.suppression.check_merges`).

    Merged areas need data of one state: county codes are a state's. No merge: nothing
    to check.

    Raises:
        DataValidationError: naming the spec key, the file and the column (the codes are
            public; no confidential value is printed).
    """
    from eree.data.location import input_label
    from eree.errors import DataValidationError
    from eree.suppression import check_merges

    assert isinstance(plan.data, EstablishmentDataConfig)
    merges = plan.protection.merges
    if not merges:  # None (job tables) or no group
        return
    file = input_label(plan.data.path)
    if merges.areas and "state" in frame.columns and frame.get_column("state").n_unique() > 1:
        raise DataValidationError(
            "[protection].merge_areas names a state's county codes, and the data hold more "
            "than one state: release each state with its own spec",
            file=file,
            column="state",
            rule="merge",
        )
    check_merges(frame, merges, file=file)


def _by_state(frame: pl.DataFrame) -> list[tuple[str | None, pl.DataFrame]]:
    if "state" not in frame.columns:
        return [(None, frame)]
    codes = sorted(frame.get_column("state").unique().to_list())
    return [(c, frame.filter(pl.col("state") == c).drop("state")) for c in codes]


def coarsening_release(
    plan: CoarseningPlan,
    out_dir: str | Path,
    *,
    seed: int | None = None,
    engine: Engine | None = None,
    ledger: Any = None,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
) -> CoarseningRelease:
    """Run one coarsening release and write it atomically to ``out_dir``.

    Args:
        seed: seeds random rounding — EXPERIMENTS ONLY: the release is marked NOT FOR
            PUBLICATION (default: the OS's secure source).
        engine: the engine that loads the data (default: the spec's ``[engine] kind``).
        ledger: must be None (see :func:`check_before_load`).
        force: replace an earlier output of eree in ``out_dir``.
        progress: called with a line of progress (a state started).

    A plan of job records (``[data] kind = "eree"``) is released by
    :func:`eree.release.coarsening_jobs.jobs_release` (the LODES WAC tables).

    Raises:
        SpecError, LedgerError, EreeError: refused before any data are read; or
            DataValidationError from the engine's checks; EreeError when the optimizer
            leaves a violation (nothing written).
    """
    from eree.release.coarsened_qcew import qcew_files

    out = Path(out_dir)
    check_before_load(plan, out, ledger, force)
    engine = release_engine(plan, engine)
    if plan.kind == "jobs":
        from eree.release.coarsening_jobs import jobs_release

        return jobs_release(plan, out, seed=seed, engine=engine, force=force, progress=progress)
    cfg = suppression_config_of(plan)
    rounding = plan.protection.rounding
    frame = establishment_frame(plan, engine)
    if plan.output.format is not None:
        check_fips(frame, plan)
    merges = plan.protection.merges
    check_merge_data(frame, plan)
    states: dict[str, dict[str, Any]] = {}
    frames: list[pl.DataFrame] = []
    pubs: dict[str, Any] = {}
    for code, part in _by_state(frame):
        label = code or "all"
        if progress is not None:
            progress(f"state {label}: coarsening…")
        res = coarsen_state(part, cfg, rounding, seed, merges)
        left = sum(s["audit"]["violations"] for s in res["attributes"].values())
        if left:
            raise EreeError(
                f"state {label}: the optimizer left sensitive cells narrowed below the rule "
                "(an internal error; their number is not printed); nothing written"
            )
        states[label] = {"sensitive_cells": res["sensitive_cells"], **res["attributes"]}
        pub = pl.concat(res["frames"], how="vertical_relaxed")
        frames.append(
            pub.with_columns(pl.lit(label).alias("state")).select(
                "state", pl.all().exclude("state")
            )
        )
        pubs[label] = (res["tables"], res["publications"])
    del frame
    table = pl.concat(frames, how="vertical_relaxed")
    manifest = _manifest(plan, engine, seed, states, table.height)
    with ReleaseWriter(out, csv=plan.output.csv, seeded=seed is not None, force=force) as w:
        extra = {f"{TABLE_FILE}.parquet": table}
        if plan.output.csv:
            extra[f"{TABLE_FILE}.csv"] = table
        if plan.output.format is not None:
            files, about = qcew_files(plan, pubs)
            # the names as written (a seeded release marks them NOT-FOR-PUBLICATION)
            about["files"] = sorted(w.write_bytes(rel, data) for rel, data in files.items())
            manifest["agency_files"] = about
        w.finish(manifest, extra, {"report.html": coarsening_report(manifest)})
    return CoarseningRelease(out, manifest)


def _totals(states: dict[str, dict[str, Any]]) -> dict[str, int]:
    t = {"cells": 0, "cells_published": 0, "violations": 0, "cells_pinned": 0}
    for st in states.values():
        for a, s in st.items():
            if a == "sensitive_cells":
                continue
            t["cells"] += s["cells"]
            t["cells_published"] += s["cells_published"]
            t["violations"] += s["audit"]["violations"]
            t["cells_pinned"] += s["audit"]["cells_pinned"]
    return t


def _manifest(
    plan: CoarseningPlan,
    engine: Engine,
    seed: int | None,
    states: dict[str, dict[str, Any]],
    rows: int,
) -> dict[str, Any]:
    from eree.suppression import CategoryMerges
    from eree.suppression.coarsening import ladder_bases

    p = plan.protection
    m = common_manifest(
        plan,
        engine,
        seed,
        {
            "rounding": p.rounding,
            "rounding_meaning": ROUNDING_NOTE[p.rounding],
            "bases": list(ladder_bases("grid" if p.rounding == "deterministic" else "rounding")),
            "rules": suppression_config_of(plan).rules.describe(),
            "attributes": list(p.attributes),
            "merges": (p.merges or CategoryMerges()).describe(),
        },
    )
    totals = _totals(states)
    m["audited_risk"] = {
        "method": "the attacker's interval LP over all published tables together (HiGHS), "
        "per connected component, against the primary rules' protection intervals",
        "violations": totals["violations"],
        "violations_meaning": "sensitive cells whose attacker's interval does not cover "
        "[T − min(U, T), T + U] (narrowed below the rule or pinned)",
        "cells_pinned": totals["cells_pinned"],
        "cells_pinned_meaning": "cells the attacker pins to one value though they were "
        "published coarsened (not a violation of the rules: counted)",
        "per_state": {
            st: {a: s["audit"] for a, s in v.items() if a != "sensitive_cells"}
            for st, v in states.items()
        },
    }
    m["tables"] = [
        {
            "file": f"{TABLE_FILE}.parquet",
            "rows": rows,
            "cells": totals["cells"],
            "cells_published": totals["cells_published"],
            "columns": "state, table_code, area, own, industry, table, attribute, status "
            "(exact | rounded | range | suppressed; random rounding written as its range), "
            "value, base, lower, upper, establishments",
        }
    ]
    m["summary"] = {
        st: {
            "sensitive_cells": v["sensitive_cells"],
            "attributes": {
                a: {k: s[k] for k in ("cells", "cells_published", "by_status", "information_loss")}
                for a, s in v.items()
                if a != "sensitive_cells"
            },
        }
        for st, v in states.items()
    }
    return m
