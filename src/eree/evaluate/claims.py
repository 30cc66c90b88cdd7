"""``eree audit claims``: every accuracy statement of a release beside its realised value.

For the data holder only. It runs ``seeds`` seeded releases of a spec (NOT FOR
PUBLICATION: seeded randomness; never charged to a ledger), reads what each release states
about its accuracy — the manifest's ``accuracy`` (the report's "In brief" and "Budget and
accuracy"), its ``accuracy_tradeoff`` point, and the ``noise-exceeds-value`` warnings that
``eree validate`` and the release print — and measures the same quantity against the
confidential true values:

* median relative error |published − true| / true over a table's cells (true > 0);
* the share of cells within ±10% of their true value;
* the coverage of the published confidence intervals;
* for a warning "noise std exceeds the value below B": the root-mean-square error over
  the true value of the cells whose true value lies within a factor 2 of B (1 at B).

Per size class the cells are those whose published value lies in the class, as the
statement is made. A statement agrees when stated / realised lies within [1/2, 2].
The true values appear only in this tool's own output, which is confidential.
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from eree.mechanisms.noise import SeededNoise
from eree.release.accuracy import GOOD_RELATIVE
from eree.release.build import build, split_by
from eree.release.spec import Plan, load_spec

__all__ = ["AGREE", "Claim", "audit_claims", "true_tables"]

#: a statement agrees with its realised value when their ratio lies within this factor
AGREE = 2.0


@dataclasses.dataclass(frozen=True)
class Claim:
    """One stated figure beside its realised value.

    Attributes:
        source: who states it (``report``, ``manifest``, ``validate``).
        query, statistic: the table and statistic.
        what: the statement in words.
        stated: the stated value (median over the seeded releases).
        realised: the value measured against the true values over all releases.
        cells: cells (× releases) the realised value is measured on.
    """

    source: str
    query: str
    statistic: str
    what: str
    stated: float | None
    realised: float | None
    cells: int

    @property
    def ratio(self) -> float | None:
        """Stated / realised (None when either is missing or the realised value is 0)."""
        if self.stated is None or self.realised is None or self.realised == 0:
            return None
        return self.stated / self.realised

    @property
    def agrees(self) -> bool | None:
        """Within a factor :data:`AGREE` (None when not measurable)."""
        r = self.ratio
        if r is None:
            if self.stated is not None and self.stated == self.realised:
                return True
            return None
        return 1.0 / AGREE <= r <= AGREE


def true_tables(plan: Plan) -> dict[str, tuple[list[str], pl.DataFrame]]:
    """Per query: its key columns and the true value of each statistic per cell.

    Confidential: read from the input data with the Polars engine.
    """
    out: dict[str, tuple[list[str], pl.DataFrame]] = {}
    from eree.data.config import EstablishmentDataConfig

    if isinstance(plan.data, EstablishmentDataConfig):
        from eree.data.establishments import load_establishments

        est = load_establishments(plan.data)
        frame = est.frame
        for q in plan.queries:
            keys = [est.id_column] if q.by == "identity" else list(q.by)
            stats = [s for s in plan.data.confidential if s in frame.columns]
            aggs = [pl.col(s).cast(pl.Float64).sum().alias(s) for s in stats]
            t = frame.group_by(keys).agg(aggs) if keys else frame.select(aggs)
            out[q.name] = (keys, t)
        return out
    from eree.data.job_tables import load_job_tables
    from eree.engine.polars.engine import PolarsEngine

    data = load_job_tables(plan.data)
    engine = PolarsEngine()
    for q in plan.queries:
        wp, wk = split_by(q, plan.data)
        t = engine.cell_statistics(data, wp, wk)
        keys = [*wp, *wk]
        out[q.name] = (keys, t.select(*keys, pl.col("count").cast(pl.Float64).alias("jobs")))
    return out


def _joined(
    published: pl.DataFrame, keys: list[str], truth: pl.DataFrame, stat: str
) -> dict[str, np.ndarray]:
    cols = [c for c in (stat, f"{stat}_ci_low", f"{stat}_ci_high") if c in published.columns]
    pub = published.select(*keys, *cols)
    tru = truth.select(*keys, pl.col(stat).alias("__true"))
    if keys:
        tru = tru.with_columns([pl.col(k).cast(pub.schema[k]) for k in keys])
        j = pub.join(tru, on=keys, how="left", maintain_order="left")
    else:
        j = pl.concat([pub, tru], how="horizontal")
    out = {"true": j["__true"].cast(pl.Float64).fill_null(0.0).to_numpy()}
    for c in cols:
        out[c.replace(stat, "v", 1)] = j[c].cast(pl.Float64).fill_null(float("nan")).to_numpy()
    return out


def _median(values: Sequence[float | None]) -> float | None:
    v = [x for x in values if x is not None and math.isfinite(x)]
    return float(np.median(v)) if v else None


def _rel(pub: np.ndarray, true: np.ndarray) -> np.ndarray:
    return np.abs(pub - true) / true


def audit_claims(
    spec: str | Path,
    seeds: int,
    *,
    first_seed: int = 1,
    progress: Callable[[str], None] | None = None,
) -> list[Claim]:
    """Release ``seeds`` seeded copies and compare every accuracy statement (module docstring)."""
    from eree.release.protect import protect

    plan = load_spec(spec)
    build(plan)  # a plan the accountant refuses fails here, before any data is read
    truth = true_tables(plan)
    cells: dict[tuple[str, str], list[dict[str, np.ndarray]]] = {}
    manifests = []
    with tempfile.TemporaryDirectory(prefix="eree-claims-") as tmp:
        for s in range(first_seed, first_seed + seeds):
            out = Path(tmp) / f"seed-{s}"
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = protect(plan, out, SeededNoise(s))
            manifests.append(result.manifest)
            for q in result.manifest["queries"]:
                table = pl.read_parquet(out / q["file"])
                keys, true = truth[q["name"]]
                for a in result.manifest.get("accuracy") or []:
                    if a["query"] != q["name"]:
                        continue
                    stat = a["statistic"]
                    cells.setdefault((q["name"], stat), []).append(_joined(table, keys, true, stat))
            if progress is not None:
                progress(f"release {s - first_seed + 1} of {seeds}")
    return _compare(manifests, cells)


def _pooled(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _compare(
    manifests: list[dict[str, Any]], cells: dict[tuple[str, str], list[dict[str, np.ndarray]]]
) -> list[Claim]:
    claims: list[Claim] = []
    first = manifests[0]
    for a in first.get("accuracy") or []:
        key = (a["query"], a["statistic"])
        if key not in cells:
            continue
        same = [
            b for m in manifests for b in m.get("accuracy") or []
            if (b["query"], b["statistic"]) == key
        ]  # fmt: skip
        d = _pooled(cells[key])
        pub, true = d["v"], d["true"]
        ok = np.isfinite(pub) & (pub > 0) & (true > 0)
        rel = _rel(pub[ok], true[ok])
        q, s = key

        def claim(source: str, what: str, stated: float | None, realised: float | None,
                  n: int, q: str = q, s: str = s) -> None:  # fmt: skip
            claims.append(Claim(source, q, s, what, stated, realised, n))

        at = _median([b["median_cell"] for b in same])
        claim("report", f"median relative error (median cell {at:,.4g})",
              _median([b["median_relative_error"] for b in same]),
              float(np.median(rel)) if rel.size else None, int(rel.size))  # fmt: skip
        claim("report", f"share of cells within ±{GOOD_RELATIVE:.0%}",
              _median([b["share_within_10"] for b in same]),
              float(np.mean(rel <= GOOD_RELATIVE)) if rel.size else None,
              int(rel.size))  # fmt: skip
        if a.get("interval") is not None and "v_ci_low" in d:
            has = np.isfinite(d["v_ci_low"]) & np.isfinite(d["v_ci_high"])
            inside = (d["v_ci_low"][has] <= true[has]) & (true[has] <= d["v_ci_high"][has])
            claim("report", f"{a['interval']:.0%} interval coverage", float(a["interval"]),
                  float(np.mean(inside)) if has.any() else None, int(has.sum()))  # fmt: skip
        # the trade-off point: E|error| / size at the median cell, against the mean over
        # the cells of the median cell's size class
        t = next((t for t in first.get("accuracy_tradeoff") or []
                  if (t["query"], t["statistic"]) == key), None)  # fmt: skip
        if t is not None:
            here = [y for x, y in t["points"] if abs(x - t["value"]) <= 1e-12 * max(1, x)]
            lo = 10.0 ** math.floor(math.log10(t["at"]))
            inc = ok & (pub >= lo) & (pub < 10 * lo)
            r = _rel(pub[inc], true[inc])
            claim("report", f"E|error| / size at the median cell ({t['at']:,.4g})",
                  here[0] if here else None, float(np.mean(r)) if r.size else None,
                  int(r.size))  # fmt: skip
        for c in a["classes"]:
            if "not_stated" in c:  # too few cells to be stated on its own: no figure
                continue
            inc = ok & (pub >= c["low"]) & (pub < c["high"])
            r = _rel(pub[inc], true[inc])
            stated = [
                k for b in same for k in b["classes"]
                if k["low"] == c["low"] and "not_stated" not in k
            ]  # fmt: skip
            span = f"{c['low']:,.4g}–{c['high']:,.4g}"
            claim("manifest", f"class {span}: median relative error",
                  _median([k["median_relative_error"] for k in stated]),
                  float(np.median(r)) if r.size else None, int(r.size))  # fmt: skip
            claim("manifest", f"class {span}: share within ±{GOOD_RELATIVE:.0%}",
                  _median([k["within_10"] for k in stated]),
                  float(np.mean(r <= GOOD_RELATIVE)) if r.size else None, int(r.size))  # fmt: skip
    for w in first.get("warnings") or []:
        if w.get("code") != "noise-exceeds-value" or not w.get("below"):
            continue
        b = float(w["below"])
        for (q, s), parts in cells.items():
            if q != w["query"] or s != w.get("statistic", s):
                continue
            d = _pooled(parts)
            pub, true = d["v"], d["true"]
            inc = np.isfinite(pub) & (true >= b / 2) & (true <= 2 * b)
            err = (pub[inc] - true[inc]) / true[inc]
            claims.append(Claim(
                "validate", q, s, f"noise std = value at size {b:,.4g} (std / value)", 1.0,
                float(np.sqrt(np.mean(err**2))) if err.size else None, int(err.size),
            ))  # fmt: skip
    return claims
