"""Complementary suppression: witness LPs on Appendix E and random tables."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from eree.suppression import (
    PrimaryRules,
    SecondaryConfig,
    audit,
    primary_suppression,
    qcew_tables,
    secondary_suppression,
)
from tests.suppression.helpers import (
    E_RULES,
    B,
    C,
    G,
    cell_of,
    random_qcew,
)


def test_appendix_e_eree_secondary_pattern(e_tables) -> None:
    prim = primary_suppression(e_tables, E_RULES)
    sec = secondary_suppression(e_tables, prim)
    assert sec.unprotectable.size == 0
    # value cost: the smaller county (Y) and the smaller sector (11); the total is kept
    assert set(np.flatnonzero(sec.secondary)) == {
        cell_of(e_tables, county="Y"),
        cell_of(e_tables, sector="11"),
    }
    res = audit(e_tables, sec.suppressed, protection=prim.protection)
    assert res.ok  # no recovery: nothing pinned, X and 52 keep their protection
    x = res.bounds.filter(pl.col("cell") == cell_of(e_tables, county="X"))
    assert x["lower"][0] == 0.0 and x["upper"][0] == pytest.approx(B + C + G)


def test_appendix_e_minimal_patterns(e_tables) -> None:
    """Exhaustive search over single complements: only the total works (the attacker
    then learns X = 52 but not its value); the paper's extra County Y is not needed
    against a linear attacker. eree's value cost prefers two small cells to the large
    total (test above); with unit cost the witness LPs tie between the total and a
    county, and the greedy pass may take two cells (a documented limit)."""
    prim = primary_suppression(e_tables, E_RULES)
    works = []
    for j in np.flatnonzero(~prim.primary):
        pattern = prim.primary.copy()
        pattern[j] = True
        if audit(e_tables, pattern, protection=prim.protection).ok:
            works.append(int(j))
    assert works == [cell_of(e_tables)]
    sec = secondary_suppression(e_tables, prim, SecondaryConfig(cost="unit"))
    assert 1 <= sec.secondary.sum() <= 2
    assert audit(e_tables, sec.suppressed, protection=prim.protection).ok


# --------------------------------------------------------------------------------------
# Neighbourhoods, components, lanes
# --------------------------------------------------------------------------------------


def test_neighbourhood_index_gives_the_subtrees() -> None:
    """The sorted-index neighbourhoods are exactly the subtrees of the definition
    (:meth:`LinkedTables.subtree`), for every cell and every number of levels up."""
    from eree.suppression.secondary import _Neighbourhoods

    t = qcew_tables(random_qcew(11, 150), ("m1emp",))
    nb = _Neighbourhoods(t)
    depth = max(len(d.levels) for d in t.layout.dimensions)
    for i in range(t.n_cells):
        for up in range(1, depth + 1):
            got, _ = nb.subtree(i, up)
            assert got.tolist() == np.flatnonzero(t.subtree(i, up)).tolist()


def test_lanes_give_the_same_pattern_on_one_or_two_processes() -> None:
    """Splitting into lanes fixes the pattern; the number of processes does not change
    it, and the pattern still passes the exact audit."""
    t = qcew_tables(random_qcew(12, 400), ("m1emp", "wage"))
    prim = primary_suppression(t, PrimaryRules())
    runs = []
    for workers in (1, 2):
        cfg = SecondaryConfig(lanes=2, round_size=2, parallel_min=1, workers=workers)
        runs.append(secondary_suppression(t, prim, cfg))
    one, two = runs
    assert one.stats["stages"] > 2 and two.stats["workers"] == 2
    assert one.suppressed.tolist() == two.suppressed.tolist()
    assert [w.cell for w in one.witnesses] == [w.cell for w in two.witnesses]
    res = audit(t, two.suppressed, protection=prim.protection, exact=True)
    assert res.ok


def test_every_witness_is_a_direction_of_the_final_pattern() -> None:
    """A y = 0 and y moves suppressed cells only, for every witness returned."""
    from eree.suppression.audit import verify_witnesses

    t = qcew_tables(random_qcew(13, 300), ("m1emp",))
    prim = primary_suppression(t, PrimaryRules())
    sec = secondary_suppression(t, prim)
    assert sec.witnesses
    assert verify_witnesses(t.relations, sec.suppressed, sec.witnesses).all()
    for w in sec.witnesses:
        assert np.abs(t.relations[:, w.cells] @ w.y).max() <= 1e-6 * np.abs(w.y).max()
