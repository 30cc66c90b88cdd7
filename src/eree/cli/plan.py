"""``eree plan``: each query's ε or μ from its accuracy target or a total (docs/planning.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from eree.cli.common import AsJson, Table, console, escape, fail
from eree.errors import EreeError

__all__ = ["plan"]


def _pct(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "—" if x is None else "∞"
    return f"{100 * x:.3g}%"


def unit_of(s: Any) -> str:
    """The representative size's unit: jobs for a count, the attribute's own otherwise."""
    return "jobs" if s.statistic == "jobs" else f"({s.statistic}'s unit)"


def _achieved(s: Any) -> str:
    t = s.target
    if t is None or s.achieved is None:
        return "—"
    if t.kind == "relative_error":
        return f"{s.achieved:.1%} within {100 * t.value:.3g}% (need {t.confidence:.0%})"
    if t.kind == "cv":
        return f"cv {s.achieved:.3g} (need ≤ {t.value:.3g})"
    return f"half-width {s.achieved:.4g} (need ≤ {t.value:.4g})"


def plan(
    spec: Annotated[Path, typer.Argument(help="release spec (TOML) with targets or [plan]")],
    write: Annotated[
        Path | None,
        typer.Option(
            "--write",
            help="write the completed spec (each epsilon or mu filled in) to this new file",
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Choose each query's epsilon (ER-EE) or mu (GEDP) from accuracy targets or a total.

    Reads the spec only: no data, nothing spent. A query's target (e.g. target = {
    relative_error = 0.1, at = 50, confidence = 0.9 }) gets the smallest epsilon or mu that
    meets it; [plan] epsilon = N (or mu) splits a total over the queries to minimise their
    weighted relative error, the targets as floors. Prints what each query gets, what 10%
    more would buy, and the other mechanisms' needs; --write writes the completed spec.

    Example: eree plan release.toml --write release-planned.toml
    """
    from eree.release.completed_spec import completed_spec_text
    from eree.release.planner import plan_budget
    from eree.release.spec import load_spec

    if write is not None and (write.exists() or write.is_symlink()):
        fail(EreeError(f"--write {write} exists: choose a new file name (eree plan never "
                       "overwrites)"))  # fmt: skip
    try:
        p = load_spec(spec)
        result = plan_budget(p)
        text = None
        if write is not None:
            text = completed_spec_text(result, spec.read_text(encoding="utf-8"),
                                       spec.resolve().parent, write.resolve().parent)  # fmt: skip
    except EreeError as e:
        fail(e)
    if text is not None and write is not None:
        try:
            with open(write, "x", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            fail(EreeError(f"cannot write {write}: {e.strerror or type(e).__name__}"))
    if as_json:
        console.print_json(json.dumps(result.to_dict()))
        return
    unit = "ε" if result.parameter == "epsilon" else "μ"
    t = Table(title=f"Plan for {p.name!r} (nothing read, nothing spent)")
    for col in ("query", "statistic", "mechanism", f"{unit} given", f"{unit} planned",
                "target", "at target", "E|error|/at", f"+10% {unit}"):  # fmt: skip
        t.add_column(col)
    for s in result.statistics:
        more = s.curve[3:5]
        plus = "—"
        if len(more) == 2 and math.isfinite(more[0][1]):
            # CURVE_FACTORS: 1.0 then 1.5: the gain per +10% by log-log interpolation
            lo, hi = more
            slope = math.log(hi[1] / lo[1]) / math.log(hi[0] / lo[0]) if hi[1] > 0 else 0.0
            plus = _pct(s.relative_error * 1.1**slope)
        t.add_row(
            escape(s.query), escape(s.statistic), s.mechanism,
            "—" if s.given is None else f"{s.given:g}", f"{s.chosen:g}",
            "—" if s.target is None else escape(s.target.words(unit_of(s))), _achieved(s),
            _pct(s.relative_error), plus,
        )  # fmt: skip
    total = f"{result.total:g}"
    if result.requested_total is not None:
        total += escape(f" of [plan] {result.requested_total:g}")
    t.add_row("[bold]total", "", "", "", total, "", "", "", "")
    console.print(t)
    for s in result.statistics:
        if s.alternatives:
            alts = ", ".join(
                f"{name} {'unreachable' if v is None else f'{v:g}'}" for name, v in s.alternatives
            )
            console.print(f"• {escape(s.query)}: the same target with {alts} ({unit})")
        if s.x_v is not None and s.target is not None:
            console.print(
                f"• {escape(s.query)}: planned for cells whose largest establishment holds "
                f"{s.x_v:g} of {s.at:g} jobs (largest_share {s.target.largest_share:g})"
            )
    for n in result.notes:
        console.print(f"• {escape(n)}")
    if write is not None:
        console.print(f"completed spec: {escape(str(write))}")
