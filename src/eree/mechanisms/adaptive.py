r"""Adaptive GEDP group-by: per group, the ψ- or the pnc-mechanism (docs/design.md#gedp-mechanisms).

Beyond the papers (future work in the QCEW paper's conclusion). After the identity
query, everything needed to predict each mechanism's error for a group is public:

* pnc (Def 6.8): the variance :math:`(\Delta_\ell/\mu)^2` is exact and public — Δ_ℓ is a
  function of the bound :math:`u^*_\ell`, itself a function of the noisy identity answers
  (Thm 6.7);
* ψ-mechanism (Def 6.4): its variance depends on the confidential group sum x (Thm 6.6:
  :math:`2\sigma^2(2x+\sigma^2)` for ψ = √x, σ = γ/μ); x is estimated by
  :math:`\hat x_\ell = \max(0, \sum_{j\in\ell}\tilde x_j)`, the group's sum of the identity
  query's *published* estimates.

:class:`AdaptiveGroupBy` answers each group with the mechanism of the smaller predicted
variance. The choice is a function of already-published values and public parameters
only, so it is post-processing of the identity query's release: conditionally on it, each
group is answered by a μ-GEDP mechanism (ψ or pnc with public bounds), and a group-by's
groups are disjoint, so the query costs μ per attribute exactly as pnc or ψ would
(docs/privacy.md, "Adaptive choice per group"). The choice is published with each cell.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike
from typing_extensions import override

from eree.mechanisms.base import Cells, ExpectedError, Measurement
from eree.mechanisms.estimators import (
    psi_confidence_interval,
    psi_estimates,
    psi_std_at,
    psi_variance_at,
    z_value,
)
from eree.mechanisms.gedp import (
    Pnc,
    PncBounded,
    PsiMechanism,
    charged_distance,
    pnc_sensitivity,
    pnc_sensitivity_upper,
    psi_space_grid,
)
from eree.mechanisms.noise import NoiseSource
from eree.mechanisms.sampling import (
    Centre,
    Term,
    exact_centre,
    psi_centre,
    rounded_noisy,
    scale_term,
)

__all__ = ["AdaptiveGroupBy", "psi_variance_at"]


@dataclass(frozen=True, kw_only=True)
class AdaptiveGroupBy(PncBounded):
    r"""Per group and attribute, the ψ-mechanism or pnc, whichever is predicted better.

    The bounds, ζ and the identity query are pnc's (:class:`~eree.mechanisms.gedp.PncBounded`,
    Thm 6.7). For group ℓ with public bound u*_ℓ and public estimate x̂_ℓ:

    * predicted pnc variance :math:`(\Delta_\ell/\mu)^2` (Def 6.8, exact);
    * predicted ψ variance :func:`psi_variance_at` ``(x̌_ℓ)`` (Thm 6.6), σ = γ/μ, at the
      lower confidence limit :math:`\check x_\ell = \max(0, \hat x_\ell - z\sqrt{V_\ell})`,
      V_ℓ the sum of the identity estimates' published variances, z = :attr:`choice_z`
      (2): x̂ is mostly noise for wages at the QCEW paper's budgets, and comparing at x̂
      itself sent groups to pnc at random (New York, docs/webb-evaluation.md);
    * the group is answered by pnc when its variance is not larger, else by ψ:
      ψ: :math:`\omega_\ell=\psi(x_\ell)+N(0,\sigma^2)`, published x̃ = Thm 6.6 estimate with
      its v̂ (below); pnc: :math:`T_\ell+N(0,(\Delta_\ell/\mu)^2)` with the
      public variance.

    The ψ branch publishes the ψ-mechanism's own variance estimate v̂ = 2σ²(2·max(x̃, 0)
    + σ²) from the group's answer (Thm 6.6), as a plain ψ-mechanism would. It is right
    *given the choice*: the choice depends on the identity query's noise only, which is
    independent of the group's own noise. A variance evaluated at x̂_ℓ (what the choice
    itself compares) is not: ψ is chosen where x̂_ℓ is small, so given the choice it is
    biased low — for Syn-RI's state wage total (identity answers nearly pure noise) x̂ = 0
    in about a quarter of the releases, and the published standard error was then √2·σ²
    ≈ 0.35 M against a true ≈ 3.5 M. (An earlier version published the x̂-based
    variance because Eq. 1 microdata weighted by the own v̂ over-weights under-estimates
    and biases sums of many cells; the adaptive workflow now fits its ψ answers in
    √-space, :mod:`eree.postprocess.sqrt_space`, which does not use these variances.)

    Cells: ``value`` (group sums x_ℓ), ``clipped`` (clipped sums T_ℓ), ``bound`` (u*_ℓ),
    ``identity_sum`` (:math:`\sum_{j\in\ell}\tilde x_j` of the identity query's published
    estimates — public), ``identity_variance`` (the sum of their published variances —
    public).

    The Measurement's ``extra["chosen"]`` holds, per group, the registry name of the
    mechanism that answered it (published as the ``<attribute>_mechanism`` column).
    """

    needs: ClassVar[tuple[str, ...]] = (
        "value", "clipped", "bound", "identity_sum", "identity_variance"
    )  # fmt: skip
    description: ClassVar[str] = (
        "adaptive choice per group between the ψ-mechanism (Def 6.4) and the "
        "pnc-mechanism (Def 6.8), chosen from the identity query's published answers "
        "(post-processing)"
    )

    #: the ψ branch's published variance, an estimate of Thm 6.6's 2σ²(2x + σ²): "answer"
    #: (the default: v̂ from the group's own ω, as the ψ-mechanism publishes; right given
    #: the choice), "identity" (at the identity-based x̂_ℓ; biased low given the choice)
    #: or "pooled" (their mean). See the class docstring for why.
    psi_variance_from: ClassVar[str] = "answer"
    #: z of the conservative choice: pnc only where ψ's variance at the lower confidence
    #: limit x̂_ℓ − z·sd(x̂_ℓ) is still the larger (class docstring)
    choice_z: ClassVar[float] = 2.0

    def _derive(self) -> None:
        super()._derive()
        if psi_variance_at(self.neighbor, np.zeros(1), 1.0) is None:
            raise self._fail(
                f"attribute {self.attribute!r}: the adaptive choice needs the ψ-mechanism's "
                f"variance formula (Thm 6.6), which {self.neighbor.describe()} does not have; "
                "use sqrt, log(x + a) with a > 0 or dp, or the pnc mechanism"
            )

    @property
    def sigma(self) -> float:
        """σ = γ/μ of the ψ-mechanism branch (γ plus ψ's excess, :func:`charged_distance`)."""
        return charged_distance(self.neighbor, self.gamma) / self.mu

    @property
    def psi_grid(self) -> float:
        """The ψ branch's grid: :attr:`grid` for ψ = x, else the transformed-space default."""
        return psi_space_grid(self.neighbor, float(self.grid or 1))

    @override
    def public_params(self) -> dict[str, Any]:
        return {**super().public_params(), "sigma": self.sigma, "psi_grid": self.psi_grid}

    def draw(
        self, use_pnc: np.ndarray, cells: Cells, delta: np.ndarray, source: NoiseSource
    ) -> np.ndarray:
        """Per group: round(T + N(0,(Δ/μ)²)) (pnc) or round(ψ(x) + N(0, σ²)) (ψ)."""
        psi = psi_centre(cells["value"], self.neighbor)
        clipped = exact_centre(cells["clipped"])
        pnc_exact = None
        if psi.exact is not None:
            e = psi.exact
            pnc_exact = lambda i: clipped.ball(i) if use_pnc.flat[i] else e(i)  # noqa: E731
        centre = Centre(
            np.where(use_pnc, clipped.value, psi.value), np.where(use_pnc, 0.0, psi.error),
            pnc_exact,
        )  # fmt: skip
        t_pnc = scale_term("gaussian", delta / self.mu, numerator=delta, denominator=self.mu)
        t_psi = scale_term("gaussian", self.sigma, denominator=self.mu,
                           numerator=charged_distance(self.neighbor, self.gamma),
                           shape=centre.value.shape)  # fmt: skip
        scale = np.where(use_pnc, t_pnc.scale, t_psi.scale)
        term = Term(
            t_psi.law, scale, t_psi.rel_error,
            lambda i: t_pnc.ball(i) if use_pnc.flat[i] else t_psi.ball(i),
        )  # fmt: skip
        grid = np.where(use_pnc, self.grid, self.psi_grid)  # type: ignore[arg-type]
        return rounded_noisy(source, centre, [term], grid)

    @override
    def expected_error(self, at: Mapping[str, float]) -> ExpectedError | None:
        """The smaller of the ψ-mechanism's error at ``value`` and pnc's at ``bound``."""
        psi = PsiMechanism(query=self.query, attribute=self.attribute, neighbor=self.neighbor,
                           gamma=self.gamma, mu=self.mu, confidence=self.confidence)  # fmt: skip
        a, b = psi.expected_error(at), super().expected_error(at)
        if a is None or a.std is None:
            return b
        if b is None or b.std is None:
            return a
        return b if b.std <= a.std else a

    def choose(
        self, bound: ArrayLike, identity_sum: ArrayLike, identity_variance: ArrayLike
    ) -> np.ndarray:
        """True where pnc answers the group (from public inputs only).

        Args:
            bound: the groups' public bounds u*_ℓ.
            identity_sum: the groups' sums of the identity query's published estimates.
            identity_variance: the groups' sums of those estimates' published variances.
        """
        # the stds compared, not the variances: a variance past the float range (a large
        # σ under log(x+a)) would make two infinities equal
        sd_pnc = pnc_sensitivity(bound, self.neighbor, self.gamma) / self.mu
        sd = np.sqrt(np.maximum(np.asarray(identity_variance, dtype=np.float64), 0.0))
        x_low = np.asarray(identity_sum, dtype=np.float64) - self.choice_z * sd
        sd_psi = psi_std_at(self.neighbor, x_low, self.sigma)
        assert sd_psi is not None  # checked in _derive
        return np.asarray(sd_pnc <= sd_psi)

    @override
    def __call__(self, cells: Cells, source: NoiseSource) -> Measurement:
        use_pnc = self.choose(cells["bound"], cells["identity_sum"], cells["identity_variance"])
        delta = pnc_sensitivity_upper(cells["bound"], self.neighbor, self.gamma)
        sd_pnc = delta / self.mu
        # one draw for all groups: round(ψ(x) + N(0, σ²)) on the ψ-space grid where ψ
        # answers, round(T + N(0, (Δ/μ)²)) on the value grid elsewhere
        noisy = self.draw(use_pnc, cells, delta, source)
        est = psi_estimates(noisy, self.neighbor, self.sigma, self.confidence)
        assert est.variance is not None  # checked in _derive
        z = z_value(self.confidence)
        lo, hi = psi_confidence_interval(noisy, self.neighbor, self.sigma, self.confidence)
        estimate = np.where(use_pnc, noisy, est.estimate)
        v_id = psi_variance_at(self.neighbor, cells["identity_sum"], self.sigma)
        assert v_id is not None
        v_psi = {
            "answer": est.variance,
            "identity": v_id,
            "pooled": 0.5 * (est.variance + v_id),
        }[self.psi_variance_from]
        std = np.where(use_pnc, np.hypot(sd_pnc, self.grid / math.sqrt(12.0)), np.sqrt(v_psi))  # type: ignore[operator]
        half = z * sd_pnc + self.grid / 2  # type: ignore[operator]
        ci_low = np.where(use_pnc, np.maximum(noisy - half, 0.0), lo)
        ci_high = np.where(use_pnc, noisy + half, hi)
        chosen = np.where(use_pnc, Pnc.name, PsiMechanism.name)
        method = (
            "adaptive: per group the mechanism with the smaller predicted "
            "variance, from the identity query's published answers only — pnc-mechanism "
            "(Def 6.8; noisy clipped sum, std = Δ_ℓ/μ exact and public) or ψ-mechanism "
            "(Def 6.4; " + est.method + "); the column <attribute>_mechanism says which"
        )
        return Measurement(
            noisy, estimate, std, ci_low, ci_high, method,
            "estimated" if not use_pnc.all() else "public", self.name,
            extra={"sigma": self.sigma, "chosen": chosen},
        )  # fmt: skip
