"""A coarsening release through ``eree protect``: the spec's protection mode, end to end.

The release is audited again here, independently of the optimizer: the published table is
read back and the reconstruction audit's own reader and LP (:mod:`eree.evaluate.reconstruct`)
give every cell's interval from all published tables together; the sensitive cells (the
primary rules, rebuilt here from the raw data) must keep their protection intervals, and
the manifest's audited risk (violations, cells pinned) must be what this audit measures.
The agency files are read back against the true cell values: every value lies in its
published bounds, and "N" is written exactly where a measure is suppressed.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tests.cli.inputs import judge, run_cli
from tests.suppression.helpers import random_qcew

MEASURES = ("m1emp", "m2emp", "m3emp", "wage")
FIELDS = {"m1emp": "month1_emplvl", "m2emp": "month2_emplvl", "m3emp": "month3_emplvl",
          "wage": "total_qtrly_wages"}  # fmt: skip

SPEC = """
name = "{name}"
[data]
kind = "establishments"
path = "data/estab.csv"
id = "primary_key"
public = ["state", "cnty", "own", "naics"]
confidential = ["m1emp", "m2emp", "m3emp", "wage"]
[protection]
mode = "coarsening"
rounding = "{rounding}"
threshold = 3
dominance_k = 80.0
dominance_n = 1
p_percent = 10.0
min_protection = 1.0
exempt_own = ["1"]
[output]
format = "qcew-by-area"
year = 2024
quarter = 1
"""


def frame(seed: int = 3, n: int = 260) -> pl.DataFrame:
    """QCEW-like establishments of one state (Delaware's code), whole employment counts."""
    rng = np.random.default_rng(seed)
    df = random_qcew(seed, n)
    m1 = df["m1emp"].to_numpy()
    return df.with_columns(
        pl.Series("m2emp", np.maximum(m1 + rng.integers(-2, 3, n), 0).astype(float)),
        pl.Series("m3emp", np.maximum(m1 + rng.integers(-3, 4, n), 0).astype(float)),
        # wages heavy-tailed and independent of employment: other cells are sensitive
        pl.Series("wage", np.round(rng.lognormal(3.0, 1.5, n), 2)),
        pl.lit("10").alias("state"),
    ).with_columns(pl.when(pl.col("primary_key") == "7").then(pl.lit("1")).otherwise("own")
                   .alias("own"))  # fmt: skip


def write_case(root: Path, *, rounding: str = "deterministic", name: str = "de-coarse",
               spec: str = SPEC, data: pl.DataFrame | None = None) -> Path:  # fmt: skip
    (root / "data").mkdir(parents=True, exist_ok=True)
    (frame() if data is None else data).write_csv(root / "data" / "estab.csv")
    path = root / "spec.toml"
    path.write_text(spec.format(name=name, rounding=rounding), encoding="utf-8")
    return path


def truth(df: pl.DataFrame):
    """The linked tables and primary rules of the spec, rebuilt from the raw data."""
    from eree.suppression import PrimaryRules, primary_suppression, qcew_tables

    tables = qcew_tables(df.drop("state"), MEASURES, top=2)
    rules = PrimaryRules(threshold=3, dominance_n=1, dominance_k=80.0, p_percent=10.0,
                         min_protection=1.0, exempt={"own": ("1",)})  # fmt: skip
    return tables, primary_suppression(tables, rules, MEASURES)


def audit(published: pl.DataFrame, tables, prim, attribute: str) -> tuple[int, int]:
    """(violations, pinned) of one attribute by the reconstruction audit's reader and LP."""
    from eree.evaluate.reconstruct import from_frame, interval_audit

    part = published.filter(pl.col("attribute") == attribute).drop("attribute", "state")
    assert part["table_code"].to_list() == tables.cells["table_code"].cast(str).to_list()
    integer = attribute != "wage"
    res = interval_audit(from_frame(part, relations=tables.relations, integer=integer))
    t = tables.values(attribute).astype(float)
    u = prim.protection[attribute]
    ok = (res.lower <= t - np.minimum(u, t) + 1e-6) & (res.upper >= t + u - 1e-6)
    return int((prim.primary & ~ok).sum()), int(res.pinned.sum())


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("coarse")
    spec = write_case(root)
    r = run_cli(["protect", str(spec), "--out", str(root / "rel")])
    assert r.exit_code == 0, r.output
    assert "NO FORMAL GUARANTEE" in r.stdout
    return root / "rel"


def test_the_manifest_and_report_say_no_guarantee_and_nothing_is_charged(release):
    m = json.loads((release / "manifest.json").read_text())
    assert m["protection"]["mode"] == "coarsening"
    assert m["protection"]["formal_guarantee"] is None
    assert m["protection"]["statement"].startswith("NO FORMAL GUARANTEE")
    assert m["privacy"]["definition"] is None and m["privacy"]["total"] is None
    assert m["ledger"]["charged"] is False
    assert m["dataset"]["fingerprint"] is None
    assert m["protection"]["rules"]["exempt"] == {"own": ["1"]}
    page = (release / "report.html").read_text()
    assert page.index("NO FORMAL GUARANTEE") < page.index("Audited risk")
    assert not (release / "NOT_FOR_PUBLICATION").exists()


def test_the_audited_risk_is_what_an_independent_audit_measures(release):
    """0 violations by the reconstruction audit; the manifest's counts are its counts."""
    m = json.loads((release / "manifest.json").read_text())
    published = pl.read_parquet(release / "tables" / "coarsened.parquet")
    tables, prim = truth(frame())
    assert prim.primary.sum() > 10  # the rules do bite on this data
    pinned_total = 0
    for a in MEASURES:
        violations, pinned = audit(published, tables, prim, a)
        assert violations == 0, a
        stated = m["audited_risk"]["per_state"]["10"][a]
        assert stated["violations"] == 0
        assert stated["cells_pinned"] == pinned, a
        pinned_total += pinned
    assert m["audited_risk"]["violations"] == 0
    assert m["audited_risk"]["cells_pinned"] == pinned_total
    # the finest publication (every cell exact) fails the same audit: the test can fail
    exact = published.with_columns(
        pl.lit("exact").alias("status"),
        pl.Series("value", np.concatenate([tables.values(a) for a in MEASURES])),
        pl.lit(None, dtype=pl.Float64).alias("base"),
        pl.lit(None, dtype=pl.Float64).alias("lower"),
        pl.lit(None, dtype=pl.Float64).alias("upper"),
    )
    assert audit(exact, tables, prim, "m1emp")[0] > 0


def test_the_stated_cells_and_statuses_are_the_published_ones(release):
    m = json.loads((release / "manifest.json").read_text())
    published = pl.read_parquet(release / "tables" / "coarsened.parquet")
    for a in MEASURES:
        part = published.filter(pl.col("attribute") == a)
        s = m["summary"]["10"]["attributes"][a]
        assert s["cells"] == part.height
        assert s["cells_published"] == part.filter(pl.col("status") != "suppressed").height
        assert s["by_status"]["exact"] == part.filter(pl.col("status") == "exact").height
    # deterministic: a rounded value is within half a base of the truth; a range holds the
    # truth, and a range of the ladder is [k·b, (k+1)·b) for one of its bases b
    tables, _ = truth(frame())
    ladder = set(m["protection"]["bases"])
    assert ladder == {5.0 * 2**k for k in range(len(ladder))}
    for a in MEASURES:
        part = published.filter(pl.col("attribute") == a)
        t = tables.values(a)
        v = part["value"].to_numpy()
        b = part["base"].to_numpy()
        r = (part["status"] == "rounded").to_numpy()
        assert np.all(np.abs(v[r] - t[r]) <= b[r] / 2 + 1e-9)
        assert np.all(v[r] % b[r] == 0)
        g = (part["status"] == "range").to_numpy()
        assert g.any()
        lo = part["lower"].to_numpy()[g]
        hi = part["upper"].to_numpy()[g]
        assert np.all((lo <= t[g]) & (t[g] <= hi))
        # whole numbers: [k·b, k·b + b − 1]
        width = hi - lo + (1.0 if np.all(t == np.round(t)) else 0.0)
        on_ladder = np.isin(width, sorted(ladder)) & (lo % np.where(width > 0, width, 1) == 0)
        assert on_ladder.any()
        e = (part["status"] == "exact").to_numpy()
        assert np.allclose(v[e], t[e])


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fp:
        return list(csv.DictReader(fp))


def test_the_qcew_files_pass_check_format_and_bound_the_truth(release):
    """Every file passes check-format; true values lie within the lower/upper companions;
    "N" exactly where a measure is suppressed."""
    from eree.release.layouts import check_format
    from eree.release.units import money_scale, unit_of

    dollars = money_scale(unit_of("wage"))  # wage's known unit: thousands of dollars
    assert dollars == 1000.0

    area_dir = release / "agency" / "2024" / "1" / "area"
    files = sorted(area_dir.glob("*.csv"))
    m = json.loads((release / "manifest.json").read_text())
    assert sorted(str(f.relative_to(release)) for f in files) == m["agency_files"]["files"]
    for f in files:
        r = run_cli(["check-format", str(f), "--format", "qcew-by-area"])
        assert r.exit_code == 0, (f.name, r.output)
        check_format(f, "qcew-by-area")
    tables, _ = truth(frame())
    published = pl.read_parquet(release / "tables" / "coarsened.parquet")
    suppressed = np.zeros(tables.n_cells, dtype=bool)
    every = np.ones(tables.n_cells, dtype=bool)
    for a in MEASURES:
        part = published.filter(pl.col("attribute") == a)
        suppressed |= (part["status"] == "suppressed").to_numpy()
        every &= (part["status"] == "suppressed").to_numpy()
    # the optimizer may need no last resort on this data: the "N" rule with some measures
    # of a row suppressed is exercised by test_a_row_with_one_measure_suppressed_is_n
    del every
    c = tables.cells
    keys = [
        ("10000" if ar == "state" else "10" + ar.zfill(3), o, i, lv)
        for ar, o, i, lv in zip(
            c["area"],
            c["own"].cast(str),
            c["industry"].cast(str),
            c["table_code"].cast(str),
            strict=True,
        )
    ]
    truth_of = {k: i for i, k in enumerate(keys)}
    n_seen = n_n = 0
    for f in files:
        if f.stem.endswith(("_lower", "_upper")):
            continue
        lower = _rows(f.with_name(f.stem + "_lower.csv"))
        upper = _rows(f.with_name(f.stem + "_upper.csv"))
        for row, lo, hi in zip(_rows(f), lower, upper, strict=True):
            k = (row["area_fips"], row["own_code"], row["industry_code"], row["agglvl_code"])
            i = truth_of[k]
            n_seen += 1
            assert (row["disclosure_code"] == "N") == suppressed[i], k
            assert int(row["qtrly_estabs"]) == tables.counts()[i]
            if suppressed[i]:
                n_n += 1
                assert row[FIELDS["m1emp"]] == "0"
                continue
            for a in MEASURES:
                t = tables.values(a)[i] * (dollars if a == "wage" else 1.0)
                col = FIELDS[a]
                eps = 1e-9 * max(1.0, t)  # decimal wages times 1000 in floating point
                assert int(lo[col]) <= t + eps and t - eps <= int(hi[col]), (k, a)
                assert int(lo[col]) <= int(row[col]) <= int(hi[col]), (k, a)
    assert n_seen == tables.n_cells
    assert n_n == int(suppressed.sum())


def test_a_row_with_one_measure_suppressed_is_n(release, tmp_path):
    """The release's own publication with one cell of m1emp suppressed (its other measures
    published): that row, and only rows with a suppressed measure, are written "N" with
    zero values, and the files still pass check-format."""
    from eree.release.coarsened_qcew import qcew_files
    from eree.release.layouts import check_format
    from eree.release.spec_coarsening import load_release_spec
    from eree.suppression.coarsening.publication import Publication

    plan = load_release_spec(write_case(tmp_path))
    tables, _ = truth(frame())
    published = pl.read_parquet(release / "tables" / "coarsened.parquet")
    pubs = {}
    for a in MEASURES:
        part = published.filter(pl.col("attribute") == a)
        pubs[a] = Publication(
            status=part["status"].to_numpy().astype(object),
            value=part["value"].to_numpy().astype(float),
            base=part["base"].fill_null(float("nan")).to_numpy().astype(float),
            lower=part["lower"].fill_null(float("nan")).to_numpy().astype(float),
            upper=part["upper"].fill_null(float("nan")).to_numpy().astype(float),
            integer=a != "wage",
        )
    before = np.zeros(tables.n_cells, dtype=bool)
    for p in pubs.values():
        before |= p.status == "suppressed"
    # the row with the most establishments among those with nothing suppressed
    i = int(np.argmax(np.where(before, -1, tables.counts())))
    assert not before[i]
    pubs["m1emp"].status[i] = "suppressed"
    pubs["m1emp"].value[i] = np.nan
    files, _ = qcew_files(plan, {"10": (tables, pubs)})  # type: ignore[arg-type]
    n_rows = n_n = 0
    for name, body in files.items():
        if name.endswith(("_lower.csv", "_upper.csv")):
            continue
        path = tmp_path / Path(name).name
        path.write_bytes(body)
        check_format(path, "qcew-by-area")
        for row in _rows(path):
            n_rows += 1
            if row["disclosure_code"] == "N":
                n_n += 1
                assert all(row[FIELDS[a]] == "0" for a in MEASURES)
    assert n_rows == tables.n_cells
    assert n_n == int(before.sum()) + 1


def test_random_rounding_is_marked_and_seeded_is_not_for_publication(tmp_path):
    spec = write_case(tmp_path, rounding="random")
    r = run_cli(["protect", str(spec), "--out", str(tmp_path / "rel"), "--seed", "5"])
    assert r.exit_code == 0, r.output
    m = json.loads((tmp_path / "rel" / "manifest.json").read_text())
    assert m["protection"]["rounding"] == "random"
    assert "policy choice" in m["protection"]["rounding_meaning"]
    assert m["random"]["mode"] == "seeded"
    assert (tmp_path / "rel" / "NOT_FOR_PUBLICATION").is_file()
    # the manifest names the agency files as written: marked NOT-FOR-PUBLICATION
    agency = m["agency_files"]["files"]
    assert agency and all("NOT-FOR-PUBLICATION" in f for f in agency)
    assert all((tmp_path / "rel" / f).is_file() for f in agency)
    published = pl.read_parquet(tmp_path / "rel" / "tables" / "coarsened.parquet")
    tables, prim = truth(frame())
    assert published.filter(pl.col("status") == "range").height > 0
    for a in MEASURES:
        assert audit(published, tables, prim, a)[0] == 0


def test_a_ledger_is_refused_before_anything_is_read(tmp_path):
    spec = write_case(tmp_path)
    (tmp_path / "data" / "estab.csv").unlink()  # nothing may be read
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


def test_the_commands_that_read_a_privacy_spec_say_what_a_coarsening_spec_is(tmp_path):
    spec = write_case(tmp_path)
    for cmd in (["explain", str(spec)], ["validate", str(spec)]):
        r = run_cli(cmd)
        o = judge(r, None)
        assert o.clean_error, r.output
        assert "coarsening spec" in r.stderr and "eree protect" in r.stderr


@pytest.mark.slow
def test_both_engines_publish_the_same_files(tmp_path):
    """The engine loads and validates the data; the coarsened release is the same on both.

    Deterministic rounding: every published file is the same byte for byte (tables, agency
    files); the manifests differ only in ``created`` and ``engine``.
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
    for f in files:
        if f.name in ("manifest.json", "report.html", ".eree-output"):
            continue
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    ma, mb = (json.loads((d / "manifest.json").read_text()) for d in (a, b))
    assert ma["engine"]["kind"] == "polars" and mb["engine"]["kind"] == "spark"
    for m in (ma, mb):
        m.pop("created"), m.pop("engine")
    assert ma == mb


def test_threshold_0_turns_the_threshold_rule_off(tmp_path):
    """``threshold = 0`` is the threshold rule off (as for job tables); with the dominance
    and p% rules off too no cell is sensitive, so every cell is published exactly, its
    true value (the linked tables rebuilt from the raw data), and the manifest states
    the threshold rule as off (null). A negative threshold is refused, naming the key."""
    off = (
        SPEC.replace("threshold = 3", "threshold = 0")
        .replace("dominance_k = 80.0", "dominance_k = 0")
        .replace("p_percent = 10.0", "p_percent = 0")
    )
    spec = write_case(tmp_path, spec=off)
    out = tmp_path / "rel"
    r = run_cli(["protect", str(spec), "--out", str(out)])
    assert r.exit_code == 0, r.output
    m = json.loads((out / "manifest.json").read_text())
    assert m["protection"]["rules"]["threshold"] is None
    published = pl.read_parquet(out / "tables" / "coarsened.parquet")
    assert set(published["status"]) == {"exact"}
    tables, _ = truth(frame())
    for a in MEASURES:
        part = published.filter(pl.col("attribute") == a)
        assert np.allclose(part["value"].to_numpy(), tables.values(a).astype(float))
    bad = write_case(tmp_path / "neg", spec=off.replace("threshold = 0", "threshold = -1"))
    r = run_cli(["protect", str(bad), "--out", str(tmp_path / "neg" / "rel")])
    assert r.exit_code == 2 and "[protection].threshold" in r.stderr
