"""Issue 39: the release's check of its variance model, measured on seeded releases.

Through the release path (:func:`eree.evaluate.publication_grade.evaluate`), the
check's outcome per release (``postprocess.variance_check``: fired, z, z after rescaling)
and every marginal's raw / post-processed mean L1, with the check's action
(``--action rescale``, what releases do) or reported only (``--action report``; not a
spec key). ``--model`` mutates the public variance model to see what the check sees:
``right`` (as released), ``c1.3`` / ``c0.7`` (the largest-share constant c × 1.3 /
× 0.7), ``old`` (the first model: β 0.3, c 1, whose weights made lattice-tract's tract ×
sex worse than raw).

    eree synth lodes --jobs 200000 --seed 6 --out /tmp/synth6
    python benchmarks/bench_variance_check.py --data /tmp/synth6 --action rescale \\
        --workloads chain-finest-weak,lattice-tract --mechanisms smooth_laplace --model c1.3
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any

import eree.evaluate.publication_grade as pg
import eree.release.publication as pub

MODELS: dict[str, dict[str, float]] = {
    "right": {},
    "c1.3": {"scale": 5.05 * 1.3},
    "c0.7": {"scale": 5.05 * 0.7},
    "old": {"beta": 0.3, "scale": 1.0},
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--action", choices=("rescale", "report"), default="rescale")
    ap.add_argument("--workloads", default="chain-finest-weak,lattice-tract")
    ap.add_argument("--mechanisms", default="smooth_laplace")
    ap.add_argument("--model", choices=tuple(MODELS), default="right")
    args = ap.parse_args()
    plan_of = pg.workload_plan

    def plan(*a: Any, **k: Any) -> Any:
        p = plan_of(*a, **k)
        pp = dataclasses.replace(p.postprocess, variance_check_report_only=args.action == "report")
        return dataclasses.replace(p, postprocess=pp)

    pg.workload_plan = plan  # type: ignore[assignment]
    kw = MODELS[args.model]
    if kw:
        model_of = pub.smooth_model

        def model(mech: Any) -> Any:
            m = model_of(mech)
            return None if m is None else dataclasses.replace(m, **kw)

        pub.smooth_model = model  # type: ignore[assignment]
    seen: list[tuple[bool, float, float | None]] = []
    tables_of = pub.publication_tables

    def tables(built: Any, raw: Any, frame: Any) -> Any:
        out, entry = tables_of(built, raw, frame)
        vc = entry.get("variance_check")
        if vc is not None and not built.plan.postprocess.without_guard:
            seen.append((vc["fired"], vc["z"], vc.get("after_rescaling", {}).get("z")))
        return out, entry

    pub.publication_tables = tables  # type: ignore[assignment]
    t = time.process_time()
    res = pg.evaluate(args.data, workloads=args.workloads.split(","),
                      mechanisms=args.mechanisms.split(","), seeds=args.seeds)  # fmt: skip
    print(f"action {args.action}, model {args.model}, {args.seeds} seeds, "
          f"{time.process_time() - t:.0f} s CPU")  # fmt: skip
    per = len(seen) // max(len(res) // 5, 1) if res else 0
    print(f"fired in {sum(f for f, _, _ in seen)} of {len(seen)} releases "
          f"(in release order, {per} per workload × mechanism); z: "
          + ", ".join(f"{z:.1f}" for _, z, _ in seen))  # fmt: skip
    after = [a for _, _, a in seen if a is not None]
    if after:
        print(f"after rescaling: {len(after)} releases, largest |z| {max(map(abs, after)):.2f}")
    print("| workload | mechanism | marginal | raw / post | worse > 2 SE | held | not additive |")
    print("| --- | --- | --- | ---: | --- | ---: | ---: |")
    for r in res:
        print(f"| {r.workload} | {r.mechanism} | {r.marginal} | {r.ratio:.3f} "
              f"| {r.worse_beyond_2se} | {r.own}/{r.seeds} | {r.not_additive} |")  # fmt: skip


if __name__ == "__main__":
    main()
