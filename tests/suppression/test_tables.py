"""Linked tables: tabulation, additivity relations, layouts."""

from __future__ import annotations

import polars as pl
import pytest

from eree.errors import DataValidationError
from eree.suppression import (
    qcew_layout,
    qcew_tables,
)
from eree.suppression.tables import Dimension, TableLayout
from tests.suppression.helpers import (
    A,
    B,
    C,
    F,
    G,
    cell_of,
    random_qcew,
)


def test_appendix_e_tables(e_tables) -> None:
    t = e_tables
    assert t.n_cells == 7  # total, 3 counties, 3 sectors
    assert t.n_relations == 2  # total = Σ counties = Σ sectors
    assert t.values("wage")[cell_of(t)] == B + C + G + F + A
    assert t.values("wage")[cell_of(t, county="Y")] == C + G
    assert t.values("wage")[cell_of(t, sector="11")] == A + G
    assert t.check_additivity("wage") == 0.0


def test_qcew_tables_structure_and_additivity() -> None:
    df = random_qcew(3, 300)
    t = qcew_tables(df, ["m1emp", "wage"])
    for a in ("m1emp", "wage"):
        assert t.check_additivity(a) < 1e-12
    codes = set(t.cells["table_code"].to_list())
    assert codes == {str(c) for c in (*range(50, 59), *range(70, 79))}
    state = t.cells.filter(pl.col("table_code") == "50")
    assert state["establishments"][0] == 300
    assert state["m1emp"][0] == pytest.approx(df["m1emp"].sum())
    # QCEW sector codes and the domain level
    assert "31-33" in t.cells.filter(pl.col("table_code") == "54")["industry"].to_list()
    assert set(t.cells.filter(pl.col("table_code") == "52")["industry"]) == {"101", "102"}
    # the largest contributions
    c = t.cells.filter(pl.col("table_code") == "50")
    assert c["m1emp__x1"][0] == df["m1emp"].max()


def test_tabulate_rejects_bad_input() -> None:
    df = random_qcew(4, 20).with_columns(pl.lit(-1.0).alias("m1emp"))
    with pytest.raises(DataValidationError):
        qcew_tables(df, ["m1emp"])
    with pytest.raises(DataValidationError):
        qcew_tables(random_qcew(4, 20).drop("cnty"), ["m1emp"])
    bad = random_qcew(4, 20).with_columns(pl.lit("999").alias("naics3"))
    with pytest.raises(DataValidationError):
        qcew_tables(bad, ["m1emp"])


def test_layout_validation() -> None:
    with pytest.raises(ValueError):
        Dimension("d", (("a", "col"),))
    with pytest.raises(ValueError):
        TableLayout((Dimension("d", (("t", None), ("a", "a"))),), (("nope",),))
    assert len(qcew_layout(domain=False).tables) == 16
