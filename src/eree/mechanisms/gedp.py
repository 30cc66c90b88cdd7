r"""Mechanisms for μ-Gaussian Establishment DP (Webb et al., ``papers/004_*``, §6).

Pure functions of cell statistics (group sums, per-establishment values, clipped sums),
public parameters and a :class:`~eree.mechanisms.noise.NoiseSource`; all Gaussian noise
comes from the float-safe sampling layer (:mod:`eree.mechanisms.sampling`).

* :func:`estab_gaussian` — Def 6.2: :math:`q(D) + N(0, \Delta_\psi(q)^2/\mu^2 I)`; the
  variance is data-independent and public.
* :func:`psi_mechanism` — Def 6.4: per group :math:`\omega_g = \psi(gsum_g) + N(0,\sigma^2)`,
  σ = γ/μ, with the Thm 6.6 estimate x̃, the *estimated* variance v̂ and the CI of §6.1
  (:mod:`eree.mechanisms.estimators`). The true variance depends on x and is never
  returned.
* pnc (Thm 6.7, Def 6.8): :func:`pnc_tau_hat`, :func:`pnc_upper_bounds` (from the noisy
  identity answers only), :func:`pnc_sensitivity` (Δ_ℓ from the public u*_ℓ) and
  :func:`pnc_mechanism` (clipped sum + N(0, (Δ_ℓ/μ)²), releasing the public variance).
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
from eree.mechanisms.base import Cells, ExpectedError, Measurement, Mechanism
from eree.mechanisms.error_law import Within, gaussian_published_within
from eree.mechanisms.estimators import (
    psi_confidence_interval,
    psi_estimates,
    psi_variance_at,
    z_value,
)
from eree.mechanisms.noise import FloatArray, NoiseSource
from eree.mechanisms.sampling import (
    TRANSFORMED_GRID,
    VALUE_GRID,
    additive,
    check_grid,
    psi_centre,
    rounded_noisy,
    rounded_variance,
    scale_term,
)
from eree.privacy.composition import Composition, Cost, GaussianComposition
from eree.privacy.neighbors import DPNeighbor, NeighborFunction
from eree.privacy.scipy_lazy import ndtri

__all__ = [
    "EstabGaussian",
    "GedpMechanism",
    "Pnc",
    "PncBounded",
    "PsiMechanism",
    "estab_gaussian",
    "pnc_mechanism",
    "pnc_sensitivity",
    "pnc_tau_hat",
    "pnc_upper_bounds",
    "psi_mechanism",
]


#: the largest μ a mechanism accepts (beyond it μ-GEDP promises nothing, and μ² overflows)
MAX_MU = 1e6


def psi_space_grid(neighbor: NeighborFunction, value_grid: float) -> float:
    """The grid of a ψ-space draw: the value grid for ψ = x (dp), else 2⁻²⁰."""
    return value_grid if isinstance(neighbor, DPNeighbor) else TRANSFORMED_GRID


def charged_distance(neighbor: NeighborFunction, gamma: float) -> float:
    """γ + 2·ψ's excess (:attr:`NeighborFunction.psi_excess`), rounded up; γ for exact ψ."""
    eta = neighbor.psi_excess
    if eta == 0.0:
        return gamma
    return float(np.nextafter(gamma + 2.0 * eta, np.inf))


def _check_mu(mu: float) -> None:
    if isinstance(mu, bool) or not (math.isfinite(mu) and mu > 0):
        raise PrivacyParameterError(f"mu must be a finite number > 0 (got {mu!r})")


def _check_gamma(gamma: float) -> None:
    if not (math.isfinite(gamma) and gamma > 0):
        raise PrivacyParameterError(f"distance gamma must be a finite number > 0 (got {gamma!r})")


def estab_gaussian(
    values: ArrayLike,
    sensitivity: float,
    mu: float,
    source: NoiseSource,
    *,
    confidence: float = 0.95,
    grid: float = VALUE_GRID,
) -> Measurement:
    r"""Estab-Gaussian mechanism (Def 6.2, Thm 6.3): :math:`q(D)+N(0,(\Delta_\psi(q)/\mu)^2)`.

    Args:
        values: the true query answers (e.g. one attribute's group sums).
        sensitivity: :math:`\Delta_\psi(q)` (Def 6.1), e.g.
            :meth:`NeighborFunction.sensitivity` for a sum of one attribute.
        mu: the measurement's μ.

    The estimate is the noisy answer (unbiased); std = Δ/μ is public; the CI is
    ±z·std, clamped below at 0 (sums of non-negative values).
    """
    _check_mu(mu)
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        raise PrivacyParameterError(
            "estab_gaussian needs a finite ψ-neighbor sensitivity > 0 (Def 6.1)"
        )
    return EstabGaussian.noisy_answer(values, sensitivity, mu, source, confidence, grid)


def psi_mechanism(
    gsum: ArrayLike,
    neighbor: NeighborFunction,
    gamma: float,
    mu: float,
    source: NoiseSource,
    *,
    confidence: float = 0.95,
    grid: float | None = None,
) -> Measurement:
    r"""ψ-mechanism (Def 6.4, Thm 6.5) for one attribute's group sums.

    :math:`\omega_g = \psi(gsum_g) + N(0,\sigma^2)`, σ = γ/μ. The identity query is the
    group-by with one group per establishment.

    Returns:
        :class:`PsiOutput` with ω, the Thm 6.6 estimate x̃, std = √v̂ (the variance
        *estimated from ω*; None for ψ without an estimator) and the §6.1 CI.
    """
    _check_mu(mu)
    _check_gamma(gamma)
    mech = PsiMechanism(query="cells", attribute="value", neighbor=neighbor, gamma=gamma,
                        mu=mu, confidence=confidence, grid=grid)  # fmt: skip
    return mech(Cells({"value": gsum}), source)


def pnc_tau_hat(zeta: float, n: int, k_c: int) -> float:
    r"""Thm 6.7: :math:`\hat\tau = \Phi^{-1}((1-\zeta)^{1/(k_c n)})`.

    Computed as :math:`-\Phi^{-1}(1-(1-\zeta)^{1/(k_c n)})` with ``expm1``/``log1p`` so that
    it stays accurate for national n.

    Args:
        zeta: probability of any clipping, in (0, 1).
        n: number of establishments (public).
        k_c: number of confidential attributes bounded by the identity query.
    """
    if not (0 < zeta < 1):
        raise PrivacyParameterError(f"zeta must lie in (0, 1) (got {zeta!r})")
    if n < 1 or k_c < 1:
        raise PrivacyParameterError("pnc needs n ≥ 1 establishments and k_c ≥ 1 attributes")
    tail = -math.expm1(math.log1p(-zeta) / (k_c * n))
    return float(-ndtri(tail))


def pnc_upper_bounds(
    omega_identity: ArrayLike,
    neighbor: NeighborFunction,
    gamma: float,
    mu_identity: float,
    tau_hat: float,
) -> FloatArray:
    r"""Thm 6.7: :math:`u_{j,i} = \psi^{-1}(\omega_{j,i} + \gamma_i\hat\tau/\mu_i^{(a)})`.

    0 where the argument is below ψ(0). A function of the noisy identity answers ω and
    public parameters only, hence public.
    """
    _check_mu(mu_identity)
    _check_gamma(gamma)
    arg = np.asarray(omega_identity, dtype=np.float64) + gamma * tau_hat / mu_identity
    return np.asarray(neighbor.inverse(arg), dtype=np.float64)


def pnc_sensitivity(u_star: ArrayLike, neighbor: NeighborFunction, gamma: float) -> FloatArray:
    r"""Def 6.8 step 2: the per-group sensitivity from the public bound u*_ℓ.

    :math:`\Delta_\ell = u^*_\ell - \psi^{-1}(\max(\psi(0), \psi(u^*_\ell)-\gamma))`.
    """
    _check_gamma(gamma)
    u = np.asarray(u_star, dtype=np.float64)
    low = np.asarray(neighbor.inverse(np.maximum(neighbor.psi0, neighbor.psi(u) - gamma)))
    return np.maximum(u - low, 0.0)


def pnc_sensitivity_upper(
    u_star: ArrayLike, neighbor: NeighborFunction, gamma: float
) -> FloatArray:
    r"""Δ_ℓ of :func:`pnc_sensitivity`, rounded up past its floating-point error.

    The float Δ̂ = u − ψ⁻¹(ψ(u) − γ) carries three errors: ψ(u)'s own
    (:meth:`NeighborFunction.psi_error`) and the subtraction of γ, carried through ψ⁻¹ with
    slope 1/ψ′ ≤ 1/ψ′(u) (ψ concave); ψ⁻¹'s own, at most 2⁻⁴³(x + 1) at its result x; and
    the final subtraction, 2⁻⁵³u. The noise is drawn with Δ̂ plus that bound (a larger
    sensitivity only adds privacy), and the published variance is computed from it.
    """
    u = np.asarray(u_star, dtype=np.float64)
    d = pnc_sensitivity(u, neighbor, gamma)
    psi_u = np.asarray(neighbor.psi(u), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.asarray(neighbor.derivative(np.maximum(u, 1e-300)), dtype=np.float64)
        inv_slope = np.where(np.isfinite(slope) & (slope > 0), 1.0 / slope, 0.0)
    err_y = np.asarray(neighbor.psi_error(u, psi_u), dtype=np.float64)
    err_y = err_y + 2.0**-52 * (np.abs(psi_u) + gamma) + 2.0 * neighbor.psi_excess
    x_low = np.maximum(u - d, 0.0)
    err = 1.01 * (err_y * inv_slope + 2.0**-43 * (x_low + 1.0) + 2.0**-52 * np.abs(u))
    return np.where(d > 0, np.nextafter(d + err, np.inf), 0.0)


def pnc_mechanism(
    clipped_sums: ArrayLike,
    delta: ArrayLike,
    mu: float,
    source: NoiseSource,
    *,
    confidence: float = 0.95,
    grid: float = VALUE_GRID,
) -> Measurement:
    r"""pnc-mechanism release (Def 6.8 step 4, Thm 6.9).

    Args:
        clipped_sums: :math:`T_\ell=\sum_{j\in\ell}\min(r_j[C_i], u^*_\ell)` per group.
        delta: :math:`\Delta_\ell` per group (:func:`pnc_sensitivity` of the public u*_ℓ).
        mu: the measurement's μ.

    Returns:
        :class:`PublicVarianceOutput`: :math:`T_\ell + N(0,(\Delta_\ell/\mu)^2)` and the
        public variance :math:`(\Delta_\ell/\mu)^2`; CI = answer ± z·std, clamped at 0. With
        probability ≥ 1 − ζ no value was clipped and T_ℓ is the true sum.
    """
    _check_mu(mu)
    d = np.asarray(delta, dtype=np.float64)
    if d.size and not (np.all(np.isfinite(d)) and np.all(d >= 0)):
        raise PrivacyParameterError("pnc sensitivities Δ_ℓ must be finite and ≥ 0")
    check_grid(grid)
    sd = d / mu
    noisy = additive(source, clipped_sums, "gaussian", sd, grid, numerator=d, denominator=mu)
    z = z_value(confidence)
    std = np.hypot(sd, grid / math.sqrt(12.0))  # √(sd² + grid²/12), no overflow of sd²
    half = z * sd + grid / 2
    return Measurement(
        noisy=noisy,
        estimate=noisy.copy(),
        std=std,
        ci_low=np.maximum(noisy - half, 0.0),
        ci_high=np.maximum(noisy + half, 0.0),
        uncertainty_method=(
            "pnc-mechanism (Def 6.8): noisy clipped sum (equal to the true sum unless clipping "
            "occurred, probability ≤ ζ over the whole release), rounded to the public grid "
            f"{grid:g}; std = √((Δ_ℓ/μ)² + grid²/12), public (Δ_ℓ from the group's bound u*_ℓ, "
            "computed from the noisy identity answers, rounded up; grid²/12 is the rounding's "
            f"variance averaged over the true value's position); {confidence:.0%} CI = answer "
            "± (z·Δ_ℓ/μ + grid/2), both ends clamped at 0"
        ),
        variance_kind="public",
        mechanism=Pnc.name,
    )


def _gaussian_error(sd: float, confidence: float, grid: float, x: float) -> ExpectedError:
    """N(0, sd²) rounded to the grid, as published, at a true sum x.

    std √(sd² + grid²/12); E|error| = sd·√(2/π) (before rounding); the published interval
    ±(z·sd + grid/2), before clamping. ``within``: the answer clamped into its interval,
    which is clamped at 0 (so is the published value).
    """
    half = z_value(confidence) * sd + grid / 2

    def publish(w: np.ndarray) -> np.ndarray:
        return np.minimum(np.maximum(w, np.maximum(w - half, 0.0)), np.maximum(w + half, 0.0))

    return ExpectedError(
        math.sqrt(sd * sd + grid * grid / 12.0), sd * math.sqrt(2.0 / math.pi),
        2.0 * z_value(confidence) * sd + grid,
        "E|error| of the noise before rounding to the grid" if grid else "",
        gaussian_published_within(publish, x, sd, x, grid) if sd > 0 else None,
    )  # fmt: skip


# --------------------------------------------------------------------------------------
# Mechanism objects: one per (query, confidential attribute) measurement
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class GedpMechanism(Mechanism):
    """Common fields of the μ-GEDP mechanisms: one confidential attribute of one query.

    Attributes:
        query: the query's name; attribute: the confidential attribute measured.
        neighbor: ψ of the attribute; gamma: its distance γ; mu: the measurement's μ.
        confidence: level of the published confidence intervals.

    Cells: ``value`` (the attribute's group sums, identity values or clipped sums).
    """

    needs: ClassVar[tuple[str, ...]] = ("value",)
    #: the paper's name for the mechanism (the accountant's guarantee sentence)
    description: ClassVar[str] = ""
    attribute: str
    neighbor: NeighborFunction
    gamma: float
    mu: float
    confidence: float = 0.95
    #: the public grid the published values are rounded to, in the space the noise is
    #: added in (:mod:`eree.mechanisms.sampling`); None: :meth:`default_grid`
    grid: float | None = None

    def default_grid(self) -> float:
        """1 (the attribute's unit: jobs, dollars) where noise is added to the values."""
        return VALUE_GRID

    def __post_init__(self) -> None:
        where = f"attribute {self.attribute!r}: "
        try:
            grid = check_grid(self.default_grid() if self.grid is None else self.grid)
        except ValueError as e:
            raise self._fail(f"{where}{e}") from None
        object.__setattr__(self, "grid", grid)
        if isinstance(self.mu, bool) or not (
            isinstance(self.mu, int | float) and math.isfinite(self.mu) and self.mu > 0
        ):
            raise self._fail(f"{where}mu must be a finite number > 0 (got {self.mu!r})")
        if self.mu > MAX_MU:
            raise self._fail(
                f"{where}mu must be at most {MAX_MU:g} (got {self.mu:g}): a test of that power "
                "tells any two datasets apart, so it promises nothing"
            )
        if not (math.isfinite(self.gamma) and self.gamma > 0):
            raise self._fail(f"{where}distance gamma must be a finite number > 0")
        if not 0 < self.confidence < 1:
            raise self._fail(f"confidence must lie in (0, 1) (got {self.confidence!r})")
        self._derive()

    def _derive(self) -> None:
        """Fix the derived public scales."""

    @override
    def composition(self) -> Composition:
        return GaussianComposition()

    @override
    def per_cell_cost(self) -> Cost:
        return Cost(mu=self.mu)

    @override
    def guarantee(self) -> str:
        return f"{self.mu:g}-GEDP (Def 5.6) for {self.attribute} by the {self.description}"


@dataclass(frozen=True, kw_only=True)
class PsiMechanism(GedpMechanism):
    r"""ψ-mechanism (Def 6.4, Thm 6.5): :math:`\omega_g = \psi(gsum_g) + N(0,\sigma^2)`, σ = γ/μ.

    Published: the Thm 6.6 estimate x̃, the variance *estimated* from ω (the true
    variance depends on x and is never published), the §6.1 CI.
    """

    description: ClassVar[str] = "ψ-mechanism (Def 6.4, Thm 6.5)"
    sigma: float = field(init=False, default=0.0)
    #: the distance the noise is drawn for: γ + 2·ψ's excess (0 for √, log, dp; a
    #: combined ψ* charges the float definition of its pieces, NeighborFunction.psi_excess)
    distance: float = field(init=False, default=0.0)

    @override
    def default_grid(self) -> float:
        """1 for ψ = x (dp); 2⁻²⁰ in a transformed space (√, log, combined, custom)."""
        return psi_space_grid(self.neighbor, VALUE_GRID)

    def _derive(self) -> None:
        dist = charged_distance(self.neighbor, self.gamma)
        object.__setattr__(self, "distance", dist)
        object.__setattr__(self, "sigma", dist / self.mu)

    @override
    def public_params(self) -> dict[str, Any]:
        return {"mu": self.mu, "sigma": self.sigma, "grid": self.grid}

    def draw(self, x: FloatArray, source: NoiseSource) -> FloatArray:
        """ω = round_r(ψ(x) + N(0, σ²)), σ = γ/μ exactly."""
        centre = psi_centre(x, self.neighbor)
        term = scale_term("gaussian", self.sigma, numerator=self.distance, denominator=self.mu,
                          shape=centre.value.shape)  # fmt: skip
        return rounded_noisy(source, centre, [term], self.grid)  # type: ignore[arg-type]

    @override
    def expected_error(self, at: Mapping[str, float]) -> ExpectedError | None:
        """At a group sum x (``value``): std by Thm 6.6, CI width at ω = ψ(x) (§6.1).

        The std is None for a ψ without a closed-form estimator (:func:`psi_variance_at`).
        """
        x = float(at["value"])
        var = psi_variance_at(self.neighbor, np.array([x]), self.sigma)
        lo, hi = psi_confidence_interval(
            self.neighbor.psi(np.array([x])), self.neighbor, self.sigma, self.confidence
        )
        std = None if var is None else math.sqrt(float(var[0]))
        dp = isinstance(self.neighbor, DPNeighbor) and std is not None  # ψ = x: Gaussian error
        mean_abs = std * math.sqrt(2.0 / math.pi) if dp and std is not None else None
        return ExpectedError(std, mean_abs, float(hi[0] - lo[0]),
                             "CI width at the median answer omega = psi(x)",
                             self._within(x))  # fmt: skip

    def _within(self, x: float) -> Within | None:
        """The law of the published value (the Thm 6.6 estimate clamped into its CI) at x."""
        neighbor, sigma, conf = self.neighbor, self.sigma, self.confidence

        def publish(w: np.ndarray) -> np.ndarray:
            e = psi_estimates(w, neighbor, sigma, conf)
            return Measurement(w, e.estimate, None, e.ci_low, e.ci_high, "", "withheld",
                               ).published_estimate()  # fmt: skip

        centre = float(neighbor.psi(np.array([x]))[0])
        return gaussian_published_within(publish, centre, sigma, x, float(self.grid))  # type: ignore[arg-type]

    @override
    def __call__(self, cells: Cells, source: NoiseSource) -> Measurement:
        omega = self.draw(cells["value"], source)
        est = psi_estimates(omega, self.neighbor, self.sigma, self.confidence)
        std = None if est.variance is None else np.sqrt(est.variance)
        return Measurement(
            omega, est.estimate, std, est.ci_low, est.ci_high, est.method,
            "withheld" if std is None else est.variance_kind, self.name,
            extra={"sigma": self.sigma},
        )  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class EstabGaussian(GedpMechanism):
    r"""Estab-Gaussian (Def 6.2, Thm 6.3): :math:`q(D)+N(0,(\Delta_\psi(q)/\mu)^2)`.

    The sensitivity Δ_ψ of a sum of one attribute (Def 6.1) must be finite.
    """

    description: ClassVar[str] = "Estab-Gaussian mechanism (Def 6.2, Thm 6.3)"
    sensitivity: float = field(init=False, default=0.0)
    sd: float = field(init=False, default=0.0)

    def _derive(self) -> None:
        sens = self.neighbor.sensitivity(self.gamma)
        if not (math.isfinite(sens) and sens > 0):
            raise self._fail(
                f"estab_gaussian needs a finite ψ-neighbor sensitivity (Def 6.1) for "
                f"{self.attribute!r}, but with {self.neighbor.describe()} one establishment's "
                "value can move by an unbounded amount; use the psi or pnc mechanism, or a ψ "
                "with linear growth (dp, heterogeneous with dp)"
            )
        if sens != self.gamma:  # γ/slope with a float slope: round past the roundings
            sens = float(np.nextafter(sens * (1.0 + 2.0**-50), np.inf))
        object.__setattr__(self, "sensitivity", float(sens))
        object.__setattr__(self, "sd", float(sens) / self.mu)

    @override
    def public_params(self) -> dict[str, Any]:
        return {"mu": self.mu, "sensitivity": self.sensitivity, "sigma": self.sd,
                "grid": self.grid}  # fmt: skip

    @classmethod
    def noisy_answer(
        cls,
        values: ArrayLike,
        sensitivity: float,
        mu: float,
        source: NoiseSource,
        confidence: float,
        grid: float,
    ) -> Measurement:
        """round_r(q(D) + N(0, (Δ/μ)²)) with its public std and CI (rounding included)."""
        check_grid(grid)
        sd = sensitivity / mu
        noisy = additive(source, values, "gaussian", sd, grid, numerator=sensitivity,
                         denominator=mu)  # fmt: skip
        std = np.full(noisy.shape, math.sqrt(rounded_variance("gaussian", sd, grid, False)))
        z = z_value(confidence)
        half = z * sd + grid / 2
        return Measurement(
            noisy, noisy.copy(), std, np.maximum(noisy - half, 0.0),
            np.maximum(noisy + half, 0.0),
            f"Estab-Gaussian (Def 6.2): unbiased noisy answer rounded to the public grid "
            f"{grid:g}; std = √((Δ_ψ/μ)² + grid²/12) with Δ_ψ/μ = {sd:.6g} (grid²/12: the "
            "rounding's variance averaged over the true value's position), public; "
            f"{confidence:.0%} CI = answer ± (z·Δ_ψ/μ + grid/2), both ends clamped at 0",
            "public", cls.name,
        )  # fmt: skip

    @override
    def expected_error(self, at: Mapping[str, float]) -> ExpectedError | None:
        """N(0, (Δ_ψ/μ)²) at every value (before clamping the CI at 0)."""
        return _gaussian_error(self.sd, self.confidence, float(self.grid or 1), at["value"])

    @override
    def __call__(self, cells: Cells, source: NoiseSource) -> Measurement:
        return self.noisy_answer(
            cells["value"],
            self.sensitivity,
            self.mu,
            source,
            self.confidence,
            float(self.grid or 1),
        )


@dataclass(frozen=True, kw_only=True)
class PncBounded(GedpMechanism):
    r"""Shared base of the group-by mechanisms that use pnc's public bounds (Thm 6.7).

    :class:`Pnc` and the adaptive choice (:class:`eree.mechanisms.adaptive.AdaptiveGroupBy`)
    read the per-establishment bounds computed from the noisy identity answers.

    Attributes:
        zeta: probability of any clipping over the release.
        bounds_from: the ψ identity query whose noisy answers give the bounds.
        bounds_mu: that query's μ for this attribute, μᵢ⁽ᵃ⁾.
        bounded_attributes: k_c, the number of attributes the identity query bounds.
    """

    zeta: float = 0.01
    bounds_from: str | None = None
    bounds_mu: float = 1.0
    bounded_attributes: int = 1

    def _derive(self) -> None:
        if not (0 < self.zeta < 1):
            raise self._fail(f"zeta must lie in (0, 1) (got {self.zeta!r})")
        if not (math.isfinite(self.bounds_mu) and self.bounds_mu > 0):
            raise self._fail("the identity query's mu must be a finite number > 0")
        if self.bounded_attributes < 1:
            raise self._fail("pnc needs at least one bounded attribute")

    @override
    def public_params(self) -> dict[str, Any]:
        return {"mu": self.mu, "zeta": self.zeta, "bounds_from": self.bounds_from,
                "grid": self.grid}  # fmt: skip

    @override
    def expected_error(self, at: Mapping[str, float]) -> ExpectedError | None:
        """Pnc at a group whose public bound is u*_ℓ (``bound``): N(0, (Δ_ℓ/μ)²), Def 6.8."""
        delta = float(
            pnc_sensitivity_upper(np.array([float(at["bound"])]), self.neighbor, self.gamma)[0]
        )
        return _gaussian_error(delta / self.mu, self.confidence, float(self.grid or 1),
                               at.get("value", at["bound"]))  # fmt: skip

    def upper_bounds(self, omega_identity: ArrayLike, n_establishments: int) -> FloatArray:
        r"""Thm 6.7: :math:`u_{j,i} = \psi^{-1}(\omega_{j,i} + \gamma_i\hat\tau/\mu_i^{(a)})`."""
        tau = pnc_tau_hat(self.zeta, n_establishments, self.bounded_attributes)
        return pnc_upper_bounds(omega_identity, self.neighbor, self.gamma, self.bounds_mu, tau)


@dataclass(frozen=True, kw_only=True)
class Pnc(PncBounded):
    r"""pnc-mechanism (Def 6.8, Thm 6.9) with bounds from the noisy identity answers (Thm 6.7).

    Parameters as :class:`PncBounded`.

    Cells: ``clipped`` = clipped group sums :math:`T_\ell`, ``bound`` = the group's public
    bound :math:`u^*_\ell`.
    """

    needs: ClassVar[tuple[str, ...]] = ("clipped", "bound")
    description: ClassVar[str] = (
        "pnc-mechanism (Def 6.8, Thm 6.9; bounds are post-processing of the identity "
        "query, Thm 6.7)"
    )

    @override
    def __call__(self, cells: Cells, source: NoiseSource) -> Measurement:
        delta = pnc_sensitivity_upper(cells["bound"], self.neighbor, self.gamma)
        return pnc_mechanism(
            cells["clipped"], delta, self.mu, source, confidence=self.confidence,
            grid=float(self.grid or 1),
        )  # fmt: skip
