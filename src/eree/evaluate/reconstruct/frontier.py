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
  (:func:`.coarsen_wac.coarsen_jobs`, docs/coarsening.md);
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
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from eree.evaluate.reconstruct.audit import peak_memory_mb, reconstruction_audit
from eree.evaluate.reconstruct.measure import job_truth
from eree.evaluate.reconstruct.records import ReconstructConfig
from eree.evaluate.reconstruct.release import read_release
from eree.evaluate.reconstruct.tables import PublishedTables, from_frame
from eree.evaluate.reconstruct.unitmap import ProcessMap
from eree.evaluate.reconstruct.wac import ATTRIBUTES, WAC_TABLES, wac_layout

__all__ = [
    "WAC_TABLES",
    "exact_tables",
    "frontier_jobs",
    "plot_frontier",
    "shuffled",
    "subset_blocks",
    "suppress_small",
    "wac_layout",
]


def exact_tables(truth: pl.DataFrame, domains: dict[str, Sequence[str]]) -> pl.DataFrame:
    """Every WAC table's cells (zeros included) from true records, status ``exact``.

    ``truth``: ``unit`` (the block), the attributes, ``true``.
    """
    frames = []
    blocks = truth.select(pl.col("unit").alias("block")).unique().sort("block")
    for name, (by, _) in WAC_TABLES.items():
        attrs = [a for a in by if a != "block"]
        grid = blocks
        for a in attrs:
            grid = grid.join(pl.DataFrame({a: list(domains[a])}), how="cross")
        agg = (
            truth.rename({"unit": "block"})
            .group_by(["block", *attrs])
            .agg(pl.col("true").sum().cast(pl.Float64).alias("value"))
        )
        t = grid.join(agg, on=["block", *attrs], how="left").with_columns(
            pl.col("value").fill_null(0.0)
        )
        t = t.with_columns(
            [pl.lit(None, dtype=pl.Utf8).alias(a) for a in ATTRIBUTES if a not in attrs]
        )
        frames.append(
            t.select(
                pl.lit(name).alias("table"),
                "block",
                *ATTRIBUTES,
                pl.lit("exact").alias("status"),
                "value",
            )
        )
    return pl.concat(frames)


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


def suppress_small(truth: pl.DataFrame, exact: pl.DataFrame, threshold: int = 3) -> pl.DataFrame:
    """Cell suppression of the WAC families by the suppression package, per relation.

    Primary: a cell with 1 … ``threshold``−1 jobs (the threshold rule with every job a
    contributor; its protection is one job either way, ``min_protection``). Complements:
    the package's complementary suppression (:func:`eree.suppression.suppress_tables`),
    which protects every primary cell against the LP attacker over **every relation** of
    the linked families — a row of CD inside its CA cell as well as a family inside the
    block's C000 — not only within one table.

    Args:
        truth: ``unit`` (the block), the attributes, ``true`` (jobs per combination).
        exact: the exact cells (:func:`exact_tables` of ``truth``).
        threshold: the threshold rule's limit.

    Returns:
        ``exact`` with ``status`` ``suppressed`` and ``value`` null where withheld.
    """
    from eree.suppression import SuppressionConfig, suppress_tables
    from eree.suppression.rules import PrimaryRules
    from eree.suppression.tables import tabulate

    jobs = (
        truth.filter(pl.col("true") > 0)
        .select(pl.all().repeat_by("true").explode())
        .drop("true")
        .rename({"unit": "block"})
        .with_columns(pl.lit(1.0).alias("jobs"))
    )
    rules = PrimaryRules(threshold=threshold, dominance_k=None, p_percent=None)
    tables = tabulate(jobs, wac_layout(), ["jobs"], top=rules.top_needed)
    res = suppress_tables(
        tables, SuppressionConfig(rules=rules, attributes=("jobs",), run_audit=False)
    )
    names = list(WAC_TABLES)
    keyed = tables.cells.select(
        pl.col("table").replace_strict(dict(enumerate(names)), return_dtype=pl.Utf8),
        pl.col("block").cast(pl.Utf8),
        *[
            pl.when(pl.col(f"{a}_level") == "total").then(None).otherwise(pl.col(a)).alias(a)
            for a in ATTRIBUTES
        ],
    ).with_columns(pl.Series("_s", np.asarray(res.suppressed, dtype=bool)))
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
            (:func:`.coarsen_wac.coarsen_jobs`, the same small-cell rule),
            ``noise_infusion``, ``er_ee`` (default: all but ``coarsened``).
        progress: called with a short message per step.
        workers: processes solving the blocks (:class:`.unitmap.ProcessMap`).
        intervals: run the interval audit (a) too (its cells pinned; else ``None``).

    Returns:
        One row per release: method, ε per cell, table error, interval and reconstruction
        rates, seconds and peak memory.
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
        releases.append(("suppressed", None, lambda: from_frame(suppress_small(truth, exact))))
    if "coarsened" in want:

        def coarse() -> PublishedTables:
            from eree.evaluate.reconstruct.coarsen_wac import coarsen_jobs

            return from_frame(coarsen_jobs(truth, exact)[0])

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
        rows.append(
            {
                "method": method,
                "epsilon_per_cell": eps,
                "mean_abs_error": err["mean_abs_error"],
                "share_withheld": err["share_withheld"],
                "share_cells_exact": err["share_cells_exact"],
                "cells": err["cells"],
                "cells_pinned": res["intervals"]["cells_pinned"] if intervals else None,
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


def frontier_establishments(
    frame: pl.DataFrame,
    *,
    attribute: str = "m3emp",
    budget_factors: Sequence[float] = (0.5, 1.0, 2.0, 4.0),
    seed: int = 1,
    level: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> pl.DataFrame:
    """QCEW-like establishments: exact tables, cell suppression and GEDP, side by side.

    The linked QCEW tables (:func:`eree.suppression.qcew_tables`) are published exactly,
    with ``eree suppress``'s pattern (primary rules, complementary suppression), or by a
    seeded GEDP release of Webb et al.'s Table 7 plan with every μ multiplied by a factor
    (:func:`eree.evaluate.suppression_compare.gedp_cell_estimates`). Measured:

    * cells pinned and narrowed by the interval audit (:func:`.intervals.interval_audit`).
      A GEDP release is read with each cell's published standard error
      (:func:`eree.evaluate.suppression_compare.gedp_cell_release`): every cell is
      ``noisy``, Gaussian, and its band of probability ``level`` is intersected with
      every other through the relations — intervals like any release's, but confidence
      statements, so the share of cells whose interval holds the true value
      (``share_cells_covered``) is reported beside them. ``level`` defaults to
      1 − 0.05/cells (Bonferroni): every band holds at once with probability ≥ 95% under
      the stated laws, so the intervals are simultaneous 95% statements (at 95% per cell
      a few hundred bands miss and, jointly, contradict each other);
    * **establishments disclosed within 10%**: of the establishments alone in a cell of
      the finest table (county × ownership × NAICS-6), those whose value the attacker
      knows within ±10% — its interval lies in [0.9 x, 1.1 x] (``share_lone_within_10pct``,
      every method); for GEDP also the share whose published point estimate is within
      10% (``share_lone_estimate_within_10pct``; the attacker cannot tell which);
    * the mean width of the cells' intervals (finite ones) and the table error: mean
      absolute error per cell (withheld = 0) and the share withheld.
    """
    from eree.evaluate.reconstruct.intervals import interval_audit
    from eree.evaluate.reconstruct.release import from_linked_tables
    from eree.evaluate.suppression_compare import TABLE7_MU, gedp_cell_release
    from eree.suppression import SuppressionConfig, suppress_establishments

    say = progress or (lambda _m: None)
    rows: list[dict[str, Any]] = []
    say("cell suppression")
    t0 = time.perf_counter()
    res = suppress_establishments(
        frame, SuppressionConfig(attributes=(attribute,), run_audit=False)
    )
    t_supp = time.perf_counter() - t0
    tables = res.tables
    x = tables.values(attribute)
    lone = _lone_establishments(tables)

    def within(lo: np.ndarray, hi: np.ndarray) -> float:
        v = x[lone]
        ok = (lo[lone] >= 0.9 * v - 1e-9) & (hi[lone] <= 1.1 * v + 1e-9)
        return float(ok.mean()) if lone.size else 0.0

    for method, mask in (("exact", np.zeros(tables.n_cells, bool)), ("suppressed", res.suppressed)):
        t1 = time.perf_counter()
        ia = interval_audit(from_linked_tables(tables, mask, attribute), truth=x)
        published = np.where(mask, 0.0, x)
        covered = (ia.lower <= x + 1e-6) & (x <= ia.upper + 1e-6)
        rows.append(
            {
                "method": method,
                "budget_factor": None,
                "mean_abs_error": float(np.abs(published - x).mean()),
                "share_withheld": float(mask.mean()),
                "cells": tables.n_cells,
                "cells_pinned": int(ia.pinned.sum()),
                "cells_narrowed": int(ia.narrowed.sum()),
                "lone_establishments": int(lone.size),
                "share_lone_within_10pct": within(ia.lower, ia.upper),
                "share_lone_estimate_within_10pct": within(ia.lower, ia.upper),
                "share_cells_covered": float(covered.mean()),
                "mean_interval_width": float(
                    np.nanmean(np.where(np.isfinite(ia.upper), ia.upper - ia.lower, np.nan))
                ),
                "inconsistent_components": 0,
                "seconds": round(time.perf_counter() - t1 + (t_supp if mask.any() else 0.0), 1),
                "peak_memory_mb": round(peak_memory_mb(), 0),
            }
        )
    for f in budget_factors:
        say(f"GEDP × {f:g}")
        t1 = time.perf_counter()
        mu = {q: (m[0] * f, m[1] * f) for q, m in TABLE7_MU.items()}
        est, sd = gedp_cell_release(frame, tables, [attribute], seed=seed, mu=mu)[attribute]
        pub = from_linked_tables(
            tables, np.zeros(tables.n_cells, bool), attribute, estimate=est, std=sd
        )
        lvl = level if level is not None else 1.0 - 0.05 / tables.n_cells
        ia = interval_audit(pub, level=lvl)
        point = np.where(np.isnan(est), 0.0, est)
        v = x[lone]
        close = np.abs(point[lone] - v) <= 0.1 * v
        covered = (ia.lower <= x + 1e-6) & (x <= ia.upper + 1e-6)
        rows.append(
            {
                "method": "gedp",
                "budget_factor": f,
                "mean_abs_error": float(np.abs(point - x).mean()),
                "share_withheld": 0.0,
                "cells": tables.n_cells,
                "cells_pinned": int(ia.pinned.sum()),
                "cells_narrowed": int(ia.narrowed.sum()),
                "lone_establishments": int(lone.size),
                "share_lone_within_10pct": within(ia.lower, ia.upper),
                "share_lone_estimate_within_10pct": float(close.mean()) if lone.size else 0.0,
                "share_cells_covered": float(covered.mean()),
                "mean_interval_width": float(np.mean(ia.upper - ia.lower)),
                "inconsistent_components": ia.stats.get("inconsistent_components", 0),
                "seconds": round(time.perf_counter() - t1, 1),
                "peak_memory_mb": round(peak_memory_mb(), 0),
            }
        )
    return pl.DataFrame(rows)


def plot_establishment_frontier(
    results: pl.DataFrame, path: str | Path, *, title: str = ""
) -> Path:
    """Establishments disclosed within 10% against table error (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for r in results.to_dicts():
        xv = max(float(r["mean_abs_error"]), 1e-3)
        ax.scatter(xv, r["share_lone_within_10pct"], color="C2")
        if r["method"] == "gedp":
            ax.scatter(xv, r["share_lone_estimate_within_10pct"], color="C3", marker="x")
        name = r["method"] + (
            f" μ×{r['budget_factor']:g}" if r["budget_factor"] is not None else ""
        )
        if float(r["mean_abs_error"]) == 0.0:
            name += " (error 0, drawn at 10⁻³)"
        ax.annotate(
            name,
            (xv, r["share_lone_within_10pct"]),
            fontsize=7,
            xytext=(4, 2),
            textcoords="offset points",
        )
    ax.scatter([], [], color="C2", label="interval within ±10% (the attacker knows it)")
    ax.scatter([], [], color="C3", marker="x", label="GEDP point estimate within ±10%")
    ax.legend(fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("table error: mean |published − true| per cell (employees; withheld = 0)")
    ax.set_ylabel("one-establishment cells known within ±10%")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title or "QCEW-like: risk–accuracy", fontsize=9)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=150)
    plt.close(fig)
    return out
