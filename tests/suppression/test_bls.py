"""BLS's own pattern in the real QCEW files, next to eree's."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from eree.data.qcew import read_qcew_area_files
from eree.suppression import (
    PrimaryRules,
    SecondaryConfig,
    SuppressionConfig,
    audit,
    suppress_establishments,
)
from tests.suppression.helpers import (
    QCEW_DIR,
    need,
)


@pytest.mark.shared_data
def test_bls_relations_hold_in_the_real_ri_file() -> None:
    """Every relation of the linked tables whose cells BLS all published adds up
    exactly in the real RI 2016 Q1 file: the attacker's model is the real one."""
    from eree.suppression.bls import bls_linked_tables

    t, s = bls_linked_tables(read_qcew_area_files(need(QCEW_DIR)), "44")
    full = np.asarray(abs(t.relations)[:, np.flatnonzero(s)].sum(axis=1)).ravel() == 0
    assert full.sum() > 2000
    for a in t.attributes:
        assert np.abs(t.relations[full] @ t.values(a)).max() == 0.0
    assert 0.45 < s.mean() < 0.6  # BLS withholds about half the cells


@pytest.mark.slow
@pytest.mark.shared_data
def test_bls_publication_audit_pins_cells() -> None:
    """The attacker's LPs on BLS's own RI 2016 Q1 publication recover suppressed cells
    exactly (see docs/cell-suppression.md); eree's own pattern pins none."""
    from eree.suppression.bls import bls_linked_tables

    t, s = bls_linked_tables(read_qcew_area_files(need(QCEW_DIR)), "44", attributes=("wage",))
    res = audit(t, s, values_known=False)
    pinned = res.pinned
    assert pinned.height > 0
    small = t.counts()[pinned["cell"].to_numpy()] < 3
    assert small.sum() > 0


@pytest.mark.slow
@pytest.mark.shared_data
def test_ri_synthesised_from_bls_files_next_to_bls_rates() -> None:
    from eree.suppression.bls import bls_cells, compare_with_bls
    from eree.synth.qcew import synth_qcew_from_area

    est = synth_qcew_from_area(need(QCEW_DIR), seed=1).establishments
    ri = est.filter(pl.col("state") == 44)
    cfg = SuppressionConfig(
        rules=PrimaryRules(exempt={"own": ("1",)}),
        secondary=SecondaryConfig(keep_tables=("50", "51", "70")),
    )
    res = suppress_establishments(ri, cfg)
    assert res.audit is not None and res.audit.ok  # nothing pinned in eree's pattern
    cmp = compare_with_bls(res, bls_cells(read_qcew_area_files(QCEW_DIR), "44"))
    total = cmp.filter(pl.col("table_code") == "all").row(0, named=True)
    assert total["bls_cells_only"] == 0 and total["eree_cells_only"] == 0
    assert abs(total["eree_suppressed_share"] - total["bls_suppressed_share"]) < 0.05
