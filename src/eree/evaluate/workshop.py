r"""Figure 1 of the workshop version of Haney et al. (``papers/002_*``, §6), regenerated.

Experiment ``workshop-figure1``: the L1 error of the workshop variants of Log-Laplace,
Smooth Gamma and Smooth Laplace (:mod:`eree.mechanisms.workshop`) as a ratio to the error
of input noise infusion, on four marginals of growing detail:

=========================  ====================================  ==========  ==============
workload                   attributes                            paper cells PA-derived
=========================  ====================================  ==========  ==============
``workplace``              tract × NAICS sector × ownership      94,363      see ``run.json``
``workplace*age``          + age (3)                             283,089
``workplace*age*sex``      + age × sex (3 × 2)                   566,178
``workplace*age*sex*race`` + age × sex × race (3 × 2 × 6)        3,397,068
=========================  ====================================  ==========  ==============

for ε ∈ {0.25, 0.5, 0.67, 1, 2, 4} and α ∈ {0.01, 0.05, 0.1, 0.15, 0.2} (the SIGMOD
grid; the workshop does not list its α values), 20 trials, L1 error averaged over all
cells and trials. The SIGMOD variants (:mod:`eree.mechanisms.er_ee`) run on the same cells
for comparison (``variants``).

**What "ε" is.** The workshop releases every cell of a marginal with the same ε and
claims parallel composition (§5). That does not hold for worker-attribute cells under its
own α-closeness rule (one establishment's cells all change at once); eree's accountant
charges d·ε for such a marginal (d = 3, 6, 36 here). The figure, like the paper, uses
ε *per cell*; the correct cost of each marginal is in ``run.json`` (``d``).

**Points omitted** as the paper omits them: Log-Laplace when λ = 2 ln(1+α)/ε ≥ 1
(Lemma 5.2), workshop Smooth Gamma when α + 1 > e^{ε/4} (Alg 3), SIGMOD Smooth Gamma
when α + 1 ≥ e^{ε/5}. Smooth Laplace is always plotted, at the smallest δ its condition
allows (δ = exp(−ε/(2 ln(1+α))), §6: "δ does not affect the amount of noise added"), for
both variants; the δ of every point is in the CSV (metric ``delta``) — it is large where
ε is small and α large (0.50 at α = 0.2, ε = 0.25).

**Evaluated quantity.** The mechanisms' raw outputs ñ (what the paper plots); for
Log-Laplace the bias-corrected n̂ is reported too (``log_laplace_unbiased/...``).

**Baseline.** :mod:`eree.mechanisms.noise_infusion` (ramp distortion, s = 0.05,
t = 0.15, small cells (0, 2.5) → uniform {1, 2}); one factor vector per trial shared by
the four marginals (time-invariant), drawn from the same seed stream as
``haney-workload1`` so the baselines of the two experiments agree.

**Strata.** All cells, and the population bins of docs/design.md#evaluation by the tract's
employment (as in :mod:`eree.evaluate.haney`); the workshop reports all cells only.

**Randomness.** Seeded, one :class:`~eree.mechanisms.noise.SeededNoise` per (workload,
mechanism, α, ε), derived from the run's seed and the point's name; trials are drawn in
vectorised blocks of ``(trials, cells)``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from eree.engine.base import Engine
from eree.engine.polars.engine import PolarsEngine
from eree.errors import PrivacyParameterError, SpecError
from eree.evaluate.datasets import Dataset
from eree.evaluate.haney import (
    CSV_COLUMNS,
    ESTABLISHMENT_ATTRIBUTES,
    PLACE,
    MarginalCells,
    derive_seed,
    establishment_sizes,
    marginal_cells,
)
from eree.evaluate.metrics import (
    ALL,
    POPULATION_BINS,
    TIDY_SCHEMA,
    l1_ratio,
    stratified_mean,
    tidy_row,
)
from eree.mechanisms import registry
from eree.mechanisms.base import Cells, Measurement, Mechanism
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
from eree.privacy.blowfish import (
    workshop_smooth_laplace_delta_min,
)

__all__ = [
    "EXPERIMENT",
    "PAPER_CELLS",
    "WORKLOADS",
    "WorkshopGrid",
    "WorkshopResult",
    "plot_figure1",
    "run_workshop_figure1",
    "write_workshop_outputs",
]

EXPERIMENT = "workshop-figure1"
#: workload name → worker attributes crossed with tract × sector × ownership
WORKLOADS: dict[str, tuple[str, ...]] = {
    "workplace": (),
    "workplace*age": ("age",),
    "workplace*age*sex": ("age", "sex"),
    "workplace*age*sex*race": ("age", "sex", "race"),
}
#: the paper's cell counts (3-state LODES sample, 2011)
PAPER_CELLS: dict[str, int] = {
    "workplace": 94_363,
    "workplace*age": 283_089,
    "workplace*age*sex": 566_178,
    "workplace*age*sex*race": 3_397_068,
}
MECHANISMS: tuple[str, ...] = (LogLaplace.name, SmoothGamma.name, SmoothLaplace.name)
VARIANTS: tuple[str, ...] = ("workshop", "sigmod")
NOISE_INFUSION = NoiseInfusion.name
#: cells × trials drawn in one vectorised call (bounds memory to a few hundred MB)
BLOCK_ELEMENTS = 8_000_000

_LABELS = tuple(b[2] for b in POPULATION_BINS)


@dataclass(frozen=True)
class WorkshopGrid:
    """The parameter grid (defaults: the paper's ε, the SIGMOD α, 20 trials, both variants)."""

    epsilons: tuple[float, ...] = (0.25, 0.5, 0.67, 1.0, 2.0, 4.0)
    alphas: tuple[float, ...] = (0.01, 0.05, 0.1, 0.15, 0.2)
    trials: int = 20
    variants: tuple[str, ...] = VARIANTS
    workloads: tuple[str, ...] = tuple(WORKLOADS)
    additive: float = 1.0
    s: float = DEFAULT_S
    t: float = DEFAULT_T
    small_cell: float = SMALL_CELL_LIMIT

    def __post_init__(self) -> None:
        if self.trials < 1:
            raise SpecError("trials must be >= 1")
        if not (self.epsilons and all(e > 0 for e in self.epsilons)):
            raise SpecError("epsilons must be positive")
        if not (self.alphas and all(a > 0 for a in self.alphas)):
            raise SpecError("alphas must be positive")
        bad = [v for v in self.variants if v not in VARIANTS] or not self.variants
        if bad:
            raise SpecError(f"variants must be among {', '.join(VARIANTS)} (got {self.variants})")
        unknown = [w for w in self.workloads if w not in WORKLOADS] or not self.workloads
        if unknown:
            raise SpecError(f"workloads must be among {', '.join(WORKLOADS)}")


@dataclass
class WorkshopResult:
    """Tidy results (:data:`~eree.evaluate.haney.CSV_COLUMNS`), omitted points, run record."""

    results: pl.DataFrame
    omitted: pl.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)

    def ratio(
        self, workload: str, mechanism: str, alpha: float, epsilon: float, stratum: str = ALL
    ) -> float:
        """One plotted value: the L1 ratio of ``mechanism`` (e.g. "smooth_laplace/workshop")."""
        r = self.results.filter(
            (pl.col("workload") == workload)
            & (pl.col("mechanism") == mechanism)
            & (pl.col("alpha") == alpha)
            & (pl.col("epsilon") == epsilon)
            & (pl.col("stratum") == stratum)
            & (pl.col("metric") == "l1_ratio")
        )
        return float(r["value"][0]) if r.height else math.nan


# --------------------------------------------------------------------------- one point


def mechanism_for(
    mechanism: str, variant: str, alpha: float, epsilon: float, additive: float = 1.0
) -> Mechanism:
    """The registered mechanism object of one plotted point (ε per cell, Blowfish policy).

    The workshop's smooth variants are built **as printed** (S = α·x_V), to reproduce
    Figure 1: they break their claim at x_V < 1/α (docs/privacy-audit.md), so releases run
    eree's correction instead (:mod:`eree.mechanisms.workshop`, docs/errata.md).
    """
    e = registry.entry(mechanism, variant)
    kwargs: dict[str, Any] = {"query": f"{mechanism}/{variant}", "alpha": alpha,
                              "epsilon": epsilon, "definition": "blowfish"}  # fmt: skip
    if "additive" in e.settings:
        kwargs["additive"] = additive
    if variant == "workshop" and "as_printed" in e.cls.__dataclass_fields__:
        kwargs["as_printed"] = True
    return e.cls(**kwargs)


def omission_reason(
    mechanism: str, variant: str, alpha: float, epsilon: float, additive: float = 1.0
) -> str | None:
    """Why a point is not plotted (None: it is), from the mechanism object's own checks."""
    try:
        mechanism_for(mechanism, variant, alpha, epsilon, additive)
    except PrivacyParameterError as e:
        return str(e)
    return None


def _draw(
    mechanism: str,
    variant: str,
    n: FloatArray,
    x_v: FloatArray,
    alpha: float,
    epsilon: float,
    source: SeededNoise,
    additive: float,
) -> Measurement:
    mech = mechanism_for(mechanism, variant, alpha, epsilon, additive)
    return mech(Cells({"count": n, "x_v": x_v}), source)


def _blocks(trials: int, cells: int) -> list[tuple[int, int]]:
    size = max(1, min(trials, BLOCK_ELEMENTS // max(cells, 1)))
    return [(t, min(trials, t + size)) for t in range(0, trials, size)]


def point_errors(
    mechanism: str,
    variant: str,
    cells: MarginalCells,
    alpha: float,
    epsilon: float,
    trials: int,
    source: SeededNoise,
    additive: float = 1.0,
) -> dict[str, tuple[FloatArray, FloatArray]]:
    """Per-cell mean absolute and relative error over ``trials`` of one point.

    Returns:
        ``{label: (mean |ñ − n|, mean |ñ − n|/(n+1))}`` per cell; Log-Laplace adds the
        bias-corrected estimate as ``log_laplace_unbiased/<variant>``.
    """
    label = f"{mechanism}/{variant}"
    acc: dict[str, list[FloatArray]] = {}
    inv = 1.0 / (cells.n + 1.0)
    for t0, t1 in _blocks(trials, cells.cells):
        n = np.broadcast_to(cells.n, (t1 - t0, cells.cells))
        out = _draw(mechanism, variant, n, cells.x_v, alpha, epsilon, source, additive)
        outs = {label: out.noisy}
        if mechanism == LogLaplace.name:
            outs[f"log_laplace_unbiased/{variant}"] = out.estimate
        for k, v in outs.items():
            err = np.abs(v - n).sum(axis=0)
            a = acc.setdefault(k, [np.zeros(cells.cells), np.zeros(cells.cells)])
            a[0] += err
            a[1] += err * inv
        del out, outs
    return {k: (v[0] / trials, v[1] / trials) for k, v in acc.items()}


def noise_infusion_errors(
    cells: MarginalCells, factors: FloatArray, source: SeededNoise, small_cell: float
) -> tuple[FloatArray, FloatArray]:
    """Per-cell mean absolute and relative error of noise infusion over the factor rows."""
    trials = factors.shape[0]
    l1 = np.zeros(cells.cells)
    for t0, t1 in _blocks(trials, max(cells.cells, cells.pair_cell.size)):
        out = noise_infusion(
            cells.n, cells.pair_cell, cells.pair_est, cells.pair_h, factors[t0:t1], source,
            small_cell=small_cell,
        )  # fmt: skip
        l1 += np.abs(out.noisy - cells.n).sum(axis=0)
    l1 /= trials
    return l1, l1 / (cells.n + 1.0)


# --------------------------------------------------------------------------- the experiment


def _row(
    workload: str,
    mechanism: str,
    alpha: float | None,
    epsilon: float | None,
    stratum: str,
    metric: str,
    value: float,
    trials: int,
) -> dict[str, Any]:
    return tidy_row(
        EXPERIMENT, workload, mechanism, stratum, metric, value, trials,
        alpha=alpha, epsilon=epsilon,
    )  # fmt: skip


_SCHEMA = TIDY_SCHEMA


def count_points(grid: WorkshopGrid) -> int:
    """Number of (workload, mechanism, variant, α, ε) points (for progress bars)."""
    per = len(MECHANISMS) * len(grid.variants) * len(grid.alphas) * len(grid.epsilons)
    return len(grid.workloads) * per


def run_workshop_figure1(
    dataset: Dataset,
    *,
    grid: WorkshopGrid | None = None,
    seed: int = 0,
    engine: Engine | None = None,
    progress: Callable[[str], None] | None = None,
) -> WorkshopResult:
    """Run ``workshop-figure1`` on a dataset.

    Args:
        dataset: the data (:func:`eree.evaluate.datasets.load_dataset`).
        grid: parameters (default: 20 trials, the paper's ε, α ∈ {0.01, …, 0.2}, both
            variants, all four workloads).
        seed: root seed of all randomness.
        engine: engine for the cell statistics (default Polars).
        progress: called once per (workload, mechanism, variant, α, ε) point.

    Returns:
        Tidy results, the omitted points with the violated condition, and a run record
        (cell counts per workload next to the paper's, d, wall times).
    """
    t_start = time.perf_counter()
    grid = grid or WorkshopGrid()
    engine = engine or PolarsEngine()
    data = dataset.data
    T = grid.trials
    timings: dict[str, float] = {}

    t0 = time.perf_counter()
    est_size = establishment_sizes(data)
    place_pop = engine.cell_statistics(data, [PLACE], []).select(
        PLACE, pl.col("count").alias("__pop")
    )
    marginals: dict[str, MarginalCells] = {
        w: marginal_cells(
            data,
            engine,
            ESTABLISHMENT_ATTRIBUTES,
            WORKLOADS[w],
            est_size=est_size,
            place_population=place_pop,
        )
        for w in grid.workloads
    }
    timings["cell_statistics"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    factors = draw_distortion_factors(
        data.n_workplaces,
        SeededNoise(derive_seed(seed, "noise_infusion/factors")),
        s=grid.s,
        t=grid.t,
        trials=T,
    )
    ni: dict[str, tuple[FloatArray, FloatArray]] = {}
    for w, cells in marginals.items():
        # the labels of eree.evaluate.haney: the same seed gives haney-workload1's baseline
        src = SeededNoise(derive_seed(seed, f"noise_infusion/small_cells/{'*'.join(WORKLOADS[w])}"))
        ni[w] = noise_infusion_errors(cells, factors, src, grid.small_cell)
    del factors
    timings[NoiseInfusion.name] = time.perf_counter() - t0

    rows: list[dict[str, Any]] = []
    omitted: list[dict[str, Any]] = []
    for w, cells in marginals.items():
        t0 = time.perf_counter()
        ni_l1 = stratified_mean(ni[w][0], cells.stratum, _LABELS)
        ni_rel = stratified_mean(ni[w][1], cells.stratum, _LABELS)
        for lab, (v, k) in ni_l1.items():
            rows.append(_row(w, NOISE_INFUSION, None, None, lab, "cells", k, T))
            if k:
                rows.append(_row(w, NOISE_INFUSION, None, None, lab, "l1", v, T))
                rows.append(_row(w, NOISE_INFUSION, None, None, lab, "rel_l1", ni_rel[lab][0], T))
        for mech in MECHANISMS:
            for variant in grid.variants:
                for a in grid.alphas:
                    for eps in grid.epsilons:
                        label = f"{mech}/{variant}"
                        if progress is not None:
                            progress(f"{w}: {label} alpha={a:g} eps={eps:g}")
                        reason = omission_reason(mech, variant, a, eps, grid.additive)
                        if reason is not None:
                            omitted.append(
                                {"workload": w, "mechanism": label, "alpha": a,
                                 "epsilon": eps, "reason": reason}
                            )  # fmt: skip
                            continue
                        if mech == SmoothLaplace.name:
                            dmin = workshop_smooth_laplace_delta_min(a, eps)
                            rows.append(_row(w, label, a, eps, ALL, "delta", dmin, T))
                        src = SeededNoise(derive_seed(seed, f"{EXPERIMENT}/{w}/{label}/{a}/{eps}"))
                        errs = point_errors(mech, variant, cells, a, eps, T, src, grid.additive)
                        for lbl, (l1, rel) in errs.items():
                            s_l1 = stratified_mean(l1, cells.stratum, _LABELS)
                            s_rel = stratified_mean(rel, cells.stratum, _LABELS)
                            for lab, (v, k) in s_l1.items():
                                if not k:
                                    continue
                                rows.append(_row(w, lbl, a, eps, lab, "l1", v, T))
                                ratio = l1_ratio(v, ni_l1[lab][0])
                                rows.append(_row(w, lbl, a, eps, lab, "l1_ratio", ratio, T))
                                rows.append(_row(w, lbl, a, eps, lab, "rel_l1", s_rel[lab][0], T))
        timings[f"run_{w}"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - t_start

    meta = {
        "experiment": EXPERIMENT,
        "seed": seed,
        "random": "seeded (numpy PCG64 via eree SeededNoise): reproducible, NOT FOR PUBLICATION",
        "workshop_variants": (
            "the workshop's Smooth Gamma and Smooth Laplace AS PRINTED (S = alpha x_V), for "
            "reproducing Figure 1 only: they break their claim at x_V < 1/alpha "
            "(docs/privacy-audit.md); releases run eree's correction S = max(alpha x_V, 1)"
        ),
        "grid": asdict(grid),
        "dataset": dataset.description,
        "place": PLACE,
        "cells": {w: c.cells for w, c in marginals.items()},
        "paper_cells": {w: PAPER_CELLS[w] for w in marginals},
        "d": {w: c.d for w, c in marginals.items()},
        "epsilon": "per cell, as in the paper; eree's accountant charges d * epsilon per marginal",
        "smooth_laplace_delta": "delta_min = exp(-epsilon/(2 ln(1+alpha))) (both variants)",
        "seconds": timings,
    }
    return WorkshopResult(
        pl.DataFrame(rows, schema=_SCHEMA),
        pl.DataFrame(
            omitted,
            schema={
                "workload": pl.Utf8,
                "mechanism": pl.Utf8,
                "alpha": pl.Float64,
                "epsilon": pl.Float64,
                "reason": pl.Utf8,
            },
        ),
        meta,
    )


# --------------------------------------------------------------------------- figure and files

_TITLES = {
    LogLaplace.name: "Log-Laplace",
    SmoothGamma.name: "Smooth Gamma",
    SmoothLaplace.name: "Smooth Laplace",
}


def plot_figure1(
    result: WorkshopResult,
    path: str | Path,
    *,
    variants: Sequence[str] = ("workshop",),
    dpi: int = 130,
) -> Path:
    """The workshop's Figure 1: L1 error ratio to noise infusion against ε (log–log).

    One row per workload, one column per mechanism, one line per α; with both variants,
    workshop solid and SIGMOD dashed.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    df = result.results.filter((pl.col("stratum") == ALL) & (pl.col("metric") == "l1_ratio"))
    workloads = [w for w in WORKLOADS if w in result.meta.get("cells", {})]
    alphas = sorted(set(result.meta["grid"]["alphas"]))
    cmap = plt.get_cmap("viridis")
    colors = {a: cmap(i / max(len(alphas) - 1, 1)) for i, a in enumerate(alphas)}
    styles = {"workshop": "-", "sigmod": "--"}
    fig, axes = plt.subplots(
        len(workloads), len(MECHANISMS), figsize=(4.2 * len(MECHANISMS), 3.0 * len(workloads)),
        sharex=True, squeeze=False,
    )  # fmt: skip
    for i, w in enumerate(workloads):
        for j, mech in enumerate(MECHANISMS):
            ax = axes[i][j]
            for variant in variants:
                for a in alphas:
                    sub = df.filter(
                        (pl.col("workload") == w)
                        & (pl.col("mechanism") == f"{mech}/{variant}")
                        & (pl.col("alpha") == a)
                    ).sort("epsilon")
                    if sub.height == 0:
                        continue
                    ax.plot(
                        sub["epsilon"].to_numpy(), sub["value"].to_numpy(),
                        styles[variant], marker="o", ms=3, color=colors[a],
                        label=f"α={a:g}" + ("" if len(variants) == 1 else f" ({variant})"),
                    )  # fmt: skip
            ax.axhline(1.0, color="grey", lw=0.8, ls=":")
            ax.set_xscale("log")
            ax.set_yscale("log")
            cells = result.meta["cells"][w]
            ax.set_title(f"{_TITLES[mech]} — {w} ({cells:,} cells)", fontsize=8)
            if j == 0:
                ax.set_ylabel("L1 error / noise infusion")
            if i == len(workloads) - 1:
                ax.set_xlabel("ε (per cell)")
            ax.xaxis.set_minor_locator(NullLocator())
            ax.yaxis.set_minor_locator(NullLocator())
            ax.grid(True, which="major", lw=0.3, alpha=0.5)
            ax.set_xticks(result.meta["grid"]["epsilons"])
            ax.set_xticklabels([f"{e:g}" for e in result.meta["grid"]["epsilons"]], fontsize=7)
    handles, labels = axes[0][-1].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 5), fontsize=8)
    which = " vs ".join(variants)
    fig.suptitle(
        f"Workshop Figure 1 regenerated ({which}); {result.meta['grid']['trials']} trials",
        y=0.995,
        fontsize=10,
    )
    rows = math.ceil(len(handles) / 5) if handles else 0
    height = fig.get_figheight()
    fig.subplots_adjust(
        left=0.07, right=0.99, top=1 - 0.6 / height, bottom=(0.55 + 0.22 * rows) / height,
        hspace=0.32, wspace=0.2,
    )  # fmt: skip
    out = Path(path)
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return out


def write_workshop_outputs(
    result: WorkshopResult, out_dir: str | Path, *, dpi: int = 130
) -> dict[str, Path]:
    """Write ``results.csv``, ``omitted.csv``, ``run.json`` and the figures to ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "results": out / "results.csv",
        "omitted": out / "omitted.csv",
        "run": out / "run.json",
    }
    result.results.select(CSV_COLUMNS).write_csv(paths["results"])
    result.omitted.write_csv(paths["omitted"])
    paths["run"].write_text(json.dumps(result.meta, indent=2, default=str) + "\n")
    paths["figure"] = plot_figure1(result, out / "workshop_figure1.png", dpi=dpi)
    if "sigmod" in result.meta["grid"]["variants"]:
        paths["comparison"] = plot_figure1(
            result, out / "workshop_vs_sigmod.png", variants=result.meta["grid"]["variants"],
            dpi=dpi,
        )  # fmt: skip
    return paths
