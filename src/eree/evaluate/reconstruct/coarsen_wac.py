r"""The WAC tables' small-cell rule audited by the reconstruction audit's interval LP.

:func:`rule_audit` audits any publication of the WAC families by block (the coarsened one
of :func:`eree.suppression.coarsening.jobs.coarsen_jobs`, the frontier's suppressed one,
the exact tables) against the rule that coarsening protects (docs/coarsening.md): a cell
with 1 … ``threshold`` − 1 jobs is sensitive, and the attacker's interval for it must
cover :math:`[T - \min(p, T),\ T + p]`. The attacker is the reconstruction audit's reader
and interval LP (:func:`.tables.from_frame`, :func:`.intervals.interval_audit`).

The optimizer itself lives below the release path, in :mod:`eree.suppression.coarsening.jobs`
(``coarsen_jobs`` and ``WAC_BASES`` are imported here for the callers that name them here).
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
) -> dict[str, Any]:
    r"""Audit a WAC publication against the small-cell rule, by the interval LP.

    The reconstruction audit's reader and LP (:func:`.tables.from_frame`,
    :func:`.intervals.interval_audit`: relations derived from the keys, every table of a
    block together) give every cell's interval; a cell with 1 … ``threshold`` − 1 jobs is
    a **violation** when its interval does not cover
    :math:`[T - \min(\mathrm{protection}, T),\ T + \mathrm{protection}]`. Counts only.

    Args:
        published: the publication in the table format (any method), or its tables.
        exact: the exact cells (true values; the auditor's).
        threshold, protection: the rule.

    Returns:
        ``cells``, ``cells_nonzero``, ``sensitive``, ``violations``, ``cells_pinned``,
        ``cells_published`` (not suppressed), ``cells_informative`` (loss < 1),
        ``information_loss`` (mean over every cell, and ``information_loss_nonzero``
        over cells with a job: width of the cell's own interval relative to
        max(T, 1), at most 1; suppressed 1), ``by_status``, ``how`` (LPs).
    """
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
    ia = interval_audit(pub, truth=t)
    need_lo = t - np.minimum(protection, t)
    need_hi = t + protection
    sens = (t >= 1) & (t <= threshold - 1)
    covered = (ia.lower <= need_lo + 1e-6) & (ia.upper >= need_hi - 1e-6)
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
    }
