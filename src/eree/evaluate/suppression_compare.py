r"""Cell suppression versus a GEDP release on the same establishments.

For every cell of the QCEW linked tables (:mod:`.tables`):

* **cell suppression** publishes the exact value or nothing. Reported: the share of
  cells published, the share of employment (and wages) in published cells, and — for
  the suppressed cells — the error a user makes by reading the value printed in BLS
  files (0) or by taking the midpoint of the interval the published cells imply (the
  audit's LP bounds: ``(lower + upper)/2``, ``lower`` when unbounded).
* **GEDP** publishes every cell with noise. The release follows Table 7 of Webb et al.
  (μ ≈ 2.31 in total; ψ = √, γ_emp = 0.5, γ_wage = 50, ζ = 0.01): a ψ-mechanism identity
  query and pnc answers for the state total, state × ownership × NAICS-5, county total
  and county × ownership × NAICS-5 (the paper's queries, with the ownership added
  because QCEW publishes by ownership). Every other cell is the sum of the answers
  below it (NAICS-6 cells: of the identity query's unbiased estimates), which keeps the
  estimates unbiased. Reported: mean absolute error and median relative absolute error
  :math:`|x-\tilde x|/(x+1)` (the paper's metrics, Appendix C), over all cells and over
  the cells suppression withholds or publishes.

:func:`compare_with_gedp` returns a tidy frame (method, table_code, cells, attribute,
metric, value). It runs the real GEDP release path
(:func:`eree.release.gedp.release_gedp`) with seeded noise (an experiment, not a
release).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from eree.mechanisms.gedp import Pnc, PsiMechanism
from eree.suppression.pipeline import SuppressionResult
from eree.suppression.tables import LinkedTables, prepare_qcew_frame, tabulate

__all__ = [
    "TABLE7_MU",
    "compare_with_gedp",
    "gedp_cell_estimates",
    "gedp_cell_release",
    "gedp_plan",
]

#: Webb et al. Table 7: μ per query for each monthly employment and for wages
TABLE7_MU: dict[str, tuple[float, float]] = {
    "identity": (0.70, 0.15),
    "state_total": (0.20, 0.10),
    "state_own_naics5": (0.60, 0.15),
    "county_total": (0.60, 0.15),
    "county_own_naics5": (0.70, 0.15),
}
_BY: dict[str, list[str] | str] = {
    "identity": "identity",
    "state_total": [],
    "state_own_naics5": ["own", "naics5"],
    "county_total": ["cnty"],
    "county_own_naics5": ["cnty", "own", "naics5"],
}
_ID = "primary_key"


def _is_wage(attribute: str) -> bool:
    return "wage" in attribute


def gedp_plan(
    attributes: Sequence[str],
    *,
    mu: Mapping[str, tuple[float, float]] | None = None,
    gamma_emp: float = 0.5,
    gamma_wage: float = 50.0,
    zeta: float = 0.01,
) -> Any:
    """The Table 7 GEDP plan (a :class:`~eree.release.spec.Plan`) for ``attributes``."""
    from pathlib import Path

    from eree.release.spec import parse_spec

    mu = dict(mu or TABLE7_MU)
    attrs = list(attributes)
    queries = []
    for name, by in _BY.items():
        e, w = mu[name]
        queries.append(
            {
                "name": name,
                "by": by,
                "mechanism": PsiMechanism.name if by == "identity" else Pnc.name,
                "mu": {a: (w if _is_wage(a) else e) for a in attrs},
            }
        )
    raw = {
        "name": "suppression-vs-gedp",
        "data": {
            "kind": "establishments",
            "path": "in-memory",
            "id": _ID,
            "public": ["cnty", "own", "naics", "naics5"],
            "confidential": attrs,
        },
        "privacy": {
            "definition": "gedp",
            "neighbor": "sqrt",
            "distance": {a: (gamma_wage if _is_wage(a) else gamma_emp) for a in attrs},
        },
        "query": queries,
        Pnc.name: {"zeta": zeta, "bounds_from": "identity"},  # the [pnc] section
    }
    return parse_spec(raw, Path.cwd())


def _estimates_on_cells(
    tables: LinkedTables, answers: pl.DataFrame, attributes: Sequence[str], codes: set[str]
) -> dict[str, np.ndarray]:
    """Sum answer rows (a pseudo-establishment frame) into linked cells.

    Sums into the linked cells whose table code is in ``codes``; NaN elsewhere.
    """
    t = tabulate(prepare_qcew_frame(answers), tables.layout, attributes, top=1, check_values=False)
    keys = tables.key_columns
    got = t.cells.filter(pl.col("table_code").is_in(list(codes))).select(
        [*keys, *[pl.col(a).alias(f"__est_{a}") for a in attributes]]
    )
    j = tables.cells.select(["cell", *keys]).join(got, on=keys, how="left").sort("cell")
    return {a: j.get_column(f"__est_{a}").to_numpy().astype(np.float64) for a in attributes}


def gedp_cell_estimates(
    frame: pl.DataFrame,
    tables: LinkedTables,
    attributes: Sequence[str],
    *,
    seed: int,
    mu: Mapping[str, tuple[float, float]] | None = None,
) -> dict[str, np.ndarray]:
    """One seeded GEDP release (Table 7 plan) turned into cell estimates.

    Gives an estimate of every cell of ``tables`` (a QCEW layout with the domain level),
    per attribute (:func:`gedp_cell_release` without the standard errors).
    """
    rel = gedp_cell_release(frame, tables, attributes, seed=seed, mu=mu)
    return {a: est for a, (est, _) in rel.items()}


def gedp_cell_release(
    frame: pl.DataFrame,
    tables: LinkedTables,
    attributes: Sequence[str],
    *,
    seed: int,
    mu: Mapping[str, tuple[float, float]] | None = None,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """One seeded GEDP release (Table 7 plan): every cell's estimate and standard error.

    Per attribute, (estimate, std) for every cell of ``tables``. A cell answered by a
    query carries that answer's published std; a cell that is a sum of answers (NAICS-6
    cells: of identity estimates; coarser cells by ownership: of NAICS-5 answers) carries
    the std of the sum, √Σ std² (the answers' noises are independent). Only published
    values enter (the answers and their published stds).
    """
    from eree.data.establishments import EstablishmentData
    from eree.mechanisms.noise import make_noise_source
    from eree.release.build import build
    from eree.release.gedp import release_gedp

    attrs = list(attributes)
    var = [f"{a}__var" for a in attrs]
    plan = gedp_plan(attrs, mu=mu)
    df = prepare_qcew_frame(frame)
    if _ID not in df.columns:
        df = df.with_row_index(_ID, offset=1)
    data_frame = df.select(
        pl.col(_ID).cast(pl.Utf8),
        *[pl.col(c).cast(pl.Utf8) for c in ("cnty", "own", "naics", "naics5")],
        *[pl.col(a).cast(pl.Float64) for a in attrs],
    )
    data = EstablishmentData(data_frame, plan.data)
    report = build(plan).report()
    out = {
        q.name: q.table.with_columns(
            [(pl.col(f"{a}_std") ** 2).alias(v) for a, v in zip(attrs, var, strict=True)]
        )
        for q in release_gedp(plan, data, make_noise_source("seeded", seed), report)
    }
    cols = [*attrs, *var]
    est = {c: np.full(tables.n_cells, np.nan) for c in cols}

    def fill(part: dict[str, np.ndarray]) -> None:
        for c in cols:
            m = ~np.isnan(part[c])
            est[c][m] = part[c][m]

    # NAICS-6 cells (58, 78): sums of the identity query's unbiased estimates
    ident = out["identity"].select(pl.col(_ID).cast(pl.Utf8), *[pl.col(c) for c in cols])
    micro = df.select(pl.col(_ID).cast(pl.Utf8), "cnty", "own", "naics").join(ident, on=_ID)
    fill(_estimates_on_cells(tables, micro, cols, {"58", "78"}))
    # NAICS-5 and coarser by ownership: sums of the NAICS-5 answers
    for name, area_codes in (
        ("county_own_naics5", {str(c) for c in range(71, 78)}),
        ("state_own_naics5", {str(c) for c in range(51, 58)}),
    ):
        ans = out[name]
        if "cnty" not in ans.columns:
            ans = ans.with_columns(pl.lit("0").alias("cnty"))
        rows = ans.select(
            "cnty", "own", (pl.col("naics5") + "0").alias("naics"), *[pl.col(c) for c in cols]
        )
        part = _estimates_on_cells(tables, rows, cols, area_codes)
        if name == "state_own_naics5":  # only the state cells
            state = tables.cells.get_column("area_level").to_numpy() == "state"
            part = {c: np.where(state, v, np.nan) for c, v in part.items()}
        fill(part)
    # totals covered (50, 70)
    codes = tables.cells.get_column("table_code").to_numpy()
    area = tables.cells.get_column("area").to_numpy()
    st = out["state_total"]
    for c in cols:
        est[c][codes == "50"] = float(st.get_column(c)[0])
    ct = out["county_total"]
    for c in cols:
        lookup = dict(zip(ct.get_column("cnty").to_list(), ct.get_column(c).to_list(), strict=True))
        m = codes == "70"
        est[c][m] = [lookup[k] for k in area[m]]
    return {a: (est[a], np.sqrt(est[v])) for a, v in zip(attrs, var, strict=True)}


def _median(x: np.ndarray) -> float:
    return float(np.median(x)) if x.size else float("nan")


def _mean(x: np.ndarray) -> float:
    return float(np.mean(x)) if x.size else float("nan")


def compare_with_gedp(
    frame: pl.DataFrame,
    result: SuppressionResult,
    *,
    attributes: Sequence[str] = ("m3emp", "wage"),
    trials: int = 3,
    seed: int = 0,
    mu: Mapping[str, tuple[float, float]] | None = None,
) -> pl.DataFrame:
    """Share published and error: cell suppression versus GEDP, per aggregation level.

    Args:
        frame: the establishments ``result`` was computed from (one state).
        result: a cell-suppression result of the QCEW layout (domain level included),
            with its audit (for the interval-midpoint imputation).
        attributes: attributes compared (month-3 employment and wages, as in the paper).
        trials: independent GEDP releases (errors are averaged over them).
        seed: root seed.
        mu: per-query (employment, wage) μ; default Table 7.

    Returns:
        Tidy frame: ``method`` (``suppression``, ``gedp``), ``table_code`` (QCEW agglvl,
        or ``all``), ``cells`` (``all``, ``suppressed``, ``published`` — the cells
        suppression withholds or publishes), ``attribute``, ``metric``, ``value``.
    """
    tables = result.tables
    attrs = [a for a in attributes if a in tables.attributes]
    codes = tables.cells.get_column("table_code").to_numpy()
    supp = result.suppressed
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, 2**31 - 1, size=trials)
    gedp = [gedp_cell_estimates(frame, tables, attrs, seed=int(s), mu=mu) for s in seeds]
    rows: list[dict[str, Any]] = []
    groups = [("all", np.ones(tables.n_cells, dtype=bool))] + [
        (c, codes == c) for c in dict.fromkeys(codes.tolist())
    ]
    bounds = None
    if result.audit is not None:
        bounds = result.audit.bounds
    counts = tables.counts().astype(np.float64)
    for a in attrs:
        x = tables.values(a)
        mid = np.full(tables.n_cells, np.nan)
        if bounds is not None:
            b = bounds.filter(pl.col("attribute") == a)
            cell = b.get_column("cell").to_numpy()
            lo = b.get_column("lower").to_numpy()
            hi = b.get_column("upper").to_numpy()
            mid[cell] = np.where(np.isfinite(hi), (lo + hi) / 2.0, lo)
        for g, m in groups:
            n = int(m.sum())
            pub = m & ~supp
            total = float(x[m].sum())

            def add(
                method: str, cells: str, metric: str, value: float, g: str = g, a: str = a
            ) -> None:
                rows.append(
                    {
                        "method": method,
                        "table_code": g,
                        "cells": cells,
                        "attribute": a,
                        "metric": metric,
                        "value": float(value),
                    }
                )

            add("suppression", "all", "n_cells", n)
            add("suppression", "all", "share_cells_published", pub.sum() / n if n else np.nan)
            add(
                "suppression",
                "all",
                "share_value_published",
                x[pub].sum() / total if total > 0 else np.nan,
            )
            add(
                "suppression",
                "all",
                "share_establishments_published",
                counts[pub].sum() / counts[m].sum() if counts[m].sum() else np.nan,
            )
            sm = m & supp
            add("suppression", "published", "mean_abs_error", 0.0 if pub.any() else np.nan)
            add("suppression", "suppressed", "mean_abs_error_zero_imputed", _mean(x[sm]))
            add(
                "suppression",
                "suppressed",
                "median_rel_error_zero_imputed",
                _median(x[sm] / (x[sm] + 1.0)),
            )
            if bounds is not None:
                err = np.abs(mid[sm] - x[sm])
                add("suppression", "suppressed", "mean_abs_error_interval_midpoint", _mean(err))
                add(
                    "suppression",
                    "suppressed",
                    "median_rel_error_interval_midpoint",
                    _median(err / (x[sm] + 1.0)),
                )
            add("gedp", "all", "share_cells_published", 1.0)
            add("gedp", "all", "share_value_published", 1.0)
            for cells, mm in (("all", m), ("suppressed", sm), ("published", pub)):
                if not mm.any():
                    continue
                abs_err = np.mean([np.abs(e[a][mm] - x[mm]) for e in gedp], axis=0)
                rel = np.mean([np.abs(e[a][mm] - x[mm]) / (x[mm] + 1.0) for e in gedp], axis=0)
                add("gedp", cells, "mean_abs_error", _mean(abs_err))
                add("gedp", cells, "median_rel_error", _median(rel))
    out = pl.DataFrame(rows)
    return out.with_columns(pl.lit(trials).alias("trials"))
