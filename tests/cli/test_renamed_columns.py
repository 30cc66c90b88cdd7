"""An agency's own column names: every [data] key that renames or maps a column, exercised.

A generated matrix over the renaming/mapping keys (ER-EE: ``workplace_id``, ``worker_id``,
``workplace_attributes``, ``worker_attributes``, ``domains``; GEDP: ``id``, ``public``,
``confidential``, ``domains``) × the input form (three tables, one joined table) × format
(CSV, Parquet) × ledger (charged, not) × engine (Polars; Spark in the slow matrix and one
case per family in the default suite). Every cell must release, through the CLI, with
tables keyed by the agency's own names — or fail with one clean line — and never with a
traceback. The first row is the regression of a reported crash: ``workplace_id = "estab"``
and ``worker_id = "pid"`` gave ``ColumnNotFoundError: "workplace_id" not found``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest

from tests.cli.inputs import judge, run_cli

# the agency's names, none of them eree's defaults
WP_ID, WK_ID = "estab", "pid"
GEO, SECTOR = "area_code", "industry"
GENDER = "gender"
EST_ID, AREA, OWN = "estab_key", "area", "owner"
EMP, PAY = "emp_m1", "pay_q"

N_WP = 12


def _eree_frames() -> dict[str, pl.DataFrame]:
    wp = pl.DataFrame({
        WP_ID: [f"e{i:03d}" for i in range(N_WP)],
        GEO: [f"44{i % 3:03d}" for i in range(N_WP)],
        SECTOR: ["62" if i % 2 else "23" for i in range(N_WP)],
    })  # fmt: skip
    wids, gender, pids = [], [], []
    for i in range(N_WP):
        for j in range(3 + i):
            wids.append(f"e{i:03d}")
            gender.append("W" if (i + j) % 3 else "X")
            pids.append(f"p{i:03d}-{j:02d}")
    wk = pl.DataFrame({WK_ID: pids, GENDER: gender})
    jb = pl.DataFrame({WK_ID: pids, WP_ID: wids})
    return {"workplace": wp, "worker": wk, "job": jb}


def _write(df: pl.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        df.write_parquet(path)
    else:
        df.write_csv(path)


def _eree_case(root: Path, form: str, fmt: str) -> Path:
    frames = _eree_frames()
    if form == "joined":
        joined = frames["job"].join(frames["worker"], on=WK_ID).join(frames["workplace"], on=WP_ID)
        _write(joined, root / "data" / f"jobs.{fmt}")
        tables = f'jobs = "data/jobs.{fmt}"'
    else:
        for t, f in frames.items():
            _write(f, root / "data" / f"{t}.{fmt}")
        tables = "\n".join(f'{t} = "data/{t}.{fmt}"' for t in frames)
    spec = root / "spec.toml"
    spec.write_text(f"""name = "own-eree"
[data]
kind = "eree"
{tables}
workplace_id = "{WP_ID}"
worker_id = "{WK_ID}"
workplace_attributes = ["{GEO}", "{SECTOR}"]
worker_attributes = ["{GENDER}"]
[data.domains]
{GENDER} = ["W", "X"]
[privacy]
definition = "eree-weak"
alpha = 0.1
[[query]]
name = "by_area"
by = ["{GEO}", "{SECTOR}"]
mechanism = "smooth_laplace"
epsilon = 1.0
[[query]]
name = "by_area_gender"
by = ["{GEO}", "{GENDER}"]
mechanism = "smooth_gamma"
epsilon = 4.0
""")
    return spec


def _gedp_case(root: Path, fmt: str) -> Path:
    n = 40
    df = pl.DataFrame({
        EST_ID: [f"k{i:03d}" for i in range(n)],
        AREA: [f"{i % 4:03d}" for i in range(n)],
        OWN: ["5" if i % 3 else "1" for i in range(n)],
        EMP: [float(10 + 7 * i) for i in range(n)],
        PAY: [float(1000 + 333 * i) for i in range(n)],
    })  # fmt: skip
    _write(df, root / "data" / f"estab.{fmt}")
    spec = root / "spec.toml"
    spec.write_text(f"""name = "own-gedp"
[data]
kind = "establishments"
path = "data/estab.{fmt}"
id = "{EST_ID}"
public = ["{AREA}", "{OWN}"]
confidential = ["{EMP}", "{PAY}"]
[data.domains]
{OWN} = ["1", "5"]
[privacy]
definition = "gedp"
neighbor = "sqrt"
distance = {{ {EMP} = 0.5, {PAY} = 20.0 }}
[[query]]
name = "identity"
by = "identity"
mechanism = "psi"
mu = {{ {EMP} = 0.7, {PAY} = 0.3 }}
[[query]]
name = "by_area"
by = ["{AREA}", "{OWN}"]
mechanism = "pnc"
mu = {{ {EMP} = 0.6, {PAY} = 0.3 }}
[pnc]
zeta = 0.01
bounds_from = "identity"
""")
    return spec


def _run(spec: Path, out: Path, engine: str, ledger: bool) -> None:
    args = ["protect", str(spec), "--out", str(out), "--engine", engine]
    if ledger:
        led = spec.parent / "budget.sqlite"
        name = spec.read_text().split('"')[1]  # the spec's first line: name = "..."
        budget = ["--mu", "10"] if name == "own-gedp" else [
            "--epsilon", "20", "--delta", "0.5", "--alpha", "0.1"]  # fmt: skip
        r = run_cli(["ledger", "budget", str(led), name, *budget])
        assert r.exit_code == 0, r.output
        args += ["--ledger", str(led)]
    else:
        args += ["--seed", "3"]
    o = judge(run_cli(args), out)
    assert not o.traceback, o.text
    assert o.ok, o.text  # every cell of this matrix is valid input: it must release


def _check_eree(out: Path) -> None:
    a = pl.read_parquet(out / "tables" / "by_area.parquet")
    assert a.columns[:2] == [GEO, SECTOR]
    assert set(a[GEO]) == {"44000", "44001", "44002"}
    g = pl.read_parquet(out / "tables" / "by_area_gender.parquet")
    assert g.columns[:2] == [GEO, GENDER] and set(g[GENDER]) == {"W", "X"}
    assert g.height == 3 * 2  # every area × the declared domain of the worker attribute


def _check_gedp(out: Path) -> None:
    ident = pl.read_parquet(out / "tables" / "identity.parquet")
    assert ident.columns[0] == EST_ID and ident.height == 40
    a = pl.read_parquet(out / "tables" / "by_area.parquet")
    assert a.columns[:2] == [AREA, OWN] and {EMP, PAY} <= set(a.columns)


MATRIX = [
    (family, form, fmt, ledger)
    for family, forms in (("eree", ("three", "joined")), ("gedp", ("one",)))
    for form in forms
    for fmt in ("csv", "parquet")
    for ledger in (False, True)
]


def _case(root: Path, family: str, form: str, fmt: str) -> Path:
    return _eree_case(root, form, fmt) if family == "eree" else _gedp_case(root, fmt)


@pytest.mark.parametrize(("family", "form", "fmt", "ledger"), MATRIX)
def test_own_column_names_release_on_polars(tmp_path, family, form, fmt, ledger):
    spec = _case(tmp_path, family, form, fmt)
    _run(spec, tmp_path / "rel", "polars", ledger)
    (_check_eree if family == "eree" else _check_gedp)(tmp_path / "rel")


def test_the_reported_crash(tmp_path):
    """`workplace_id = "estab"`, `worker_id = "pid"`: validate said valid, protect crashed."""
    spec = _eree_case(tmp_path, "three", "csv")
    assert run_cli(["validate", str(spec)]).exit_code == 0
    _run(spec, tmp_path / "rel", "polars", ledger=False)


def test_an_attribute_named_like_the_internal_id_is_refused(tmp_path):
    spec = _eree_case(tmp_path, "three", "csv")
    text = spec.read_text().replace(f'"{SECTOR}"]', f'"{SECTOR}", "workplace_id"]', 1)
    text += '[[query]]\nname = "q"\nby = ["workplace_id"]\nmechanism = "smooth_laplace"\n'
    spec.write_text(text + "epsilon = 1.0\n")
    r = run_cli(["protect", str(spec), "--out", str(tmp_path / "rel"), "--seed", "1"])
    o = judge(r, tmp_path / "rel")
    assert o.clean_error and not o.traceback and "workplace_id" in o.text, o.text


SPARK_DEFAULT = [("eree", "three", "parquet", True), ("gedp", "one", "csv", False)]
SPARK_SLOW = [c for c in MATRIX if c not in SPARK_DEFAULT]


@pytest.mark.skipif(sys.platform == "win32", reason="Spark tests run on POSIX")
@pytest.mark.parametrize(
    ("family", "form", "fmt", "ledger"),
    [*SPARK_DEFAULT, *(pytest.param(*c, marks=pytest.mark.slow) for c in SPARK_SLOW)],
)
def test_own_column_names_release_on_spark(tmp_path, family, form, fmt, ledger):
    pytest.importorskip("pyspark")
    spec = _case(tmp_path, family, form, fmt)
    _run(spec, tmp_path / "rel", "spark", ledger)
    (_check_eree if family == "eree" else _check_gedp)(tmp_path / "rel")
    # the same seeded release on Polars publishes the same tables
    if not ledger:
        _run(spec, tmp_path / "rel-polars", "polars", ledger=False)
        for t in (tmp_path / "rel" / "tables").glob("*.parquet"):
            assert pl.read_parquet(t).equals(
                pl.read_parquet(tmp_path / "rel-polars" / "tables" / t.name)
            ), t.name
