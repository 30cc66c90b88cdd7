"""Cell suppression end to end on establishment microdata."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from eree.errors import DataValidationError
from eree.suppression import (
    PrimaryRules,
    SecondaryConfig,
    SuppressionConfig,
    suppress_establishments,
)
from tests.suppression.helpers import (
    SYN_RI,
    need,
    random_qcew,
)


@pytest.mark.parametrize("seed", [5, 6])
def test_pipeline_protects_every_primary_cell(seed: int) -> None:
    df = random_qcew(seed, 200)
    cfg = SuppressionConfig(
        attributes=("m1emp", "wage"),
        rules=PrimaryRules(exempt={"own": ("3",)}),
        secondary=SecondaryConfig(keep_tables=("50", "70")),
    )
    res = suppress_establishments(df, cfg)
    assert res.primary.primary.any() and res.secondary is not None
    assert res.secondary.unprotectable.size == 0
    assert res.audit is not None and res.audit.ok
    codes = res.tables.cells["table_code"].to_numpy()
    assert not res.suppressed[res.primary.exempt].any()
    assert not res.secondary.secondary[np.isin(codes, ["50", "70"])].any()
    # the published table withholds exactly the suppressed cells
    pub = res.published()
    assert (pub["m1emp"].is_null().to_numpy() == res.suppressed).all()
    assert ((pub["disclosure_code"] == "N").to_numpy() == res.suppressed).all()
    s = res.summary()
    assert s["suppressed"] == int(res.suppressed.sum()) and s["audit"]["ok"]
    json.dumps(s)
    # without complements, the attacker pins primary cells down
    skip = suppress_establishments(
        df, SuppressionConfig(attributes=("m1emp",), skip_secondary=True)
    )
    assert skip.audit is not None and not skip.audit.ok


def test_pipeline_rejects_several_states() -> None:
    df = random_qcew(7, 30).with_columns(pl.Series("state", ["44"] * 15 + ["10"] * 15))
    with pytest.raises(DataValidationError):
        suppress_establishments(df, SuppressionConfig(attributes=("m1emp",)))


@pytest.mark.shared_data
def test_syn_ri_subset_suppression() -> None:
    df = pl.read_csv(need(SYN_RI), infer_schema_length=10_000)
    df = df.filter(pl.col("cnty") == 1)  # one county (1,102 establishments): fast
    res = suppress_establishments(df, SuppressionConfig(attributes=("m3emp",)))
    assert res.audit is not None and res.audit.ok
    assert 0.2 < res.suppressed.mean() < 0.9
