"""Tests of eree.data.io: typed reading and the reusable row checks (docs/design.md#validation)."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import polars as pl
import pytest

from eree.data.io import (
    check_domain,
    check_nonnegative_finite,
    check_not_missing,
    check_unique,
    first_true,
    read_header,
    read_table,
    table_format,
)
from eree.errors import DataValidationError

CSV = "id,kind,amount,count\n007,a,1.5,3\n008,b,2,4\n009,a,0,5\n"
TYPES = {"id": pl.Utf8, "kind": pl.Utf8, "amount": pl.Float64, "count": pl.Int64}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(p, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


# ---------------------------------------------------------------- happy paths


@pytest.mark.parametrize("name", ["t.csv", "t.csv.gz", "t.parquet"])
def test_read_table_types_and_order(tmp_path: Path, name: str) -> None:
    if name.endswith(".parquet"):
        p = tmp_path / name
        pl.read_csv(_write(tmp_path, "src.csv", CSV), infer_schema=False).with_columns(
            pl.col("amount").cast(pl.Float64), pl.col("count").cast(pl.Int32)
        ).write_parquet(p)
    else:
        p = _write(tmp_path, name, CSV)
    df = read_table(p, {"count": pl.Int64, "id": pl.Utf8, "amount": pl.Float64})
    assert df.columns == ["count", "id", "amount"]
    assert df.schema == {"count": pl.Int64, "id": pl.Utf8, "amount": pl.Float64}
    assert df["id"].to_list() == ["007", "008", "009"]  # ids are strings: no lost zeros
    assert df["count"].to_list() == [3, 4, 5]
    assert df["amount"].to_list() == [1.5, 2.0, 0.0]


def test_parquet_integer_ids_become_strings(tmp_path: Path) -> None:
    p = tmp_path / "x.parquet"
    pl.DataFrame({"id": [10, 20], "v": [1.0, 2.0]}).write_parquet(p)
    df = read_table(p, {"id": pl.Utf8, "v": pl.Int64})
    assert df["id"].to_list() == ["10", "20"]
    assert df["v"].to_list() == [1, 2]


def test_optional_columns(tmp_path: Path) -> None:
    p = _write(tmp_path, "t.csv", CSV)
    df = read_table(p, {"id": pl.Utf8}, optional={"count": pl.Int64, "nope": pl.Utf8})
    assert df.columns == ["id", "count"]


def test_blank_line_is_kept_as_a_missing_row(tmp_path: Path) -> None:
    p = _write(tmp_path, "t.csv", "id,v\n1,2\n\n3,4\n")
    df = read_table(p, {"id": pl.Utf8, "v": pl.Int64})
    assert df.height == 3  # nothing dropped
    with pytest.raises(DataValidationError) as ei:
        check_not_missing(df, ["id"], p, rule="missing-id")
    assert (ei.value.row, ei.value.column, ei.value.rule) == (2, "id", "missing-id")


def test_table_format() -> None:
    assert table_format("a/b.CSV.GZ") == "csv"
    assert table_format("b.parquet") == "parquet"
    with pytest.raises(DataValidationError) as ei:
        table_format("b.xlsx")
    assert ei.value.rule == "file-type"


def test_read_header(tmp_path: Path) -> None:
    assert read_header(_write(tmp_path, "t.csv.gz", CSV)) == ["id", "kind", "amount", "count"]


# ---------------------------------------------------------------- malformed input


def test_type_error_names_row_and_column_not_value(tmp_path: Path) -> None:
    p = _write(tmp_path, "t.csv", "id,count\n1,3\n2,4\n3,SECRET7\n")
    with pytest.raises(DataValidationError) as ei:
        read_table(p, {"id": pl.Utf8, "count": pl.Int64})
    e = ei.value
    assert (e.file, e.row, e.column, e.rule) == (str(p), 3, "count", "type")
    assert "SECRET7" not in str(e)


def test_type_error_float_is_not_truncated_to_int(tmp_path: Path) -> None:
    p = tmp_path / "t.parquet"
    pl.DataFrame({"n": [1.0, 2.0, 2.75]}).write_parquet(p)
    with pytest.raises(DataValidationError) as ei:
        read_table(p, {"n": pl.Int64})
    assert (ei.value.row, ei.value.column, ei.value.rule) == (3, "n", "type")
    assert "2.75" not in str(ei.value)


def test_type_error_float_ids(tmp_path: Path) -> None:
    p = tmp_path / "t.parquet"
    pl.DataFrame({"id": [1.5, 2.0]}).write_parquet(p)
    with pytest.raises(DataValidationError) as ei:
        read_table(p, {"id": pl.Utf8})
    assert (ei.value.file, ei.value.column, ei.value.rule) == (str(p), "id", "type")


def test_missing_column_with_suggestion(tmp_path: Path) -> None:
    p = _write(tmp_path, "t.csv", CSV)
    with pytest.raises(DataValidationError) as ei:
        read_table(p, {"id": pl.Utf8, "amont": pl.Float64})
    e = ei.value
    assert (e.file, e.row, e.column, e.rule) == (str(p), None, "amont", "missing-column")
    assert "did you mean 'amount'" in str(e)


def test_duplicate_header_column(tmp_path: Path) -> None:
    p = _write(tmp_path, "t.csv", "id,v,v\n1,2,3\n")
    with pytest.raises(DataValidationError) as ei:
        read_table(p, {"id": pl.Utf8})
    assert (ei.value.column, ei.value.rule) == ("v", "duplicate-column")


def test_ragged_row_is_located_and_not_printed(tmp_path: Path) -> None:
    p = _write(tmp_path, "t.csv", "id,v\n1,2\n2,3\n3,4,SECRET9\n")
    with pytest.raises(DataValidationError) as ei:
        read_table(p, {"id": pl.Utf8, "v": pl.Utf8})
    assert (ei.value.row, ei.value.rule) == (3, "field-count")
    assert "SECRET9" not in str(ei.value)


def test_bad_quoting_is_not_echoed(tmp_path: Path) -> None:
    p = _write(tmp_path, "t.csv", 'id,v\n1,"SECRET5\n2,3\n')
    with pytest.raises(DataValidationError) as ei:
        read_table(p, {"id": pl.Utf8, "v": pl.Int64})
    assert ei.value.file == str(p)
    assert "SECRET5" not in str(ei.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataValidationError) as ei:
        read_table(tmp_path / "nope.csv", {"id": pl.Utf8})
    assert ei.value.rule == "file-missing"


def test_empty_file(tmp_path: Path) -> None:
    p = _write(tmp_path, "t.csv", "")
    with pytest.raises(DataValidationError) as ei:
        read_table(p, {"id": pl.Utf8})
    assert ei.value.rule == "empty"


# ---------------------------------------------------------------- row checks


@pytest.mark.parametrize(
    ("values", "row", "rule"),
    [
        ([1.0, -12345.678, 2.0], 2, "negative"),
        ([1.0, 2.0, math.nan], 3, "not-finite"),
        ([math.inf, 2.0, 3.0], 1, "not-finite"),
        ([1.0, None, -12345.678], 2, "missing-value"),
    ],
)
def test_check_nonnegative_finite(values: list[float | None], row: int, rule: str) -> None:
    df = pl.DataFrame(
        {"ok": [1.0, 2.0, 3.0], "wage": values}, schema_overrides={"wage": pl.Float64}
    )
    with pytest.raises(DataValidationError) as ei:
        check_nonnegative_finite(df, ["ok", "wage"], "f.csv")
    e = ei.value
    assert (e.file, e.row, e.column, e.rule) == ("f.csv", row, "wage", rule)
    assert "12345" not in str(e)


def test_check_nonnegative_finite_accepts_valid_and_integers() -> None:
    df = pl.DataFrame({"a": [0.0, 1.5], "b": [0, 7]})
    check_nonnegative_finite(df, ["a", "b"], "f.csv")
    with pytest.raises(DataValidationError) as ei:
        check_nonnegative_finite(pl.DataFrame({"b": [0, -4]}), ["b"], "f.csv", row_offset=10)
    assert (ei.value.row, ei.value.rule) == (12, "negative")


def test_check_nonnegative_finite_rejects_text() -> None:
    with pytest.raises(DataValidationError) as ei:
        check_nonnegative_finite(pl.DataFrame({"b": ["1"]}), ["b"], "f.csv")
    assert ei.value.rule == "type"


def test_check_not_missing_blank_string() -> None:
    df = pl.DataFrame({"id": ["a", "  ", "c"]})
    with pytest.raises(DataValidationError) as ei:
        check_not_missing(df, ["id"], "f.csv", rule="missing-id")
    assert (ei.value.row, ei.value.column) == (2, "id")


def test_check_unique_reports_second_occurrence_and_first_row() -> None:
    df = pl.DataFrame({"id": ["a", "b", "c", "b", "a"]})
    with pytest.raises(DataValidationError) as ei:
        check_unique(df, "id", "f.csv")
    e = ei.value
    assert (e.row, e.column, e.rule) == (4, "id", "duplicate-id")
    assert "first in row 2" in str(e)
    check_unique(pl.DataFrame({"id": ["a", "b"]}), "id", "f.csv")


def test_check_domain_lists_domain_not_value() -> None:
    df = pl.DataFrame({"sex": ["M", "F", "QZX", "M"]})
    with pytest.raises(DataValidationError) as ei:
        check_domain(df, "sex", ("M", "F"), "w.csv")
    e = ei.value
    assert (e.file, e.row, e.column, e.rule) == ("w.csv", 3, "sex", "domain")
    assert "QZX" not in str(e)
    assert "(M, F)" in str(e)
    with pytest.raises(DataValidationError) as ei:
        check_domain(pl.DataFrame({"sex": ["M", None]}), "sex", ("M", "F"), "w.csv")
    assert ei.value.row == 2
    check_domain(df.head(2), "sex", ("M", "F"), "w.csv")


def test_first_true() -> None:
    assert first_true(pl.Series([False, None, True, True])) == 2
    assert first_true(pl.Series([False, None])) is None
    assert first_true(pl.Series([], dtype=pl.Boolean)) is None


def _strict_records(p: Path, width: int) -> int | None:
    """Records of a CSV as Python's strict reader sees them; None if it refuses the file."""
    import csv as pycsv

    opener = gzip.open if p.name.endswith(".gz") else open
    with opener(p, "rt", encoding="utf-8-sig", newline="") as fh:
        rows = list(pycsv.reader(fh, strict=True))[1:]
    if any(r and len(r) != width for r in rows):
        return None
    return len(rows)


@pytest.mark.parametrize("gz", [False, True])
def test_vectorised_record_check_agrees_with_the_strict_reader(tmp_path: Path, gz: bool) -> None:
    """Quote-free CSVs: the vectorised check counts the same records as the strict reader
    and refuses (hands over) exactly the files with a ragged record; files it cannot
    decide (quotes, lone carriage returns) are handed over too."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    import eree.data.io as io_mod

    field = st.text(alphabet="ab1é ;", max_size=3)
    line = st.lists(field, min_size=1, max_size=4).map(",".join)
    ends = st.sampled_from(["\n", "\r\n"])

    @settings(max_examples=150, deadline=None)
    @given(st.lists(st.tuples(line, ends), max_size=12), st.booleans(), st.booleans())
    def check(lines, final_newline, bom) -> None:
        text = "h1,h2,h3" + "\n" + "".join(a + e for a, e in lines)
        if not final_newline:
            text = text.rstrip("\r\n")
        if bom:
            text = "\ufeff" + text
        p = tmp_path / ("t.csv.gz" if gz else "t.csv")
        raw = text.encode("utf-8")
        p.write_bytes(gzip.compress(raw) if gz else raw)
        assert io_mod._records_fast(p, 3) == _strict_records(p, 3)

    old = io_mod._BLOCK
    io_mod._BLOCK = 7  # many blocks: records split across block boundaries
    try:
        check()
    finally:
        io_mod._BLOCK = old
    for text in ('h1,h2,h3\n"a,b",c\n', "h1,h2,h3\na,b\rc,d\n"):
        p = tmp_path / "q.csv"
        p.write_text(text, newline="")
        assert io_mod._records_fast(p, 3) is None
    p.write_bytes(b"h1,h2,h3\n\xff,b,c\n")  # not UTF-8
    assert io_mod._records_fast(p, 3) is None
