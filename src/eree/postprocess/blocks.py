r"""Independent blocks of a tree of released marginals: cells grouped by their root cell.

See docs/design.md#post-processing.

On a tree (or forest) of marginals, the consistent solution of
:func:`eree.postprocess.hierarchy.publication_grade` of a cell depends only on the
measurements in its **root cell's subtree**: the bottom-up pass combines a cell with its
children only, and the top-down pass splits a parent's final value over its children
only. So the problem is a set of independent problems, one per root cell, and any
grouping of root cells into **blocks** solves it exactly as a whole would: every cell
gets the value the whole problem gives it. A release solves one block at a time, so its
memory is that of the largest block, not of every cell at once (national tables: tens of
millions of cells).

A block is every marginal's cells under a run of consecutive root cells, cut so that a
block holds at most ``budget`` cells (a single root cell with a larger subtree is a block
of its own). The cut is a function of the tree and the cell counts only — public.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["block_rows", "local_parent_index", "unit_block_rows"]


def _depth(parent: Mapping[str, str | None], name: str) -> int:
    p = parent[name]
    return 0 if p is None else 1 + _depth(parent, p)


def block_rows(
    parent: Mapping[str, str | None],
    parent_index: Mapping[str, np.ndarray],
    sizes: Mapping[str, int],
    budget: int,
) -> list[dict[str, np.ndarray]]:
    """Every block's cells: per block, per marginal, the rows (increasing) it holds.

    Args:
        parent: the forest (:func:`~eree.postprocess.hierarchy.marginal_forest`).
        parent_index: per non-root marginal, each cell's row in its parent marginal.
        sizes: every marginal's number of cells.
        budget: the most cells (all marginals together) a block holds, unless one root
            cell's subtree alone holds more.

    Returns:
        The blocks in order of their root cells; each marginal's cells are in exactly one
        block.
    """
    if budget < 1:
        raise ValueError("a block holds at least one cell")
    order = sorted(parent, key=lambda n: _depth(parent, n))
    roots = [n for n in order if parent[n] is None]
    offset: dict[str, int] = {}
    n_roots = 0
    for r in roots:
        offset[r] = n_roots
        n_roots += sizes[r]
    root_of: dict[str, np.ndarray] = {}  # each cell's root cell (numbered over all roots)
    for n in order:
        p = parent[n]
        if p is None:
            root_of[n] = np.arange(offset[n], offset[n] + sizes[n], dtype=np.int64)
        else:
            root_of[n] = root_of[p][parent_index[n]]
    out = unit_block_rows(root_of, n_roots, budget)
    return out


def unit_block_rows(
    unit_of: Mapping[str, np.ndarray], n_units: int, budget: int
) -> list[dict[str, np.ndarray]]:
    """Every block's cells, given each cell's independent unit (consecutive units a block).

    ``unit_of``: per marginal, each cell's unit (0 … n_units − 1): on a tree its root cell;
    on a lattice its geographic unit at the coarsest geography every marginal determines
    (no constraint joins two such units). A block takes units in order while its cells
    (all marginals together) stay within ``budget``, and at least one unit. Consumes
    ``unit_of`` (each marginal's labels are dropped once its rows are split).
    """
    if budget < 1:
        raise ValueError("a block holds at least one cell")
    names = list(unit_of)
    per_unit = np.zeros(n_units, dtype=np.int64)
    for n in names:
        per_unit += np.bincount(unit_of[n], minlength=n_units)
    # greedy over the units in order: a block takes units while its cells stay within the
    # budget, and at least one (few blocks: a loop over blocks is cheap)
    end = np.cumsum(per_unit)  # cells up to and including each unit
    block_of_unit = np.zeros(n_units, dtype=np.int64)
    first, block = 0, 0
    while first < n_units:
        base = int(end[first] - per_unit[first])
        last = max(int(np.searchsorted(end, base + budget, side="right")) - 1, first)
        block_of_unit[first : last + 1] = block
        first, block = last + 1, block + 1
    n_blocks = int(block_of_unit.max()) + 1 if n_units else 1
    out: list[dict[str, np.ndarray]] = [{} for _ in range(n_blocks)]
    for n in names:
        b = block_of_unit[unit_of[n]]
        rows = np.argsort(b, kind="stable")
        counts = np.bincount(b, minlength=n_blocks)
        for i, part in enumerate(np.split(rows, np.cumsum(counts)[:-1])):
            out[i][n] = part
        if isinstance(unit_of, dict):
            del unit_of[n]
    return out


def local_parent_index(
    child_rows: np.ndarray, parent_rows: np.ndarray, parent_index: np.ndarray
) -> np.ndarray:
    """The child's cells' parent rows within the block (rows of ``parent_rows``).

    Every parent of a block's child cell is in the same block (it has the same root cell).
    """
    local = np.searchsorted(parent_rows, parent_index[child_rows])
    return local.astype(np.int64)
