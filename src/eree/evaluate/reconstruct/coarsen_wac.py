r"""The WAC tables' small-cell rule audited by the reconstruction audit's interval LP.

:func:`rule_audit` audits any publication of the WAC families by block (the coarsened one
of :func:`eree.suppression.coarsening.jobs.coarsen_jobs`, the frontier's suppressed one,
the exact tables) against the rule that coarsening protects (docs/coarsening.md; below).
The attacker is the reconstruction audit's reader
and interval LP (:func:`.tables.from_frame`, :func:`.intervals.interval_audit`).

The optimizer itself lives below the release path, in :mod:`eree.suppression.coarsening.jobs`
(``coarsen_jobs`` and ``WAC_BASES`` are imported here for the callers that name them here).

**The disclosure rule** (the one the frontier's suppression arm, :func:`.frontier.suppress_small`,
protects, so both are compared at the same audited risk): every job is a contributor, a
cell with 1 … ``threshold`` − 1 jobs (default 1 or 2) is sensitive (the threshold rule),
its protection level is one job (``min_protection``). Zero cells are published exactly by
both methods, so a cell not published exactly is known to hold a job: the attacker — the
reconstruction audit's interval LP (:func:`.intervals.interval_audit`) — gives such a cell
the lower bound 1 (:func:`eree.suppression.coarsening.presence_floor`, per table), and the
rule protects the count, not that presence: the attacker's interval must cover
:math:`[\max(T - 1, P),\ T + 1]`, :math:`P` the least the cell can hold given which cells
are non-zero (:func:`eree.suppression.rules.protected_lower`; 1 for a cell with a job).
One job cannot be told from two; that a cell holds a job is disclosed (docs/coarsening.md
says why, and what protecting presence too would take). ``zero_aware=False`` builds and
audits as the earlier audit did (a withheld cell read as :math:`[0, \infty)`, the lower end
:math:`T - \min(1, T)`), for comparison only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from eree.evaluate.reconstruct.intervals import interval_audit
from eree.evaluate.reconstruct.tables import PublishedTables, from_frame
from eree.suppression.coarsening.jobs import WAC_BASES, coarsen_jobs
from eree.suppression.wac import ATTRIBUTES

__all__ = ["WAC_BASES", "coarsen_jobs", "rule_audit"]

_KEYS = ["table", "block", *ATTRIBUTES]


def rule_audit(
    published: pl.DataFrame | PublishedTables,
    exact: pl.DataFrame,
    *,
    threshold: int = 3,
    protection: float = 1.0,
    zero_aware: bool = True,
) -> dict[str, Any]:
    r"""Audit a WAC publication against the small-cell rule, by the interval LP.

    The reconstruction audit's reader and LP (:func:`.tables.from_frame`,
    :func:`.intervals.interval_audit`: relations derived from the keys, every table of a
    block together) give every cell's interval. The attacker uses what the exact zeros
    disclose (``zero_aware``): a cell not published exactly in a table whose zero cells
    are all published exactly holds at least one job
    (:func:`eree.suppression.coarsening.presence_floor`, kind = the table). A cell with
    1 … ``threshold`` − 1 jobs is a **violation** when its interval does not cover
    :math:`[\max(T - \mathrm{protection},\ 1),\ T + \mathrm{protection}]`: the count
    is protected, the presence that the exact zeros disclose is not (module docstring).
    Counts only.

    Args:
        published: the publication in the table format (any method), or its tables.
        exact: the exact cells (true values; the auditor's).
        threshold, protection: the rule.
        zero_aware: False: the previous audit, for comparison only — an attacker who
            ignores what the zeros disclose, and the rule
            :math:`[T - \min(\mathrm{protection}, T),\ T + \mathrm{protection}]`.

    Returns:
        ``cells``, ``cells_nonzero``, ``sensitive``, ``violations``, ``cells_pinned``,
        ``cells_published`` (not suppressed), ``cells_informative`` (loss < 1),
        ``information_loss`` (mean over every cell, and ``information_loss_nonzero``
        over cells with a job: width of the cell's own interval relative to
        max(T, 1), at most 1; suppressed 1), ``by_status``, ``how`` (LPs),
        ``tables_presence_disclosed`` (tables whose zeros are all published exactly),
        ``zero_aware``.
    """
    from eree.suppression.coarsening import presence_floor
    from eree.suppression.rules import protected_lower

    pub = published if isinstance(published, PublishedTables) else from_frame(published)
    cells = pub.cells.with_row_index("_i")
    for k in _KEYS:
        if k not in cells.columns:
            cells = cells.with_columns(pl.lit(None, dtype=pl.Utf8).alias(k))
    j = cells.select("_i", *_KEYS).join(
        exact.select(*_KEYS, pl.col("value").alias("_t")), on=_KEYS, how="left", nulls_equal=True
    )
    t = j.sort("_i").get_column("_t").to_numpy().astype(np.float64)
    if np.isnan(t).any():
        raise ValueError("the publication has a cell the exact tables do not")
    status = pub.cells.get_column("status").to_numpy().astype(str)
    table = pub.cells.get_column("table").to_numpy().astype(str)
    floor = presence_floor(t, status == "exact", table) if zero_aware else None
    ia = interval_audit(pub, truth=t, floor=floor)
    need_lo = protected_lower(pub.derived_relations(), t, np.full(t.size, protection), floor)
    need_hi = t + protection
    sens = (t >= 1) & (t <= threshold - 1)
    covered = (ia.lower <= need_lo + 1e-6) & (ia.upper >= need_hi - 1e-6)
    disclosed = {str(x) for x in table[floor > 0]} if floor is not None else set()
    own_lo, own_hi = ia.own_lower, ia.own_upper
    width = np.where(np.isfinite(own_hi), own_hi - own_lo, np.inf)
    loss = np.minimum(1.0, width / np.maximum(t, 1.0))
    status = ia.status
    nz = t > 0
    return {
        "cells": int(t.size),
        "cells_nonzero": int(nz.sum()),
        "sensitive": int(sens.sum()),
        "violations": int((sens & ~covered).sum()),
        "cells_pinned": int(ia.pinned.sum()),
        "cells_published": int((status != "suppressed").sum()),
        "cells_informative": int((loss < 1.0).sum()),
        "information_loss": float(loss.mean()) if t.size else 0.0,
        "information_loss_nonzero": float(loss[nz].mean()) if nz.any() else 0.0,
        "by_status": {str(s): int((status == s).sum()) for s in np.unique(status)},
        "how": dict(ia.stats),
        "tables_presence_disclosed": len(disclosed),
        "zero_aware": zero_aware,
    }
