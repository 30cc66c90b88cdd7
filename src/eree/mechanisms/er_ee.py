r"""ER-EE mechanisms of Haney et al., SIGMOD 2017 (``papers/001_*``), SIGMOD version.

Notation for one cell v: n = true count, x_v = the largest number of matching workers in
any single establishment of the cell (Lemma 8.5).

Each mechanism is a frozen object built with the **query's** parameters: its whole ε (and
δ), α, and d, the number of worker-attribute combinations of the marginal (1 when it has
none). The object works out, once, the per-cell ε = ε/d (rounded down to a float, so that
d·ε_cell never exceeds the ε charged) and every scale derived from it; the cost it reports
and the noise it draws come from those same fields.

* :class:`LogLaplace` — Algorithm 1.
* :class:`SmoothGamma` — Algorithm 2.
* :class:`SmoothLaplace` — Algorithm 3.

Privacy definitions (§7, §8): a cell over establishment attributes only gets strong
(α, ε)-ER-EE privacy and the cells of a marginal partition the establishments (parallel
composition, Thm 7.4), so a marginal costs ε. A marginal with worker attributes gets weak
privacy only and costs d·ε_cell (sequential over the d combinations, §8); asking for
strong privacy there is refused. Under the workshop's Blowfish policy
(``definition = "blowfish"``) the same d·ε_cell is charged.

Several jobs per worker (docs/privacy.md#several-jobs-per-worker): with k, the most jobs
one worker contributes, a worker's presence changes at most k job records, each one
α-neighbour step of one cell. Every cell's noise is independent, so the worker costs
Σ_c f(m_c) ≤ k·f(1) over the cells c holding m_c of its jobs, f(1) the per-cell loss of
one job: ε_cell for the smooth mechanisms and the baselines, ln(1+α)/λ = ε_cell/2 for
Log-Laplace (:attr:`CountMechanism.job_share`). The mechanism draws with
ε_cell = ε / max(d, k·share), so the query's ε bounds both the establishment's α-change
(d·ε_cell) and the worker (k·share·ε_cell); δ likewise (:class:`ApproximateCountMechanism`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike
from typing_extensions import override

from eree.errors import PrivacyParameterError
from eree.mechanisms.base import Cells, ExpectedError, Measurement, Mechanism
from eree.mechanisms.error_law import laplace_within, log_laplace_within, smooth_gamma_within
from eree.mechanisms.noise import FloatArray, NoiseSource
from eree.mechanisms.sampling import (
    TRANSFORMED_GRID,
    VALUE_GRID,
    check_grid,
    exact_centre,
    log_laplace_scale_term,
    log_shift_centre,
    rounded_noisy,
    smooth_scale_term,
)
from eree.privacy.composition import Composition, Cost, EpsilonDeltaComposition, float_down
from eree.privacy.definitions import ALPHA_DEFINITIONS
from eree.privacy.er_ee_conditions import (
    check_alpha_epsilon,
    check_log_laplace,
    check_smooth_laplace,
    smooth_gamma_epsilons,
    smooth_laplace_delta_min,
)

__all__ = [
    "CountMechanism",
    "LogLaplace",
    "SmoothGamma",
    "SmoothLaplace",
    "log_laplace",
    "log_laplace_error",
    "log_laplace_expectation",
    "smooth_gamma",
    "smooth_laplace",
    "smooth_sensitivity",
]

SMOOTH_WITHHELD = (
    "withheld: the noise scale of a smooth-sensitivity mechanism depends on x_v, "
    "which is confidential (see docs/privacy.md)"
)


@dataclass(frozen=True, kw_only=True)
class CountMechanism(Mechanism):
    """Common fields of the ε-δ count mechanisms (ER-EE and the DP baselines).

    Attributes:
        query: the query's name (error messages name it).
        epsilon: the query's whole ε.
        worker_cells: d, the number of worker-attribute combinations (1 if none).
        worker_attributes: the query's worker attributes (empty: establishment only).
        definition: the privacy definition of the release.
        confidence: level of the published confidence intervals.
    """

    epsilon: float
    worker_cells: int = 1
    worker_attributes: tuple[str, ...] = ()
    definition: str = "eree-weak"
    confidence: float = 0.95
    #: the public grid the published values are rounded to, in the space the noise is
    #: added in (:mod:`eree.mechanisms.sampling`); None: the mechanism's default
    grid: float | None = None
    #: k, the most jobs one worker contributes ([data] max_jobs_per_worker; 1: one job)
    jobs_per_worker: int = 1

    #: a cell's privacy loss from one job of a worker, as a share of ε_cell
    #: (docs/privacy.md#several-jobs-per-worker)
    job_share: ClassVar[Fraction] = Fraction(1)
    #: whether the mechanism's guarantee is derived for workers with several jobs
    several_jobs: ClassVar[bool] = True

    #: the count mechanisms of this module run under the definitions stated at an α
    allowed_definitions: ClassVar[tuple[str, ...]] = ALPHA_DEFINITIONS
    #: the default grid: 1 job for counts (the true counts are integers)
    default_grid: ClassVar[float] = VALUE_GRID

    def __post_init__(self) -> None:
        if self.definition not in self.allowed_definitions:
            raise self._fail(
                f"mechanism {self.name!r} does not satisfy definition {self.definition!r}"
            )
        if isinstance(self.epsilon, bool) or not (
            isinstance(self.epsilon, int | float)
            and math.isfinite(self.epsilon)
            and self.epsilon > 0
        ):
            raise self._fail(f"epsilon must be a finite number > 0 (got {self.epsilon!r})")
        if self.worker_cells < 1:
            raise self._fail("the number of worker-attribute combinations must be ≥ 1")
        if not self.worker_attributes and self.worker_cells != 1:
            raise self._fail("d > 1 needs worker attributes")
        if self.worker_attributes and self.definition == "eree":
            raise self._fail(
                f"has worker attributes: {self.name} gives only weak ER-EE privacy for such "
                "cells (Haney et al. Thm 8.1, Lemmas 8.7, 9.2); strong ER-EE cannot be "
                'claimed. Use definition = "eree-weak".'
            )
        if not 0 < self.confidence < 1:
            raise self._fail(f"confidence must lie in (0, 1) (got {self.confidence!r})")
        k = self.jobs_per_worker
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise self._fail(f"jobs per worker must be a whole number ≥ 1 (got {k!r})")
        if k > 1 and not self.several_jobs:
            raise self._fail(
                "its guarantee is not derived for workers with several jobs "
                "([data] max_jobs_per_worker > 1); use the SIGMOD variant"
            )
        eps_cell = float_down(Fraction(self.epsilon) / self.epsilon_divisor())
        if not eps_cell > 0:
            raise self._fail("epsilon / d underflows to 0")
        object.__setattr__(self, "epsilon_cell", eps_cell)
        try:
            grid = check_grid(self.default_grid if self.grid is None else self.grid)
        except ValueError as e:
            raise self._fail(str(e)) from None
        object.__setattr__(self, "grid", grid)
        self._derive()

    @classmethod
    def cell_epsilon(cls, epsilon: float, worker_cells: int) -> float:
        """The ε each cell's noise is drawn with: ε/d, rounded down to a float.

        The one place a marginal's ε is split over its d worker-attribute combinations
        (weak ER-EE, §8); rounding down keeps d·ε_cell ≤ the ε charged.
        """
        return float_down(Fraction(epsilon) / worker_cells)

    def epsilon_divisor(self) -> Fraction:
        """D with ε_cell = ε/D: max(d, k·share) (docs/privacy.md#several-jobs-per-worker).

        d·ε_cell bounds an establishment's α-change over the d combinations (§8);
        k·share·ε_cell bounds a worker with k jobs. With k = 1 it is d, as
        :meth:`cell_epsilon`.
        """
        return max(Fraction(self.worker_cells), self.jobs_per_worker * self.job_share)

    def worker_cost(self) -> Cost:
        """One worker's privacy loss in this query, with up to k jobs.

        ε: k·share·ε_cell (each job a one-cell α-neighbour step, at most f(1) each, the
        cells' noises independent); δ: δ_cell·Σ_{i<k} e^{i·ε_cell} (group privacy when
        the k jobs share one cell, the worst case). ≤ :meth:`cost` by construction.
        """
        per = self.per_cell_cost()
        eps = Fraction(self.epsilon_cell) * self.jobs_per_worker * self.job_share
        delta = (per.exact_delta or 0) * Fraction(self.group_delta_factor())
        return Cost(epsilon=eps, delta=delta)

    def group_delta_factor(self) -> float:
        """Σ_{i<k} e^{i·ε_cell}, rounded up: the δ of k one-job steps, per δ_cell."""
        k = self.jobs_per_worker
        if k == 1:
            return 1.0
        g = math.fsum(math.exp(i * self.epsilon_cell) for i in range(k))
        for _ in range(k + 2):  # past the rounding of each exp and of the sum
            g = math.nextafter(g, math.inf)
        return g

    #: ε each cell's noise is drawn with (set in __post_init__ by :meth:`epsilon_divisor`)
    epsilon_cell: float = field(init=False, default=0.0)

    def _derive(self) -> None:
        """Validate the mechanism's own parameters and fix its derived scales."""

    @override
    @property
    def multiplicity(self) -> int:
        return self.worker_cells

    @override
    def composition(self) -> Composition:
        return EpsilonDeltaComposition(getattr(self, "alpha", None))

    @override
    def per_cell_cost(self) -> Cost:
        return Cost(epsilon=self.epsilon_cell, delta=0)

    @override
    def cost(self) -> Cost:
        """The query's cost: the ε asked for (≥ d·ε_cell, since ε_cell is rounded down)."""
        per = self.per_cell_cost()
        d = self.multiplicity
        delta = (per.exact_delta or 0) * d
        return Cost(epsilon=self.epsilon, delta=delta)

    def _query_level(self, message: str, min_query_epsilon: float | None) -> PrivacyParameterError:
        """A parameter error; for d > 1 it states the query-level ε needed."""
        if self.worker_cells > 1:
            message += (
                f" (per cell: the query's epsilon = {self.epsilon:g} is split over d = "
                f"{self.worker_cells} worker-attribute combinations, ε_cell = "
                f"{self.epsilon_cell:.6g}"
            )
            if min_query_epsilon is not None:
                message += f"; the query needs epsilon > {min_query_epsilon:.6g}"
            message += ")"
        return self._fail(message)

    def _strength(self) -> str:
        return "weak " if self.worker_attributes else ""

    def _composition_words(self) -> str:
        if self.worker_cells > 1:
            words = f"; d = {self.worker_cells} worker-attribute combinations composed sequentially"
        else:
            words = "; cells partition the establishments (parallel composition)"
        return words + self._jobs_words()

    def _jobs_words(self) -> str:
        """The guarantee for a worker with up to k jobs, when k > 1."""
        k = self.jobs_per_worker
        if k == 1:
            return ""
        w = self.worker_cost()
        words = f"; a worker with up to k = {k} jobs: ε={w.epsilon:.6g}"
        if w.exact_delta:
            words += f", δ={w.delta:.6g}"
        a = self.attribute_change_cost()
        if a is not None:
            words += f"; a change of such a worker's attributes: ε={a.epsilon:.6g}"
            if a.exact_delta:
                words += f", δ={a.delta:.6g}"
        return words

    def attribute_change_cost(self) -> Cost | None:
        """The privacy loss of a change of one worker's attributes, when k > 1.

        The change moves each of the worker's (at most k) counted jobs out of one cell of
        the marginal and into another: the cells left and the cells entered are disjoint,
        each side at most :meth:`worker_cost`, so by basic composition twice it (ε and δ).
        None when k = 1 or the query has no worker attributes (the change moves no job).
        """
        if self.jobs_per_worker == 1 or not self.worker_attributes:
            return None
        w = self.worker_cost()
        return Cost(epsilon=2 * (w.exact_epsilon or 0), delta=2 * (w.exact_delta or 0))

    def _definition_words(self, eps_delta: str) -> str:
        alpha = getattr(self, "alpha", None)
        if self.definition == "blowfish":
            v = "workshop" if self.variant == "workshop" else "sigmod"
            mech = f"{v} {self.name}"
            if getattr(self, "additive", None) is not None:
                mech += f", Δ={self.additive:g}"  # type: ignore[attr-defined]
            return f"(α={alpha:g}, {eps_delta}, G)-Blowfish privacy per cell ({mech})"
        return f"{self._strength()}(α={alpha:g}, {eps_delta})-ER-EE privacy per cell"

    @override
    def guarantee(self) -> str:
        per = self.per_cell_cost()
        ed = f"ε={self.epsilon_cell:.6g}"
        if per.exact_delta:
            ed += f", δ={float(per.exact_delta):.6g}"
        return self._definition_words(ed) + self._composition_words()

    def _base_params(self) -> dict[str, Any]:
        p: dict[str, Any] = {"alpha": getattr(self, "alpha", None), "grid": self.grid}
        if self.definition == "blowfish":
            p["variant"] = self.variant or "sigmod"
        return p


# --------------------------------------------------------------------------- Log-Laplace


def log_laplace_expectation(n: ArrayLike, alpha: float, epsilon: float) -> FloatArray:
    r"""Lemma 8.2: :math:`E[\tilde n] = (n+\gamma)/(1-\lambda^2) - \gamma`, γ = 1/α."""
    check_alpha_epsilon(alpha, epsilon)
    lam = 2.0 * math.log1p(alpha) / epsilon
    if lam >= 1:
        return np.full(np.shape(n), np.inf)
    gamma = 1.0 / alpha
    return (np.asarray(n, dtype=np.float64) + gamma) / (1.0 - lam * lam) - gamma


def laplace_quantile(scale: float, confidence: float) -> float:
    r"""Half-width of the central ``confidence`` interval of Lap(b): :math:`b\ln(1/(1-c))`."""
    return scale * math.log(1.0 / (1.0 - confidence))


def log_laplace_sd_factor(lam: float) -> float:
    r"""Sd of the bias-corrected n̂ over (n+γ): :math:`\sqrt{(1-\lambda^2)^2/(1-4\lambda^2)-1}`.

    Var e^η = 1/(1−4λ²) − 1/(1−λ²)² for η ~ Lap(λ); infinite for λ ≥ 1/2.
    """
    if lam >= 0.5:
        return math.inf
    return math.sqrt((1.0 - lam * lam) ** 2 / (1.0 - 4.0 * lam * lam) - 1.0)


def log_laplace_error(
    n: float, gamma: float, lam: float, confidence: float, grid: float = TRANSFORMED_GRID
) -> ExpectedError:
    r"""Error of the published Log-Laplace estimate at a true count n (Lemma 8.2).

    * std of :math:`\hat n`: :math:`(n+\gamma)` · :func:`log_laplace_sd_factor`.
    * :math:`E|\hat n-n| = (n+\gamma)(1-\lambda^2)E|e^\eta-c|`, c = 1/(1−λ²) = E e^η, in
      closed form: :math:`E|e^\eta-c| = 2E[(c-e^\eta)1\{\eta<\ln c\}]` with
      :math:`P(\eta<t)=1-e^{-t/\lambda}/2`, :math:`E[e^\eta 1\{\eta<0\}]=1/(2(1+\lambda))`,
      :math:`E[e^\eta 1\{0\le\eta<t\}]=(1-e^{t(1-1/\lambda)})/(2(1-\lambda))`.
    * CI width: :math:`E[\tilde n+\gamma](e^q-e^{-q}) = (n+\gamma)\,2\sinh(q)/(1-\lambda^2)`,
      q = :func:`laplace_quantile` (λ, c).
    * within(t): :func:`eree.mechanisms.error_law.log_laplace_within` on the log-space grid.
    Infinite for λ ≥ 1 (unbounded expectation).
    """
    if lam >= 1:
        return ExpectedError(math.inf, math.inf, math.inf, "lambda >= 1: unbounded expectation")
    base = n + gamma
    c = 1.0 / (1.0 - lam * lam)
    t = math.log(c)
    below = c * (1.0 - 0.5 * math.exp(-t / lam))
    below -= 0.5 / (1.0 + lam) + (1.0 - math.exp(t * (1.0 - 1.0 / lam))) / (2.0 * (1.0 - lam))
    q = laplace_quantile(lam, confidence)
    return ExpectedError(
        std=base * log_laplace_sd_factor(lam),
        mean_abs=base * (1.0 - lam * lam) * 2.0 * below,
        ci_width=base * c * 2.0 * math.sinh(q),
        within=log_laplace_within(n, gamma, lam, grid, q + grid / 2),
    )


def log_laplace_release(
    n: FloatArray,
    gamma: float,
    lam: float,
    source: NoiseSource,
    confidence: float,
    who: str,
    *,
    alpha: float,
    epsilon: float,
    additive: float = 1.0,
    grid: float = TRANSFORMED_GRID,
) -> Measurement:
    r"""The Log-Laplace draw and its published estimate, std and CI (Alg 1; workshop Alg 1).

    :math:`\tilde n = \exp(\omega) - \gamma` with
    :math:`\omega = \mathrm{round}_r(\ln(n+\gamma)+\eta)`, :math:`\eta\sim\mathrm{Lap}(\lambda)`:
    the log-space output rounded to the public grid r (γ = Δ/α and λ = 2 ln(1+α)/ε exact
    in the ideal mechanism; everything after ω is post-processing).
    Estimate :math:`\hat n = (\tilde n+\gamma)(1-\lambda^2)-\gamma` (unbiased, Lemma 8.2); CI
    from the pivot :math:`\ln(n+\gamma) = \ln(\tilde n+\gamma) - \eta` and the Laplace quantile
    :math:`q=\lambda\ln(1/(1-c))`; plug-in std
    :math:`(\max(\hat n,0)+\gamma)\sqrt{(1-\lambda^2)^2/(1-4\lambda^2)-1}` for λ < 1/2.
    """
    n = np.asarray(n, dtype=np.float64)
    omega = rounded_noisy(
        source, log_shift_centre(n, alpha, additive),
        [log_laplace_scale_term(alpha, epsilon, n.shape)], grid,
    )  # fmt: skip
    noisy = np.exp(omega) - gamma
    estimate = (noisy + gamma) * (1.0 - lam * lam) - gamma if lam < 1 else noisy.copy()
    q = laplace_quantile(lam, confidence) + grid / 2  # the rounding moves ω by ≤ r/2
    ci_low = (noisy + gamma) * math.exp(-q) - gamma
    ci_high = (noisy + gamma) * math.exp(q) - gamma
    if lam < 0.5:
        factor = log_laplace_sd_factor(lam)
        std = (np.maximum(estimate, 0.0) + gamma) * factor
        method = (
            f"exact {confidence:.0%} CI from the Laplace pivot ln(n+gamma) = ln(noisy+gamma)"
            f" - eta with public lambda, widened by half the log-space grid; std: plug-in "
            "estimate of the sd of the "
            f"bias-corrected estimate ({who})"
        )
        return Measurement(noisy, estimate, std, ci_low, ci_high, method, "estimated")
    method = (
        f"exact {confidence:.0%} CI from the Laplace pivot with public lambda; std withheld: "
        "the variance is infinite for lambda >= 1/2"
    )
    return Measurement(noisy, estimate, None, ci_low, ci_high, method, "withheld")


@dataclass(frozen=True, kw_only=True)
class LogLaplace(CountMechanism):
    r"""Log-Laplace mechanism (Haney et al. Algorithm 1): γ = 1/α, λ = 2 ln(1+α)/ε_cell.

    λ ≥ 1 (unbounded expectation, Lemma 8.2) is refused unless ``force``. The noise is
    added in log space, so the grid is a log-space grid (default 2⁻²⁰: relative steps of
    about 10⁻⁶ in n + γ).
    """

    default_grid: ClassVar[float] = TRANSFORMED_GRID
    #: one job moves ln(n+γ) by at most ln(1+α) = λ·ε_cell/2 (γ = 1/α, n ≥ 0)
    job_share: ClassVar[Fraction] = Fraction(1, 2)
    alpha: float
    force: bool = False
    lam: float = field(init=False, default=0.0)
    gamma: float = field(init=False, default=0.0)

    def _derive(self) -> None:
        try:
            lam = check_log_laplace(self.alpha, self.epsilon_cell, force=self.force)
        except PrivacyParameterError as e:
            need = 2 * math.log1p(self.alpha) * float(self.epsilon_divisor())
            raise self._query_level(str(e), need) from None
        object.__setattr__(self, "lam", lam)
        object.__setattr__(self, "gamma", 1.0 / self.alpha)

    @override
    def public_params(self) -> dict[str, Any]:
        return {**self._base_params(), "gamma": self.gamma, "lambda": self.lam}

    @override
    def expected_error(self, at: Mapping[str, float]) -> ExpectedError | None:
        """Multiplicative noise: the error grows with n + γ (:func:`log_laplace_error`)."""
        grid = float(self.grid)  # type: ignore[arg-type]
        return log_laplace_error(at["count"], self.gamma, self.lam, self.confidence, grid)

    @override
    def __call__(self, cells: Cells, source: NoiseSource) -> Measurement:
        m = log_laplace_release(
            cells["count"], self.gamma, self.lam, source, self.confidence, "Lemma 8.2",
            alpha=self.alpha, epsilon=self.epsilon_cell, grid=float(self.grid),  # type: ignore[arg-type]
        )  # fmt: skip
        return _labelled(m, self.name)


# --------------------------------------------------------------------------- smooth sensitivity


def smooth_sensitivity(x_v: ArrayLike, alpha: float) -> FloatArray:
    r"""Lemma 8.5: :math:`S = \max(\alpha x_v, 1)` (when :math:`e^b \ge 1+\alpha`)."""
    return np.maximum(alpha * np.asarray(x_v, dtype=np.float64), 1.0)


def _withheld(noisy: FloatArray, name: str, why: str = SMOOTH_WITHHELD) -> Measurement:
    return Measurement(noisy, noisy, None, None, None, why, "withheld", name)


def _labelled(m: Measurement, name: str) -> Measurement:
    return Measurement(
        m.noisy, m.estimate, m.std, m.ci_low, m.ci_high, m.uncertainty_method,
        m.variance_kind, name,
    )  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class SmoothGamma(CountMechanism):
    r"""Smooth Gamma mechanism (Haney et al. Algorithm 2).

    Requires α+1 < e^{ε_cell/5}; ε₂ = 5 ln(1+α), ε₁ = ε_cell − ε₂, S = max(α·x_v, 1),
    :math:`\tilde n = n + (5S/\varepsilon_1) Z`, Z with density :math:`(\sqrt2/\pi)/(1+z^4)`.
    Unbiased; Var = (5S/ε₁)², E|err| = 5S/(ε₁√2). No standard error is published.
    """

    needs: ClassVar[tuple[str, ...]] = ("count", "x_v")
    alpha: float
    epsilon1: float = field(init=False, default=0.0)
    epsilon2: float = field(init=False, default=0.0)

    def _derive(self) -> None:
        try:
            eps1, eps2 = smooth_gamma_epsilons(self.alpha, self.epsilon_cell)
        except PrivacyParameterError as e:
            need = 5 * math.log1p(self.alpha) * float(self.epsilon_divisor())
            raise self._query_level(str(e), need) from None
        object.__setattr__(self, "epsilon1", eps1)
        object.__setattr__(self, "epsilon2", eps2)

    @override
    def public_params(self) -> dict[str, Any]:
        return {**self._base_params(), "epsilon1": self.epsilon1, "epsilon2": self.epsilon2}

    def noise_scale(self, x_v: ArrayLike) -> FloatArray:
        """5S/ε₁ with S = max(α·x_v, 1) (confidential where x_v is)."""
        return 5.0 * smooth_sensitivity(x_v, self.alpha) / self.epsilon1

    @override
    def variance_floor(self) -> float | None:
        """(5S/ε₁)² at S = 1 (Var Z = 1)."""
        return float(self.noise_scale(0.0)) ** 2

    @override
    def expected_error(self, at: Mapping[str, float]) -> ExpectedError | None:
        """Std = 5S/ε₁ (Var Z = 1), E|error| = 5S/(ε₁√2); no interval is published."""
        b = float(self.noise_scale(at["x_v"]))
        grid = float(self.grid)  # type: ignore[arg-type]
        return ExpectedError(b, b / math.sqrt(2.0), None,
                             within=smooth_gamma_within(b, grid, on_grid=grid <= 1))  # fmt: skip

    @override
    def __call__(self, cells: Cells, source: NoiseSource) -> Measurement:
        n = cells["count"]
        x_v = np.broadcast_to(cells["x_v"], n.shape)
        term = smooth_scale_term("smooth_gamma", x_v, self.alpha, 5.0, self.epsilon1)
        noisy = rounded_noisy(source, exact_centre(n), [term], self.grid)  # type: ignore[arg-type]
        return _withheld(noisy, self.name)


@dataclass(frozen=True, kw_only=True)
class ApproximateCountMechanism(CountMechanism):
    """A count mechanism with a δ: the query's δ is split over the d combinations like ε.

    Attributes:
        delta: the query's whole δ, or None for d·δ_min (each cell at its smallest δ).
    """

    delta: float | None = None
    delta_cell: float = field(init=False, default=0.0)
    delta_min: float = field(init=False, default=0.0)

    @staticmethod
    def delta_condition(alpha: float, epsilon: float, delta: float | None) -> float:
        """Check (α, ε_cell, δ_cell) against the mechanism's condition; return δ_cell."""
        return check_smooth_laplace(alpha, epsilon, delta)

    @staticmethod
    def smallest_delta(alpha: float, epsilon: float) -> float:
        """δ_min at (α, ε_cell)."""
        return smooth_laplace_delta_min(alpha, epsilon)

    def delta_divisor(self) -> Fraction:
        """The δ divisor max(d, Σ_{i<k} e^{i·ε_cell}).

        δ_cell = δ / this bounds both the establishment's α-change (d cells) and a
        worker's k jobs in one cell (group privacy).
        """
        return max(Fraction(self.worker_cells), Fraction(self.group_delta_factor()))

    @override
    def _derive(self) -> None:
        d = self.delta_divisor()
        alpha = getattr(self, "alpha")  # noqa: B009 - every subclass defines α
        cell_delta = None if self.delta is None else float_down(Fraction(self.delta) / d)
        try:
            dcell = self.delta_condition(alpha, self.epsilon_cell, cell_delta)
        except PrivacyParameterError as e:
            need = None
            if cell_delta is not None and 0 < cell_delta < 1:  # ε_cell ≥ 2 ln(1+α) ln(1/δ_cell)
                need = (
                    2 * math.log1p(alpha) * math.log(1 / cell_delta) * float(self.epsilon_divisor())
                )
            raise self._query_level(str(e), need) from None
        object.__setattr__(self, "delta_cell", dcell)
        object.__setattr__(self, "delta_min", self.smallest_delta(alpha, self.epsilon_cell))

    @override
    def per_cell_cost(self) -> Cost:
        return Cost(epsilon=self.epsilon_cell, delta=self.delta_cell)

    @override
    def cost(self) -> Cost:
        """The query's ε and δ: the δ asked for, never less than max(d, Σe^{iε_cell})·δ_cell."""
        d_delta = Fraction(self.delta_cell) * self.delta_divisor()
        delta = Fraction(self.delta) if self.delta is not None else d_delta
        return Cost(epsilon=self.epsilon, delta=max(delta, d_delta))


@dataclass(frozen=True, kw_only=True)
class SmoothLaplace(ApproximateCountMechanism):
    r"""Smooth Laplace mechanism (Haney et al. Algorithm 3), (α, ε, δ)-ER-EE private.

    Requires δ_cell ≥ δ_min = exp(−ε_cell/(2 ln(1+α))); δ defaults to d·δ_min (each cell
    at δ_min). S = max(α·x_v, 1), :math:`\tilde n = n + (2S/\varepsilon_{cell})\eta`,
    η ~ Lap(1). Unbiased; E|err| = 2S/ε_cell (Lemma 9.3); the noise does not depend on δ.

    Attributes:
        delta: the query's whole δ, or None for d·δ_min.
    """

    needs: ClassVar[tuple[str, ...]] = ("count", "x_v")
    alpha: float

    @override
    def public_params(self) -> dict[str, Any]:
        return {**self._base_params(), "delta_min": self.delta_min}

    def noise_scale(self, x_v: ArrayLike) -> FloatArray:
        """2S/ε_cell with S = max(α·x_v, 1) (confidential where x_v is)."""
        return 2.0 * smooth_sensitivity(x_v, self.alpha) / self.epsilon_cell

    @override
    def variance_floor(self) -> float | None:
        """2(2S/ε_cell)² at S = 1 (Var Lap(b) = 2b²)."""
        return 2.0 * float(self.noise_scale(0.0)) ** 2

    @override
    def expected_error(self, at: Mapping[str, float]) -> ExpectedError | None:
        """Std = √2·2S/ε_cell, E|error| = 2S/ε_cell (Lemma 9.3); no interval is published."""
        b = float(self.noise_scale(at["x_v"]))
        grid = float(self.grid)  # type: ignore[arg-type]
        return ExpectedError(math.sqrt(2.0) * b, b, None,
                             within=laplace_within(b, grid, on_grid=grid <= 1))  # fmt: skip

    @override
    def __call__(self, cells: Cells, source: NoiseSource) -> Measurement:
        n = cells["count"]
        x_v = np.broadcast_to(cells["x_v"], n.shape)
        term = smooth_scale_term("laplace", x_v, self.alpha, 2.0, self.epsilon_cell)
        noisy = rounded_noisy(source, exact_centre(n), [term], self.grid)  # type: ignore[arg-type]
        return _withheld(noisy, self.name)


# --------------------------------------------------------------------------- per-cell helpers


def log_laplace(
    n: ArrayLike,
    alpha: float,
    epsilon: float,
    source: NoiseSource,
    *,
    force: bool = False,
    confidence: float = 0.95,
    grid: float | None = None,
) -> Measurement:
    """One-cell-parameter convenience: :class:`LogLaplace` at ``epsilon`` per cell, d = 1."""
    mech = LogLaplace(query="cells", alpha=alpha, epsilon=epsilon, force=force,
                      confidence=confidence, grid=grid)  # fmt: skip
    return mech(Cells({"count": n}), source)


def smooth_gamma(
    n: ArrayLike,
    x_v: ArrayLike,
    alpha: float,
    epsilon: float,
    source: NoiseSource,
    *,
    grid: float | None = None,
) -> Measurement:
    """One-cell-parameter convenience: :class:`SmoothGamma` at ``epsilon`` per cell, d = 1."""
    return SmoothGamma(query="cells", alpha=alpha, epsilon=epsilon, grid=grid)(
        Cells({"count": n, "x_v": x_v}), source
    )


def smooth_laplace(
    n: ArrayLike,
    x_v: ArrayLike,
    alpha: float,
    epsilon: float,
    source: NoiseSource,
    *,
    delta: float | None = None,
    grid: float | None = None,
) -> Measurement:
    """One-cell-parameter convenience: :class:`SmoothLaplace` at ``epsilon`` per cell, d = 1."""
    return SmoothLaplace(query="cells", alpha=alpha, epsilon=epsilon, delta=delta, grid=grid)(
        Cells({"count": n, "x_v": x_v}), source
    )
