"""Cell suppression — the current QCEW practice — as a baseline, with an attack audit
(DESIGN.md §4.3; Webb et al., ``papers/004_*`` §2.2 and Appendix E).

* :mod:`.tables` — the QCEW linked tables: establishments tabulated into area ×
  ownership × industry-level cells, with their additivity relations.
* :mod:`.rules` — primary suppression (threshold, (n, k) dominance, p%) and each
  primary cell's protection level.
* :mod:`.secondary` — complementary suppression by witness LPs (HiGHS).
* :mod:`.audit` — the attacker's LP bounds of every suppressed cell; pinned and
  narrowed cells.
* :mod:`.pipeline` — the whole run; published table, pattern, rates.
* :mod:`.bls` — BLS's actual rates (disclosure code N) next to eree's.
* :mod:`.compare` — cell suppression versus a GEDP release.
* :mod:`.lp` — HiGHS through SciPy (warm-started re-solves).

See ``docs/cell-suppression.md`` for the algorithm, its limits and results.
"""

from eree.suppression.audit import AuditResult, SolverError, attacker_bounds, audit
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
    "attacker_bounds",
    "audit",
    "marginals_layout",
    "prepare_qcew_frame",
    "primary_suppression",
    "qcew_layout",
    "qcew_tables",
    "secondary_suppression",
    "suppress_establishments",
    "suppress_tables",
    "tabulate",
]
