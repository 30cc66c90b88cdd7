r"""How many cells each query of a plan publishes, and the guard against too many.

docs/design.md#validation: before cells are allocated, the plan's cell count is computed from the
declared domains and the public frame, and refused past a configurable limit
(``[output] max_cells``) with a message that names the query.

An ER-EE count query over workplace attributes W and worker attributes K has
:math:`F \\cdot D` cells, where :math:`D=\\prod_{a\\in K}|\\mathrm{dom}(a)|` comes from the
declared domains and :math:`F` is the number of workplace combinations: the product of
the declared domains of W with ``complete = true``, otherwise the number of distinct
combinations in the (public) workplace table. Without the data (``eree explain``),
:math:`F` is known only with ``complete = true`` or when W is empty; :math:`D` alone is
still a lower bound. Both numbers are public: domains are declared in the spec, and the
public attributes of establishments are not confidential (docs/design.md#er-ee-data).

Establishment (GEDP) queries publish at most one cell per establishment (group-by cells
come from the public frame), so they are not counted here.

The same counts bound the memory a query's cell table takes: at least
:data:`BYTES_PER_CELL` times its cells (the largest query's table is the peak: tables
are answered one at a time). A query whose table would not fit the memory limit
(``[engine] memory``, else the least of the memory available when the release starts,
``MemAvailable`` in ``/proc/meminfo``, what the process's address-space limit leaves,
``RLIMIT_AS``/``ulimit -v`` less ``VmSize``, and what its control group's memory limit
leaves) is refused before any cell is allocated, instead of the process being killed
while it allocates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from eree.data.config import JobTablesConfig
from eree.errors import SpecError
from eree.release.spec import Plan, QuerySpec

__all__ = [
    "BYTES_PER_CELL",
    "QueryCells",
    "address_space_headroom",
    "available_memory",
    "cgroup_headroom",
    "check_plan_cells",
    "check_plan_memory",
    "memory_limit",
    "parse_size",
    "plan_cells",
]

#: bytes of memory per cell of an ER-EE count query at the least: the cell statistics,
#: the mechanism's noisy answers and the table written. Measured (BENCHMARKS.md, "Memory
#: per cell", benchmarks/bench_cell_memory.py): 124-142 bytes per cell above the
#: process's base for edge-DP Laplace over worker attributes (1M-16M cells), 285 for
#: Smooth Gamma over county x sex; the estimate is a lower bound, so a refusal is never
#: wrong (a query close to the limit may still exhaust memory)
BYTES_PER_CELL = 128

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


@dataclass(frozen=True)
class QueryCells:
    """The cell count of one query.

    Attributes:
        query: the query name.
        cells: the exact number of cells, or None when it depends on the data.
        at_least: a lower bound known without the data (equal to ``cells`` when exact).
        how: how the number was obtained, in words.
    """

    query: str
    cells: int | None
    at_least: int
    how: str

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {"cells": self.cells, "at_least": self.at_least, "how": self.how}


def _query_cells(
    q: QuerySpec, cfg: JobTablesConfig, workplaces: pl.DataFrame | None
) -> QueryCells | None:
    if isinstance(q.by, str):
        return None
    wp = [a for a in q.by if a in cfg.workplace_attributes]
    wk = [a for a in q.by if a in cfg.worker_attributes]
    if len(wp) + len(wk) != len(q.by):  # an unknown attribute: the spec checks report it
        return None
    d = math.prod(len(cfg.domains[a]) for a in wk)
    if not wp:
        return QueryCells(q.name, d, d, "product of the declared worker-attribute domains")
    if q.complete:
        undeclared = [a for a in wp if a not in cfg.domains]
        if undeclared:
            raise SpecError(
                f"query {q.name!r}: complete = true needs a declared domain for "
                f"{', '.join(repr(a) for a in undeclared)} in [data.domains]"
            )
        f = math.prod(len(cfg.domains[a]) for a in wp)
        return QueryCells(q.name, f * d, f * d, "product of the declared domains (complete)")
    if workplaces is None:
        return QueryCells(
            q.name, None, d, "workplace combinations in the data × declared worker domains"
        )
    f = workplaces.select(wp).n_unique()
    return QueryCells(
        q.name, f * d, f * d, "workplace combinations in the data × declared worker domains"
    )


def plan_cells(plan: Plan, workplaces: pl.DataFrame | None = None) -> dict[str, QueryCells]:
    """The cell count of each ER-EE count query of ``plan``.

    Args:
        plan: the release plan.
        workplaces: the loaded (public) workplace table, or None before any data is read.

    Returns:
        Query name → its cell count; establishment plans give an empty mapping.

    Raises:
        SpecError: ``complete = true`` over a workplace attribute without a domain.
    """
    if not isinstance(plan.data, JobTablesConfig):
        return {}
    out = {}
    for q in plan.queries:
        qc = _query_cells(q, plan.data, workplaces)
        if qc is not None:
            out[q.name] = qc
    return out


def check_plan_cells(plan: Plan, workplaces: pl.DataFrame | None = None) -> dict[str, QueryCells]:
    """Refuse a query whose cell count (or its lower bound) exceeds ``[output] max_cells``.

    Called before any data is read (with the lower bounds) and again once the public
    workplace table is loaded, before the engine allocates cells.

    Returns:
        The cell counts of :func:`plan_cells`.

    Raises:
        SpecError: naming the query, its cell count and the limit.
    """
    limit = plan.output.max_cells
    counts = plan_cells(plan, workplaces)
    for qc in counts.values():
        if qc.at_least > limit:
            amount = f"{qc.at_least:,}" if qc.cells is not None else f"at least {qc.at_least:,}"
            raise SpecError(
                f"query {qc.query!r} has {amount} cells ({qc.how}), more than "
                f"[output] max_cells = {limit:,}; publish fewer attributes or raise the limit"
            )
    check_plan_memory(plan, counts)
    return counts


def parse_size(size: str) -> int:
    """Bytes of a JVM-style size: a whole number with an optional k, m, g or t (powers of 1024)."""
    unit = size[-1].lower() if size[-1].isalpha() else ""
    return int(size[: len(size) - len(unit)]) * _UNITS[unit]


def available_memory(meminfo: str = "/proc/meminfo") -> int | None:
    """The memory available to a new allocation now (``MemAvailable``), or None if unknown."""
    try:
        with open(meminfo, encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    kib = line.split()[1]
                    return int(kib) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _status_bytes(field: str, status: str = "/proc/self/status") -> int | None:
    """A ``kB`` field of ``/proc/self/status`` (``VmSize``: the address space in use)."""
    try:
        with open(status, encoding="ascii") as fh:
            for line in fh:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def address_space_headroom() -> int | None:
    """What ``RLIMIT_AS`` (``ulimit -v``) leaves this process: the limit less ``VmSize``."""
    try:
        import resource
    except ImportError:  # not on this platform
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    used = _status_bytes("VmSize")
    return max(int(soft) - (used or 0), 0)


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None  # "max": no limit


def cgroup_headroom(root: str = "/sys/fs/cgroup", own: str = "/proc/self/cgroup") -> int | None:
    """What this process's control group's memory limit leaves: the limit less its usage.

    cgroup v2 (``memory.max`` − ``memory.current`` of the group in ``/proc/self/cgroup``,
    and of each group above it), else v1 (``memory.limit_in_bytes`` −
    ``memory.usage_in_bytes``); None where no limit is set or none can be read.
    """
    base = Path(root)
    try:
        lines = Path(own).read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    heads: list[int] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":  # v2: the group and its ancestors
            group = base / parts[2].lstrip("/")
            for d in [group, *group.parents]:
                if not d.is_relative_to(base):
                    break
                limit, current = _read_int(d / "memory.max"), _read_int(d / "memory.current")
                if limit is not None:
                    heads.append(max(limit - (current or 0), 0))
        elif "memory" in parts[1].split(","):  # v1
            d = base / "memory" / parts[2].lstrip("/")
            for g in (d, base / "memory"):
                limit = _read_int(g / "memory.limit_in_bytes")
                if limit is not None and limit < 1 << 60:  # v1 writes a huge number for none
                    used = _read_int(g / "memory.usage_in_bytes")
                    heads.append(max(limit - (used or 0), 0))
                    break
    return min(heads) if heads else None


def memory_limit() -> tuple[int, str] | None:
    """The memory a release may still allocate, and where that limit comes from.

    The least of: the memory available now (``MemAvailable``), what this process's
    address-space limit leaves (``RLIMIT_AS``, ``ulimit -v``) and what its control
    group's memory limit leaves; None when none is known.
    """
    found = [
        (available_memory(), "the memory available now (MemAvailable in /proc/meminfo)"),
        (address_space_headroom(), "what the process's address-space limit leaves "
         "(RLIMIT_AS, ulimit -v, less the address space in use)"),
        (cgroup_headroom(), "what the process's control group's memory limit leaves "
         "(cgroup memory.max less memory.current)"),
    ]  # fmt: skip
    known = [(n, why) for n, why in found if n is not None]
    return min(known, key=lambda k: k[0]) if known else None


def _gib(n: int) -> str:
    return f"{n / (1 << 30):,.1f} GiB"


def check_plan_memory(plan: Plan, counts: dict[str, QueryCells]) -> None:
    """Refuse a query whose cell table would not fit in memory, before it is allocated.

    The estimate is :data:`BYTES_PER_CELL` times the query's cells (or their lower bound
    before the data are read); the limit is ``[engine] memory``, else
    :func:`memory_limit` (the least of MemAvailable, the address-space limit's and the
    control group's headroom; no check when none is known).

    Raises:
        SpecError: naming the query, the estimate, the limit and its source, and the
            remedies.
    """
    if plan.engine.memory is not None:
        limit: int = parse_size(plan.engine.memory)
        source = f"[engine] memory = {plan.engine.memory!r}"
    else:
        found = memory_limit()
        if found is None:
            return
        limit, source = found
    for qc in counts.values():
        need = qc.at_least * BYTES_PER_CELL
        if need > limit:
            amount = f"{qc.at_least:,}" if qc.cells is not None else f"at least {qc.at_least:,}"
            raise SpecError(
                f"query {qc.query!r} has {amount} cells, whose table needs at least "
                f"{_gib(need)} of memory, more than {_gib(limit)} ({source}); publish fewer "
                "attributes or smaller domains, run on a machine with more memory, or set "
                "[engine] memory to what the release may use"
            )
