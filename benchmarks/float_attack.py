"""The floating-point attack on every registered mechanism: legacy sampler vs current layer.

For each mechanism of the registry: a real release (``eree.release.protect.protect``,
seeded) of n cells under each of two neighbouring truths (ER-EE: workplaces alone in their
blocks with 10 or 11 workers; GEDP: establishments alone in their groups with 100 or 101
(ψ = x) / 100 or 121 (ψ = √x)), its published table read back, and every published value
tested for reachability under both truths (``eree.evaluate.float_attack``). The same
cells and truths are then drawn with the sampler eree used until commit f8d116d (fa97764's
float path) and attacked the same way. Prints the table of certain answers (a published
value reachable under one truth only) and writes it as CSV with ``--csv``.

    python benchmarks/float_attack.py [--cells 20000] [--seed 0] [--csv out.csv]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cells", type=int, default=20_000, help="cells per neighbouring truth")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--csv", type=Path, default=None, help="also write the rows here")
    p.add_argument("--mechanism", action="append", default=None, help="registry name")
    args = p.parse_args(argv)

    import polars as pl

    from eree.evaluate.float_attack import table_lines
    from eree.evaluate.float_attack_release import run_release_attack

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        results = run_release_attack(Path(tmp), n=args.cells, seed=args.seed,
                                     mechanisms=args.mechanism)  # fmt: skip
    wall = time.perf_counter() - t0
    print(f"floating-point attack: {2 * args.cells:,} cells per mechanism "
          f"({args.cells:,} under each truth), seed {args.seed}")  # fmt: skip
    print("\n".join(table_lines(results)))
    print("certain answers: published cells reachable under exactly one of the two truths; "
          "'≥': two noise terms, reachability over-approximated (a lower bound); "
          "witnesses: (cell, truth) pairs the float search reproduced by replaying bits "
          "through the mechanism")  # fmt: skip
    bad = [r for r in results if r.applicable and (r.wrong or r.neither)]
    for r in bad:
        print(f"CHECK FAILED {r.mechanism} {r.variant} {r.layer}: wrong {r.wrong}, "
              f"neither {r.neither}")  # fmt: skip
    print(f"wall time {wall:.1f} s")
    if args.csv is not None:
        pl.DataFrame([r.row() for r in results], infer_schema_length=None).write_csv(args.csv)
        print(f"rows: {args.csv}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
