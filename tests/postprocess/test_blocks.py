"""Blocks of root cells: a partition of every marginal's cells that keeps subtrees whole."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eree.postprocess.blocks import block_rows, local_parent_index


def _tree(rng: np.random.Generator, n_root: int, fan: list[int]):
    """A chain root → m1 → m2 …: each level's cells get a random parent in the level above,
    cells of one parent not contiguous (shuffled), as real tables' rows are."""
    sizes = {"m0": n_root}
    parent: dict[str, str | None] = {"m0": None}
    index: dict[str, np.ndarray] = {}
    prev = "m0"
    for i, f in enumerate(fan, start=1):
        name = f"m{i}"
        n = sizes[prev] * f
        index[name] = rng.permutation(np.repeat(np.arange(sizes[prev]), f))[:n]
        parent[name] = prev
        sizes[name] = n
        prev = name
    # a second child of the root: a branch
    index["b1"] = rng.integers(0, n_root, 3 * n_root)
    parent["b1"] = "m0"
    sizes["b1"] = 3 * n_root
    return parent, index, sizes


def _root_of(parent, index, name, rows):
    while parent[name] is not None:
        rows = index[name][rows]
        name = parent[name]
    return rows


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_root=st.integers(1, 30),
       budget=st.integers(1, 400))  # fmt: skip
def test_blocks_partition_the_cells_and_keep_every_subtree_whole(seed, n_root, budget):
    rng = np.random.default_rng(seed)
    parent, index, sizes = _tree(rng, n_root, [2, 3])
    blocks = block_rows(parent, index, sizes, budget)
    seen = {n: np.zeros(s, dtype=int) for n, s in sizes.items()}
    last_root = -1
    for b in blocks:
        roots = set()
        for n, rows in b.items():
            assert np.all(np.diff(rows) > 0)  # increasing rows
            seen[n][rows] += 1
            roots.update(_root_of(parent, index, n, rows).tolist())
            if parent[n] is not None:  # the parent of every cell is in the same block
                assert np.isin(index[n][rows], b[parent[n]]).all()
        # a block is a run of consecutive root cells after the previous block's
        assert min(roots, default=last_root + 1) == last_root + 1
        assert roots == set(range(last_root + 1, last_root + 1 + len(roots)))
        last_root += len(roots)
        cells = sum(len(r) for r in b.values())
        assert cells <= budget or len(b["m0"]) == 1  # within budget, or one root cell
    for n in sizes:
        assert (seen[n] == 1).all()  # every cell in exactly one block
    # greedy: no two neighbouring blocks fit together in the budget
    totals = [sum(len(r) for r in b.values()) for b in blocks]
    assert all(a + c > budget for a, c in itertools.pairwise(totals))


def test_one_block_when_everything_fits():
    rng = np.random.default_rng(3)
    parent, index, sizes = _tree(rng, 5, [2])
    [block] = block_rows(parent, index, sizes, 10**6)
    for n, s in sizes.items():
        np.testing.assert_array_equal(block[n], np.arange(s))


def test_local_parent_index_points_at_the_same_parent_cell():
    rng = np.random.default_rng(4)
    parent, index, sizes = _tree(rng, 12, [4])
    for b in block_rows(parent, index, sizes, 20):
        local = local_parent_index(b["m1"], b["m0"], index["m1"])
        np.testing.assert_array_equal(b["m0"][local], index["m1"][b["m1"]])


def test_a_block_holds_at_least_one_cell():
    with pytest.raises(ValueError):
        block_rows({"a": None}, {}, {"a": 3}, 0)
