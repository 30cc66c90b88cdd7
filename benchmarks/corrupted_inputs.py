"""Counts of the corrupted-input matrix and the fuzz suite, per engine.

Runs every case of ``tests/cli/corruptions.py`` (each column of each input file broken in
each way) and ``--fuzz`` random cases of ``tests/cli/test_fuzz.py`` (malformed inputs,
specs and command lines) through ``eree protect SPEC --out DIR --seed 1``, on the Polars
engine and with ``--engine spark`` (one Spark session for all), and prints per engine
and suite: clean / traceback / wrongly accepted / leak, then the other verdicts
(wrongly refused, unclean, unnamed, different error — Spark's line differing from
Polars'). The target is 0 of everything but clean.

    PYTHONPATH=src:. python benchmarks/corrupted_inputs.py --fuzz 300

``--engines polars`` skips Spark; ``--show`` prints every case that is not clean.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.cli.corruptions import VERDICTS, corruptions, fuzz_pair, run_corruption
from tests.cli.test_fuzz import build_bases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fuzz", type=int, default=300, help="random fuzz cases (both engines)")
    ap.add_argument("--seed", type=int, default=101, help="the fuzz cases' seed")
    ap.add_argument("--engines", default="polars,spark")
    ap.add_argument("--show", action="store_true", help="print every case that is not clean")
    args = ap.parse_args()
    engines = args.engines.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="eree-corrupted-"))
    counts: dict[tuple[str, str], Counter[str]] = {}
    cases = corruptions()
    for i, c in enumerate(cases):
        lines = {}
        for engine in engines:
            j = run_corruption(c, tmp / f"m{i}-{engine}", engine)
            lines[engine] = j.line
            verdict = j.verdict
            if engine != "polars" and verdict == "clean" and j.line != lines.get("polars", j.line):
                verdict = "different error"  # Polars' line is the reference
            counts.setdefault(("matrix", engine), Counter())[verdict] += 1
            if args.show and verdict != "clean":
                print(f"{engine}: {verdict}: {c.label}: {j.line}", flush=True)
    if "spark" in engines and args.fuzz:
        base = build_bases(tmp / "fuzz")
        for i in range(args.fuzz):
            judged = fuzz_pair(base, tmp / f"f{i}", args.seed, i)
            for engine, j in judged.items():
                counts.setdefault(("fuzz", engine), Counter())[j.verdict] += 1
                if args.show and j.verdict != "clean":
                    print(f"{engine}: {j.verdict}: fuzz {args.seed}:{i}: {j.line}", flush=True)
    print(f"matrix: {len(cases)} cases; fuzz: {args.fuzz} cases (seed {args.seed})")
    print("suite   engine  " + " / ".join(VERDICTS))
    for (suite, engine), cnt in sorted(counts.items()):
        print(f"{suite:7} {engine:7} " + " / ".join(str(cnt[v]) for v in VERDICTS))


if __name__ == "__main__":
    main()
