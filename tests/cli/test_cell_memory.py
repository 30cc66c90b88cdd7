"""A query whose cell table cannot fit in memory is refused before any cell is allocated.

See docs/design.md#validation and docs/spec.md ("Cells"). The limit is ``[engine] memory``,
else the memory available (``MemAvailable`` in ``/proc/meminfo``). Refused: one line
naming the query and the key, exit 2, nothing written (no ``.partial`` folder).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eree.release.cells import available_memory
from tests.cli.inputs import assert_clean_failure, judge, run_cli, write_eree_case


def _spec(root: Path, n: int, memory: str | None, extra_attrs: int = 0) -> Path:
    """An edge-DP Laplace query over age × sex with n declared values each: n² cells.

    ``extra_attrs`` more worker attributes (race, ethnicity, …) get n values too.
    """
    spec = write_eree_case(root)
    attrs = ["age", "sex", "race", "ethnicity", "education", "earnings"][: 2 + extra_attrs]
    real = {"age": ["A01", "A02", "A03"], "sex": ["M", "F"], "race": ["A1", "A2", "A4"],
            "ethnicity": ["A1", "A2"], "education": ["E1", "E2", "E3", "E4"]}  # fmt: skip
    domains = []
    for a in attrs:
        values = real[a] + [f"v{i}" for i in range(n - len(real[a]))]
        domains.append(f"{a} = [" + ", ".join(f'"{v}"' for v in values) + "]")
    head = spec.read_text().split("[privacy]")[0]
    text = head + "[data.domains]\n" + "\n".join(domains) + "\n"
    text += '[privacy]\ndefinition = "edge-dp"\n'
    text += (
        f'[[query]]\nname = "big"\nby = {attrs!r}\nmechanism = "laplace"\nepsilon = 1.0\n'.replace(
            "'", '"'
        )
    )
    text += "[output]\nmax_cells = 1000000000000000\n"
    if memory is not None:
        text += f'[engine]\nmemory = "{memory}"\n'
    spec.write_text(text)
    return spec


def _protect(spec: Path, out: Path):
    return run_cli(["protect", str(spec), "--out", str(out), "--seed", "1"])


def test_a_query_larger_than_the_memory_limit_is_refused_before_allocation(tmp_path):
    # 100 × 100 = 10,000 cells: any table of them holds at least one 8-byte count per
    # cell (80,000 bytes), more than a 64 KiB limit
    spec = _spec(tmp_path, 100, "64k")
    out = tmp_path / "rel"
    msg = assert_clean_failure(_protect(spec, out), out, "'big'", "[engine] memory")
    assert "10,000 cells" in msg
    assert not out.exists() and not [p for p in tmp_path.iterdir() if "partial" in p.name]


def test_the_same_query_within_the_limit_is_released(tmp_path):
    spec = _spec(tmp_path, 100, "1g")
    out = tmp_path / "rel"
    o = judge(_protect(spec, out), out)
    assert o.ok, o.text
    assert (out / "tables" / "big.parquet").exists()


def test_without_a_limit_the_available_memory_bounds_the_query(tmp_path):
    if available_memory() is None:
        pytest.skip("the system does not report MemAvailable")
    # 1000⁴ = 10¹² cells: 8 TB at 8 bytes a cell, more than any machine that runs this
    spec = _spec(tmp_path, 1000, None, extra_attrs=2)
    out = tmp_path / "rel"
    msg = assert_clean_failure(_protect(spec, out), out, "'big'", "MemAvailable")
    assert "[engine] memory" in msg  # the remedy names the key
    # eree explain sees the same from the spec alone
    assert_clean_failure(run_cli(["explain", str(spec)]), None, "'big'", "MemAvailable")


@pytest.mark.parametrize("value", ['"abc"', "5", '"0g"', '"4 g"', "true"])
def test_a_bad_memory_setting_is_one_line_naming_the_key(tmp_path, value):
    spec = _spec(tmp_path, 3, None)
    spec.write_text(spec.read_text() + f"[engine]\nmemory = {value}\n")
    assert_clean_failure(run_cli(["validate", str(spec), "--no-data"]), None, "[engine].memory")


def test_available_memory_reads_memavailable(tmp_path):
    # /proc/meminfo reports kB (= KiB) (proc(5))
    f = tmp_path / "meminfo"
    f.write_text("MemTotal:       16384 kB\nMemFree:  1 kB\nMemAvailable:    2048 kB\n")
    assert available_memory(str(f)) == 2048 * 1024
    f.write_text("MemTotal:       16384 kB\n")
    assert available_memory(str(f)) is None
    assert available_memory(str(tmp_path / "absent")) is None


def _limited(spec: Path, out: Path, address_space: int):
    """``eree protect`` in a child process under ``ulimit -v`` (RLIMIT_AS) of this many bytes."""
    import resource
    import subprocess
    import sys

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    root = Path(__file__).resolve().parents[2]
    env = {**__import__("os").environ, "PYTHONPATH": str(root / "src")}
    return subprocess.run(
        [sys.executable, "-m", "eree.cli", "protect", str(spec), "--out", str(out), "--seed", "1"],
        preexec_fn=limit, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_the_process_address_space_limit_bounds_the_query(tmp_path):
    """64⁴ = 16.8M cells (at least 2 GiB) under a 3 GiB ``ulimit -v`` on a machine with more
    memory available: refused in one line naming the address-space limit (was numpy's
    _ArrayMemoryError traceback: the estimate was compared with MemAvailable only)."""
    avail = available_memory()
    if avail is None or avail < 4 << 30:
        pytest.skip("needs MemAvailable above the 3 GiB limit, to tell the two apart")
    spec = _spec(tmp_path, 64, None, extra_attrs=2)
    out = tmp_path / "rel"
    r = _limited(spec, out, 3 << 30)
    assert r.returncode == 2, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert "'big'" in lines[0] and "16,777,216 cells" in lines[0] and "RLIMIT_AS" in lines[0]
    assert not out.exists() and not [p for p in tmp_path.iterdir() if "partial" in p.name]


def test_running_out_of_memory_past_the_estimate_is_one_line(tmp_path, monkeypatch):
    """The estimate is a lower bound: a MemoryError during the release is one line, exit 2,
    nothing written."""
    import eree.release.family as family

    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(family.CountRelease, "answer_queries", exhausted)
    spec = _spec(tmp_path, 3, None)
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, "ran out of memory", "[engine] memory")
    assert not [p for p in tmp_path.iterdir() if "partial" in p.name]


def test_cgroup_headroom_reads_v2_and_v1(tmp_path):
    from eree.release.cells import cgroup_headroom

    root = tmp_path / "cg"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "memory.max").write_text("max\n")
    (root / "a" / "memory.max").write_text(f"{3 << 30}\n")
    (root / "a" / "memory.current").write_text(f"{1 << 30}\n")
    own = tmp_path / "cgroup"
    own.write_text("0::/a/b\n")
    assert cgroup_headroom(str(root), str(own)) == 2 << 30  # the parent's limit binds
    v1 = tmp_path / "v1"
    (v1 / "memory" / "g").mkdir(parents=True)
    (v1 / "memory" / "g" / "memory.limit_in_bytes").write_text(f"{5 << 30}\n")
    (v1 / "memory" / "g" / "memory.usage_in_bytes").write_text(f"{1 << 30}\n")
    own.write_text("4:memory:/g\n1:cpu:/\n")
    assert cgroup_headroom(str(v1), str(own)) == 4 << 30
    (v1 / "memory" / "g" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert cgroup_headroom(str(v1), str(own)) is None  # v1's "no limit"
