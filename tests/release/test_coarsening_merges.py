"""Category merges in a coarsening release: groups published as one category, end to end.

The expectations come from the raw establishments, not from the tabulation under test:
a merged cell's true value and establishment count are summed here directly from the
rows whose county (or six-digit industry) is one of the group's members, and the
published statuses must bound them (exact: equal; rounded: within half the base; range:
inside). The reconstruction audit's own reader and LP then audit the written release
(0 violations; the manifest's pinned count is the audit's), and the members' own cells
must appear nowhere. Bad merges are refused in one line naming the spec key, exit 2,
nothing written: the spec's (parsed before any data are read) and the data's (a code no
establishment has, a group's code already a code of the data, areas of several states).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from tests.cli.inputs import assert_clean_failure, run_cli
from tests.release.test_coarsening_release import MEASURES, SPEC, audit, frame, write_case

AREAS = ("1", "3")
INDUSTRIES = ("236115", "236116")
MERGES = (
    f'merge_areas = [["{AREAS[0]}", "{AREAS[1]}"]]\n'
    f'merge_industries = [["{INDUSTRIES[0]}", "{INDUSTRIES[1]}"]]\n'
)
#: the test's release spec: SPEC with the merges, in the table format (the QCEW by-area
#: layout has no code for a merged category)
MERGED_SPEC = SPEC.replace('exempt_own = ["1"]\n', 'exempt_own = ["1"]\n' + MERGES).replace(
    '[output]\nformat = "qcew-by-area"\nyear = 2024\nquarter = 1\n', ""
)


def _rows_of(df: pl.DataFrame, area: str, own: str, industry: str) -> pl.DataFrame | None:
    """The raw establishments of a published cell, or None for an industry code that is
    not a NAICS prefix, a merged group or the total (domains, supersectors, sectors)."""
    if area != "state":
        df = df.filter(pl.col("cnty").is_in(area.split("+")))
    if own != "0":
        df = df.filter(pl.col("own") == own)
    if industry == "10":
        return df
    if "+" in industry:
        return df.filter(pl.col("naics").is_in(industry.split("+")))
    if industry.startswith("10") or not industry.isdigit():
        return None
    return df.filter(pl.col("naics").str.starts_with(industry))


@pytest.fixture(scope="module")
def merged(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("merged")
    spec = write_case(root, spec=MERGED_SPEC)
    r = run_cli(["protect", str(spec), "--out", str(root / "rel")])
    assert r.exit_code == 0, r.output
    assert "merged (members not published): 1+3 (1, 3); 236115+236116" in r.stdout
    return root / "rel"


def test_a_group_replaces_its_members_in_every_table(merged):
    df = frame()
    pub = pl.read_parquet(merged / "tables" / "coarsened.parquet")
    areas = set(pub["area"].to_list())
    industries = set(pub["industry"].to_list())
    assert "1+3" in areas and not areas & set(AREAS)
    assert "236115+236116" in industries and not industries & set(INDUSTRIES)
    # the group's cell exists wherever a member's would: every (county, own, six-digit)
    # combination of the raw data, recoded, is a published cell
    recode = df.with_columns(
        pl.when(pl.col("cnty").is_in(AREAS)).then(pl.lit("1+3")).otherwise("cnty").alias("area"),
        pl.when(pl.col("naics").is_in(INDUSTRIES))
        .then(pl.lit("236115+236116"))
        .otherwise("naics")
        .alias("industry"),
    )
    want = set(recode.select("area", "own", "industry").unique().iter_rows())
    six = pub.filter(pl.col("area") != "state", pl.col("industry").str.len_chars() >= 6)
    got = set(six.filter(pl.col("attribute") == "m1emp").select("area", "own", "industry")
              .iter_rows())  # fmt: skip
    assert got == want
    m = json.loads((merged / "manifest.json").read_text())
    assert m["protection"]["merges"] == {
        "areas": [{"members": list(AREAS), "code": "1+3"}],
        "industries": [{"members": list(INDUSTRIES), "code": "236115+236116"}],
    }
    assert "1+3 (1, 3)" in (merged / "report.html").read_text()


def test_every_merged_cell_bounds_its_members_establishments_summed(merged):
    df = frame()
    pub = pl.read_parquet(merged / "tables" / "coarsened.parquet")
    cells = pub.filter(pl.col("area").str.contains("+", literal=True)
                       | pl.col("industry").str.contains("+", literal=True))  # fmt: skip
    checked = {"exact": 0, "rounded": 0, "range": 0}
    for row in cells.iter_rows(named=True):
        rows = _rows_of(df, row["area"], row["own"], row["industry"])
        if rows is None:
            continue
        assert row["establishments"] == rows.height, row
        t = float(rows[row["attribute"]].sum())
        tol = 1e-6 * max(1.0, abs(t))
        if row["status"] == "exact":
            assert abs(row["value"] - t) <= tol, row
        elif row["status"] == "rounded":
            assert abs(row["value"] - t) <= row["base"] / 2 + tol, row
        elif row["status"] == "range":
            assert row["lower"] - tol <= t <= row["upper"] + tol, row
        if row["status"] in checked:
            checked[row["status"]] += 1
    assert checked["exact"] > 0 and checked["range"] + checked["rounded"] > 0, checked


def test_the_audit_of_the_merged_release_finds_no_violation(merged):
    """The reconstruction audit over the written tables (the groups' cells and relations):
    0 violations, and the manifest's pinned counts are the audit's. The rebuilt tables'
    merged cells are first checked against the raw sums."""
    from eree.suppression import CategoryMerges, PrimaryRules, primary_suppression, qcew_tables

    df = frame()
    merges = CategoryMerges(areas=(AREAS,), industries=(INDUSTRIES,))
    tables = qcew_tables(df.drop("state"), MEASURES, top=2, merges=merges)
    keys = tables.cells.select(pl.col("area", "own", "industry").cast(pl.Utf8)).rows()
    wage = tables.values("wage")
    summed = 0
    for i, (area, own, industry) in enumerate(keys):
        rows = _rows_of(df, area, own, industry) if "+" in area + industry else None
        if rows is not None:
            assert wage[i] == pytest.approx(float(rows["wage"].sum()))
            summed += 1
    assert summed > 20
    rules = PrimaryRules(threshold=3, dominance_n=1, dominance_k=80.0, p_percent=10.0,
                         min_protection=1.0, exempt={"own": ("1",)})  # fmt: skip
    prim = primary_suppression(tables, rules, MEASURES)
    m = json.loads((merged / "manifest.json").read_text())
    published = pl.read_parquet(merged / "tables" / "coarsened.parquet")
    for a in MEASURES:
        violations, pinned = audit(published, tables, prim, a)
        assert violations == 0, a
        assert m["audited_risk"]["per_state"]["10"][a]["cells_pinned"] == pinned


def _data_case(tmp_path: Path, merges: str, data: pl.DataFrame | None = None) -> tuple[Path, Path]:
    spec_text = MERGED_SPEC.replace(MERGES, merges)
    return write_case(tmp_path, spec=spec_text, data=data), tmp_path / "rel"


@pytest.mark.parametrize(
    "merges,named",
    [
        ('merge_areas = [["1", "7"]]\n', "[protection].merge_areas names '7'"),
        ('merge_industries = [["236115", "236117"]]\n', "[protection].merge_industries names"),
    ],
)
def test_a_code_no_establishment_has_is_refused(tmp_path, merges, named):
    spec, out = _data_case(tmp_path, merges)
    assert_clean_failure(
        run_cli(["protect", str(spec), "--out", str(out)]), out, named, "estab.csv"
    )


def test_a_group_code_that_is_already_a_code_is_refused(tmp_path):
    data = frame().with_columns(
        pl.when(pl.col("primary_key") == "4").then(pl.lit("3+5")).otherwise("cnty").alias("cnty")
    )
    spec, out = _data_case(tmp_path, 'merge_areas = [["5", "3"]]\n', data)
    r = run_cli(["protect", str(spec), "--out", str(out)])
    assert_clean_failure(r, out, "'3+5' is already a code", "cnty")


def test_merged_areas_of_several_states_are_refused(tmp_path):
    data = frame().with_columns(
        pl.when(pl.col("primary_key") == "4").then(pl.lit("24")).otherwise("state").alias("state")
    )
    spec, out = _data_case(tmp_path, MERGES, data)
    r = run_cli(["protect", str(spec), "--out", str(out)])
    assert_clean_failure(r, out, "[protection].merge_areas", "more than one state")


def test_a_hostile_code_merged_is_kept_as_data_and_escaped_in_the_report(tmp_path):
    evil = "<b>9</b>"
    data = frame().with_columns(
        pl.when(pl.col("cnty") == "1").then(pl.lit(evil)).otherwise("cnty").alias("cnty")
    )
    spec, out = _data_case(tmp_path, f'merge_areas = [["{evil}", "3"]]\n', data)
    r = run_cli(["protect", str(spec), "--out", str(out)])
    assert r.exit_code == 0, r.output
    page = (out / "report.html").read_text()
    assert evil not in page and "3+&lt;b&gt;9&lt;/b&gt;" in page
    pub = pl.read_parquet(out / "tables" / "coarsened.parquet")
    assert "3+" + evil in pub["area"].to_list()


def test_both_engines_publish_the_same_merged_files(tmp_path):
    """The engine loads and validates the data; the merges apply to what it loaded: the
    same tables byte for byte on Polars and Spark."""
    pytest.importorskip("pyspark")
    spec = write_case(tmp_path, spec=MERGED_SPEC)
    outs = {}
    for engine in ("polars", "spark"):
        outs[engine] = tmp_path / engine
        r = run_cli(["protect", str(spec), "--out", str(outs[engine]), "--engine", engine])
        assert r.exit_code == 0, (engine, r.output)
    a, b = outs["polars"], outs["spark"]
    for f in ("tables/coarsened.parquet", "tables/coarsened.csv"):
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    assert "236115+236116" in (a / "tables" / "coarsened.csv").read_text()
    ma, mb = (json.loads((d / "manifest.json").read_text()) for d in (a, b))
    assert ma["protection"]["merges"] == mb["protection"]["merges"]


def test_a_code_holding_the_path_separator_is_refused_by_the_tabulation():
    """Codes are joined into paths by U+001F inside the tabulation; a code holding it
    is refused (any other character, '/' and '+' included, is kept as data)."""
    from eree.errors import DataValidationError
    from eree.suppression import qcew_tables

    df = frame().drop("state")
    tables = qcew_tables(df.with_columns(pl.col("cnty").str.replace("1", "a/1")), MEASURES)
    assert "a/1" in tables.cells["area"].to_list()
    with pytest.raises(DataValidationError, match="U\\+001F"):
        qcew_tables(df.with_columns(pl.col("cnty").str.replace("1", "a\x1f1")), MEASURES)


def test_merges_with_random_rounding_are_audited_and_marked_seeded(tmp_path):
    """Next to the other rounding kind: a seeded random rounding of the merged tables is
    marked NOT FOR PUBLICATION, carries the groups, and audits to 0 violations."""
    from eree.suppression import CategoryMerges, PrimaryRules, primary_suppression, qcew_tables

    spec = write_case(tmp_path, spec=MERGED_SPEC, rounding="random")
    out = tmp_path / "rel"
    r = run_cli(["protect", str(spec), "--out", str(out), "--seed", "5"])
    assert r.exit_code == 0, r.output
    m = json.loads((out / "manifest.json").read_text())
    assert m["random"]["mode"] == "seeded" and (out / "NOT_FOR_PUBLICATION").exists()
    assert [g["code"] for g in m["protection"]["merges"]["areas"]] == ["1+3"]
    merges = CategoryMerges(areas=(AREAS,), industries=(INDUSTRIES,))
    tables = qcew_tables(frame().drop("state"), MEASURES, top=2, merges=merges)
    rules = PrimaryRules(threshold=3, dominance_n=1, dominance_k=80.0, p_percent=10.0,
                         min_protection=1.0, exempt={"own": ("1",)})  # fmt: skip
    prim = primary_suppression(tables, rules, MEASURES)
    published = pl.read_parquet(out / "tables" / "coarsened.parquet")
    for a in MEASURES:
        assert audit(published, tables, prim, a)[0] == 0, a
