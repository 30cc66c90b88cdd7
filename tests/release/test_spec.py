"""Spec parsing: the docs/design.md#release-spec examples parse; mistakes get a clear message."""

import tomllib

import pytest

from eree.data.config import EstablishmentDataConfig, JobTablesConfig
from eree.errors import SpecError
from eree.release.spec import load_spec, parse_spec

EREE = """
name = "pa-2015"
[data]
kind = "eree"
workplace = "workplace.parquet"
worker = "worker.parquet"
job = "job.parquet"
[privacy]
definition = "eree"
alpha = 0.1
[[query]]
name = "tract_industry_ownership"
by = ["tract", "naics_sector", "ownership"]
mechanism = "smooth_laplace"
epsilon = 1.0
delta = 1e-6
[[query]]
name = "tract_sex"
by = ["tract", "sex"]
mechanism = "log_laplace"
epsilon = 1.0
"""

GEDP = """
name = "syn-ri-2016q1"
[data]
kind = "establishments"
path = "ri44_qbp_2016_1.csv.gz"
id = "primary_key"
public = ["cnty", "own", "naics", "naics3", "naics4", "naics5", "naics_sector", "super_sector"]
confidential = ["m1emp", "m2emp", "m3emp", "wage"]
[privacy]
definition = "gedp"
neighbor = "sqrt"
distance = { m1emp = 0.5, m2emp = 0.5, m3emp = 0.5, wage = 50.0 }
[[query]]
name = "identity"
by = "identity"
mechanism = "psi"
mu = { m1emp = 0.7, m2emp = 0.7, m3emp = 0.7, wage = 0.15 }
[[query]]
name = "county"
by = ["cnty"]
mechanism = "pnc"
mu = { m1emp = 0.6, m2emp = 0.6, m3emp = 0.6, wage = 0.15 }
[pnc]
zeta = 0.01
bounds_from = "identity"
[postprocess]
microdata = true
nonnegative = false
"""


def parse(text, base="/tmp"):
    from pathlib import Path

    return parse_spec(tomllib.loads(text), Path(base))


def test_design_examples_parse():
    p = parse(EREE)
    assert isinstance(p.data, JobTablesConfig) and p.kind == "eree"
    assert p.privacy.alpha == 0.1 and len(p.queries) == 2
    assert p.query("tract_sex").by == ("tract", "sex")
    assert p.query("tract_industry_ownership").delta == 1e-6
    g = parse(GEDP)
    assert isinstance(g.data, EstablishmentDataConfig) and g.kind == "establishments"
    assert g.query("identity").is_identity
    assert g.query("county").mu == {"m1emp": 0.6, "m2emp": 0.6, "m3emp": 0.6, "wage": 0.15}
    assert g.pnc.bounds_from == "identity" and g.postprocess.microdata


def test_microdata_fit():
    assert parse(GEDP).postprocess.microdata_fit == "eq1"  # the QCEW paper's Eq. 1
    fit = GEDP.replace("nonnegative = false", 'nonnegative = false\nmicrodata_fit = "sqrt-space"')
    assert parse(fit).postprocess.microdata_fit == "sqrt-space"
    with pytest.raises(SpecError, match="microdata_fit must be one of eq1, sqrt-space"):
        parse(GEDP.replace("nonnegative = false", 'microdata_fit = "sqrt"'))
    with pytest.raises(SpecError, match="needs microdata = true"):
        parse(fit.replace("microdata = true", "microdata = false"))


def test_paths_are_relative_to_the_spec_file(tmp_path):
    (tmp_path / "s.toml").write_text(EREE)
    p = load_spec(tmp_path / "s.toml")
    assert p.data.workplace == (tmp_path / "workplace.parquet").resolve()


@pytest.mark.parametrize(
    "old,new,match",
    [
        ('mechanism = "log_laplace"', 'mechanim = "log_laplace"', "did you mean 'mechanism'"),
        ('mechanism = "log_laplace"', 'mechanism = "log_laplce"', "did you mean 'log_laplace'"),
        ('definition = "eree"', 'definition = "ere"', "did you mean 'eree'"),
        ("alpha = 0.1", "alpah = 0.1", "did you mean 'alpha'"),
        ("alpha = 0.1", "", "alpha is required"),
        ("epsilon = 1.0\ndelta", 'epsilon = "one"\ndelta', "must be a number"),
        ("epsilon = 1.0\ndelta", "epsilon = -1.0\ndelta", "must be > 0"),
        ('name = "tract_sex"', 'name = "tract_industry_ownership"', "unique"),
        ('by = ["tract", "sex"]', 'by = "tract"', "by must be a list"),
        ('name = "pa-2015"', "", "needs a name"),
        ('job = "job.parquet"', 'job = "job.parquet"\njobs = "jobs.parquet"', "not both"),
        ('job = "job.parquet"', "", "give workplace, worker and job"),
    ],
)
def test_mistakes_are_named(old, new, match):
    with pytest.raises(SpecError, match=match):
        parse(EREE.replace(old, new, 1))


def test_worker_attribute_without_domain_is_refused():
    text = EREE.replace(
        'job = "job.parquet"', 'job = "job.parquet"\nworker_attributes = ["age", "union"]'
    )
    with pytest.raises(SpecError, match="no declared domain"):
        parse(text)


def test_declared_domains_extend_the_defaults():
    text = EREE.replace(
        'job = "job.parquet"',
        'job = "job.parquet"\nworker_attributes = ["age", "union"]\n'
        '[data.domains]\nunion = ["Y", "N"]',
    )
    p = parse(text)
    assert p.data.domains["union"] == ("Y", "N") and p.data.domains["age"]


def test_bad_toml_and_missing_file(tmp_path):
    (tmp_path / "bad.toml").write_text("name = ")
    with pytest.raises(SpecError, match="not valid TOML"):
        load_spec(tmp_path / "bad.toml")
    with pytest.raises(SpecError, match="not found"):
        load_spec(tmp_path / "missing.toml")


def test_pnc_bounds_must_name_a_query():
    with pytest.raises(SpecError, match="bounds_from"):
        parse(GEDP.replace('bounds_from = "identity"', 'bounds_from = "nope"'))


# ----------------------------------------------------------------- hostile specs


def test_hostile_specs_get_one_line(tmp_path):
    import os

    from tests.cli.inputs import assert_clean_failure, run_cli, write_estab_case

    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 1000 + "]" * 1000 + "\n")
    # one clean line either way: "nested too deeply" at Python's default recursion limit,
    # or (when another library raised the limit) the spec's unknown key
    assert_clean_failure(run_cli(["validate", str(deep)]), None)
    fifo = tmp_path / "spec.toml"
    os.mkfifo(fifo)
    assert_clean_failure(run_cli(["explain", str(fifo)]), None, "not a regular file")
    spec = write_estab_case(tmp_path / "g")
    text = spec.read_text()
    for new, must in (
        (text.replace('name = "fuzz-estab"', 'name = "evil\\u202etxt.exe"'), "U+202E"),
        (text.replace('name = "fuzz-estab"', f'name = "{"n" * 201}"'), "longer than 200"),
        (text.replace("wage = 0.15 }", "wage = 1e200 }", 1), "at most 1e+06"),
    ):
        spec.write_text(new)
        assert_clean_failure(run_cli(["explain", str(spec)]), None, must)
