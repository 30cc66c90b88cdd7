"""Strict input through the CLI: each reviewer finding as a test.

See docs/design.md#validation, #release-outputs.

Every failure must be one line on stderr, exit code 2, no traceback, no output left
behind, and no planted confidential value (:mod:`tests.cli.inputs`) in what is printed.
"""

from __future__ import annotations

import gzip
import json
from datetime import date
from pathlib import Path

import polars as pl
import pytest

from tests.cli.inputs import (
    EREE_SPEC,
    SECRET_PREFIX,
    SECRET_WAGE,
    assert_clean_failure,
    eree_frames,
    estab_frame,
    judge,
    run_cli,
    write_eree_case,
    write_estab_case,
)


def _protect(spec: Path, out: Path, *extra: str):
    return run_cli(["protect", str(spec), "--out", str(out), "--seed", "3", *extra])


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _rewrite(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n")


# ------------------------------------------------------------- field counts


@pytest.mark.parametrize("change", ["fewer", "more"])
def test_establishment_row_with_a_missing_or_extra_field_is_refused(tmp_path, change):
    spec = write_estab_case(tmp_path)
    f = tmp_path / "data" / "estab.csv"
    lines = _lines(f)
    # row 1 holds the planted wage; drop a field (values would shift left) or add one
    lines[1] = lines[1].replace(",", ",,", 0) if change == "more" else lines[1]
    if change == "fewer":
        fields = lines[1].split(",")
        lines[1] = ",".join(fields[:3] + fields[4:])  # drop naics: a wage would become m3emp
    else:
        lines[1] = lines[1] + ",x"
    _rewrite(f, lines)
    out = tmp_path / "rel"
    msg = assert_clean_failure(_protect(spec, out), out, "row 1", "estab.csv")
    assert ("fewer" if change == "fewer" else "more") in msg


def test_row_missing_a_field_before_a_trailing_unused_column_is_refused(tmp_path):
    # the workplace file has a trailing column eree does not read; a row that lacks its
    # state would otherwise shift its tract into the county column and publish it
    spec = write_eree_case(tmp_path)
    wp = eree_frames()["workplace"].with_columns(pl.lit("20160101").alias("createdate"))
    lines = wp.write_csv().splitlines()
    fields = lines[4].split(",")
    del fields[1]
    lines[4] = ",".join(fields)
    _rewrite(tmp_path / "data" / "workplace.csv", lines)
    out = tmp_path / "rel"
    msg = assert_clean_failure(_protect(spec, out), out, "workplace.csv", "row 4")
    assert "fewer" in msg


def test_trailing_extra_field_on_one_workplace_row_is_refused(tmp_path):
    spec = write_eree_case(tmp_path)
    f = tmp_path / "data" / "workplace.csv"
    lines = _lines(f)
    lines[4] += ",42999"  # a made-up county in a column the header does not have
    _rewrite(f, lines)
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, "workplace.csv", "row 4", "more")


# ------------------------------------------------------------- header detection


@pytest.mark.parametrize("kind", ["worker", "estab"])
def test_file_without_header_prints_no_field_of_its_first_row(tmp_path, kind):
    if kind == "worker":
        spec = write_eree_case(tmp_path)
        f = tmp_path / "data" / "worker.csv"
    else:
        spec = write_estab_case(tmp_path)
        f = tmp_path / "data" / "estab.csv"
    lines = _lines(f)
    first = lines[1].split(",")
    _rewrite(f, lines[1:])
    out = tmp_path / "rel"
    msg = assert_clean_failure(_protect(spec, out), out, f.name, "header")
    for field in first:
        assert f"'{field}'" not in msg and f" {field}," not in msg
    assert SECRET_PREFIX not in msg and SECRET_WAGE not in msg


def test_duplicated_first_row_values_do_not_leak_as_column_names(tmp_path):
    spec = write_eree_case(tmp_path)
    f = tmp_path / "data" / "worker.csv"
    lines = _lines(f)
    lines[0] = "p9,A01,M,A1,A1,E1,E01,zq9xhead"  # a data row where the header should be
    _rewrite(f, lines)
    out = tmp_path / "rel"
    msg = assert_clean_failure(_protect(spec, out), out)
    assert "'A1'" not in msg and "A01" not in msg


# ------------------------------------------------------------- clean file-level errors


def test_missing_data_file_and_directory_as_path(tmp_path):
    spec = write_eree_case(tmp_path)
    (tmp_path / "data" / "job.csv").unlink()
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, "job.csv", "not found")
    (tmp_path / "data" / "job.csv").mkdir()
    assert_clean_failure(_protect(spec, out), out, "job.csv", "directory")


@pytest.mark.parametrize("damage", ["truncated", "corrupt", "not-gzip"])
def test_corrupt_or_truncated_gzip_names_the_file(tmp_path, damage):
    spec = write_estab_case(tmp_path, "csv.gz")
    f = tmp_path / "data" / "estab.csv.gz"
    raw = gzip.compress(estab_frame(400).write_csv().encode())
    if damage == "truncated":
        raw = raw[: len(raw) * 2 // 3]
    elif damage == "corrupt":
        mid = len(raw) // 2
        raw = raw[:mid] + bytes(b ^ 0x5A for b in raw[mid : mid + 40]) + raw[mid + 40 :]
    else:
        raw = b"\x1f\x8b" + b"garbage" * 20
    f.write_bytes(raw)
    out = tmp_path / "rel"
    msg = assert_clean_failure(_protect(spec, out), out, "estab.csv.gz")
    assert "Aborted" not in msg


@pytest.mark.parametrize("kind", ["workplace", "worker", "job", "estab"])
def test_header_only_files_are_refused(tmp_path, kind):
    if kind == "estab":
        spec = write_estab_case(tmp_path)
        f = tmp_path / "data" / "estab.csv"
    else:
        spec = write_eree_case(tmp_path)
        f = tmp_path / "data" / f"{kind}.csv"
    _rewrite(f, _lines(f)[:1])
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, f.name, "no data rows")


@pytest.mark.parametrize("kind", ["workplace", "estab"])
def test_header_only_parquet_is_refused(tmp_path, kind):
    if kind == "estab":
        spec = write_estab_case(tmp_path, "parquet")
        f = tmp_path / "data" / "estab.parquet"
    else:
        spec = write_eree_case(tmp_path, "parquet")
        f = tmp_path / "data" / "workplace.parquet"
    pl.read_parquet(f).head(0).write_parquet(f)
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, f.name, "no data rows")


# ------------------------------------------------------------- clean spec errors


def _explain(spec: Path):
    return run_cli(["explain", str(spec)])


def test_duplicate_domain_values_name_the_spec_key(tmp_path):
    spec = write_eree_case(tmp_path)
    text = EREE_SPEC.format(
        data='workplace = "data/workplace.csv"\nworker = "data/worker.csv"\n'
        'job = "data/job.csv"\n[data.domains]\nsex = ["M", "F", "M"]'
    )
    spec.write_text(text)
    assert_clean_failure(_explain(spec), None, "[data.domains].sex", "more than once")
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, "[data.domains].sex")


def test_unknown_domain_attribute_is_refused_with_a_suggestion(tmp_path):
    spec = write_eree_case(tmp_path)
    text = EREE_SPEC.format(
        data='workplace = "data/workplace.csv"\nworker = "data/worker.csv"\n'
        'job = "data/job.csv"\n[data.domains]\ncounty = ["42001", "42002", "42003"]\n'
        'sexx = ["M", "F"]'
    )
    spec.write_text(text)
    assert_clean_failure(_explain(spec), None, "[data.domains].sexx", "did you mean 'sex'")
    estab = write_estab_case(tmp_path / "e")
    estab.write_text(
        estab.read_text().replace(
            'confidential = ["m1emp", "m2emp", "m3emp", "wage"]',
            'confidential = ["m1emp", "m2emp", "m3emp", "wage"]\n[data.domains]\ncnt = ["001"]',
        )
    )
    assert_clean_failure(_explain(estab), None, "[data.domains].cnt", "did you mean 'cnty'")


def test_by_typo_gets_a_did_you_mean(tmp_path):
    spec = write_eree_case(tmp_path)
    spec.write_text(spec.read_text().replace('by = ["county", "sex"]', 'by = ["county", "sexe"]'))
    assert_clean_failure(_explain(spec), None, "'sexe'", "did you mean 'sex'")
    estab = write_estab_case(tmp_path / "e")
    estab.write_text(estab.read_text().replace('by = ["cnty"]', 'by = ["cnyt"]'))
    assert_clean_failure(_explain(estab), None, "did you mean 'cnty'")


def test_very_long_query_name_is_refused_before_any_noise(tmp_path):
    spec = write_eree_case(tmp_path)
    spec.write_text(spec.read_text().replace('name = "county"\n', f'name = "{"q" * 300}"\n'))
    assert_clean_failure(_explain(spec), None, "longer than")
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, "longer than")


def test_spec_that_is_a_directory_or_latin1(tmp_path):
    assert_clean_failure(_explain(tmp_path), None, "directory")
    spec = write_eree_case(tmp_path / "x")
    spec.write_bytes(spec.read_text().replace('"fuzz-eree"', '"caf\u00e9"').encode("latin-1"))
    assert_clean_failure(_explain(spec), None, "UTF-8")
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, "UTF-8")


def test_theta_on_log_laplace_is_refused(tmp_path):
    # a setting that does not apply to the query's mechanism is an error, not ignored
    spec = write_eree_case(tmp_path)
    text = spec.read_text().replace(
        'mechanism = "log_laplace"\nepsilon = 1.0',
        'mechanism = "log_laplace"\nepsilon = 1.0\ntheta = 5',
    )
    spec.write_text(text)
    assert_clean_failure(_explain(spec), None, "theta", "log_laplace")


def test_csv_setting_must_be_a_boolean(tmp_path):
    spec = write_eree_case(tmp_path)
    spec.write_text(spec.read_text() + '[output]\ncsv = "no"\n')
    assert_clean_failure(_explain(spec), None, "[output].csv")


# ------------------------------------------------------------- output and ledger paths


def test_out_at_a_file_a_dangling_symlink_or_dev_null(tmp_path):
    spec = write_eree_case(tmp_path)
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    assert_clean_failure(_protect(spec, afile), None, "not a directory")
    assert afile.read_text() == "keep me"
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "nowhere")
    assert_clean_failure(_protect(spec, link), None, "symbolic link")
    assert not (tmp_path / "nowhere").exists()
    if Path("/dev/null").exists():
        assert_clean_failure(_protect(spec, Path("/dev/null")), None, "/dev/null")
    assert_clean_failure(_protect(spec, afile / "sub"), None, "not a directory")
    assert not [p for p in tmp_path.iterdir() if ".partial" in p.name]


def test_ledger_that_is_not_a_database(tmp_path):
    spec = write_eree_case(tmp_path)
    bogus = tmp_path / "ledger.txt"
    bogus.write_text("this is not a database\n" * 100)
    out = tmp_path / "rel"
    # no --seed: a seeded release is never charged to a ledger
    result = run_cli(["protect", str(spec), "--out", str(out), "--ledger", str(bogus)])
    assert_clean_failure(result, out, "ledger.txt")


# ------------------------------------------------------------- parameters and non-finite values


def test_huge_alpha_with_force_is_a_clean_error(tmp_path):
    spec = write_eree_case(tmp_path)
    text = spec.read_text().replace("alpha = 0.1", "alpha = 1e300")
    text = text[: text.index('[[query]]\nname = "county_sex"')]
    text = text.replace(
        'mechanism = "log_laplace"\nepsilon = 1.0',
        'mechanism = "log_laplace"\nepsilon = 1.0\nforce = true',
    )
    spec.write_text(text)
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, "county")


def test_tiny_epsilon_never_publishes_infinity(tmp_path):
    spec = write_eree_case(tmp_path)
    text = spec.read_text().replace(
        'definition = "eree-weak"\nalpha = 0.1', 'definition = "edge-dp"'
    )
    text = text.replace(
        'mechanism = "log_laplace"\nepsilon = 1.0', 'mechanism = "laplace"\nepsilon = 1e-320'
    )
    text = text.replace(
        'mechanism = "smooth_laplace"\nepsilon = 1.0', 'mechanism = "laplace"\nepsilon = 1.0'
    )
    spec.write_text(text)
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, "non-finite", "'county'")


def test_wage_sums_past_the_largest_double_are_refused(tmp_path):
    spec = write_estab_case(tmp_path, "parquet")
    f = tmp_path / "data" / "estab.parquet"
    frame = estab_frame().with_columns(pl.lit(1.7e308).alias("wage"))
    frame.write_parquet(f)
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, "non-finite")


def test_infinite_spec_numbers_are_refused(tmp_path):
    spec = write_eree_case(tmp_path)
    spec.write_text(spec.read_text().replace("epsilon = 1.0", "epsilon = inf", 1))
    assert_clean_failure(_explain(spec), None, "finite")


# ------------------------------------------------------------- Parquet types


@pytest.mark.parametrize("dtype", ["bool", "date"])
@pytest.mark.parametrize("column", ["wage", "m1emp"])
def test_parquet_boolean_or_date_measures_are_refused(tmp_path, dtype, column):
    spec = write_estab_case(tmp_path, "parquet")
    f = tmp_path / "data" / "estab.parquet"
    frame = estab_frame()
    n = frame.height
    values = (
        [i % 2 == 0 for i in range(n)]
        if dtype == "bool"
        else [date(2016, 1, 1 + i % 28) for i in range(n)]
    )
    frame.with_columns(pl.Series(column, values)).write_parquet(f)
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, "estab.parquet", f"'{column}'")


def test_parquet_boolean_worker_attribute_is_refused(tmp_path):
    spec = write_eree_case(tmp_path, "parquet")
    f = tmp_path / "data" / "worker.parquet"
    w = eree_frames()["worker"]
    w.with_columns(pl.Series("sex", [i % 2 == 0 for i in range(w.height)])).write_parquet(f)
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, "worker.parquet", "'sex'")


# ------------------------------------------------------------- cell-count guard


def _big_domains_spec(tmp_path: Path, complete: bool, n_values: int) -> Path:
    spec = write_eree_case(tmp_path)
    values = ", ".join(f'"v{i}"' for i in range(n_values))
    text = EREE_SPEC.format(
        data='workplace = "data/workplace.csv"\nworker = "data/worker.csv"\n'
        f'job = "data/job.csv"\nworkplace_attributes = ["county", "tract", "block"]\n'
        f"[data.domains]\nblock = [{values}]\ntract = [{values}]\n"
        'county = ["42001", "42002", "42003"]'
    )
    if complete:
        text += '[[query]]\nname = "everything"\nby = ["block", "tract", "county"]\n'
        text += 'mechanism = "log_laplace"\nepsilon = 1.0\ncomplete = true\n'
    spec.write_text(text)
    return spec


def test_complete_over_ten_million_combinations_is_refused_before_allocation(tmp_path):
    # block × tract = 4000 × 4000 = 1.6e7 workplace combinations
    spec = _big_domains_spec(tmp_path, True, 4000)
    r = _explain(spec)
    assert_clean_failure(r, None, "'everything'", "max_cells")
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, "'everything'", "max_cells")


def test_a_billion_worker_cells_are_refused_by_explain_and_protect(tmp_path):
    spec = write_eree_case(tmp_path)
    big = ", ".join(f'"v{i}"' for i in range(1000))
    text = EREE_SPEC.format(
        data='workplace = "data/workplace.csv"\nworker = "data/worker.csv"\n'
        'job = "data/job.csv"\nworker_attributes = ["age", "sex", "race"]\n'
        f"[data.domains]\nage = [{big}]\nsex = [{big}]\nrace = [{big}]"
    ).replace('definition = "eree-weak"', 'definition = "eree"')
    text += '[[query]]\nname = "huge"\nby = ["age", "sex", "race"]\n'
    text += 'mechanism = "smooth_gamma"\nepsilon = 1.0\n'
    spec.write_text(text)
    assert_clean_failure(_explain(spec), None, "'huge'", "1,000,000,000")
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, "'huge'")


def test_explain_shows_cell_counts_and_the_limit_is_configurable(tmp_path):
    spec = write_eree_case(tmp_path)
    base = spec.read_text()
    r = run_cli(["explain", str(spec), "--json"])
    assert r.exit_code == 0, r.output
    cells = json.loads(r.stdout)["cells"]
    # county: depends on the data; county × sex: at least the 2 values of sex
    assert cells["county"]["cells"] is None and cells["county"]["at_least"] == 1
    assert cells["county_sex"]["at_least"] == 2
    text = base + (
        '[[query]]\nname = "age_sex"\nby = ["age", "sex"]\n'
        'mechanism = "smooth_laplace"\nepsilon = 6.0\n'
    )
    spec.write_text(text)
    r = run_cli(["explain", str(spec)])
    assert r.exit_code == 0 and "age_sex: 6" in r.stdout, r.output
    # refused from the declared domains alone, before any data is read
    spec.write_text(text + "[output]\nmax_cells = 5\n")
    assert_clean_failure(_explain(spec), None, "'age_sex'", "max_cells = 5")
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, "'age_sex'", "max_cells = 5")
    # refused once the public workplace table gives the number of counties
    counties = eree_frames()["workplace"]["county"].n_unique()
    spec.write_text(base + f"[output]\nmax_cells = {2 * counties - 1}\n")
    assert _explain(spec).exit_code == 0
    assert_clean_failure(_protect(spec, out), out, "'county_sex'", f"{2 * counties:,} cells")
    spec.write_text(base + f"[output]\nmax_cells = {2 * counties}\n")
    r = _protect(spec, out)
    assert r.exit_code == 0, r.output


# ------------------------------------------------------------- successful runs stay clean


@pytest.mark.parametrize("ext", ["csv", "csv.gz", "parquet"])
def test_valid_inputs_release_and_write_no_planted_value(tmp_path, ext):
    for kind, spec in (
        ("eree", write_eree_case(tmp_path / "a", ext)),
        ("joined", write_eree_case(tmp_path / "b", ext, joined=True)),
        ("estab", write_estab_case(tmp_path / "c", ext)),
    ):
        out = tmp_path / f"rel-{kind}"
        o = judge(_protect(spec, out), out)
        assert o.ok and o.leak is None and not o.partial, (kind, o)
        assert (out / "manifest.json").is_file()
