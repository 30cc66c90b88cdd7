r"""The empirical evaluation of Haney et al. (SIGMOD 2017) §10, reproduced.

**Place.** The paper's "place" (Census place: cities, towns) is played by the **tract**:
a LODES-like dataset has block, tract and county, and tracts are the geography with
place-like sizes (PA 2015: 3,213 tracts with jobs, median ≈ 950 jobs, largest ≈ 80K).

**Workloads** (§10, "Queries and Quality Measures"):

* **Workload 1** (Figure 1) — the marginal over all establishment attributes:
  tract × NAICS sector × ownership. Every cell is released with ε (the cells partition
  the establishments: parallel composition; strong (α, ε)-ER-EE privacy).
* **Workload 2** (Figure 3) — *single queries* over all establishment attributes and the
  worker attributes sex and education: each cell of tract × sector × ownership × sex ×
  education is released as its own query with the whole ε (weak privacy, Def. 7.4).
* **Workload 3** (Figure 4, Appendix C) — the same cells released as *one marginal*: under
  weak privacy a marginal with d worker-attribute combinations costs d·ε_cell (§8), so each
  cell gets ε/d, d = |sex| × |education| = 2 × 4 = 8.
* **Ranking 1** (Figure 2) — rank the cells of tract × sector × ownership by total count;
  same releases as Workload 1.
* **Ranking 2** (Figure 5) — rank the cells of tract × sector × ownership by the number of
  women with a bachelor's degree or more (sex F, education E4); these are single queries
  (one worker-attribute combination per cell), i.e. the F × E4 cells of Workload 2's
  releases.

**Measures.** L1 error per cell (averaged over cells and trials) and its ratio to input
noise infusion (the current SDL; :mod:`eree.mechanisms.noise_infusion`); Spearman rank
correlation against the SDL's ranking (the paper's measure) and against the truth, each
trial's mechanism output paired with the same trial's SDL output. All are stratified by
the population of the cell's location: eree uses the **tract's employment** (total jobs
in the tract, all sectors and ownerships) in the paper's bins 0–100, 100–10k, 10k–100k,
100k+, because a LODES-like dataset has no residential population (the paper uses the
2010 Census place population). With tracts the 100k+ bin is empty.

**Algorithms and grid.** Log-Laplace, Smooth Gamma and Smooth Laplace for
ε ∈ {0.25, 0.5, 0.67, 1, 2, 4} × α ∈ {0.01, 0.05, 0.1, 0.15, 0.2}; Smooth Laplace at
δ = 0.05 (per released cell); node-DP Truncated Laplace for θ ∈ {2, 20, 50, 100, 200, 500}
(an establishment with total employment ≥ θ is dropped; noise Lap(θ/ε), which is also the
cost of a whole marginal since an establishment contributes < θ in L1); 20 trials.
Points are omitted exactly where the paper omits them: Log-Laplace when λ = 2 ln(1+α)/ε
≥ 1 (unbounded expectation, Lemma 8.2), Smooth Gamma when α + 1 ≥ e^{ε/5}, Smooth Laplace
when δ = 0.05 < δ_min = exp(−ε/(2 ln(1+α))) (Algorithm 3's condition, not Table 2 — see
docs/errata.md) — always with the per-cell ε. The Log-Laplace quantity evaluated is the
output ñ of Algorithm 1 (what the paper plots); the bias-corrected n̂ that eree publishes
is reported too, as ``log_laplace_unbiased``, and the edge-DP Laplace baseline as
``laplace`` — both extras, not in the paper's figures.

**Efficiency.** Cell statistics and the per-establishment cell counts are computed once
per marginal (the 5-way marginal serves Workloads 2, 3 and Ranking 2); each mechanism and
parameter point then draws all trials in one vectorised call on ``(trials, cells)``
arrays. Noise-infusion factors are drawn once per trial for the whole dataset and shared
by every marginal (time-invariant, §5.1).

**Randomness.** Seeded (reproducible, not for publication). Each (marginal, mechanism,
parameter) point has its own :class:`~eree.mechanisms.noise.SeededNoise`, derived from the
run's seed and the point's name, so a single experiment reproduces exactly the numbers it
has in ``haney-all``.
"""

from __future__ import annotations

import math
import os
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import polars as pl

from eree.data.job_tables import JobTables
from eree.engine.base import Engine
from eree.engine.polars.engine import PolarsEngine
from eree.errors import PrivacyParameterError, SpecError
from eree.evaluate.datasets import Dataset
from eree.evaluate.experiments import experiments_of
from eree.evaluate.interrupt import absorb_echo
from eree.evaluate.metrics import (
    ALL,
    POPULATION_BINS,
    TIDY_SCHEMA,
    average_ranks,
    l1_ratio,
    mean_finite,
    pearson_rows,
    relative_abs_error,
    share_within,
    stratified_mean,
    stratum_of,
    tidy_row,
)
from eree.mechanisms import registry
from eree.mechanisms.base import Cells, Mechanism
from eree.mechanisms.baselines import EdgeLaplace, TruncatedLaplace
from eree.mechanisms.er_ee import LogLaplace, SmoothGamma, SmoothLaplace
from eree.mechanisms.noise import FloatArray, SeededNoise
from eree.mechanisms.noise_infusion import (
    DEFAULT_S,
    DEFAULT_T,
    SMALL_CELL_LIMIT,
    NoiseInfusion,
    draw_distortion_factors,
    noise_infusion,
)

PLACE = "tract"
ESTABLISHMENT_ATTRIBUTES: tuple[str, ...] = (PLACE, "naics_sector", "ownership")
WORKER_ATTRIBUTES: tuple[str, ...] = ("sex", "education")
#: Ranking 2: women with a bachelor's degree or more
RANKING2_CELL: dict[str, str] = {"sex": "F", "education": "E4"}

EPSILONS: tuple[float, ...] = (0.25, 0.5, 0.67, 1.0, 2.0, 4.0)
ALPHAS: tuple[float, ...] = (0.01, 0.05, 0.1, 0.15, 0.2)
THETAS: tuple[float, ...] = (2, 20, 50, 100, 200, 500)
TRIALS = 20
SMOOTH_LAPLACE_DELTA = 0.05

ER_EE_MECHANISMS = (LogLaplace.name, SmoothGamma.name, SmoothLaplace.name)
#: label suffix of the post-processed variant of a mechanism's output
#: (docs/design.md#post-processing)
POSTPROCESSED = "/postprocessed"
NOISE_INFUSION = NoiseInfusion.name

EXPERIMENTS: dict[str, str] = {
    "haney-workload1": "Workload 1: L1 error ratio, tract x sector x ownership",
    "haney-ranking1": "Ranking 1: Spearman correlation, tract x sector x ownership",
    "haney-workload2": "Workload 2: L1 error ratio, single queries with sex x education",
    "haney-workload3": "Workload 3: L1 error ratio, the marginal with sex x education",
    "haney-ranking2": "Ranking 2: Spearman correlation, women with a BA+ per cell",
    "haney-all": "all of the above",
}

#: experiment → (noise run, analysis)
_ANALYSES: dict[str, tuple[str, str]] = {
    "haney-workload1": ("estab", "l1"),
    "haney-ranking1": ("estab", "rank"),
    "haney-workload2": ("single", "l1"),
    "haney-ranking2": ("single", "rank"),
    "haney-workload3": ("marginal", "l1"),
}
_ORDER = tuple(_ANALYSES)

#: the CSV's column order (docs/design.md#evaluation)
CSV_COLUMNS = (
    "experiment",
    "workload",
    "mechanism",
    "alpha",
    "epsilon",
    "mu",
    "stratum",
    "metric",
    "value",
    "trials",
)


@dataclass(frozen=True)
class HaneyGrid:
    """The parameter grid (defaults: the paper's)."""

    epsilons: tuple[float, ...] = EPSILONS
    alphas: tuple[float, ...] = ALPHAS
    thetas: tuple[float, ...] = THETAS
    trials: int = TRIALS
    delta: float = SMOOTH_LAPLACE_DELTA
    s: float = DEFAULT_S
    t: float = DEFAULT_T
    small_cell: float = SMALL_CELL_LIMIT
    extras: bool = True
    postprocessed: bool = True

    def __post_init__(self) -> None:
        if self.trials < 1:
            raise SpecError("trials must be >= 1")
        if not (self.epsilons and all(e > 0 for e in self.epsilons)):
            raise SpecError("epsilons must be positive")
        if not (self.alphas and all(a > 0 for a in self.alphas)):
            raise SpecError("alphas must be positive")
        if any(t <= 0 for t in self.thetas):
            raise SpecError("thetas must be positive")


@dataclass(frozen=True)
class Point:
    """One mechanism at one parameter point."""

    mechanism: str
    epsilon: float
    alpha: float | None = None
    theta: float | None = None

    @property
    def label(self) -> str:
        """The mechanism's name, with θ when set, e.g. ``name(theta=10)``."""
        if self.theta is not None:
            return f"{self.mechanism}(theta={self.theta:g})"
        return self.mechanism


def mechanism_label(mechanism: str, theta: float | None = None) -> str:
    """The label of ``mechanism`` (with ``theta`` when given), as :attr:`Point.label`."""
    return Point(mechanism, 1.0, None, theta).label


def grid_points(grid: HaneyGrid) -> Iterator[Point]:
    """Every point of ``grid``: per ε, each ER-EE mechanism per α, truncation per θ, extras."""
    for eps in grid.epsilons:
        for mech in ER_EE_MECHANISMS:
            for a in grid.alphas:
                yield Point(mech, eps, a)
        for th in grid.thetas:
            yield Point(TruncatedLaplace.name, eps, None, th)
        if grid.extras:
            yield Point(EdgeLaplace.name, eps)


def mechanism_for(p: Point, d: int, whole_marginal: bool, delta: float | None) -> Mechanism:
    """The registered mechanism object of a grid point.

    A whole marginal with d worker-attribute combinations is one query: the object splits
    its ε (and δ) over the combinations where its privacy analysis requires it (the ER-EE
    mechanisms under weak privacy, §8) and not where it does not (edge-DP Laplace: each job
    is in one cell; node-DP truncated Laplace: an establishment adds < θ to the marginal).
    Otherwise ε is per cell. ``delta`` is the per-cell δ of Smooth Laplace (None: δ_min).

    Raises:
        PrivacyParameterError: the point violates the mechanism's condition.
    """
    e = registry.entry(p.mechanism)
    k = d if whole_marginal else 1
    definition = "eree-weak" if "eree-weak" in e.definitions else e.definitions[0]
    kwargs: dict[str, Any] = {"query": p.label, "epsilon": p.epsilon, "definition": definition}
    if k > 1:
        kwargs.update(worker_cells=k, worker_attributes=("worker attributes",))
    if "alpha" in e.cls.__dataclass_fields__:
        kwargs["alpha"] = p.alpha
    if "delta" in e.settings and delta is not None:
        kwargs["delta"] = delta * k
    if "theta" in e.settings:
        kwargs["theta"] = p.theta
    return e.cls(**kwargs)


def per_cell_epsilon(p: Point, d: int, whole_marginal: bool) -> float:
    """The ε each cell is released with (the mechanism class's own split of a marginal's ε)."""
    cls = registry.entry(p.mechanism).cls
    return cls.cell_epsilon(p.epsilon, d if whole_marginal else 1)  # type: ignore[attr-defined]


def omission_rule(p: Point, delta: float = SMOOTH_LAPLACE_DELTA) -> str:
    """The short name of the rule that can omit a point of this mechanism."""
    return {
        LogLaplace.name: "unbounded expectation, lambda >= 1 (Lemma 8.2)",
        SmoothGamma.name: "disallowed: alpha + 1 >= e^(eps/5) (Algorithm 2)",
        SmoothLaplace.name: f"disallowed at delta = {delta:g} (Algorithm 3)",
    }.get(p.mechanism, "")


def omission_reason(p: Point, d: int, whole_marginal: bool, delta: float | None) -> str | None:
    """Why the paper omits a point (None: it is plotted): the mechanism object refuses it."""
    try:
        mechanism_for(p, d, whole_marginal, delta)
    except PrivacyParameterError as e:
        return str(e)
    return None


# --------------------------------------------------------------------------------------
# cell statistics, once per marginal
# --------------------------------------------------------------------------------------


@dataclass
class MarginalCells:
    """Everything the trials need about one marginal, as arrays (computed once).

    Attributes:
        keys: the cells' key columns (sorted as the engine sorts them).
        n, x_v: true count and largest single-establishment contribution per cell.
        establishments: number of establishments in the cell's workplace combination
            (public).
        population: the employment of the cell's place (tract).
        stratum: index into :data:`~eree.evaluate.metrics.POPULATION_BINS`.
        d: number of worker-attribute combinations (1 for establishment attributes only).
        pair_cell, pair_est, pair_h: the (establishment, cell) pairs with positive count:
            cell index, establishment index (into the dataset's factor vector), count.
        est_size: total employment of every establishment (dataset order).
    """

    keys: pl.DataFrame
    n: FloatArray
    x_v: FloatArray
    establishments: np.ndarray
    population: FloatArray
    stratum: np.ndarray
    d: int
    pair_cell: np.ndarray
    pair_est: np.ndarray
    pair_h: FloatArray
    est_size: FloatArray

    @property
    def cells(self) -> int:
        """Number of cells of the marginal."""
        return int(self.n.size)

    def count_truncated(self, theta: float) -> FloatArray:
        """Jobs of establishments with total employment < θ, per cell (node-DP truncation)."""
        keep = self.est_size[self.pair_est] < theta
        return np.bincount(
            self.pair_cell[keep], weights=self.pair_h[keep], minlength=self.cells
        ).astype(np.float64)

    def mask(self, where: dict[str, str]) -> np.ndarray:
        """Boolean mask of the cells whose key columns equal the values in ``where``."""
        m = np.ones(self.cells, dtype=bool)
        for k, v in where.items():
            m &= (self.keys[k] == v).to_numpy()
        return m


def establishment_sizes(data: JobTables) -> FloatArray:
    """Total employment of every establishment, in ``data.workplaces`` order."""
    sizes = data.jobs.group_by("workplace_id").agg(pl.len().alias("__size"))
    return (
        data.workplaces.select("workplace_id")
        .join(sizes, on="workplace_id", how="left", maintain_order="left")["__size"]
        .fill_null(0)
        .to_numpy()
        .astype(np.float64)
    )


def marginal_cells(
    data: JobTables,
    engine: Engine,
    workplace_by: Sequence[str],
    worker_by: Sequence[str],
    *,
    place: str = PLACE,
    est_size: FloatArray | None = None,
    place_population: pl.DataFrame | None = None,
) -> MarginalCells:
    """Cell statistics and per-establishment cell counts of one marginal, as arrays."""
    wp, wk = list(workplace_by), list(worker_by)
    if place not in wp:
        raise SpecError(f"the marginal must include the place attribute {place!r}")
    stats = engine.cell_statistics(data, wp, wk)
    keys = [*wp, *wk]
    ec = engine.establishment_cells(data, wp, wk)
    est = data.workplaces.select("workplace_id").with_row_index("__est")
    ec = ec.join(est, on="workplace_id", how="left").join(
        stats.select(keys).with_row_index("__cell"), on=keys, how="inner"
    )
    if place_population is None:
        place_population = engine.cell_statistics(data, [place], []).select(
            place, pl.col("count").alias("__pop")
        )
    pop = (
        stats.select(place)
        .join(place_population, on=place, how="left", maintain_order="left")["__pop"]
        .fill_null(0)
        .to_numpy()
        .astype(np.float64)
    )
    d = math.prod(len(data.domains[a]) for a in wk) if wk else 1
    return MarginalCells(
        keys=stats.select(keys),
        n=stats["count"].to_numpy().astype(np.float64),
        x_v=stats["x_v"].to_numpy().astype(np.float64),
        establishments=stats["establishments"].to_numpy().astype(np.int64),
        population=pop,
        stratum=stratum_of(pop),
        d=d,
        pair_cell=ec["__cell"].to_numpy().astype(np.int64),
        pair_est=ec["__est"].to_numpy().astype(np.int64),
        pair_h=ec["n"].to_numpy().astype(np.float64),
        est_size=establishment_sizes(data) if est_size is None else est_size,
    )


# --------------------------------------------------------------------------------------
# running mechanisms on (trials, cells)
# --------------------------------------------------------------------------------------


def derive_seed(seed: int, label: str) -> int:
    """A child seed for one named stream (stable across runs and experiment subsets)."""
    ss = np.random.SeedSequence([int(seed) & 0xFFFFFFFF, zlib.crc32(label.encode())])
    return int(ss.generate_state(2, dtype=np.uint64)[0] >> np.uint64(1))


def postprocessed(noisy: FloatArray) -> FloatArray:
    """The publication-grade variant of one marginal's answers: non-negative integers.

    ``[postprocess] nonnegative = true, integer = true`` applied cell by cell (a workload
    is one marginal, with no coarser released marginal to be consistent with): free in
    privacy. Works on (trials, cells) arrays.
    """
    from eree.postprocess.hierarchy import MarginalInput, publication_grade

    m = MarginalInput("w", noisy, np.ones(1))
    return publication_grade([m], consistent=False, nonnegative=True, integer=True)["w"]


def run_point(
    p: Point, mech: Mechanism, cells: MarginalCells, trials: int, source: SeededNoise
) -> dict[str, FloatArray]:
    """All trials of one point: ``{mechanism label: (trials, cells) noisy answers}``."""
    shape = (trials, cells.cells)
    columns: dict[str, Any] = {"count": cells.n, "x_v": cells.x_v}
    if mech.truncate_below is not None:
        columns["count_truncated"] = cells.count_truncated(mech.truncate_below)
    out = mech(Cells({c: np.broadcast_to(columns[c], shape) for c in mech.needs}), source)
    res = {p.label: out.noisy}
    if isinstance(mech, LogLaplace):  # the bias-corrected n̂ too
        res[f"{LogLaplace.name}_unbiased"] = out.estimate
    return res


# --------------------------------------------------------------------------------------
# the experiment
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Run:
    name: str
    worker_by: tuple[str, ...]
    per_cell_divisor: bool  # True: each cell gets eps/d (a whole marginal, weak privacy)
    workload: str


_RUNS: dict[str, _Run] = {
    "estab": _Run("estab", (), False, "tract*naics_sector*ownership"),
    "single": _Run(
        "single",
        WORKER_ATTRIBUTES,
        False,
        "tract*naics_sector*ownership*sex*education [single queries]",
    ),
    "marginal": _Run(
        "marginal",
        WORKER_ATTRIBUTES,
        True,
        "tract*naics_sector*ownership*sex*education [marginal, eps/d per cell]",
    ),
}


@dataclass
class HaneyResult:
    """Tidy results, omitted points and a record of the run."""

    results: pl.DataFrame
    omitted: pl.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)


class _Rows:
    def __init__(self, trials: int) -> None:
        self.trials = trials
        self.rows: list[dict[str, Any]] = []

    def add(
        self,
        experiment: str,
        workload: str,
        mechanism: str,
        alpha: float | None,
        epsilon: float | None,
        stratum: str,
        metric: str,
        value: float,
    ) -> None:
        self.rows.append(
            tidy_row(
                experiment,
                workload,
                mechanism,
                stratum,
                metric,
                value,
                self.trials,
                alpha=alpha,
                epsilon=epsilon,
            )
        )


_LABELS = tuple(b[2] for b in POPULATION_BINS)


def _stratum_masks(cells: MarginalCells, subset: np.ndarray | None) -> dict[str, np.ndarray]:
    base = np.ones(cells.cells, dtype=bool) if subset is None else subset
    out = {ALL: base}
    for i, lab in enumerate(_LABELS):
        out[lab] = base & (cells.stratum == i)
    return out


class _L1Analysis:
    """L1 error, its ratio to noise infusion, relative error, MSE — per stratum."""

    def __init__(self, experiment: str, workload: str, cells: MarginalCells, ni: FloatArray):
        self.experiment, self.workload, self.cells = experiment, workload, cells
        self.ni_l1 = np.abs(ni - cells.n).mean(axis=0)
        self.ni_rel = relative_abs_error(ni, cells.n).mean(axis=0)
        self.ni_summary = stratified_mean(self.ni_l1, cells.stratum, _LABELS)
        self.masks = _stratum_masks(cells, None)

    def baseline(self, rows: _Rows) -> None:
        ni = NOISE_INFUSION
        rel = stratified_mean(self.ni_rel, self.cells.stratum, _LABELS)
        for lab, (v, k) in self.ni_summary.items():
            rows.add(self.experiment, self.workload, ni, None, None, lab, "cells", k)
            if k:
                rows.add(self.experiment, self.workload, ni, None, None, lab, "l1", v)
                rows.add(self.experiment, self.workload, ni, None, None, lab, "rel_l1", rel[lab][0])

    def add(self, rows: _Rows, label: str, p: Point, noisy: FloatArray) -> None:
        err = np.abs(noisy - self.cells.n)
        l1 = err.mean(axis=0)
        sq = (err * err).mean(axis=0)
        rel = (err / (self.cells.n + 1.0)).mean(axis=0)
        s_l1 = stratified_mean(l1, self.cells.stratum, _LABELS)
        s_sq = stratified_mean(sq, self.cells.stratum, _LABELS)
        s_rel = stratified_mean(rel, self.cells.stratum, _LABELS)
        for lab, (v, k) in s_l1.items():
            if not k:
                continue
            a = (self.experiment, self.workload, label, p.alpha, p.epsilon, lab)
            rows.add(*a, "l1", v)
            rows.add(*a, "l1_ratio", l1_ratio(v, self.ni_summary[lab][0]))
            rows.add(*a, "rel_l1", s_rel[lab][0])
            rows.add(*a, "mse", s_sq[lab][0])
            m = self.masks[lab]
            rows.add(*a, "rel_within_10pp", share_within(rel[m], self.ni_rel[m], 0.10))


class _RankAnalysis:
    """Spearman correlation against the SDL ranking and against the truth — per stratum.

    The ranks of the SDL output and of the truth are computed once; each mechanism output
    is ranked once per stratum.
    """

    def __init__(
        self,
        experiment: str,
        workload: str,
        cells: MarginalCells,
        ni: FloatArray,
        subset: np.ndarray | None,
    ):
        self.experiment, self.workload, self.cells = experiment, workload, cells
        self.masks = {k: m for k, m in _stratum_masks(cells, subset).items() if m.sum() >= 2}
        self.ni_ranks = {k: average_ranks(ni[:, m]) for k, m in self.masks.items()}
        self.truth_ranks = {k: average_ranks(cells.n[m]) for k, m in self.masks.items()}

    def baseline(self, rows: _Rows) -> None:
        for lab, m in self.masks.items():
            a = (self.experiment, self.workload, NOISE_INFUSION, None, None, lab)
            rows.add(*a, "cells", int(m.sum()))
            r = pearson_rows(self.ni_ranks[lab], self.truth_ranks[lab])
            rows.add(*a, "spearman_truth", mean_finite(r))

    def add(self, rows: _Rows, label: str, p: Point, noisy: FloatArray) -> None:
        for lab, m in self.masks.items():
            rx = average_ranks(noisy[:, m])
            a = (self.experiment, self.workload, label, p.alpha, p.epsilon, lab)
            rows.add(*a, "spearman_sdl", mean_finite(pearson_rows(rx, self.ni_ranks[lab])))
            rows.add(*a, "spearman_truth", mean_finite(pearson_rows(rx, self.truth_ranks[lab])))


def count_points(experiment: str, grid: HaneyGrid) -> int:
    """Number of (run, point) evaluations an experiment performs (for progress bars)."""
    runs = {_ANALYSES[e][0] for e in experiments_of(experiment, EXPERIMENTS, _ORDER)}
    return len(runs) * sum(1 for _ in grid_points(grid))


def run_haney(
    experiment: str,
    dataset: Dataset | JobTables,
    *,
    grid: HaneyGrid | None = None,
    seed: int = 0,
    engine: Engine | None = None,
    progress: Callable[[str], None] | None = None,
    workers: int | None = None,
) -> HaneyResult:
    """Run one of :data:`EXPERIMENTS` on a dataset.

    Args:
        experiment: ``haney-workload1`` … ``haney-ranking2`` or ``haney-all``.
        dataset: the data (a :class:`~eree.evaluate.datasets.Dataset` or bare JobTables).
        grid: parameters (default: the paper's grid, 20 trials).
        seed: root seed of all randomness (recorded in the result).
        engine: the engine computing cell statistics (default Polars).
        progress: called once per evaluated (run, point) with a short description.
        workers: threads evaluating parameter points in parallel (default: the number
            of CPUs, at most 4). Results do not depend on it.

    Ctrl-C (:class:`KeyboardInterrupt`) while parameter points run keeps the finished
    points: the result is returned with ``meta["interrupted"]`` saying where it stopped
    (an interrupt before that propagates).

    Returns:
        Tidy results (:data:`CSV_COLUMNS`), the omitted points with reasons, and metadata
        (seed, grid, dataset, wall times).
    """
    t_start = time.perf_counter()
    workers = workers if workers is not None else min(4, os.cpu_count() or 1)
    grid = grid or HaneyGrid()
    engine = engine or PolarsEngine()
    data = dataset.data if isinstance(dataset, Dataset) else dataset
    description = dataset.description if isinstance(dataset, Dataset) else {}
    exps = experiments_of(experiment, EXPERIMENTS, _ORDER)
    runs_needed = [r for r in _RUNS if any(_ANALYSES[e][0] == r for e in exps)]
    timings: dict[str, float] = {}

    # cell statistics, once per marginal
    t0 = time.perf_counter()
    est_size = establishment_sizes(data)
    place_pop = engine.cell_statistics(data, [PLACE], []).select(
        PLACE, pl.col("count").alias("__pop")
    )
    marginals: dict[tuple[str, ...], MarginalCells] = {}
    for r in runs_needed:
        wk = _RUNS[r].worker_by
        if wk not in marginals:
            marginals[wk] = marginal_cells(
                data,
                engine,
                ESTABLISHMENT_ATTRIBUTES,
                wk,
                est_size=est_size,
                place_population=place_pop,
            )
    timings["cell_statistics"] = time.perf_counter() - t0

    # noise infusion: one factor vector per trial for the whole dataset (time-invariant)
    t0 = time.perf_counter()
    T = grid.trials
    factors = draw_distortion_factors(
        data.n_workplaces,
        SeededNoise(derive_seed(seed, "noise_infusion/factors")),
        s=grid.s,
        t=grid.t,
        trials=T,
    )
    ni_out: dict[tuple[str, ...], FloatArray] = {}
    for wk, cells in marginals.items():
        src = SeededNoise(derive_seed(seed, f"noise_infusion/small_cells/{'*'.join(wk)}"))
        ni_out[wk] = noise_infusion(
            cells.n,
            cells.pair_cell,
            cells.pair_est,
            cells.pair_h,
            factors,
            src,
            small_cell=grid.small_cell,
        ).noisy
    del factors
    timings[NoiseInfusion.name] = time.perf_counter() - t0

    rows = _Rows(T)
    omitted: list[dict[str, Any]] = []
    interrupted: str | None = None
    for r in runs_needed:
        if interrupted is not None:
            break
        t0 = time.perf_counter()
        run = _RUNS[r]
        cells = marginals[run.worker_by]
        ni = ni_out[run.worker_by]
        analyses: list[_L1Analysis | _RankAnalysis] = []
        for e in exps:
            if _ANALYSES[e][0] != r:
                continue
            if _ANALYSES[e][1] == "l1":
                analyses.append(_L1Analysis(e, run.workload, cells, ni))
            else:
                subset = cells.mask(RANKING2_CELL) if e == "haney-ranking2" else None
                wl = (
                    "tract*naics_sector*ownership [sex=F, education=E4 single queries]"
                    if subset is not None
                    else run.workload
                )
                analyses.append(_RankAnalysis(e, wl, cells, ni, subset))
        for an in analyses:
            an.baseline(rows)

        def evaluate(
            p: Point,
            cells: MarginalCells = cells,
            run: _Run = run,
            analyses: list[_L1Analysis | _RankAnalysis] = analyses,
        ) -> _Rows:
            mech = mechanism_for(p, cells.d, run.per_cell_divisor, grid.delta)
            src = SeededNoise(derive_seed(seed, f"{run.name}/{p.label}/{p.alpha}/{p.epsilon}"))
            outs = run_point(p, mech, cells, T, src)
            if not grid.extras:
                outs.pop("log_laplace_unbiased", None)
            if grid.postprocessed:
                for label in list(outs):
                    outs[label + POSTPROCESSED] = postprocessed(outs[label])
            local = _Rows(T)
            for label, noisy in outs.items():
                for an in analyses:
                    an.add(local, label, p, noisy)
            return local

        todo: list[Point] = []
        for p in grid_points(grid):
            eps_cell = per_cell_epsilon(p, cells.d, run.per_cell_divisor)
            reason = omission_reason(p, cells.d, run.per_cell_divisor, grid.delta)
            if reason is None:
                todo.append(p)
                continue
            if progress is not None:
                progress(f"{r}: {p.label} alpha={p.alpha} eps={p.epsilon} (omitted)")
            for an in analyses:
                omitted.append(
                    {
                        "experiment": an.experiment,
                        "mechanism": p.label,
                        "alpha": p.alpha,
                        "epsilon": p.epsilon,
                        "epsilon_cell": eps_cell,
                        "rule": omission_rule(p, grid.delta),
                        "reason": reason,
                    }
                )
        # points in parallel threads (numpy releases the GIL); rows kept in grid order
        pool = ThreadPoolExecutor(max_workers=max(1, workers))
        done = 0
        try:
            for p, local in zip(todo, pool.map(evaluate, todo), strict=True):
                rows.rows.extend(local.rows)
                done += 1
                if progress is not None:
                    progress(f"{r}: {p.label} alpha={p.alpha} eps={p.epsilon}")
        except KeyboardInterrupt:
            interrupted = (
                f"interrupted (Ctrl-C) during run {r!r} after {done} of {len(todo)} parameter "
                "points of that run: the results are partial"
            )
        while interrupted is not None:  # one Ctrl-C can raise twice (see absorb_echo)
            try:
                absorb_echo()
                break
            except KeyboardInterrupt:
                continue
        # Ctrl-C: keep the finished points, drop the queued ones (docs/design.md#command-line)
        pool.shutdown(wait=True, cancel_futures=interrupted is not None)
        timings[f"run_{r}"] = time.perf_counter() - t0
    del ni_out
    timings["total"] = time.perf_counter() - t_start

    results = pl.DataFrame(rows.rows, schema=TIDY_SCHEMA)
    omitted_df = pl.DataFrame(
        omitted,
        schema={
            "experiment": pl.Utf8,
            "mechanism": pl.Utf8,
            "alpha": pl.Float64,
            "epsilon": pl.Float64,
            "epsilon_cell": pl.Float64,
            "rule": pl.Utf8,
            "reason": pl.Utf8,
        },
    )
    meta = {
        "experiment": experiment,
        "experiments": exps,
        "seed": seed,
        "random": "seeded (numpy PCG64 via eree SeededNoise): reproducible, NOT FOR PUBLICATION",
        "grid": asdict(grid),
        "dataset": description,
        "place": PLACE,
        "population": "employment of the place (tract): total jobs, all sectors and ownerships",
        "population_bins": [b[2] for b in POPULATION_BINS],
        "cells": {"*".join(k) or "establishment attributes": v.cells for k, v in marginals.items()},
        "worker_combinations_d": {"*".join(k) or "none": v.d for k, v in marginals.items()},
        "seconds": timings,
        "workers": workers,
    }
    if interrupted is not None:
        meta["interrupted"] = interrupted
    return HaneyResult(results, omitted_df, meta)
