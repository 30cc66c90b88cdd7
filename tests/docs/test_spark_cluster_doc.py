"""docs/spark-cluster.md runs as written: a cluster on 127.0.0.1, a release on it equal to
Polars's, the same release under spark-submit, the cluster stopped."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tests.docs.blocks import REPO, fresh_clone, run_document

pytestmark = pytest.mark.slow


def test_the_cluster_how_to_runs_as_written(tmp_path, monkeypatch):
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java: a Spark cluster cannot start here")
    with socket.socket() as s:  # a free port for the master (the page's MASTER_PORT)
        s.bind(("127.0.0.1", 0))
        monkeypatch.setenv("MASTER_PORT", str(s.getsockname()[1]))
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    repo = fresh_clone(tmp_path)
    demo = repo / "cluster-demo"
    try:
        results = run_document((REPO / "docs" / "spark-cluster.md").read_text(), repo)
    finally:  # the cluster the page started, stopped even when a block failed
        for pid_file in demo.glob("*.pid"):
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text()), signal.SIGTERM)
    assert results[0].stdout.split()[-1] == "2"  # both workers joined
    assert "identical" in results[2].stdout
    assert f"spark://127.0.0.1:{os.environ['MASTER_PORT']}" in results[2].stdout
    for table in (demo / "release-polars" / "tables").glob("*.parquet"):
        submitted = pl.read_parquet(demo / "release-submit" / "tables" / table.name)
        assert_frame_equal(submitted, pl.read_parquet(table))
