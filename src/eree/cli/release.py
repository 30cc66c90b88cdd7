"""``eree explain``, ``eree validate`` and ``eree protect``: one release, from its spec.

Also the printing of a release (its cost table, cells, semantics, accuracy preview,
warnings and summary), which ``eree demo`` shares.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer

from eree.cli.common import (
    AsJson,
    Force,
    Out,
    Table,
    check_out,
    console,
    err_console,
    escape,
    fail,
    table_value,
)
from eree.errors import EreeError, ReleaseWarning


def _noise(seed: int | None, random_mode: str) -> Any:
    from eree.mechanisms.noise import make_noise_source

    try:
        return make_noise_source(random_mode, seed)
    except ValueError as e:
        fail(e)


def print_cost_table(explained: dict[str, Any]) -> None:
    """Print the privacy cost of an explained plan: one row per query, the total, then the notes."""
    priv = explained["privacy"]
    gedp = priv["definition"] == "gedp"
    t = Table(title=f"Privacy cost of plan {explained['plan']!r} ({priv['definition']})")
    cols = ("query", "mechanism", "μ", "guarantee") if gedp else (
        "query", "mechanism", "ε", "δ", "d", "guarantee")  # fmt: skip
    for col in cols:
        t.add_column(col, overflow="fold")
    for q in priv["queries"]:
        c = q["cost"]
        if gedp:
            t.add_row(q["query"], q["mechanism"], table_value(c["mu"]), q["guarantee"])
        else:
            t.add_row(
                q["query"], q["mechanism"], table_value(c["epsilon"]), table_value(c["delta"]),
                str(q["multiplicity"]), q["guarantee"],
            )  # fmt: skip
    tot = priv["total"]
    if gedp:
        t.add_row("[bold]total", "", f"{tot['mu']:.2f} ({tot['mu']:.4f})", "")
    else:
        t.add_row("[bold]total", "", table_value(tot["epsilon"]), table_value(tot["delta"]), "",
                  escape(priv.get("guarantee", "")))  # fmt: skip
    console.print(t)
    for note in priv.get("notes", []):
        console.print(f"• {escape(note)}")


def print_cells(cells: dict[str, Any]) -> None:
    """One line per count query: its number of cells, or its lower bound without data."""
    if not cells:
        return
    console.print("[bold]Cells per query[/] (limit: \\[output] max_cells)")
    for name, c in cells.items():
        amount = f"{c['cells']:,}" if c["cells"] is not None else f"≥ {c['at_least']:,}"
        console.print(f"  {escape(name)}: {amount} ({escape(c['how'])})")


def print_semantics(sem: dict[str, Any]) -> None:
    """Print the semantics statements of an explained plan, then their tables."""
    for line in sem.get("statements", []):
        console.print(f"  {escape(line)}")
    for extra in sem.get("tables", []):
        t = Table(title=extra["title"])
        for col in extra["columns"]:
            t.add_column(str(col))
        for row in extra["rows"]:
            t.add_row(*[table_value(x) for x in row])
        console.print(t)


def _num(v: Any) -> str:
    """A preview number for humans: thousands separators, 3 significant digits."""
    if v is None:
        return "—"
    if isinstance(v, float) and v == float("inf"):
        return "∞"
    if isinstance(v, int):
        return f"{v:,}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _finite(obj: Any) -> Any:
    """``obj`` with ±inf and NaN as the strings "inf", "-inf", "nan" (strict JSON has none)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def print_preview(pv: dict[str, Any]) -> None:
    """The accuracy preview (one table per query and statistic), then the warnings."""
    console.print("[bold]Accuracy preview[/] (representative sizes, public information only; "
                  "see docs/accuracy-preview.md)")  # fmt: skip
    for q in pv["queries"]:
        title = f"{q['query']}: {q['statistic']} ({q['mechanism']})"
        t = Table(title=escape(title), title_justify="left")
        for col in q["columns"]:
            t.add_column(escape(col), justify="right")
        for row in q["rows"]:
            t.add_row(*[_num(v) for v in row])
        console.print(t)
        tg = q.get("target")
        if tg is not None:
            verdict = "[bold green]met[/]" if tg["met"] else "[bold red]not met[/]"
            console.print(f"  target: {escape(tg['words'])} — {verdict}")
        be = q.get("break_even")
        if be is not None and be >= 1:
            below = "every size" if be == float("inf") else _num(be)
            console.print(f"  noise std exceeds the value below {below}")
        for note in q["notes"]:
            console.print(f"  [dim]{escape(note)}[/]")
    print_warnings(pv["warnings"])


def print_warnings(warns: list[dict[str, Any]]) -> None:
    """Each warning with what to change."""
    for w in warns:
        code = escape(f"[{w['code']}]")
        console.print(f"[bold yellow]warning[/] {code} {escape(w['message'])}", soft_wrap=True)
        console.print(f"  → {escape(w['remedy'])}", soft_wrap=True)


def explain(
    spec: Annotated[Path, typer.Argument(help="release spec (TOML)")],
    as_json: AsJson = False,
) -> None:
    """Budget and semantics of a release spec, from the plan alone (no data is read).

    Example: eree explain release.toml
    """
    from eree.release.protect import explain as explain_plan
    from eree.release.spec import load_spec

    try:
        explained = explain_plan(load_spec(spec))
    except EreeError as e:
        fail(e)
    if as_json:
        console.print_json(json.dumps(_finite(explained), default=str, allow_nan=False))
        return
    print_cost_table(explained)
    print_cells(explained.get("cells", {}))
    console.print("[bold]What this guarantees[/]")
    print_semantics(explained["semantics"])
    print_preview(explained["preview"])


def validate(
    spec: Annotated[Path, typer.Argument(help="release spec (TOML)")],
    no_data: Annotated[
        bool, typer.Option("--no-data", help="check the spec and its paths, read no data")
    ] = False,
    all_columns: Annotated[
        bool,
        typer.Option(
            "--all-columns",
            help="kept for scripts of earlier versions: every configured column is "
            "checked, as every `protect` reads them",
        ),
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Check a spec, its paths and its data; print the accuracy preview. Spends nothing.

    Reads the data through the same loader as `eree protect` and the same columns, every
    configured one (every check of a release: it accepts and refuses what `eree protect`
    does, with or without --ledger, with the same message), writes nothing and touches
    no ledger. Prints no value of the data: only whether it
    passed, and the file, row and column of a problem. Exit code 0 when valid (warnings
    allowed), 2 on any problem.

    Example: eree validate examples/pa-lodes.toml
    """
    from eree.release.validate import validate_plan

    try:
        result = validate_plan(spec, read_data=not no_data, all_columns=all_columns)
    except OSError as e:  # the file system's message names paths, never data values
        fail(EreeError(f"cannot read the input: {e.strerror or type(e).__name__} "
                       f"({getattr(e, 'filename', '') or spec})"))  # fmt: skip
    except EreeError as e:
        fail(e)
    if as_json:
        console.print_json(json.dumps(_finite(result), default=str, allow_nan=False))
        return
    for line in result["checks"]:
        console.print(f"[bold green]ok[/] {escape(line)}")
    print_cost_table(result["explain"])
    print_preview(result["explain"]["preview"])
    console.print(f"[bold green]valid[/]: {escape(str(spec))} (nothing spent, nothing written)")


def protect(
    spec: Annotated[Path, typer.Argument(help="release spec (TOML)")],
    out: Out,
    seed: Annotated[
        int | None, typer.Option(help="seeded randomness: reproducible, NOT FOR PUBLICATION")
    ] = None,
    random_mode: Annotated[
        str, typer.Option("--random", help="secure (the default; float-safe for every mechanism)")
    ] = "secure",
    ledger: Annotated[
        Path | None,
        typer.Option(help="budget ledger (SQLite): charges the release, refuses overspending"),
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option(help="polars | spark (default: the spec's [engine] kind, else polars)"),
    ] = None,
    master: Annotated[
        str | None,
        typer.Option(
            help="Spark master URL (local[N], spark://host:port, yarn, k8s://…); overrides "
            "the spec's [spark] master"
        ),
    ] = None,
    conf: Annotated[
        list[str] | None,
        typer.Option(
            "--conf",
            help="a Spark setting KEY=VALUE (repeatable), added to the spec's [spark.conf]",
        ),
    ] = None,
    new_version: Annotated[
        bool,
        typer.Option("--new-version", help="the data under this name changed on purpose"),
    ] = False,
    force: Force = False,
) -> None:
    """Run one release: protected tables and a manifest in OUT.

    With --ledger, the dataset must have been registered by an administrator
    (`eree ledger budget`); the release is charged to its lifetime budget. A release is
    written atomically (an interrupted run writes nothing). --force replaces an earlier
    unpublished output of eree; it never replaces a release recorded in a ledger, and a
    release charged to a ledger always goes to a new or empty folder.

    Example: eree protect release.toml --out release-2026q1 --ledger budget.sqlite
    """
    from dataclasses import replace

    from eree.engine.select import ENGINES
    from eree.release.protect import protect as run
    from eree.release.spec_coarsening import CoarseningPlan, load_release_spec

    check_out(out, force)
    if force and ledger is not None and out.is_dir() and any(out.iterdir()):
        fail(EreeError(
            f"output folder {out} is not empty: a release charged to a ledger is written only "
            "to a new or empty folder (--force does not apply)"
        ))  # fmt: skip
    if seed is not None and ledger is not None:
        fail(EreeError(
            "seeded randomness is never charged as a release: --seed cannot be combined with "
            "--ledger (a seeded release is NOT FOR PUBLICATION)"
        ))  # fmt: skip
    source = _noise(seed, random_mode)
    try:
        plan = load_release_spec(spec)
        if engine is not None:
            if engine not in ENGINES:
                fail(ValueError(f"--engine must be one of {', '.join(ENGINES)}"))
            plan = replace(plan, engine=replace(plan.engine, kind=engine))
            if engine != "spark" and plan.spark.given:
                err_console.print(
                    escape(
                        f"note: --engine {engine}: the spec's Spark settings "
                        f"({', '.join(plan.spark.given)}) are not used"
                    ),
                    soft_wrap=True,
                )
                plan = replace(plan, spark=replace(plan.spark, given=()))
        if master is not None or conf:
            plan = replace(plan, spark=_spark_options(plan.spark, master, conf or []))
        if isinstance(plan, CoarseningPlan):
            _coarsening(plan, out, seed, ledger, new_version, force)
            return
        with err_console.status("releasing…"), warnings.catch_warnings():
            # numpy's overflow warnings: a non-finite result is refused with an error;
            # the release's own warnings are printed below, not as Python warnings
            warnings.simplefilter("ignore", RuntimeWarning)
            warnings.simplefilter("ignore", ReleaseWarning)
            result = run(plan, out, source, ledger=ledger, new_version=new_version, force=force)
    except OSError as e:  # the file system's message names paths, never data values
        fail(EreeError(f"cannot write the release: {e.strerror or type(e).__name__} ({out})"))
    except EreeError as e:
        fail(e)
    except MemoryError:  # past the estimate (a lower bound): the release is removed
        fail(EreeError(
            "the release ran out of memory (the cell estimate is a lower bound); publish "
            "fewer attributes or smaller domains, run with more memory, or set [engine] "
            "memory to what the release may use"
        ))  # fmt: skip
    print_release(result.manifest, result.out_dir)


def _coarsening(
    plan: Any, out: Path, seed: int | None, ledger: Path | None, new_version: bool, force: bool
) -> None:
    """``eree protect`` of a coarsening spec (:mod:`eree.release.coarsening`)."""
    from eree.release.coarsening import coarsening_release

    if new_version:
        raise EreeError(
            "--new-version applies to a release charged to a ledger; a coarsening release is "
            "never charged"
        )
    with err_console.status("coarsening…") as status, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a non-finite result is an error
        result = coarsening_release(
            plan,
            out,
            seed=seed,
            ledger=ledger,
            force=force,
            progress=None if status is None else status.update,
        )
    print_coarsening(result.manifest, result.out_dir)


def print_coarsening(manifest: dict[str, Any], out_dir: Path) -> None:
    """Print what a coarsening release wrote: the statement first, its audited risk, files."""
    from eree.release.coarsening_common import merged_groups

    if manifest["random"]["mode"] == "seeded":
        console.print("[bold yellow]seeded random rounding: NOT FOR PUBLICATION[/]")
    p = manifest["protection"]
    console.print(f"[bold yellow]{escape(p['statement'])}[/]", soft_wrap=True)
    t = Table(title=escape(f"Coarsened release {manifest['dataset']['name']!r} → {out_dir}"))
    for col in ("state", "attribute", "cells", "published", "exact", "rounded", "suppressed",
                "loss", "violations", "pinned"):  # fmt: skip
        t.add_column(col, justify="right")
    risk = manifest["audited_risk"]["per_state"]
    for st, v in manifest["summary"].items():
        for a, s in v["attributes"].items():
            b, au = s["by_status"], risk[st][a]
            t.add_row(
                escape(st), escape(a), str(s["cells"]), str(s["cells_published"]), str(b["exact"]),
                str(b["rounded"] + b["random_rounded"]), str(b["suppressed"]),
                f"{s['information_loss']:.3f}", str(au["violations"]), str(au["cells_pinned"]),
            )  # fmt: skip
    console.print(t)
    console.print(f"rounding: {escape(p['rounding_meaning'])}", soft_wrap=True)
    groups = merged_groups(p)
    if groups:
        console.print(f"merged (members not published): {escape(groups)}", soft_wrap=True)
    console.print(f"ledger: {escape(manifest['ledger']['statement'])}", soft_wrap=True)
    console.print(f"manifest: {out_dir / 'manifest.json'}")
    console.print(f"report:   {out_dir / 'report.html'}")


def _spark_options(spec: Any, master: str | None, conf: list[str]) -> Any:
    """The spec's ``[spark]`` with ``--master`` and ``--conf`` applied (checked as the spec's)."""
    from dataclasses import replace

    from eree.engine.spark.settings import check_conf, check_master

    pairs: dict[str, str] = {}
    for item in conf:
        key, eq, value = item.partition("=")
        if not eq:
            raise EreeError(f"--conf {key}: give a Spark setting as KEY=VALUE")
        pairs[key.strip()] = value
    return replace(
        spec,
        master=spec.master if master is None else check_master(master, "--master"),
        conf={**spec.conf, **check_conf(pairs, "--conf")},
        given=(
            *spec.given,
            *(["--master"] if master is not None else []),
            *(["--conf"] if conf else []),
        ),
    )


def print_release(manifest: dict[str, Any], out_dir: Path) -> None:
    """Print what a release wrote: its tables and cost, notes, warnings, ledger row, files."""
    rnd = manifest["random"]
    if rnd["mode"] == "seeded":
        console.print(
            f"[bold yellow]seeded randomness (seed {rnd['seed']}): NOT FOR PUBLICATION[/]"
        )
    t = Table(title=f"Release {manifest['dataset']['name']!r} → {out_dir}")
    for col in ("table", "mechanism", "cells", "ε", "δ", "μ"):
        t.add_column(col)
    for q in manifest["queries"]:
        c = q.get("cost") or {}
        t.add_row(
            q["file"] or f"{q['name']} (not written: publish = false)",
            q["mechanism"],
            str(q["cells"]),
            table_value(c.get("epsilon")),
            table_value(c.get("delta")),
            table_value(c.get("mu")),
        )
    tot = manifest["privacy"]["total"]
    t.add_row(
        "[bold]total", manifest["privacy"]["definition"], "", table_value(tot["epsilon"]),
        table_value(tot["delta"]), table_value(tot["mu"]),
    )  # fmt: skip
    console.print(t)
    if manifest["privacy"]["definition"] == "none":
        console.print(
            "[bold yellow]no formal privacy guarantee:[/] input noise infusion (today's "
            "method) bounds nothing an attacker can learn; do not publish this as a private "
            "release"
        )
    for q in manifest["queries"]:
        for note in q.get("notes", []):
            console.print(f"• {q['name']}: {escape(note)}")
    print_warnings(manifest.get("warnings", []))
    led = manifest.get("ledger")
    if led:
        for note in led.get("notes", []):
            console.print(f"[bold yellow]ledger:[/] {escape(note)}")
        console.print(f"ledger row {led['id']} (dataset {led['dataset']!r}, version "
                      f"{led['version']})")  # fmt: skip
        lb = led.get("lifetime_budget")
        if lb:
            left = ", ".join(f"{k} {table_value(v)}" for k, v in lb["remaining"].items())
            after = ", ".join(f"{k} {table_value(v)}" for k, v in (lb["spent_after"] or {}).items())
            budget = ", ".join(f"{k} {table_value(v)}" for k, v in lb["budget"].items())
            of = lb.get("dataset") or led["dataset"]
            whose = "" if of == led["dataset"] else f" of {of!r}"
            console.print(f"lifetime budget{escape(whose)}: spent {escape(after)} of "
                          f"{escape(budget)}; remaining {escape(left)}")  # fmt: skip
    console.print(f"manifest: {out_dir / 'manifest.json'}")
    if (out_dir / "report.html").is_file():
        console.print(f"report:   {out_dir / 'report.html'}")
