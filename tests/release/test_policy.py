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
    assert m["policy"] == {"require_ledger": False, "set_by": None}


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
