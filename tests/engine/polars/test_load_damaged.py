"""A damaged Parquet file is one clean error on the fast (streaming) path too.

The fast loaders collect lazy scans; a page that does not decompress makes Polars raise
(or panic) there. The input must then go to the eager loader, which names the file in
one line (exit 2, nothing written) — never a traceback.
"""

from __future__ import annotations

import pytest

from tests.cli.inputs import judge, run_cli, write_eree_case


def _damage(path, at: float) -> None:
    data = bytearray(path.read_bytes())
    i = int(len(data) * at)
    data[i : i + 32] = b"\xff" * 32  # inside the data pages, before the footer
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("table, joined", [("job", False), ("worker", False), ("jobs", True)])
def test_damaged_parquet_is_one_clean_error(tmp_path, table, joined):
    outcomes = []
    for k, at in enumerate((0.3, 0.4, 0.5, 0.6)):
        root = tmp_path / f"c{k}"
        spec = write_eree_case(root, "parquet", joined=joined)
        _damage(root / "data" / f"{table}.parquet", at)
        out = root / "rel"
        r = run_cli(["protect", str(spec), "--out", str(out), "--seed", "1"])
        o = judge(r, out)
        assert not o.traceback, o.text
        assert o.ok or (o.clean_error and not o.partial), o.text
        outcomes.append(o.text)
    # not vacuous: the damage was found at least once, by name of the file
    found = ("could not read Parquet data", "not a readable Parquet file")
    assert any(f in t for t in outcomes for f in found), outcomes
