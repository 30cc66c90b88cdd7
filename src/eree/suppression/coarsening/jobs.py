r"""Coarsening of the WAC job tables (rounding, ranges, suppression last), per block.

The job tables of the reconstruction audit's frontier (:mod:`eree.suppression.wac`: the
eight WAC families by block, zero cells included) are published **coarsened**: each cell exact,
rounded to a base, as a size-class range, or — the last resort — suppressed, chosen by the
coarsening optimizer (:func:`.optimize.greedy_coarsen`) so that the
attacker's LP over all of a block's published tables together leaves every small cell
as uncertain as the rule asks.

**The disclosure rule** (the one the frontier's suppression arm, ``frontier.suppress_small``,
protects, so both are compared at the same audited risk): every job is a contributor, a
cell with 1 … ``threshold`` − 1 jobs (default 1 or 2) is sensitive (the threshold rule),
its protection level is ``protection`` jobs (default one; ``min_protection`` of a
release spec). Zero cells are published exactly by both methods, so a cell not published
exactly is known to hold a job: the attacker — the interval LP over a block's published
tables (:func:`.check.disclosure_check` here; the reconstruction audit's ``rule_audit``
re-audits a publication) — gives such a cell the lower bound 1
(:func:`.check.presence_floor`, per table), and the rule protects the count, not that
presence: the attacker's interval must cover :math:`[\max(T - p, P),\ T + p]`, :math:`P`
the least the cell can hold given which cells are non-zero
(:func:`eree.suppression.rules.protected_lower`; 1 for a cell with a job). One job cannot
be told from two; that a cell holds a job is disclosed (docs/coarsening.md says why, and
what protecting presence too would take). ``zero_aware=False`` builds as the earlier
optimizer did (a withheld cell read as :math:`[0, \infty)`, the lower end
:math:`T - \min(p, T)`), for comparison only.

**Per block.** Only block tables are published, and no relation links two blocks, so
the attacker's LP is a separate program per block: blocks are coarsened in chunks
(:func:`coarsen_jobs`), each chunk's linked tables by themselves, mapped over a
:class:`eree.engine.unitmap.UnitMapper` like the record reconstruction's units. The result does not
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

from eree.engine.unitmap import SerialMap, UnitMapper
from eree.suppression.coarsening.optimize import BASES
from eree.suppression.wac import ATTRIBUTES, cell_keys, jobs_from_truth, wac_layout

__all__ = ["BLOCKS_PER_CHUNK", "WAC_BASES", "coarsen_jobs"]

#: blocks coarsened together by default: the complementary suppression's neighbourhoods
#: span a whole chunk, so small chunks keep its LPs small (on the first PA sample chunks of
#: 100 blocks took 28.9 s of CPU against 49.4 s for chunks of 500; docs/coarsening.md)
BLOCKS_PER_CHUNK = 100

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
    protection: float = 1.0,
    zero_aware: bool = True,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Coarsen the WAC tables of the blocks of ``item[0]`` (one row per job), seed ``item[1]``."""
    jobs, seed = item
    from eree.suppression.coarsening import disclosure_check, greedy_coarsen, presence_floor
    from eree.suppression.rules import PrimaryRules, primary_suppression
    from eree.suppression.secondary import SecondaryConfig
    from eree.suppression.tables import tabulate

    rules = PrimaryRules(
        threshold=threshold, dominance_k=None, p_percent=None, min_protection=protection
    )
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
        "pinned_check": int(chk.pinned.sum()),
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
    blocks_per_chunk: int = BLOCKS_PER_CHUNK,
    mapper: UnitMapper | None = None,
    hub_cost: bool = True,
    per_block: bool = True,
    protection: float = 1.0,
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
        protection: the rule's protection level p in jobs: a sensitive cell's interval
            must cover [max(T − p, P), T + p] (module docstring; the threshold rule's
            10 % of one job is below any p ≥ 0.1).
        zero_aware: protect against the attacker who uses what the exact zeros disclose
            (module docstring; False: the attacker who does not, as before — weaker,
            for comparison only).

    Returns:
        ``exact`` in the table format with ``status`` (exact | rounded | range |
        suppressed), ``value``, ``base``, ``lower``, ``upper`` — the zero cells exact —
        and counts over the chunks: ``sensitive``, ``violations_check`` and
        ``pinned_check`` (the optimizer's exact check of the final publication: sensitive
        cells narrowed below the rule; cells pinned though not published exactly),
        ``blocks_suppression_cheaper``,
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
        protection=protection,
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
