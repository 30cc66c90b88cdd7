"""A Spark standalone cluster on 127.0.0.1 for tests: one master and its workers.

Each worker is its own process tree with its own working, local and temporary
directories (``SPARK_WORKER_DIR``, ``SPARK_LOCAL_DIRS``, ``TMPDIR``) and a ``python3``
without eree (:func:`worker_env`). Where this process may make mount namespaces
(root with ``unshare``), each worker also sees its own temporary directory at the path
given as ``driver_tmp``: a path the driver made there is then not the workers' (as on
separate machines), and anything an executor writes there lands in that worker's own
directory, where the test can look for it. Everything is stopped at the end (by process
group), and the commands are the ones in docs/spark-cluster.md.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest


def spark_home() -> Path:
    """The Spark installation that came with the pip package ``pyspark``."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def can_isolate() -> bool:
    """Whether a process started here can get a private mount namespace (bind mounts)."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    r = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount --bind / /mnt 2>/dev/null || exit 1"],
        capture_output=True,
    )
    return r.returncode == 0


@dataclass
class Worker:
    """One worker's directories."""

    root: Path

    @property
    def dirs(self) -> dict[str, Path]:
        return {n: self.root / n for n in ("work", "local", "tmp")}


@dataclass
class Cluster:
    """A running standalone cluster."""

    master: str
    workers: list[Worker]
    isolated: bool


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def worker_env(root: Path) -> dict[str, str]:
    """The environment of a worker: ``python3`` is this Python without eree.

    eree may be installed in development mode (a ``.pth`` file in site-packages): the
    workers' ``python3`` (what executors run, PySpark's default) is this Python started
    without the ``site`` module, site-packages on its path as a plain directory, so
    PyArrow and NumPy are there and eree is not. ``PYTHONPATH`` is dropped too.
    """
    import sysconfig

    bin_dir = root / "worker-bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    site = sysconfig.get_paths()["purelib"]
    for name in ("python3", "python"):
        exe = bin_dir / name
        exe.write_text(
            "#!/bin/sh\n"
            f'PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site}" exec "{sys.executable}" -S "$@"\n'
        )
        exe.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_REMOTE")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


@contextmanager
def standalone_cluster(
    root: Path, *, workers: int = 2, driver_tmp: Path | None = None, memory: str = "1g"
) -> Iterator[Cluster]:
    """Start a master and ``workers`` workers on 127.0.0.1; stop them all at the end.

    Skips the test when Java is missing or the cluster does not come up in time.
    """
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java: a Spark cluster cannot start here")
    spark_class = str(spark_home() / "bin" / "spark-class")
    port = _free_port()
    master = f"spark://127.0.0.1:{port}"
    isolated = driver_tmp is not None and can_isolate()
    procs: list[subprocess.Popen[bytes]] = []
    logs = root / "logs"
    logs.mkdir(parents=True, exist_ok=True)

    def start(cmd: list[str], env: dict[str, str], log: Path) -> None:
        with log.open("wb") as out:
            p = subprocess.Popen(
                cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        procs.append(p)

    try:
        start(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", "0"],
            worker_env(root), logs / "master.log",
        )  # fmt: skip
        ws = []
        for i in range(1, workers + 1):
            w = Worker(root / f"worker{i}")
            for d in w.dirs.values():
                d.mkdir(parents=True)
            env = {**worker_env(root), "TMPDIR": str(w.dirs["tmp"]),
                   "SPARK_LOCAL_DIRS": str(w.dirs["local"]),
                   "SPARK_WORKER_DIR": str(w.dirs["work"])}  # fmt: skip
            cmd = [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                   "--cores", "1", "--memory", memory, "--webui-port", "0",
                   "--work-dir", str(w.dirs["work"]), master]  # fmt: skip
            if isolated:
                assert driver_tmp is not None
                bind = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
                cmd = ["unshare", "-m", "sh", "-c", bind, "sh", str(w.dirs["tmp"]),
                       str(driver_tmp), *cmd]  # fmt: skip
            start(cmd, env, logs / f"worker{i}.log")
            ws.append(w)
        deadline = time.monotonic() + 180
        while (logs / "master.log").read_text(errors="replace").count(
            "Registering worker"
        ) < workers:
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                pytest.skip("the Spark standalone cluster did not come up (see its logs)")
            time.sleep(0.5)
        yield Cluster(master, ws, isolated)
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
