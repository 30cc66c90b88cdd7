"""Cell suppression — the current QCEW practice — as a product of its own.

Includes the attacker's audit (docs/design.md#cell-suppression; Webb et al., ``papers/004_*`` §2.2
and
Appendix E).

Agencies run cell suppression for real; this package runs it for a large state (New
York, 620K establishments, every linked table) in minutes. It depends on numpy, scipy
and polars only (and on :mod:`eree.data` for validation); the comparison with the formal
mechanisms lives in :mod:`eree.evaluate.suppression_compare`, the commands in
:mod:`eree.cli.suppress` and :mod:`eree.cli.audit`.

* :mod:`.tables` — the QCEW linked tables: establishments tabulated into area ×
  ownership × industry-level cells, with their additivity relations.
* :mod:`.merges` — category merges: groups of counties or six-digit industries
  tabulated as one category (a coarsening tool).
* :mod:`.rules` — primary suppression (threshold, (n, k) dominance, p%) and each
  primary cell's protection level.
* :mod:`.secondary` — complementary suppression by witness LPs (HiGHS) over small
  neighbourhoods, independent components and county lanes on several processes.
* :mod:`.audit` — the attacker's bounds of every suppressed cell (singleton attacks,
  witness-certified bounds, LPs for the rest); pinned and narrowed cells.
* :mod:`.pipeline` — the whole run; published table, pattern, rates.
* :mod:`.bls` — BLS's actual rates (disclosure code N) next to eree's.
* :mod:`.lp` — HiGHS through SciPy (warm-started re-solves).

See ``docs/cell-suppression.md`` for the algorithm, its limits and results.
"""

from eree.suppression.audit import (
    AuditResult,
    SolverError,
    attacker_bounds,
    audit,
    certified_bounds,
    peel,
    verify_witnesses,
)
from eree.suppression.merges import CategoryMerges, check_merges, merge_categories
from eree.suppression.pipeline import (
    DEFAULT_ATTRIBUTES,
    SuppressionConfig,
    SuppressionResult,
    qcew_tables,
    suppress_establishments,
    suppress_tables,
)
from eree.suppression.rules import PrimaryResult, PrimaryRules, primary_suppression
from eree.suppression.secondary import (
    SecondaryConfig,
    SecondaryResult,
    Witness,
    secondary_suppression,
)
from eree.suppression.tables import (
    Dimension,
    LinkedTables,
    TableLayout,
    marginals_layout,
    prepare_qcew_frame,
    qcew_layout,
    tabulate,
)

__all__ = [
    "DEFAULT_ATTRIBUTES",
    "AuditResult",
    "CategoryMerges",
    "Dimension",
    "LinkedTables",
    "PrimaryResult",
    "PrimaryRules",
    "SecondaryConfig",
    "SecondaryResult",
    "SolverError",
    "SuppressionConfig",
    "SuppressionResult",
    "TableLayout",
    "Witness",
    "attacker_bounds",
    "audit",
    "certified_bounds",
    "check_merges",
    "marginals_layout",
    "merge_categories",
    "peel",
    "prepare_qcew_frame",
    "primary_suppression",
    "qcew_layout",
    "qcew_tables",
    "secondary_suppression",
    "suppress_establishments",
    "suppress_tables",
    "tabulate",
    "verify_witnesses",
]
