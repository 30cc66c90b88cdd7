"""``eree evaluate …``: the papers' experiments, one per figure or table.

See docs/design.md#command-line.

* ``haney-…``: Haney et al. (SIGMOD 2017) §10 (:mod:`eree.evaluate.haney`), one command
  per figure and ``haney-all``; each is :func:`evaluate_haney` with its experiment fixed.
* ``webb-…``: Webb et al. (the QCEW paper) §8 (:mod:`eree.evaluate.webb`); each is
  :func:`evaluate_webb` with its experiment fixed.
* ``workshop-figure1``: Figure 1 of the workshop version of Haney et al.
  (:mod:`eree.evaluate.workshop`).
* ``publication-grade``: publication-grade ER-EE tables, raw vs post-processed per
  marginal, and the public variance model's calibration
  (:mod:`eree.evaluate.publication_grade`).

Imported only when an ``evaluate`` command is used (:func:`eree.cli.register_lazy_commands`):
the defaults of the QCEW commands come from the experiment code.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from eree.cli.common import (
    Force,
    LodesData,
    Out,
    Quiet,
    Table,
    check_out,
    console,
    err_console,
    escape,
    fail,
    policy_allows,
    progress_bar,
)
from eree.errors import EreeError, SpecError
from eree.evaluate.webb.plans import TABLE11_TRIALS, TRIALS


def _fmt(v: object) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def evaluate_haney(
    experiment: Annotated[
        str,
        typer.Argument(
            help="haney-workload1 | haney-workload2 | haney-workload3 | haney-ranking1 | "
            "haney-ranking2 | haney-all"
        ),
    ],
    out: Out,
    trials: Annotated[int, typer.Option(help="independent trials per parameter point")] = 20,
    seed: Annotated[
        int, typer.Option(help="root seed of the experiment (seeded noise: NOT FOR PUBLICATION)")
    ] = 0,
    data: LodesData = None,
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
    from eree.evaluate.experiments import experiments_of
    from eree.evaluate.haney import EXPERIMENTS, HaneyGrid, count_points, run_haney
    from eree.evaluate.interrupt import write_interrupted_note
    from eree.evaluate.report import summary_rows, write_outputs

    if data is not None:
        policy_allows("evaluate", f"--data {data}")
    check_out(out, force)
    t0 = time.perf_counter()
    try:
        experiments_of(experiment, EXPERIMENTS)
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
        fail(e)
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


def evaluate_webb(
    experiment: Annotated[
        str,
        typer.Argument(help="webb-table11 | webb-table3 | webb-figures | webb-figure9 | webb-all"),
    ],
    out: Out,
    trials: Annotated[int, typer.Option(help="replicates per workflow (the paper: 34)")] = TRIALS,
    seed: Annotated[int, typer.Option(help="root seed (seeded noise: NOT FOR PUBLICATION)")] = 0,
    data: Annotated[
        Path | None,
        typer.Option("--data", help="establishment file in the Syn-RI schema (default: Syn-RI)"),
    ] = None,
    table11_trials: Annotated[
        int, typer.Option(help="trials of the Table 11 ablation (the paper: 1,000,000)")
    ] = TABLE11_TRIALS,
    budget: Annotated[
        str,
        typer.Option(help="table7 (Table 7, default) | section8.2 (the budgets in §8.2's text)"),
    ] = "table7",
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    """Reproduce Webb et al. (QCEW paper) §8: Tables 3 and 11, Figures 2, 3, 8 and 9.

    pnc-mechanism vs √-mechanism workflows on Syn-RI with the Table 7 budgets, γ_emp = 0.5,
    γ_wage = 50, ζ = 0.01: protected microdata by WLS from the published tables, tabulated at
    QCEW aggregation levels and compared with the truth. Writes results.csv (tidy),
    cells.csv, table11.csv, run.json, figures/*.png and report.html to OUT. Ctrl-C keeps
    the finished replicates: they are written with an INTERRUPTED note (exit 130).

    Example: eree evaluate webb-all --out webb-ri --trials 34
    """
    from eree.data.outdir import output_folder, relocate
    from eree.evaluate.experiments import experiments_of
    from eree.evaluate.interrupt import write_interrupted_note
    from eree.evaluate.webb.plans import EXPERIMENTS, load_webb_data
    from eree.evaluate.webb.report import summary_readings, write_webb_outputs
    from eree.evaluate.webb.run import count_steps, run_webb

    if data is not None:
        policy_allows("evaluate", f"--data {data}")
    check_out(out, force)
    t0 = time.perf_counter()
    try:
        exps = experiments_of(experiment, EXPERIMENTS)
        ds = None
        if any(e != "webb-table11" for e in exps):
            with err_console.status("loading data…"):
                ds = load_webb_data(data)
            console.print(f"dataset: {ds.n:,} establishments ({escape(str(ds.config.path))})")
        with progress_bar(quiet) as bar:
            steps = count_steps(exps, trials, table11_trials, ds, budget)
            task = bar.add_task(experiment, total=steps)
            res = run_webb(
                experiment,
                ds,
                trials=trials,
                seed=seed,
                budget=budget,
                table11_trials=table11_trials,
                progress=lambda m: bar.update(task, advance=1, description=escape(m)),
            )
        with output_folder(out, f"eree evaluate {experiment}", force=force) as tmp:
            paths = relocate(write_webb_outputs(res, tmp), tmp, out)
            note = write_interrupted_note(tmp, res.meta)
    except (EreeError, OSError, ValueError) as e:
        fail(e)
    console.print(f"[bold yellow]seeded randomness (seed {seed}): NOT FOR PUBLICATION[/]")
    for line in summary_readings(res):
        console.print("• " + escape(line))
    console.print(f"results: {paths['results']}")
    console.print(f"report:  {paths['report']}")
    console.print(f"done in {time.perf_counter() - t0:.1f} s")
    if note:
        err_console.print(f"[bold yellow]{escape(note)}[/]: partial results in {out}")
        raise typer.Exit(code=130)


def _floats(text: str, what: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError as e:
        raise SpecError(f"{what} must be comma-separated numbers (got {text!r})") from e


def workshop_figure1(
    out: Out,
    trials: Annotated[int, typer.Option(help="independent trials per point")] = 20,
    seed: Annotated[int, typer.Option(help="seed of the noise (NOT FOR PUBLICATION)")] = 0,
    wac: Annotated[
        Path | None, typer.Option(help="LODES WAC file to synthesise from (e.g. PA 2015)")
    ] = None,
    data: LodesData = None,
    data_seed: Annotated[int, typer.Option(help="seed of the data generator")] = 1,
    jobs: Annotated[int, typer.Option(help="jobs of the parametric generator")] = 50_000,
    alphas: Annotated[
        str, typer.Option(help="comma-separated α values")
    ] = "0.01,0.05,0.1,0.15,0.2",
    epsilons: Annotated[str, typer.Option(help="comma-separated ε values")] = "0.25,0.5,0.67,1,2,4",
    variants: Annotated[
        str, typer.Option(help="workshop,sigmod or one of them")
    ] = "workshop,sigmod",
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    """Reproduce Figure 1 of the workshop version of Haney et al.: L1 error ratio to noise infusion.

    Example: eree evaluate workshop-figure1 --wac pa_wac_S000_JT00_2015.csv.gz --out wf1
    """
    from eree.data.outdir import output_folder, relocate
    from eree.evaluate.datasets import load_dataset
    from eree.evaluate.workshop import (
        PAPER_CELLS,
        WorkshopGrid,
        count_points,
        run_workshop_figure1,
        write_workshop_outputs,
    )

    check_out(out, force)
    try:
        grid = WorkshopGrid(
            epsilons=_floats(epsilons, "--epsilons"),
            alphas=_floats(alphas, "--alphas"),
            trials=trials,
            variants=tuple(v.strip() for v in variants.split(",") if v.strip()),
        )
        with err_console.status("loading data…"):
            ds = load_dataset(data, wac, seed=data_seed, jobs=jobs)
        with progress_bar(quiet) as bar:
            task = bar.add_task("workshop-figure1", total=count_points(grid))

            def tick(msg: str) -> None:
                bar.update(task, advance=1, description=msg)

            result = run_workshop_figure1(ds, grid=grid, seed=seed, progress=tick)
        with output_folder(out, "eree evaluate workshop-figure1", force=force) as tmp:
            paths = relocate(write_workshop_outputs(result, tmp), tmp, out)
    except (EreeError, OSError) as e:
        fail(e)
    console.print("[bold yellow]seeded randomness: NOT FOR PUBLICATION[/]")
    for w, c in result.meta["cells"].items():
        console.print(f"  {w}: {c:,} cells (paper: {PAPER_CELLS[w]:,})")
    console.print(f"finished in {result.meta['seconds']['total']:.1f} s")
    for k, p in paths.items():
        console.print(f"  {k}: {p}")


def _names(text: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    if text is None:
        return default
    return tuple(x.strip() for x in text.split(",") if x.strip())


def publication_grade(
    out: Out,
    data: LodesData = None,
    seeds: Annotated[int, typer.Option(help="seeded releases per workload × mechanism")] = 20,
    workloads: Annotated[
        str | None,
        typer.Option(help="comma-separated workload shapes (default: all six)"),
    ] = None,
    mechanisms: Annotated[
        str | None,
        typer.Option(help="comma-separated ER-EE mechanisms (default: all three)"),
    ] = None,
    calibration_seeds: Annotated[
        int, typer.Option(help="releases of the variance model's calibration (0: skip it)")
    ] = 20,
    gedp_spec: Annotated[
        Path | None,
        typer.Option(
            help="also a GEDP release spec: its tables tabulated from the WLS microdata "
            "(consistent = true, nonnegative = true) vs the raw tables"
        ),
    ] = None,
    variance_calibration: Annotated[
        bool,
        typer.Option(
            "--variance-calibration",
            help="release with [postprocess] variance_calibration = true (the variance "
            "model's level fitted per marginal to each release's parent/child discrepancies)",
        ),
    ] = False,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    """Evaluate publication-grade ER-EE tables: mean L1 per marginal, raw vs post-processed.

    For each workload shape (chains with county and state parents, a lattice of worker
    attributes, the LODES WAC shape, Haney Workloads 1 and 3) and each mechanism (Smooth
    Laplace, Smooth Gamma, Log-Laplace; weak ER-EE, α = 0.1): SEEDS seeded releases with
    [postprocess] consistent, nonnegative and integer; the mean L1 error per cell of every
    marginal raw and post-processed with its Monte Carlo standard error, next to an
    oracle (the same least squares weighted by the true noise variances: evaluation
    only, not publishable) and to the solution without the never-worse guard (every
    marginal consistent: what the guard protects against); the mean bias of every
    marginal's total; and the public
    variance model's calibration (predicted against realised variance by size class,
    before and after the per-release calibration).
    With --gedp-spec, the same for an establishment (GEDP) release: every table
    tabulated from the WLS microdata against the mechanism's raw table.
    Writes publication_eval.md, publication_eval.json and calibration.csv to OUT. Ctrl-C
    keeps the finished workload × mechanism pairs: they are written with an INTERRUPTED
    note (exit 130).

    Example: eree evaluate publication-grade --data synth6 --seeds 20 --out pub-eval
    """
    from eree.data.outdir import output_folder, relocate
    from eree.evaluate.interrupt import write_interrupted_note
    from eree.evaluate.publication_grade import (
        CALIBRATED,
        MECHANISMS,
        WORKLOADS,
        calibration,
        check_names,
        evaluate,
        evaluate_gedp,
        write_outputs,
    )

    if data is not None:
        policy_allows("evaluate", f"--data {data}")
    check_out(out, force)
    t0 = time.perf_counter()
    try:
        if data is None:
            raise SpecError("--data DIR is required (a folder written by eree synth lodes)")
        ws = _names(workloads, tuple(WORKLOADS))
        ms = _names(mechanisms, MECHANISMS)
        check_names(ws, ms)
        if seeds < 2:
            raise SpecError("--seeds must be at least 2 (a standard error needs two releases)")
        if gedp_spec is not None:
            from eree.release.spec import load_spec

            if load_spec(gedp_spec).kind != "establishments":
                raise SpecError(f"--gedp-spec {gedp_spec}: not an establishment (GEDP) spec")
        stopped: list[str] = []
        with progress_bar(quiet) as bar:
            cal_mechs = [m for m in CALIBRATED if m in ms] if calibration_seeds > 0 else []
            steps = len(ws) * len(ms) + len(cal_mechs) + (seeds + 1 if gedp_spec else 0)
            task = bar.add_task("publication-grade", total=steps)
            results = evaluate(
                data,
                workloads=ws,
                mechanisms=ms,
                seeds=seeds,
                progress=lambda m: bar.update(task, advance=1, description=escape(m)),
                interrupted=stopped,
                variance_calibration=variance_calibration,
            )
            cals = {}
            for m in cal_mechs if not stopped else []:
                try:
                    cals[m] = calibration(data, mechanism=m, seeds=calibration_seeds)
                except KeyboardInterrupt:
                    stopped.append(f"interrupted (Ctrl-C) during the {m} calibration")
                    break
                bar.update(task, advance=1, description=f"calibration {m}")
            if gedp_spec is not None and not stopped:
                try:
                    results += evaluate_gedp(
                        gedp_spec,
                        seeds=seeds,
                        progress=lambda m: bar.update(task, advance=1, description=escape(m)),
                    )
                except KeyboardInterrupt:
                    stopped.append("interrupted (Ctrl-C) during the GEDP evaluation")
        meta: dict[str, Any] = {
            "data": str(data), "seeds": seeds, "workloads": list(ws), "mechanisms": list(ms),
            "calibration_seeds": calibration_seeds,
            "variance_calibration": variance_calibration,
            "gedp_spec": None if gedp_spec is None else str(gedp_spec),
            "random": "seeded (numpy PCG64, seeds 0 … SEEDS − 1): NOT FOR PUBLICATION",
            "seconds": round(time.perf_counter() - t0, 1),
        }  # fmt: skip
        if stopped:
            meta["interrupted"] = stopped[0]
        with output_folder(out, "eree evaluate publication-grade", force=force) as tmp:
            paths = relocate(write_outputs(results, cals, tmp, meta), tmp, out)
            note = write_interrupted_note(tmp, meta)
    except (EreeError, OSError) as e:
        fail(e)
    console.print("[bold yellow]seeded randomness: NOT FOR PUBLICATION[/]")
    t = Table(title="mean L1 per cell, raw / post-processed (> 1: post-processing helps)")
    for col in ("workload", "mechanism", "marginal", "raw / post", "worse > 2 SE"):
        t.add_column(col)
    for r in results:
        t.add_row(r.workload, r.mechanism, r.marginal, f"{r.ratio:.2f}",
                  "yes" if r.worse_beyond_2se else "")  # fmt: skip
    console.print(t)
    for k, p in paths.items():
        console.print(f"{k}: {p}")
    console.print(f"done in {time.perf_counter() - t0:.1f} s")
    if note:
        err_console.print(f"[bold yellow]{escape(note)}[/]: partial results in {out}")
        raise typer.Exit(code=130)


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


def experiment_commands() -> list[tuple[str, str, Callable[..., None]]]:
    """Every ``eree evaluate`` command: its name, its help and its function, in order."""
    out: list[tuple[str, str, Callable[..., None]]] = []
    for name, (first, example) in HANEY_HELP.items():
        out.append(
            (
                name,
                _help(evaluate_haney.__doc__, first, example),
                _bound(evaluate_haney, experiment=name),
            )
        )
    for name, (first, example) in WEBB_HELP.items():
        out.append(
            (
                name,
                _help(evaluate_webb.__doc__, first, example),
                _bound(evaluate_webb, experiment=name),
            )
        )
    out.append(("workshop-figure1", workshop_figure1.__doc__ or "", workshop_figure1))
    out.append(("publication-grade", publication_grade.__doc__ or "", publication_grade))
    return out
