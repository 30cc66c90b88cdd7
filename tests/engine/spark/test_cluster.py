"""Releases on a Spark standalone cluster equal the Polars engine's (docs/spark-cluster.md).

A master and two workers on 127.0.0.1 (:mod:`tests.engine.spark.cluster`), each worker
with its own working, local and temporary directories, a Python without eree and, where
mount namespaces are allowed, its own view of the driver's temporary directory (as
separate machines would have). Every release goes through ``eree protect`` in a process
of its own, the driver's temporary directory set apart. Checked:

* ER-EE and GEDP tables (and GEDP microdata) through ``--engine spark`` on the cluster
  equal the Polars engine's for the same seed; with a ledger, both engines' releases are
  charged to one ledger as the same dataset (the ledger refuses a second release whose
  content fingerprint differs), with the same cells in the same order;
* the manifest records the cluster's master and Spark's version;
* the executors' Python cannot import eree (it needs none), and executors whose Python
  lacks PyArrow are refused in one line naming the remedy, nothing written;
* no file is left in any worker's directories but Spark's own logs (the old transfer
  left the result's Parquet parts, exact cell statistics, in the executors' temporary
  directories).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

pytest.importorskip("pyspark")

from tests.engine.spark.cluster import Cluster, standalone_cluster, worker_env

pytestmark = pytest.mark.slow

SRC = Path(__file__).resolve().parents[3] / "src"

#: what a session on the loopback cluster needs (the master comes from the spec or CLI)
CONF = """
[spark.conf]
"spark.driver.host" = "127.0.0.1"
"spark.driver.bindAddress" = "127.0.0.1"
"spark.ui.enabled" = false
"spark.executor.memory" = "512m"
"spark.sql.shuffle.partitions" = 4
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster")
    driver_tmp = root / "driver-tmp"
    driver_tmp.mkdir()
    with standalone_cluster(root, driver_tmp=driver_tmp) as c:
        yield c, driver_tmp


def eree(args: list[object], driver_tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "TMPDIR": str(driver_tmp), "COLUMNS": "200"}
    env.pop("SPARK_REMOTE", None)
    return subprocess.run(
        [sys.executable, "-m", "eree.cli", *map(str, args)],
        capture_output=True, text=True, env=env, timeout=1200,
    )  # fmt: skip


def ok(r: subprocess.CompletedProcess[str]) -> None:
    assert r.returncode == 0, r.stderr[-3000:]


def tables(out: Path) -> dict[str, pl.DataFrame]:
    found = {p.stem: pl.read_parquet(p) for p in sorted((out / "tables").glob("*.parquet"))}
    found.update({p.stem: pl.read_parquet(p) for p in out.glob("microdata*.parquet")})
    assert found
    return found


def eree_spec(root: Path, master: str | None) -> Path:
    from eree.synth.lodes import synth_parametric

    cfg = synth_parametric(seed=11, n_jobs=20_000).write(root / "data")
    spec = root / "eree.toml"
    spec.write_text(f"""
name = "cluster-eree"
[data]
workplace = "{cfg.workplace}"
worker = "{cfg.worker}"
job = "{cfg.job}"
[privacy]
definition = "eree-weak"
alpha = 0.1
[[query]]
name = "county_sector_age"
by = ["county", "naics_sector", "age"]
mechanism = "smooth_laplace"
epsilon = 3.0
[[query]]
name = "county_sex"
by = ["county", "sex"]
mechanism = "log_laplace"
epsilon = 1.0
[[query]]
name = "total"
by = []
mechanism = "smooth_gamma"
epsilon = 1.0
[engine]
kind = "spark"
[spark]
{f'master = "{master}"' if master else ""}
{CONF}""")
    return spec


def gedp_spec(root: Path) -> Path:
    from eree.synth.qcew_parametric import synth_qcew_parametric

    frame = synth_qcew_parametric(seed=5, n_establishments=3_000).establishments
    path = root / "estabs.parquet"
    frame.with_columns((pl.col("wage") / 7.0).alias("wage")).write_parquet(path)
    spec = root / "gedp.toml"
    spec.write_text(f"""
name = "cluster-gedp"
[data]
kind = "establishments"
path = "{path}"
public = ["cnty", "own", "naics_sector", "naics5"]
confidential = ["m1emp", "m3emp", "wage"]
[privacy]
definition = "gedp"
neighbor = "sqrt"
distance = {{ m1emp = 0.5, m3emp = 0.5, wage = 50.0 }}
[[query]]
name = "identity"
by = "identity"
mechanism = "psi"
mu = {{ m1emp = 0.7, m3emp = 0.7, wage = 0.15 }}
[[query]]
name = "county_naics5"
by = ["cnty", "naics5"]
mechanism = "pnc"
mu = {{ m1emp = 0.7, m3emp = 0.7, wage = 0.15 }}
[[query]]
name = "sector"
by = ["naics_sector"]
mechanism = "psi"
mu = {{ m1emp = 0.3, m3emp = 0.3, wage = 0.1 }}
[pnc]
zeta = 0.01
bounds_from = "identity"
[postprocess]
microdata = true
{CONF}""")
    return spec


def same_release(c: Cluster, driver_tmp: Path, spec: Path, root: Path, budget: list[object],
                 via_cli: list[str]) -> None:  # fmt: skip
    """Polars and the cluster: equal tables when seeded; one dataset in one ledger."""
    import pyspark

    ok(eree(["protect", spec, "--out", root / "polars", "--seed", 7, "--engine", "polars"],
            driver_tmp))  # fmt: skip
    ok(eree(["protect", spec, "--out", root / "spark", "--seed", 7, "--engine", "spark",
             *via_cli], driver_tmp))  # fmt: skip
    expected, got = tables(root / "polars"), tables(root / "spark")
    assert got.keys() == expected.keys()
    for name in expected:
        assert_frame_equal(got[name], expected[name])  # columns, dtypes, row order, values
    manifest = json.loads((root / "spark" / "manifest.json").read_text())
    assert manifest["engine"] == {"kind": "spark", "master": c.master,
                                  "spark": pyspark.__version__}  # fmt: skip
    # with a ledger (secure noise): one dataset, charged by both engines
    led = root / "ledger.sqlite"
    ok(eree(["ledger", "budget", led, f"cluster-{spec.stem}", *budget], driver_tmp))
    ok(eree(["protect", spec, "--out", root / "lp", "--ledger", led, "--engine", "polars"],
            driver_tmp))  # fmt: skip
    ok(eree(["protect", spec, "--out", root / "ls", "--ledger", led, "--engine", "spark",
             *via_cli], driver_tmp))  # fmt: skip
    fp = [json.loads((root / d / "manifest.json").read_text())["dataset"]["fingerprint"]
          for d in ("lp", "ls")]  # fmt: skip
    assert fp[0] and fp[0] == fp[1]
    lp, ls = tables(root / "lp"), tables(root / "ls")
    assert lp.keys() == ls.keys()
    for name in lp:
        keys = [c for c in lp[name].columns if lp[name][c].dtype == pl.Utf8]
        assert_frame_equal(ls[name].select(keys), lp[name].select(keys))


def leftovers(c: Cluster) -> list[str]:
    """Files in the workers' directories other than Spark's own executor logs."""
    found = []
    for w in c.workers:
        for name, d in w.dirs.items():
            for p in d.rglob("*"):
                if p.is_file() and not (name == "work" and p.name in ("stdout", "stderr")):
                    found.append(str(p.relative_to(w.root.parent)))
    return found


def test_releases_on_a_cluster_equal_polars_and_leave_nothing(cluster, tmp_path):
    c, driver_tmp = cluster
    # the executors' Python has PyArrow and NumPy but no eree: what eree runs there is
    # shipped with the tasks
    env = worker_env(c.workers[0].root.parent)
    r = subprocess.run(["python3", "-c", "import pyarrow, numpy"], env=env, cwd=tmp_path)
    assert r.returncode == 0
    r = subprocess.run(["python3", "-c", "import eree"], env=env, capture_output=True,
                       cwd=tmp_path)  # fmt: skip
    assert r.returncode != 0 and b"No module named 'eree'" in r.stderr
    (tmp_path / "e").mkdir()
    same_release(c, driver_tmp, eree_spec(tmp_path / "e", c.master), tmp_path / "e",
                 ["--epsilon", 50, "--delta", 0.5, "--alpha", 0.1], [])  # fmt: skip
    (tmp_path / "g").mkdir()
    same_release(c, driver_tmp, gedp_spec(tmp_path / "g"), tmp_path / "g", ["--mu", 10],
                 ["--master", c.master])  # fmt: skip
    assert leftovers(c) == []
    assert not any(driver_tmp.iterdir())


def test_executors_without_pyarrow_are_refused_in_one_line(cluster, tmp_path):
    c, driver_tmp = cluster
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    spec = eree_spec(tmp_path, c.master)
    out = tmp_path / "out"
    r = eree(["protect", spec, "--out", out, "--seed", 1, "--conf",
              f"spark.pyspark.python={venv / 'bin' / 'python'}"], driver_tmp)  # fmt: skip
    # eree's one line (the JVM's own start-up lines come before it, as in local mode)
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert r.returncode == 2 and len(lines) == 1, r.stderr[-3000:]
    assert "pyarrow" in lines[0] and "spark.pyspark.python" in lines[0]
    assert "Traceback" not in r.stderr and "Exception" not in r.stderr and not out.exists()
