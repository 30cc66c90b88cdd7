"""``eree suppress`` and ``eree audit suppression``."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import polars as pl
import typer
from typer.testing import CliRunner

from tests.suppression.helpers import (
    random_qcew,
)


def _cli() -> typer.Typer:
    from eree.cli import app

    return app


def _owner_only(path: Path) -> bool:
    return stat.S_IMODE(path.stat().st_mode) & 0o077 == 0


def test_cli_suppress_and_audit(tmp_path: Path) -> None:
    df = random_qcew(8, 150).with_columns(pl.lit("44").alias("state"))
    # a distinctive confidential value that must never reach the screen
    df = df.with_columns(
        pl.when(pl.col("primary_key") == "0").then(987654.0).otherwise(pl.col("wage")).alias("wage")
    )
    src = tmp_path / "est.csv"
    df.write_csv(src)
    out = tmp_path / "out"
    runner = CliRunner()
    r = runner.invoke(
        _cli(), ["suppress", str(src), "--out", str(out), "--attributes", "m1emp,wage"]
    )
    assert r.exit_code == 0, r.output
    assert "987654" not in r.output
    d = out / "44"
    for f in ("published.parquet", "published.csv", "rates.csv", "summary.json"):
        assert (d / f).exists(), f
    # confidential files: only in internal/, owner-only (docs/design.md#what-may-be-published)
    for f in ("pattern.parquet", "audit.parquet"):
        assert not (d / f).exists(), f
        assert (d / "internal" / f).exists(), f
        assert _owner_only(d / "internal" / f), f
    assert _owner_only(d / "internal")
    summary = json.loads((d / "summary.json").read_text())
    assert summary["audit"]["ok"] and "987654" not in (d / "summary.json").read_text()
    # existing output directory: refused, nothing overwritten
    r = runner.invoke(_cli(), ["suppress", str(src), "--out", str(out)])
    assert r.exit_code == 2
    # audit the published table
    r = runner.invoke(
        _cli(),
        [
            "audit",
            "suppression",
            str(src),
            "--published",
            str(d / "published.parquet"),
            "--attributes",
            "m1emp,wage",
            "--out",
            str(tmp_path / "aud"),
        ],
    )
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "aud" / "summary.json").read_text())[0]["ok"]
    assert _owner_only(tmp_path / "aud" / "internal" / "audit.parquet")
    # primary only: cells pinned
    args = ["audit", "suppression", str(src), "--primary-only", "--attributes", "m1emp"]
    r = runner.invoke(_cli(), [*args, "--out", str(tmp_path / "aud2")])
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "aud2" / "summary.json").read_text())[0]["ok"] is False


def test_cli_interrupt_keeps_the_finished_states(tmp_path: Path, monkeypatch) -> None:
    """Ctrl-C during the second state: the first state's files stay, marked."""
    import eree.suppression as supp

    one = random_qcew(8, 120).with_columns(pl.lit("44").alias("state"))
    two = random_qcew(9, 120).with_columns(
        pl.lit("10").alias("state"), ("b" + pl.col("primary_key")).alias("primary_key")
    )
    src = tmp_path / "est.csv"
    pl.concat([one, two]).write_csv(src)
    real = supp.suppress_establishments
    calls = []

    def interrupted_second(frame, cfg, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(frame, cfg, **kw)

    monkeypatch.setattr(supp, "suppress_establishments", interrupted_second)
    out = tmp_path / "out"
    r = CliRunner().invoke(
        _cli(),
        ["suppress", str(src), "--out", str(out), "--no-audit", "--attributes", "m1emp,wage"],
    )
    assert r.exit_code == 130, r.output
    assert (out / "10" / "published.parquet").exists()  # states run in code order
    assert not (out / "44").exists()
    assert "10" in (out / "INTERRUPTED").read_text()
