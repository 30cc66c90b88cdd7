r"""Coarsening of the WAC tables (rounding, ranges, suppression last) and their rule audit.

The same job tables as the frontier's other releases (:mod:`.frontier`: the eight WAC
families by block, zero cells included) are published **coarsened**: each cell exact,
rounded to a base, as a size-class range, or — the last resort — suppressed, chosen by the
coarsening optimizer (:func:`eree.suppression.coarsening.greedy_coarsen`) so that the
attacker's LP over all of a block's published tables together leaves every small cell
as uncertain as the rule asks.

**The disclosure rule** (the one the frontier's suppression arm, :func:`.frontier.suppress_small`,
protects, so both are compared at the same audited risk): every job is a contributor, a
cell with 1 … ``threshold`` − 1 jobs (default 1 or 2) is sensitive (the threshold rule),
its protection level is one job (``min_protection``). Zero cells are published exactly by
both methods, so a cell not published exactly is known to hold a job: the attacker — the
reconstruction audit's interval LP (:func:`.intervals.interval_audit`) — gives such a cell
the lower bound 1 (:func:`eree.suppression.coarsening.presence_floor`, per table), and the
rule protects the count, not that presence: the attacker's interval must cover
:math:`[\max(T - 1, P),\ T + 1]`, :math:`P` the least the cell can hold given which cells
are non-zero (:func:`eree.suppression.rules.protected_lower`; 1 for a cell with a job).
One job cannot be told from two; that a cell holds a job is disclosed (docs/coarsening.md
says why, and what protecting presence too would take). ``zero_aware=False`` builds and
audits as before stop 40 (a withheld cell read as :math:`[0, \infty)`, the lower end
:math:`T - \min(1, T)`), for comparison only.

**Per block.** Only block tables are published, and no relation links two blocks, so
the attacker's LP is a separate program per block: blocks are coarsened in chunks
(:func:`coarsen_jobs`), each chunk's linked tables by themselves, mapped over a
:class:`.unitmap.UnitMapper` like the record reconstruction's units. The result does not
depend on how blocks are chunked except through the optimizer's round counters.

**The ladder.** ``WAC_BASES`` starts finer than the QCEW ladder (2, 3, then 5, 10, 25, …):
WAC cells are small (most blocks have a few jobs), and a neighbour rounded to 2 or 3
(± 1 job) gives a one-job cell its room at a third of the loss of a base 5.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np
import polars as pl

from eree.evaluate.reconstruct.intervals import interval_audit
from eree.evaluate.reconstruct.tables import PublishedTables, from_frame
from eree.evaluate.reconstruct.unitmap import SerialMap, UnitMapper
from eree.evaluate.reconstruct.wac import ATTRIBUTES, cell_keys, jobs_from_truth, wac_layout
from eree.suppression.coarsening.optimize import BASES

__all__ = ["WAC_BASES", "coarsen_jobs", "rule_audit"]

#: the rounding ladder of the WAC tables: 2 and 3 before the QCEW ladder
WAC_BASES: tuple[float, ...] = (2.0, 3.0, *BASES)

_KEYS = ["table", "block", *ATTRIBUTES]


def _coarsen_chunk(
    item: tuple[pl.DataFrame, int | None],
    *,
    threshold: int,
    rounding: str,
    bases: tuple[float, ...],
    hub_cost: bool,
    per_block: bool,
    zero_aware: bool = True,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Coarsen the WAC tables of the blocks of ``item[0]`` (one row per job), seed ``item[1]``."""
    jobs, seed = item
    from eree.suppression.coarsening import disclosure_check, greedy_coarsen, presence_floor
    from eree.suppression.rules import PrimaryRules, primary_suppression
    from eree.suppression.secondary import SecondaryConfig
    from eree.suppression.tables import tabulate

    rules = PrimaryRules(threshold=threshold, dominance_k=None, p_percent=None)
    tables = tabulate(jobs, wac_layout(), ["jobs"], top=rules.top_needed)
    prim = primary_suppression(tables, rules, ("jobs",))
    t = tables.values("jobs").astype(np.float64)
    # the zero cells are not in these tables: they are published exactly (coarsen_jobs),
    # so every cell here that is not published exactly is known to hold a job
    kind = tables.cells.get_column("table").to_numpy()
    floor = presence_floor(t, t > 0, kind) if zero_aware else None
    sec_floor = float(np.max(floor, initial=0.0)) if floor is not None else 0.0
    one = SecondaryConfig(workers=1, floor=sec_floor)  # a chunk is one worker's: no pool
    res = greedy_coarsen(
        tables,
        "jobs",
        prim,
        rounding=rounding,
        seed=seed,
        bases=bases,
        hub_cost=hub_cost,
        secondary=one,
        floor=floor,
    )
    pub = res.publication
    chosen = 0
    if per_block:
        pub, chosen = _cheaper_per_block(
            tables, rules, prim, pub, res.cell_losses, jobs, floor=sec_floor
        )
    chk = disclosure_check(tables, pub, "jobs", prim, floor=floor)
    lo, hi = pub.own_bounds()
    rr = pub.status == "random_rounded"
    status = np.where(rr, "range", pub.status)
    is_range = status == "range"
    frame = cell_keys(tables).with_columns(
        pl.Series("_status", status),
        pl.Series("_value", np.where(is_range | (status == "suppressed"), np.nan, pub.value)),
        pl.Series("_base", np.where(status == "rounded", pub.base, np.nan)),
        pl.Series("_lower", np.where(is_range, lo, np.nan)),
        pl.Series("_upper", np.where(is_range, hi, np.nan)),
    )
    stats = {
        "sensitive": int(prim.primary.sum()),
        "violations_check": int(chk.violated.sum()),
        "blocks_suppression_cheaper": chosen,
        "rounds": res.rounds,
        "last_resort": res.last_resort,
        "tightened": res.tightened,
    }
    return frame, stats


def _cheaper_per_block(
    tables: Any,
    rules: Any,
    prim: Any,
    pub: Any,
    losses: np.ndarray,
    jobs: pl.DataFrame,
    *,
    floor: float = 0.0,
) -> tuple[Any, int]:
    """Per block, the suppression pattern where its loss is lower (ties: the coarsening).

    A block's suppression loses at least one per sensitive cell (each is withheld), plus
    one if a relation holds exactly one sensitive cell (it needs a complement there, or
    the relation gives it away); a block whose coarsening loses no more than that keeps
    it without computing its suppression pattern (the same choice, less work).
    """
    from eree.suppression import SuppressionConfig, suppress_tables
    from eree.suppression.coarsening import Publication
    from eree.suppression.secondary import SecondaryConfig
    from eree.suppression.tables import tabulate

    block = tables.cells.get_column("block").cast(pl.Utf8).to_numpy()
    codes, inv = np.unique(block, return_inverse=True)
    c_loss = np.bincount(inv, weights=losses, minlength=codes.size)
    sens = np.asarray(prim.primary, dtype=bool)
    bound = np.bincount(inv, weights=sens.astype(np.float64), minlength=codes.size)
    rel = abs(tables.relations).tocsr()
    single = np.flatnonzero((rel @ sens.astype(np.float64)) == 1)
    if single.size:
        member = rel[single].tocoo()
        bound[np.unique(inv[member.col])] += 1.0  # a relation lies in one block
    need = c_loss > bound + 1e-9
    s_mask = np.zeros(block.size, dtype=bool)
    s_loss = np.full(codes.size, np.inf)
    if need.any():
        cfg = SuppressionConfig(
            rules=rules,
            attributes=("jobs",),
            run_audit=False,
            secondary=SecondaryConfig(workers=1, floor=floor),
        )
        sub = tabulate(
            jobs.filter(pl.col("block").is_in(codes[need].tolist())),
            tables.layout,
            ["jobs"],
            top=rules.top_needed,
        )
        sres = suppress_tables(sub, cfg)
        keys = [c for c in sub.cells.columns if c == "table" or c.endswith("_level")]
        keys += [d.name for d in tables.layout.dimensions]
        mapped = (
            tables.cells.select(keys)
            .with_row_index("_i")
            .join(
                sub.cells.select(keys).with_columns(
                    pl.Series("_s", np.asarray(sres.suppressed, dtype=bool))
                ),
                on=keys,
                how="left",
                nulls_equal=True,
            )
        )
        s_mask = mapped.sort("_i").get_column("_s").fill_null(False).to_numpy()
        s_loss = np.where(
            need, np.bincount(inv, weights=s_mask.astype(np.float64), minlength=codes.size), np.inf
        )
    use = (s_loss < c_loss - 1e-9)[inv]
    t = tables.values("jobs").astype(np.float64)
    n_blocks = int((s_loss < c_loss - 1e-9).sum())
    st = np.where(use, np.where(s_mask, "suppressed", "exact"), pub.status).astype("<U16")
    val = np.where(use, np.where(s_mask, np.nan, t), pub.value)
    nan = np.full(t.size, np.nan)
    out = Publication(
        st,
        val,
        np.where(use, nan, pub.base),
        np.where(use, nan, pub.lower),
        np.where(use, nan, pub.upper),
        pub.integer,
    )
    return out, n_blocks


def coarsen_jobs(
    truth: pl.DataFrame,
    exact: pl.DataFrame,
    *,
    threshold: int = 3,
    rounding: str = "deterministic",
    seed: int | None = None,
    bases: Sequence[float] = WAC_BASES,
    blocks_per_chunk: int = 1000,
    mapper: UnitMapper | None = None,
    hub_cost: bool = True,
    per_block: bool = True,
    zero_aware: bool = True,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """The WAC tables coarsened under the small-cell rule (module docstring).

    Args:
        truth: ``unit`` (the block), the attributes, ``true`` (jobs per combination).
        exact: the exact cells (:func:`.frontier.exact_tables` of ``truth``).
        threshold: cells with 1 … ``threshold`` − 1 jobs are sensitive.
        rounding: ``deterministic`` or ``random`` (unbiased random rounding).
        seed: random rounding's seed (experiments only; chunk k uses ``seed + k``).
        bases: the rounding ladder.
        blocks_per_chunk: blocks coarsened together (independent programs either way).
        mapper: where the chunks run (default: this process). Chunks are few and large:
            give a process map one chunk per task (``ProcessMap(2, chunksize=1)``).
        hub_cost: the optimizer's neighbour cost per relation a cell is in
            (:func:`~eree.suppression.coarsening.greedy_coarsen`).
        per_block: per block, publish the suppression package's pattern instead when
            its information loss is lower (module docstring).
        zero_aware: protect against the attacker who uses what the exact zeros disclose
            (module docstring; False: the attacker who does not, as before — weaker,
            for comparison only).

    Returns:
        ``exact`` in the table format with ``status`` (exact | rounded | range |
        suppressed), ``value``, ``base``, ``lower``, ``upper`` — the zero cells exact —
        and counts over the chunks: ``sensitive``, ``violations_check`` (the
        optimizer's check of the final publication), ``blocks_suppression_cheaper``,
        ``rounds``, ``last_resort``, ``tightened``, ``chunks``.
    """
    if threshold < 1:
        raise ValueError("threshold must be >= 1")
    if blocks_per_chunk < 1:
        raise ValueError("blocks_per_chunk must be >= 1")
    jobs = jobs_from_truth(truth)
    blocks = jobs.get_column("block").unique().sort().to_list()
    chunk_of = {b: i // blocks_per_chunk for i, b in enumerate(blocks)}
    jobs = jobs.with_columns(
        pl.col("block").replace_strict(chunk_of, return_dtype=pl.Int64).alias("_chunk")
    )
    parts = [g.drop("_chunk") for _, g in jobs.group_by("_chunk", maintain_order=True)]
    parts.sort(key=lambda g: str(g.get_column("block")[0]))
    fn = partial(
        _coarsen_chunk,
        threshold=threshold,
        rounding=rounding,
        bases=tuple(bases),
        hub_cost=hub_cost,
        per_block=per_block,
        zero_aware=zero_aware,
    )
    run = mapper or SerialMap()
    frames: list[pl.DataFrame] = []
    stats: dict[str, int] = {"chunks": len(parts)}
    items = [(g, None if seed is None else seed + k) for k, g in enumerate(parts)]
    results = run.map(fn, items)
    for frame, st in results:
        frames.append(frame)
        for k, v in st.items():
            stats[k] = stats.get(k, 0) + v
    keyed = pl.concat(frames) if frames else None
    j = exact.drop("status")
    if keyed is not None:
        j = j.join(keyed, on=_KEYS, how="left", nulls_equal=True)
    else:
        j = j.with_columns(
            pl.lit(None, dtype=pl.Utf8).alias("_status"),
            *[pl.lit(None, dtype=pl.Float64).alias(c) for c in ("_value", "_base")],
            *[pl.lit(None, dtype=pl.Float64).alias(c) for c in ("_lower", "_upper")],
        )
    out = j.select(
        *_KEYS,
        pl.col("_status").fill_null("exact").alias("status"),  # a zero cell: exact
        pl.when(pl.col("_status").is_null())
        .then(pl.col("value"))
        .otherwise(pl.col("_value").fill_nan(None))
        .alias("value"),
        pl.col("_base").fill_nan(None).alias("base"),
        pl.col("_lower").fill_nan(None).alias("lower"),
        pl.col("_upper").fill_nan(None).alias("upper"),
    ).sort(*_KEYS, nulls_last=True)
    return out, stats


def rule_audit(
    published: pl.DataFrame | PublishedTables,
    exact: pl.DataFrame,
    *,
    threshold: int = 3,
    protection: float = 1.0,
    zero_aware: bool = True,
) -> dict[str, Any]:
    r"""Audit a WAC publication against the small-cell rule, by the interval LP.

    The reconstruction audit's reader and LP (:func:`.tables.from_frame`,
    :func:`.intervals.interval_audit`: relations derived from the keys, every table of a
    block together) give every cell's interval. The attacker uses what the exact zeros
    disclose (``zero_aware``): a cell not published exactly in a table whose zero cells
    are all published exactly holds at least one job
    (:func:`eree.suppression.coarsening.presence_floor`, kind = the table). A cell with
    1 … ``threshold`` − 1 jobs is a **violation** when its interval does not cover
    :math:`[\max(T - \mathrm{protection},\ 1),\ T + \mathrm{protection}]`: the count
    is protected, the presence that the exact zeros disclose is not (module docstring).
    Counts only.

    Args:
        published: the publication in the table format (any method), or its tables.
        exact: the exact cells (true values; the auditor's).
        threshold, protection: the rule.
        zero_aware: False: the previous audit, for comparison only — an attacker who
            ignores what the zeros disclose, and the rule
            :math:`[T - \min(\mathrm{protection}, T),\ T + \mathrm{protection}]`.

    Returns:
        ``cells``, ``cells_nonzero``, ``sensitive``, ``violations``, ``cells_pinned``,
        ``cells_published`` (not suppressed), ``cells_informative`` (loss < 1),
        ``information_loss`` (mean over every cell, and ``information_loss_nonzero``
        over cells with a job: width of the cell's own interval relative to
        max(T, 1), at most 1; suppressed 1), ``by_status``, ``how`` (LPs),
        ``tables_presence_disclosed`` (tables whose zeros are all published exactly),
        ``zero_aware``.
    """
    from eree.suppression.coarsening import presence_floor
    from eree.suppression.rules import protected_lower

    pub = published if isinstance(published, PublishedTables) else from_frame(published)
    cells = pub.cells.with_row_index("_i")
    for k in _KEYS:
        if k not in cells.columns:
            cells = cells.with_columns(pl.lit(None, dtype=pl.Utf8).alias(k))
    j = cells.select("_i", *_KEYS).join(
        exact.select(*_KEYS, pl.col("value").alias("_t")), on=_KEYS, how="left", nulls_equal=True
    )
    t = j.sort("_i").get_column("_t").to_numpy().astype(np.float64)
    if np.isnan(t).any():
        raise ValueError("the publication has a cell the exact tables do not")
    status = pub.cells.get_column("status").to_numpy().astype(str)
    table = pub.cells.get_column("table").to_numpy().astype(str)
    floor = presence_floor(t, status == "exact", table) if zero_aware else None
    ia = interval_audit(pub, truth=t, floor=floor)
    need_lo = protected_lower(pub.derived_relations(), t, np.full(t.size, protection), floor)
    need_hi = t + protection
    sens = (t >= 1) & (t <= threshold - 1)
    covered = (ia.lower <= need_lo + 1e-6) & (ia.upper >= need_hi - 1e-6)
    disclosed = {str(x) for x in table[floor > 0]} if floor is not None else set()
    own_lo, own_hi = ia.own_lower, ia.own_upper
    width = np.where(np.isfinite(own_hi), own_hi - own_lo, np.inf)
    loss = np.minimum(1.0, width / np.maximum(t, 1.0))
    status = ia.status
    nz = t > 0
    return {
        "cells": int(t.size),
        "cells_nonzero": int(nz.sum()),
        "sensitive": int(sens.sum()),
        "violations": int((sens & ~covered).sum()),
        "cells_pinned": int(ia.pinned.sum()),
        "cells_published": int((status != "suppressed").sum()),
        "cells_informative": int((loss < 1.0).sum()),
        "information_loss": float(loss.mean()) if t.size else 0.0,
        "information_loss_nonzero": float(loss[nz].mean()) if nz.any() else 0.0,
        "by_status": {str(s): int((status == s).sum()) for s in np.unique(status)},
        "how": dict(ia.stats),
        "tables_presence_disclosed": len(disclosed),
        "zero_aware": zero_aware,
    }
