r"""Appendix H of the QCEW paper (Webb et al.): the cost of estimated variances in Eq. 1.

Setting (docs/design.md#post-processing and docs/errata.md): ``n_counties`` = 50 counties with 2
establishments each, every establishment with 10 employees; three queries — ID (the
identity), County (group-by county), Total — each answered by the ψ-mechanism
(:math:`\omega = \psi(x) + N(0, \sigma^2)`, σ = γ/μ, μ = 1, γ = 0.5 for both ψ = √ and
ψ = log) and turned into unbiased estimates x̃ with Thm 6.6
(:mod:`eree.mechanisms.estimators`). The microdata are then reconstructed with Eq. 1
(:func:`eree.postprocess.wls.solve_wls`, exact tree solver) using

* **Est** — the published variance estimates v̂ for every query;
* **Act** — the true variances (not privacy-preserving; ablation only);
* **Hybrid** — v̂ for ID, true variances for County and Total;

and the mean squared error of the reconstructed ID, County and Total answers is
averaged over trials (Table 11). All trials are solved at once: trial t's counties and
total are separate groups of one large problem, which separates into the trials.

:data:`PAPER_TABLE11` holds the paper's numbers (1,000,000 trials).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl

from eree.mechanisms.estimators import (
    log_shift_estimate,
    log_shift_true_variance,
    log_shift_variance_estimate,
    sqrt_estimate,
    sqrt_true_variance,
    sqrt_variance_estimate,
)
from eree.postprocess.wls import GroupSumObservation, solve_wls

__all__ = ["PAPER_TABLE11", "STRATEGIES", "AblationResult", "webb_table11"]

STRATEGIES = ("Est", "Act", "Hybrid")
QUERIES = ("ID", "County", "Total")

#: Table 11 of the QCEW paper: ψ → strategy → query → MSE
PAPER_TABLE11: dict[str, dict[str, dict[str, float]]] = {
    "sqrt": {
        "Est": {"ID": 7.5, "County": 10.5, "Total": 624.4},
        "Act": {"ID": 7.6, "County": 10.0, "Total": 335.2},
        "Hybrid": {"ID": 7.5, "County": 10.1, "Total": 407.4},
    },
    "log": {
        "Est": {"ID": 18.0, "County": 40.0, "Total": 22_215.3},
        "Act": {"ID": 23.7, "County": 37.9, "Total": 1_882.8},
        "Hybrid": {"ID": 19.2, "County": 35.0, "Total": 4_842.6},
    },
}


@dataclass(frozen=True)
class AblationResult:
    """MSEs of one ψ setting.

    Attributes:
        psi: ``"sqrt"`` or ``"log"``.
        trials: number of trials.
        mse: strategy → query → mean squared error.
        se: strategy → query → Monte Carlo standard error of that MSE (standard
            deviation of the per-trial mean squared errors / √trials).
    """

    psi: str
    trials: int
    mse: dict[str, dict[str, float]]
    se: dict[str, dict[str, float]]

    def to_frame(self) -> pl.DataFrame:
        """Tidy rows: psi, strategy, query, mse, se, paper (Table 11), trials."""
        rows = [
            {
                "neighbor": self.psi,
                "strategy": s,
                "query": q,
                "mse": self.mse[s][q],
                "se": self.se[s][q],
                "paper": PAPER_TABLE11[self.psi][s][q],
                "trials": self.trials,
            }
            for s in STRATEGIES
            for q in QUERIES
        ]
        return pl.DataFrame(rows)


def webb_table11(
    psi: Literal["sqrt", "log"] = "sqrt",
    *,
    trials: int = 20_000,
    seed: int = 0,
    n_counties: int = 50,
    per_county: int = 2,
    size: float = 10.0,
    gamma: float = 0.5,
    mu: float = 1.0,
) -> AblationResult:
    """Run the Appendix H ablation (Table 11) for one ψ.

    Args:
        psi: ``"sqrt"`` (ψ = √x) or ``"log"`` (ψ = log x; x = 10 > 0 throughout).
        trials: number of independent trials (the paper used 1,000,000).
        seed: seed of ``numpy.random.Generator``.
        n_counties, per_county, size: the dataset (50 × 2 establishments of 10).
        gamma, mu: distance and privacy parameter of every query (σ = γ/μ).

    Returns:
        :class:`AblationResult`.
    """
    if psi not in ("sqrt", "log"):
        raise ValueError(f"psi must be 'sqrt' or 'log', not {psi!r}")
    if min(trials, n_counties, per_county) < 1 or not (size > 0 and gamma > 0 and mu > 0):
        raise ValueError("trials, counties, establishments, size, gamma and mu must be > 0")
    rng = np.random.default_rng(seed)
    sigma = gamma / mu
    per_trial = n_counties * per_county
    n = trials * per_trial
    county = np.repeat(np.arange(trials * n_counties, dtype=np.intp), per_county)
    total = np.repeat(np.arange(trials, dtype=np.intp), per_trial)
    truth = {
        "ID": np.full(n, size),
        "County": np.full(trials * n_counties, size * per_county),
        "Total": np.full(trials, size * per_trial),
    }
    groups = {"ID": None, "County": county, "Total": total}

    def answer(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if psi == "sqrt":
            omega = np.sqrt(x) + rng.normal(0.0, sigma, x.size)
            est = sqrt_estimate(omega, sigma)
            return est, sqrt_variance_estimate(est, sigma), sqrt_true_variance(x, sigma)
        omega = np.log(x) + rng.normal(0.0, sigma, x.size)
        est = log_shift_estimate(omega, sigma, 0.0)
        return (
            est,
            log_shift_variance_estimate(est, sigma, 0.0),
            log_shift_true_variance(x, sigma, 0.0),
        )

    answers = {q: answer(truth[q]) for q in QUERIES}
    mse: dict[str, dict[str, float]] = {}
    se: dict[str, dict[str, float]] = {}
    for strategy in STRATEGIES:
        meas = []
        for q in QUERIES:
            est, v_hat, v_true = answers[q]
            use_true = strategy == "Act" or (strategy == "Hybrid" and q != "ID")
            meas.append(GroupSumObservation(q, groups[q], est, v_true if use_true else v_hat))
        x = solve_wls(n, meas, method="tree").x
        rec = {
            "ID": x,
            "County": np.bincount(county, x, trials * n_counties),
            "Total": np.bincount(total, x, trials),
        }
        mse[strategy], se[strategy] = {}, {}
        for q in QUERIES:
            sq = (rec[q] - truth[q]) ** 2
            per = sq.reshape(trials, -1).mean(axis=1)
            mse[strategy][q] = float(per.mean())
            se[strategy][q] = float(per.std(ddof=1) / math.sqrt(trials)) if trials > 1 else 0.0
    return AblationResult(psi, trials, mse, se)
