"""Cell suppression end to end: tabulate → primary → secondary → audit.

:func:`suppress_establishments` runs the QCEW practice on establishment microdata of one
state; :func:`suppress_tables` on any :class:`~.tables.LinkedTables`. The result holds
the pattern, the published table (suppressed values withheld, as BLS prints them with
disclosure code ``N``), the audit and rates by aggregation level.

What is confidential: the true cell values, the primary/secondary status of a cell (it
tells which cells are dominated), the protection levels and the audit's bounds next to
the true values. :meth:`SuppressionResult.published` is the release;
:meth:`SuppressionResult.summary` holds counts and rates only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from eree.errors import DataValidationError
from eree.suppression.audit import AuditResult, audit
from eree.suppression.merges import CategoryMerges, merge_categories
from eree.suppression.rules import PrimaryResult, PrimaryRules, primary_suppression
from eree.suppression.secondary import (
    SecondaryConfig,
    SecondaryResult,
    secondary_suppression,
)
from eree.suppression.tables import (
    ESTABLISHMENTS,
    LinkedTables,
    TableLayout,
    prepare_qcew_frame,
    qcew_layout,
    tabulate,
)

__all__ = [
    "DEFAULT_ATTRIBUTES",
    "SuppressionConfig",
    "SuppressionResult",
    "area_fips",
    "qcew_tables",
    "suppress_establishments",
    "suppress_tables",
]

#: the QCEW measures: three monthly employment levels and quarterly wages
DEFAULT_ATTRIBUTES: tuple[str, ...] = ("m1emp", "m2emp", "m3emp", "wage")


@dataclass(frozen=True)
class SuppressionConfig:
    """Configuration of a cell-suppression run.

    Attributes:
        rules: primary rules (threshold 3, dominance (1, 80 %), p % = 10).
        secondary: complementary suppression cost.
        attributes: attributes tabulated, tested by the rules, protected and audited.
        skip_secondary: publish everything but the primary cells (to show the attack).
        run_audit: audit the final pattern.
        domain: include the domain level (BLS agglvl 52/72).
        exact_audit: solve both LPs of every suppressed cell (default: only those of the
            cells whose protection the complementary suppression's witnesses do not
            already prove; see :mod:`.audit`).
    """

    rules: PrimaryRules = field(default_factory=PrimaryRules)
    secondary: SecondaryConfig = field(default_factory=SecondaryConfig)
    attributes: tuple[str, ...] = DEFAULT_ATTRIBUTES
    skip_secondary: bool = False
    run_audit: bool = True
    domain: bool = True
    exact_audit: bool = False

    def describe(self) -> dict[str, Any]:
        """The configuration as a JSON-serialisable dictionary."""
        return {
            "rules": self.rules.describe(),
            "secondary": {
                "skipped": self.skip_secondary,
                "cost": self.secondary.cost,
                "cost_attribute": self.secondary.cost_attribute or self.attributes[0],
                "keep_tables": list(self.secondary.keep_tables),
            },
            "attributes": list(self.attributes),
            "domain": self.domain,
            "exact_audit": self.exact_audit,
        }


@dataclass(frozen=True)
class SuppressionResult:
    """A suppression pattern with its provenance.

    Attributes:
        tables: the linked tables (true values: confidential).
        primary: the primary suppression.
        secondary: the complementary suppression (None when skipped).
        suppressed: boolean per cell.
        audit: the attacker's bounds (None when not run).
        timings: seconds per step.
        config: the configuration.
        state: state FIPS code (for QCEW ``area_fips``), when known.
    """

    tables: LinkedTables
    primary: PrimaryResult
    secondary: SecondaryResult | None
    suppressed: np.ndarray
    audit: AuditResult | None
    timings: dict[str, float]
    config: SuppressionConfig
    state: str | None = None

    def _keys(self) -> pl.DataFrame:
        keys = self.tables.cells.select(["cell", *self.tables.key_columns, ESTABLISHMENTS])
        if self.state is not None and "area" in keys.columns:
            keys = keys.with_columns(area_fips(keys.get_column("area"), self.state))
        return keys

    def published(self) -> pl.DataFrame:
        """The release.

        Keys, establishments (public for every cell), each attribute (null where
        suppressed) and ``disclosure_code`` (``"N"`` suppressed, ``""``).
        """
        vals = [
            pl.when(pl.Series(self.suppressed))
            .then(None)
            .otherwise(self.tables.cells.get_column(a))
            .alias(a)
            for a in self.tables.attributes
        ]
        return self._keys().with_columns(
            *vals,
            pl.Series("disclosure_code", np.where(self.suppressed, "N", "")),
        )

    def pattern(self) -> pl.DataFrame:
        """Keys and, per cell, which rule fired and whether it is suppressed (internal)."""
        sec = (
            self.secondary.secondary
            if self.secondary is not None
            else np.zeros(self.tables.n_cells, bool)
        )
        return self._keys().with_columns(
            pl.Series("suppressed", self.suppressed),
            pl.Series("primary", self.primary.primary),
            pl.Series("secondary", sec),
            pl.Series("rule_threshold", self.primary.threshold),
            pl.Series("rule_dominance", self.primary.dominance),
            pl.Series("rule_p_percent", self.primary.p_rule),
            pl.Series("exempt", self.primary.exempt),
        )

    def rates(self, employment: str | None = None) -> pl.DataFrame:
        """Suppression rates by table (aggregation level).

        Cells, share suppressed (primary, secondary), share of establishments and of
        employment in suppressed cells. The employment share uses true values of
        suppressed cells: internal.
        """
        emp = employment or _employment_attribute(self.tables.attributes)
        df = self._keys().with_columns(
            pl.Series("suppressed", self.suppressed),
            pl.Series("primary", self.primary.primary),
            self.tables.cells.get_column(emp).alias("_emp"),
            self.tables.cells.get_column("table").alias("_table"),
        )
        return _rates(df)

    def summary(self) -> dict[str, Any]:
        """Counts, rates and timings; no confidential value."""
        n = self.tables.n_cells
        out: dict[str, Any] = {
            "cells": n,
            "relations": self.tables.n_relations,
            "primary": int(self.primary.primary.sum()),
            "primary_by_rule": {
                "threshold": int(self.primary.threshold.sum()),
                "dominance": int(self.primary.dominance.sum()),
                "p_percent": int(self.primary.p_rule.sum()),
            },
            "exempt": int(self.primary.exempt.sum()),
            "secondary": int(self.secondary.secondary.sum()) if self.secondary else 0,
            "suppressed": int(self.suppressed.sum()),
            "suppressed_share": float(self.suppressed.mean()) if n else 0.0,
            "unprotectable": int(self.secondary.unprotectable.size) if self.secondary else 0,
            "witness_lps": self.secondary.lps if self.secondary else 0,
            "witness_lp_counts": dict(self.secondary.stats) if self.secondary else {},
            "timings_s": {k: round(v, 3) for k, v in self.timings.items()},
            "config": self.config.describe(),
        }
        if self.state is not None:
            out["state"] = self.state
        if self.audit is not None:
            out["audit"] = self.audit.summary()
        out["rates"] = self.rates().drop("employment_share_suppressed").to_dicts()
        return out


def _employment_attribute(attributes: Sequence[str]) -> str:
    for a in ("m3emp", "m1emp", "m2emp"):
        if a in attributes:
            return a
    return attributes[0]


def _rates(df: pl.DataFrame) -> pl.DataFrame:
    return (
        df.group_by("_table", "table_code")
        .agg(
            pl.len().alias("cells"),
            pl.col("suppressed").mean().alias("suppressed_share"),
            pl.col("primary").mean().alias("primary_share"),
            (
                pl.col(ESTABLISHMENTS).filter(pl.col("suppressed")).sum()
                / pl.col(ESTABLISHMENTS).sum()
            )
            .fill_nan(0.0)
            .alias("establishment_share_suppressed"),
            (pl.col("_emp").filter(pl.col("suppressed")).sum() / pl.col("_emp").sum())
            .fill_nan(0.0)
            .alias("employment_share_suppressed"),
        )
        .sort("_table")
        .drop("_table")
    )


def area_fips(area: pl.Series, state: str) -> pl.Series:
    """QCEW ``area_fips``: state FIPS + county (``000`` for the state)."""
    st = str(state).zfill(2)
    a = area.cast(pl.Utf8)
    return (
        pl.select(
            pl.when(a == "state").then(pl.lit(st + "000")).otherwise(pl.lit(st) + a.str.zfill(3))
        )
        .to_series()
        .alias("area_fips")
    )


def suppress_tables(
    tables: LinkedTables,
    config: SuppressionConfig | None = None,
    *,
    state: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    audit_progress: Callable[[int, int], None] | None = None,
) -> SuppressionResult:
    """Primary and secondary suppression of linked tables, then the audit.

    Args:
        tables: the linked tables.
        config: the configuration.
        state: state FIPS code (for QCEW ``area_fips``).
        progress: called with (primary cells done, total) during complementary
            suppression.
        audit_progress: called with (cells audited, total) during the audit.
    """
    cfg = config or SuppressionConfig()
    attrs = tuple(a for a in cfg.attributes if a in tables.attributes)
    if not attrs:
        raise ValueError("none of the configured attributes was tabulated")
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    prim = primary_suppression(tables, cfg.rules, attrs)
    timings["primary"] = time.perf_counter() - t0
    sec: SecondaryResult | None = None
    suppressed = prim.primary.copy()
    if not cfg.skip_secondary:
        t0 = time.perf_counter()
        sec = secondary_suppression(
            tables, prim, cfg.secondary, attributes=attrs, progress=progress
        )
        suppressed = sec.suppressed
        timings["secondary"] = time.perf_counter() - t0
    aud: AuditResult | None = None
    if cfg.run_audit:
        t0 = time.perf_counter()
        aud = audit(
            tables,
            suppressed,
            attributes=attrs,
            protection=prim.protection,
            primary=prim.primary,
            witnesses=sec.witnesses if sec is not None else None,
            exact=cfg.exact_audit,
            progress=audit_progress,
        )
        timings["audit"] = time.perf_counter() - t0
    return SuppressionResult(tables, prim, sec, suppressed, aud, timings, cfg, state)


def qcew_tables(
    frame: pl.DataFrame,
    attributes: Sequence[str] = DEFAULT_ATTRIBUTES,
    *,
    domain: bool = True,
    top: int = 2,
    layout: TableLayout | None = None,
    merges: CategoryMerges | None = None,
) -> LinkedTables:
    """The QCEW linked tables of one state's establishments.

    ``merges``: groups of counties and of six-digit industries tabulated as one category
    each (:mod:`eree.suppression.merges`; :func:`~eree.suppression.merges.check_merges`
    says whether the data support them).
    """
    prepared = prepare_qcew_frame(frame)
    if merges:
        prepared = merge_categories(prepared, merges)
    return tabulate(prepared, layout or qcew_layout(domain=domain), attributes, top=top)


def suppress_establishments(
    frame: pl.DataFrame,
    config: SuppressionConfig | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
    audit_progress: Callable[[int, int], None] | None = None,
) -> SuppressionResult:
    """Cell suppression of the QCEW linked tables of one state's establishments.

    Args:
        frame: establishments in the docs/design.md#establishment-data schema (``cnty``, ``own``,
        ``naics``
            and optionally its prefixes, ``super_sector``, the attributes; ``state``
            when present must hold one value).
        config: the configuration.
        progress: called with (primary cells done, total) during secondary suppression.
        audit_progress: called with (cells audited, total) during the audit.

    Raises:
        DataValidationError: more than one state, missing columns, invalid values.
    """
    cfg = config or SuppressionConfig()
    state = None
    if "state" in frame.columns:
        states = frame.get_column("state").cast(pl.Utf8).unique().to_list()
        if len(states) > 1:
            raise DataValidationError(
                f"the input holds {len(states)} states; suppress one state at a time "
                "(the QCEW linked tables are per state)",
                file="<frame>",
                column="state",
                rule="one-state",
            )
        state = str(states[0]).zfill(2) if states else None
    t0 = time.perf_counter()
    tables = qcew_tables(frame, cfg.attributes, domain=cfg.domain, top=cfg.rules.top_needed)
    t_tab = time.perf_counter() - t0
    res = suppress_tables(
        tables, cfg, state=state, progress=progress, audit_progress=audit_progress
    )
    res.timings["tabulate"] = t_tab
    return res
