"""A coarsening release of job records through ``eree protect``: the LODES WAC tables.

The release is audited again here, independently of the optimizer that chose it: the
published table is read back and the reconstruction audit's reader and interval LP
(:func:`eree.evaluate.reconstruct.coarsen_wac.rule_audit`) give every cell's interval
from all of its block's tables together; the true cells are tabulated here from the job
records by the audit's own reader (``job_truth``), not by the release. The manifest's
audited risk (violations, cells pinned), its information loss and its counts must be what
that audit measures. The LODES files are read back against the true layout computed here
from the records: every true value lies within the published bounds.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from eree.data.schema import NAICS_SECTORS, WORKER_DOMAINS
from tests.cli.inputs import judge, run_cli

SPEC = """
name = "{name}"
[data]
kind = "eree"
workplace = "data/workplace.parquet"
worker = "data/worker.parquet"
job = "data/job.parquet"
[protection]
mode = "coarsening"
rounding = "{rounding}"
threshold = {threshold}
min_protection = {protection}
[output]
format = "lodes-wac"
year = 2015
"""
WAC = "pa_wac_S000_JT00_2015"
ATTRS = ("age", "earnings", "naics_sector", "race", "ethnicity", "education", "sex")


def records(seed: int = 7, jobs: int = 160):
    """Job records of a few Pennsylvania blocks (many small cells)."""
    from eree.synth.lodes import synth_parametric

    return synth_parametric(
        seed, jobs, n_counties=1, tracts_per_county=2, blocks_per_tract=4, state="42"
    )


def write_case(
    root: Path,
    *,
    rounding: str = "deterministic",
    threshold: int = 3,
    protection: int = 1,
    name: str = "pa-wac",
    spec: str = SPEC,
    seed: int = 7,
    jobs: int = 160,
) -> Path:
    (root / "data").mkdir(parents=True, exist_ok=True)
    s = records(seed, jobs)
    for t in ("workplace", "worker", "job"):
        getattr(s, t).write_parquet(root / "data" / f"{t}.parquet")
    path = root / "spec.toml"
    text = spec.format(name=name, rounding=rounding, threshold=threshold, protection=protection)
    path.write_text(text, encoding="utf-8")
    return path


def truth_of(root: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The true counts and exact WAC cells, from the records by the audit's own reader."""
    from eree.evaluate.reconstruct import job_truth
    from eree.suppression.wac import exact_tables

    truth = job_truth(root / "data", "block", ATTRS)
    domains = {a: WORKER_DOMAINS[a] for a in ATTRS if a in WORKER_DOMAINS}
    domains["naics_sector"] = NAICS_SECTORS
    return truth, exact_tables(truth, domains)


def audit(release: Path, exact: pl.DataFrame, threshold: int = 3, protection: float = 1.0):
    from eree.evaluate.reconstruct.coarsen_wac import rule_audit

    published = pl.read_parquet(release / "tables" / "coarsened.parquet")
    return rule_audit(published, exact, threshold=threshold, protection=protection)


@pytest.fixture(scope="module")
def case(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("wacjobs")
    spec = write_case(root)
    r = run_cli(["protect", str(spec), "--out", str(root / "rel")])
    assert r.exit_code == 0, r.output
    assert "NO FORMAL GUARANTEE" in r.stdout
    return root, root / "rel"


def test_the_manifest_and_report_say_no_guarantee_and_nothing_is_charged(case):
    _, release = case
    m = json.loads((release / "manifest.json").read_text())
    p = m["protection"]
    assert p["mode"] == "coarsening" and p["formal_guarantee"] is None
    assert p["statement"].startswith("NO FORMAL GUARANTEE")
    assert p["rules"]["threshold"] == 3 and p["rules"]["min_protection"] == 1.0
    assert p["bases"][:3] == [2.0, 3.0, 5.0]
    assert m["privacy"]["definition"] is None and m["privacy"]["total"] is None
    assert m["ledger"]["charged"] is False
    assert m["dataset"]["fingerprint"] is None
    assert m["random"]["mode"] == "secure"
    page = (release / "report.html").read_text()
    assert 'class="banner"' in page
    assert page.index("NO FORMAL GUARANTEE") < page.index("Audited risk")
    assert not (release / "NOT_FOR_PUBLICATION").exists()


def test_the_audited_risk_is_what_the_reconstruction_audit_measures(case):
    """0 violations and the same pinned count, loss and counts by the audit's reader and LP."""
    root, release = case
    _, exact = truth_of(root)
    m = json.loads((release / "manifest.json").read_text())
    got = audit(release, exact)
    assert got["sensitive"] > 10  # the rule bites on these blocks
    assert got["violations"] == 0 == m["audited_risk"]["violations"]
    assert got["cells_pinned"] == m["audited_risk"]["cells_pinned"]
    assert m["audited_risk"]["per_state"]["42"]["jobs"]["violations"] == 0
    s = m["summary"]["42"]
    assert s["sensitive_cells"] == got["sensitive"]
    j = s["attributes"]["jobs"]
    assert j["cells"] == got["cells"] == exact.height
    assert j["cells_published"] == got["cells_published"]
    assert j["cells_informative"] == got["cells_informative"]
    assert j["information_loss"] == pytest.approx(got["information_loss"], abs=1e-12)
    assert j["information_loss_cells_with_jobs"] == pytest.approx(
        got["information_loss_nonzero"], abs=1e-12
    )
    assert 0 < j["information_loss"] < 1
    # the audit can fail: the exact tables, and this publication with every cell that is
    # not sensitive put back to exact, are flagged
    assert audit_frame(exact, exact)["violations"] > 0
    published = pl.read_parquet(release / "tables" / "coarsened.parquet")
    keys = ["table", "block", *ATTRS]
    j = published.join(exact.select(*keys, pl.col("value").alias("_t")), on=keys, how="left",
                       nulls_equal=True)  # fmt: skip
    small = (pl.col("_t") >= 1) & (pl.col("_t") <= 2)
    weak = j.with_columns(
        pl.when(small).then(pl.col("status")).otherwise(pl.lit("exact")).alias("status"),
        pl.when(small).then(pl.col("value")).otherwise(pl.col("_t")).alias("value"),
        *[
            pl.when(small).then(pl.col(c)).otherwise(None).alias(c)
            for c in ("base", "lower", "upper")
        ],
    ).drop("_t")
    assert (
        weak.filter(pl.col("status") != "exact").height
        < published.filter(pl.col("status") != "exact").height
    )
    assert audit_frame(weak, exact)["violations"] > 0


def audit_frame(frame: pl.DataFrame, exact: pl.DataFrame) -> dict:
    from eree.evaluate.reconstruct.coarsen_wac import rule_audit

    return rule_audit(frame, exact)


def test_each_published_cell_holds_the_truth(case):
    root, release = case
    _, exact = truth_of(root)
    published = pl.read_parquet(release / "tables" / "coarsened.parquet")
    keys = ["table", "block", *ATTRS]
    j = published.join(exact.select(*keys, pl.col("value").alias("_t")), on=keys, how="left",
                       nulls_equal=True)  # fmt: skip
    assert j["_t"].null_count() == 0 and j.height == exact.height
    t = j["_t"].to_numpy()
    st = j["status"].to_numpy().astype(str)
    v, b = j["value"].to_numpy(), j["base"].to_numpy()
    e, r, g = st == "exact", st == "rounded", st == "range"
    assert np.array_equal(v[e], t[e])
    assert np.all(np.abs(v[r] - t[r]) <= b[r] / 2) and np.all(v[r] % b[r] == 0)
    lo, hi = j["lower"].to_numpy(), j["upper"].to_numpy()
    assert np.all((lo[g] <= t[g]) & (t[g] <= hi[g]))
    assert set(st) <= {"exact", "rounded", "range", "suppressed"}
    assert r.any() and (st == "suppressed").any()
    assert np.all(t[t == 0] == v[t == 0])  # zero cells: published exactly


def _layout_truth(truth: pl.DataFrame) -> pl.DataFrame:
    """The true LODES WAC columns per block, from the records."""
    from eree.release.layouts import LODES_FAMILIES

    fams = {"CA": "age", "CE": "earnings", "CNS": "naics_sector", "CR": "race",
            "CT": "ethnicity", "CS": "sex"}  # fmt: skip
    cols = [pl.col("true").sum().alias("C000")]
    for fam, attr in fams.items():
        codes = NAICS_SECTORS if attr == "naics_sector" else WORKER_DOMAINS[attr]
        for col, code in zip(LODES_FAMILIES[fam], codes, strict=True):
            cols.append(pl.col("true").filter(pl.col(attr) == code).sum().alias(col))
    for col, ed in zip(LODES_FAMILIES["CD"], WORKER_DOMAINS["education"], strict=True):
        older = pl.col("age").is_in(["A02", "A03"]) & (pl.col("education") == ed)
        cols.append(pl.col("true").filter(older).sum().alias(col))
    return truth.rename({"unit": "w_geocode"}).group_by("w_geocode").agg(cols).sort("w_geocode")


def _read(path: Path) -> pl.DataFrame:
    return pl.read_csv(path, schema_overrides={"w_geocode": pl.Utf8}).sort("w_geocode")


def check_wac_files(release: Path, truth: pl.DataFrame, mark: str = "") -> None:
    """The three files pass check-format and every true value lies within its bounds."""
    agency = release / "agency"
    m = json.loads((release / "manifest.json").read_text())
    names = [f"{WAC}{s}{mark}.csv.gz" for s in ("", "_lower", "_upper")]
    assert m["agency_files"]["files"] == [f"agency/{n}" for n in names]
    assert sorted(p.name for p in agency.iterdir()) == sorted(names)
    for n in names:
        bounds = ["--bounds"] if ("_lower" in n or "_upper" in n) else []
        r = run_cli(["check-format", str(agency / n), "--format", "lodes-wac", *bounds])
        assert r.exit_code == 0, (n, r.output)
    want = _layout_truth(truth)
    val, lo, hi = (_read(agency / n) for n in names)
    assert val["w_geocode"].to_list() == want["w_geocode"].to_list()
    for col in want.columns[1:]:
        t = want[col].to_numpy()
        low = lo[col].to_numpy()
        up = hi[col].fill_null(np.iinfo(np.int64).max).to_numpy()
        assert np.all((low <= t) & (t <= up)), col
        assert np.all((low <= val[col].to_numpy()) & (val[col].to_numpy() <= up)), col
        same = low == up
        assert np.array_equal(t[same], low[same]), col


def test_the_lodes_files_pass_check_format_and_bound_the_truth(case):
    root, release = case
    truth, _ = truth_of(root)
    check_wac_files(release, truth)


def test_threshold_and_protection_are_the_rule_the_release_meets(tmp_path):
    """threshold = 4, min_protection = 2: the stricter rule holds by the audit; the default
    release does not meet it (the keys change what is published)."""
    spec = write_case(tmp_path, threshold=4, protection=2)
    out = tmp_path / "rel"
    r = run_cli(["protect", str(spec), "--out", str(out)])
    assert r.exit_code == 0, r.output
    _, exact = truth_of(tmp_path)
    strict = audit(out, exact, threshold=4, protection=2.0)
    m = json.loads((out / "manifest.json").read_text())
    assert strict["violations"] == 0 == m["audited_risk"]["violations"]
    assert strict["cells_pinned"] == m["audited_risk"]["cells_pinned"]
    assert m["summary"]["42"]["sensitive_cells"] == strict["sensitive"]
    assert m["protection"]["rules"]["threshold"] == 4
    base = tmp_path / "base"
    write_case(base)
    assert run_cli(["protect", str(base / "spec.toml"), "--out", str(base / "rel")]).exit_code == 0
    assert audit(base / "rel", exact, threshold=4, protection=2.0)["violations"] > 0


def test_random_rounding_seeded_is_marked_not_for_publication(tmp_path):
    spec = write_case(tmp_path, rounding="random")
    out = tmp_path / "rel"
    r = run_cli(["protect", str(spec), "--out", str(out), "--seed", "5"])
    assert r.exit_code == 0, r.output
    m = json.loads((out / "manifest.json").read_text())
    assert m["protection"]["rounding"] == "random"
    assert "policy choice" in m["protection"]["rounding_meaning"]
    assert m["random"]["mode"] == "seeded"
    assert (out / "NOT_FOR_PUBLICATION").is_file()
    truth, exact = truth_of(tmp_path)
    assert audit(out, exact)["violations"] == 0
    published = pl.read_parquet(out / "tables" / "coarsened.parquet")
    assert published.filter(pl.col("status") == "range").height > 0
    check_wac_files(out, truth, mark=".NOT-FOR-PUBLICATION")


def test_without_a_format_only_the_table_is_written(tmp_path):
    text = SPEC.replace('[output]\nformat = "lodes-wac"\nyear = 2015\n', "[output]\ncsv = false\n")
    spec = write_case(tmp_path, spec=text)
    out = tmp_path / "rel"
    r = run_cli(["protect", str(spec), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert not (out / "agency").exists() and not (out / "tables" / "coarsened.csv").exists()
    m = json.loads((out / "manifest.json").read_text())
    assert "agency_files" not in m and list(m["summary"]) == ["all"]
    _, exact = truth_of(tmp_path)
    assert audit(out, exact)["violations"] == 0


def test_a_ledger_is_refused_before_anything_is_read(tmp_path):
    spec = write_case(tmp_path)
    for t in ("workplace", "worker", "job"):
        (tmp_path / "data" / f"{t}.parquet").unlink()
    led = tmp_path / "ledger.sqlite"
    r = run_cli(["protect", str(spec), "--out", str(tmp_path / "rel"), "--ledger", str(led)])
    o = judge(r, tmp_path / "rel")
    assert o.clean_error and not o.partial, r.output
    assert "nothing can be charged" in r.stderr
    assert not led.exists() and not (tmp_path / "rel").exists()


@pytest.mark.parametrize("allowed", [False, True])
def test_the_office_policy_is_respected_as_eree_coarsen(tmp_path, monkeypatch, allowed):
    from eree.release import policy

    office = tmp_path / "site.toml"
    allow = 'allow_without_ledger = ["coarsen"]\n' if allowed else ""
    office.write_text("[release]\nrequire_ledger = true\n" + allow)
    monkeypatch.setattr(policy, "SITE_FILE", office)
    monkeypatch.delenv("EREE_SITE_CONFIG", raising=False)
    monkeypatch.delenv("EREE_REQUIRE_LEDGER", raising=False)
    spec = write_case(tmp_path)
    out = tmp_path / "rel"
    r = run_cli(["protect", str(spec), "--out", str(out)])
    if allowed:
        assert r.exit_code == 0, r.output
        m = json.loads((out / "manifest.json").read_text())
        assert m["policy"]["require_ledger"] is True
        assert m["policy"]["allow_without_ledger"] == ["coarsen"]
    else:
        o = judge(r, out)
        assert o.clean_error and not out.exists(), r.output
        assert "allow_without_ledger" in r.stderr and "coarsen" in r.stderr


def test_both_engines_publish_the_same_files(tmp_path):
    """The engine loads, validates and counts the jobs; the release is the same on both.

    Every published file is the same byte for byte (table, LODES files); the manifests
    differ only in ``created`` and ``engine``.
    """
    pytest.importorskip("pyspark")
    spec = write_case(tmp_path)
    outs = {}
    for engine in ("polars", "spark"):
        out = tmp_path / engine
        r = run_cli(["protect", str(spec), "--out", str(out), "--engine", engine])
        assert r.exit_code == 0, (engine, r.output)
        outs[engine] = out
    a, b = outs["polars"], outs["spark"]
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert any(f.parts[0] == "agency" for f in files)
    for f in files:
        if f.name in ("manifest.json", "report.html", ".eree-output"):
            continue
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    ma, mb = (json.loads((d / "manifest.json").read_text()) for d in (a, b))
    assert ma["engine"]["kind"] == "polars" and mb["engine"]["kind"] == "spark"
    for m in (ma, mb):
        m.pop("created"), m.pop("engine")
    assert ma == mb


def test_a_block_of_the_workplace_frame_without_a_job_is_listed_with_zeros(tmp_path):
    """The workplace frame is public: its blocks are the file's rows, a block with no job
    published exactly 0 (as the privacy release lists every block of the frame)."""
    spec = write_case(tmp_path)
    wp = pl.read_parquet(tmp_path / "data" / "workplace.parquet")
    lone = wp.head(1).with_columns(
        pl.lit("w-no-jobs").alias("workplace_id"), pl.lit("420019999999999").alias("block")
    )
    pl.concat([wp, lone]).write_parquet(tmp_path / "data" / "workplace.parquet")
    out = tmp_path / "rel"
    r = run_cli(["protect", str(spec), "--out", str(out)])
    assert r.exit_code == 0, r.output
    published = pl.read_parquet(out / "tables" / "coarsened.parquet")
    part = published.filter(pl.col("block") == "420019999999999")
    assert part.height > 0 and set(part["status"]) == {"exact"} and set(part["value"]) == {0.0}
    val = _read(out / "agency" / f"{WAC}.csv.gz")
    row = val.filter(pl.col("w_geocode") == "420019999999999")
    assert row.height == 1 and row["C000"].item() == 0
    truth, _ = truth_of(tmp_path)
    assert "420019999999999" not in truth["unit"].to_list()


def test_job_selection_keys_apply_as_for_a_privacy_release(tmp_path):
    """Workers with two jobs: refused without max_jobs_per_worker (one line naming the
    row), released with it (k = 1 keeps one job per worker, in the seeded keyed order:
    the same bytes twice); JT02 counts the jobs at private workplaces and names the file."""
    spec = write_case(tmp_path)
    wp = pl.read_parquet(tmp_path / "data" / "workplace.parquet")
    ids = wp["workplace_id"].to_list()
    job = pl.read_parquet(tmp_path / "data" / "job.parquet")
    second = job.head(5).with_columns(
        pl.col("workplace_id").map_elements(
            lambda w: ids[(ids.index(w) + 7) % len(ids)], return_dtype=pl.Utf8
        )
    )
    pl.concat([job, second]).write_parquet(tmp_path / "data" / "job.parquet")
    r = run_cli(["protect", str(spec), "--out", str(tmp_path / "none")])
    o = judge(r, tmp_path / "none")
    assert o.clean_error and "job.parquet" in r.stderr and "row" in r.stderr, r.output
    text = spec.read_text()
    spec.write_text(text.replace('job = "data/job.parquet"', 'job = "data/job.parquet"\n'
                                 "max_jobs_per_worker = 1"))  # fmt: skip
    tables = []
    for run in ("a", "b"):
        out = tmp_path / run
        r = run_cli(["protect", str(spec), "--out", str(out), "--seed", "3"])
        assert r.exit_code == 0, r.output
        tables.append((out / "tables" / "coarsened.parquet").read_bytes())
        m = json.loads((out / "manifest.json").read_text())
        assert m["dataset"]["jobs"]["max_jobs_per_worker"] == 1
        c000 = pl.read_parquet(out / "tables" / "coarsened.parquet").filter(
            pl.col("table") == "wac_c000"
        )
        lo = c000.select(
            pl.when(pl.col("status") == "exact").then(pl.col("value"))
            .when(pl.col("status") == "rounded").then(pl.col("value") - pl.col("base") / 2)
            .otherwise(pl.col("lower")).fill_null(0).sum()
        ).item()  # fmt: skip
        assert lo <= job.height  # k = 1: at most one job per worker is counted
    assert tables[0] == tables[1]
    spec.write_text(text.replace('job = "data/job.parquet"', 'job = "data/job.parquet"\n'
                                 'job_type = "JT02"'))  # fmt: skip
    out = tmp_path / "jt02"
    r = run_cli(["protect", str(spec), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert (out / "agency" / "pa_wac_S000_JT02_2015.csv.gz").is_file()
    private = wp.filter(pl.col("ownership") == "A05")["workplace_id"]
    n_private = (
        pl.concat([job, second]).filter(pl.col("workplace_id").is_in(private.to_list())).height
    )
    assert n_private < job.height + second.height  # some jobs are not private
    vals = _read(out / "agency" / "pa_wac_S000_JT02_2015.csv.gz")
    lows = _read(out / "agency" / "pa_wac_S000_JT02_2015_lower.csv.gz")
    ups = _read(out / "agency" / "pa_wac_S000_JT02_2015_upper.csv.gz")
    assert lows["C000"].sum() <= n_private <= ups["C000"].fill_null(10**9).sum()
    assert vals["C000"].sum() <= ups["C000"].fill_null(10**9).sum()


@pytest.mark.parametrize("threshold", [0, 1])
def test_threshold_0_turns_the_rule_off_as_for_establishments(tmp_path, threshold):
    """``threshold = 0`` means the threshold rule is off, as it does for establishments;
    for jobs it is the same as 1 (no cell holds 1 to 0 jobs). The threshold is the job
    tables' only rule, so no cell is sensitive: nothing needs protecting and every cell
    is published exactly, the true count (from the records by the audit's own reader),
    and the manifest says the rule is off."""
    spec = write_case(tmp_path, threshold=threshold)
    out = tmp_path / "rel"
    r = run_cli(["protect", str(spec), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "NO FORMAL GUARANTEE" in r.stdout
    m = json.loads((out / "manifest.json").read_text())
    rules = m["protection"]["rules"]
    assert rules["threshold"] == threshold
    assert rules["sensitive"].startswith("none: the threshold rule is off")
    _, exact = truth_of(tmp_path)
    published = pl.read_parquet(out / "tables" / "coarsened.parquet")
    keys = ["table", "block", *ATTRS]
    j = published.join(exact.select(*keys, pl.col("value").alias("_t")), on=keys, how="left",
                       nulls_equal=True)  # fmt: skip
    assert j.height == exact.height and j["_t"].null_count() == 0
    assert set(j["status"]) == {"exact"}
    assert np.array_equal(j["value"].to_numpy(), j["_t"].to_numpy())
