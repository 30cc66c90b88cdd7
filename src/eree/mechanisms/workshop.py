r"""The workshop variants of the ER-EE mechanisms, for the Blowfish policy.

Haney et al., workshop version (``papers/002_*``, §5 and Appendix A); the policy is in
:mod:`eree.privacy.blowfish`.

The SIGMOD versions (:mod:`eree.mechanisms.er_ee`) are normative (docs/errata.md); these
are selectable per query with ``variant = "workshop"``. Notation for one cell V:
n = true count, :math:`x_V` = the largest number of the cell's workers in one
establishment (Eq. 9), :math:`S^*_{V,\beta} = \alpha x_V` the (β, G)-smooth sensitivity
(Lemma 5.5, bounded iff :math:`e^\beta \ge 1+\alpha`). All functions are vectorised over
cells (any array shape; ``x_v`` broadcasts against ``n``, so trials × cells arrays work).

* :func:`workshop_log_laplace` — Alg 1: :math:`\gamma = \Delta/\alpha`,
  :math:`\eta\sim\mathrm{Lap}(2\ln(1+\alpha)/\varepsilon)`,
  :math:`\tilde n = e^{\ln(n+\gamma)+\eta}-\gamma`. With Δ = 1 it equals the SIGMOD
  Log-Laplace.
* :func:`workshop_smooth_laplace` — Alg 2, requires
  :math:`\alpha+1 \le e^{\varepsilon/(2\ln(1/\delta))}`:
  :math:`\tilde n = n + \frac{\alpha x_V}{\varepsilon/2}\eta + \eta'`,
  :math:`\eta\sim\mathrm{Lap}(1)`, :math:`\eta'\sim\mathrm{Lap}(1/\varepsilon)`.
* :func:`workshop_smooth_gamma` — Alg 3, requires :math:`\alpha+1 \le e^{\varepsilon/4}`:
  :math:`\tilde n = n + \frac{\alpha x_V}{\varepsilon/16}\eta + \eta'`, η with density
  :math:`\propto 1/(1+|z|^4)` — the same law as SIGMOD's Smooth Gamma noise
  (normalised: :math:`(\sqrt2/\pi)/(1+z^4)`, Var = 1, E|η| = 1/√2; the paper's Lemma G
  "variance π/√2 ≈ 2.2" is the unnormalised integral and its "MSE 2.2²" squares it
  once more), from Lemma 5.6 with exponent 4: (ε/16, ε/4)-admissible.

**eree's correction (docs/errata.md).** As printed, the smooth variants use
S* = αx_V, which bounds the local sensitivity only on α-close edges: the policy's
one-worker edge moves a count by 1 > αx_V whenever x_V < 1/α, and the privacy audit shows
both variants breaking their claim there (docs/privacy-audit.md). Releases therefore run
them with :math:`S = \max(\alpha x_V, 1)`, which bounds the local sensitivity on every
edge of the policy and is β-smooth for :math:`e^\beta \ge 1+\alpha` (the same
argument as SIGMOD Lemma 8.5); η′ is independent noise added to a private output
(post-processing). The printed versions (``as_printed = True``) exist only to reproduce
the workshop's Figure 1 in ``eree evaluate workshop`` and are labelled so; no spec key
reaches them.

Differences from SIGMOD: as printed, no max(·, 1) in the smooth sensitivity (cells with
:math:`x_V = 0` get only η′); a separate :math:`\eta'\sim\mathrm{Lap}(1/\varepsilon)`;
Smooth Gamma uses all of ε for β = ε/4 and a = ε/16 instead of SIGMOD's split
ε₂ = 5 ln(1+α), ε₁ = ε − ε₂ with scale 5S/ε₁. The workshop's privacy proof
(Thm 5.4) covers the smooth term only, not η′.

Errors of the smooth variants (used by tests and the evaluation):
E|ñ − n| is the mean absolute value of :math:`bZ + \eta'` with b the smooth scale.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike
from typing_extensions import override

from eree.errors import PrivacyParameterError
from eree.mechanisms.base import Cells, ExpectedError, Measurement
from eree.mechanisms.er_ee import (
    ApproximateCountMechanism,
    CountMechanism,
    log_laplace_error,
    log_laplace_release,
)
from eree.mechanisms.noise import FloatArray, NoiseSource
from eree.mechanisms.sampling import (
    TRANSFORMED_GRID,
    exact_centre,
    rounded_noisy,
    scale_term,
    smooth_scale_term,
)
from eree.privacy.blowfish import (
    check_workshop_log_laplace,
    check_workshop_smooth_gamma,
    check_workshop_smooth_laplace,
    workshop_smooth_laplace_delta_min,
)

__all__ = [
    "WORKSHOP_WITHHELD",
    "WorkshopLogLaplace",
    "WorkshopSmoothGamma",
    "WorkshopSmoothLaplace",
    "workshop_log_laplace",
    "workshop_log_laplace_expectation",
    "workshop_smooth_gamma",
    "workshop_smooth_gamma_scale",
    "workshop_smooth_laplace",
    "workshop_smooth_laplace_scale",
    "workshop_smooth_sensitivity",
]

WORKSHOP_WITHHELD = (
    "withheld: the noise scale of a smooth-sensitivity mechanism depends on x_V, "
    "which is confidential (see docs/privacy.md)"
)


def workshop_smooth_sensitivity(x_v: ArrayLike, alpha: float) -> FloatArray:
    r"""Lemma 5.5: :math:`S^*_{V,\beta}(x) = \alpha x_V` (no max with 1).

    Valid when :math:`e^\beta \ge 1+\alpha` (unbounded otherwise).
    """
    return alpha * np.asarray(x_v, dtype=np.float64)


def workshop_smooth_laplace_scale(x_v: ArrayLike, alpha: float, epsilon: float) -> FloatArray:
    r"""Alg 2's smooth Laplace scale: :math:`S^*/(\varepsilon/2) = 2\alpha x_V/\varepsilon`."""
    return workshop_smooth_sensitivity(x_v, alpha) / (epsilon / 2.0)


def workshop_smooth_gamma_scale(x_v: ArrayLike, alpha: float, epsilon: float) -> FloatArray:
    r"""Scale of Alg 3's 1/(1+z⁴) term: :math:`S^*/(\varepsilon/16) = 16\alpha x_V/\varepsilon`."""
    return workshop_smooth_sensitivity(x_v, alpha) / (epsilon / 16.0)


def workshop_log_laplace_expectation(
    n: ArrayLike, alpha: float, epsilon: float, additive: float = 1.0
) -> FloatArray:
    r"""Lemma 5.2: :math:`E[\tilde n]+\gamma = (n+\gamma)/(1-\lambda^2)` for λ < 1 (∞ otherwise)."""
    gamma, lam = check_workshop_log_laplace(alpha, epsilon, additive, force=True)
    if lam >= 1:
        return np.full(np.shape(n), np.inf)
    return (np.asarray(n, dtype=np.float64) + gamma) / (1.0 - lam * lam) - gamma


@dataclass(frozen=True, kw_only=True)
class _Workshop(CountMechanism):
    """The workshop variants run only under the Blowfish policy (``definition = "blowfish"``)."""

    allowed_definitions: ClassVar[tuple[str, ...]] = ("blowfish",)
    #: not derived for workers with several jobs (docs/privacy.md#several-jobs-per-worker)
    several_jobs: ClassVar[bool] = False
    definition: str = "blowfish"
    alpha: float
    #: the smooth variants as the workshop prints them (S = α·x_V, which breaks the
    #: claim, module docstring): for reproducing Figure 1 only, never in a release
    as_printed: bool = False

    @property
    def sensitivity_words(self) -> str:
        """The smooth sensitivity used, for the manifest."""
        return "alpha x_V (as printed)" if self.as_printed else "max(alpha x_V, 1)"

    @property
    def sensitivity_floor(self) -> float:
        """The floor of the smooth sensitivity: 1 (eree's correction), 0 as printed."""
        return 0.0 if self.as_printed else 1.0

    def __post_init__(self) -> None:
        if self.definition != "blowfish":
            raise self._fail(
                'the workshop variants (variant = "workshop", additive) are analysed under '
                'the Blowfish policy; use definition = "blowfish"'
            )
        super().__post_init__()


@dataclass(frozen=True, kw_only=True)
class WorkshopLogLaplace(_Workshop):
    r"""Log-Laplace mechanism, workshop Algorithm 1: γ = Δ/α, λ = 2 ln(1+α)/ε_cell.

    The noise is added in log space; the grid is a log-space grid (default 2⁻²⁰).

    Published estimate :math:`\hat n = (\tilde n+\gamma)(1-\lambda^2)-\gamma`, unbiased by
    Lemma 5.2 (the paper's Thm 5.3 writes :math:`1-\lambda/2`; its proof gives
    :math:`1-\lambda^2`, docs/errata.md). CI from the Laplace pivot, plug-in std for λ < 1/2.
    """

    default_grid: ClassVar[float] = TRANSFORMED_GRID
    additive: float = 1.0
    force: bool = False
    lam: float = field(init=False, default=0.0)
    gamma: float = field(init=False, default=0.0)

    def _derive(self) -> None:
        try:
            gamma, lam = check_workshop_log_laplace(
                self.alpha, self.epsilon_cell, self.additive, force=self.force
            )
        except PrivacyParameterError as e:
            need = 2 * math.log1p(self.alpha) * self.worker_cells
            raise self._query_level(str(e), need) from None
        object.__setattr__(self, "gamma", gamma)
        object.__setattr__(self, "lam", lam)

    @override
    def public_params(self) -> dict[str, Any]:
        return {**self._base_params(), "additive": self.additive, "gamma": self.gamma,
                "lambda": self.lam}  # fmt: skip

    @override
    def expected_error(self, at: Mapping[str, float]) -> ExpectedError | None:
        """As the SIGMOD Log-Laplace, with γ = Δ/α (:func:`.log_laplace_error`)."""
        grid = float(self.grid)  # type: ignore[arg-type]
        return log_laplace_error(at["count"], self.gamma, self.lam, self.confidence, grid)

    @override
    def __call__(self, cells: Cells, source: NoiseSource) -> Measurement:
        m = log_laplace_release(
            cells["count"], self.gamma, self.lam, source, self.confidence, "workshop Lemma 5.2",
            alpha=self.alpha, epsilon=self.epsilon_cell, additive=self.additive,
            grid=float(self.grid),  # type: ignore[arg-type]
        )  # fmt: skip
        return Measurement(m.noisy, m.estimate, m.std, m.ci_low, m.ci_high,
                           m.uncertainty_method, m.variance_kind, self.name)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class WorkshopSmoothLaplace(_Workshop, ApproximateCountMechanism):
    r"""Smooth Laplace mechanism, workshop Algorithm 2, with eree's correction S = max(αx_V, 1).

    (ε, δ, G)-Blowfish with the correction (module docstring); as printed (S = αx_V) it
    breaks that claim.

    Requires :math:`\alpha+1 \le e^{\varepsilon/(2\ln(1/\delta))}` per cell (δ defaults to
    the smallest such δ; the noise does not depend on δ).
    :math:`\tilde n = n + \frac{S}{\varepsilon/2}\eta + \eta'`,
    :math:`\eta\sim\mathrm{Lap}(1)`, :math:`\eta'\sim\mathrm{Lap}(1/\varepsilon)`.
    Unbiased (Lemma 5.7); no standard error is published (it would reveal x_V).
    """

    needs: ClassVar[tuple[str, ...]] = ("count", "x_v")

    def smooth_scale(self, x_v: ArrayLike) -> FloatArray:
        """2S/ε_cell, S = max(αx_V, 1) (as printed: αx_V)."""
        s = np.maximum(self.alpha * np.asarray(x_v, dtype=np.float64), self.sensitivity_floor)
        return 2.0 * s / self.epsilon_cell

    @override
    def variance_floor(self) -> float | None:
        """2/ε² + 2(2S/ε)² at the smallest S (1; as printed 0: η′ alone)."""
        b = float(self.smooth_scale(0.0))
        return 2.0 / self.epsilon_cell**2 + 2.0 * b * b

    @override
    def expected_error(self, at: Mapping[str, float]) -> ExpectedError | None:
        """std² = 2/ε² + 2(2S/ε)² (two independent Laplace terms); no interval published."""
        b = float(self.smooth_scale(at["x_v"]))
        return ExpectedError(math.sqrt(2.0 / self.epsilon_cell**2 + 2.0 * b * b), None, None)

    @staticmethod
    @override
    def delta_condition(alpha: float, epsilon: float, delta: float | None) -> float:
        return check_workshop_smooth_laplace(alpha, epsilon, delta)

    @staticmethod
    @override
    def smallest_delta(alpha: float, epsilon: float) -> float:
        return workshop_smooth_laplace_delta_min(alpha, epsilon)

    @override
    def public_params(self) -> dict[str, Any]:
        beta = self.epsilon_cell / (2 * math.log(1 / self.delta_cell))
        return {**self._base_params(), "delta_min": self.delta_min, "beta": beta,
                "sensitivity": self.sensitivity_words}  # fmt: skip

    @override
    def __call__(self, cells: Cells, source: NoiseSource) -> Measurement:
        noisy = _workshop_two_terms(self, cells, source, "laplace", 2.0)
        return Measurement(noisy, noisy, None, None, None, WORKSHOP_WITHHELD, "withheld",
                           self.name)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class WorkshopSmoothGamma(_Workshop):
    r"""Smooth Gamma mechanism, workshop Algorithm 3, with eree's correction S = max(αx_V, 1).

    (ε, G)-Blowfish with the correction (module docstring); as printed (S = αx_V) no
    finite ε holds at x_V = 0 → 1.

    Requires :math:`\alpha+1 \le e^{\varepsilon/4}` per cell.
    :math:`\tilde n = n + \frac{S}{\varepsilon/16}\eta + \eta'`, η with density
    :math:`(\sqrt2/\pi)/(1+z^4)`, :math:`\eta'\sim\mathrm{Lap}(1/\varepsilon)`. Unbiased
    (Lemma 5.7); Var = (16S/ε)² + 2/ε². No standard error is published.
    """

    needs: ClassVar[tuple[str, ...]] = ("count", "x_v")

    def smooth_scale(self, x_v: ArrayLike) -> FloatArray:
        """16S/ε_cell, S = max(αx_V, 1) (as printed: αx_V)."""
        s = np.maximum(self.alpha * np.asarray(x_v, dtype=np.float64), self.sensitivity_floor)
        return 16.0 * s / self.epsilon_cell

    @override
    def variance_floor(self) -> float | None:
        """(16S/ε)² + 2/ε² at the smallest S (1; as printed 0: η′ alone)."""
        b = float(self.smooth_scale(0.0))
        return b * b + 2.0 / self.epsilon_cell**2

    @override
    def expected_error(self, at: Mapping[str, float]) -> ExpectedError | None:
        """std² = (16S/ε)² + 2/ε² (Var Z = 1); no interval published."""
        b = float(self.smooth_scale(at["x_v"]))
        return ExpectedError(math.sqrt(b * b + 2.0 / self.epsilon_cell**2), None, None)

    beta: float = field(init=False, default=0.0)

    def _derive(self) -> None:
        try:
            beta = check_workshop_smooth_gamma(self.alpha, self.epsilon_cell)
        except PrivacyParameterError as e:
            need = 4 * math.log1p(self.alpha) * self.worker_cells
            raise self._query_level(str(e), need) from None
        object.__setattr__(self, "beta", beta)

    @override
    def public_params(self) -> dict[str, Any]:
        return {**self._base_params(), "beta": self.beta, "a": self.epsilon_cell / 16,
                "sensitivity": self.sensitivity_words}  # fmt: skip

    @override
    def __call__(self, cells: Cells, source: NoiseSource) -> Measurement:
        noisy = _workshop_two_terms(self, cells, source, "smooth_gamma", 16.0)
        return Measurement(noisy, noisy, None, None, None, WORKSHOP_WITHHELD, "withheld",
                           self.name)  # fmt: skip


def _workshop_two_terms(
    mech: _Workshop, cells: Cells, source: NoiseSource, law: str, factor: float
) -> FloatArray:
    r"""round_r(n + η′ + (factor·α x_V/ε)·W), η′ ∼ Lap(1/ε): both noises summed, rounded once."""
    n = cells["count"]
    eps = mech.epsilon_cell
    x_v = np.broadcast_to(cells["x_v"], n.shape)
    terms = [
        scale_term("laplace", 1.0 / eps, numerator=1.0, denominator=eps, shape=n.shape),
        smooth_scale_term(law, x_v, mech.alpha, factor, eps, floor=mech.sensitivity_floor),
    ]
    return rounded_noisy(source, exact_centre(n), terms, mech.grid)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- per-cell helpers


def workshop_log_laplace(
    n: ArrayLike,
    alpha: float,
    epsilon: float,
    source: NoiseSource,
    *,
    additive: float = 1.0,
    force: bool = False,
    confidence: float = 0.95,
    grid: float | None = None,
) -> Measurement:
    """Convenience: :class:`WorkshopLogLaplace` at ``epsilon`` per cell (d = 1)."""
    m = WorkshopLogLaplace(query="cells", alpha=alpha, epsilon=epsilon, additive=additive,
                           force=force, confidence=confidence, grid=grid)  # fmt: skip
    return m(Cells({"count": n}), source)


def workshop_smooth_laplace(
    n: ArrayLike,
    x_v: ArrayLike,
    alpha: float,
    epsilon: float,
    source: NoiseSource,
    *,
    delta: float | None = None,
    grid: float | None = None,
    as_printed: bool = False,
) -> Measurement:
    """Convenience: :class:`WorkshopSmoothLaplace` at ``epsilon`` per cell; any array shape."""
    m = WorkshopSmoothLaplace(query="cells", alpha=alpha, epsilon=epsilon, delta=delta,
                              grid=grid, as_printed=as_printed)  # fmt: skip
    return m(Cells({"count": n, "x_v": x_v}), source)


def workshop_smooth_gamma(
    n: ArrayLike,
    x_v: ArrayLike,
    alpha: float,
    epsilon: float,
    source: NoiseSource,
    *,
    grid: float | None = None,
    as_printed: bool = False,
) -> Measurement:
    """Convenience: :class:`WorkshopSmoothGamma` at ``epsilon`` per cell; any array shape."""
    m = WorkshopSmoothGamma(query="cells", alpha=alpha, epsilon=epsilon, grid=grid,
                            as_printed=as_printed)  # fmt: skip
    return m(Cells({"count": n, "x_v": x_v}), source)
