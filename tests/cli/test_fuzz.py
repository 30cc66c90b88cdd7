"""Fuzz suite: malformed inputs and specs through the real CLI.

See docs/design.md#validation, #release-outputs.

Each case starts from a valid release of one data kind (ER-EE three tables, ER-EE
joined, establishments) in one format (CSV, CSV.gz, Parquet), breaks one thing (a CSV
field, a header, the gzip stream, a Parquet column type, a spec value, an output or
ledger path) and runs ``eree protect`` in-process (spec cases also ``eree explain``).
Every run must either succeed or fail cleanly: exit code 2 with one line on stderr, no
traceback, no warning, nothing written (no output directory, no ``.partial`` folder, no
other new file), and none of the planted confidential values of
:mod:`tests.cli.inputs` in anything printed or, on success, in any file written.

Cases are generated from fixed seeds, in chunks so that ``pytest -n 2`` spreads them.
``EREE_FUZZ_REPORT=DIR`` writes each chunk's counts to ``DIR/fuzz-<chunk>.json``.
The ``slow`` test runs a larger batch: chunks 8–15, 500 cases each (a chunk's first 100
are the same cases at any size, so chunks 8–14 there hold what the default run held before
it was cut from 15 chunks to 8).
"""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import warnings
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import polars as pl
import pytest

from tests.cli.inputs import (
    SECRETS,
    eree_frames,
    estab_frame,
    joined_frame,
    judge,
    run_cli,
    write_eree_case,
    write_estab_case,
)

KINDS = ("eree3", "joined", "estab")
EXTS = ("csv", "csv.gz", "parquet")
N_CHUNKS = 8
CASES_PER_CHUNK = 100  # 800 inputs in the default run

# ----------------------------------------------------------------------------- roles

ID, PUBLIC, CONF, UNUSED = "id", "public", "confidential", "unused"
_WORKER_ATTRS = ("age", "sex", "race", "ethnicity", "education", "earnings")
_WP_ATTRS = ("state", "county", "tract", "block", "naics_sector", "ownership")


def _role(column: str) -> str:
    if column in ("workplace_id", "worker_id", "primary_key"):
        return ID
    if column in _WORKER_ATTRS or column in ("m1emp", "m2emp", "m3emp", "wage"):
        return CONF
    if column == "private_note":
        return UNUSED
    return PUBLIC


#: junk for any column (nothing secret: ids and public values may be printed or published)
GENERIC = [
    "", " ", "NA", "null", "NaN", "nan", "inf", "-inf", "-1", "0", "1e400", "-0", "1.5",
    "1,5", "0x10", "true", "  7 ", "\uff11\uff12", "'", '""', "A01 ", "M\t", "\\N",
    "9" * 40, "w000", "p0000", "e000", "42001", "111110", '"quoted"', "a\"b",
]  # fmt: skip
#: junk for confidential and unused columns: carries planted values that must not leak
SECRET_JUNK = ["zq9xJUNK", "987654.321", "zq9x" * 30, "-987654.321", " 987654.321", "zq9x,zq9x"]


def _junk(rng: random.Random, role: str) -> str:
    pool = GENERIC + (SECRET_JUNK * 3 if role in (CONF, UNUSED) else [])
    return rng.choice(pool)


# ----------------------------------------------------------------------------- cases


@dataclass
class Case:
    kind: str
    ext: str
    category: str
    op: str
    target: str = ""


@dataclass
class Tally:
    cases: int = 0
    runs: int = 0
    successes: int = 0
    clean_errors: int = 0
    tracebacks: int = 0
    unclean: int = 0
    partial_outputs: int = 0
    leaks: int = 0
    warnings: int = 0
    by_category: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        d = {k: v for k, v in self.__dict__.items() if k not in ("by_category", "failures")}
        d["by_category"] = dict(self.by_category)
        d["failures"] = self.failures[:20]
        return d


def _data_files(root: Path, kind: str, ext: str) -> list[Path]:
    if kind == "estab":
        return [root / "data" / f"estab.{ext}"]
    if kind == "joined":
        return [root / "data" / f"jobs.{ext}"]
    return [root / "data" / f"{t}.{ext}" for t in ("workplace", "worker", "job")]


def _build_base(root: Path, kind: str, ext: str) -> Path:
    if kind == "estab":
        write_estab_case(root, ext)
    else:
        write_eree_case(root, ext, joined=kind == "joined")
    return root


# --------------------------------------------------------------- CSV text mutations


def _read_csv_text(path: Path) -> str:
    if path.name.endswith(".gz"):
        return gzip.decompress(path.read_bytes()).decode("utf-8")
    return path.read_text(encoding="utf-8")


def _write_csv_bytes(path: Path, data: bytes) -> None:
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)


CSV_OPS = (
    "drop_field", "extra_field", "insert_field", "no_header", "header_only", "empty",
    "blank_line", "truncate", "set_field", "set_field", "set_field", "set_field",
    "dup_row", "del_row", "rename_col", "dup_col_name", "shuffle_header", "open_quote",
    "nul_byte", "invalid_utf8", "latin1", "bom", "crlf", "cr_only", "tabs",
    "whitespace_value", "many_dup_rows", "huge_field", "valid",
)  # fmt: skip


def mutate_csv(path: Path, rng: random.Random) -> str:
    """Break a CSV (or CSV.gz) file; returns the operation's name."""
    text = _read_csv_text(path)
    lines = text.splitlines()
    header = lines[0].split(",")
    body = lines[1:]
    op = rng.choice(CSV_OPS)
    r = rng.randrange(len(body))
    j = rng.randrange(len(header))
    fields = body[r].split(",")
    out: bytes | None = None
    if op == "drop_field":
        del fields[j]
        body[r] = ",".join(fields)
    elif op == "extra_field":
        body[r] = body[r] + "," + _junk(rng, UNUSED)
    elif op == "insert_field":
        fields.insert(j, _junk(rng, UNUSED))
        body[r] = ",".join(fields)
    elif op == "no_header":
        lines = body
    elif op == "header_only":
        body = []
    elif op == "empty":
        out = b""
    elif op == "blank_line":
        body.insert(r, "")
    elif op == "truncate":
        out = text.encode()[: rng.randrange(1, len(text))]
    elif op == "set_field":
        fields[j] = _junk(rng, _role(header[j]))
        body[r] = ",".join(fields)
    elif op == "dup_row":
        body.insert(r, body[r])
    elif op == "del_row":
        del body[r]
    elif op == "rename_col":
        name = header[j]
        header[j] = name[:-1] if len(name) > 1 and rng.random() < 0.5 else name + "x"
    elif op == "dup_col_name":
        header[j] = header[rng.randrange(len(header))]
    elif op == "shuffle_header":
        rng.shuffle(header)
    elif op == "open_quote":
        pos = rng.randrange(len(body[r]) + 1)
        body[r] = body[r][:pos] + '"' + body[r][pos:]
    elif op == "nul_byte":
        pos = rng.randrange(len(body[r]) + 1)
        body[r] = body[r][:pos] + "\x00" + body[r][pos:]
    elif op == "invalid_utf8":
        raw = ("\n".join([",".join(header), *body]) + "\n").encode()
        pos = rng.randrange(len(raw))
        out = raw[:pos] + b"\xff\xfe" + raw[pos:]
    elif op == "latin1":
        fields[j] = "caf\u00e9"
        body[r] = ",".join(fields)
        out = ("\n".join([",".join(header), *body]) + "\n").encode("latin-1")
    elif op == "bom":
        out = ("\ufeff" + "\n".join([",".join(header), *body]) + "\n").encode()
    elif op == "crlf":
        out = ("\r\n".join([",".join(header), *body]) + "\r\n").encode()
    elif op == "cr_only":
        out = ("\r".join([",".join(header), *body]) + "\r").encode()
    elif op == "tabs":
        out = ("\n".join(ln.replace(",", "\t") for ln in [",".join(header), *body]) + "\n").encode()
    elif op == "whitespace_value":
        fields[j] = f" {fields[j]} "
        body[r] = ",".join(fields)
    elif op == "many_dup_rows":
        body = body * rng.randint(2, 20)
    elif op == "huge_field":
        fields[j] = "zq9x" * 25_000 if _role(header[j]) in (CONF, UNUSED) else "7" * 100_000
        body[r] = ",".join(fields)
    if out is None:
        if op != "no_header":
            lines = [",".join(header), *body]
        out = ("\n".join(lines) + ("\n" if lines else "")).encode()
    _write_csv_bytes(path, out)
    return op


GZIP_OPS = ("truncate", "flip", "garbage_tail", "empty", "plain_text", "two_members", "random")


def mutate_gzip(path: Path, rng: random.Random) -> str:
    """Break the gzip stream of a CSV.gz file."""
    raw = path.read_bytes()
    plain = gzip.decompress(raw)
    op = rng.choice(GZIP_OPS)
    if op == "truncate":
        raw = raw[: rng.randrange(1, len(raw))]
    elif op == "flip":
        pos = rng.randrange(10, len(raw))
        raw = raw[:pos] + bytes([raw[pos] ^ (1 << rng.randrange(8))]) + raw[pos + 1 :]
    elif op == "garbage_tail":
        raw = raw + bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    elif op == "empty":
        raw = b""
    elif op == "plain_text":
        raw = plain
    elif op == "two_members":  # valid: a gzip file may hold several members
        cut = plain.find(b"\n", len(plain) // 2) + 1  # 0 (one member) if no newline
        raw = gzip.compress(plain[:cut]) + gzip.compress(plain[cut:])
    else:
        raw = b"\x1f\x8b" + bytes(rng.randrange(256) for _ in range(rng.randint(0, 200)))
    path.write_bytes(raw)
    return op


# --------------------------------------------------------------- Parquet mutations

PARQUET_OPS = (
    "to_bool", "to_date", "to_datetime", "to_int8", "to_float32", "to_utf8", "to_categorical",
    "to_list", "to_struct", "to_null", "null_value", "bad_number", "drop_column",
    "rename_column", "extra_column", "dup_row", "del_row", "zero_rows", "reverse",
    "truncate_bytes", "flip_bytes", "random_bytes", "empty_file", "csv_bytes", "set_junk",
    "float_ids", "int_ids",
)  # fmt: skip


def mutate_parquet(path: Path, rng: random.Random) -> str:
    """Break a Parquet file: a column's type, a value, its shape or its bytes."""
    df = pl.read_parquet(path)
    op = rng.choice(PARQUET_OPS)
    col = rng.choice(df.columns)
    n = df.height
    r = rng.randrange(n)
    if op in ("truncate_bytes", "flip_bytes", "random_bytes", "empty_file", "csv_bytes"):
        raw = path.read_bytes()
        if op == "truncate_bytes":
            raw = raw[: rng.randrange(1, len(raw))]
        elif op == "flip_bytes":
            for _ in range(rng.randint(1, 8)):
                pos = rng.randrange(len(raw))
                raw = raw[:pos] + bytes([rng.randrange(256)]) + raw[pos + 1 :]
        elif op == "random_bytes":
            raw = b"PAR1" + bytes(rng.randrange(256) for _ in range(300)) + b"PAR1"
        elif op == "empty_file":
            raw = b""
        else:
            raw = df.write_csv().encode()
        path.write_bytes(raw)
        return op
    if op == "to_bool":
        df = df.with_columns(pl.Series(col, [i % 2 == 0 for i in range(n)]))
    elif op == "to_date":
        df = df.with_columns(pl.Series(col, [date(2016, 1, 1 + i % 28) for i in range(n)]))
    elif op == "to_datetime":
        df = df.with_columns(
            pl.Series(col, [date(2016, 2, 1 + i % 28) for i in range(n)]).cast(pl.Datetime)
        )
    elif op == "to_int8":
        df = df.with_columns(pl.Series(col, [i % 100 for i in range(n)], dtype=pl.Int8))
    elif op == "to_float32":
        df = df.with_columns(pl.col(col).cast(pl.Float32, strict=False))
    elif op == "to_utf8":
        df = df.with_columns(pl.col(col).cast(pl.Utf8))
    elif op == "to_categorical":
        df = df.with_columns(pl.col(col).cast(pl.Utf8).cast(pl.Categorical))
    elif op == "to_list":
        df = df.with_columns(pl.Series(col, [[i] for i in range(n)]))
    elif op == "to_struct":
        df = df.with_columns(pl.struct(pl.col(col).alias("inner")).alias(col))
    elif op == "to_null":
        df = df.with_columns(pl.lit(None).alias(col))
    elif op == "null_value":
        df = df.with_columns(
            pl.when(pl.int_range(n) == r).then(None).otherwise(pl.col(col)).alias(col)
        )
    elif op == "bad_number":
        values = [float("nan"), float("inf"), -1.0, 1e308, -0.0]
        if _role(col) in (CONF, UNUSED):  # ids and public values may be printed or published
            values.append(987654.321)
        value = rng.choice(values)
        df = (
            df.with_columns(
                pl.when(pl.int_range(n) == r)
                .then(pl.lit(value))
                .otherwise(pl.col(col).cast(pl.Float64, strict=False))
                .alias(col)
            )
            if df.schema[col].is_numeric()
            else df.with_columns(
                pl.when(pl.int_range(n) == r)
                .then(pl.lit(str(value)))
                .otherwise(pl.col(col))
                .alias(col)
            )
        )
    elif op == "drop_column":
        df = df.drop(col)
    elif op == "rename_column":
        df = df.rename({col: col + "_x"})
    elif op == "extra_column":
        df = df.with_columns(pl.lit("zq9xEXTRA").alias("extra"))
    elif op == "dup_row":
        df = pl.concat([df, df.slice(r, 1)])
    elif op == "del_row":
        df = pl.concat([df.slice(0, r), df.slice(r + 1)])
    elif op == "zero_rows":
        df = df.head(0)
    elif op == "reverse":
        df = df.reverse()
    elif op == "set_junk":
        junk = _junk(rng, _role(col))
        df = df.with_columns(
            pl.when(pl.int_range(n) == r)
            .then(pl.lit(junk))
            .otherwise(pl.col(col).cast(pl.Utf8))
            .alias(col)
        )
    elif op == "float_ids":
        idc = next((c for c in df.columns if _role(c) == ID), col)
        df = df.with_columns(pl.Series(idc, [i + 0.5 for i in range(n)]))
    elif op == "int_ids":
        idc = next((c for c in df.columns if _role(c) == ID), col)
        df = df.with_columns(pl.Series(idc, list(range(n))))
    df.write_parquet(path)
    return f"{op}:{_role(col)}"


# --------------------------------------------------------------- spec mutations

SPEC_VALUES = [
    "-1", "0", "1e300", "1e-320", "inf", "nan", "-inf", '"x"', "true", "false", "[]",
    '["county", "county"]', "{}", '"' + "q" * 300 + '"', "1", "0.5", "2", "[1, 2]",
    "{ a = 1 }", '"identity"', '"gedp"', '"eree"', '"node-dp"', '"edge-dp"', '"blowfish"',
    '"laplace"', '"psi"', '"pnc"', '"truncated_laplace"', '"smooth_gamma"', '"log_laplace"',
    '"noise_infusion"', '"estab_gaussian"', '"../data"', '"/dev/null"', '"data"',
    '"data/estab.csv"', '"data/worker.csv"', '["sex"]', '["cnty"]', '["county", "sexe"]',
    '["age", "sex", "race", "ethnicity", "education", "earnings"]', '"establishments"',
    "100000000000000000000", '"\u00e9t\u00e9"', '"sqrt"', '{ kind = "log_shift", a = 1.0 }',
    "{ m1emp = 0.5 }", "{ epsilon = 1.0, mu = 1.0 }", '"workshop"', '"no"',
]  # fmt: skip
SPEC_KEYS = [
    "theta", "force", "complete", "variant", "s", "t", "small_cell", "additive", "delta",
    "mu", "epsilon", "budget", "max_cells", "csv", "confidence", "zeta", "bounds_from",
    "microdata", "nonnegative", "bogus", "alpha", "neighbor", "distance", "by", "name",
]  # fmt: skip
SPEC_OPS = (
    "set_value", "set_value", "set_value", "set_value", "delete_line", "duplicate_line",
    "add_key", "add_key", "add_domains", "complete_true", "truncate", "max_cells",
    "output_section", "empty", "latin1", "nul", "directory", "missing", "data_file_as_spec",
    "huge_domains", "swap_kind", "valid",
)  # fmt: skip


def _domain_values(rng: random.Random) -> str:
    choice = rng.randrange(6)
    if choice == 0:
        return '["M", "F", "M"]'
    if choice == 1:
        return "[]"
    if choice == 2:
        return "[" + ", ".join(f'"v{i}"' for i in range(rng.choice([10, 500, 5000]))) + "]"
    if choice == 3:
        return "[1, 2]"
    if choice == 4:
        return '["001", "003", "005"]'
    return '["42001", "42002", "42003"]'


def mutate_spec(root: Path, rng: random.Random) -> tuple[str, Path]:
    """Break the spec; returns the operation and the spec path to pass on the command line."""
    spec = root / "spec.toml"
    text = spec.read_text()
    lines = text.splitlines()
    kv = [i for i, ln in enumerate(lines) if " = " in ln]
    op = rng.choice(SPEC_OPS)
    if op == "set_value":
        i = rng.choice(kv)
        lines[i] = lines[i].split(" = ", 1)[0] + " = " + rng.choice(SPEC_VALUES)
    elif op == "delete_line":
        del lines[rng.randrange(len(lines))]
    elif op == "duplicate_line":
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif op == "add_key":
        i = rng.choice(kv)
        lines.insert(i + 1, f"{rng.choice(SPEC_KEYS)} = {rng.choice(SPEC_VALUES)}")
    elif op == "add_domains":
        attr = rng.choice(["county", "sex", "cnty", "sexx", "age", "own", "tract", "blah"])
        lines += ["[data.domains]", f"{attr} = {_domain_values(rng)}"]
    elif op == "complete_true":
        qs = [i for i, ln in enumerate(lines) if ln.startswith("by = ")]
        lines.insert(rng.choice(qs) + 1, "complete = true")
    elif op == "truncate":
        cut = rng.randrange(1, len(text))
        spec.write_text(text[:cut])
        return op, spec
    elif op == "max_cells":
        value = rng.choice(["1", "2", "0", "-5", "1.5", '"x"', "4"])
        lines += ["[output]", f"max_cells = {value}"]
    elif op == "output_section":
        key = rng.choice(["csv", "confidence", "max_cells", "bogus"])
        lines += ["[output]", f"{key} = {rng.choice(SPEC_VALUES)}"]
    elif op == "empty":
        spec.write_text("")
        return op, spec
    elif op == "latin1":
        spec.write_bytes(text.replace('name = "fuzz', 'name = "caf\u00e9').encode("latin-1"))
        return op, spec
    elif op == "nul":
        spec.write_text(text.replace("[privacy]", "[privacy]\x00"))
        return op, spec
    elif op == "directory":
        return op, root / "data"
    elif op == "missing":
        return op, root / "nope.toml"
    elif op == "data_file_as_spec":
        return op, sorted((root / "data").iterdir())[0]
    elif op == "huge_domains":
        big = "[" + ", ".join(f'"v{i}"' for i in range(3000)) + "]"
        if "establishments" in text:
            lines += ["[data.domains]", f"cnty = {big}"]
        else:
            lines += ["[data.domains]", f"age = {big}", f"sex = {big}"]
            lines += ["[[query]]", 'name = "huge"', 'by = ["age", "sex"]']
            lines += ['mechanism = "smooth_laplace"', "epsilon = 1.0"]
    elif op == "swap_kind":
        text = text.replace('kind = "eree"', 'kind = "@"').replace(
            'kind = "establishments"', 'kind = "eree"'
        )
        spec.write_text(text.replace('kind = "@"', 'kind = "establishments"'))
        return op, spec
    spec.write_text("\n".join(lines) + "\n")
    return op, spec


# --------------------------------------------------------------- command-line mutations

CLI_OPS = (
    "out_file", "out_symlink", "out_dev_null", "out_nonempty", "out_under_file",
    "out_deep_new", "ledger_text", "ledger_dir", "ledger_new", "ledger_under_file",
    "random_junk", "secure",
)  # fmt: skip


def mutate_cli(root: Path, rng: random.Random) -> tuple[str, list[str], Path]:
    """Returns the operation, extra arguments and the ``--out`` path."""
    op = rng.choice(CLI_OPS)
    out = root / "out"
    args: list[str] = ["--seed", "7"]
    if op == "out_file":
        out.write_text("a file")
    elif op == "out_symlink":
        out.symlink_to(root / "nowhere")
    elif op == "out_dev_null":
        out = Path("/dev/null")
    elif op == "out_nonempty":
        out.mkdir()
        (out / "keep.txt").write_text("keep")
    elif op == "out_under_file":
        (root / "f").write_text("x")
        out = root / "f" / "out"
    elif op == "out_deep_new":
        out = root / "a" / "b" / "out"
    elif op == "ledger_text":
        (root / "ledger.db").write_text("not a database\n" * 50)
        args += ["--ledger", str(root / "ledger.db")]
    elif op == "ledger_dir":
        (root / "ledger.db").mkdir()
        args += ["--ledger", str(root / "ledger.db")]
    elif op == "ledger_new":
        args += ["--ledger", str(root / "ledger.db")]
    elif op == "ledger_under_file":
        (root / "g").write_text("x")
        args += ["--ledger", str(root / "g" / "ledger.db")]
    elif op == "random_junk":
        args = ["--random", rng.choice(["bogus", "", "SECURE"])]
    else:
        args = []
    return op, args, out


# --------------------------------------------------------------- running and judging


def _snapshot(root: Path) -> dict[str, int]:
    snap = {}
    for p in root.rglob("*"):
        if p.is_symlink() or p.is_file():
            snap[str(p.relative_to(root))] = p.lstat().st_size
        elif p.is_dir():
            snap[str(p.relative_to(root)) + "/"] = 0
    return snap


def _run_and_judge(args: list[str], root: Path, out: Path, tally: Tally, label: str) -> str:
    """Run ``eree ARGS``, count its outcome in ``tally``; returns its stderr."""
    before = _snapshot(root)
    # a path that existed before the run (a file, a non-empty directory) is judged by the
    # snapshot: nothing under the case directory may change when the run fails
    fresh = out.parent.is_dir() and not out.exists() and not out.is_symlink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run_cli(args)
    o = judge(result, out if fresh else None)
    tally.runs += 1
    problems = []
    if caught:
        tally.warnings += 1
        messages = " ".join(str(w.message) for w in caught)
        if any(s in messages for s in SECRETS):
            problems.append("leak in a warning")
    if o.traceback:
        tally.tracebacks += 1
        problems.append("traceback")
    if o.ok:
        tally.successes += 1
    elif o.clean_error and not caught:
        tally.clean_errors += 1
    else:
        tally.unclean += 1
        problems.append("not a clean one-line error")
    if not o.ok:
        after = _snapshot(root)
        new = sorted(
            k for k in after if before.get(k) != after[k] and not k.startswith("ledger.db")
        )
        if new or o.partial:
            tally.partial_outputs += 1
            problems.append(f"left behind: {new}")
    if o.leak is not None:
        tally.leaks += 1
        problems.append(f"leak: {o.leak}")
    if problems:
        tally.failures.append(f"{label}: {problems}: {o.text[-300:]!r}")
    return result.stderr


def run_case(
    base: Path,
    work: Path,
    case_id: int,
    rng: random.Random,
    tally: Tally,
    engine: str = "polars",
    explain: bool = True,
) -> list[str]:
    """Build, break and run one case on ``engine``; returns its stderr lines.

    Paths under the case's directory read ``CASE`` in what is returned, so that the
    same case run in two directories (on two engines) can be compared.
    """
    kind = rng.choice(KINDS)
    ext = rng.choice(EXTS)
    root = work / f"case{case_id}"
    shutil.copytree(base / f"{kind}-{ext}", root)
    categories = ["spec", "cli", "data", "data", "data", "data"]
    if ext == "csv.gz":
        categories += ["gzip", "gzip"]
    category = rng.choice(categories)
    spec = root / "spec.toml"
    extra: list[str] = ["--seed", "7"]
    out = root / "out"
    if category == "data":
        f = rng.choice(_data_files(root, kind, ext))
        op = mutate_parquet(f, rng) if ext == "parquet" else mutate_csv(f, rng)
        op = f"{f.name}:{op}"
        if rng.random() < 0.25:  # a second fault, possibly in another table
            g = rng.choice(_data_files(root, kind, ext))
            try:
                more = mutate_parquet(g, rng) if ext == "parquet" else mutate_csv(g, rng)
            except Exception:  # the first fault left nothing the second can parse
                more = "skipped"
            op += f"+{g.name}:{more}"
    elif category == "gzip":
        f = rng.choice(_data_files(root, kind, ext))
        if rng.random() < 0.3:
            mutate_csv(f, rng)
        op = f"{f.name}:{mutate_gzip(f, rng)}"
    elif category == "spec":
        op, spec = mutate_spec(root, rng)
    else:
        op, extra, out = mutate_cli(root, rng)
    tally.cases += 1
    tally.by_category[category] += 1
    label = f"case {case_id} {kind}/{ext} {category}:{op}"
    args = ["protect", str(spec), "--out", str(out), *extra]
    if engine != "polars":
        args += ["--engine", engine]
    stderr = _run_and_judge(args, root, out, tally, label)
    if category == "spec" and explain:
        _run_and_judge(["explain", str(spec)], root, root / "never", tally, label + " (explain)")
    shutil.rmtree(root, ignore_errors=True)
    return [ln.replace(str(root), "CASE") for ln in stderr.splitlines() if ln.strip()]


def build_bases(tmp: Path) -> Path:
    base = tmp / "base"
    for kind in KINDS:
        for ext in EXTS:
            _build_base(base / f"{kind}-{ext}", kind, ext)
    return base


def run_chunk(tmp: Path, seed: int, n_cases: int) -> Tally:
    base = build_bases(tmp)
    work = tmp / "work"
    work.mkdir()
    tally = Tally()
    for i in range(n_cases):
        rng = random.Random(f"{seed}:{i}")
        run_case(base, work, i, rng, tally)
    report = os.environ.get("EREE_FUZZ_REPORT")
    if report:
        Path(report).mkdir(parents=True, exist_ok=True)
        Path(report, f"fuzz-{seed}.json").write_text(json.dumps(tally.as_dict(), indent=1))
    return tally


def _assert_tally(tally: Tally, n_cases: int) -> None:
    assert tally.cases == n_cases
    assert tally.failures == [], "\n".join(tally.failures[:10])
    assert (tally.tracebacks, tally.partial_outputs, tally.leaks, tally.unclean) == (0, 0, 0, 0)
    assert tally.successes + tally.clean_errors == tally.runs
    # the cases must mostly be malformed: a suite where everything succeeds tests nothing
    assert tally.clean_errors > tally.runs // 2


@pytest.mark.parametrize("chunk", range(N_CHUNKS))
def test_fuzz_inputs_and_specs(tmp_path: Path, chunk: int) -> None:
    tally = run_chunk(tmp_path, chunk, CASES_PER_CHUNK)
    _assert_tally(tally, CASES_PER_CHUNK)


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(N_CHUNKS, N_CHUNKS + 8))
def test_fuzz_larger_batch(tmp_path: Path, chunk: int) -> None:
    tally = run_chunk(tmp_path, chunk, 500)
    _assert_tally(tally, 500)


def test_fuzz_valid_bases_succeed_without_leaks(tmp_path: Path) -> None:
    """The starting points are valid releases: every malformation is then the fuzz's doing."""
    base = build_bases(tmp_path)
    tally = Tally()
    for kind in KINDS:
        for ext in EXTS:
            root = base / f"{kind}-{ext}"
            out = tmp_path / f"out-{kind}-{ext}"
            args = ["protect", str(root / "spec.toml"), "--out", str(out), "--seed", "1"]
            _run_and_judge(args, root, out, tally, f"{kind}/{ext}")
    assert tally.successes == len(KINDS) * len(EXTS), tally.failures


def test_fuzz_frames_carry_the_planted_values() -> None:
    # the leak checks are only meaningful if the inputs hold the secrets
    frames = eree_frames()
    assert frames["worker"]["private_note"].str.starts_with("zq9x").all()
    assert "private_note" in joined_frame(frames).columns
    assert 987654.321 in estab_frame()["wage"].to_list()


#: faults run in a real process: what a user's terminal shows, warnings included
SUBPROCESS_CASES = [
    ("estab", "csv", "drop_field"),
    ("eree3", "csv", "no_header"),
    ("estab", "csv.gz", "gzip_truncate"),
    ("joined", "parquet", "to_bool"),
    ("eree3", "csv", "header_only"),
    ("estab", "parquet", "wage_overflow"),
]


@pytest.mark.parametrize(("kind", "ext", "fault"), SUBPROCESS_CASES)
def test_fuzz_faults_in_a_real_process(tmp_path: Path, kind: str, ext: str, fault: str) -> None:
    root = _build_base(tmp_path / "case", kind, ext)
    f = _data_files(root, kind, ext)[-1]
    if fault == "gzip_truncate":
        f.write_bytes(f.read_bytes()[:-40])
    elif fault == "to_bool":
        df = pl.read_parquet(f)
        df.with_columns(pl.Series("sex", [True] * df.height)).write_parquet(f)
    elif fault == "wage_overflow":
        pl.read_parquet(f).with_columns(pl.lit(1.7e308).alias("wage")).write_parquet(f)
    else:
        text = f.read_text().splitlines()
        if fault == "drop_field":
            text[1] = text[1].rsplit(",", 2)[0] + "," + text[1].rsplit(",", 1)[1]
        elif fault == "no_header":
            text = text[1:]
        else:
            text = text[:1]
        f.write_text("\n".join(text) + "\n")
    out = root / "out"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), COLUMNS="80")
    proc = subprocess.run(
        [sys.executable, "-m", "eree.cli", "protect", str(root / "spec.toml"), "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    for secret in SECRETS:
        assert secret not in proc.stderr + proc.stdout
    assert not out.exists()
    assert not [p for p in root.iterdir() if ".partial" in p.name]
