"""The site policy: an office can require every publishable release to be charged."""

from __future__ import annotations

import json

import pytest

from tests.cli.inputs import assert_clean_failure, run_cli, write_eree_case


@pytest.fixture(autouse=True)
def _no_site_policy(monkeypatch, tmp_path):
    """Each test starts without a policy (and never reads the machine's /etc/eree)."""
    import eree.release.policy as policy

    monkeypatch.delenv("EREE_SITE_CONFIG", raising=False)
    monkeypatch.delenv("EREE_REQUIRE_LEDGER", raising=False)
    monkeypatch.setattr(policy, "SITE_FILE", tmp_path / "no-site.toml")


def _protect(spec, out, *extra):
    return run_cli(["protect", str(spec), "--out", str(out), *extra])


def _policy_file(tmp_path, text):
    f = tmp_path / "site.toml"
    f.write_text(text)
    return f


@pytest.mark.parametrize("how", ["env", "file"])
def test_a_secure_release_without_a_ledger_is_refused(tmp_path, monkeypatch, how):
    spec = write_eree_case(tmp_path)
    if how == "env":
        monkeypatch.setenv("EREE_REQUIRE_LEDGER", "1")
    else:
        f = _policy_file(tmp_path, "[release]\nrequire_ledger = true\n")
        monkeypatch.setenv("EREE_SITE_CONFIG", str(f))
    out = tmp_path / "rel"
    msg = assert_clean_failure(_protect(spec, out), out, "--ledger", "site policy")
    assert not out.exists() and len(msg.strip().splitlines()) == 1
    # a seeded experiment is allowed (never published, never charged) ...
    r = _protect(spec, tmp_path / "exp", "--seed", "1")
    assert r.exit_code == 0, r.output
    m = json.loads((tmp_path / "exp" / "manifest.json").read_text())
    assert m["policy"]["require_ledger"] is True
    # ... and so is a charged release
    led = tmp_path / "budget.sqlite"
    r = run_cli(["ledger", "budget", str(led), "fuzz-eree", "--epsilon", "20", "--delta",
                 "0.5", "--alpha", "0.1"])  # fmt: skip
    assert r.exit_code == 0, r.output
    r = _protect(spec, tmp_path / "rel2", "--ledger", str(led))
    assert r.exit_code == 0, r.output


def test_without_a_policy_nothing_changes(tmp_path):
    spec = write_eree_case(tmp_path)
    r = _protect(spec, tmp_path / "rel")
    assert r.exit_code == 0, r.output
    m = json.loads((tmp_path / "rel" / "manifest.json").read_text())
    assert m["policy"] == {"require_ledger": False, "ledger": None, "allow_without_ledger": [],
                           "set_by": {}}  # fmt: skip


def test_the_python_api_honours_the_policy(tmp_path, monkeypatch):
    from eree.errors import LedgerError
    from eree.mechanisms.noise import SecureNoise
    from eree.release.protect import protect
    from eree.release.spec import load_spec

    spec = write_eree_case(tmp_path)
    monkeypatch.setenv("EREE_REQUIRE_LEDGER", "1")
    with pytest.raises(LedgerError, match="site policy"):
        protect(load_spec(spec), tmp_path / "rel", SecureNoise())
    assert not (tmp_path / "rel").exists()


@pytest.mark.parametrize(
    ("text", "must"),
    [
        ('[release]\nrequire_ledger = "yes"\n', "true or false"),
        ("[release]\nrequire_ledgr = true\n", "unknown key release.require_ledgr"),
        ("[relase]\nrequire_ledger = true\n", "unknown section [relase]"),
        ("[release\n", "not valid TOML"),
    ],
)
def test_a_bad_site_file_is_named_in_one_line(tmp_path, monkeypatch, text, must):
    spec = write_eree_case(tmp_path)
    f = _policy_file(tmp_path, text)
    monkeypatch.setenv("EREE_SITE_CONFIG", str(f))
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out, "--seed", "1"), out, str(f), must)


def test_a_bad_environment_value_and_a_missing_named_file(tmp_path, monkeypatch):
    spec = write_eree_case(tmp_path)
    monkeypatch.setenv("EREE_REQUIRE_LEDGER", "yes")
    assert_clean_failure(_protect(spec, tmp_path / "a"), tmp_path / "a", "EREE_REQUIRE_LEDGER")
    monkeypatch.delenv("EREE_REQUIRE_LEDGER")
    monkeypatch.setenv("EREE_SITE_CONFIG", str(tmp_path / "missing.toml"))
    assert_clean_failure(_protect(spec, tmp_path / "b"), tmp_path / "b", "no such site policy")


# ----------------------------------------------------------------- the lifetime budget shown


def _charged(tmp_path, spec, led, out):
    r = _protect(spec, tmp_path / out, "--ledger", str(led))
    assert r.exit_code == 0, r.output
    return json.loads((tmp_path / out / "manifest.json").read_text())


def test_a_charged_release_shows_budget_spent_this_release_and_remaining(tmp_path):
    from tests.cli.inputs import write_estab_case

    spec = write_eree_case(tmp_path)
    led = tmp_path / "budget.sqlite"
    run_cli(["ledger", "budget", str(led), "fuzz-eree", "--epsilon", "5", "--delta", "0.5",
             "--alpha", "0.1"])  # fmt: skip
    first = _charged(tmp_path, spec, led, "r1")
    second = _charged(tmp_path, spec, led, "r2")
    cost = first["privacy"]["total"]  # each release of this spec costs the same
    lb = second["ledger"]["lifetime_budget"]
    assert lb["budget"] == {"epsilon": 5.0, "delta": 0.5}
    assert lb["spent_before"]["epsilon"] == cost["epsilon"]
    assert lb["this_release"]["epsilon"] == cost["epsilon"]
    assert lb["spent_after"]["epsilon"] == pytest.approx(2 * cost["epsilon"], rel=1e-15)
    assert lb["remaining"]["epsilon"] == pytest.approx(5 - 2 * cost["epsilon"], rel=1e-15)
    assert lb["remaining"]["epsilon"] <= 5 - 2 * cost["epsilon"]  # rounded down
    assert lb["remaining"]["delta"] == pytest.approx(0.5 - 2 * cost["delta"], rel=1e-12)
    page = (tmp_path / "r2" / "report.html").read_text()
    assert "Lifetime budget" in page and "remaining" in page
    # GEDP: μ² adds, so what remains is √(budget² − spent μ²)
    gspec = write_estab_case(tmp_path / "g")
    gled = tmp_path / "g" / "budget.sqlite"
    run_cli(["ledger", "budget", str(gled), "fuzz-estab", "--mu", "3"])
    _charged(tmp_path, gspec, gled, "g1")
    g = _charged(tmp_path, gspec, gled, "g2")
    mu = g["privacy"]["total"]["mu"]
    lb = g["ledger"]["lifetime_budget"]
    assert lb["spent_after"]["mu"] == pytest.approx(mu * 2**0.5, rel=1e-12)
    assert lb["remaining"]["mu"] == pytest.approx((9 - 2 * mu * mu) ** 0.5, rel=1e-12)


def test_remaining_rounds_down_exactly():
    from fractions import Fraction

    from eree.privacy.composition import Cost, EpsilonDeltaComposition, GaussianComposition

    eps = EpsilonDeltaComposition(0.1).remaining(Cost(epsilon=0.1), {"epsilon": 0.3})
    assert Fraction(eps["epsilon"]) <= Fraction(0.3) - Fraction(0.1)
    assert eps["epsilon"] == pytest.approx(0.2, rel=1e-15)
    mu = GaussianComposition().remaining(Cost(mu=1.0), {"mu": 2.0})["mu"]
    assert Fraction(mu) ** 2 <= 3 and (Fraction(mu) + Fraction(2.0**-51)) ** 2 > 3
    assert EpsilonDeltaComposition().remaining(Cost(epsilon=4), {"epsilon": 3}) == {"epsilon": 0.0}


# ----------------------------------------------------------------- warnings in Python


def test_protect_issues_the_releases_warnings_as_python_warnings(tmp_path):
    """What the CLI prints, a notebook user sees: one ReleaseWarning per manifest warning."""
    import warnings

    from eree.errors import ReleaseWarning
    from eree.mechanisms.noise import SeededNoise
    from eree.release.protect import protect
    from eree.release.spec import load_spec
    from tests.cli.inputs import write_estab_case

    spec = write_estab_case(tmp_path)  # wage distance 50 at mu 0.15: noise-exceeds-value
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = protect(load_spec(spec), tmp_path / "rel", SeededNoise(1))
    ours = [w for w in caught if issubclass(w.category, ReleaseWarning)]
    assert res.manifest["warnings"], "the case must warn for this test to mean anything"
    assert len(ours) == len(res.manifest["warnings"])
    for w, m in zip(ours, res.manifest["warnings"], strict=True):
        assert m["code"] in str(w.message) and m["remedy"] in str(w.message)
    # the CLI prints them itself: no Python warning on its error stream
    r = run_cli(["protect", str(spec), "--out", str(tmp_path / "rel2"), "--seed", "1"])
    assert r.exit_code == 0 and "ReleaseWarning" not in r.stderr + r.stdout


def test_the_terminal_says_what_remains_and_when_nothing_is_guaranteed(tmp_path):
    spec = write_eree_case(tmp_path)
    led = tmp_path / "budget.sqlite"
    run_cli(["ledger", "budget", str(led), "fuzz-eree", "--epsilon", "5", "--delta", "0.5",
             "--alpha", "0.1"])  # fmt: skip
    r = _protect(spec, tmp_path / "rel", "--ledger", str(led))
    m = json.loads((tmp_path / "rel" / "manifest.json").read_text())
    eps = m["privacy"]["total"]["epsilon"]
    assert r.exit_code == 0 and "lifetime budget: spent" in r.stdout
    assert f"remaining epsilon {5 - eps:g}" in r.stdout
    text = spec.read_text().replace('definition = "eree-weak"', 'definition = "none"')
    head, _, _ = text.partition("[[query]]")
    spec.write_text(head + '[[query]]\nname = "c"\nby = ["county"]\nmechanism = "noise_infusion"\n')
    r = _protect(spec, tmp_path / "ni", "--seed", "1")
    assert r.exit_code == 0 and "no formal privacy guarantee" in r.stdout


# ----------------------------------------------------------------- the office file rules


def _office(tmp_path, monkeypatch, text):
    """Write the office file (the patched SITE_FILE) with ``text``."""
    import eree.release.policy as policy

    f = tmp_path / "etc-site.toml"
    f.write_text(text)
    monkeypatch.setattr(policy, "SITE_FILE", f)
    return f


@pytest.mark.parametrize("user_text", ["", "[release]\nrequire_ledger = false\n"])
def test_the_environment_cannot_switch_the_office_policy_off(tmp_path, monkeypatch, user_text):
    office = _office(tmp_path, monkeypatch, "[release]\nrequire_ledger = true\n")
    user = _policy_file(tmp_path, user_text)
    monkeypatch.setenv("EREE_SITE_CONFIG", str(user))
    monkeypatch.setenv("EREE_REQUIRE_LEDGER", "0")
    spec = write_eree_case(tmp_path)
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, "--ledger", str(office))
    r = _protect(spec, tmp_path / "exp", "--seed", "1")
    assert r.exit_code == 0, r.output
    m = json.loads((tmp_path / "exp" / "manifest.json").read_text())
    assert m["policy"]["require_ledger"] is True
    assert m["policy"]["set_by"]["require_ledger"] == str(office)


def test_a_user_file_may_only_tighten(tmp_path, monkeypatch):
    user = _policy_file(tmp_path, "[release]\nrequire_ledger = true\n")
    monkeypatch.setenv("EREE_SITE_CONFIG", str(user))
    spec = write_eree_case(tmp_path)
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, "--ledger", str(user))
    # only the office decides which commands run without a ledger
    user.write_text('[release]\nallow_without_ledger = ["suppress"]\n')
    assert_clean_failure(
        _protect(spec, out, "--seed", "1"), out, str(user), "by the office file only"
    )


def _fifo(path):
    import os

    os.mkfifo(path)
    return path


@pytest.mark.parametrize("kind", ["fifo", "dangling", "directory", "deep", "huge"])
def test_an_unreadable_office_file_is_an_error_not_no_policy(tmp_path, monkeypatch, kind):
    import eree.release.policy as policy

    f = tmp_path / "office.toml"
    if kind == "fifo":
        _fifo(f)
    elif kind == "dangling":
        f.symlink_to(tmp_path / "nowhere.toml")
    elif kind == "directory":
        f.mkdir()
    elif kind == "deep":
        f.write_text("x = " + "[" * 3000 + "]" * 3000 + "\n")
    else:
        f.write_text("# " + "x" * (2 << 20) + "\n")
    monkeypatch.setattr(policy, "SITE_FILE", f)
    spec = write_eree_case(tmp_path)
    out = tmp_path / "rel"
    msg = assert_clean_failure(_protect(spec, out, "--seed", "1"), out, str(f))
    assert len(msg.strip().splitlines()) == 1


def test_a_fifo_named_by_the_environment_is_an_error(tmp_path, monkeypatch):
    f = _fifo(tmp_path / "user.toml")
    monkeypatch.setenv("EREE_SITE_CONFIG", str(f))
    spec = write_eree_case(tmp_path)
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out, "--seed", "1"), out, str(f), "not a regular file")


# ----------------------------------------------------------------- the office's ledger


def _register(led, name="fuzz-eree", eps="20"):
    r = run_cli(["ledger", "budget", str(led), name, "--epsilon", eps, "--delta", "0.5",
                 "--alpha", "0.1"])  # fmt: skip
    assert r.exit_code == 0, r.output


def test_the_office_names_its_ledger_and_a_private_one_is_refused(tmp_path, monkeypatch):
    office_led = tmp_path / "office" / "ledger.sqlite"
    _register(office_led, eps="20")
    _office(tmp_path, monkeypatch,
            f'[release]\nrequire_ledger = true\nledger = "{office_led}"\n')  # fmt: skip
    spec = write_eree_case(tmp_path)
    private = tmp_path / "mine.sqlite"
    _register(private, eps="1000000")
    out = tmp_path / "rel"
    assert_clean_failure(
        _protect(spec, out, "--ledger", str(private)), out, str(office_led), "office"
    )
    assert_clean_failure(_protect(spec, out), out, f"--ledger {office_led}")
    r = _protect(spec, tmp_path / "ok", "--ledger", str(office_led))
    assert r.exit_code == 0, r.output
    m = json.loads((tmp_path / "ok" / "manifest.json").read_text())
    assert m["policy"]["ledger"] == str(office_led)
    assert m["policy"]["set_by"]["ledger"].endswith("etc-site.toml")
    # the same file through another path is the office's ledger
    other_path = tmp_path / "office" / ".." / "office" / "ledger.sqlite"
    r = _protect(spec, tmp_path / "ok2", "--ledger", str(other_path))
    assert r.exit_code == 0, r.output


def test_a_user_file_cannot_name_another_ledger_than_the_office(tmp_path, monkeypatch):
    office_led = tmp_path / "office.sqlite"
    _office(tmp_path, monkeypatch, f'[release]\nledger = "{office_led}"\n')
    user = _policy_file(tmp_path, f'[release]\nledger = "{tmp_path / "other.sqlite"}"\n')
    monkeypatch.setenv("EREE_SITE_CONFIG", str(user))
    spec = write_eree_case(tmp_path)
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out, "--seed", "1"), out, str(user), "office")


# ----------------------------------------------------------------- every command it covers


def _qcew_file(tmp_path):
    import polars as pl

    from tests.suppression.helpers import random_qcew

    src = tmp_path / "est.csv"
    random_qcew(8, 150).with_columns(pl.lit("44").alias("state")).write_csv(src)
    return src


def _lodes_dir(tmp_path):
    from tests.release.conftest import write_small_job_tables

    write_small_job_tables(tmp_path / "lodes")
    return tmp_path / "lodes"


def _covered(tmp_path):
    """Every command that reads confidential data and cannot be charged, with its input."""
    src, lodes, spec = _qcew_file(tmp_path), _lodes_dir(tmp_path), write_eree_case(tmp_path)
    out = tmp_path / "out"
    return out, [
        ["suppress", str(src), "--out", str(out), "--attributes", "m1emp,wage"],
        ["suppress", str(src), "--out", str(out), "--attributes", "m1emp,wage", "--gedp"],
        ["audit", "suppression", str(src), "--attributes", "m1emp,wage", "--out", str(out)],
        ["audit", "noise-infusion", "--data", str(lodes), "--out", str(out), "--trials", "1"],
        ["audit", "claims", str(spec), "--seeds", "1"],
        ["evaluate", "haney-workload1", "--data", str(lodes), "--out", str(out),
         "--trials", "1", "--small-grid"],
        ["evaluate", "webb-table3", "--data", str(src), "--out", str(out), "--trials", "1"],
        ["evaluate", "publication-grade", "--data", str(lodes), "--out", str(out),
         "--seeds", "1"],
    ]  # fmt: skip


@pytest.mark.parametrize("which", range(8))
def test_every_command_on_confidential_data_is_covered(tmp_path, monkeypatch, which):
    out, commands = _covered(tmp_path)
    assert len(commands) == 8
    monkeypatch.setenv("EREE_REQUIRE_LEDGER", "1")
    msg = assert_clean_failure(run_cli(commands[which]), out, "site policy", "cannot be charged")
    assert not out.exists()
    assert len(msg.strip().splitlines()) == 1


def test_the_office_may_allow_a_command_without_a_ledger(tmp_path, monkeypatch):
    src = _qcew_file(tmp_path)
    _office(tmp_path, monkeypatch,
            '[release]\nrequire_ledger = true\nallow_without_ledger = ["suppress"]\n')  # fmt: skip
    out = tmp_path / "sup"
    r = run_cli(["suppress", str(src), "--out", str(out), "--attributes", "m1emp,wage",
                 "--no-audit"])  # fmt: skip
    assert r.exit_code == 0, r.output
    out2 = tmp_path / "aud"
    r = run_cli(["audit", "suppression", str(src), "--attributes", "m1emp,wage", "--out",
                 str(out2)])  # fmt: skip
    assert r.exit_code == 2 and "cannot be charged" in r.output and not out2.exists()
