"""The completed spec ``eree plan --write`` writes: the user's spec, each ε or μ filled in.

The spec's own text is kept — comments, order, layout — and only each query's ``epsilon``
(ER-EE family) or ``mu`` (GEDP) is set, with a comment saying it was planned and for
what. Data paths are relative to the spec's folder: written to another folder, the
relative ones are rewritten to point at the same files. tomlkit edits the document in
place (the standard library reads TOML but does not write it); the result is parsed back
by :func:`eree.release.spec.parse_spec` before it is returned, so a completed spec that
would not load is never written.
"""

from __future__ import annotations

import os
from pathlib import Path

import tomlkit

from eree.data.location import is_uri
from eree.errors import SpecError
from eree.release.planner import PlanResult
from eree.release.spec import parse_spec

__all__ = ["completed_spec_text"]


#: the [data] keys that name files (relative to the spec's folder)
DATA_PATH_KEYS = ("workplace", "worker", "job", "jobs", "path")


def completed_spec_text(
    result: PlanResult, source_text: str, base_dir: Path, out_dir: Path | None = None
) -> str:
    """The source spec's text with every planned ε or μ set (checked by parsing it back).

    Args:
        result: the plan.
        source_text: the spec's text.
        base_dir: the spec's folder (its relative data paths start there).
        out_dir: the folder the completed spec goes to (default: ``base_dir``).
    """
    doc = tomlkit.parse(source_text)
    out_dir = base_dir if out_dir is None else out_dir
    data = doc.get("data")
    if data is not None and out_dir.resolve() != base_dir.resolve():
        for key in DATA_PATH_KEYS:
            v = data.get(key)
            if isinstance(v, str) and not is_uri(v) and not Path(v).is_absolute():
                data[key] = os.path.relpath((base_dir / v).resolve(), out_dir.resolve())
    queries = doc.get("query")
    if queries is None:  # pragma: no cover - a parsed plan has queries
        raise SpecError("the spec has no [[query]]")
    by_name = {q.name: q for q in result.plan.queries}
    total = result.total
    for table in queries:
        q = by_name[str(table["name"])]
        planned = [s for s in result.statistics if s.query == q.name and s.planned]
        if not planned:
            continue  # the spec's own values, untouched
        why = "; ".join(
            f"{s.statistic}: {s.target.words()}" if s.target else f"{s.statistic}: its share "
            f"of the [plan] total" for s in planned
        )  # fmt: skip
        if result.parameter == "epsilon":
            table["epsilon"] = q.epsilon
        else:
            mu = tomlkit.inline_table()
            given = dict(table.get("mu", {}))  # the spec's own numbers, as written
            names = {s.statistic for s in planned}
            mu.update({a: (v if a in names else given[a]) for a, v in (q.mu or {}).items()})
            table["mu"] = mu
        table[result.parameter].comment(f"planned by eree plan ({why})")
    doc.add(tomlkit.nl())
    doc.add(tomlkit.comment(
        f"eree plan: the queries' {result.parameter} compose to {total:g} (spends nothing "
        "until eree protect)"
    ))  # fmt: skip
    text = tomlkit.dumps(doc)
    import tomllib

    parse_spec(tomllib.loads(text), out_dir)  # never write a spec that does not load
    return text
