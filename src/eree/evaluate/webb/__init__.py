r"""Experiments of the QCEW paper (Webb et al., ``papers/004_*``, §8 and Appendices C, H).

``eree evaluate webb-…`` (docs/design.md#command-line, #evaluation):

* ``webb-table11`` — Appendix H, Table 11: the WLS ablation (Est / Act / Hybrid, ψ = √
  and log), by :func:`eree.evaluate.webb.ablation.webb_table11`, run in chunks of
  50,000 trials up to ``table11_trials`` (the paper used 1,000,000); each cell with the
  paper's value, eree's value, its Monte Carlo standard error and the distance between
  the two in standard errors (:func:`table11`).
* ``webb-table3`` — Table 3: quartiles and mean of the signed differences
  (reconstructed − true) of group-by answers computed from the protected microdata, at
  state and county × total, supersector and NAICS-5, for both workflows.
* ``webb-figures`` — Figures 2 and 3 (absolute error per group, averaged over the
  replicates, by county, NAICS-3 and NAICS-5; absolute error of the state total per
  replicate) and Figure 8 (per-group relative error |x − x̃|/(x + 1) against the true
  value, NAICS-3, NAICS-5, county × NAICS-5), employment (month 3) and wages.
* ``webb-figure9`` — Figure 9: median relative error as the overall budget μ varies
  (every per-query μ scaled by the same factor, Table 7's shares kept).
* ``webb-all`` — all of the above (one set of replicates for Tables 3 and Figures 2, 3, 8).

**The two workflows** compared (§8): *pnc* — the identity query by the √-mechanism
(ψ-mechanism with ψ = √x; Thm 6.6 estimates and estimated variances), every other query
by the pnc-mechanism (ζ = 0.01, bounds from the identity answers, public variances); *sqrt*
— every query by the √-mechanism. Both with the Table 7 budgets (:data:`TABLE7`: per query
μ for each month of employment and for wages; μ ≈ 2.31 in all), γ_emp = 0.5,
γ_wage = 50. Each replicate runs the real release path
(:func:`eree.release.gedp.release_gedp`) and the real microdata post-processing
(:func:`eree.release.microdata.build_microdata`, WLS of Eq. 1 from the published tables,
no non-negativity), then tabulates the microdata at the QCEW aggregation levels
(:data:`GROUPINGS`: state and county × total, supersector, sector, NAICS-3 … NAICS-6). The
truth is the same tabulation of the confidential microdata, computed once. The third
workflow, *adaptive* (beyond the paper), answers the group-bys with the per-group choice of
:class:`~eree.mechanisms.adaptive.AdaptiveGroupBy` and fits its microdata with
``[postprocess] microdata_fit = "sqrt-space"`` (:mod:`eree.postprocess.sqrt_space`: the
ψ-answered cells in √-space, the total anchored). Replicate r uses
the same seed in both workflows (and at every budget of the sweep): the identity query,
drawn first in both, gets the same noise — common random numbers, so differences between
workflows are not noise in the noise.

Outputs (:func:`write_webb_outputs`): ``results.csv`` (tidy: experiment, workload = the
attribute or Table 11 query, mechanism = workflow, alpha, epsilon, mu = overall μ, stratum
= grouping, metric, value, trials), ``cells.csv`` (one row per workflow, attribute,
grouping and cell: true value, mean absolute, relative and signed error over the
replicates), ``run.json``, ``figures/*.png`` and ``report.html`` with a short reading of each
table and figure computed from the numbers.

Evaluation code sees the confidential (synthetic) values: that is its job; nothing here is
on the release path.
"""

from eree.evaluate.webb.plans import (
    BUDGETS,
    EXPERIMENTS,
    GROUPINGS,
    SECTION_8_2,
    TABLE7,
    load_webb_data,
    webb_plan,
)
from eree.evaluate.webb.replicates import Replicates, run_replicates, table11
from eree.evaluate.webb.report import write_webb_outputs
from eree.evaluate.webb.results import WebbResult, budget_rows
from eree.evaluate.webb.run import run_webb

__all__ = [
    "BUDGETS",
    "EXPERIMENTS",
    "GROUPINGS",
    "SECTION_8_2",
    "TABLE7",
    "Replicates",
    "WebbResult",
    "budget_rows",
    "load_webb_data",
    "run_replicates",
    "run_webb",
    "table11",
    "webb_plan",
    "write_webb_outputs",
]
