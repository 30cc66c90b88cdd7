"""A generated fuzz over every spec key (:mod:`tests.cli.spec_fuzz`), through the CLI.

Every key of the spec schema, of both families, gets every hostile value of
:data:`tests.cli.spec_fuzz.MUTATIONS` (a wrong type; a huge, tiny, NaN or infinite
number; HTML, script, a path traversal, a newline or a NUL in a string; the key removed
or written twice): 5,000 and more cases. Each must be clean — exit 0 where the key's
declared type allows the value, else exit 2 with one line, nothing written — never a
traceback, a leak (a planted confidential value anywhere, markup unescaped in a page) or
an invalid value accepted.

The default suite runs a deterministic sample (every key at least once; in this process)
and a few cases as a real subprocess; ``-m slow`` runs them all. ``EREE_FUZZ_REPORT=DIR``
writes the full run's counts to ``DIR/spec-key-fuzz.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.cli.spec_fuzz import (
    MUTATIONS,
    SpecCase,
    all_cases,
    base_specs,
    build_case,
    must_refuse,
    run_spec_case,
    sample,
    spec_keys,
)

CASES = all_cases()
DEFAULT = sample(CASES, 200)
#: the default part in chunks, so that pytest -n 2 spreads them
CHUNK = 50


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return base_specs(tmp_path_factory.mktemp("spec-fuzz-bases"))


def _run(cases: list[SpecCase], bases: dict[str, dict[str, Any]], work: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    bad = []
    for i, case in enumerate(cases):
        verdict, detail = run_spec_case(case, bases, work / str(i))
        counts[verdict] += 1
        if verdict != "clean":
            bad.append(f"{verdict}: {case.label}: {detail}")
    assert bad == [], "\n".join(bad[:10])
    return counts


def test_the_fuzz_covers_every_key_of_the_schema_and_5000_cases():
    from eree.release.spec_schema import SECTIONS

    every = {(s.family, s.name, k.name) for s in SECTIONS for k in s.keys}
    covered = set()
    for c in CASES:
        for s, k in spec_keys(c.family):
            if (s.name, k.name) == (c.section, c.key):
                covered.add((s.family, s.name, k.name))
    assert covered == every
    assert len(CASES) >= 5000, len(CASES)
    assert {(c.family, c.section, c.key) for c in DEFAULT} == {
        (c.family, c.section, c.key) for c in CASES
    }


def test_the_oracle_refuses_what_the_declared_types_exclude():
    """The oracle itself: a wrong type, NaN, a key twice must be refused; a value of the
    right type may pass."""
    from eree.release.spec_schema import key

    eps = key("[[query]]", "epsilon")
    assert must_refuse(SpecCase("eree", "[[query]]", "epsilon", "set", float("nan")), eps, 1.0)
    assert must_refuse(SpecCase("eree", "[[query]]", "epsilon", "set", "1"), eps, 1.0)
    assert must_refuse(SpecCase("eree", "[[query]]", "epsilon", "set", -1), eps, 1.0)
    assert not must_refuse(SpecCase("eree", "[[query]]", "epsilon", "set", 0.5), eps, 1.0)
    assert must_refuse(SpecCase("eree", "[[query]]", "epsilon", "duplicate", None), eps, 1.0)
    name = key("[[query]]", "name")
    assert must_refuse(SpecCase("eree", "[[query]]", "name", "missing", None), name, "county")
    assert len(MUTATIONS) >= 40


@pytest.mark.parametrize("chunk", range(0, len(DEFAULT), CHUNK))
def test_spec_key_fuzz_sample(bases, tmp_path, chunk):
    counts = _run(DEFAULT[chunk : chunk + CHUNK], bases, tmp_path)
    assert counts["clean"] == len(DEFAULT[chunk : chunk + CHUNK])


@pytest.mark.parametrize("i", range(3))
def test_spec_key_fuzz_as_a_subprocess(bases, tmp_path, i):
    """A few cases through the installed command (a real process: its exit code and
    stderr as a shell sees them)."""
    from tests.cli.inputs import SECRETS

    case = DEFAULT[i * 37 % len(DEFAULT)]
    text, original, key = build_case(case, bases)
    spec = tmp_path / "spec.toml"
    spec.write_text(text, encoding="utf-8")
    out = tmp_path / "rel"
    root = Path(__file__).resolve().parents[2]
    r = subprocess.run(
        [sys.executable, "-m", "eree.cli", "protect", str(spec), "--out", str(out), "--seed", "1"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(root / "src"), "COLUMNS": "200"},
    )  # fmt: skip
    assert "Traceback" not in r.stderr, (case.label, r.stderr[-2000:])
    assert not any(s in r.stdout + r.stderr for s in SECRETS)
    assert r.returncode in (0, 2), (case.label, r.returncode, r.stderr[-2000:])
    if r.returncode == 2:
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        lines = [ln for ln in lines if not ln.startswith("WARNING: Using incubator")]
        assert len(lines) == 1 and lines[0].startswith("error:"), (case.label, r.stderr)
        assert not out.exists()
    else:
        assert not must_refuse(case, key, original), case.label


def _run_batch(
    cases, bases, tmp_path: Path, report_name: str, **kw
) -> tuple[Counter[str], list[str]]:
    """Run ``cases``; their verdicts counted, the unclean ones described; with
    ``EREE_FUZZ_REPORT=DIR`` the counts written to ``DIR/report_name``."""
    counts: Counter[str] = Counter()
    bad = []
    for i, case in enumerate(cases):
        verdict, detail = run_spec_case(case, bases, tmp_path / str(i), **kw)
        counts[verdict] += 1
        if verdict != "clean":
            bad.append(f"{verdict}: {case.label}: {detail}")
    report = os.environ.get("EREE_FUZZ_REPORT")
    if report:
        Path(report).mkdir(parents=True, exist_ok=True)
        Path(report, report_name).write_text(
            json.dumps({"cases": len(cases), **counts, "failures": bad[:200]}, indent=1)
        )
    return counts, bad


@pytest.mark.slow
def test_spec_key_fuzz_every_case(bases, tmp_path):
    counts, bad = _run_batch(CASES, bases, tmp_path, "spec-key-fuzz.json")
    assert bad == [], "\n".join(bad[:20])
    assert counts["clean"] == len(CASES) >= 5000


@pytest.mark.parametrize("path", ["line one\nline two.csv", "a\rb.csv", "x\u2028y.csv"])
def test_a_path_with_a_line_break_is_one_line(bases, tmp_path, path):
    """The error names the path as given: a newline in it made the error two lines."""
    from tests.cli.inputs import assert_clean_failure, run_cli

    text, _, _ = build_case(SpecCase("eree", "[data]", "worker", "set", path), bases)
    spec = tmp_path / "spec.toml"
    spec.write_text(text, encoding="utf-8")
    out = tmp_path / "rel"
    escaped = path.encode("unicode_escape").decode("ascii")  # named, its break escaped
    line = assert_clean_failure(
        run_cli(["protect", str(spec), "--out", str(out), "--seed", "1"]), out, escaped
    )
    assert len(line.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "setting", ['neighbor = "${HOME}$(id)`id`"', 'neighbor = "sqrt"', "distance = { a = 1.0 }"]
)
def test_a_gedp_privacy_key_in_an_eree_spec_is_refused(bases, tmp_path, setting):
    """Found by this fuzz: [privacy] neighbor (any text) was accepted, and ignored, by an
    ER-EE release; a key that does nothing is refused naming it."""
    from tests.cli.inputs import assert_clean_failure, run_cli

    text, _, _ = build_case(SpecCase("eree", "[privacy]", "alpha", "set", 0.1), bases)
    text = text.replace('"alpha" = 0.1', f'"alpha" = 0.1\n{setting}')
    spec = tmp_path / "spec.toml"
    spec.write_text(text, encoding="utf-8")
    out = tmp_path / "rel"
    key = setting.split(" ")[0]
    assert_clean_failure(
        run_cli(["protect", str(spec), "--out", str(out), "--seed", "1"]),
        out,
        f"[privacy].{key} applies to GEDP",
    )


@pytest.mark.slow
def test_spec_key_fuzz_sample_on_spark(bases, tmp_path):
    """The default sample with --engine spark (one Spark session for all)."""
    pytest.importorskip("pyspark")
    _, bad = _run_batch(DEFAULT, bases, tmp_path, "spec-key-fuzz-spark.json", engine="spark")
    assert bad == [], "\n".join(bad[:20])


@pytest.mark.parametrize(
    ("family", "section", "key", "value"),
    [
        ("eree", "[data]", "workplace", "nul\u0000byte"),
        ("establishments", "[data]", "path", "nul\u0000byte"),
        ("eree", "[privacy]", "alpha", 1e-308),
        ("eree", "[[query]]", "epsilon", 1e308),
    ],
)
def test_what_the_full_fuzz_found_is_clean(bases, tmp_path, family, section, key, value):
    """The full run's 6 tracebacks: a NUL in a data path (ValueError), α = 1e-308 (the
    size chain's k infinite in the stated semantics), ε = 1e308 (the report's log axis
    past 1e308)."""
    for q in (0, 1) if section == "[[query]]" else (0,):
        verdict, detail = run_spec_case(
            SpecCase(family, section, key, "set", value, q), bases, tmp_path / str(q)
        )
        assert verdict == "clean", detail
