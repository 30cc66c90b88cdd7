"""The fingerprint reads text columns' bytes from Arrow buffers: the same bytes as the
values joined in Python (so fingerprints do not change)."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from eree.data.fingerprint import _utf8_bytes


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=6), max_size=40), st.integers(0, 5))
def test_utf8_bytes_are_the_joined_values(values, skip) -> None:
    s = pl.Series(values, dtype=pl.Utf8)
    for t in (s, s.slice(min(skip, len(values))), pl.concat([s, s], rechunk=False)):
        assert bytes(_utf8_bytes(t)) == "".join(t.to_list()).encode("utf-8")
