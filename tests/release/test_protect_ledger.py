"""`protect` with the budget ledger, the keyed fingerprint and seeded marks.

Each reviewer finding of the ledger issue as a test.

See docs/design.md#budget-ledger, #release-outputs.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from eree.data.fingerprint import content_fingerprint
from eree.data.job_tables import load_job_tables
from eree.errors import BudgetExceededError, EreeError, LedgerError, PrivacyParameterError
from eree.mechanisms.noise import SecureNoise, SeededNoise
from eree.privacy.ledger import Ledger
from eree.release.protect import protect
from eree.release.spec import load_spec

from .conftest import write_small_job_tables

ONE_QUERY = """
name = "{name}"
[data]
kind = "eree"
workplace = "{d}/workplace.{ext}"
worker = "{d}/worker.{ext}"
job = "{d}/job.{ext}"
[privacy]
definition = "{definition}"
alpha = 0.1
{budget}
[[query]]
name = "county"
by = ["county"]
mechanism = "{mechanism}"
epsilon = {epsilon}
{extra}
"""
MECHANISM = {"eree": "log_laplace", "eree-weak": "log_laplace", "edge-dp": "laplace",
             "node-dp": "truncated_laplace", "blowfish": "smooth_gamma"}  # fmt: skip


def spec(tmp_path: Path, *, name="small", definition="eree", epsilon=2.0, budget="", d="data",
         ext="parquet", file="spec.toml") -> Path:  # fmt: skip
    p = tmp_path / file
    p.write_text(ONE_QUERY.format(
        name=name, d=d, ext=ext, definition=definition, budget=budget,
        mechanism=MECHANISM[definition], epsilon=epsilon,
        extra="theta = 2000" if definition == "node-dp" else "",
    ))  # fmt: skip
    return p


class NoNoise(SecureNoise):
    """A secure source that fails the test if any noise is drawn."""

    def uniform(self, size):
        raise AssertionError("noise drawn for a refused release")


@pytest.fixture
def data(tmp_path):
    write_small_job_tables(tmp_path / "data")
    return tmp_path / "data"


@pytest.fixture
def led(tmp_path):
    return tmp_path / "ledger.sqlite"


def run(spec_path, out, ledger=None, source=None, **kw):
    return protect(load_spec(spec_path), out, source or SecureNoise(), ledger=ledger, **kw)


def test_charged_before_noise_and_refused_without_noise(tmp_path, data, led):
    Ledger(led).set_budget("small", epsilon=3.0, alpha=0.1)
    res = run(spec(tmp_path), tmp_path / "r1", led)
    entry = res.manifest["ledger"]
    assert entry["dataset"] == "small" and entry["version"] == 1
    with pytest.raises(BudgetExceededError):  # 2 + 2 > 3
        run(spec(tmp_path), tmp_path / "r2", led, NoNoise())
    assert not (tmp_path / "r2").exists()
    assert [r["status"] for r in Ledger(led).releases()] == ["committed"]
    # the manifest names its ledger row and chain hash, and the ledger confirms them
    assert Ledger(led).verify([tmp_path / "r1"]).ok


def test_unregistered_dataset_is_refused_before_noise(tmp_path, data, led):
    with pytest.raises(LedgerError, match="no ledger at"):  # a release creates no ledger
        run(spec(tmp_path), tmp_path / "r", led, NoNoise())
    assert not led.exists()
    Ledger(led).set_budget("other", epsilon=3.0, alpha=0.1)
    with pytest.raises(LedgerError, match="'small' is not registered"):
        run(spec(tmp_path), tmp_path / "r", led, NoNoise())
    assert not (tmp_path / "r").exists()


def test_renamed_spec_on_the_same_data_is_charged_to_the_known_dataset(tmp_path, data, led):
    Ledger(led).set_budget("small", epsilon=3.0, alpha=0.1)
    run(spec(tmp_path), tmp_path / "r1", led)
    renamed = spec(tmp_path, name="fresh-name", file="renamed.toml")
    with pytest.raises(BudgetExceededError, match="already in the ledger as dataset 'small'"):
        run(renamed, tmp_path / "r2", led, NoNoise())
    res = run(spec(tmp_path, name="fresh-name", epsilon=1.0, file="r.toml"), tmp_path / "r3", led)
    assert res.manifest["ledger"]["dataset"] == "small"
    assert any("charged to 'small'" in n for n in res.manifest["ledger"]["notes"])


def test_converted_and_shuffled_files_are_the_same_dataset(tmp_path, data, led):
    Ledger(led).set_budget("small", epsilon=3.0, alpha=0.1)
    run(spec(tmp_path), tmp_path / "r1", led)
    conv = tmp_path / "conv"
    conv.mkdir()
    for t in ("workplace", "worker", "job"):
        df = pl.read_parquet(data / f"{t}.parquet").sample(fraction=1.0, shuffle=True, seed=9)
        df.write_csv(conv / f"{t}.csv")
    other = spec(tmp_path, name="converted", d="conv", ext="csv", file="conv.toml")
    with pytest.raises(BudgetExceededError, match="'small'"):  # 2 + 2 > 3
        run(other, tmp_path / "r2", led, NoNoise())
    # same name, converted files: recognised as version 1, no --new-version needed
    res = run(spec(tmp_path, d="conv", ext="csv", epsilon=1.0, file="c2.toml"), tmp_path / "r3",
              led)  # fmt: skip
    assert res.manifest["ledger"]["version"] == 1


def test_changed_data_under_the_same_name_needs_new_version(tmp_path, data, led):
    Ledger(led).set_budget("small", epsilon=6.0, alpha=0.1)
    r1 = run(spec(tmp_path), tmp_path / "r1", led)
    w = pl.read_parquet(data / "worker.parquet")
    w.with_columns(pl.when(pl.col("worker_id") == "p5").then(pl.lit("A01")).otherwise("age")
                   .alias("age")).write_parquet(data / "worker.parquet")  # fmt: skip
    with pytest.raises(LedgerError, match="--new-version"):
        run(spec(tmp_path), tmp_path / "r2", led, NoNoise())
    r3 = run(spec(tmp_path), tmp_path / "r3", led, new_version=True)
    assert r3.manifest["ledger"]["version"] == 2
    assert r3.manifest["dataset"]["fingerprint"] != r1.manifest["dataset"]["fingerprint"]
    (entry,) = Ledger(led).show()
    assert [v["version"] for v in entry["versions"]] == [1, 2]
    assert entry["spent"]["epsilon"] == 4.0  # 2 + 2, one total for both versions


def test_four_definitions_add_up_in_one_total(tmp_path, data, led):
    Ledger(led).set_budget("small", epsilon=8.0, alpha=0.1)
    for d in ("eree", "edge-dp", "node-dp", "blowfish"):
        run(spec(tmp_path, definition=d, file=f"{d}.toml"), tmp_path / d, led)
    (entry,) = Ledger(led).show()
    assert entry["spent"]["epsilon"] == 8.0  # 2 + 2 + 2 + 2
    with pytest.raises(BudgetExceededError):
        run(spec(tmp_path, definition="eree-weak", epsilon=0.5, file="w.toml"), tmp_path / "w",
            led, NoNoise())  # fmt: skip


def test_a_budget_of_two_admits_one_release_whatever_the_definition(tmp_path, data, led):
    Ledger(led).set_budget("small", epsilon=2.0, alpha=0.1)
    ok = 0
    for d in ("eree", "edge-dp", "node-dp", "blowfish"):
        try:
            run(spec(tmp_path, definition=d, file=f"{d}.toml"), tmp_path / d, led)
            ok += 1
        except BudgetExceededError:
            pass
    assert ok == 1


@pytest.mark.parametrize("with_ledger", [False, True])
def test_budget_key_of_the_other_family_is_an_error(tmp_path, data, led, with_ledger):
    Ledger(led).set_budget("small", epsilon=100.0, alpha=0.1)
    p = spec(tmp_path, epsilon=10.0, budget="budget = { epsilon = 1.0, mu = 1.0 }")
    with pytest.raises(PrivacyParameterError, match="'mu'"):
        run(p, tmp_path / "r", led if with_ledger else None, NoNoise())
    assert not (tmp_path / "r").exists()


def test_spec_budget_cannot_raise_the_ledger_budget(tmp_path, data, led):
    Ledger(led).set_budget("small", epsilon=1.0, alpha=0.1)
    p = spec(tmp_path, budget="budget = { epsilon = 100.0 }")
    with pytest.raises(BudgetExceededError, match="lifetime budget"):
        run(p, tmp_path / "r", led, NoNoise())


def test_non_empty_output_is_refused_before_the_reservation(tmp_path, data, led):
    Ledger(led).set_budget("small", epsilon=10.0, alpha=0.1)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    (tmp_path / "afile").write_text("x")
    for out in ("full", "afile"):
        with pytest.raises(EreeError, match="choose a new"):
            run(spec(tmp_path), tmp_path / out, led, NoNoise())
    assert Ledger(led).releases() == []


def test_seed_with_ledger_is_refused_and_seeded_releases_are_marked(tmp_path, data, led):
    Ledger(led).set_budget("small", epsilon=10.0, alpha=0.1)
    with pytest.raises(LedgerError, match="seed"):
        run(spec(tmp_path), tmp_path / "s0", led, SeededNoise(1))
    assert Ledger(led).releases() == []
    run(spec(tmp_path), tmp_path / "seeded", None, SeededNoise(1))
    assert (tmp_path / "seeded" / "NOT_FOR_PUBLICATION").is_file()
    meta = pq.read_metadata(tmp_path / "seeded" / "tables" / "county.parquet").metadata
    assert meta[b"eree.random"] == b"seeded: NOT FOR PUBLICATION"
    run(spec(tmp_path), tmp_path / "secure", led)
    assert not (tmp_path / "secure" / "NOT_FOR_PUBLICATION").exists()
    meta = pq.read_metadata(tmp_path / "secure" / "tables" / "county.parquet").metadata or {}
    assert b"eree.random" not in meta


def _published_bytes(out: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file())


def test_manifest_fingerprint_is_keyed_and_no_unkeyed_hash_is_published(tmp_path, data, led):
    Ledger(led).set_budget("small", epsilon=10.0, alpha=0.1)
    res = run(spec(tmp_path), tmp_path / "r1", led)
    fp = content_fingerprint(load_job_tables(load_spec(spec(tmp_path)).data))
    key = bytes.fromhex((tmp_path / "ledger.sqlite.key").read_text())
    assert res.manifest["dataset"]["fingerprint"] == hmac.new(
        key, fp.encode(), hashlib.sha256).hexdigest()  # fmt: skip
    # the old unsalted hashes of the input files, computed here by hand
    files = [data / f"{t}.parquet" for t in ("workplace", "worker", "job")]
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        h.update(hashlib.sha256(f.read_bytes()).digest())
    unkeyed = [fp, h.hexdigest(), *(hashlib.sha256(f.read_bytes()).hexdigest() for f in files)]
    no_ledger = [run(spec(tmp_path), tmp_path / f"n{i}") for i in range(2)]
    for out in (tmp_path / "r1", tmp_path / "n0", tmp_path / "n1"):
        blob = _published_bytes(out)
        assert b"sha256" not in blob
        for u in unkeyed:
            assert u.encode() not in blob
    # without a ledger no fingerprint is published at all: nothing links the releases
    assert [r.manifest["dataset"]["fingerprint"] for r in no_ledger] == [None, None]
    assert len(res.manifest["dataset"]["fingerprint"]) == 64


def test_hand_edited_ledger_refuses_the_next_release(tmp_path, data, led):
    import sqlite3

    Ledger(led).set_budget("small", epsilon=4.0, alpha=0.1)
    run(spec(tmp_path), tmp_path / "r1", led)
    con = sqlite3.connect(led)
    con.execute("UPDATE events SET body = replace(body, '\"epsilon\":\"2\"', '\"epsilon\":\"0\"') "
                "WHERE kind = 'reserve'")  # fmt: skip
    con.commit()
    assert con.total_changes == 1
    assert not Ledger(led).verify().ok
    with pytest.raises(LedgerError, match="fails verification"):
        run(spec(tmp_path), tmp_path / "r2", led, NoNoise())
    assert json.loads((tmp_path / "r1" / "manifest.json").read_text())["ledger"]["chain_hash"]


GEDP = """
name = "ri"
[data]
kind = "establishments"
path = "e.csv"
id = "primary_key"
public = ["cnty", "own", "naics"]
confidential = ["m1emp", "m2emp"]
[privacy]
definition = "gedp"
neighbor = "sqrt"
distance = {{ m1emp = 0.5, m2emp = 0.5 }}
{budget}
[[query]]
name = "identity"
by = "identity"
mechanism = "psi"
mu = {{ m1emp = 0.3, m2emp = 0.4 }}
"""


def test_gedp_releases_compose_in_quadrature(tmp_path, led):
    from .test_gedp import write_small

    write_small(tmp_path / "e.csv", n=60)
    p = tmp_path / "g.toml"
    p.write_text(GEDP.format(budget=""))
    Ledger(led).set_budget("ri", mu=0.75)
    # one release: μ = √(0.3² + 0.4²) = 0.5; two: √(0.25 + 0.25) ≈ 0.707 ≤ 0.75
    run(p, tmp_path / "g1", led)
    run(p, tmp_path / "g2", led)
    (entry,) = Ledger(led).show()
    assert entry["spent"]["mu"] == pytest.approx(0.5**0.5, rel=1e-12)
    with pytest.raises(BudgetExceededError, match="mu"):  # three: √0.75 ≈ 0.866 > 0.75
        run(p, tmp_path / "g3", led, NoNoise())
    # the reverse of the ER-EE trap: an epsilon key on a GEDP spec is an error
    p.write_text(GEDP.format(budget="budget = { epsilon = 1.0, mu = 5.0 }"))
    with pytest.raises(PrivacyParameterError, match="'epsilon'"):
        run(p, tmp_path / "g4", None, NoNoise())


def test_the_same_data_through_other_columns_cannot_take_another_budget(tmp_path, data, led):
    book = Ledger(led)
    book.set_budget("small", epsilon=2.0, alpha=0.1)
    book.set_budget("other", epsilon=100.0, alpha=0.1)  # registered, not yet used
    run(spec(tmp_path), tmp_path / "r1", led)
    # the same files, a spec that loads fewer worker columns (other validated content)
    p = spec(tmp_path, name="other", file="sub.toml")
    p.write_text(p.read_text().replace('job = "data/job.parquet"',
                 'job = "data/job.parquet"\nworker_attributes = ["sex"]\n[data.domains]\n'
                 'sex = ["M", "F"]'))  # fmt: skip
    with pytest.raises(LedgerError, match="same establishments and jobs as dataset 'small'"):
        run(p, tmp_path / "r2", led, NoNoise())
    # said to be a new version, it is one of 'small', and 'small' has nothing left
    with pytest.raises(BudgetExceededError, match="'small'"):
        run(p, tmp_path / "r3", led, NoNoise(), new_version=True)
    assert not (tmp_path / "r2").exists() and not (tmp_path / "r3").exists()


def test_ten_releases_of_a_tenth_fit_a_budget_of_one(tmp_path, data, led):
    """Spec numbers are the decimals written: 10 × ε = 0.1 is exactly a budget of 1.

    TOML's 0.1 is the float 0.1000000000000000055…; charged as such, the tenth release would
    pass the budget by 5.5e-17 ("epsilon: 1 > 1"). Each release runs at the largest float
    not above 1/10 and is charged exactly that, so ten fit and the eleventh does not.
    """
    Ledger(led).set_budget("small", epsilon=1.0, alpha=0.1)
    p = spec(tmp_path, definition="edge-dp", epsilon=0.1)
    for i in range(10):
        res = run(p, tmp_path / f"r{i}", led)
        # the largest float ≤ 1/10 (0.09999999999999999), charged and shown as it is
        # (the float 0.1 lies above 1/10, so that is the float just below it)
        assert res.manifest["privacy"]["total"]["epsilon"] == math.nextafter(0.1, 0.0)
    with pytest.raises(BudgetExceededError, match="epsilon"):
        run(p, tmp_path / "r10", led, NoNoise())
    (entry,) = Ledger(led).show()
    assert entry["spent"]["epsilon"] == 1.0
