r"""The attacks of Haney et al. §5.2 on input noise infusion, as runnable demonstrations.

Each attack targets a workplace combination (tract × NAICS sector × ownership) that holds
exactly **one** establishment — the number of establishments in a cell is public
(docs/design.md#er-ee-data), and the paper notes an adversary can know such cells exist. It is run
against input noise infusion and, with the same attacker, against every formal mechanism:

1. **Shape disclosure** (violates Def. 4.3). Release the marginal workplace × sex × age
   (the paper's example cell is "males, age 20–25"). In a one-establishment combination
   every published cell is f_w·h(w, c) with the *same* factor, so the published
   proportions are the true proportions. The attacker normalises the published
   (non-negative parts of the) cells; success = every proportion exact (to 1e-9).
2. **Size reconstruction from one known cell** (violates Def. 4.2). The attacker also
   knows one true cell count h(w, c*) (the paper's "100 males aged 20–25"; here the
   largest cell). Then f̂ = published(c*)/h(w, c*) is the factor, and published/f̂
   reconstructs every cell and the establishment's total employment. Against additive
   mechanisms the attacker also tries h(w, c*) + Σ_{c≠c*} published(c) and keeps
   whichever succeeds (generous to the attacker). Success = total exact (error < ½).
3. **Attribute disclosure through preserved zeros** (violates Def. 4.1). Release
   workplace × education × sex × age. The attacker knows the establishment has exactly
   one worker with a bachelor's degree or more (E4). Zeros stay zero under noise
   infusion, so the only non-zero E4 cell gives that worker's sex and age. The attacker
   guesses the E4 cell with the largest published value; success = the guess is the
   worker's true (sex, age).

Targets of attacks 1–2 are the one-establishment combinations with at least two
non-empty cells, all above the small-cell limit S (the paper's condition; an attacker
can see it, since small-cell replacements publish the exact integers 1…⌊S⌋ while
infused cells are non-integers). Every cell is released as a single query with the
audit's ε (the regime most favourable to the attacker; a whole marginal would give each
cell ε/d). For reference the report gives what each attack achieves by chance and, for
attack 3, the bound a pure ε-guarantee puts on any attacker who starts from a uniform
prior: moving one worker between two cells changes two counts by one, each a weak
α-neighbour step, so the likelihood ratio is at most e^{2ε} and the success probability
over k options at most e^{2ε}/(e^{2ε} + k − 1).

Published counts are rounded to the public grid (1 job, docs/privacy.md), so a formal
mechanism publishes a cell exactly with its own probability P(|noise| < ½); exact patterns
against the formal mechanisms happen at that rate, not never.

This module prints true values of the (synthetic) data in its examples: that is what an
audit on synthetic data is for. It is not on the release path.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from eree.data.job_tables import JobTables
from eree.engine.base import Engine
from eree.engine.polars.engine import PolarsEngine
from eree.errors import PrivacyParameterError, SpecError
from eree.evaluate.datasets import Dataset
from eree.evaluate.haney import (
    ESTABLISHMENT_ATTRIBUTES,
    MarginalCells,
    Point,
    derive_seed,
    marginal_cells,
    mechanism_for,
    run_point,
)
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

SHAPE_WORKER_ATTRIBUTES: tuple[str, ...] = ("sex", "age")
ZEROS_WORKER_ATTRIBUTES: tuple[str, ...] = ("education", "sex", "age")
#: the attribute value the attacker knows exactly one employee has
ZEROS_KNOWN: tuple[str, str] = ("education", "E4")
ATTACKS = ("shape", "size", "zeros")
EXACT = 1e-9


@dataclass(frozen=True)
class AttackOutcome:
    """Success of one attack against one mechanism, over all targets and trials."""

    attack: str
    mechanism: str
    targets: int
    trials: int
    success_rate: float
    chance_rate: float  # NaN where guessing cannot succeed (exact shares or sizes)
    bound: float | None = None
    detail: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        d = {
            "attack": self.attack,
            "mechanism": self.mechanism,
            "targets": self.targets,
            "trials": self.trials,
            "success_rate": self.success_rate,
            "chance_rate": self.chance_rate,
            "bound": self.bound,
        }
        d.update(self.detail)
        return d


@dataclass
class AuditResult:
    """The success rates of the §5.2 attacks per mechanism."""

    outcomes: list[AttackOutcome]
    examples: dict[str, pl.DataFrame]
    meta: dict[str, Any]

    def table(self) -> pl.DataFrame:
        """One row per (attack, mechanism) with its success rate."""
        return pl.DataFrame([o.to_dict() for o in self.outcomes])

    def success(self, attack: str, mechanism: str) -> float:
        """The success rate of ``attack`` against ``mechanism``."""
        for o in self.outcomes:
            if o.attack == attack and o.mechanism == mechanism:
                return o.success_rate
        raise KeyError((attack, mechanism))


def default_points(alpha: float, epsilon: float, theta: float) -> list[Point]:
    """The mechanisms the audit attacks at one (α, ε, θ)."""
    return [
        Point(LogLaplace.name, epsilon, alpha),
        Point(SmoothGamma.name, epsilon, alpha),
        Point(SmoothLaplace.name, epsilon, alpha),
        Point(EdgeLaplace.name, epsilon),
        Point(TruncatedLaplace.name, epsilon, None, theta),
    ]


def _blocks(cells: MarginalCells, workplace_by: Sequence[str]) -> int:
    """Cells come in contiguous blocks of d per workplace combination (engine sort order)."""
    d = cells.d
    if cells.cells % d:
        raise SpecError("the marginal is not a full cross of workplace combinations and d cells")
    wp = cells.keys.select(list(workplace_by))
    first = wp.gather(np.arange(0, cells.cells, d)).select(
        [pl.col(c).repeat_by(d).explode() for c in workplace_by]
    )
    if not wp.equals(first):
        raise SpecError("cells are not grouped by workplace combination")
    return cells.cells // d


def _releases(
    cells: MarginalCells,
    points: Sequence[Point],
    trials: int,
    seed: int,
    tag: str,
    factors: FloatArray,
    small_cell: float,
) -> tuple[dict[str, FloatArray], dict[str, str]]:
    """Published values of every mechanism, shape (trials, cells); and skipped points."""
    out: dict[str, FloatArray] = {}
    skipped: dict[str, str] = {}
    src = SeededNoise(derive_seed(seed, f"audit/{tag}/noise_infusion"))
    out[NoiseInfusion.name] = noise_infusion(
        cells.n, cells.pair_cell, cells.pair_est, cells.pair_h, factors, src,
        small_cell=small_cell,
    ).noisy  # fmt: skip
    for p in points:
        label = p.label
        try:  # ε per cell; Smooth Laplace at its δ_min
            mech = mechanism_for(p, 1, False, None)
        except PrivacyParameterError as e:
            skipped[label] = str(e)
            continue
        src = SeededNoise(derive_seed(seed, f"audit/{tag}/{p.label}"))
        res = run_point(p, mech, cells, trials, src)
        out[label] = res[p.label]
    return out, skipped


def _shape_targets(h: FloatArray, establishments: np.ndarray, small_cell: float) -> np.ndarray:
    """One-establishment blocks with >= 2 non-empty cells, all of them >= S."""
    nonzero = h > 0
    ok = (establishments == 1) & (nonzero.sum(axis=1) >= 2)
    ok &= ~np.any(nonzero & (h < small_cell), axis=1)
    return np.flatnonzero(ok)


def shape_and_size(
    cells: MarginalCells,
    releases: dict[str, FloatArray],
    small_cell: float,
) -> tuple[list[AttackOutcome], pl.DataFrame]:
    """Attacks 1 and 2 on a marginal workplace × worker attributes."""
    d = cells.d
    nb = cells.cells // d
    h = cells.n.reshape(nb, d)
    est = cells.establishments.reshape(nb, d)[:, 0]
    targets = _shape_targets(h, est, small_cell)
    outcomes: list[AttackOutcome] = []
    example = pl.DataFrame()
    if targets.size == 0:
        return outcomes, example
    ht = h[targets]  # (k, d)
    total = ht.sum(axis=1)
    p_true = ht / total[:, None]
    star = np.argmax(ht, axis=1)
    known = ht[np.arange(targets.size), star]
    for mech, y_all in releases.items():
        trials = y_all.shape[0]
        y = y_all.reshape(trials, nb, d)[:, targets, :]  # (T, k, d)
        pos = np.maximum(y, 0.0)
        s = pos.sum(axis=2, keepdims=True)
        p_hat = np.where(s > 0, pos / np.where(s > 0, s, 1.0), 1.0 / d)
        err = np.abs(p_hat - p_true[None]).max(axis=2)
        tv = 0.5 * np.abs(p_hat - p_true[None]).sum(axis=2)
        shape_ok = err < EXACT
        outcomes.append(
            AttackOutcome(
                "shape", mech, int(targets.size), trials, float(shape_ok.mean()), math.nan, None,
                {"mean_total_variation": float(tv.mean())},
            )
        )  # fmt: skip
        y_star = y[:, np.arange(targets.size), star]  # (T, k)
        with np.errstate(divide="ignore", invalid="ignore"):
            f_hat = y_star / known[None]
            x_factor = np.where(f_hat > 0, y.sum(axis=2) / f_hat, np.nan)
            cells_factor = y / f_hat[..., None]
        x_add = known[None] + y.sum(axis=2) - y_star
        e_factor = np.abs(x_factor - total[None])
        e_add = np.abs(x_add - total[None])
        best = np.fmin(e_factor, e_add)
        ok = best < 0.5
        all_cells = np.all(np.abs(np.round(cells_factor) - ht[None]) < 0.5, axis=2)
        outcomes.append(
            AttackOutcome(
                "size", mech, int(targets.size), trials, float(ok.mean()), math.nan, None,
                {
                    "median_relative_error": float(np.nanmedian(best / total[None])),
                    "all_cells_reconstructed": float(np.mean(all_cells)),
                },
            )
        )  # fmt: skip
        if mech == NoiseInfusion.name:
            i = int(np.argmax(total))  # the largest target, first trial
            keys = cells.keys.slice(int(targets[i]) * d, d)
            example = keys.with_columns(
                pl.Series("true", ht[i]),
                pl.Series("published", y[0, i]),
                pl.Series("true_share", p_true[i]),
                pl.Series("recovered_share", p_hat[0, i]),
                pl.Series("reconstructed_from_known_cell", cells_factor[0, i]),
            )
    return outcomes, example


def preserved_zeros(
    cells: MarginalCells,
    releases: dict[str, FloatArray],
    epsilon: float,
) -> tuple[list[AttackOutcome], pl.DataFrame]:
    """Attack 3 on a marginal workplace × education × sex × age."""
    attr, val = ZEROS_KNOWN
    d = cells.d
    nb = cells.cells // d
    in_known = cells.keys[attr].to_numpy()[:d] == val  # same pattern in every block
    h = cells.n.reshape(nb, d)[:, in_known]  # (nb, k)
    k = int(in_known.sum())
    est = cells.establishments.reshape(nb, d)[:, 0]
    targets = np.flatnonzero((est == 1) & (h.sum(axis=1) == 1))
    outcomes: list[AttackOutcome] = []
    example = pl.DataFrame()
    if targets.size == 0:
        return outcomes, example
    truth = np.argmax(h[targets], axis=1)
    # chance: guess the most common (other attributes) among all workers with the value
    modal = int(np.argmax(h.sum(axis=0)))
    chance = float(np.mean(truth == modal))
    bound = math.exp(2 * epsilon) / (math.exp(2 * epsilon) + k - 1)
    for mech, y_all in releases.items():
        trials = y_all.shape[0]
        y = y_all.reshape(trials, nb, d)[:, targets][:, :, in_known]  # (T, t, k)
        guess = np.argmax(y, axis=2)
        ok = guess == truth[None]
        unique_nonzero = float(np.mean((y != 0).sum(axis=2) == 1))
        outcomes.append(
            AttackOutcome(
                "zeros", mech, int(targets.size), trials, float(ok.mean()), chance,
                None if mech == NoiseInfusion.name else bound,
                {"share_with_one_nonzero_cell": unique_nonzero},
            )
        )  # fmt: skip
        if mech == NoiseInfusion.name:
            i = 0
            keys = cells.keys.slice(int(targets[i]) * d, d).filter(pl.Series(in_known))
            example = keys.with_columns(
                pl.Series("true", h[targets[i]]), pl.Series("published", y[0, i])
            )
    return outcomes, example


def run_attacks(
    dataset: Dataset | JobTables,
    *,
    alpha: float = 0.1,
    epsilon: float = 1.0,
    theta: float = 50.0,
    trials: int = 20,
    seed: int = 0,
    s: float = DEFAULT_S,
    t: float = DEFAULT_T,
    small_cell: float = SMALL_CELL_LIMIT,
    attacks: Sequence[str] = ATTACKS,
    engine: Engine | None = None,
) -> AuditResult:
    """Run the §5.2 attacks against noise infusion and the formal mechanisms.

    Args:
        dataset: the (synthetic) data.
        alpha, epsilon: parameters of the ER-EE mechanisms and ε of the DP baselines; every
            cell is released as a single query with this ε.
        theta: truncation threshold of the node-DP baseline.
        trials: independent releases (noise-infusion factors are redrawn per trial).
        seed: root seed (seeded randomness, not for publication).
        s, t, small_cell: noise-infusion parameters.
        attacks: a subset of ``("shape", "size", "zeros")``.
    """
    unknown = [a for a in attacks if a not in ATTACKS]
    if unknown:
        raise SpecError(f"unknown attack(s) {unknown}; choose from {', '.join(ATTACKS)}")
    engine = engine or PolarsEngine()
    data = dataset.data if isinstance(dataset, Dataset) else dataset
    points = default_points(alpha, epsilon, theta)
    factors = draw_distortion_factors(
        data.n_workplaces, SeededNoise(derive_seed(seed, "audit/factors")), s=s, t=t,
        trials=trials,
    )  # fmt: skip
    outcomes: list[AttackOutcome] = []
    examples: dict[str, pl.DataFrame] = {}
    skipped: dict[str, str] = {}
    if "shape" in attacks or "size" in attacks:
        cells = marginal_cells(data, engine, ESTABLISHMENT_ATTRIBUTES, SHAPE_WORKER_ATTRIBUTES)
        _blocks(cells, ESTABLISHMENT_ATTRIBUTES)
        rel, sk = _releases(cells, points, trials, seed, "shape", factors, small_cell)
        skipped.update(sk)
        oc, ex = shape_and_size(cells, rel, small_cell)
        outcomes += [o for o in oc if o.attack in attacks]
        if not ex.is_empty():
            examples["shape_and_size"] = ex
        del rel
    if "zeros" in attacks:
        cells = marginal_cells(data, engine, ESTABLISHMENT_ATTRIBUTES, ZEROS_WORKER_ATTRIBUTES)
        _blocks(cells, ESTABLISHMENT_ATTRIBUTES)
        rel, sk = _releases(cells, points, trials, seed, "zeros", factors, small_cell)
        skipped.update(sk)
        oc, ex = preserved_zeros(cells, rel, epsilon)
        outcomes += oc
        if not ex.is_empty():
            examples["zeros"] = ex
    meta = {
        "alpha": alpha,
        "epsilon_per_cell": epsilon,
        "theta": theta,
        "trials": trials,
        "seed": seed,
        NoiseInfusion.name: {"s": s, "t": t, "small_cell": small_cell},
        "skipped": skipped,
        "dataset": dataset.description if isinstance(dataset, Dataset) else {},
        "random": "seeded: reproducible, NOT FOR PUBLICATION",
    }
    return AuditResult(outcomes, examples, meta)
