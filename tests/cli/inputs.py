"""Small inputs of both data kinds with planted secrets, and the clean-failure check.

The planted values are distinctive strings that a correct eree never prints or writes
verbatim: a wage of 987654.321 (and its employment 4321), and an unused column whose
every field starts with ``zq9x``. Worker attributes are codes of their declared domains
(``A01``, ``M``, …), so a leak of a worker row shows up through its ``zq9x`` field.
"""

from __future__ import annotations

import functools
import gzip
import shutil
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import numpy as np
import polars as pl
import typer
from typer.testing import CliRunner, Result

from eree.cli import app

#: the planted confidential wage and employment of establishment e000
SECRET_WAGE = "987654.321"
SECRET_EMP = "4321"
#: prefix of every field of the unused (never read) column
SECRET_PREFIX = "zq9x"
#: what must never appear in anything eree prints; files are checked for these and for
#: the planted wage as a little-endian float64
SECRETS = (SECRET_WAGE, SECRET_PREFIX, "987654.3")
SECRET_WAGE_BYTES = struct.pack("<d", float(SECRET_WAGE))

runner = CliRunner()


def eree_frames(n_est: int = 12, seed: int = 0) -> dict[str, pl.DataFrame]:
    """Workplace, worker and job tables of a small ER-EE dataset (worker has a secret column)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, n_est)
    wp = pl.DataFrame(
        {
            "workplace_id": [f"w{i:03d}" for i in range(n_est)],
            "state": ["42"] * n_est,
            "county": [f"42{c:03d}" for c in rng.integers(1, 4, n_est)],
            "tract": [f"t{c}" for c in rng.integers(0, 3, n_est)],
            "block": [f"b{i}" for i in range(n_est)],
            "naics_sector": rng.choice(["11", "23", "52"], n_est).tolist(),
            "ownership": rng.choice(["A05", "A00"], n_est).tolist(),
        }
    )
    wid = np.repeat(wp["workplace_id"].to_numpy(), sizes)
    n = wid.size
    worker = pl.DataFrame(
        {
            "worker_id": [f"p{i:04d}" for i in range(n)],
            "age": rng.choice(["A01", "A02", "A03"], n).tolist(),
            "sex": rng.choice(["M", "F"], n).tolist(),
            "race": rng.choice(["A1", "A2", "A4"], n).tolist(),
            "ethnicity": rng.choice(["A1", "A2"], n).tolist(),
            "education": rng.choice(["E1", "E2", "E3", "E4"], n).tolist(),
            "earnings": rng.choice(["E01", "E02", "E03"], n).tolist(),
            "private_note": [f"{SECRET_PREFIX}{i}" for i in range(n)],
        }
    )
    job = pl.DataFrame({"worker_id": worker["worker_id"], "workplace_id": wid.tolist()})
    return {"workplace": wp, "worker": worker, "job": job}


def joined_frame(frames: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """The one-table (WorkerFull) form of :func:`eree_frames`."""
    return (
        frames["job"]
        .join(frames["workplace"], on="workplace_id", how="left", maintain_order="left")
        .join(frames["worker"], on="worker_id", how="left", maintain_order="left")
    )


def estab_frame(n: int = 30, seed: int = 0) -> pl.DataFrame:
    """Establishment microdata (QCEW-like) with the planted wage in row 1."""
    rng = np.random.default_rng(seed)
    emp = rng.integers(1, 60, (n, 3)).astype(float)
    wage = np.round(rng.uniform(1_000, 90_000, n), 2)
    emp[0] = float(SECRET_EMP)
    wage[0] = float(SECRET_WAGE)
    naics = rng.choice(["111110", "236115", "522110", "311111"], n)
    return pl.DataFrame(
        {
            "primary_key": [f"e{i:03d}" for i in range(n)],
            "cnty": rng.choice(["001", "003", "005"], n).tolist(),
            "own": rng.choice(["1", "5"], n).tolist(),
            "naics": naics.tolist(),
            "m1emp": emp[:, 0],
            "m2emp": emp[:, 1],
            "m3emp": emp[:, 2],
            "wage": wage,
            "private_note": [f"{SECRET_PREFIX}{i}" for i in range(n)],
        }
    )


def write_frame(frame: pl.DataFrame, path: Path) -> Path:
    """Write ``frame`` as CSV, CSV.gz or Parquet by the suffix of ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    name = path.name
    if name.endswith(".parquet"):
        frame.write_parquet(path)
    elif name.endswith(".csv.gz"):
        with gzip.open(path, "wb") as fh:
            fh.write(frame.write_csv().encode())
    else:
        frame.write_csv(path)
    return path


EREE_SPEC = """name = "fuzz-eree"
[data]
kind = "eree"
{data}
[privacy]
definition = "eree-weak"
alpha = 0.1
[[query]]
name = "county"
by = ["county"]
mechanism = "log_laplace"
epsilon = 1.0
[[query]]
name = "county_sex"
by = ["county", "sex"]
mechanism = "smooth_laplace"
epsilon = 1.0
"""

GEDP_SPEC = """name = "fuzz-estab"
[data]
kind = "establishments"
path = "{path}"
id = "primary_key"
public = ["cnty", "own", "naics", "naics_sector"]
confidential = ["m1emp", "m2emp", "m3emp", "wage"]
[privacy]
definition = "gedp"
neighbor = "sqrt"
distance = {{ m1emp = 0.5, m2emp = 0.5, m3emp = 0.5, wage = 50.0 }}
[[query]]
name = "identity"
by = "identity"
mechanism = "psi"
mu = {{ m1emp = 0.7, m2emp = 0.7, m3emp = 0.7, wage = 0.15 }}
[[query]]
name = "county"
by = ["cnty"]
mechanism = "pnc"
mu = {{ m1emp = 0.6, m2emp = 0.6, m3emp = 0.6, wage = 0.15 }}
[pnc]
zeta = 0.01
bounds_from = "identity"
"""


def eree_data_lines(ext: str, joined: bool = False) -> str:
    if joined:
        return f'jobs = "data/jobs.{ext}"'
    return "\n".join(f'{t} = "data/{t}.{ext}"' for t in ("workplace", "worker", "job"))


def write_eree_case(root: Path, ext: str = "csv", joined: bool = False) -> Path:
    """A spec and its ER-EE data under ``root``; returns the spec path."""
    frames = eree_frames()
    if joined:
        write_frame(joined_frame(frames), root / "data" / f"jobs.{ext}")
    else:
        for t, f in frames.items():
            write_frame(f, root / "data" / f"{t}.{ext}")
    spec = root / "spec.toml"
    spec.write_text(EREE_SPEC.format(data=eree_data_lines(ext, joined)))
    return spec


def write_estab_case(root: Path, ext: str = "csv") -> Path:
    """A GEDP spec and its establishment file under ``root``; returns the spec path."""
    write_frame(estab_frame(), root / "data" / f"estab.{ext}")
    spec = root / "spec.toml"
    spec.write_text(GEDP_SPEC.format(path=f"data/estab.{ext}"))
    return spec


@dataclass
class Outcome:
    """What one CLI run did, judged by the rules of docs/design.md#validation, #release-outputs."""

    ok: bool
    clean_error: bool
    traceback: bool
    partial: bool
    leak: str | None
    text: str


#: the click command of the app, built once: typer's runner rebuilds it on every call,
#: which costs more than most of the runs themselves
_command = functools.cache(typer.main.get_command)


def run_cli(args: list[str]) -> Result:
    """Run ``eree ARGS`` in-process (typer's test runner; stdout and stderr separate)."""
    with mock.patch("typer.testing._get_command", _command):
        return runner.invoke(app, args)


def _leaks_in_bytes(data: bytes, secrets: Iterable[str]) -> str | None:
    for s in secrets:
        if s.encode() in data:
            return s
    if SECRET_WAGE_BYTES in data:
        return "wage as float64"
    return None


def judge(result: Result, out: Path | None, secrets: Iterable[str] = SECRETS) -> Outcome:
    """Classify a CLI run: success or a clean error; tracebacks, partial output, leaks.

    A clean error is exit code 2 with exactly one line on stderr starting ``error:``.
    Everything printed, and every byte under the output directory's parent written by
    the run (the release on success), is searched for the planted secrets.
    """
    secrets = tuple(secrets)
    stdout = result.stdout
    stderr = result.stderr
    text = stdout + stderr
    tb = "Traceback" in text or (
        result.exception is not None and not isinstance(result.exception, SystemExit)
    )
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    clean = result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error:")
    ok = result.exit_code == 0 and not tb
    partial = False
    leak = _leaks_in_bytes(text.encode(), secrets)
    if out is not None:
        siblings = [p for p in out.parent.iterdir() if ".partial" in p.name]
        partial = bool(siblings)
        if out.exists() and not ok:
            partial = True
        if ok and out.is_dir():
            for f in out.rglob("*"):
                if f.is_file() and leak is None:
                    found = _leaks_in_bytes(f.read_bytes(), secrets)
                    if found:
                        leak = f"{found} in {f.name}"
    return Outcome(ok, clean, tb, partial, leak, text)


def assert_clean_failure(result: Result, out: Path | None = None, *must: str) -> str:
    """Assert a clean one-line error (exit 2), no partial output, no leak; return it."""
    o = judge(result, out)
    assert not o.traceback, o.text
    assert o.clean_error, o.text
    assert not o.partial, o.text
    assert o.leak is None, (o.leak, o.text)
    for m in must:
        assert m in o.text, (m, o.text)
    return o.text


def copy_case(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst / "spec.toml"
