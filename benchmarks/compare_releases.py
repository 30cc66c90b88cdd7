"""Whether two releases publish identical tables (e.g. the Polars and the Spark engine's).

Every table named in the first release's manifest is read from both and compared with
``polars.testing.assert_frame_equal`` (same columns, dtypes, row order and values);
the manifests' cell counts must agree too. Exit code 0 when all are identical.

    python benchmarks/compare_releases.py /tmp/nation/polars/release /tmp/nation/spark/release
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal


def main() -> None:
    a, b = (Path(p) for p in sys.argv[1:3])
    ma = json.loads((a / "manifest.json").read_text())
    mb = json.loads((b / "manifest.json").read_text())
    cells_b = {q["name"]: q["cells"] for q in mb["queries"]}
    ok = True
    for q in ma["queries"]:
        ta = pl.read_parquet(a / q["file"])
        tb = pl.read_parquet(b / q["file"])
        try:
            assert q["cells"] == cells_b[q["name"]], "cell counts differ"
            assert_frame_equal(ta, tb)
            print(f"{q['name']}: identical ({ta.height:,} cells, {ta.width} columns)")
        except AssertionError as exc:
            ok = False
            print(f"{q['name']}: DIFFERENT: {str(exc).splitlines()[0]}")
        del ta, tb
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
