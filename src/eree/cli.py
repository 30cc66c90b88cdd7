"""The ``eree`` command: thin over the library (DESIGN.md §7.1)."""

from __future__ import annotations

import json
import math
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup

from eree.clikit import Force, LazyConsole, Quiet, Table, check_out, escape, plain_call
from eree.errors import EreeError, ReleaseWarning

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
        return _verbatim_examples(super().get_command(ctx, cmd_name))

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        if args and (args[0] in self.lazy_help or not self.lazy_help):
            self._load()
        return super().resolve_command(ctx, args)


def _verbatim_examples(cmd: Any) -> Any:
    r"""Keep each command's ``Example:`` line unwrapped in its help (click's ``\\b`` mark).

    A wrapped example cannot be copied and run; click re-wraps every paragraph except one
    that starts with a ``\\b`` line. Applied to a command and, for a group, to its
    commands.
    """
    if cmd is None:
        return cmd
    help_text = getattr(cmd, "help", None)
    if help_text and "\n\nExample: " in help_text:
        cmd.help = help_text.replace("\n\nExample: ", "\n\n\b\nExample: ")
    for sub in getattr(cmd, "commands", {}).values():
        _verbatim_examples(sub)
    return cmd


def _lazy_typer(lazy_help: dict[str, str] | None = None, **kwargs: Any) -> typer.Typer:
    """A Typer app built as a :class:`_LazyGroup` that knows its own source app."""
    kwargs.setdefault("rich_markup_mode", None)  # plain help: Rich costs --help ~0.3 s
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
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from eree import __version__

        typer.echo(f"eree {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="print the version and exit"
        ),
    ] = False,
) -> None:
    """Formally private releases of employer-employee and establishment statistics."""


synth_app = typer.Typer(
    help="Generate synthetic input data.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(synth_app, name="synth")
evaluate_app = _lazy_typer(
    help="Reproduce the papers' experiments (tidy CSV, figures, HTML report).",
    no_args_is_help=True,
)
app.add_typer(evaluate_app, name="evaluate")
audit_app = _lazy_typer(help="Privacy audits: attacks on today's methods.", no_args_is_help=True)
app.add_typer(audit_app, name="audit")
ledger_app = typer.Typer(
    help="The privacy-budget ledger: register budgets, show spending, verify the chain.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(ledger_app, name="ledger")

# Rich is imported on first output to a terminal, not for --help (which must stay fast);
# output to a pipe or a file is plain text (eree.clikit)
console: Any = LazyConsole()
err_console: Any = LazyConsole(stderr=True)


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
            t.add_row(*[_fmt(x) for x in row])
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
        console.print_json(json.dumps(_finite(explained), default=str, allow_nan=False))
        return
    print_cost_table(explained)
    print_cells(explained.get("cells", {}))
    console.print("[bold]What this guarantees[/]")
    print_semantics(explained["semantics"])
    print_preview(explained["preview"])


@app.command()
def validate(
    spec: Annotated[Path, typer.Argument(help="release spec (TOML)")],
    no_data: Annotated[
        bool, typer.Option("--no-data", help="check the spec and its paths, read no data")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of tables")] = False,
) -> None:
    """Check a spec, its paths and its data; print the accuracy preview. Spends nothing.

    Reads the data through the same loader as `eree protect` (every check of a release),
    writes nothing and touches no ledger. Prints no value of the data: only whether it
    passed, and the file, row and column of a problem. Exit code 0 when valid (warnings
    allowed), 2 on any problem.

    Example: eree validate examples/pa-lodes.toml
    """
    from eree.release.validate import validate_plan

    try:
        result = validate_plan(spec, read_data=not no_data)
    except OSError as e:  # the file system's message names paths, never data values
        _fail(EreeError(f"cannot read the input: {e.strerror or type(e).__name__} "
                        f"({getattr(e, 'filename', '') or spec})"))  # fmt: skip
        return
    except EreeError as e:
        _fail(e)
        return
    if as_json:
        console.print_json(json.dumps(_finite(result), default=str, allow_nan=False))
        return
    for line in result["checks"]:
        console.print(f"[bold green]ok[/] {escape(line)}")
    print_cost_table(result["explain"])
    print_preview(result["explain"]["preview"])
    console.print(f"[bold green]valid[/]: {escape(str(spec))} (nothing spent, nothing written)")


@app.command()
def protect(
    spec: Annotated[Path, typer.Argument(help="release spec (TOML)")],
    out: Annotated[Path, typer.Option("--out", help="output folder (new or empty)")],
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

    from eree.release.protect import protect as run
    from eree.release.spec import ENGINE_KINDS, load_spec

    check_out(out, force)
    if force and ledger is not None and out.is_dir() and any(out.iterdir()):
        _fail(EreeError(
            f"output folder {out} is not empty: a release charged to a ledger is written only "
            "to a new or empty folder (--force does not apply)"
        ))  # fmt: skip
    if seed is not None and ledger is not None:
        _fail(EreeError(
            "seeded randomness is never charged as a release: --seed cannot be combined with "
            "--ledger (a seeded release is NOT FOR PUBLICATION)"
        ))  # fmt: skip
    source = _noise(seed, random_mode)
    try:
        plan = load_spec(spec)
        if engine is not None:
            if engine not in ENGINE_KINDS:
                _fail(ValueError(f"--engine must be one of {', '.join(ENGINE_KINDS)}"))
            plan = replace(plan, engine=replace(plan.engine, kind=engine))
        with err_console.status("releasing…"), warnings.catch_warnings():
            # numpy's overflow warnings: a non-finite result is refused with an error;
            # the release's own warnings are printed below, not as Python warnings
            warnings.simplefilter("ignore", RuntimeWarning)
            warnings.simplefilter("ignore", ReleaseWarning)
            result = run(plan, out, source, ledger=ledger, new_version=new_version, force=force)
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
            left = ", ".join(f"{k} {_fmt(v)}" for k, v in lb["remaining"].items())
            after = ", ".join(f"{k} {_fmt(v)}" for k, v in (lb["spent_after"] or {}).items())
            console.print(f"lifetime budget: spent {escape(after)} of "
                          f"{escape(', '.join(f'{k} {_fmt(v)}' for k, v in lb['budget'].items()))}"
                          f"; remaining {escape(left)}")  # fmt: skip
    console.print(f"manifest: {out_dir / 'manifest.json'}")
    if (out_dir / "report.html").is_file():
        console.print(f"report:   {out_dir / 'report.html'}")


def _open_ledger(path: Path, must_exist: bool = True) -> Any:
    from eree.privacy.ledger import Ledger

    if must_exist and not path.is_file():
        _fail(EreeError(f"no ledger at {path}"))
    try:
        return Ledger(path)
    except EreeError as e:
        _fail(e)


@ledger_app.command("budget")
def ledger_budget(
    ledger: Annotated[Path, typer.Argument(help="the ledger (SQLite; created if absent)")],
    name: Annotated[str, typer.Argument(help="dataset name (the spec's `name`)")],
    epsilon: Annotated[float | None, typer.Option(help="ER-EE family: lifetime ε")] = None,
    delta: Annotated[
        float | None, typer.Option(help="ER-EE family: lifetime δ (default 0)")
    ] = None,
    alpha: Annotated[
        float | None,
        typer.Option(help="ER-EE family: the dataset's one α (default: the first release's)"),
    ] = None,
    mu: Annotated[float | None, typer.Option(help="GEDP family: lifetime μ")] = None,
) -> None:
    """Register a dataset and its lifetime budget (administrators).

    A release with --ledger on an unregistered dataset is refused. Give --epsilon
    [--delta] [--alpha] for ER-EE data, --mu for establishment (GEDP) data. Running it
    again changes the budget (recorded in the ledger).

    Example: eree ledger budget budget.sqlite pa-2015 --epsilon 4 --delta 1e-6 --alpha 0.1
    """
    book = _open_ledger(ledger, must_exist=False)
    try:
        b = book.set_budget(name, epsilon=epsilon, delta=delta, alpha=alpha, mu=mu)
    except EreeError as e:
        _fail(e)
        return
    from fractions import Fraction

    shown = ", ".join(f"{k}={float(Fraction(v)):g}" for k, v in b.items())
    console.print(f"dataset {name!r}: lifetime budget {shown} (ledger {ledger})")


@ledger_app.command("show")
def ledger_show(
    ledger: Annotated[Path, typer.Argument(help="the ledger (SQLite)")],
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of tables")] = False,
) -> None:
    """Registered datasets, their budgets, versions and running totals.

    Example: eree ledger show budget.sqlite
    """
    book = _open_ledger(ledger)
    entries = book.show()
    if as_json:
        console.print_json(json.dumps({"datasets": entries, "releases": book.releases()}))
        return
    t = Table(title=f"Ledger {ledger}")
    for col in ("dataset", "family", "α", "budget", "spent", "versions", "releases"):
        t.add_column(col, overflow="fold")
    for e in entries:
        spent = ", ".join(f"{k}={_fmt(v)}" for k, v in e["spent"].items() if v is not None)
        budget = ", ".join(f"{k}={v:g}" for k, v in e["budget"].items())
        versions = " → ".join(f"v{v['version']}" for v in e["versions"]) or "—"
        rel = ", ".join(f"{n} {s}" for s, n in e["releases"].items() if n)
        t.add_row(e["dataset"], e["family"], _fmt(e["alpha"]), budget, spent or "—",
                  versions, rel or "—")  # fmt: skip
    console.print(t)


@ledger_app.command("verify")
def ledger_verify(
    ledger: Annotated[Path, typer.Argument(help="the ledger (SQLite)")],
    release: Annotated[
        list[Path] | None,
        typer.Option("--release", help="a release directory to check against the ledger"),
    ] = None,
) -> None:
    """Check the ledger's hash chain (an edited or deleted row is detected).

    With --release, also check that each release's manifest names a row of the ledger
    with its hash. Exit code 1 when a problem is found.

    Example: eree ledger verify budget.sqlite --release release-2026q1
    """
    book = _open_ledger(ledger)
    res = book.verify(list(release or []))
    if res.ok:
        console.print(f"[bold green]ok[/]: {res.events} rows, chain intact")
        return
    for p in res.problems:
        err_console.print(f"[bold red]tampered:[/] {escape(p)}")
    raise typer.Exit(code=1)


@synth_app.command("lodes")
def synth_lodes(
    out: Annotated[Path, typer.Option("--out", help="output folder (new or empty)")],
    wac: Annotated[
        Path | None, typer.Option(help="LODES WAC file (csv/csv.gz); parametric if absent")
    ] = None,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    scale: Annotated[float, typer.Option(help="multiply the number of jobs")] = 1.0,
    jobs: Annotated[int, typer.Option(help="jobs of the parametric generator")] = 50_000,
    force: Force = False,
) -> None:
    """LODES-like workplace, worker and job tables, and a starter release spec.

    Writes OUT/workplace.parquet, OUT/worker.parquet, OUT/job.parquet and
    OUT/release.toml, a release spec for them (paths relative to it) that
    `eree explain` and `eree protect` accept as is.

    Example: eree synth lodes --wac pa_wac_S000_JT00_2015.csv.gz --out pa --seed 1
    """
    from eree.data.outdir import output_folder
    from eree.synth.lodes import synth_from_wac, synth_parametric
    from eree.synth.starter import write_lodes_starter

    check_out(out, force)
    try:
        with err_console.status("generating…"):
            if wac is not None:
                s = synth_from_wac(wac, seed=seed, scale=scale)
            else:
                s = synth_parametric(seed=seed, n_jobs=int(jobs * scale))
            with output_folder(out, "eree synth lodes", force=force) as tmp:
                s.write(tmp)
                write_lodes_starter(tmp, shown_as=out)
    except (EreeError, OSError) as e:
        _fail(e)
        return
    console.print(
        f"wrote {s.workplace.height:,} workplaces, {s.worker.height:,} workers, "
        f"{s.job.height:,} jobs to {out}"
    )
    console.print(f"starter spec: {out / 'release.toml'} (eree explain {out / 'release.toml'})")


@synth_app.command("qcew")
def synth_qcew(
    out: Annotated[Path, typer.Option("--out", help="output folder (new or empty)")],
    qcew_area: Annotated[
        Path | None,
        typer.Option("--qcew-area", help="directory of QCEW 'by area' files; parametric if absent"),
    ] = None,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    establishments: Annotated[
        int, typer.Option(help="establishments of the parametric generator")
    ] = 25_000,
    file_format: Annotated[
        str, typer.Option("--format", help="csv.gz (default) | csv | parquet")
    ] = "csv.gz",
    force: Force = False,
) -> None:
    """QCEW-like establishment microdata (the Syn-RI schema) and a starter release spec.

    Writes OUT/establishments.csv.gz (one row per establishment; --format for csv or
    parquet) and OUT/release.toml, a release spec for it (paths relative to it) that
    `eree explain` and `eree protect` accept as is.

    Example: eree synth qcew --qcew-area ../shared/data/qcew_2016_by_area --out ri
    """
    from eree.data.outdir import output_folder
    from eree.synth.qcew import synth_qcew_from_area, synth_qcew_parametric
    from eree.synth.starter import write_qcew_starter

    check_out(out, force)
    if file_format not in ("csv.gz", "csv", "parquet"):
        _fail(EreeError(f"--format must be csv.gz, csv or parquet, not {file_format!r}"))
    name = f"establishments.{file_format}"
    try:
        with err_console.status("generating…"):
            if qcew_area is not None:
                s = synth_qcew_from_area(qcew_area, seed=seed)
            else:
                s = synth_qcew_parametric(seed=seed, n_establishments=establishments)
            with output_folder(out, "eree synth qcew", force=force) as tmp:
                s.write(tmp / name)
                write_qcew_starter(tmp, name, shown_as=out)
    except (EreeError, OSError, ValueError) as e:
        _fail(e)
        return
    console.print(f"wrote {s.establishments.height:,} establishments to {out / name}")
    console.print(f"starter spec: {out / 'release.toml'} (eree explain {out / 'release.toml'})")


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", help="output folder (new or empty)")] = Path(
        "eree-demo"
    ),
    seed: Annotated[
        int | None, typer.Option(help="seed the release noise (NOT FOR PUBLICATION)")
    ] = None,
    force: Force = False,
) -> None:
    """The main job on built-in synthetic data: synthesise, release, report.

    Example: eree demo --out eree-demo
    """
    from eree.data.outdir import folder_in_place
    from eree.demo import run_demo

    check_out(out, force)
    try:
        with folder_in_place(out, "eree demo", force=force) as folder:
            summary = run_demo(folder, seed=seed, console=console, on_release=_print_release)
    except EreeError as e:
        _fail(e)
        return
    console.print(f"[bold green]demo finished[/] in {summary['seconds']:.1f} s")
    for k, v in summary["outputs"].items():
        console.print(f"  {k}: {v}")


@audit_app.command("privacy")
def audit_privacy(
    out: Annotated[Path, typer.Option("--out", help="write privacy_audit.csv, report.html here")],
    quick: Annotated[
        bool, typer.Option("--quick", help="the CI audit: fewer pairs, 40,000 draws per input")
    ] = False,
    n: Annotated[
        int | None, typer.Option("--n", help="draws per neighbouring input (default 10^6)")
    ] = None,
    scale_factor: Annotated[
        list[float] | None,
        typer.Option(
            "--scale-factor",
            help="noise scale of a weakened copy, audited against the original claim "
            "(repeatable; 1 = the mechanism as built; default 1 and 0.5)",
        ),
    ] = None,
    mechanism: Annotated[
        list[str] | None, typer.Option(help="registry name to audit (repeatable; default all)")
    ] = None,
    confidence: Annotated[
        float, typer.Option(help="family-wise confidence of the whole table")
    ] = 0.95,
    seed: Annotated[int, typer.Option(help="root seed (seeded noise: an experiment)")] = 0,
    workers: Annotated[int | None, typer.Option(help="processes (default: CPUs)")] = None,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    """Empirical privacy audit of every registered mechanism (privacy_audit.csv, report).

    Runs every registered mechanism on worst-case neighbouring inputs of its definition
    and lower-bounds its privacy loss (ε at its δ, or μ).

    A lower bound above the claim at the stated confidence is a violation.
    A scale factor of 0.5 audits a copy with half the noise against the original claim.

    Example: eree audit privacy --out audit --scale-factor 1 --scale-factor 0.7 --scale-factor 0.5
    """
    import time

    from eree.clikit import progress_bar
    from eree.data.outdir import output_folder, relocate
    from eree.evaluate.privacy_audit import (
        FLOAT_ATTACK_EXPLANATION,
        N_FULL,
        N_QUICK,
        VIOLATION,
        float_attack_table,
        planned_pairs,
        run_audit,
        summary,
        write_outputs,
    )

    check_out(out, force)
    t0 = time.perf_counter()
    factors = tuple(scale_factor) if scale_factor else (1.0, 0.5)
    draws = n if n is not None else (N_QUICK if quick else N_FULL)
    try:
        total = len(planned_pairs(quick=quick, scale_factors=factors, mechanisms=mechanism))
        with progress_bar(quiet) as bar:
            task = bar.add_task("auditing", total=total + 1)  # + the floating-point attack
            result = run_audit(
                n=draws, quick=quick, scale_factors=factors, confidence=confidence, seed=seed,
                workers=workers, mechanisms=mechanism,
                progress=lambda msg: bar.update(task, advance=1, description=escape(msg)),
            )  # fmt: skip
        with output_folder(out, "eree audit privacy", force=force) as tmp:
            paths = relocate(write_outputs(result, tmp), tmp, out)
    except (EreeError, OSError, ValueError) as e:
        _fail(e)
        return
    t = Table(title=f"privacy audit: N = {draws:,} per input, {confidence:.0%} family-wise")
    for col in ("mechanism", "definition", "scale", "claimed", "max lower bound", "violations"):
        t.add_column(col)
    for r in summary(result).iter_rows(named=True):
        name = r["mechanism"] + (f" ({r['variant']})" if r["variant"] else "")
        claim = "none" if r["claim_kind"] == "none" else (
            f"{'μ' if r['claim_kind'] == 'mu' else 'ε'} = {r['claimed']:.4g}")  # fmt: skip
        bad = f"[bold red]{r['violations']}[/]" if r["violations"] else "0"
        t.add_row(
            name,
            r["definition"],
            f"{r['scale_factor']:g}",
            claim,
            f"{r['max_lower_bound']:.3f}",
            bad if r["claim_kind"] != "none" else "—",
        )
    console.print(t)
    for f in factors:
        v = result.violations(f)
        console.print(f"scale factor {f:g}: {v.height} pair(s) with a lower bound above the claim "
                      f"({v.select('mechanism', 'variant').unique().height} mechanism(s))"
                      + (f" [bold red]{VIOLATION}[/]" if v.height else ""))  # fmt: skip
    attack = float_attack_table(result)
    if attack.height:
        t = Table(title="floating-point attack on the current sampling layer")
        for col in ("mechanism", "definition", "neighbours", "floating-point attack",
                    "float search witnesses"):  # fmt: skip
            t.add_column(col)
        for r in attack.iter_rows(named=True):
            name = r["mechanism"] + (f" ({r['variant']})" if r["variant"] else "")
            if r["certain"] is None:  # no formal guarantee: nothing to attack
                t.add_row(name, r["definition"], "—", "not applicable (no claim)", "—")
                continue
            k = f"certain answers {r['certain']:,} of {r['n']:,}"
            t.add_row(name, r["definition"], escape(r["pair"]),
                      f"[bold red]{k}[/]" if r["certain"] else k,
                      f"{r['witnessed']:,} of {r['witness_of']:,}")  # fmt: skip
        console.print(t)
        console.print(FLOAT_ATTACK_EXPLANATION)
        hit = sum(1 for r in attack.iter_rows(named=True) if (r["certain"] or 0) > 0)
        console.print(f"floating-point attack: {hit} mechanism(s) with certain answers"
                      + (f" [bold red]{VIOLATION}[/]" if hit else ""))  # fmt: skip
    console.print(f"results: {paths['results']}")
    if "float_attack" in paths:
        console.print(f"floating-point attack: {paths['float_attack']}")
    console.print(f"report:  {paths['report']}")
    console.print(f"done in {time.perf_counter() - t0:.1f} s")


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


_WAC = "../shared/data/lodes/pa_wac_S000_JT00_2015.csv.gz"
#: evaluate haney-…: (first line of the help: what it reproduces, example)
HANEY_HELP: dict[str, tuple[str, str]] = {
    "haney-workload1": (
        "Reproduce Haney et al. (SIGMOD 2017) Figure 1: Workload 1, the L1 error ratio to "
        "noise infusion of tract × sector × ownership counts.",
        f"eree evaluate haney-workload1 --wac {_WAC} --out haney-w1",
    ),
    "haney-workload2": (
        "Reproduce Haney et al. (SIGMOD 2017) Figure 3: Workload 2, the L1 error ratio of "
        "single queries with sex × education.",
        "eree evaluate haney-workload2 --small-grid --trials 2 --out haney-w2",
    ),
    "haney-workload3": (
        "Reproduce Haney et al. (SIGMOD 2017) Figure 4: Workload 3, the L1 error ratio of "
        "the marginal with sex × education.",
        f"eree evaluate haney-workload3 --wac {_WAC} --out haney-w3",
    ),
    "haney-ranking1": (
        "Reproduce Haney et al. (SIGMOD 2017) Figure 2: Ranking 1, the Spearman correlation "
        "of tract × sector × ownership rankings with the truth.",
        f"eree evaluate haney-ranking1 --wac {_WAC} --out haney-r1",
    ),
    "haney-ranking2": (
        "Reproduce Haney et al. (SIGMOD 2017) Figure 5: Ranking 2, the Spearman correlation "
        "of the ranking of cells by women with a BA+.",
        f"eree evaluate haney-ranking2 --wac {_WAC} --out haney-r2",
    ),
    "haney-all": (
        "Reproduce Haney et al. (SIGMOD 2017) §10, Figures 1–5: Workloads 1–3 and "
        "Rankings 1–2 in one run.",
        f"eree evaluate haney-all --wac {_WAC} --out haney-pa",
    ),
}
#: evaluate webb-…: (first line of the help: what it reproduces, example)
WEBB_HELP: dict[str, tuple[str, str]] = {
    "webb-table11": (
        "Reproduce Webb et al. (QCEW paper) Table 11 (Appendix H): WLS with estimated vs "
        "true variances (no data needed).",
        "eree evaluate webb-table11 --out webb-t11 --table11-trials 2000",
    ),
    "webb-table3": (
        "Reproduce Webb et al. (QCEW paper) Table 3: quartiles of the signed differences "
        "between protected microdata and the truth on Syn-RI.",
        "eree evaluate webb-table3 --out webb-t3 --trials 34",
    ),
    "webb-figures": (
        "Reproduce Webb et al. (QCEW paper) Figures 2, 3 and 8: absolute and relative "
        "error by grouping, pnc vs √ workflows on Syn-RI.",
        "eree evaluate webb-figures --out webb-fig --trials 34",
    ),
    "webb-figure9": (
        "Reproduce Webb et al. (QCEW paper) Figure 9: relative error as the overall "
        "budget μ varies, on Syn-RI.",
        "eree evaluate webb-figure9 --out webb-f9 --trials 10",
    ),
    "webb-all": (
        "Reproduce Webb et al. (QCEW paper) §8: Tables 3 and 11, Figures 2, 3, 8 and 9 in one run.",
        "eree evaluate webb-all --out webb-ri --trials 34",
    ),
}


def _help(doc: str | None, first: str, example: str) -> str:
    """A command's help: its own first line and example around a shared description."""
    import inspect

    paras = [p.strip() for p in inspect.cleandoc(doc or "").split("\n\n")]
    body = [p for p in paras[1:] if not p.startswith("Example:")]
    return "\n\n".join([first, *body, f"Example: {example}"])


_registered = False


def _register_experiments() -> None:
    """Register the experiment commands (imports the experiment modules; once)."""
    global _registered
    if _registered:
        return
    _registered = True
    from eree import suppression_cli as scli
    from eree.evaluate import cli as ecli

    for name, (first, example) in HANEY_HELP.items():
        evaluate_app.command(name, help=_help(ecli.evaluate.__doc__, first, example))(
            _bound(ecli.evaluate, experiment=name)
        )
    from eree.evaluate.webb import evaluate_webb
    from eree.evaluate.workshop import workshop_figure1_command

    for name, (first, example) in WEBB_HELP.items():
        evaluate_app.command(name, help=_help(evaluate_webb.__doc__, first, example))(
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
    """Run the ``eree`` command-line application (exit status 130 on Ctrl-C).

    A command line with plain parameters only (``eree protect SPEC --out DIR``) runs
    without Typer's parameter conversion (:func:`eree.clikit.plain_call`; the root
    callback only prints the version); anything else goes through Typer.
    """
    try:
        if not plain_call(app, sys.argv[1:]):
            app()
    except KeyboardInterrupt:  # pragma: no cover
        sys.exit(130)


def run() -> None:
    """The ``eree`` program: :func:`main`, then an exit without the interpreter's teardown.

    At exit, Python frees every module and every object of Polars and NumPy one by one:
    about 70 ms of a 0.7 s release of a state (``benchmarks/bench_release.py``), work the
    operating system does at once when the process ends. So once the command has
    returned, the exit handlers run, standard output and error are flushed, and the
    process ends with the command's exit status (:func:`os._exit`). Every command closes
    its output files before it returns. Should a thread of the command still be running,
    or the command fail with a traceback, Python exits as usual. A closed standard
    output (the reader of a pipe gone) ends the program with status 1, quietly.
    """
    import atexit
    import contextlib
    import os
    import threading

    try:
        main()
        code: object = 0
    except SystemExit as e:
        code = e.code
    except BrokenPipeError:
        # the reader of standard output went away (`eree ... | head -1`): nothing more
        # can reach it; as Python's documentation advises, status 1 and no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    main_thread = threading.main_thread()
    if any(t is not main_thread and t.is_alive() and not t.daemon for t in threading.enumerate()):
        sys.exit(code)  # type: ignore[arg-type]
    if code is None:
        code = 0
    elif not isinstance(code, int):  # what SystemExit does with a message: print it, status 1
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing reaches it
            stream.flush()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
