"""Accuracy of the recommended starting releases against the synthetic truth.

    python benchmarks/recommended_accuracy.py --seeds 5

Runs ``examples/pa-lodes-recommended.toml`` and ``examples/qcew-recommended.toml`` (make
their data first, see the files' headers) with seeded noise (experiments: NOT FOR
PUBLICATION) and compares every published cell with the true value computed from the
same synthetic data. Prints a Markdown table per family (the numbers in
docs/recommended-releases.md).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def lodes(seeds: int) -> list[str]:
    from eree.data.job_tables import load_job_tables
    from eree.engine.polars.engine import PolarsEngine
    from eree.mechanisms.noise import SeededNoise
    from eree.release.build import split_by
    from eree.release.protect import protect
    from eree.release.spec import load_spec

    plan = load_spec(ROOT / "examples" / "pa-lodes-recommended.toml")
    data = load_job_tables(plan.data)  # type: ignore[arg-type]
    engine = PolarsEngine()
    rows: dict[str, list[np.ndarray]] = {}
    truth: dict[str, np.ndarray] = {}
    for q in plan.queries:
        wp, wk = split_by(q, plan.data)  # type: ignore[arg-type]
        truth[q.name] = engine.cell_statistics(data, wp, wk)["count"].to_numpy()
    for s in range(seeds):
        with tempfile.TemporaryDirectory() as tmp:
            res = protect(plan, Path(tmp) / "rel", SeededNoise(100 + s))
            for qt in res.tables:
                rows.setdefault(qt.name, []).append(qt.table["jobs"].to_numpy())
    out = [
        "| query | cells | mean abs error | median abs error | cells ≥ 50 jobs: median "
        "relative error | within 10% |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, pubs in rows.items():
        t = truth[name]
        err = np.abs(np.stack(pubs) - t[None])
        big = t >= 50
        rel = err[:, big] / t[None, big]
        out.append(
            f"| {name} | {t.size:,} | {err.mean():.2f} | {np.median(err):.1f} | "
            f"{np.median(rel):.2%} ({big.sum():,} cells) | {np.mean(rel <= 0.10):.1%} |"
        )
    return out


def qcew(seeds: int) -> list[str]:
    from eree.data.establishments import load_establishments
    from eree.engine.polars.establishments import group_sums
    from eree.mechanisms.noise import SeededNoise
    from eree.release.protect import protect
    from eree.release.spec import load_spec

    plan = load_spec(ROOT / "examples" / "qcew-recommended.toml")
    frame = load_establishments(plan.data).frame  # type: ignore[arg-type]
    pubs: dict[tuple[str, str], list[np.ndarray]] = {}
    truth: dict[tuple[str, str], np.ndarray] = {}
    for q in plan.queries:
        if q.is_identity:
            continue
        t = group_sums(frame, list(q.by), ["m3emp", "wage"])
        for a in ("m3emp", "wage"):
            truth[(q.name, a)] = t[a].to_numpy()
    for s in range(seeds):
        with tempfile.TemporaryDirectory() as tmp:
            res = protect(plan, Path(tmp) / "rel", SeededNoise(200 + s))
            for qt in res.tables:
                if plan.query(qt.name).is_identity:
                    continue
                for a in ("m3emp", "wage"):
                    pubs.setdefault((qt.name, a), []).append(qt.table[a].to_numpy())
    out = [
        "| query | statistic | cells | median relative error | within 10% | within 1% |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for (name, a), p in pubs.items():
        t = truth[(name, a)]
        rel = np.abs(np.stack(p) - t[None]) / np.maximum(t[None], 1.0)
        out.append(
            f"| {name} | {a} | {t.size:,} | {np.median(rel):.2%} | {np.mean(rel <= 0.10):.1%} "
            f"| {np.mean(rel <= 0.01):.1%} |"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    print(f"LODES-like (examples/pa-lodes-recommended.toml), {args.seeds} seeded releases")
    print("\n".join(lodes(args.seeds)))
    print()
    print(f"QCEW-like (examples/qcew-recommended.toml), {args.seeds} seeded releases")
    print("\n".join(qcew(args.seeds)))


if __name__ == "__main__":
    main()
