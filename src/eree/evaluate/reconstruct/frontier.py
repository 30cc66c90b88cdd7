r"""Side by side: the same job data protected by each method, attacked, against table error.

For LODES-like job tables (the eight WAC families by block: C000, CA, CE, CNS, CR, CT,
CD = age × education, CS) each method publishes the same tables:

* **baseline** — exact tables of the same jobs with their attributes shuffled across the
  blocks (each block's size and the area's composition kept): the rates an attacker gets
  without learning anything about who works where;
* **exact** — the true counts;
* **suppressed** — a threshold rule as agencies run it on small cells: a cell with 1 or
  2 jobs is withheld (primary), and complements are chosen by the suppression package
  (:func:`eree.suppression.suppress_tables`) over every relation of the linked families
  (C000 = each one-way family; each CA cell = its row of CD), so that the LP attacker
  cannot narrow a withheld cell below ±1 job (:func:`suppress_small`);
* **coarsened** (only when asked for) — the same rule as ``suppressed``, met by
  rounding, size-class ranges and suppression as the last resort, per block
  (:func:`eree.suppression.coarsening.jobs.coarsen_jobs`, docs/coarsening.md);
* **noise infusion** — ``eree protect`` with ``noise_infusion`` on every table (the
  SDL baseline, Haney et al. §5.1; no formal guarantee);
* **ER-EE** at ε per cell e (0.5, 1, 2, 4 by default) — ``eree protect`` of the WAC
  product (Log-Laplace, weak ER-EE at α = 0.1, each family ε = d·e) with its
  post-processing (consistent, non-negative, whole numbers), as eree publishes it.

Every release is seeded (NOT FOR PUBLICATION: an experiment) and read back through the
same reader as any release (:func:`.release.read_release`). The attacker
(:func:`.audit.reconstruction_audit`) gets each release's tables, never the truth; the
truth only scores it. **Table error** is the mean absolute error per cell over every
cell of every table, in jobs (a withheld cell counts as 0: what a user of the file reads),
beside the share of cells withheld.

For QCEW-like establishments (:func:`frontier_establishments`) the arms are exact tables,
cell suppression, coarsening (deterministic and random rounding) and GEDP at several
budgets, scored on the same cells by the same information loss (:func:`information_loss`)
and the same interval audit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from eree.engine.unitmap import ProcessMap, UnitMapper
from eree.evaluate.reconstruct.audit import peak_memory_mb, reconstruction_audit
from eree.evaluate.reconstruct.measure import job_truth
from eree.evaluate.reconstruct.records import ReconstructConfig
from eree.evaluate.reconstruct.release import read_release
from eree.evaluate.reconstruct.tables import PublishedTables, from_frame
from eree.suppression.wac import (
    ATTRIBUTES,
    WAC_TABLES,
    cell_keys,
    exact_tables,
    jobs_from_truth,
    wac_layout,
)

__all__ = [
    "COARSENINGS",
    "USEFUL_PRECISION",
    "WAC_TABLES",
    "exact_tables",
    "frontier_establishments",
    "frontier_jobs",
    "information_loss",
    "plot_establishment_frontier",
    "plot_frontier",
    "shuffled",
    "subset_blocks",
    "suppress_small",
    "wac_layout",
]


def shuffled(truth: pl.DataFrame, seed: int) -> pl.DataFrame:
    """The same jobs with their attributes permuted across blocks (block totals kept).

    Exact tables of these are the **baseline**: what an attacker knows who has each
    block's size and the area's composition but nothing about who works where.
    """
    jobs = truth.select(pl.all().repeat_by("true").explode()).drop("true")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(jobs.height)
    attrs = [c for c in jobs.columns if c != "unit"]
    moved = jobs.select("unit").with_columns(jobs.select(attrs)[perm])
    return moved.group_by(["unit", *attrs]).agg(pl.len().cast(pl.Int64).alias("true"))


def suppress_small(
    truth: pl.DataFrame,
    exact: pl.DataFrame,
    threshold: int = 3,
    *,
    zero_aware: bool = True,
    workers: int | None = None,
    blocks_per_chunk: int | None = None,
    mapper: UnitMapper | None = None,
) -> pl.DataFrame:
    """Cell suppression of the WAC families by the suppression package, per relation.

    Primary: a cell with 1 … ``threshold``−1 jobs (the threshold rule with every job a
    contributor; its protection is one job either way, ``min_protection``). Complements:
    the package's complementary suppression (:func:`eree.suppression.suppress_tables`),
    which protects every primary cell against the LP attacker over **every relation** of
    the linked families — a row of CD inside its CA cell as well as a family inside the
    block's C000 — not only within one table.

    The zero cells are published exactly, so a withheld cell is known to hold a job. The
    complements protect against the attacker who uses that (``zero_aware``: the
    package's ``SecondaryConfig.floor`` from
    :func:`eree.suppression.coarsening.presence_floor`, the knowledge the WAC
    coarsening's check and :func:`.coarsen_wac.rule_audit` use), under the rule that
    protects the count and not the presence the zeros disclose: a withheld cell's
    interval must cover ``[max(T − 1, P), T + 1]``, ``P`` the least it can hold given
    which cells are non-zero (:func:`eree.suppression.rules.protected_lower`).

    Args:
        truth: ``unit`` (the block), the attributes, ``true`` (jobs per combination).
        exact: the exact cells (:func:`exact_tables` of ``truth``).
        threshold: the threshold rule's limit.
        zero_aware: False: complements against an attacker who ignores what the zeros
            disclose (the previous arm, weaker; for comparison only).
        workers: processes of the complementary suppression (None: the package's
            default); with ``blocks_per_chunk``, one per chunk.
        blocks_per_chunk: suppress the blocks in chunks of this many, each chunk's
            tables by themselves (no relation links two blocks; a block's pattern may
            differ between equally costly ones with its chunk). None: all together.
        mapper: where the chunks run (a :class:`.unitmap.UnitMapper`; default this
            process; ``ProcessMap(2, chunksize=1)`` for both cores).

    Returns:
        ``exact`` with ``status`` ``suppressed`` and ``value`` null where withheld.
    """
    from functools import partial

    from eree.engine.unitmap import SerialMap

    jobs = jobs_from_truth(truth)
    if blocks_per_chunk is None:
        parts = [jobs]
    else:
        if blocks_per_chunk < 1:
            raise ValueError("blocks_per_chunk must be >= 1")
        blocks = jobs.get_column("block").unique().sort().to_list()
        chunk_of = {b: i // blocks_per_chunk for i, b in enumerate(blocks)}
        jobs = jobs.with_columns(
            pl.col("block").replace_strict(chunk_of, return_dtype=pl.Int64).alias("_chunk")
        )
        parts = [g.drop("_chunk") for _, g in jobs.group_by("_chunk", maintain_order=True)]
        parts = parts or [jobs.drop("_chunk")]
    fn = partial(
        _suppress_chunk,
        threshold=threshold,
        zero_aware=zero_aware,
        workers=workers if blocks_per_chunk is None else 1,
    )
    frames = list((mapper or SerialMap()).map(fn, parts))
    keyed = pl.concat(frames)
    keys = ["table", "block", *ATTRIBUTES]
    j = (
        exact.drop("status")
        .join(keyed, on=keys, how="left", nulls_equal=True)
        .with_columns(pl.col("_s").fill_null(False))  # a zero cell: published
    )
    v = pl.col("value")
    return j.select(
        "table",
        "block",
        *ATTRIBUTES,
        pl.when(pl.col("_s")).then(pl.lit("suppressed")).otherwise(pl.lit("exact")).alias("status"),
        pl.when(pl.col("_s")).then(None).otherwise(v).alias("value"),
    ).sort("table", "block", *ATTRIBUTES, nulls_last=True)


def _suppress_chunk(
    jobs: pl.DataFrame, *, threshold: int, zero_aware: bool, workers: int | None
) -> pl.DataFrame:
    """:func:`suppress_small`'s pattern of the blocks of ``jobs``: cell keys and ``_s``."""
    from eree.suppression import SuppressionConfig, suppress_tables
    from eree.suppression.coarsening import presence_floor
    from eree.suppression.rules import PrimaryRules
    from eree.suppression.secondary import SecondaryConfig
    from eree.suppression.tables import tabulate

    rules = PrimaryRules(threshold=threshold, dominance_k=None, p_percent=None)
    tables = tabulate(jobs, wac_layout(), ["jobs"], top=rules.top_needed)
    t = tables.values("jobs")
    # no zero cell is in these tables (each is published exactly): a withheld one holds a job
    kind = tables.cells.get_column("table").to_numpy()
    floor = presence_floor(t, t > 0, kind) if zero_aware else None
    sec = SecondaryConfig(
        floor=float(np.max(floor, initial=0.0)) if floor is not None else 0.0, workers=workers
    )
    res = suppress_tables(
        tables,
        SuppressionConfig(rules=rules, attributes=("jobs",), run_audit=False, secondary=sec),
    )
    return cell_keys(tables).with_columns(pl.Series("_s", np.asarray(res.suppressed, dtype=bool)))


def subset_blocks(data: Path, prefixes: Sequence[str] | None, out: Path) -> Path:
    """The job tables of blocks whose code starts with a prefix (none: the folder itself)."""
    if not prefixes:
        return data
    out.mkdir(parents=True, exist_ok=True)
    keep = pl.any_horizontal([pl.col("block").str.starts_with(p) for p in prefixes])
    wp = pl.read_parquet(data / "workplace.parquet").filter(keep)
    job = pl.read_parquet(data / "job.parquet").join(wp.select("workplace_id"), on="workplace_id")
    wk = pl.read_parquet(data / "worker.parquet").join(job.select("worker_id"), on="worker_id")
    wp.write_parquet(out / "workplace.parquet")
    wk.write_parquet(out / "worker.parquet")
    job.write_parquet(out / "job.parquet")
    return out


def _spec(
    data: Path, queries: list[tuple[str, tuple[str, ...], str, float]], definition: str, post: bool
) -> str:
    lines = [
        'name = "reconstruction-frontier"',
        "[data]",
        'kind = "eree"',
        f'workplace = "{(data / "workplace.parquet").resolve()}"',
        f'worker = "{(data / "worker.parquet").resolve()}"',
        f'job = "{(data / "job.parquet").resolve()}"',
        "[privacy]",
        f'definition = "{definition}"',
    ]
    if definition != "none":
        lines.append("alpha = 0.1")
    for name, by, mech, eps in queries:
        lines += [
            "[[query]]",
            f'name = "{name}"',
            f"by = {list(by)!r}".replace("'", '"'),
            f'mechanism = "{mech}"',
        ]
        if mech != "noise_infusion":
            lines.append(f"epsilon = {eps!r}")
    if post:
        lines += ["[postprocess]", "consistent = true", "nonnegative = true", "integer = true"]
    return "\n".join(lines) + "\n"


def _protect(spec_text: str, folder: Path, seed: int) -> Path:
    from eree.mechanisms.noise import SeededNoise
    from eree.release.protect import protect
    from eree.release.spec import load_spec

    folder.mkdir(parents=True, exist_ok=True)
    spec = folder / "spec.toml"
    spec.write_text(spec_text, encoding="utf-8")
    out = folder / "release"
    protect(load_spec(spec), out, SeededNoise(seed))
    return out


def table_error(published: PublishedTables, exact: pl.DataFrame) -> dict[str, float]:
    """Mean absolute error per cell (withheld = 0), share withheld, over the exact cells."""
    keys = ["table", "block", *ATTRIBUTES]
    pub = published.cells.select(
        [pl.col(k) for k in keys if k in published.cells.columns]
        + [pl.col("value").alias("_pub"), pl.col("status")]
    )
    for k in keys:
        if k not in pub.columns:
            pub = pub.with_columns(pl.lit(None, dtype=pl.Utf8).alias(k))
    j = exact.select([*keys, "value"]).join(pub, on=keys, how="left", nulls_equal=True)
    j = j.with_columns(pl.col("_pub").fill_null(0.0))
    withheld = j.get_column("status").fill_null("absent") == "suppressed"
    err = (j.get_column("_pub") - j.get_column("value")).abs()
    return {
        "cells": j.height,
        "mean_abs_error": float(err.mean()),  # type: ignore[arg-type]
        "share_withheld": float(withheld.mean()),  # type: ignore[arg-type]
        "share_cells_exact": float((err < 0.5).mean()),  # type: ignore[arg-type]
    }


def frontier_jobs(
    data: str | Path,
    workdir: str | Path,
    *,
    epsilons: Sequence[float] = (0.5, 1.0, 2.0, 4.0),
    prefixes: Sequence[str] | None = None,
    seed: int = 1,
    cfg: ReconstructConfig | None = None,
    methods: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
    workers: int = 1,
    intervals: bool = True,
) -> pl.DataFrame:
    """Protect the job tables with each method, attack each release, measure (aggregate).

    Args:
        data: job tables (``workplace``, ``worker``, ``job`` parquet; ``eree synth lodes``).
        workdir: where the seeded releases are written (not for publication).
        epsilons: ER-EE ε per cell.
        prefixes: only blocks whose code starts with one of these (e.g. county FIPS codes).
        seed: the releases' seed.
        cfg: the attacker's settings (default: by block).
        methods: a subset of ``baseline``, ``exact``, ``suppressed``, ``coarsened``
            (:func:`eree.suppression.coarsening.jobs.coarsen_jobs`, the same small-cell rule),
            ``noise_infusion``, ``er_ee`` (default: all but ``coarsened``).
        progress: called with a short message per step.
        workers: processes solving the blocks (:class:`eree.engine.unitmap.ProcessMap`).
        intervals: run the interval audit (a) too (its cells pinned; else ``None``).

    Returns:
        One row per release: method, ε per cell, table error, interval and reconstruction
        rates, seconds and peak memory; for ``exact``, ``suppressed`` and ``coarsened``
        also the small-cell rule's audit (:func:`.coarsen_wac.rule_audit`, the attacker
        who uses what the exact zeros disclose): ``rule_violations``,
        ``rule_cells_pinned`` (None for the noisy releases). ``cells_pinned`` is the
        interval audit's, which reads a withheld cell as [0, ∞).
    """
    say = progress or (lambda _m: None)
    cfg = cfg or ReconstructConfig(unit="block")
    work = Path(workdir)
    src = subset_blocks(Path(data), prefixes, work / "data")
    truth = job_truth(src, "block", ATTRIBUTES)
    from eree.data.schema import WORKER_DOMAINS

    domains: dict[str, Sequence[str]] = {
        a: WORKER_DOMAINS[a] for a in ATTRIBUTES if a in WORKER_DOMAINS
    }
    sectors = pl.read_parquet(src / "workplace.parquet", columns=["naics_sector"])
    domains["naics_sector"] = sorted(sectors.get_column("naics_sector").unique().to_list())
    exact = exact_tables(truth, domains)
    want = set(methods or ("baseline", "exact", "suppressed", "noise_infusion", "er_ee"))
    releases: list[tuple[str, float | None, Callable[[], PublishedTables]]] = []
    if "baseline" in want:
        releases.append(
            ("baseline", None, lambda: from_frame(exact_tables(shuffled(truth, seed), domains)))
        )
    if "exact" in want:
        releases.append(("exact", None, lambda: from_frame(exact)))
    if "suppressed" in want:
        # in chunks of 100 blocks (independent), on the workers: measured fastest
        chunks = ProcessMap(workers, chunksize=1) if workers > 1 else None
        releases.append(
            (
                "suppressed",
                None,
                lambda: from_frame(
                    suppress_small(truth, exact, blocks_per_chunk=100, mapper=chunks)
                ),
            )
        )
    if "coarsened" in want:

        def coarse() -> PublishedTables:
            from eree.suppression.coarsening.jobs import coarsen_jobs

            m = ProcessMap(workers, chunksize=1) if workers > 1 else None
            return from_frame(coarsen_jobs(truth, exact, blocks_per_chunk=100, mapper=m)[0])

        releases.append(("coarsened", None, coarse))
    if "noise_infusion" in want:
        q = [(n, by, "noise_infusion", 0.0) for n, (by, _) in WAC_TABLES.items()]

        def ni() -> PublishedTables:
            rel = _protect(_spec(src, q, "none", False), work / "noise_infusion", seed)
            return read_release(rel)[0]

        releases.append(("noise_infusion", None, ni))
    if "er_ee" in want:
        for e in epsilons:

            def er(e: float = e) -> PublishedTables:
                qs = [(n, by, "log_laplace", e * d) for n, (by, d) in WAC_TABLES.items()]
                rel = _protect(_spec(src, qs, "eree-weak", True), work / f"er_ee_{e:g}", seed)
                return read_release(rel)[0]

            releases.append(("er_ee", e, er))
    rows: list[dict[str, Any]] = []
    for method, eps, make in releases:
        say(f"{method}" + (f" ε={eps:g}" if eps is not None else ""))
        t0 = time.perf_counter()
        pub = make()
        t_release = time.perf_counter() - t0
        res = reconstruction_audit(
            pub,
            cfg,
            truth=truth,
            intervals=intervals,
            mapper=ProcessMap(workers) if workers > 1 else None,
        )
        err = table_error(pub, exact)
        m = res["records"]["against_truth"]
        rule: dict[str, Any] = {}
        if method in ("exact", "suppressed", "coarsened"):
            from eree.evaluate.reconstruct.coarsen_wac import rule_audit

            rule = rule_audit(pub, exact)  # the small-cell rule, zero-aware attacker
        rows.append(
            {
                "method": method,
                "epsilon_per_cell": eps,
                "mean_abs_error": err["mean_abs_error"],
                "share_withheld": err["share_withheld"],
                "share_cells_exact": err["share_cells_exact"],
                "cells": err["cells"],
                "cells_pinned": res["intervals"]["cells_pinned"] if intervals else None,
                "rule_violations": rule.get("violations"),
                "rule_cells_pinned": rule.get("cells_pinned"),
                "records": m["records"],
                "share_rebuilt_exactly": m["share_rebuilt_exactly"],
                "share_units_rebuilt_exactly": m["share_units_rebuilt_exactly"],
                "unique_records": m["unique_records"],
                "share_uniques_inferred": m["share_uniques_inferred"],
                "share_rebuilt_certain": m["share_rebuilt_certain"],
                "share_certain_correct": m["share_certain_correct"],
                "units": m["units"],
                "units_skipped": m["units_skipped_too_large"],
                "units_failed": m["units_failed"],
                "seconds_release": round(t_release, 1),
                "seconds_attack": res["seconds"],
                "peak_memory_mb": round(peak_memory_mb(), 0),
            }
        )
    return pl.DataFrame(rows)


def plot_frontier(results: pl.DataFrame, path: str | Path, *, title: str = "") -> Path:
    """Reconstruction rate against table error, one point per release (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for metric, marker, label in (
        ("share_rebuilt_exactly", "o", "records rebuilt exactly"),
        ("share_uniques_inferred", "s", "unique records inferred"),
    ):
        for r in results.to_dicts():
            x = max(float(r["mean_abs_error"]), 1e-3)
            ax.scatter(x, r[metric], marker=marker, color="C0" if marker == "o" else "C1")
            name = r["method"] + (
                f" ε={r['epsilon_per_cell']:g}" if r["epsilon_per_cell"] is not None else ""
            )
            if float(r["mean_abs_error"]) == 0.0:
                name += " (error 0, drawn at 10⁻³)"
            if marker == "o":
                ax.annotate(
                    name, (x, r[metric]), fontsize=7, xytext=(4, 2), textcoords="offset points"
                )
        ax.scatter([], [], marker=marker, color="C0" if marker == "o" else "C1", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("table error: mean |published − true| per cell (jobs; withheld = 0)")
    ax.set_ylabel("share")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=8)
    ax.set_title(title or "risk–accuracy frontier", fontsize=9)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=150)
    plt.close(fig)
    return out


def _lone_establishments(tables: Any) -> np.ndarray:
    """Cells of the finest tables (every dimension at its finest level) with one establishment."""
    finest = (tables.levels == np.array([len(d.levels) - 1 for d in tables.layout.dimensions])).all(
        axis=1
    )
    return np.flatnonzero(finest & (tables.counts() == 1))


#: the coarsening arms of the establishment frontier (rounding of the optimizer's ladder)
COARSENINGS = ("deterministic", "random")

#: a published cell is *useful* when the value read is within this share of the true value
USEFUL_PRECISION = 0.10


def information_loss(read: np.ndarray, published: np.ndarray, x: np.ndarray) -> dict[str, Any]:
    r"""Information loss of one release, the same measure for every method (docs).

    ``read`` is the value a user reads from each published cell: the value of an exact,
    rounded or noisy cell, the midpoint of a range; a withheld cell has none.

    * ``information_loss``: the mean over **all** cells of the relative error
      :math:`\min(1, |r_c - T_c| / \max(T_c, 1))`, a withheld cell 1 (no information);
    * ``share_useful``: cells published with :math:`|r_c - T_c| \le 0.1 \max(T_c, 1)`;
    * ``mean_abs_error``: mean :math:`|r_c - T_c|` over all cells in the data's unit, a
      withheld cell read as 0 (the table error of the jobs frontier);
    * ``mean_abs_error_published``: the same over the published cells only.
    """
    pub = np.asarray(published, dtype=bool)
    r = np.where(pub, read, 0.0)
    err = np.abs(r - x)
    rel = np.where(pub, np.minimum(1.0, err / np.maximum(x, 1.0)), 1.0)
    useful = pub & (err <= USEFUL_PRECISION * np.maximum(x, 1.0) + 1e-9)
    return {
        "cells": int(x.size),
        "cells_published": int(pub.sum()),
        "share_withheld": float(1.0 - pub.mean()) if x.size else 0.0,
        "information_loss": float(rel.mean()),
        "share_useful": float(useful.mean()),
        "mean_abs_error": float(err.mean()),
        "mean_abs_error_published": float(err[pub].mean()) if pub.any() else 0.0,
    }


def _coarsened_reading(publication: Any) -> tuple[np.ndarray, np.ndarray]:
    """What a user reads from a coarsened publication: (value, published).

    An exact cell's value; a rounded (deterministic or random) or range cell's published
    interval's midpoint (its interval: :meth:`Publication.own_bounds`, whole numbers
    inside ``value ± base/2``, ``value ± (base − 1)`` or the range, never below 0).
    """
    st = publication.status
    lo, hi = publication.own_bounds()
    read = np.where(st == "exact", publication.value, (lo + hi) / 2.0)
    published = st != "suppressed"
    return np.where(published, read, 0.0), published


def frontier_establishments(
    frame: pl.DataFrame,
    *,
    attribute: str = "m3emp",
    budget_factors: Sequence[float] = (0.5, 1.0, 2.0, 4.0),
    coarsenings: Sequence[str] = COARSENINGS,
    seed: int = 1,
    level: float | None = None,
    progress: Callable[[str], None] | None = None,
    releases: str | Path | None = None,
) -> pl.DataFrame:
    r"""QCEW-like establishments: exact, suppression, coarsening and GEDP on the same cells.

    The linked QCEW tables (:func:`eree.suppression.qcew_tables`) of one state are
    published exactly, with ``eree suppress``'s pattern (its primary rules — threshold 3,
    (1, 80 %) dominance, p 10 % — and complementary suppression), coarsened by the
    optimizer of ``eree coarsen`` (:func:`eree.suppression.coarsening.greedy_coarsen`)
    under the **same** primary rules with deterministic and with unbiased random
    rounding, or by a seeded GEDP release of Webb et al.'s Table 7 plan with every μ
    multiplied by a factor (:func:`eree.evaluate.suppression_compare.gedp_cell_release`).
    Every release is read by the reconstruction audit's reader and attacked by the same
    interval LP over all tables together (:func:`.intervals.interval_audit`; the
    attacker knows the values are whole numbers when they are). Measured per release:

    * **cells published** and **information loss** (:func:`information_loss`: the value a
      user reads against the true value — relative error capped at 1, a withheld cell 1
      — the share of cells published within ±10 %, and the absolute error in employees);
    * **audited risk**: ``cells_known_exactly`` (the attacker's interval is a point:
      published exactly or pinned), ``cells_pinned`` (a point not published exactly),
      ``cells_narrowed`` (strictly inside the cell's own publication), and
      ``rule_violations``: sensitive cells (the primary rules) whose interval does not
      hold the rule's protection interval :math:`[T - \min(u, T), T + u]` — narrowed
      below the p % rule (or the dominance / threshold rule's protection);
    * **establishments disclosed within 10 %**: of the establishments alone in a cell of
      the finest table (county × ownership × NAICS-6), those whose interval lies in
      [0.9 x, 1.1 x] (``share_lone_within_10pct``), and those whose read value is within
      ±10 % (``share_lone_estimate_within_10pct``; for GEDP the attacker cannot tell which).

    A GEDP release is read with each cell's published standard error: every cell is
    ``noisy``, Gaussian, and its band of probability ``level`` is intersected with every
    other through the relations — confidence statements, so ``share_cells_covered`` (the
    share of cells whose interval holds the true value) is reported beside them.
    ``level`` defaults to 1 − 0.05/cells (Bonferroni: simultaneous 95 % bands). Its
    ``stated_mean_abs_error`` is :math:`\sqrt{2/\pi}` × the mean published std over the
    published cells: the mean absolute error its stated Gaussian laws imply, to compare
    with ``mean_abs_error_published``.

    With ``releases`` (a folder) each protected release — ``suppressed``,
    ``coarsened_<rounding>``, ``gedp_x<factor>`` — is written there as ``<name>.csv`` in
    the reconstruction audit's table format (its published cells only: the values, bases,
    ranges, GEDP estimates and published standard errors, the public establishment
    counts). Seeded experiments: NOT FOR PUBLICATION.
    """
    from eree.evaluate.reconstruct.intervals import IntervalResult, interval_audit
    from eree.evaluate.reconstruct.release import from_linked_tables
    from eree.evaluate.reconstruct.tables import from_frame
    from eree.evaluate.suppression_compare import TABLE7_MU, gedp_cell_release
    from eree.suppression import SuppressionConfig, suppress_establishments
    from eree.suppression.coarsening import greedy_coarsen
    from eree.suppression.linked import tolerance

    for r in coarsenings:
        if r not in COARSENINGS:
            raise ValueError(f"coarsening {r!r}: give deterministic or random")
    say = progress or (lambda _m: None)
    rows: list[dict[str, Any]] = []
    folder = Path(releases) if releases is not None else None
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)

    def keep(name: str, published: PublishedTables) -> None:
        if folder is not None:
            published.cells.write_csv(folder / f"{name}.csv")

    say("cell suppression")
    t0 = time.perf_counter()
    res = suppress_establishments(
        frame, SuppressionConfig(attributes=(attribute,), run_audit=False)
    )
    t_supp = time.perf_counter() - t0
    tables = res.tables
    x = tables.values(attribute).astype(np.float64)
    whole = bool(np.all(x == np.round(x)))
    lone = _lone_establishments(tables)
    sensitive = np.asarray(res.primary.primary, dtype=bool)
    u = np.asarray(res.primary.protection[attribute], dtype=np.float64)

    def within(lo: np.ndarray, hi: np.ndarray) -> float:
        v = x[lone]
        ok = (lo[lone] >= 0.9 * v - 1e-9) & (hi[lone] <= 1.1 * v + 1e-9)
        return float(ok.mean()) if lone.size else 0.0

    def row(
        method: str,
        factor: float | None,
        read: np.ndarray,
        published: np.ndarray,
        ia: IntervalResult,
        seconds: float,
        **extra: Any,
    ) -> None:
        lo, hi = ia.lower, ia.upper
        tol = tolerance(hi)
        covers = (lo <= x - np.minimum(u, x) + 1e-9) & (hi >= x + u - 1e-9)
        v = x[lone]
        close = published[lone] & (np.abs(read[lone] - v) <= 0.1 * v + 1e-9)
        covered = (lo <= x + 1e-6) & (x <= hi + 1e-6)
        width = np.where(np.isfinite(hi), hi - lo, np.nan)
        mean_width = float(np.nanmean(width)) if np.isfinite(width).any() else None
        rows.append(
            {
                "method": method,
                "budget_factor": factor,
                **information_loss(read, published, x),
                "sensitive_cells": int(sensitive.sum()),
                "rule_violations": int((sensitive & ~covers).sum()),
                "cells_known_exactly": int((hi - lo <= tol).sum()),
                "cells_pinned": int(ia.pinned.sum()),
                "cells_narrowed": int(ia.narrowed.sum()),
                "lone_establishments": int(lone.size),
                "share_lone_within_10pct": within(lo, hi),
                "share_lone_estimate_within_10pct": float(close.mean()) if lone.size else 0.0,
                "share_cells_covered": float(covered.mean()),
                "mean_interval_width": mean_width,
                "inconsistent_components": ia.stats.get("inconsistent_components", 0),
                "stated_mean_abs_error": extra.get("stated"),
                "optimizer_violations": extra.get("optimizer_violations"),
                "seconds": round(seconds, 1),
                "peak_memory_mb": round(peak_memory_mb(), 0),
            }
        )

    for method, mask in (("exact", np.zeros(tables.n_cells, bool)), ("suppressed", res.suppressed)):
        t1 = time.perf_counter()
        pt = from_linked_tables(tables, mask, attribute, integer=whole)
        if mask.any():
            keep(method, pt)
        ia = interval_audit(pt, truth=x)
        took = time.perf_counter() - t1 + (t_supp if mask.any() else 0.0)
        row(method, None, x, ~np.asarray(mask, dtype=bool), ia, took)
    for rounding in coarsenings:
        say(f"coarsening ({rounding} rounding)")
        t1 = time.perf_counter()
        co = greedy_coarsen(tables, attribute, res.primary, rounding=rounding, seed=seed)
        pub = co.publication
        cells = from_frame(
            pub.to_frame(tables, attribute).drop("attribute"),
            relations=tables.relations,
            integer=pub.integer,
        )
        keep(f"coarsened_{rounding}", cells)
        ia = interval_audit(cells, truth=x)
        read, published = _coarsened_reading(pub)
        row(
            f"coarsened_{rounding}",
            None,
            read,
            published,
            ia,
            time.perf_counter() - t1,
            optimizer_violations=int(co.check.violated.sum()),
        )
    for f in budget_factors:
        say(f"GEDP × {f:g}")
        t1 = time.perf_counter()
        mu = {q: (m[0] * f, m[1] * f) for q, m in TABLE7_MU.items()}
        est, sd = gedp_cell_release(frame, tables, [attribute], seed=seed, mu=mu)[attribute]
        pt = from_linked_tables(
            tables, np.zeros(tables.n_cells, bool), attribute, integer=whole, estimate=est, std=sd
        )
        keep(f"gedp_x{f:g}", pt)
        lvl = level if level is not None else 1.0 - 0.05 / tables.n_cells
        ia = interval_audit(pt, level=lvl)
        published = ~np.isnan(est) & (sd > 0)
        stated = float(np.sqrt(2.0 / np.pi) * sd[published].mean()) if published.any() else 0.0
        row(
            "gedp",
            f,
            np.nan_to_num(est),
            published,
            ia,
            time.perf_counter() - t1,
            stated=stated,
        )
    return pl.DataFrame(rows)


def plot_establishment_frontier(
    results: pl.DataFrame, path: str | Path, *, title: str = ""
) -> Path:
    """Audited risk against information loss, one point per release (PNG, two panels).

    Left: the share of sensitive cells narrowed below the rule's protection; right: the
    one-establishment cells the attacker knows within ±10 % (and, for GEDP, whose point
    estimate is within ±10 %). x: information loss (:func:`information_loss`).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10.0, 4.4))
    colours = {"exact": "C0", "suppressed": "C1", "gedp": "C3"}
    short = {"coarsened_deterministic": "coarsened (det.)", "coarsened_random": "coarsened (rand.)"}
    for r in results.to_dicts():
        xv = float(r["information_loss"])
        c = colours.get(r["method"], "C2")
        name = short.get(r["method"], r["method"]) + (
            f" μ×{r['budget_factor']:g}" if r["budget_factor"] is not None else ""
        )
        risk = r["rule_violations"] / max(r["sensitive_cells"], 1)
        for ax, yv in ((axes[0], risk), (axes[1], r["share_lone_within_10pct"])):
            ax.scatter(xv, yv, color=c)
            ax.annotate(
                name, (xv, yv), fontsize=6, xytext=(2, 4), textcoords="offset points", rotation=55
            )
        if r["method"] == "gedp":
            axes[1].scatter(xv, r["share_lone_estimate_within_10pct"], color=c, marker="x")
    axes[1].scatter([], [], color="k", label="interval within ±10% (the attacker knows it)")
    axes[1].scatter([], [], color="k", marker="x", label="GEDP point estimate within ±10%")
    axes[1].legend(fontsize=7)
    axes[0].set_ylabel("sensitive cells narrowed below the rule (share)")
    axes[1].set_ylabel("one-establishment cells known within ±10%")
    top = max(float(r["information_loss"]) for r in results.to_dicts())
    for ax in axes:
        ax.set_xlabel("information loss (mean relative error read; withheld = 1)", fontsize=8)
        ax.set_ylim(-0.02, 1.15)
        ax.set_xlim(-0.02, max(0.6, top + 0.1))
    fig.suptitle(title or "QCEW-like: audited risk against information loss", fontsize=9)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=150)
    plt.close(fig)
    return out
