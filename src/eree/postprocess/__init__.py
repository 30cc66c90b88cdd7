"""Postprocessing of noisy answers (docs/design.md#post-processing).

* :mod:`.wls` — establishment microdata by weighted least squares from the published
  tables (Webb et al. §7, Eq. 1); also the tabulation of any microdata at QCEW
  aggregation levels (:mod:`eree.data.qcew`) and its per-level summary.
* :mod:`.sqrt_space` — the same microdata fitted in √-space where the answers are
  ψ-space answers, with an anchored total.
* :mod:`.hierarchy` — publication-grade ER-EE count tables: consistent, non-negative,
  integer.

The reconstructions and the publication-grade tables are functions of mechanism outputs
and public parameters only. The unbiased estimators, published variance estimates and
confidence intervals of the ψ-mechanism (Webb et al. Thm 6.6) belong to the mechanisms:
:mod:`eree.mechanisms.estimators`.
"""
