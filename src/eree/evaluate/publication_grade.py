"""Evaluation of publication-grade ER-EE tables: raw vs post-processed, per marginal.

Library code (the ``eree evaluate`` wiring is separate). For each workload shape and
mechanism, seeded releases of a synthetic LODES-like dataset through the release path
(:func:`eree.release.counts.count_tables`, then
:func:`eree.release.publication.publication_tables` with ``consistent``, ``nonnegative``,
``integer``), the mean L1 error per cell of every marginal, raw (the mechanism's published
estimate) and post-processed, against the synthetic truth, with Monte Carlo standard
errors over the seeds; and the public variance model's calibration (predicted against
realised noise variance by size class).

Evaluation code sees true values of synthetic data: that is its job. Nothing here is on
the release path.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from eree.data.job_tables import load_job_tables
from eree.engine.polars.engine import PolarsEngine
from eree.errors import SpecError
from eree.mechanisms.noise import SeededNoise
from eree.postprocess.hierarchy import cell_parents, refines
from eree.release.build import build, split_by
from eree.release.counts import count_tables
from eree.release.publication import establishments_per_cell, smooth_model, variance_proxy
from eree.release.spec import Plan, parse_spec

__all__ = [
    "CALIBRATED",
    "MECHANISMS",
    "WORKLOADS",
    "MarginalResult",
    "calibration",
    "calibration_markdown",
    "check_names",
    "evaluate",
    "evaluate_gedp",
    "results_markdown",
    "workload_plan",
    "write_outputs",
]

#: the mechanisms compared (all three ER-EE mechanisms of Haney et al.)
MECHANISMS = ("smooth_laplace", "smooth_gamma", "log_laplace")

#: workload shapes: name → [(query name, by, ε)]; ε is the query's whole budget
WORKLOADS: dict[str, list[tuple[str, list[str], float]]] = {
    # issue 26's first allocation: a county-rooted chain down to four worker attributes
    "chain-county": [
        ("county", ["county"], 1.0),
        ("tract", ["tract"], 1.0),
        ("tract_ind", ["tract", "naics_sector"], 1.0),
        ("tract_ind_sex", ["tract", "naics_sector", "sex"], 2.0),
        ("tract_ind_sex_age", ["tract", "naics_sector", "sex", "age"], 12.0),
    ],
    # the same chain with the finest marginal the least precise per cell (Finding 3)
    "chain-finest-weak": [
        ("county", ["county"], 1.0),
        ("tract", ["tract"], 1.0),
        ("tract_ind", ["tract", "naics_sector"], 1.0),
        ("tract_ind_sex", ["tract", "naics_sector", "sex"], 2.0),
        ("tract_ind_sex_age", ["tract", "naics_sector", "sex", "age"], 3.0),
    ],
    # a state-rooted chain over establishment attributes
    "chain-state": [
        ("state", ["state"], 1.0),
        ("county", ["county"], 1.0),
        ("county_ind", ["county", "naics_sector"], 1.0),
        ("tract_ind", ["tract", "naics_sector"], 1.0),
    ],
    # a lattice of worker attributes (tract × sex × age refines tract × sex and tract × age)
    "lattice-worker": [
        ("tract", ["tract"], 1.0),
        ("tract_sex", ["tract", "sex"], 2.0),
        ("tract_age", ["tract", "age"], 3.0),
        ("tract_sex_age", ["tract", "sex", "age"], 6.0),
    ],
    # the LODES WAC shape: every worker attribute against the same block totals
    "wac-block": [
        ("block", ["block"], 1.0),
        ("block_age", ["block", "age"], 3.0),
        ("block_sex", ["block", "sex"], 2.0),
        ("block_earnings", ["block", "earnings"], 3.0),
    ],
    # issue 39's lattice: the finest refines both tract × industry and tract × sex
    "lattice-tract": [
        ("county", ["county"], 1.0),
        ("tract", ["tract"], 1.0),
        ("tract_ind", ["tract", "naics_sector"], 1.0),
        ("tract_sex", ["tract", "sex"], 2.0),
        ("tract_ind_sex_age", ["tract", "naics_sector", "sex", "age"], 3.0),
    ],
    # Haney Workload 1 (tract × sector × ownership) under Workload 3 (× sex × education)
    "haney-w1-w3": [
        ("county", ["county"], 1.0),
        ("w1", ["tract", "naics_sector", "ownership"], 1.0),
        ("w3", ["tract", "naics_sector", "ownership", "sex", "education"], 16.0),
    ],
}


@dataclasses.dataclass(frozen=True)
class MarginalResult:
    """Mean L1 error per cell of one marginal over the seeded releases.

    Attributes:
        workload, mechanism, marginal: what was released.
        cells: the marginal's cells.
        raw, raw_se: mean L1 of the mechanism's published estimate, and its Monte Carlo SE.
        post, post_se: the same for the post-processed values.
        diff_se: SE of the paired difference post − raw.
        worse: seeds where post-processing was worse.
        seeds: releases.
        own: seeds where the marginal kept its own values (the never-worse guard).
        oracle, oracle_se: mean L1 of the same least squares (consistent, non-negative,
            integer; every marginal, no guard) weighted by each cell's *true* noise
            variance — evaluation only, it reads the confidential x_v and n: the best any
            weighting can do, never publishable (nan where not computed).
        raw_bias, raw_bias_se: mean over the seeds of the marginal's raw total minus its
            true total, and its Monte Carlo SE.
        post_bias, post_bias_se: the same for the post-processed total.
        unguarded, unguarded_se: mean L1 of the consistent solution published for every
            marginal without the never-worse guard (what the guard protects against;
            evaluation only), and its SE; unguarded_diff_se: SE of the paired difference
            unguarded − raw.
        not_additive: over the seeds, the cells of this marginal that differ from the sum
            of their cells in a finer released marginal (every released pair checked in
            the published tables, independently of the release's own check).
        pairs: the released pairs with this marginal as the coarser one.
    """

    workload: str
    mechanism: str
    marginal: str
    cells: int
    raw: float
    raw_se: float
    post: float
    post_se: float
    diff_se: float
    worse: int
    seeds: int
    own: int
    oracle: float = math.nan
    oracle_se: float = math.nan
    raw_bias: float = math.nan
    raw_bias_se: float = math.nan
    post_bias: float = math.nan
    post_bias_se: float = math.nan
    unguarded: float = math.nan
    unguarded_se: float = math.nan
    unguarded_diff_se: float = math.nan
    not_additive: int = 0
    pairs: int = 0

    @property
    def ratio(self) -> float:
        """Raw / post (> 1: post-processing helps)."""
        return self.raw / self.post if self.post > 0 else math.inf

    @property
    def oracle_ratio(self) -> float:
        """Raw / oracle: the gain of the true-variance weighting (nan if not computed)."""
        return self.raw / self.oracle if self.oracle > 0 else math.nan

    @property
    def raw_biased(self) -> bool:
        """The raw total's mean bias exceeds three Monte Carlo SE."""
        return abs(self.raw_bias) > 3.0 * self.raw_bias_se

    @property
    def post_biased(self) -> bool:
        """The post-processed total's mean bias exceeds three Monte Carlo SE."""
        return abs(self.post_bias) > 3.0 * self.post_bias_se

    @property
    def worse_beyond_2se(self) -> bool:
        """Post-processed worse than raw by more than two SE of the paired difference."""
        return self.post - self.raw > 2.0 * self.diff_se

    @property
    def unguarded_worse_beyond_2se(self) -> bool:
        """Without the guard, worse than raw by more than two SE (False if not computed)."""
        return self.unguarded - self.raw > 2.0 * self.unguarded_diff_se


def _se(x: np.ndarray) -> float:
    """Monte Carlo standard error of the mean of ``x``."""
    return float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else 0.0


def workload_plan(
    data_dir: Path, workload: Sequence[tuple[str, list[str], float]], mechanism: str,
    *, alpha: float = 0.1, consistent: bool = True, variance_calibration: bool = False,
) -> Plan:  # fmt: skip
    """A weak ER-EE plan over ``data_dir``'s LODES-like tables for one workload."""
    pp: dict[str, bool] = {"consistent": consistent, "nonnegative": True, "integer": True}
    raw = {
        "name": "publication-eval",
        "data": {"kind": "eree", "workplace": "workplace.parquet",
                 "worker": "worker.parquet", "job": "job.parquet"},
        "privacy": {"definition": "eree-weak", "alpha": alpha},
        "query": [{"name": n, "by": list(b), "mechanism": mechanism, "epsilon": float(e)}
                  for n, b, e in workload],
        "postprocess": pp,
    }  # fmt: skip
    plan = parse_spec(raw, Path(data_dir))
    if variance_calibration and consistent:  # an experiment, not a spec key
        plan = dataclasses.replace(
            plan, postprocess=dataclasses.replace(plan.postprocess, variance_calibration=True)
        )
    return plan


def _truth(plan: Plan, data: Any, engine: PolarsEngine) -> dict[str, pl.DataFrame]:
    out = {}
    for q in plan.queries:
        wp, wk = split_by(q, plan.data)  # type: ignore[arg-type]
        out[q.name] = engine.cell_statistics(data, wp, wk).select("count", "x_v")
    return out


def _keys(plan: Plan, data: Any, engine: PolarsEngine, name: str) -> pl.DataFrame:
    """A marginal's key columns in the release's cell order."""
    q = plan.query(name)
    wp, wk = split_by(q, plan.data)  # type: ignore[arg-type]
    return engine.cell_statistics(data, wp, wk).select(list(q.by))


def evaluate(
    data_dir: Path,
    *,
    workloads: Iterable[str] = tuple(WORKLOADS),
    mechanisms: Iterable[str] = MECHANISMS,
    seeds: int = 20,
    first_seed: int = 0,
    progress: Any = None,
    interrupted: list[str] | None = None,
    variance_calibration: bool = False,
) -> list[MarginalResult]:
    """Seeded releases raw vs post-processed (module docstring) for each shape × mechanism.

    Args:
        data_dir: a folder written by ``eree synth lodes``.
        workloads: names in :data:`WORKLOADS`.
        mechanisms: ER-EE mechanism names.
        seeds: releases per workload and mechanism (seeds first_seed, first_seed + 1, …).
        progress: called with a line of text after each workload × mechanism, or None.
        interrupted: if given, Ctrl-C (:class:`KeyboardInterrupt`) stops the run and keeps
            the finished workload × mechanism pairs: a note saying where it stopped is
            appended to this list and the results so far are returned. Otherwise Ctrl-C
            propagates.
    """
    from eree.evaluate.publication_oracle import oracle_solution
    from eree.release.publication import publication_tables, workplace_attributes

    engine = PolarsEngine()
    results: list[MarginalResult] = []
    data = None
    todo = [(w, mech) for w in workloads for mech in mechanisms]
    for done, (w, mech) in enumerate(todo):
        try:
            t0 = time.perf_counter()
            plan = workload_plan(data_dir, WORKLOADS[w], mech,
                                 variance_calibration=variance_calibration)  # fmt: skip
            if data is None:
                data = load_job_tables(plan.data)  # type: ignore[arg-type]
            built = build(plan)
            truth = _truth(plan, data, engine)
            names = [q.name for q in plan.queries]
            truth_keys = {q.name: _keys(plan, data, engine, q.name) for q in plan.queries}
            raw: dict[str, list[float]] = {n: [] for n in names}
            post: dict[str, list[float]] = {n: [] for n in names}
            orc: dict[str, list[float]] = {n: [] for n in names}
            raw_b: dict[str, list[float]] = {n: [] for n in names}
            post_b: dict[str, list[float]] = {n: [] for n in names}
            own: dict[str, int] = dict.fromkeys(names, 0)
            ung: dict[str, list[float]] = {n: [] for n in names}
            # the same tables with the guard switched off (not a spec key): its effect
            no_guard = dataclasses.replace(
                built,
                plan=dataclasses.replace(
                    plan, postprocess=dataclasses.replace(plan.postprocess, without_guard=True)
                ),
            )
            frame = engine.workplace_counts(data, workplace_attributes(plan))
            # every released (finer, coarser) pair, mapped cell to cell from the keys
            pair_index: dict[tuple[str, str], np.ndarray] = {}
            keys = {q.name: truth_keys[q.name] for q in plan.queries}
            for qc in plan.queries:
                for qp in plan.queries:
                    if refines(list(qc.by), list(qp.by)):
                        pair_index[(qc.name, qp.name)] = cell_parents(
                            keys[qc.name], keys[qp.name], frame
                        )
            not_add: dict[str, int] = dict.fromkeys(names, 0)
            for s in range(first_seed, first_seed + seeds):
                tables = list(count_tables(built, data, engine, SeededNoise(s)))
                out, entry = publication_tables(built, tables, frame)
                bare, _ = publication_tables(no_guard, tables, frame)
                for t, t_bare in zip(tables, bare, strict=True):
                    n = truth[t.name]["count"].to_numpy().astype(np.float64)
                    x = t_bare.table["jobs"].to_numpy().astype(np.float64)
                    ung[t.name].append(float(np.abs(x - n).mean()))
                best = oracle_solution(built, tables, truth, frame)
                for t, p in zip(tables, out, strict=True):
                    n = truth[t.name]["count"].to_numpy().astype(np.float64)
                    r = t.table["jobs"].to_numpy().astype(np.float64)
                    x = p.table["jobs"].to_numpy().astype(np.float64)
                    raw[t.name].append(float(np.abs(r - n).mean()))
                    post[t.name].append(float(np.abs(x - n).mean()))
                    raw_b[t.name].append(float(r.sum() - n.sum()))
                    post_b[t.name].append(float(x.sum() - n.sum()))
                    if t.name in best:
                        orc[t.name].append(float(np.abs(best[t.name] - n).mean()))
                    if t.name in entry.get("kept_own_values", {}) or t.name in entry.get(
                        "held", {}
                    ):
                        own[t.name] += 1
                for (c, par), idx in pair_index.items():
                    pub = {p.name: p for p in out}
                    x = pub[c].table["jobs"].to_numpy().astype(np.float64)
                    y = pub[par].table["jobs"].to_numpy().astype(np.float64)
                    sums = np.bincount(idx, x, minlength=y.shape[0])
                    not_add[par] += int(np.sum(sums != y))
            rows = []
            for q in plan.queries:
                a, b = np.array(raw[q.name]), np.array(post[q.name])
                o = np.array(orc[q.name])
                ra, pb = np.array(raw_b[q.name]), np.array(post_b[q.name])
                u = np.array(ung[q.name])
                rows.append(MarginalResult(
                    w, mech, q.name, truth[q.name].height, float(a.mean()), _se(a),
                    float(b.mean()), _se(b), _se(b - a), int((b > a).sum()), a.size, own[q.name],
                    float(o.mean()) if o.size else math.nan, _se(o) if o.size else math.nan,
                    float(ra.mean()), _se(ra), float(pb.mean()), _se(pb),
                    float(u.mean()), _se(u), _se(u - a), not_add[q.name],
                    sum(1 for (_, p) in pair_index if p == q.name),
                ))  # fmt: skip
            results.extend(rows)
            if progress is not None:
                progress(f"{w} × {mech}: {seeds} releases in {time.perf_counter() - t0:.1f} s")
        except KeyboardInterrupt:
            if interrupted is None:
                raise
            interrupted.append(
                f"interrupted (Ctrl-C) during {w} × {mech} after {done} of {len(todo)} "
                "workload × mechanism pairs"
            )
            break
    return results


def evaluate_gedp(
    spec: Path,
    *,
    seeds: int = 20,
    first_seed: int = 0,
    nonnegative: bool = True,
    progress: Any = None,
) -> list[MarginalResult]:
    """GEDP ``consistent = true`` (every table tabulated from the WLS microdata) vs raw.

    ``spec``: an establishment (GEDP) release spec; it is run with ``[postprocess]
    microdata = true, consistent = true`` (and ``nonnegative``). For each seeded release
    and each (query, attribute): the mean absolute error per cell of the mechanism's
    published table (raw) and of the tabulation of the WLS microdata, against the true
    sums of the establishment file (evaluation code: it reads the truth); tables the
    never-worse check left as their own values count in ``own``. One
    :class:`MarginalResult` per (query, attribute), named ``query.attribute``; its
    workload is the spec's name, its mechanism the query's.
    """
    from eree.release.family import family_of
    from eree.release.spec import load_spec

    plan = load_spec(spec)
    plan = dataclasses.replace(plan, postprocess=dataclasses.replace(
        plan.postprocess, microdata=True, consistent=True, nonnegative=nonnegative))  # fmt: skip
    family = family_of(plan)
    engine = PolarsEngine()
    family.check_before_load(plan)
    data = family.load(plan, engine, narrow=False)
    built = build(plan)
    frame: pl.DataFrame = data.frame
    raw: dict[str, list[float]] = {}
    post: dict[str, list[float]] = {}
    bias: dict[str, list[tuple[float, float]]] = {}
    cells: dict[str, int] = {}
    mech: dict[str, str] = {}
    truth: dict[str, np.ndarray] = {}
    kept: dict[str, int] = {}
    t0 = time.perf_counter()
    for s in range(first_seed, first_seed + seeds):
        tables = list(family.answer_queries(built, data, engine, SeededNoise(s)))
        raws = {t.name: t.table for t in tables}
        _, entry = family.postprocess(built, data, engine, tables)
        kept_now = entry.get("postprocess", {}).get("kept_own_values", {})
        for t in tables:
            q = plan.query(t.name)
            keys = [data.id_column] if q.by == "identity" else list(q.by)
            for m in t.measurements:
                attr = m.statistic
                name = f"{t.name}.{attr}"
                if name not in truth and not keys:  # the total: one cell
                    truth[name] = np.array([float(frame[attr].sum())])
                    cells[name], mech[name] = 1, m.mechanism
                    raw[name], post[name] = [], []
                if name not in truth:
                    true = frame.group_by(keys).agg(pl.col(attr).sum().alias("__true"))
                    j = raws[t.name].select(keys).join(true, on=keys, how="left",
                                                       maintain_order="left")  # fmt: skip
                    truth[name] = j["__true"].fill_null(0.0).to_numpy().astype(np.float64)
                    cells[name], mech[name] = t.table.height, m.mechanism
                    raw[name], post[name] = [], []
                if name in kept_now:
                    kept[name] = kept.get(name, 0) + 1
                n = truth[name]
                r = raws[t.name][attr].to_numpy().astype(np.float64)
                p = t.table[attr].to_numpy().astype(np.float64)
                raw[name].append(float(np.abs(r - n).mean()))
                post[name].append(float(np.abs(p - n).mean()))
                bias.setdefault(name, []).append((float(r.sum() - n.sum()),
                                                  float(p.sum() - n.sum())))  # fmt: skip
        if progress is not None:
            progress(f"{plan.name}: release {s - first_seed + 1} of {seeds}")
    out = []
    for name in raw:
        ra, pa = np.array(raw[name]), np.array(post[name])
        b = np.array(bias[name])
        out.append(MarginalResult(
            plan.name, mech[name], name, cells[name], float(ra.mean()), _se(ra),
            float(pa.mean()), _se(pa), _se(pa - ra), int((pa > ra).sum()), ra.size,
            kept.get(name, 0), raw_bias=float(b[:, 0].mean()), raw_bias_se=_se(b[:, 0]),
            post_bias=float(b[:, 1].mean()), post_bias_se=_se(b[:, 1]),
        ))  # fmt: skip
    if progress is not None:
        progress(f"{plan.name}: {seeds} releases in {time.perf_counter() - t0:.1f} s")
    return out


def _cell(x: float, se: float) -> str:
    return "—" if math.isnan(x) else f"{x:.3g} ± {se:.2g}"


def results_markdown(results: Sequence[MarginalResult]) -> str:
    """One Markdown table per workload: mean L1 per marginal, raw vs post-processed ± SE.

    With the oracle computed, two more columns: the oracle's mean L1 and raw / oracle
    (the gain of the true-variance weighting: evaluation only, not publishable); with the
    unguarded solution, two more: its mean L1 and raw / it, flagged where it is worse
    than raw beyond 2 SE. Then a
    second table per workload: the mean bias of each marginal's total, raw and
    post-processed, ± Monte Carlo SE, flagged where it exceeds 3 SE.
    """
    lines: list[str] = []
    for w in dict.fromkeys(r.workload for r in results):
        rows = [r for r in results if r.workload == w]
        oracle = any(not math.isnan(r.oracle) for r in rows)
        head = ("| mechanism | marginal | cells | raw L1 ± SE | post L1 ± SE | raw / post "
                "| post worse (seeds) | own values, kept or held (seeds) |")  # fmt: skip
        rule = "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
        if oracle:
            head += " oracle L1 ± SE (true variances, not publishable) | raw / oracle |"
            rule += " ---: | ---: |"
        unguarded = any(not math.isnan(r.unguarded) for r in rows)
        if unguarded:
            head += " no guard L1 ± SE | raw / no guard |"
            rule += " ---: | ---: |"
        paired = any(r.pairs for r in rows)
        if paired:
            head += " finer released marginals | cells ≠ Σ finer cells (all seeds) |"
            rule += " ---: | ---: |"
        lines += [f"#### {w}", "", head, rule]
        for r in rows:
            flag = " **worse > 2 SE**" if r.worse_beyond_2se else ""
            line = (
                f"| {r.mechanism} | {r.marginal} | {r.cells:,} | {r.raw:.3g} ± {r.raw_se:.2g} "
                f"| {r.post:.3g} ± {r.post_se:.2g} | {r.ratio:.2f}{flag} | {r.worse}/{r.seeds} "
                f"| {r.own}/{r.seeds} |"
            )
            if oracle:
                ratio = "—" if math.isnan(r.oracle_ratio) else f"{r.oracle_ratio:.2f}"
                line += f" {_cell(r.oracle, r.oracle_se)} | {ratio} |"
            if unguarded:
                flag = " **worse > 2 SE**" if r.unguarded_worse_beyond_2se else ""
                ratio = f"{r.raw / r.unguarded:.2f}" if r.unguarded > 0 else "—"
                line += f" {_cell(r.unguarded, r.unguarded_se)} | {ratio}{flag} |"
            if paired:
                line += f" {r.pairs} | {r.not_additive:,} |"
            lines.append(line)
        lines.append("")
        if any(not math.isnan(r.raw_bias) for r in rows):
            lines += [
                f"##### {w}: bias of each marginal's total (mean over the seeds of total − "
                "true total ± SE; **> 3 SE** flagged)",
                "",
                "| mechanism | marginal | raw bias ± SE | post bias ± SE |",
                "| --- | --- | ---: | ---: |",
            ]
            for r in rows:
                rb = " **> 3 SE**" if r.raw_biased else ""
                pb = " **> 3 SE**" if r.post_biased else ""
                lines.append(
                    f"| {r.mechanism} | {r.marginal} | {_cell(r.raw_bias, r.raw_bias_se)}{rb} "
                    f"| {_cell(r.post_bias, r.post_bias_se)}{pb} |"
                )
            lines.append("")
    return "\n".join(lines)


def check_names(workloads: Iterable[str], mechanisms: Iterable[str]) -> None:
    """Refuse an unknown workload or mechanism name before any data is read.

    Raises:
        SpecError: a name not in :data:`WORKLOADS` or :data:`MECHANISMS`.
    """
    for w in workloads:
        if w not in WORKLOADS:
            raise SpecError(f"unknown workload {w!r}; choose from {', '.join(WORKLOADS)}")
    for m in mechanisms:
        if m not in MECHANISMS:
            raise SpecError(f"unknown mechanism {m!r}; choose from {', '.join(MECHANISMS)}")


#: size classes of the calibration table (jobs), lower bounds
SIZE_CLASSES = (0, 5, 20, 100, 500)


def _size_class(x: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.asarray(SIZE_CLASSES, dtype=np.float64), x, side="right") - 1


def calibration(
    data_dir: Path,
    *,
    mechanism: str = "smooth_laplace",
    workload: str = "chain-county",
    seeds: int = 20,
) -> pl.DataFrame:
    """The variance model's calibration: predicted vs realised noise variance by size class.

    Per marginal of ``workload`` and class of cell size — by the public published value
    (what the model sees) and by the true count — the mean predicted variance (public
    model), the same after the release's own calibration
    (:mod:`eree.postprocess.variance_calibration`: the multipliers the release with
    ``variance_calibration = true`` fits to its parent/child discrepancies, applied to the
    part above the floor), the mean variance at the true x_v (the mechanism's formula) and
    the realised mean squared error of the published value, over ``seeds`` releases.
    """
    from eree.release.publication import publication_tables, workplace_attributes

    engine = PolarsEngine()
    plan = workload_plan(data_dir, WORKLOADS[workload], mechanism, variance_calibration=True)
    data = load_job_tables(plan.data)  # type: ignore[arg-type]
    built = build(plan)
    truth = _truth(plan, data, engine)
    frames = []
    counts = engine.workplace_counts(data, workplace_attributes(plan))
    for s in range(seeds):
        tables = list(count_tables(built, data, engine, SeededNoise(s)))
        _, entry = publication_tables(built, tables, counts)
        mult = entry.get("variance_calibration", {}).get("multipliers", {})
        for t in tables:
            m = t.measurements[0]
            mech = built.query(t.name).mechanisms[0]
            keys = [c for c in t.table.columns if not c.startswith("jobs")]
            k = establishments_per_cell(t.table, keys, counts)
            assert k is not None  # a frame was given
            pred, _ = variance_proxy(mech, m, k)
            model = smooth_model(mech)
            n = truth[t.name]["count"].to_numpy().astype(np.float64)
            xv = truth[t.name]["x_v"].to_numpy().astype(np.float64)
            at_truth = model.variance_at(xv) if model is not None else pred
            floor = float(model.variance_at(np.zeros(1))[0]) if model is not None else 0.0
            c = float(mult.get(t.name, 1.0))
            calibrated = floor + c * np.maximum(pred - floor, 0.0) if c != 1.0 else pred
            pub = np.asarray(m.estimate, dtype=np.float64)
            live = k > 0  # public zeros are exact
            frames.append(pl.DataFrame({
                "marginal": t.name, "published_class": _size_class(np.abs(pub[live])),
                "true_class": _size_class(n[live]), "predicted": pred[live],
                "calibrated": calibrated[live],
                "at_true_x_v": at_truth[live], "squared_error": (pub[live] - n[live]) ** 2,
            }))  # fmt: skip
    df = pl.concat(frames)
    out = []
    for by in ("published_class", "true_class"):
        g = (
            df.group_by("marginal", by)
            .agg(
                pl.len().alias("cell_releases"),
                pl.col("predicted").mean(),
                pl.col("calibrated").mean(),
                pl.col("at_true_x_v").mean(),
                pl.col("squared_error").mean().alias("realised"),
            )
            .rename({by: "size_class"})
            .with_columns(pl.lit(by.removesuffix("_class")).alias("class_by"))
        )
        out.append(g)
    res = pl.concat(out).sort("class_by", "marginal", "size_class")
    labels = pl.Series([f"≥ {SIZE_CLASSES[c]}" for c in res["size_class"].to_list()])
    return res.with_columns(
        (pl.col("predicted") / pl.col("realised")).alias("predicted_over_realised"),
        (pl.col("calibrated") / pl.col("realised")).alias("calibrated_over_realised"),
        labels.alias("size_class"),
    )


def calibration_markdown(df: pl.DataFrame) -> str:
    """The calibration table as Markdown."""
    lines = [
        "| size by | marginal | size class | cell-releases | predicted var | var at true x_v "
        "| realised MSE | predicted / realised | calibrated / realised |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in df.iter_rows(named=True):
        lines.append(
            f"| {r['class_by']} | {r['marginal']} | {r['size_class']} | {r['cell_releases']:,} "
            f"| {r['predicted']:.3g} | {r['at_true_x_v']:.3g} | {r['realised']:.3g} "
            f"| {r['predicted_over_realised']:.2f} | {r['calibrated_over_realised']:.2f} |"
        )
    return "\n".join(lines)


#: the mechanisms with a public variance model (the calibration table's rows)
CALIBRATED = ("smooth_laplace", "smooth_gamma")


def write_outputs(
    results: Sequence[MarginalResult],
    calibrations: dict[str, pl.DataFrame],
    folder: Path,
    meta: dict[str, Any],
) -> dict[str, Path]:
    """Write the evaluation to ``folder``: Markdown, JSON and the calibration table (CSV).

    Returns the paths written: ``report`` (publication_eval.md), ``results``
    (publication_eval.json: every marginal's numbers and ``meta``) and ``calibration``
    (calibration.csv, one row per mechanism × size-class basis × marginal × class).
    """
    md = [
        "# Publication-grade ER-EE tables: raw vs post-processed",
        "",
        "Mean L1 error per cell, raw (the mechanism's published estimate) vs "
        "post-processed (consistent, non-negative, integer), ± Monte Carlo SE over the "
        "seeded releases (NOT FOR PUBLICATION). The oracle columns solve the same least "
        "squares weighted by each cell's true noise variance (read from the confidential "
        "x_v and n: evaluation only, never publishable); the no-guard columns publish the "
        "consistent solution for every marginal without the never-worse guard (what the "
        "guard protects against); the bias tables give the mean error of each marginal's "
        "total.",
        "",
        results_markdown(results),
    ]
    for mech, df in calibrations.items():
        md += [f"#### calibration, {mech} (chain-county)", "", calibration_markdown(df), ""]
    if meta.get("interrupted"):
        md.insert(2, f"**{meta['interrupted']}: partial results.**\n")
    paths = {
        "report": folder / "publication_eval.md",
        "results": folder / "publication_eval.json",
        "calibration": folder / "calibration.csv",
    }
    paths["report"].write_text("\n".join(md) + "\n", encoding="utf-8")
    rows = [
        {k: (None if isinstance(v, float) and math.isnan(v) else v)
         for k, v in dataclasses.asdict(r).items()}
        | {"ratio": r.ratio, "worse_beyond_2se": r.worse_beyond_2se,
           "oracle_ratio": None if math.isnan(r.oracle_ratio) else r.oracle_ratio,
           "raw_bias_beyond_3se": r.raw_biased, "post_bias_beyond_3se": r.post_biased,
           "unguarded_worse_beyond_2se": r.unguarded_worse_beyond_2se}
        for r in results
    ]  # fmt: skip
    paths["results"].write_text(
        json.dumps({"meta": meta, "marginals": rows}, indent=1), encoding="utf-8"
    )
    frames = [df.with_columns(pl.lit(m).alias("mechanism")) for m, df in calibrations.items()]
    if frames:
        pl.concat(frames).write_csv(paths["calibration"])
    else:
        del paths["calibration"]
    return paths
