"""Cell suppression next to a GEDP release."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from eree.suppression import (
    SuppressionConfig,
    suppress_establishments,
)


@pytest.mark.slow
def test_compare_with_gedp_small_state() -> None:
    from eree.evaluate.suppression_compare import compare_with_gedp
    from eree.synth.qcew import synth_qcew_parametric

    est = synth_qcew_parametric(seed=3, n_establishments=3000, n_counties=4).establishments
    res = suppress_establishments(est, SuppressionConfig(attributes=("m3emp", "wage")))
    cmp = compare_with_gedp(est, res, trials=1, seed=1)
    row = cmp.filter(pl.col("table_code") == "all", pl.col("attribute") == "m3emp")

    def val(method: str, metric: str, cells: str = "all") -> float:
        r = row.filter(
            pl.col("method") == method, pl.col("metric") == metric, pl.col("cells") == cells
        )
        return float(r["value"][0])

    assert val("gedp", "share_cells_published") == 1.0
    assert val("suppression", "share_cells_published") < 1.0
    assert np.isfinite(val("gedp", "mean_abs_error"))
    st = cmp.filter(
        pl.col("table_code") == "50",
        pl.col("attribute") == "m3emp",
        pl.col("method") == "gedp",
        pl.col("metric") == "median_rel_error",
    )
    assert float(st["value"][0]) < 0.01  # the state total is accurate
