"""One release test suite over every engine: the spec's feature matrix on Polars and Spark.

The cases come from :mod:`tests.release.engine_matrix` (generated from the mechanism
registry and the spec's key table). Each case runs ``eree protect`` in this process
(one local Spark session for all) with ``--engine polars`` and ``--engine spark``:

* seeded: every file of the two releases is the same, byte for byte — tables (Parquet and
  CSV), agency files, microdata — except that the manifests differ only in ``created``
  and ``engine`` and the reports only in the creation time;
* charged to a ledger (one ledger, the Polars release first): the Spark release is
  accepted as the same dataset (the same content fingerprint), costs the same, and
  publishes the same cells (key columns) — its noise is secure, so not the values;
* under an office policy requiring a ledger: an uncharged secure release is refused on
  both engines with the same line, nothing written; a charged one is as above;
* a case holding a documented refusal (:data:`~tests.release.engine_matrix.REFUSED`) is
  refused on both engines with the same one line (exit 2, nothing written), and
  ``eree explain``, which reads no data, refuses it with that line too.

Never a traceback, never a planted secret in what is printed or written. The default
suite runs :func:`~tests.release.engine_matrix.default_cases`: every feature released at
least once on each engine, but for the pairs in
:data:`~tests.release.engine_matrix.SLOW_ONLY` (charged releases on Spark, each with its
reason), whose cases run on the other engine; the coverage test holds it to that.
``-m slow`` runs those cases on every engine, the pairwise cover, the two reported Spark
crashes as named tests, and the default seeded cases on a standalone cluster (a master and
two workers on 127.0.0.1, through ``eree`` processes as in
tests/engine/spark/test_cluster.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tests.cli.inputs import assert_clean_failure, judge, run_cli
from tests.release.engine_matrix import (
    ENGINES,
    KNOWN_FAILURES,
    REFUSED,
    SLOW_ONLY,
    Case,
    axes,
    base_values,
    default_cases,
    engines_for,
    make_case,
    pair_refusals,
    required_features,
    slow_cases,
    write_case,
)

pytest.importorskip("pyspark")

DEFAULT = default_cases()
SLOW = slow_cases()
SEED = "7"


# ----------------------------------------------------------------------------- checking


def _manifest(out: Path) -> dict[str, Any]:
    return json.loads((out / "manifest.json").read_text())


def _files(out: Path) -> dict[str, Path]:
    return {p.relative_to(out).as_posix(): p for p in sorted(out.rglob("*")) if p.is_file()}


def _marker(out: Path) -> dict[str, Any]:
    """The output folder's marker: the files and their sizes (not times)."""
    m = json.loads((out / ".eree-output").read_text())
    return {k: v["bytes"] for k, v in m["files"].items() if k != "manifest.json"}


def assert_same_seeded_release(a: Path, b: Path) -> None:
    """Two seeded releases of one spec on two engines publish the same bytes (see module)."""
    fa, fb = _files(a), _files(b)
    assert fa.keys() == fb.keys()
    assert any(k.startswith("tables/") for k in fa)
    ma, mb = _manifest(a), _manifest(b)
    for m in (ma, mb):
        m.pop("engine")
    created = ma.pop("created"), mb.pop("created")
    assert ma == mb
    assert _marker(a) == _marker(b)
    for name in fa:
        if name in ("manifest.json", ".eree-output"):
            continue
        da, db = fa[name].read_bytes(), fb[name].read_bytes()
        if name == "report.html":
            da, db = da.replace(created[0].encode(), b""), db.replace(created[1].encode(), b"")
        assert da == db, name


def assert_seeded_mark(out: Path, manifest: dict[str, Any], *, seeded: bool) -> None:
    """Every CSV and agency file of a seeded release carries NOT-FOR-PUBLICATION in its
    name (and a gzip file in its header); a publishable release's none. Each agency file
    still passes ``eree check-format``, which says it is not for publication, and refuses
    it with --for-publication (docs/design.md#release-outputs)."""
    text = [n for n in _files(out) if n.endswith((".csv", ".csv.gz"))]
    assert text or not manifest.get("agency_files")
    for name in text:
        assert (".NOT-FOR-PUBLICATION.csv" in name) is seeded, name
        if name.endswith(".gz"):
            assert (b"NOT-FOR-PUBLICATION\x00" in (out / name).read_bytes()[:64]) is seeded
    agency = manifest.get("agency_files")
    if not agency:
        return
    assert sorted(agency["files"]) == sorted(n for n in text if n.startswith("agency/"))
    for name in agency["files"]:
        moe = ["--moe"] if "_moe." in name else []
        r = run_cli(["check-format", str(out / name), "--format", agency["format"], *moe])
        assert r.exit_code == 0, r.output
        assert ("NOT FOR PUBLICATION" in r.output) is seeded, r.output
        r = run_cli(["check-format", str(out / name), "--format", agency["format"], *moe,
                     "--for-publication"])  # fmt: skip
        assert r.exit_code == (2 if seeded else 0), r.output


def assert_same_charged_release(a: Path, b: Path) -> None:
    """Two charged releases: one dataset, the same costs and the same published cells."""
    ma, mb = _manifest(a), _manifest(b)
    assert ma["dataset"]["fingerprint"] and ma["dataset"]["fingerprint"] == mb["dataset"][
        "fingerprint"]  # fmt: skip
    assert ma["privacy"] == mb["privacy"]
    assert [q.get("cost") for q in ma["queries"]] == [q.get("cost") for q in mb["queries"]]
    assert ma["random"]["mode"] == mb["random"]["mode"] != "seeded"
    assert _files(a).keys() == _files(b).keys()
    for q in ma["queries"]:
        ta, tb = pl.read_parquet(a / q["file"]), pl.read_parquet(b / q["file"])
        assert ta.schema == tb.schema, q["name"]
        keys = ta.columns[:1] if q["by"] == "identity" else q["by"]
        assert ta.select(keys).equals(tb.select(keys)), q["name"]


def _protect(spec: Path, out: Path, engine: str, *extra: str):
    return run_cli(["protect", str(spec), "--out", str(out), "--engine", engine, *extra])


def _released(result, out: Path) -> None:
    o = judge(result, out)
    assert not o.traceback, o.text
    assert o.ok, o.text
    assert o.leak is None, o.leak


def _refused_alike(results: dict[str, Any], outs: dict[str, Path], *words: str) -> str:
    lines = {e: assert_clean_failure(r, outs[e], *words).strip() for e, r in results.items()}
    assert not any(p.exists() for p in outs.values())
    assert len(set(lines.values())) == 1, lines
    return next(iter(lines.values()))


def run_case(
    case: Case, root: Path, monkeypatch: pytest.MonkeyPatch, engines: tuple[str, ...] = ENGINES
) -> None:
    """Release ``case`` on ``engines`` and compare (module docstring)."""
    w = write_case(case, root)
    outs = {e: root / f"out-{e}" for e in engines}
    args = ["--seed", SEED]
    if w.charge != "seeded":
        ledger = root / "ledger.sqlite"
        r = run_cli(["ledger", "budget", str(ledger), w.name, *w.budget])
        assert r.exit_code == 0, r.output
        args = ["--ledger", str(ledger)]
    if w.charge == "policy":
        monkeypatch.setenv("EREE_REQUIRE_LEDGER", "1")
        bare = {e: root / f"bare-{e}" for e in engines}
        _refused_alike({e: _protect(w.spec, bare[e], e) for e in engines}, bare, "--ledger")
    if case.refused:
        results = {e: _protect(w.spec, outs[e], e, *args) for e in engines}
        line = _refused_alike(results, outs, *case.refused)
        # before any data is read: the same line with the data gone
        shutil.rmtree(root / "data")
        results = {e: _protect(w.spec, outs[e], e, *args) for e in engines}
        assert _refused_alike(results, outs) == line
        return
    for e in engines:
        _released(_protect(w.spec, outs[e], e, *args), outs[e])
        m = _manifest(outs[e])
        assert m["policy"]["require_ledger"] is (w.charge == "policy")
        assert (m["random"]["mode"] == "seeded") is (w.charge == "seeded")
        if w.charge != "seeded":
            assert m["dataset"]["fingerprint"] and m["ledger"]
        assert_seeded_mark(outs[e], m, seeded=w.charge == "seeded")
    if len(engines) < 2:  # slow-only on the others (SLOW_ONLY)
        return
    if w.charge == "seeded":
        assert_same_seeded_release(outs["polars"], outs["spark"])
    else:
        assert_same_charged_release(outs["polars"], outs["spark"])


# -------------------------------------------------------------------------------- cases


def test_every_registered_feature_is_released_by_a_default_case() -> None:
    """The matrix covers the registry and the key table: each feature released once
    per engine in the default suite (a documented refusal: refused there once)."""
    required = required_features()
    refused = {f for c in DEFAULT if c.refused for f in c.features}
    assert set(REFUSED) <= required, set(REFUSED) - required
    assert set(REFUSED) <= refused
    for engine in ENGINES:  # released on every engine, or slow-only there with a reason
        released = {f for c in DEFAULT if not c.refused and engine in engines_for(c, slow=False)
                    for f in c.features}  # fmt: skip
        slow = {f"{v}@{fam}" for (v, e), why in SLOW_ONLY.items() if e == engine and why
                for fam in ("eree", "gedp")}  # fmt: skip
        missing = required - set(REFUSED) - released
        assert missing <= slow, (engine, sorted(missing - slow))
        in_slow = {f for c in SLOW if not c.refused for f in c.features}
        assert missing <= in_slow, (engine, sorted(missing - in_slow))
    # what the default suite leaves to -m slow is the charged releases on Spark, no more
    assert {v for v, _ in SLOW_ONLY} == {"charge ledger", "charge policy"}
    for family in ("eree", "gedp"):  # each refused pair is a case
        for x, y in pair_refusals(family):
            assert any(c.family == family and {x, y} <= set(dict(c.values).values())
                       for c in DEFAULT + SLOW), (x, y)  # fmt: skip
    # every mechanism under every definition it allows is an axis value
    from eree.mechanisms.registry import REGISTRY

    mechs = {f for f in required if f.startswith("mechanism ")}
    assert len(mechs) == sum(len(e.definitions) for e in REGISTRY)


def test_the_slow_cases_cover_every_pair() -> None:
    """Every two values of two axes (that a spec can combine) share a released case."""
    from itertools import combinations

    from tests.release.engine_matrix import compatible, family_marker

    everything = [c for c in DEFAULT + SLOW if not c.refused]
    for family in ("eree", "gedp"):
        seen = {
            frozenset(p)
            for c in everything
            if c.family == family
            for p in combinations(c.values, 2)
        }
        assert seen
        for (a, xs), (b, ys) in combinations(axes(family).items(), 2):
            for x in xs:
                for y in ys:
                    if compatible({**family_marker(family), a: x, b: y}):
                        assert frozenset({(a, x), (b, y)}) in seen, (family, x, y)


def _params(cases: list[Case]) -> list[Any]:
    return [
        pytest.param(c, id=c.id, marks=pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[c]))
        if c in KNOWN_FAILURES else pytest.param(c, id=c.id)
        for c in cases
    ]  # fmt: skip


@pytest.mark.parametrize("case", _params(list(dict.fromkeys([*DEFAULT, *KNOWN_FAILURES]))))
def test_case_on_both_engines(case: Case, tmp_path: Path, monkeypatch) -> None:
    """Every engine but those the case's values are slow-only on (``SLOW_ONLY``)."""
    run_case(case, tmp_path, monkeypatch, engines_for(case, slow=False))


@pytest.mark.slow
@pytest.mark.parametrize(
    "case", [c for c in DEFAULT if engines_for(c, slow=False) != ENGINES], ids=lambda c: c.id
)
def test_default_case_on_every_engine(case: Case, tmp_path: Path, monkeypatch) -> None:
    """The default cases the default suite runs on some engines only, on all of them."""
    run_case(case, tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("case", _params(SLOW))
def test_case_on_both_engines_pairwise(case: Case, tmp_path: Path, monkeypatch) -> None:
    run_case(case, tmp_path, monkeypatch)


# ------------------------------------------------------------- the two reported Spark crashes
# (slow: the default cases release consistent counts and noise infusion on Spark too)


@pytest.mark.slow
def test_consistent_counts_release_on_spark_as_on_polars(tmp_path: Path, monkeypatch) -> None:
    """`[postprocess] consistent = true` (ER-EE) under --engine spark: a
    PySparkAttributeError traceback before the engine data became an opaque handle."""
    values = {
        "definition": "definition eree-weak",
        "postprocess": "postprocess consistent",
        "file": "file csv",
    }  # with the by = [] total, as every small ER-EE case (was a known failure)
    run_case(make_case("eree", {**base_values("eree"), **values}), tmp_path, monkeypatch)


@pytest.mark.slow
def test_noise_infusion_releases_on_spark_as_on_polars(tmp_path: Path, monkeypatch) -> None:
    """A `noise_infusion` query under --engine spark: the same traceback before."""
    run_case(make_case("eree", {**base_values("eree"), "definition": "definition none"}), tmp_path,
             monkeypatch)  # fmt: skip


# ------------------------------------------------------------- a Spark standalone cluster


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory):
    from tests.engine.spark.cluster import standalone_cluster

    root = tmp_path_factory.mktemp("cluster")
    driver_tmp = root / "driver-tmp"
    driver_tmp.mkdir()
    with standalone_cluster(root, driver_tmp=driver_tmp) as c:
        yield c, driver_tmp


@pytest.mark.slow
@pytest.mark.parametrize(
    "case", [c for c in DEFAULT if not c.refused and c.get("charge") == "charge seeded"],
    ids=lambda c: c.id,
)  # fmt: skip
def test_case_on_a_standalone_cluster(case: Case, tmp_path: Path, spark_cluster) -> None:
    """The default seeded cases on a master and two workers on 127.0.0.1 (an ``eree``
    process per release, as tests/engine/spark/test_cluster.py): Polars' bytes."""
    from tests.engine.spark.test_cluster import CONF, eree

    c, driver_tmp = spark_cluster
    w = write_case(case, tmp_path)
    w.spec.write_text(w.spec.read_text() + CONF)
    polars, spark = tmp_path / "out-polars", tmp_path / "out-cluster"
    _released(_protect(w.spec, polars, "polars", "--seed", SEED), polars)
    r = eree(["protect", w.spec, "--out", spark, "--seed", SEED, "--engine", "spark",
              "--master", c.master], driver_tmp)  # fmt: skip
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert _manifest(spark)["engine"]["master"] == c.master
    assert_same_seeded_release(polars, spark)


@pytest.mark.parametrize("jobs", ["jobs one", "jobs several"])
def test_lodes_wac_from_the_agencys_own_columns_on_both_engines(
    jobs: str, tmp_path: Path, monkeypatch
) -> None:
    """The WAC product of data under the agency's own column names ([output.columns]),
    seeded, on both engines: the same bytes, every file marked not for publication and
    passing ``eree check-format`` (the default cover may pick another own-names case)."""
    values = {**base_values("eree"), "definition": "definition eree-weak",
              "postprocess": "postprocess publication-grade",
              "output": "output format=lodes-wac", "names": "names own", "jobs": jobs}  # fmt: skip
    case = make_case("eree", values)
    assert not case.refused
    run_case(case, tmp_path, monkeypatch)
