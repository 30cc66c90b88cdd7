"""The corrupted-input matrix: every column of every input file broken in every way, with
the outcome docs/design.md#validation requires, and its runner on either engine.

Each :class:`Corruption` starts from a valid release of :mod:`tests.cli.inputs` (ER-EE
three tables, ER-EE joined, establishments; CSV or Parquet) and breaks one thing: a
value of one column in one row (a number written ``$…``, text in a number, a missing, a
negative, a NaN or an infinite number, a value outside its declared domain, a padded
value, an id copied from another row) or the file itself (no header, header only, a
missing column, a row with a field more or fewer, a blank line, an empty file). Its
``expect`` is what the rules require of ``eree protect`` (no ledger):

* ``"reject"``: exit 2, one line naming the file (and the column where there is one);
* ``"accept"``: the release succeeds (the column is one the spec does not configure:
  no release reads it; every configured column is read and checked, whether a query
  reads it or not, docs/design.md#validation);
* ``"either"``: the rules allow both (an id changed to a fresh one, a public value
  without a declared domain); only the agreement of the engines is required.

Every corrupted value carries a planted secret (:data:`tests.cli.inputs.SECRETS`), so
that printing it is a leak. :func:`run_corruption` classifies one run as ``clean``
(a clean refusal, or a success where one is allowed), ``traceback``, ``wrongly
accepted``, ``wrongly refused``, ``unclean`` (exit 2 but not one line, or output left)
or ``leak``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from tests.cli.inputs import judge, run_cli, write_eree_case, write_estab_case

KINDS = ("eree3", "joined", "estab")
EXTS = ("csv", "parquet")

#: values that break a confidential number; each holds a planted secret
BAD_NUMBERS = {
    "dollar": "$987654.321",
    "text": "zq9xabc",
    "negative": "-987654.321",
    "padded": " 987654.321",
    "java_suffix": "987654.321d",
    "nan": "NaN",
    "inf": "inf",
    "missing": "",
}
#: values outside a declared domain (worker attributes); each holds a planted secret
BAD_CODES = {"outside": "zq9xZZZ", "padded": " zq9xM", "missing": ""}
#: values of a column the spec does not configure
UNUSED_VALUES = {"text": "zq9xanything", "missing": ""}

#: the configured worker attributes (declared domains; the queries of
#: tests.cli.inputs.EREE_SPEC read sex, the others are configured all the same) and
#: workplace attributes (county read, the others configured): every release checks them
_WORKER_DOMAIN_USED = ("age", "sex", "race", "ethnicity", "education", "earnings")
_WORKPLACE_USED = ("state", "county", "tract", "block", "naics_sector", "ownership")
_NUMBERS = ("m1emp", "m2emp", "m3emp", "wage")
_ESTAB_PUBLIC = ("cnty", "own", "naics")
_IDS = ("workplace_id", "worker_id", "primary_key")


@dataclass(frozen=True)
class Corruption:
    """One broken input: which file, column and row, how, and what must happen."""

    kind: str
    ext: str
    file: str
    column: str
    how: str
    value: str | None
    expect: str

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.ext} {self.file}:{self.column}:{self.how}"


def _files(kind: str) -> dict[str, list[str]]:
    wp = ["workplace_id", "state", "county", "tract", "block", "naics_sector", "ownership"]
    wk = ["worker_id", "age", "sex", "race", "ethnicity", "education", "earnings",
          "private_note"]  # fmt: skip
    if kind == "estab":
        return {"estab": ["primary_key", *_ESTAB_PUBLIC, *_NUMBERS, "private_note"]}
    if kind == "joined":
        return {"jobs": ["worker_id", "workplace_id", *wp[1:], *wk[1:]]}
    return {"workplace": wp, "worker": wk, "job": ["worker_id", "workplace_id"]}


def _value_cases(kind: str, column: str) -> Iterator[tuple[str, str, str]]:
    """(how, value, expect) for a value of ``column`` in a release of ``kind``."""
    if column in _IDS:
        yield "missing", "", "reject"
        yield "duplicate", "<dup>", "reject"
        return
    if column in _NUMBERS:
        for how, v in BAD_NUMBERS.items():
            yield how, v, "reject"
        return
    if column in _WORKER_DOMAIN_USED:
        for how, v in BAD_CODES.items():
            yield how, v, "reject"
        return
    if column in _WORKPLACE_USED or (kind == "estab" and column in _ESTAB_PUBLIC):
        yield "missing", "", "reject"
        # a public value without a declared domain is a new category (and in the joined
        # form a workplace whose jobs then disagree): both outcomes are rules' outcomes
        yield "text", "Xplace", "either"  # public: may be published
        return
    for how, v in UNUSED_VALUES.items():
        yield how, v, "accept"


FILE_CASES = (
    "no_header", "header_only", "empty", "extra_field", "fewer_fields", "blank_line",
    "missing_column",
)  # fmt: skip


def corruptions() -> list[Corruption]:
    """The whole matrix, in a fixed order."""
    out = []
    for kind in KINDS:
        for ext in EXTS:
            for file, columns in _files(kind).items():
                for column in columns:
                    if kind == "joined" and column == "worker_id":
                        continue  # optional in the joined form: a copied id is allowed there
                    for how, value, expect in _value_cases(kind, column):
                        if (
                            how == "duplicate"
                            and (kind == "joined" or file == "job")
                            and (column == "workplace_id")
                        ):
                            continue  # a workplace's jobs repeat its id
                        out.append(Corruption(kind, ext, file, column, how, value, expect))
                for how in FILE_CASES:
                    if ext == "parquet" and how not in ("header_only", "missing_column", "empty"):
                        continue  # text-level faults of a CSV file
                    required = "workplace_id" if kind == "joined" else columns[0]
                    column = {"missing_column": required}.get(how, "")
                    out.append(Corruption(kind, ext, file, column, how, None, "reject"))
    return out


#: the cases of the issue that made the suite: a wage written $…, a worker file without a
#: header, bad numbers, missing columns, duplicate ids (and blank and header-only files)
NAMED = {
    ("estab", "wage", "dollar"), ("estab", "m1emp", "text"), ("worker", "", "no_header"),
    ("estab", "", "no_header"), ("worker", "worker_id", "duplicate"),
    ("estab", "primary_key", "missing_column"), ("job", "", "blank_line"),
    ("jobs", "", "header_only"), ("worker", "sex", "outside"),
}  # fmt: skip


def subset(cases: list[Corruption], every: int) -> list[Corruption]:
    """A representative subset: every ``every``-th case and the :data:`NAMED` ones (CSV)."""
    return [
        c
        for i, c in enumerate(cases)
        if i % every == 0 or (c.ext == "csv" and (c.file, c.column, c.how) in NAMED)
    ]


def _set_value(df: pl.DataFrame, column: str, row: int, value: str) -> pl.DataFrame:
    if value == "<dup>":
        value = str(df[column][row + 1])
    text = df[column].cast(pl.Utf8)
    return df.with_columns(text.scatter(row, value).alias(column))


def build(c: Corruption, root: Path) -> Path:
    """Write the valid case under ``root``, break it as ``c`` says; returns the spec."""
    if c.kind == "estab":
        spec = write_estab_case(root, c.ext)
    else:
        spec = write_eree_case(root, c.ext, joined=c.kind == "joined")
    path = root / "data" / f"{c.file}.{c.ext}"
    df = pl.read_parquet(path) if c.ext == "parquet" else pl.read_csv(path, infer_schema=False)
    row = 0  # the establishment with the planted wage; a worker with a private note
    if c.value is not None:
        df = _set_value(df, c.column, row, c.value)
    elif c.how == "header_only":
        df = df.head(0)
    elif c.how == "missing_column":
        df = df.drop(c.column)
    if c.ext == "parquet":
        if c.how == "empty":
            path.write_bytes(b"")
        else:
            df.write_parquet(path)
        return spec
    lines = df.write_csv().splitlines()
    if c.how == "no_header":
        lines = lines[1:]
    elif c.how == "empty":
        lines = []
    elif c.how == "extra_field":
        lines[row + 1] += ",zq9xextra"
    elif c.how == "fewer_fields":
        lines[row + 1] = lines[row + 1].rsplit(",", 1)[0]
    elif c.how == "blank_line":
        lines.insert(row + 1, "")
    path.write_text("\n".join(lines) + ("\n" if lines else ""))
    return spec


@dataclass(frozen=True)
class Judged:
    """One run of a corruption: its class and its one error line (paths as ``CASE``)."""

    verdict: str
    line: str


def run_corruption(c: Corruption, root: Path, engine: str = "polars") -> Judged:
    """Build ``c`` under ``root``, run ``eree protect SPEC --out DIR --seed 1`` on ``engine``."""
    spec = build(c, root)
    out = root / "rel"
    args = ["protect", str(spec), "--out", str(out), "--seed", "1"]
    if engine != "polars":
        args += ["--engine", engine]
    r = run_cli(args)
    o = judge(r, out)
    errors = [ln for ln in r.stderr.splitlines() if ln.strip()]
    line = errors[0].replace(str(root), "CASE") if errors else ""
    if o.leak is not None:
        verdict = "leak"
    elif o.traceback:
        verdict = "traceback"
    elif o.ok:
        verdict = "wrongly accepted" if c.expect == "reject" else "clean"
    elif o.clean_error and not o.partial:
        named = f"{c.file}.{c.ext}" in line and (not c.column or c.column in line)
        verdict = "wrongly refused" if c.expect == "accept" else "clean" if named else "unnamed"
    else:
        verdict = "unclean"
    shutil.rmtree(root, ignore_errors=True)
    return Judged(verdict, line)


# ------------------------------------------------------------- the random fuzz, both engines

#: the verdicts counted per engine (the issue's four, then the rest)
VERDICTS = ("clean", "traceback", "wrongly accepted", "leak", "wrongly refused", "unclean",
            "unnamed", "different error")  # fmt: skip


def fuzz_pair(base: Path, work: Path, seed: int, i: int) -> dict[str, Judged]:
    """Fuzz case ``i`` of ``seed`` (:mod:`tests.cli.test_fuzz`) on both engines.

    The same case is built twice from its seed, in two directories, and run by
    ``eree protect`` on each engine. Polars' verdict: ``clean`` (a clean refusal, or a
    success: the random changes have no oracle of their own), ``traceback``, ``leak`` or
    ``unclean``. Spark's: the same, and ``wrongly accepted`` / ``wrongly refused`` where
    it succeeds and Polars refuses or the reverse. Each verdict's line is the run's
    stderr, paths as ``CASE``.
    """
    import random

    from tests.cli.test_fuzz import Tally, run_case

    out: dict[str, Judged] = {}
    for engine in ("polars", "spark"):
        tally = Tally()
        where = work / engine
        where.mkdir(parents=True, exist_ok=True)
        lines = run_case(base, where, i, random.Random(f"{seed}:{i}"), tally, engine, False)
        if tally.leaks:
            verdict = "leak"
        elif tally.tracebacks:
            verdict = "traceback"
        elif tally.unclean or tally.partial_outputs:
            verdict = "unclean"
        else:
            verdict = "clean"
        out[engine] = Judged(verdict, "\n".join(lines))
    polars, spark = out["polars"], out["spark"]
    if spark.verdict == "clean" and polars.verdict == "clean" and spark.line != polars.line:
        verdict = "wrongly accepted" if not spark.line else "wrongly refused"
        if spark.line and polars.line:
            verdict = "different error"  # both refuse, with different lines
        out["spark"] = Judged(verdict, spark.line)
    return out
