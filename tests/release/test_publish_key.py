"""``[[query]] publish = false``: the identity query answered for pnc's bounds, not written.

Black-box through the command. Expected: the same seeded release with and without the
key publishes the same pnc answers (the bounds come from the same identity answers), the
identity table exists in one only, both charge the identity query's μ (Webb et al. Thm
5.7: μ = √(Σμ²)), and the report's summary says plainly whether values per establishment
are published.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from eree.cli import app

runner = CliRunner()

SPEC = """
name = "publish-key"
[data]
kind = "establishments"
path = "estab.csv"
public = ["grp"]
confidential = ["m1emp"]
[privacy]
definition = "gedp"
neighbor = "sqrt"
distance = {{ m1emp = 0.5 }}
[[query]]
name = "identity"
by = "identity"
mechanism = "psi"
mu = {{ m1emp = 1.0 }}
{publish}
[[query]]
name = "groups"
by = ["grp"]
mechanism = "pnc"
mu = {{ m1emp = 0.5 }}
[pnc]
bounds_from = "identity"
"""


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("publish")
    rng = np.random.default_rng(3)
    pl.DataFrame(
        {
            "primary_key": [f"e{i:04d}" for i in range(400)],
            "grp": [f"g{i % 20:02d}" for i in range(400)],
            "m1emp": rng.integers(1, 200, 400).astype(float),
        }
    ).write_csv(root / "estab.csv")
    out = {}
    for tag, publish in (("shown", ""), ("hidden", "publish = false")):
        (root / f"{tag}.toml").write_text(SPEC.format(publish=publish))
        r = runner.invoke(app, ["protect", str(root / f"{tag}.toml"), "--out",
                                str(root / tag), "--seed", "5"])  # fmt: skip
        assert r.exit_code == 0, r.output
        out[tag] = root / tag
    return out


def test_the_identity_table_is_written_only_when_published(releases: dict[str, Path]) -> None:
    assert (releases["shown"] / "tables" / "identity.parquet").is_file()
    hidden = releases["hidden"]
    assert sorted(p.name for p in (hidden / "tables").iterdir()) == [
        "groups.NOT-FOR-PUBLICATION.csv",
        "groups.parquet",
    ]
    assert not any("identity" in p.name for p in hidden.rglob("*") if p.is_file())
    m = json.loads((hidden / "manifest.json").read_text())
    q = next(q for q in m["queries"] if q["name"] == "identity")
    assert q["file"] is None and q["published"] is False and q["cells"] == 400


def test_the_same_answers_and_the_same_charge(releases: dict[str, Path]) -> None:
    a = pl.read_parquet(releases["shown"] / "tables" / "groups.parquet")
    b = pl.read_parquet(releases["hidden"] / "tables" / "groups.parquet")
    assert a.equals(b)  # the pnc bounds came from the same identity answers
    for tag in ("shown", "hidden"):
        m = json.loads((releases[tag] / "manifest.json").read_text())
        assert m["privacy"]["total"]["mu"] == pytest.approx(math.hypot(1.0, 0.5), rel=1e-15)


def test_the_summary_says_whether_values_per_establishment_are_published(
    releases: dict[str, Path],
) -> None:
    shown = (releases["shown"] / "report.html").read_text()
    hidden = (releases["hidden"] / "report.html").read_text()
    summary = shown.split("In brief", 1)[1].split("</ul>", 1)[0]
    assert "Values per establishment:" in summary
    assert "<b>for each establishment, by its id</b> (400 rows)" in summary
    summary = hidden.split("In brief", 1)[1].split("</ul>", 1)[0]
    assert "no value per establishment is published" in summary
    assert "not written</b> (publish = false)" in hidden


def test_publish_false_is_refused_on_another_query(tmp_path: Path) -> None:
    spec = SPEC.format(publish="").replace(
        'mechanism = "pnc"\n', 'mechanism = "pnc"\npublish = false\n'
    )
    (tmp_path / "s.toml").write_text(spec)
    r = runner.invoke(app, ["protect", str(tmp_path / "s.toml"), "--out",
                            str(tmp_path / "o"), "--seed", "1"])  # fmt: skip
    assert r.exit_code == 2
    assert "publish = false is only for the identity query named by [pnc] bounds_from" in r.output
    assert not (tmp_path / "o").exists()
