"""Coarsening as a protection mode: rounding, ranges, suppression as last resort, audited.

No formal guarantee: the publication is checked by the attacker's LP over all published
tables together (the audited risk), see docs/coarsening.md.

* :mod:`.rounding` — deterministic rounding to a base; unbiased random rounding.
* :mod:`.ranges` — fixed size-class ranges.
* :mod:`.publication` — one attribute's cells as published (status flags) and each
  cell's own interval.
* :mod:`.check` — the disclosure check: the LP over all tables, the suppression rules.
* :mod:`.optimize` — the greedy optimizer, tightening and the information-loss measure.
"""

from eree.suppression.coarsening.check import (
    CheckResult,
    disclosure_check,
    floored_bounds,
    presence_floor,
    raise_to_floor,
)
from eree.suppression.coarsening.optimize import (
    BASES,
    GRID_BASES,
    CoarseningResult,
    cell_loss,
    greedy_coarsen,
    ladder_bases,
    tighten,
)
from eree.suppression.coarsening.publication import STATUSES, Publication
from eree.suppression.coarsening.ranges import SIZE_CLASS_EDGES, size_class
from eree.suppression.coarsening.rounding import random_round, round_to_base, rounding_rng

__all__ = [
    "BASES",
    "GRID_BASES",
    "SIZE_CLASS_EDGES",
    "STATUSES",
    "CheckResult",
    "CoarseningResult",
    "Publication",
    "cell_loss",
    "disclosure_check",
    "floored_bounds",
    "greedy_coarsen",
    "ladder_bases",
    "presence_floor",
    "raise_to_floor",
    "random_round",
    "round_to_base",
    "rounding_rng",
    "size_class",
    "tighten",
]
