"""A generated fuzz over every spec key: each key of the spec schema given hostile values.

The keys come from :data:`eree.release.spec_schema.SECTIONS` (every section of each
family: ER-EE job counts and GEDP establishment sums). Each :class:`SpecCase` starts from
a valid release spec of its family (:mod:`tests.cli.inputs`: ER-EE three tables,
establishments) and changes one key — set to a hostile value (a wrong type; a huge, tiny,
zero, negative, NaN or infinite number; a string with HTML, script, a path traversal, a
newline, a NUL, a right-to-left mark, a very long text), removed, or written twice — and
runs ``eree protect SPEC --out DIR --seed 1``.

The oracle is independent of eree's code: from the key's declared type and allowed
values alone (:func:`must_refuse`), a value of the wrong type, outside the allowed
values, a number outside its stated range, a path other than the valid one, a required
key removed and a key written twice must be refused; any other change may succeed or be
refused. Every run is classified (:func:`run_spec_case`):

* ``clean``: exit 0 (where the oracle allows it) or a clean refusal — exit 2, one line
  on stderr starting ``error:``, no output folder, no ``.partial`` folder;
* ``traceback``: a Python traceback, or an exception that is not a clean exit;
* ``leak``: a planted confidential value (:data:`tests.cli.inputs.SECRETS`) in anything
  printed or written, or a hostile ``<script``/``<img`` text unescaped in an HTML page;
* ``wrongly accepted``: exit 0 where the oracle requires a refusal;
* ``unclean``: any other exit, more than one line, or output left behind on refusal.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from eree.release.spec_schema import REQUIRED, SECTIONS, Key, Section
from tests.cli.inputs import (
    EREE_SPEC,
    GEDP_SPEC,
    eree_data_lines,
    estab_frame,
    judge,
    run_cli,
    write_eree_case,
    write_estab_case,
    write_frame,
)

FAMILIES = ("eree", "establishments", "coarsening")

#: hostile strings: markup and script, path traversal, control characters, long text
HOSTILE_STRINGS = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(5)>',
    "../../../../etc/passwd",
    "/dev/zero",
    "line one\nline two",
    "nul\u0000byte",
    "\u202eevil.exe",
    "x" * 5000,
    "",
    " ",
    "${HOME}$(id)`id`",
    "C:\\Windows\\system32",
    "%s%n%x",
    "spark://h:1; rm -rf /",
    "<b>bold</b>",
    "NaN",
    "1e999",
    "A01",
)
#: hostile numbers: huge, tiny, zero, negative, NaN, infinite, not representable
HOSTILE_NUMBERS = (
    0, -1, 1e308, -1e308, 1e-308, 5e-324, float("nan"), float("inf"), float("-inf"),
    2**63, 10**30, 0.5, 3, 1.5, 1e15, -0.0, 1e-20, 0.999999, 2**53 + 1,
)  # fmt: skip
#: values of another type
WRONG_TYPES = (True, False, [1, 2], ["<b>", "a"], [], {"a": 1}, {"<script>": ["x"]}, {})
#: the mutations: ("set", value), ("missing", None), ("duplicate", None)
MUTATIONS: tuple[tuple[str, Any], ...] = (
    *(("set", v) for v in HOSTILE_STRINGS),
    *(("set", v) for v in HOSTILE_NUMBERS),
    *(("set", v) for v in WRONG_TYPES),
    ("missing", None),
    ("duplicate", None),
)


@dataclass(frozen=True)
class SpecCase:
    """One key of one family changed one way."""

    family: str
    section: str
    key: str
    op: str
    value: Any
    query: int = 0  # which [[query]] (for the [[query]] keys)

    @property
    def label(self) -> str:
        v = repr(self.value)
        v = v if len(v) <= 30 else v[:27] + "..."
        return f"{self.family} {self.section}.{self.key} {self.op} {v}"


def _sections(family: str) -> list[Section]:
    if family == "coarsening":  # its own section; the shared ones are fuzzed by the others
        return [s for s in SECTIONS if s.family == family]
    return [s for s in SECTIONS if s.family in ("both", family)]


def spec_keys(family: str) -> list[tuple[Section, Key]]:
    """Every (section, key) of the schema that a spec of ``family`` may hold."""
    return [(s, k) for s in _sections(family) for k in s.keys]


def all_cases() -> list[SpecCase]:
    """Every key of each family × every mutation, in a fixed order (the full fuzz)."""
    out = []
    for family in FAMILIES:
        for n, (section, key) in enumerate(spec_keys(family)):
            for op, value in MUTATIONS:
                out.append(SpecCase(family, section.name, key.name, op, value, n % 2))
    return out


def sample(cases: list[SpecCase], n: int, seed: int = 38) -> list[SpecCase]:
    """A deterministic sample of ``n`` cases that holds every key at least once."""
    rng = random.Random(seed)
    by_key: dict[tuple[str, str, str], list[int]] = {}
    for i, c in enumerate(cases):
        by_key.setdefault((c.family, c.section, c.key), []).append(i)
    chosen = [rng.choice(group) for group in by_key.values()]
    taken = set(chosen)
    rest = [i for i in range(len(cases)) if i not in taken]
    chosen += rng.sample(rest, max(0, n - len(chosen)))
    return [cases[i] for i in sorted(chosen)]


# ------------------------------------------------------------------------ the oracle


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _number_ok(v: Any, rule: str) -> bool:
    """Whether ``v`` meets a stated numeric rule ("number > 0", "in (0, 1]", …)."""
    if not _is_number(v) or not math.isfinite(v):
        return False
    if "> 0" in rule and not v > 0:
        return False
    if "≥ 0" in rule and not v >= 0:
        return False
    if "in (0, 1)" in rule and not 0 < v < 1:
        return False
    if "in (0, 1]" in rule and not 0 < v <= 1:
        return False
    return not ("in (0, t)" in rule and not v > 0)


def _type_ok(key: Key, v: Any, original: Any) -> bool | None:
    """True: the value has the key's type (it may still be refused); False: it has not,
    so it must be refused; None: the rule cannot tell from the declared type."""
    t = key.type
    if t == "path":
        return None if v == original else False
    if key.allowed and t.startswith("string"):
        if isinstance(v, str):
            return v in key.allowed
        return None if t == "string or table" and isinstance(v, dict) else False
    if t == "boolean":
        return isinstance(v, bool)
    if t == "positive integer":
        return isinstance(v, int) and not isinstance(v, bool) and v >= 1
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t.startswith("integer 1"):
        return isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 4
    if t == "power of two > 0":
        if not _number_ok(v, "> 0"):
            return False
        return math.frexp(float(v))[0] == 0.5
    if t.startswith("number"):
        if ", or table" in t and isinstance(v, dict):
            return None
        return _number_ok(v, t)
    if t == "list of strings":
        return (isinstance(v, list) and all(isinstance(x, str) for x in v)) or False
    if t == "list of lists of strings":
        ok = isinstance(v, list) and all(
            isinstance(g, list) and all(isinstance(x, str) for x in g) for g in v
        )
        return None if ok else False
    if t.startswith("list of strings or"):
        ok = v == "identity" or (isinstance(v, list) and all(isinstance(x, str) for x in v))
        return None if ok else False
    if t.startswith("table"):
        return None if isinstance(v, dict) else False
    if t == "string":
        return None if isinstance(v, str) else False
    return None


def must_refuse(case: SpecCase, key: Key, original: Any) -> bool:
    """The independent rule: whether eree must refuse this change."""
    if case.op == "duplicate":
        return True  # a key written twice is not TOML
    if case.op == "missing":
        return original is not None and key.default is REQUIRED
    return _type_ok(key, case.value, original) is False


# ------------------------------------------------------------------------ the specs


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # JSON's escapes are TOML basic-string escapes
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def _lines(table: dict[str, Any], twice: str | None) -> list[str]:
    out = []
    for k, v in table.items():
        line = f"{json.dumps(k)} = {_toml_value(v)}"
        out.append(line)
        if k == twice:
            out.append(line)
    return out


def to_toml(raw: dict[str, Any], twice: tuple[str, str, int] | None = None) -> str:
    """The spec as TOML; ``twice`` = (section, key, query): that key written twice."""
    sec, key, qi = twice if twice else ("", "", 0)
    top = {k: v for k, v in raw.items() if not isinstance(v, dict) and k != "query"}
    text = _lines(top, key if sec == "top level" else None)
    for name, table in raw.items():
        if name == "query":
            for i, q in enumerate(table):
                text += [
                    "",
                    "[[query]]",
                    *_lines(q, key if sec == "[[query]]" and i == qi else None),
                ]
        elif isinstance(table, dict):
            text += ["", f"[{name}]", *_lines(table, key if sec == f"[{name}]" else None)]
    return "\n".join(text) + "\n"


def base_specs(root: Path) -> dict[str, dict[str, Any]]:
    """The valid spec of each family, as a table, with absolute data paths under ``root``."""
    write_eree_case(root / "eree")
    write_estab_case(root / "establishments")
    eree = tomllib.loads(EREE_SPEC.format(data=eree_data_lines("csv")))
    for t in ("workplace", "worker", "job"):
        eree["data"][t] = str(root / "eree" / "data" / f"{t}.csv")
    gedp = tomllib.loads(GEDP_SPEC.format(path=str(root / "establishments" / "data" / "estab.csv")))
    # the coarsening family: the same establishments (the planted wage's establishment is
    # private-sector, so no ownership exemption publishes it exactly)
    data = root / "coarsening" / "data" / "estab.csv"
    write_frame(estab_frame().with_columns(
        pl.when(pl.col("primary_key") == "e000").then(pl.lit("5")).otherwise("own").alias("own"),
        pl.lit("44").alias("state"),
    ), data)  # fmt: skip
    coarsening = {
        "name": "fuzz-coarsening",
        "data": {
            "kind": "establishments",
            "path": str(data),
            "id": "primary_key",
            "public": ["state", "cnty", "own", "naics"],
            "confidential": ["m1emp", "m2emp", "m3emp", "wage"],
        },
        "protection": {"mode": "coarsening", "rounding": "deterministic", "threshold": 3},
        "output": {"format": "qcew-by-area", "year": 2024, "quarter": 1},
    }
    return {"eree": eree, "establishments": gedp, "coarsening": coarsening}


def _where(raw: dict[str, Any], case: SpecCase) -> dict[str, Any]:
    """The table that holds the case's key (created when absent)."""
    if case.section == "top level":
        return raw
    if case.section == "[[query]]":
        return raw["query"][case.query]
    name = case.section.strip("[]")
    table = raw.setdefault(name, {})
    return table if isinstance(table, dict) else raw.setdefault(name, {})


def build_case(case: SpecCase, bases: dict[str, dict[str, Any]]) -> tuple[str, Any, Key]:
    """The case's spec text, the key's original value (None: absent) and its schema key."""
    raw = json.loads(json.dumps(bases[case.family]))
    table = _where(raw, case)
    original = table.get(case.key)
    section = next(s for s in _sections(case.family) if s.name == case.section)
    key = next(k for k in section.keys if k.name == case.key)
    twice = None
    if case.op == "set":
        table[case.key] = case.value
    elif case.op == "missing":
        table.pop(case.key, None)
    elif case.op == "duplicate":
        if original is None:
            table[case.key] = key.default if key.default not in (None, REQUIRED) else "x"
        twice = (case.section, case.key, case.query)
    return to_toml(raw, twice), original, key


#: the hostile markup that must never reach a page unescaped
_MARKUP = ("<script>alert(1)</script>", "<img src=x onerror=alert(5)>", "<b>bold</b>")


def run_spec_case(
    case: SpecCase, bases: dict[str, dict[str, Any]], work: Path, engine: str = "polars"
) -> tuple[str, str]:
    """Run one case through the CLI in this process; returns (verdict, detail)."""
    text, original, key = build_case(case, bases)
    work.mkdir(parents=True, exist_ok=True)
    spec = work / "spec.toml"
    spec.write_text(text, encoding="utf-8")
    out = work / "rel"
    args = ["protect", str(spec), "--out", str(out), "--seed", "1"]
    if engine != "polars":
        args += ["--engine", engine]
    r = run_cli(args)
    verdict, detail = classify(r, out, must_refuse(case, key, original))
    shutil.rmtree(work, ignore_errors=True)
    return verdict, detail


def classify(r: Any, out: Path, refuse: bool) -> tuple[str, str]:
    """The verdict of one run (see the module docstring) and the text it printed."""
    o = judge(r, out)
    detail = o.text[-600:]
    if o.traceback:
        return "traceback", detail
    if o.leak is not None:
        return "leak", f"{o.leak}: {detail}"
    if o.ok:
        for page in out.rglob("*.html") if out.is_dir() else []:
            html = page.read_text(encoding="utf-8", errors="replace")
            if any(m in html for m in _MARKUP):
                return "leak", f"markup unescaped in {page.name}"
        return ("wrongly accepted", detail) if refuse else ("clean", detail)
    if o.clean_error and not o.partial:
        return "clean", detail
    return "unclean", f"exit {r.exit_code}: {detail}"
