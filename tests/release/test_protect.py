"""`protect` end to end: tables, manifest, atomic output, and nothing confidential leaks."""

import json
import math

import numpy as np
import polars as pl
import pytest

from eree.data.job_tables import load_job_tables
from eree.engine.polars.engine import PolarsEngine
from eree.errors import EreeError, PrivacyParameterError
from eree.mechanisms.noise import SecureNoise, SeededNoise
from eree.release.build import split_by
from eree.release.protect import explain, protect
from eree.release.spec import load_spec

STAT_COLS = ["jobs", "jobs_std", "jobs_ci_low", "jobs_ci_high"]


def test_release_writes_tables_and_manifest(small_spec, tmp_path):
    plan = load_spec(small_spec)
    res = protect(plan, tmp_path / "out", SeededNoise(3))
    m = json.loads((tmp_path / "out" / "manifest.json").read_text())
    for key in ("eree_version", "created", "random", "dataset", "spec", "privacy", "queries",
                "semantics"):  # fmt: skip
        assert key in m
    assert m["random"]["mode"] == "seeded" and m["random"]["seed"] == 3
    # no ledger: no fingerprint (one under a key nobody keeps identifies nothing), and why
    assert m["dataset"]["fingerprint"] is None and "sha256" not in m["dataset"]
    assert "ledger" in m["dataset"]["fingerprint_note"]
    assert m["privacy"]["total"]["epsilon"] == pytest.approx(10.0)
    assert m["privacy"]["definition"] == "eree-weak" and m["privacy"]["alpha"] == 0.1
    names = [q["name"] for q in m["queries"]]
    assert names == ["county_industry", "county", "county_sex", "county_age_sex"]
    for q in m["queries"]:
        df = pl.read_parquet(tmp_path / "out" / q["file"])
        assert df.height == q["cells"]
        assert df.columns == [*q["by"], *STAT_COLS]
        assert (tmp_path / "out" / "tables" / f"{q['name']}.NOT-FOR-PUBLICATION.csv").exists()
        assert set(q["cost"]) == {"epsilon", "delta", "mu"}
    by_name = {t.name: t.table for t in res.tables}
    # smooth mechanisms publish no std / CI; Log-Laplace does
    assert by_name["county_industry"]["jobs_std"].null_count() == by_name["county_industry"].height
    assert by_name["county"]["jobs_std"].null_count() == 0
    lo, hi, est = (by_name["county"][c].to_numpy() for c in ("jobs_ci_low", "jobs_ci_high", "jobs"))
    assert np.all(lo <= hi)
    assert np.all((lo <= est) & (est <= hi))  # the interval brackets the estimate
    # worker-attribute marginals list the full declared domain per county
    n_counties = by_name["county"].height
    assert by_name["county_age_sex"].height == n_counties * 6


def _confidential_numbers(plan):
    """True counts, x_v and the smooth-sensitivity noise scales of every query."""
    data = load_job_tables(plan.data)
    eng = PolarsEngine()
    vals = set()
    alpha = plan.privacy.alpha
    for q in plan.queries:
        wp, wk = split_by(q, plan.data)
        st = eng.cell_statistics(data, wp, wk)
        d = 6 if len(wk) == 2 else (2 if wk else 1)
        eps = q.epsilon / d
        S = np.maximum(alpha * st["x_v"].to_numpy(), 1.0)
        eps1 = eps - 5 * math.log1p(alpha)
        for arr in (st["count"].to_numpy(), st["x_v"].to_numpy(), S, 2 * S / eps,
                    5 * S / eps1 if eps1 > 0 else S):  # fmt: skip
            vals.update(float(v) for v in np.asarray(arr, dtype=float) if v > 1)
    return vals


def _numbers_in_file(path):
    """Every number in a written file: all columns of a Parquet table, all tokens of text."""
    import re

    if path.suffix == ".parquet":
        df = pl.read_parquet(path)
        for c in df.columns:
            col = df[c]
            if col.dtype.is_numeric():
                yield from (float(v) for v in col.drop_nulls().to_list())
            else:
                for v in col.drop_nulls().cast(pl.Utf8).to_list():
                    yield from (float(t) for t in re.findall(r"\d+(?:\.\d+)?", v))
    elif path.suffix == ".html":  # the report: numbers with thousands separators
        from .test_report import report_numbers

        yield from (v for v, _ in report_numbers(path.read_text(encoding="utf-8")))
    else:
        text = path.read_text(errors="replace")
        # a hex digest (the keyed fingerprint, the ledger's chain hash) is one token, not
        # numbers: its digit runs are random and would collide with small values
        text = re.sub(r"\b[0-9a-f]{64}\b", " ", text)
        yield from (float(t) for t in re.findall(r"\d+(?:\.\d+)?", text))


def leaked(out_dir, secret):
    """The confidential values (> 100: smaller ones collide with public parameters) that
    appear in any file of a release directory, with the file they appear in."""
    distinctive = np.array(sorted(s for s in secret if s > 100))
    hits = []
    for f in sorted(p for p in out_dir.rglob("*") if p.is_file()):
        nums = np.fromiter(_numbers_in_file(f), dtype=float)
        if nums.size == 0:
            continue
        nums = np.unique(nums)
        i = np.clip(np.searchsorted(distinctive, nums), 1, len(distinctive) - 1)
        near = np.minimum(np.abs(distinctive[i] - nums), np.abs(distinctive[i - 1] - nums))
        hit = near <= 1e-9 * np.maximum(np.abs(nums), 1.0)
        hits += [(f.name, float(v)) for v in nums[hit]]
    return hits


def _fine_grid(spec):
    """The same spec with the counts rounded to 2⁻²⁰ instead of 1.

    On the default grid 1 a published count equals its (integer) true count with the
    mechanism's own probability P(|noise| < ½) — an output of the mechanism, not a leak.
    On a fine grid such a coincidence has probability ~2⁻²⁰ per cell, so any exact true
    value in a file is a leak of a code path.
    """
    text = spec.read_text()
    for mech in ("smooth_laplace", "smooth_gamma"):
        text = text.replace(f'mechanism = "{mech}"', f'mechanism = "{mech}"\ngrid = {2.0**-20!r}')
    spec.write_text(text)
    return spec


def test_no_confidential_value_in_any_written_file(small_spec, tmp_path):
    plan = load_spec(_fine_grid(small_spec))
    protect(plan, tmp_path / "out", SeededNoise(4))
    secret = _confidential_numbers(plan)
    assert 1103 in secret  # the distinctive establishment's size is x_v somewhere
    assert leaked(tmp_path / "out", secret) == []


def test_leak_detector_fires_on_a_planted_true_value(small_spec, tmp_path):
    # power of the check above: the same release with one true count planted in a table
    import shutil

    plan = load_spec(_fine_grid(small_spec))
    protect(plan, tmp_path / "out", SeededNoise(4))
    secret = _confidential_numbers(plan)
    shutil.copytree(tmp_path / "out", tmp_path / "planted")
    f = tmp_path / "planted" / "tables" / "county_industry.parquet"
    df = pl.read_parquet(f)
    jobs = df["jobs"].to_list()
    jobs[0] = 1103.0  # the distinctive establishment's true size
    df.with_columns(pl.Series("jobs", jobs)).write_parquet(f)
    assert ("county_industry.parquet", 1103.0) in leaked(tmp_path / "planted", secret)
    assert leaked(tmp_path / "out", secret) == []


def test_plan_is_refused_before_data_is_read(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(
        'name="x"\n[data]\nworkplace="nope/w.parquet"\nworker="nope/p.parquet"\n'
        'job="nope/j.parquet"\n[privacy]\ndefinition="eree-weak"\nalpha=0.2\n'
        '[[query]]\nname="q"\nby=["county","sex"]\nmechanism="smooth_gamma"\nepsilon=1.0\n'
    )
    # the files do not exist: a refusal by the accountant proves no data was read
    with pytest.raises(PrivacyParameterError, match="epsilon/5"):
        protect(load_spec(spec), tmp_path / "out", SecureNoise())
    assert not (tmp_path / "out").exists()


def test_failed_write_leaves_nothing_behind(small_spec, tmp_path, monkeypatch):
    plan = load_spec(small_spec)
    calls = {"n": 0}
    orig = pl.LazyFrame.sink_parquet  # tables are streamed to disk as they are produced

    def flaky(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 2:  # the first table is already written
            raise OSError("disk full")
        return orig(self, *a, **k)

    monkeypatch.setattr(pl.LazyFrame, "sink_parquet", flaky)
    with pytest.raises(OSError):
        protect(plan, tmp_path / "out", SeededNoise(1))
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.partial")]


def test_existing_output_is_not_overwritten(small_spec, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x").write_text("keep")
    with pytest.raises(EreeError, match="not empty"):
        protect(load_spec(small_spec), tmp_path / "out", SeededNoise(1))
    assert (tmp_path / "out" / "x").read_text() == "keep"


def test_seeded_release_is_reproducible(small_spec, tmp_path):
    plan = load_spec(small_spec)
    a = protect(plan, tmp_path / "a", SeededNoise(9)).tables
    b = protect(plan, tmp_path / "b", SeededNoise(9)).tables
    for x, y in zip(a, b, strict=True):
        assert x.table.equals(y.table)


def test_explain_reads_no_data(small_spec):
    plan = load_spec(small_spec)
    e = explain(plan)
    assert e["privacy"]["total"]["epsilon"] == pytest.approx(10.0)
    assert e["semantics"]["statements"]


def test_budget_without_ledger_checks_the_release_alone(small_spec, tmp_path):
    from eree.errors import BudgetExceededError

    text = small_spec.read_text().replace("alpha = 0.1", "alpha = 0.1\nbudget = { epsilon = 5.0 }")
    small_spec.write_text(text)
    with pytest.raises(BudgetExceededError):
        protect(load_spec(small_spec), tmp_path / "r", SeededNoise(1))


def test_noise_infusion_distortion_range_is_not_published(small_spec, tmp_path):
    text = small_spec.read_text()
    text = text.replace('definition = "eree-weak"', 'definition = "none"')
    head, _, _ = text.partition("[[query]]")
    text = head + (
        '[[query]]\nname = "county"\nby = ["county"]\nmechanism = "noise_infusion"\n'
        "s = 0.0731\nt = 0.1937\n"
    )
    small_spec.write_text(text)
    protect(load_spec(small_spec), tmp_path / "out", SeededNoise(2))
    manifest = (tmp_path / "out" / "manifest.json").read_text()
    assert "0.0731" not in manifest and "0.1937" not in manifest
    assert "withheld (confidential)" in manifest


def test_microdata_is_refused_for_count_releases(small_spec, tmp_path):
    from eree.errors import SpecError

    small_spec.write_text(small_spec.read_text() + "\n[postprocess]\nmicrodata = true\n")
    with pytest.raises(SpecError, match="microdata"):
        protect(load_spec(small_spec), tmp_path / "out", SeededNoise(1))


def test_streamed_tables_are_the_in_memory_tables(small_spec, tmp_path):
    """Tables written one by one as produced (Enum keys, written as text) are the same
    files as the tables the release computes in memory: same keys, dtypes, values."""
    from polars.testing import assert_frame_equal

    from eree.release.build import build
    from eree.release.counts import release_counts
    from eree.release.output import WrittenTable

    plan = load_spec(small_spec)
    res = protect(plan, tmp_path / "out", SeededNoise(4))
    assert res.tables and all(isinstance(t, WrittenTable) for t in res.tables)
    assert all(t.measurements == () for t in res.tables)  # nothing kept in memory
    used = {a for q in plan.queries for a in split_by(q, plan.data)[0] + split_by(q, plan.data)[1]}
    engine = PolarsEngine()
    data = engine.load_job_tables(plan.data, sorted(used))
    in_memory = release_counts(build(plan), data, engine, SeededNoise(4))
    assert [t.name for t in in_memory] == [t.name for t in res.tables]
    for mem, written in zip(in_memory, res.tables, strict=True):
        on_disk = pl.read_parquet(tmp_path / "out" / "tables" / f"{mem.name}.parquet")
        assert all(
            on_disk.schema[k] == pl.Utf8 for k in mem.table.columns if not k.startswith("jobs")
        )
        assert_frame_equal(on_disk, mem.table)
        assert_frame_equal(written.table, mem.table)
        assert written.cells == mem.table.height
        csv = (tmp_path / "out" / "tables" / f"{mem.name}.NOT-FOR-PUBLICATION.csv").read_text()
        assert csv == mem.table.write_csv()
