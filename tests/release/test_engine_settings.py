"""Input refused before any work: the spec's ``[spark]`` settings (checked in the spec,
before Java is started: one line naming the key, exit 2, never a Java stack trace) and a
pipe named as a data file (refused by name, never read: reading it would block)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.release.conftest import SPEC, write_small_job_tables

BAD = {
    "cores = true": "[spark].cores",
    "cores = 2.5": "[spark].cores",
    'cores = "2"': "[spark].cores",
    "cores = 0": "[spark].cores",
    'driver_memory = "abc"': "[spark].driver_memory",
    "driver_memory = 5": "[spark].driver_memory",
    'driver_memory = "4 g"': "[spark].driver_memory",
    'driver_memory = "-1g"': "[spark].driver_memory",
    'driver_memory = "0g"': "[spark].driver_memory",
    # the master: Spark's URL forms only
    'master = "spark//host:7077"': "[spark].master",
    'master = "spark://host"': "[spark].master",
    'master = "local[0]"': "[spark].master",
    "master = 7077": "[spark].master",
    'master = "yarn; rm -rf /"': "[spark].master",
    # Spark settings: a table of spark.* keys; sizes, counts and booleans checked
    'conf = "spark.executor.memory=2g"': "[spark.conf]",
    'conf = { "executor.memory" = "2g" }': '[spark.conf] "executor.memory"',
    'conf = { "spark.executor.memory" = "lots" }': '[spark.conf] "spark.executor.memory"',
    'conf = { "spark.executor.memory" = "2 g" }': '[spark.conf] "spark.executor.memory"',
    'conf = { "spark.executor.memory" = 2.5 }': '[spark.conf] "spark.executor.memory"',
    'conf = { "spark.driver.maxResultSize" = "-1g" }': '[spark.conf] "spark.driver.maxResultSize"',
    'conf = { "spark.executor.memoryOverhead" = "1x" }': (
        '[spark.conf] "spark.executor.memoryOverhead"'
    ),
    'conf = { "spark.executor.cores" = 0 }': '[spark.conf] "spark.executor.cores"',
    'conf = { "spark.executor.cores" = "two" }': '[spark.conf] "spark.executor.cores"',
    'conf = { "spark.sql.shuffle.partitions" = 1.5 }': (
        '[spark.conf] "spark.sql.shuffle.partitions"'
    ),
    'conf = { "spark.dynamicAllocation.enabled" = "yes" }': (
        '[spark.conf] "spark.dynamicAllocation.enabled"'
    ),
    'conf = { "spark.eventLog.dir" = ["/a"] }': '[spark.conf] "spark.eventLog.dir"',
    'conf = { "spark.master" = "yarn" }': '[spark.conf] "spark.master"',
    'conf = { "spark.driver.memory" = "2g" }': '[spark.conf] "spark.driver.memory"',
    'conf = { "spark.remote" = "sc://h" }': '[spark.conf] "spark.remote"',
    # settings that passed the checks and then killed or hung the JVM: bounded by the
    # machine (no machine has 12,500 CPUs or 100 TiB of memory) and by Spark's own minimums
    "cores = 100000": "[spark].cores",
    'master = "local[100000]"': "[spark].master",
    'driver_memory = "100t"': "[spark].driver_memory",
    'driver_memory = "100m"': "[spark].driver_memory",
    'conf = { "spark.driver.extraJavaOptions" = "-Xmx1k" }': (
        '[spark.conf] "spark.driver.extraJavaOptions"'
    ),
    'conf = { "spark.executor.extraJavaOptions" = "-Dx=1 -Xms64g" }': (
        '[spark.conf] "spark.executor.extraJavaOptions"'
    ),
    'conf = { "spark.executor.memory" = "1k" }': '[spark.conf] "spark.executor.memory"',
}
GOOD = [
    'driver_memory = "512m"', 'driver_memory = "4g"', 'driver_memory = "2G"', "cores = 3",
    'master = "local[4]"', 'master = "local[*]"', 'master = "local"', 'master = "yarn"',
    'master = "spark://10.0.0.5:7077"', 'master = "spark://m1:7077,m2:7077"',
    'master = "k8s://https://kube.example.org:6443"',
    'conf = { "spark.executor.memory" = "2g", "spark.executor.cores" = 4 }',
    'conf = { "spark.executor.memoryOverhead" = "512mb", "spark.driver.maxResultSize" = "0" }',
    'conf = { "spark.dynamicAllocation.enabled" = true, "spark.memory.fraction" = 0.6 }',
    'conf = { "spark.sql.shuffle.partitions" = "400", "spark.eventLog.dir" = "/logs" }',
]  # fmt: skip


def _validate(tmp_path, setting: str, engine: str = '[engine]\nkind = "spark"\n'):
    """``eree validate --no-data`` of the small spec with ``engine`` and ``[spark] setting``
    (the spec's checks; Spark is not started)."""
    write_small_job_tables(tmp_path / "data")
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC + f"\n{engine}[spark]\n{setting}\n")
    return subprocess.run(
        [sys.executable, "-m", "eree.cli", "validate", str(spec), "--no-data"],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip


def _one_line(r: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith("error:") and "Traceback" not in r.stderr
    return lines[0]


@pytest.mark.parametrize("setting", sorted(BAD))
def test_a_bad_engine_setting_is_one_line_naming_the_key(tmp_path, setting):
    r = _validate(tmp_path, setting)
    assert BAD[setting] in _one_line(r) and "java." not in r.stderr.lower()


@pytest.mark.parametrize("setting", GOOD)
def test_good_engine_settings_are_accepted(tmp_path, setting):
    r = _validate(tmp_path, setting)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("table", ["workplace", "worker", "job"])
def test_a_pipe_named_as_data_is_refused_not_read(tmp_path, table):
    """Reading a FIFO would block forever: it is refused by name, as a pipe, at once."""
    write_small_job_tables(tmp_path / "data")
    fifo = tmp_path / "data" / f"{table}.parquet"
    fifo.unlink()
    os.mkfifo(fifo)
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    r = subprocess.run(
        [sys.executable, "-m", "eree.cli", "protect", str(spec), "--out", str(tmp_path / "o"),
         "--seed", "1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert f"{table}.parquet" in lines[0] and "not a regular file" in lines[0]
    assert not (tmp_path / "o").exists()


def test_a_loop_of_symbolic_links_as_a_data_path_is_one_line(tmp_path):
    write_small_job_tables(tmp_path / "data")
    (tmp_path / "data" / "workplace.parquet").unlink()
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    (tmp_path / "data" / "workplace.parquet").symlink_to(tmp_path / "a")
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    r = subprocess.run([sys.executable, "-m", "eree.cli", "validate", str(spec)],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and "[data].workplace" in lines[0], r.stderr
    assert "loop of symbolic links" in lines[0]


def _protect_spark(tmp_path, setting: str) -> subprocess.CompletedProcess:
    write_small_job_tables(tmp_path / "data")
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC + f'\n[engine]\nkind = "spark"\n{setting}\n')
    return subprocess.run(
        [sys.executable, "-m", "eree.cli", "protect", str(spec), "--out", str(tmp_path / "o"),
         "--seed", "1"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip


def test_a_master_that_does_not_answer_is_one_line(tmp_path):
    """A standalone master whose port accepts no connection: one line naming it at once
    (Spark itself retried for over a minute, then failed with a traceback)."""
    import socket

    pytest.importorskip("pyspark")
    with socket.socket() as s:  # a port nothing listens on (bound, never listening)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        r = _protect_spark(tmp_path, f'[spark]\nmaster = "spark://127.0.0.1:{port}"')
    line = _one_line(r)
    assert f"spark://127.0.0.1:{port}" in line and "does not answer" in line, line
    assert not (tmp_path / "o").exists()


def test_a_jvm_that_does_not_start_is_one_line(tmp_path):
    """A setting the checks cannot judge that stops the JVM at start (an unknown JVM
    option): one line naming what to check, exit 2, nothing written."""
    pytest.importorskip("pyspark")
    r = _protect_spark(tmp_path, '[spark.conf]\n"spark.driver.extraJavaOptions" = "-Xss1k"')
    line = _one_line(r)
    assert "Spark could not start" in line and "[spark.conf]" in line, line
    assert not (tmp_path / "o").exists()
