"""The table-input format: statuses, intervals, errors naming file, row and column."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from eree.errors import DataValidationError
from eree.evaluate.reconstruct import band_halfwidth, from_frame, read_tables


def _frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "table": ["t", "a", "a", "a", "a"],
            "block": ["b"] * 5,
            "age": [None, "A1", "A2", "A3", "A4"],
            "status": ["exact", "suppressed", "rounded", "range", "noisy"],
            "value": [10.0, None, 5.0, None, 3.0],
            "base": [None, None, 5.0, None, None],
            "lower": [None, None, None, 1.0, None],
            "upper": [None, None, None, 4.0, None],
            "law": [None, None, None, None, "gaussian"],
            "scale": [None, None, None, None, 2.0],
        }
    )


def test_each_status_gives_its_interval() -> None:
    p = from_frame(_frame(), integer=False)
    lo, hi = p.bounds(level=0.9)
    q = 2.0 * 1.6448536269514722  # Gaussian σ = 2, central 90%
    assert lo.tolist()[:4] == [10.0, 0.0, 2.5, 1.0]
    assert hi.tolist()[:4] == [10.0, math.inf, 7.5, 4.0]
    assert lo[4] == 0.0 and hi[4] == pytest.approx(3.0 + q)  # clipped at 0
    lo_i, hi_i = from_frame(_frame()).bounds(level=0.9)  # counts: inward to whole numbers
    assert (lo_i[2], hi_i[2]) == (3.0, 7.0) and (lo_i[4], hi_i[4]) == (0.0, 6.0)
    assert p.tables == {"t": ("block",), "a": ("block", "age")}


def test_band_halfwidths_hold_their_probability() -> None:
    rng = np.random.default_rng(1)
    for law, draw in (
        ("laplace", rng.laplace(0, 3.0, 200_000)),
        ("gaussian", rng.normal(0, 3.0, 200_000)),
    ):
        q = band_halfwidth(law, 3.0, 0.9)
        assert np.mean(np.abs(draw) <= q) == pytest.approx(0.9, abs=0.004)
        # power: a scale 30% off misses the level
        assert abs(np.mean(np.abs(draw) <= 0.7 * q) - 0.9) > 0.05


def test_relations_link_each_table_to_its_nearest_finer_tables() -> None:
    f = pl.DataFrame(
        {
            "table": ["t", "a", "a", "as", "as", "as", "as"],
            "block": ["b"] * 7,
            "age": [None, "1", "2", "1", "1", "2", "2"],
            "sex": [None, None, None, "F", "M", "F", "M"],
            "status": ["exact"] * 7,
            "value": [5.0, 2.0, 3.0, 1.0, 1.0, 3.0, 0.0],
        }
    )
    rel = from_frame(f).derived_relations().toarray()
    vals = f.get_column("value").to_numpy()
    assert np.allclose(rel @ vals, 0.0)
    assert rel.shape == (3, 7)  # t = a1 + a2; a1 = (1,F) + (1,M); a2 = (2,F) + (2,M)


@pytest.mark.parametrize(
    ("change", "row", "column"),
    [
        ({"status": ["exact", "suppressed", "rounded", "range", "fuzzy"]}, 5, "status"),
        ({"value": [10.0, None, None, None, 3.0]}, 3, "value"),
        ({"base": [None, None, -1.0, None, None]}, 3, "base"),
        ({"lower": [None, None, None, None, None]}, 4, "lower"),
        ({"upper": [None, None, None, 0.5, None]}, 4, "upper"),
        ({"scale": [None, None, None, None, None]}, 5, "scale"),
        ({"table": ["t", "t", "a", "a", "a"]}, 2, "table"),
        # the shared-factor group: a published value >= 0 is needed
        ({"factor": [None, "w1", None, None, None]}, 2, "factor"),
        ({"factor": [None, None, None, "w1", None]}, 4, "value"),
        (
            {"factor": [None, None, None, None, "w1"], "value": [10.0, None, 5.0, None, -3.0]},
            5,
            "value",
        ),
    ],
)
def test_bad_input_names_file_row_and_column(tmp_path: Path, change, row, column) -> None:
    path = tmp_path / "cells.csv"
    _frame().with_columns([pl.Series(k, v) for k, v in change.items()]).write_csv(path)
    with pytest.raises(DataValidationError) as e:
        read_tables(path)
    msg = str(e.value)
    assert msg.startswith(f"file {path}, row {row}, column {column!r}") and "\n" not in msg


def test_a_number_that_is_not_one_and_a_missing_column(tmp_path: Path) -> None:
    path = tmp_path / "cells.csv"
    _frame().with_columns(
        pl.col("value").cast(pl.Utf8).fill_null("").replace("5.0", "five")
    ).write_csv(path)
    with pytest.raises(DataValidationError, match=r"row 3, column 'value': not a number"):
        read_tables(path)
    _frame().drop("status").write_csv(path)
    with pytest.raises(DataValidationError, match=r"column 'status': missing"):
        read_tables(path)
    with pytest.raises(DataValidationError, match="no such file"):
        read_tables(tmp_path / "absent.csv")
