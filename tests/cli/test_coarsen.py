"""``eree coarsen``: the published tables pass an independent audit; the policy covers it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
from typer.testing import CliRunner

from tests.suppression.helpers import random_qcew


def _cli():
    from eree.cli import app

    return app


def _violations(frame: pl.DataFrame, tables, prim, attribute: str) -> int:
    """Sensitive cells whose interval (the reconstruction audit's LP) misses the rule."""
    from eree.evaluate.reconstruct import from_frame, interval_audit

    part = frame.filter(pl.col("attribute") == attribute).drop("attribute")
    pub = from_frame(part, relations=tables.relations, integer=False)
    res = interval_audit(pub)
    t = tables.values(attribute).astype(float)
    u = prim.protection[attribute]
    ok = (res.lower <= t - np.minimum(u, t) + 1e-6) & (res.upper >= t + u - 1e-6)
    return int((prim.primary & ~ok).sum())


def test_coarsen_writes_audited_tables_that_say_there_is_no_guarantee(tmp_path: Path) -> None:
    from eree.suppression import PrimaryRules, primary_suppression, qcew_tables

    df = random_qcew(8, 150).with_columns(pl.lit("44").alias("state"))
    src = tmp_path / "est.csv"
    df.write_csv(src)
    out = tmp_path / "out"
    r = CliRunner().invoke(
        _cli(), ["coarsen", str(src), "--out", str(out), "--attributes", "m1emp,wage"]
    )
    assert r.exit_code == 0, r.output
    assert "NO FORMAL GUARANTEE" in r.output
    d = out / "44"
    manifest = json.loads((d / "manifest.json").read_text())
    assert manifest["formal_guarantee"] is None
    assert manifest["statement"].startswith("NO FORMAL GUARANTEE")
    assert manifest["audited_risk"]["violations"] == 0
    frame = pl.read_parquet(d / "published.parquet")
    assert set(frame["status"].unique()) <= {"exact", "rounded", "range", "suppressed"}
    # the same tables and rules, rebuilt here; the reconstruction audit's reader and LP
    tables = qcew_tables(df.drop("state"), ("m1emp", "wage"), top=2)
    prim = primary_suppression(tables, PrimaryRules(exempt={"own": ("1",)}), ("m1emp", "wage"))
    assert prim.primary.sum() > 0
    for a in ("m1emp", "wage"):
        part = frame.filter(pl.col("attribute") == a)
        assert part.height == tables.n_cells
        assert part["table_code"].to_list() == tables.cells["table_code"].cast(str).to_list()
        assert _violations(frame, tables, prim, a) == 0
    # every cell exact (the finest publication) would fail the same audit
    exact = frame.with_columns(
        pl.lit("exact").alias("status"),
        pl.Series("value", np.concatenate([tables.values("m1emp"), tables.values("wage")])),
        pl.lit(None, dtype=pl.Float64).alias("base"),
    )
    assert _violations(exact, tables, prim, "m1emp") > 0


def test_coarsen_is_refused_under_a_ledger_policy(tmp_path: Path, monkeypatch) -> None:
    site = tmp_path / "site.toml"
    site.write_text("[release]\nrequire_ledger = true\n")
    monkeypatch.setenv("EREE_SITE_CONFIG", str(site))
    src = tmp_path / "est.csv"
    random_qcew(8, 40).write_csv(src)
    out = tmp_path / "out"
    r = CliRunner().invoke(_cli(), ["coarsen", str(src), "--out", str(out)])
    assert r.exit_code == 2
    assert not out.exists()


def test_suppress_coarsen_and_audit_share_their_rule_options() -> None:
    """The input and disclosure-rule options are declared once (cli/common.py): the same
    names, defaults and help in the three commands."""
    import inspect

    from eree.cli import common
    from eree.cli.audit import audit_suppression
    from eree.cli.coarsen import coarsen
    from eree.cli.suppress import suppress

    shared = {
        "state": common.State, "id_column": common.IdColumn, "attributes": common.Attributes,
        "threshold": common.Threshold, "dominance_k": common.DominanceK,
        "dominance_n": common.DominanceN, "p_percent": common.PPercent,
        "min_protection": common.MinProtection, "exempt_own": common.ExemptOwn,
    }  # fmt: skip
    for command in (suppress, coarsen, audit_suppression):
        sig = inspect.signature(command, eval_str=True)
        for name, declared in shared.items():
            assert sig.parameters[name].annotation == declared, (command.__name__, name)
        defaults = {n: sig.parameters[n].default for n in shared}
        assert defaults == {
            "state": None, "id_column": "primary_key", "attributes": "m1emp,m2emp,m3emp,wage",
            "threshold": 3, "dominance_k": 80.0, "dominance_n": 1, "p_percent": 10.0,
            "min_protection": 1.0, "exempt_own": "1",
        }  # fmt: skip
