"""The ``eree`` command: thin over the library (DESIGN.md §7.1)."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperCommand, TyperGroup

from eree.errors import EreeError

if TYPE_CHECKING:  # pragma: no cover
    from typer._click.core import Command, Context


class _LazyGroup(TyperGroup):
    """A command group whose experiment commands are imported on first use.

    The experiment modules (and through them SciPy and plotting) take most of a second to
    import; DESIGN.md §1 wants them imported only when an experiment runs. The group
    lists a lazy command by name with a fixed one-line help and imports the real command
    only when it is resolved (run, or asked for its own ``--help``).
    """

    #: command name -> one-line help shown in the parent's listing before loading
    lazy_help: ClassVar[dict[str, str]] = {}
    #: the Typer app this group was built from (set by :func:`_lazy_typer`)
    source: ClassVar[typer.Typer | None] = None

    _loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        _register_experiments()
        if self.source is not None:
            built = typer.main.get_group(self.source)
            for name, cmd in built.commands.items():
                self.commands.setdefault(name, cmd)

    def list_commands(self, ctx: Context) -> list[str]:
        names = list(super().list_commands(ctx))
        if not self.lazy_help:  # a group made only of experiments
            self._load()
            return list(super().list_commands(ctx))
        return names + [n for n in self.lazy_help if n not in names]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if cmd_name in self.lazy_help and cmd_name not in self.commands:
            return TyperCommand(cmd_name, help=self.lazy_help[cmd_name])
        if not self.lazy_help and cmd_name not in self.commands:
            self._load()
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        if args and (args[0] in self.lazy_help or not self.lazy_help):
            self._load()
        return super().resolve_command(ctx, args)


def _lazy_typer(lazy_help: dict[str, str] | None = None, **kwargs: Any) -> typer.Typer:
    """A Typer app built as a :class:`_LazyGroup` that knows its own source app."""
    t = typer.Typer(**kwargs)
    t.info.cls = type("_Lazy", (_LazyGroup,), {"lazy_help": dict(lazy_help or {}), "source": t})
    return t


app = _lazy_typer(
    {
        "suppress": "Cell suppression, the current QCEW practice: primary rules, complementary "
        "suppression over the linked tables (HiGHS), and the attacker's LP audit."
    },
    help="Formally private releases of employer-employee and establishment statistics.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
synth_app = typer.Typer(help="Generate synthetic input data.", no_args_is_help=True)
app.add_typer(synth_app, name="synth")
evaluate_app = _lazy_typer(
    help="Reproduce the papers' experiments (tidy CSV, figures, HTML report).",
    no_args_is_help=True,
)
app.add_typer(evaluate_app, name="evaluate")
audit_app = _lazy_typer(help="Privacy audits: attacks on today's methods.", no_args_is_help=True)
app.add_typer(audit_app, name="audit")

console = Console()
err_console = Console(stderr=True)


def _fail(e: Exception) -> None:
    err_console.print(f"[bold red]error:[/] {escape(str(e))}", soft_wrap=True)
    raise typer.Exit(code=2)


def _noise(seed: int | None, random_mode: str) -> Any:
    from eree.mechanisms.noise import make_noise_source

    try:
        return make_noise_source(random_mode, seed)
    except ValueError as e:
        _fail(e)


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def print_cost_table(explained: dict[str, Any]) -> None:
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
            t.add_row(q["query"], q["mechanism"], _fmt(c["mu"]), q["guarantee"])
        else:
            t.add_row(
                q["query"], q["mechanism"], _fmt(c["epsilon"]), _fmt(c["delta"]),
                str(q["multiplicity"]), q["guarantee"],
            )  # fmt: skip
    tot = priv["total"]
    if gedp:
        t.add_row("[bold]total", "", f"{tot['mu']:.2f} ({tot['mu']:.4f})", "")
    else:
        t.add_row("[bold]total", "", _fmt(tot["epsilon"]), _fmt(tot["delta"]), "",
                  escape(priv.get("guarantee", "")))  # fmt: skip
    console.print(t)
    for note in priv.get("notes", []):
        console.print(f"• {escape(note)}")


def print_cells(cells: dict[str, Any]) -> None:
    """One line per count query: its number of cells, or its lower bound without data."""
    if not cells:
        return
    console.print("[bold]Cells per query[/] (limit: [output] max_cells)")
    for name, c in cells.items():
        amount = f"{c['cells']:,}" if c["cells"] is not None else f"≥ {c['at_least']:,}"
        console.print(f"  {escape(name)}: {amount} ({escape(c['how'])})")


def print_semantics(sem: dict[str, Any]) -> None:
    for line in sem.get("statements", []):
        console.print(f"  {escape(line)}")
    for extra in sem.get("tables", []):
        t = Table(title=extra["title"])
        for col in extra["columns"]:
            t.add_column(str(col))
        for row in extra["rows"]:
            t.add_row(*[_fmt(x) for x in row])
        console.print(t)


@app.command()
def explain(
    spec: Annotated[Path, typer.Argument(help="release spec (TOML)")],
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of tables")] = False,
) -> None:
    """Budget and semantics of a release spec, from the plan alone (no data is read).

    Example: eree explain release.toml
    """
    from eree.release.protect import explain as explain_plan
    from eree.release.spec import load_spec

    try:
        explained = explain_plan(load_spec(spec))
    except EreeError as e:
        _fail(e)
        return
    if as_json:
        console.print_json(json.dumps(explained, default=str))
        return
    print_cost_table(explained)
    print_cells(explained.get("cells", {}))
    console.print("[bold]What this guarantees[/]")
    print_semantics(explained["semantics"])


@app.command()
def protect(
    spec: Annotated[Path, typer.Argument(help="release spec (TOML)")],
    out: Annotated[Path, typer.Option("--out", help="output directory (must not exist)")],
    seed: Annotated[
        int | None, typer.Option(help="seeded randomness: reproducible, NOT FOR PUBLICATION")
    ] = None,
    random_mode: Annotated[
        str, typer.Option("--random", help="secure (default) | exact (OpenDP samplers)")
    ] = "secure",
    ledger: Annotated[
        Path | None, typer.Option(help="budget ledger (SQLite); refuses overspending")
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option(help="polars | spark (default: the spec's [engine] kind, else polars)"),
    ] = None,
) -> None:
    """Run one release: protected tables and a manifest in OUT.

    Example: eree protect release.toml --out release-2026q1
    """
    from dataclasses import replace

    from eree.release.output import check_output_dir
    from eree.release.protect import protect as run
    from eree.release.spec import ENGINE_KINDS, load_spec

    source = _noise(seed, random_mode)
    try:
        plan = load_spec(spec)
        if engine is not None:
            if engine not in ENGINE_KINDS:
                _fail(ValueError(f"--engine must be one of {', '.join(ENGINE_KINDS)}"))
            plan = replace(plan, engine=replace(plan.engine, kind=engine))
        check_output_dir(out)
        with console.status("releasing…"), warnings.catch_warnings():
            # numpy's overflow warnings: a non-finite result is refused with an error
            warnings.simplefilter("ignore", RuntimeWarning)
            result = run(plan, out, source, ledger=ledger)
    except OSError as e:  # the file system's message names paths, never data values
        _fail(EreeError(f"cannot write the release: {e.strerror or type(e).__name__} ({out})"))
        return
    except EreeError as e:
        _fail(e)
        return
    _print_release(result.manifest, result.out_dir)


def _print_release(manifest: dict[str, Any], out_dir: Path) -> None:
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
            q["file"],
            q["mechanism"],
            str(q["cells"]),
            _fmt(c.get("epsilon")),
            _fmt(c.get("delta")),
            _fmt(c.get("mu")),
        )
    tot = manifest["privacy"]["total"]
    t.add_row(
        "[bold]total", manifest["privacy"]["definition"], "", _fmt(tot["epsilon"]),
        _fmt(tot["delta"]), _fmt(tot["mu"]),
    )  # fmt: skip
    console.print(t)
    for q in manifest["queries"]:
        for note in q.get("notes", []):
            console.print(f"• {q['name']}: {escape(note)}")
    console.print(f"manifest: {out_dir / 'manifest.json'}")


@synth_app.command("lodes")
def synth_lodes(
    out: Annotated[Path, typer.Option("--out", help="output directory")],
    wac: Annotated[
        Path | None, typer.Option(help="LODES WAC file (csv/csv.gz); parametric if absent")
    ] = None,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    scale: Annotated[float, typer.Option(help="multiply the number of jobs")] = 1.0,
    jobs: Annotated[int, typer.Option(help="jobs of the parametric generator")] = 50_000,
) -> None:
    """LODES-like workplace, worker and job tables.

    Example: eree synth lodes --wac pa_wac_S000_JT00_2015.csv.gz --out pa --seed 1
    """
    from eree.synth.lodes import synth_from_wac, synth_parametric

    try:
        with console.status("generating…"):
            if wac is not None:
                s = synth_from_wac(wac, seed=seed, scale=scale)
            else:
                s = synth_parametric(seed=seed, n_jobs=int(jobs * scale))
            s.write(out)
    except (EreeError, OSError) as e:
        _fail(e)
        return
    console.print(
        f"wrote {s.workplace.height:,} workplaces, {s.worker.height:,} workers, "
        f"{s.job.height:,} jobs to {out}"
    )


@synth_app.command("qcew")
def synth_qcew(
    out: Annotated[Path, typer.Option("--out", help="output file (.csv, .csv.gz or .parquet)")],
    qcew_area: Annotated[
        Path | None,
        typer.Option("--qcew-area", help="directory of QCEW 'by area' files; parametric if absent"),
    ] = None,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    establishments: Annotated[
        int, typer.Option(help="establishments of the parametric generator")
    ] = 25_000,
) -> None:
    """QCEW-like establishment microdata (one row per establishment, the Syn-RI schema).

    Example: eree synth qcew --qcew-area ../shared/data/qcew_2016_by_area --out syn.csv.gz
    """
    from eree.synth.qcew import synth_qcew_from_area, synth_qcew_parametric

    try:
        with console.status("generating…"):
            if qcew_area is not None:
                s = synth_qcew_from_area(qcew_area, seed=seed)
            else:
                s = synth_qcew_parametric(seed=seed, n_establishments=establishments)
            s.write(out)
    except (EreeError, OSError) as e:
        _fail(e)
        return
    console.print(f"wrote {s.establishments.height:,} establishments to {out}")


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", help="output directory")] = Path("eree-demo"),
    seed: Annotated[
        int | None, typer.Option(help="seed the release noise (NOT FOR PUBLICATION)")
    ] = None,
) -> None:
    """The main job on built-in synthetic data: synthesise, release, report.

    Example: eree demo --out eree-demo
    """
    from eree.demo import run_demo

    try:
        summary = run_demo(out, seed=seed, console=console, on_release=_print_release)
    except EreeError as e:
        _fail(e)
        return
    console.print(f"[bold green]demo finished[/] in {summary['seconds']:.1f} s")
    for k, v in summary["outputs"].items():
        console.print(f"  {k}: {v}")


def _bound(func: Any, **fixed: Any) -> Any:
    """``func`` with some parameters fixed, as a Typer command without those parameters."""
    import functools
    import inspect

    sig = inspect.signature(func, eval_str=True)

    @functools.wraps(func)
    def command(**kwargs: Any) -> Any:
        return func(**fixed, **kwargs)

    command.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[p for name, p in sig.parameters.items() if name not in fixed]
    )
    command.__annotations__ = {k: v for k, v in func.__annotations__.items() if k not in fixed}
    return command


_registered = False


def _register_experiments() -> None:
    """Register the experiment commands (imports the experiment modules; once)."""
    global _registered
    if _registered:
        return
    _registered = True
    from eree.evaluate import cli as ecli
    from eree.evaluate import suppression_cli as scli

    for name in ("haney-workload1", "haney-workload2", "haney-workload3", "haney-ranking1",
                 "haney-ranking2", "haney-all"):  # fmt: skip
        evaluate_app.command(name, help=ecli.evaluate.__doc__)(
            _bound(ecli.evaluate, experiment=name)
        )
    from eree.evaluate.webb import evaluate_webb
    from eree.evaluate.workshop import workshop_figure1_command

    for name in ("webb-table11", "webb-table3", "webb-figures", "webb-figure9", "webb-all"):
        evaluate_app.command(name, help=evaluate_webb.__doc__)(
            _bound(evaluate_webb, experiment=name)
        )

    evaluate_app.command("workshop-figure1", help=workshop_figure1_command.__doc__)(
        workshop_figure1_command
    )
    audit_app.command("noise-infusion", help=ecli.audit.__doc__)(
        _bound(ecli.audit, target="noise-infusion")
    )
    audit_app.command("suppression", help=scli.audit_suppression.__doc__)(scli.audit_suppression)
    app.command("suppress", help=scli.suppress.__doc__)(scli.suppress)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:  # pragma: no cover
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    main()
