"""``eree evaluate haney-…`` and ``eree audit noise-infusion`` (DESIGN.md §7.1).

Typer command functions, registered by :mod:`eree.cli`::

    app.command()(evaluate)
    app.command()(audit)
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Annotated

import typer

from eree.clikit import Force, LazyConsole, Quiet, Table, check_out, escape, progress_bar
from eree.errors import EreeError

console = LazyConsole()
err_console = LazyConsole(stderr=True)

_DATA_HELP = (
    "directory of LODES-like tables (workplace, worker, job; as written by eree synth lodes)"
)


def _fail(e: Exception) -> None:
    err_console.print(f"[bold red]error:[/] {escape(str(e))}")
    raise typer.Exit(code=2)


def _fmt(v: object) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def evaluate(
    experiment: Annotated[
        str,
        typer.Argument(
            help="haney-workload1 | haney-workload2 | haney-workload3 | haney-ranking1 | "
            "haney-ranking2 | haney-all"
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="output folder (new or empty)")],
    trials: Annotated[int, typer.Option(help="independent trials per parameter point")] = 20,
    seed: Annotated[
        int, typer.Option(help="root seed of the experiment (seeded noise: NOT FOR PUBLICATION)")
    ] = 0,
    data: Annotated[Path | None, typer.Option("--data", help=_DATA_HELP)] = None,
    wac: Annotated[
        Path | None, typer.Option(help="LODES WAC file to synthesise the dataset from")
    ] = None,
    data_seed: Annotated[int, typer.Option(help="seed of the data generator")] = 1,
    scale: Annotated[float, typer.Option(help="scale of the WAC generator")] = 1.0,
    jobs: Annotated[
        int, typer.Option(help="jobs of the parametric dataset (without --data/--wac)")
    ] = 50_000,
    small_grid: Annotated[
        bool,
        typer.Option(
            "--small-grid",
            help="ε ∈ {1, 4}, α ∈ {0.05, 0.1}, θ ∈ {20, 200}: a smoke test (the headline "
            "table then shows α = 0.1, ε = 4)",
        ),
    ] = False,
    workers: Annotated[
        int | None, typer.Option(help="threads for parameter points (default: CPUs, max 4)")
    ] = None,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    """Reproduce Haney et al. (SIGMOD 2017) §10: Workloads 1–3, Rankings 1–2 (Figures 1–5).

    Writes results.csv (tidy), omitted.csv, run.json, figures/*.png and report.html to OUT.
    Without --data or --wac the dataset is the small parametric generator. Ctrl-C keeps
    the finished parameter points: they are written with an INTERRUPTED note (exit 130).

    Example: eree evaluate haney-all --wac pa_wac_S000_JT00_2015.csv.gz --out haney-pa
    """
    from eree.data.outdir import output_folder, relocate
    from eree.evaluate.datasets import load_dataset
    from eree.evaluate.haney import HaneyGrid, count_points, experiments_of, run_haney
    from eree.evaluate.report import summary_rows, write_outputs

    check_out(out, force)
    t0 = time.perf_counter()
    try:
        experiments_of(experiment)
        grid = (
            HaneyGrid(epsilons=(1.0, 4.0), alphas=(0.05, 0.1), thetas=(20, 200), trials=trials)
            if small_grid
            else HaneyGrid(trials=trials)
        )
        with err_console.status("loading data…"):
            ds = load_dataset(data, wac, seed=data_seed, scale=scale, jobs=jobs)
        console.print(
            f"dataset: {ds.description.get('jobs', 0):,} jobs, "
            f"{ds.description.get('establishments', 0):,} establishments "
            f"({escape(str(ds.description.get('source')))})"
        )
        with progress_bar(quiet) as bar:
            task = bar.add_task(experiment, total=count_points(experiment, grid))
            result = run_haney(
                experiment,
                ds,
                grid=grid,
                seed=seed,
                workers=workers,
                progress=lambda msg: bar.update(task, advance=1, description=escape(msg)),
            )
        with (
            err_console.status("writing figures and report…"),
            output_folder(out, f"eree evaluate {experiment}", force=force) as tmp,
        ):
            paths = relocate(write_outputs(result, tmp), tmp, out)
            note = write_interrupted_note(tmp, result.meta)
    except (EreeError, OSError) as e:
        _fail(e)
        return
    console.print(f"[bold yellow]seeded randomness (seed {seed}): NOT FOR PUBLICATION[/]")
    rows = summary_rows(result)
    a, eps = (rows[0]["alpha"], rows[0]["epsilon"]) if rows else (0.1, 2.0)
    t = Table(title=f"at ε = {eps:g}, α = {a:g} (all cells)")
    for col in ("experiment", "mechanism", "metric", "value"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["experiment"], r["mechanism"], r["metric"], _fmt(r["value"]))
    console.print(t)
    console.print(f"{result.omitted.height} points omitted (as in the paper): {paths['omitted']}")
    console.print(f"results: {paths['results']}")
    console.print(f"report:  {paths['report']}")
    console.print(f"done in {time.perf_counter() - t0:.1f} s")
    if note:
        err_console.print(f"[bold yellow]{escape(note)}[/]: partial results in {out}")
        raise typer.Exit(code=130)


def write_interrupted_note(folder: Path, meta: dict[str, object]) -> str | None:
    """Write ``INTERRUPTED`` in an output folder when the run was cut short; return its text.

    A run stopped by Ctrl-C returns what it finished with ``meta["interrupted"]``; its
    outputs are written as usual, and this note (also in run.json) says they are partial.
    """
    note = meta.get("interrupted")
    if not note:
        return None
    (folder / "INTERRUPTED").write_text(f"{note}\n", encoding="utf-8")
    return str(note)


def audit(
    target: Annotated[
        str, typer.Argument(help="what to attack: noise-infusion (Haney et al. §5.2)")
    ] = "noise-infusion",
    out: Annotated[
        Path | None, typer.Option("--out", help="write audit.csv, audit.json and examples here")
    ] = None,
    attack: Annotated[
        list[str] | None, typer.Option(help="shape | size | zeros (repeatable; default all)")
    ] = None,
    alpha: Annotated[float, typer.Option(help="α of the ER-EE mechanisms")] = 0.1,
    epsilon: Annotated[float, typer.Option(help="ε of every released cell")] = 1.0,
    theta: Annotated[float, typer.Option(help="θ of node-DP truncated Laplace")] = 50.0,
    trials: Annotated[int, typer.Option(help="independent releases")] = 20,
    seed: Annotated[int, typer.Option(help="root seed (seeded: NOT FOR PUBLICATION)")] = 0,
    data: Annotated[Path | None, typer.Option("--data", help=_DATA_HELP)] = None,
    wac: Annotated[Path | None, typer.Option(help="LODES WAC file to synthesise from")] = None,
    data_seed: Annotated[int, typer.Option(help="seed of the data generator")] = 1,
    scale: Annotated[float, typer.Option(help="scale of the WAC generator")] = 1.0,
    jobs: Annotated[int, typer.Option(help="jobs of the parametric dataset")] = 50_000,
    force: Force = False,
) -> None:
    """Run the attacks of Haney et al. (SIGMOD 2017) §5.2 on input noise infusion.

    Against input noise infusion they succeed; against the formal mechanisms they fail.

    Shape disclosure from one-establishment cells; reconstruction of an establishment's
    distortion factor, cells and size from one known cell; a worker's attributes through
    preserved zeros. Prints true values of the synthetic data (that is the point).

    Example: eree audit noise-infusion --wac pa_wac_S000_JT00_2015.csv.gz --epsilon 1
    """
    from eree.evaluate.attacks import ATTACKS, run_attacks
    from eree.evaluate.datasets import load_dataset

    if out is not None:
        check_out(out, force)
    if target != "noise-infusion":
        _fail(ValueError(f"unknown audit target {target!r}; available: noise-infusion"))
        return
    try:
        with err_console.status("loading data…"):
            ds = load_dataset(data, wac, seed=data_seed, scale=scale, jobs=jobs)
        with err_console.status("attacking…"):
            res = run_attacks(
                ds, alpha=alpha, epsilon=epsilon, theta=theta, trials=trials, seed=seed,
                attacks=tuple(attack) if attack else ATTACKS,
            )  # fmt: skip
    except (EreeError, OSError, ValueError) as e:
        _fail(e)
        return
    console.print(f"[bold yellow]seeded randomness (seed {seed}): NOT FOR PUBLICATION[/]")
    t = Table(
        title=f"Haney et al. §5.2 attacks (α = {alpha:g}, ε = {epsilon:g} per cell, "
        f"{trials} trials)"
    )
    for col in ("attack", "mechanism", "targets", "success", "by chance", "ε-bound"):
        t.add_column(col)
    for o in res.outcomes:
        ok = o.success_rate
        shown = f"[bold red]{ok:.1%}[/]" if ok >= 0.999 else f"{ok:.1%}"
        t.add_row(
            o.attack, o.mechanism, str(o.targets), shown,
            "≈0" if math.isnan(o.chance_rate) else f"{o.chance_rate:.1%}",
            "—" if o.bound is None else f"{o.bound:.1%}",
        )  # fmt: skip
    console.print(t)
    for name, reason in res.meta["skipped"].items():
        console.print(f"• {name} skipped: {escape(reason)}")
    for name, ex in res.examples.items():
        console.print(f"[bold]example ({name}), noise infusion, trial 1 — synthetic data[/]")
        console.print(ex)
    if out is not None:
        from eree.data.outdir import output_folder

        try:
            with output_folder(out, "eree audit noise-infusion", force=force) as tmp:
                res.table().write_csv(tmp / "audit.csv")
                (tmp / "audit.json").write_text(json.dumps(res.meta, indent=2, default=str))
                for name, ex in res.examples.items():
                    ex.write_csv(tmp / f"example_{name}.csv")
        except (EreeError, OSError) as e:
            _fail(e)
        console.print(f"written to {out}")
