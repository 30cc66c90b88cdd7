"""``eree audit privacy|noise-infusion|suppression``: attacks on today's methods.

* ``privacy``: the empirical privacy audit of every registered mechanism
  (:mod:`eree.evaluate.privacy_audit`), and the floating-point attack on the sampling
  layer.
* ``noise-infusion``: the attacks of Haney et al. (SIGMOD 2017) §5.2 on input noise
  infusion (:mod:`eree.evaluate.attacks`).
* ``suppression``: the attacker's LP audit of a suppression pattern
  (:func:`eree.suppression.audit`); shares the establishment file, the rules and the
  ``internal/`` folder with ``eree suppress`` (:mod:`eree.cli.suppress`).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import polars as pl
import typer

from eree.cli.common import (
    DEFAULT_ATTRIBUTES,
    Attributes,
    DominanceK,
    DominanceN,
    ExemptOwn,
    Force,
    IdColumn,
    LodesData,
    MinProtection,
    PPercent,
    ProtectionPercent,
    Quiet,
    State,
    Table,
    Threshold,
    check_out,
    console,
    err_console,
    escape,
    fail,
    policy_allows,
    progress_bar,
)
from eree.cli.suppress import (
    audit_table,
    by_state,
    internal_folder,
    load_establishment_file,
    pinned_small,
    progress_updater,
    read_area_files,
    suppression_config,
    write_internal,
)
from eree.errors import EreeError


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
        fail(e)
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


def audit_noise_infusion(
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
    data: LodesData = None,
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

    if data is not None:
        policy_allows("audit noise-infusion", f"--data {data}")
    if out is not None:
        check_out(out, force)
    try:
        with err_console.status("loading data…"):
            ds = load_dataset(data, wac, seed=data_seed, scale=scale, jobs=jobs)
        with err_console.status("attacking…"):
            res = run_attacks(
                ds, alpha=alpha, epsilon=epsilon, theta=theta, trials=trials, seed=seed,
                attacks=tuple(attack) if attack else ATTACKS,
            )  # fmt: skip
    except (EreeError, OSError, ValueError) as e:
        fail(e)
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
            fail(e)
        console.print(f"written to {out}")


def audit_suppression(
    input: Annotated[
        Path | None,
        typer.Argument(help="establishment file (not needed with --bls-published)"),
    ] = None,
    published: Annotated[
        Path | None,
        typer.Option(help="a published table of 'eree suppress' to audit (its N cells)"),
    ] = None,
    bls_pattern: Annotated[
        Path | None,
        typer.Option(help="QCEW by-area files: audit BLS's N pattern on the input's values"),
    ] = None,
    bls_published: Annotated[
        Path | None,
        typer.Option(help="QCEW by-area files: audit BLS's publication itself (no input)"),
    ] = None,
    primary_only: Annotated[
        bool, typer.Option(help="audit eree's primary pattern without complements")
    ] = False,
    state: State = None,
    id_column: IdColumn = "primary_key",
    attributes: Attributes = DEFAULT_ATTRIBUTES,
    threshold: Threshold = 3,
    dominance_k: DominanceK = 80.0,
    dominance_n: DominanceN = 1,
    p_percent: PPercent = 10.0,
    protection_percent: ProtectionPercent = None,
    min_protection: MinProtection = 1.0,
    exempt_own: ExemptOwn = "1",
    keep_tables: Annotated[str, typer.Option(help="agglvl codes never complements")] = ("50,51,70"),
    year: Annotated[int, typer.Option(help="year of the BLS files")] = 2016,
    qtr: Annotated[int, typer.Option(help="quarter of the BLS files")] = 1,
    exact: Annotated[
        bool,
        typer.Option(
            help="solve both LPs of every suppressed cell of eree's own pattern "
            "(other patterns are always solved exactly)"
        ),
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            help="folder (new or empty): summary.json and, owner-only, internal/audit.parquet"
        ),
    ] = None,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    """The attacker's LP audit of a suppression pattern (eree's, a published table or BLS's).

    For every suppressed cell, the minimum and maximum an attacker can derive by linear
    programming from the published cells, the tables' additivity and non-negativity
    (HiGHS); reports every cell pinned down or narrowed below its protection interval.

    Patterns: eree's (default; --primary-only skips complementary suppression, which
    lets the attacker recover one-establishment cells), a published table of
    'eree suppress' (--published), BLS's N flags on the input's values (--bls-pattern),
    or BLS's publication alone, from its public files (--bls-published; no input; the
    values of suppressed cells are unknown, so only pinned and tight cells are reported).

    Example: eree audit suppression --bls-published qcew_2016_by_area --state 44
    """
    from eree.suppression import audit, primary_suppression, suppress_establishments
    from eree.suppression.pipeline import qcew_tables

    if input is not None:
        policy_allows("audit suppression", input)
    if out is not None:
        check_out(out, force)
    sources = [published is not None, bls_pattern is not None, bls_published is not None]
    if sum(sources) > 1:
        fail(ValueError("give at most one of --published, --bls-pattern, --bls-published"))
    try:
        cfg = suppression_config(
            attributes=attributes,
            threshold=threshold,
            dominance_k=dominance_k,
            dominance_n=dominance_n,
            p_percent=p_percent,
            protection_percent=protection_percent,
            min_protection=min_protection,
            exempt_own=exempt_own,
            keep_tables=keep_tables,
            skip_secondary=primary_only,
            exact_audit=exact,
        )
        t0 = time.perf_counter()
        runs: list[tuple[str, Any, Any]] = []  # (title, audit result, counts)
        if bls_published is not None:
            from eree.suppression.bls import bls_linked_tables

            if state is None:
                raise ValueError("--bls-published needs --state")
            with console.status("reading BLS's publication…"):
                tables, mask = bls_linked_tables(
                    read_area_files(bls_published, year, qtr), state, attributes=cfg.attributes
                )
            with progress_bar(quiet) as prog:
                task = prog.add_task("attacker's audit", total=None)
                res = audit(
                    tables,
                    mask,
                    attributes=cfg.attributes,
                    values_known=False,
                    progress=progress_updater(prog, task),
                )
            runs.append((f"BLS's publication, state {state}", res, tables.counts()))
        else:
            if input is None:
                raise ValueError("give an establishment file (or --bls-published)")
            with console.status("loading establishments…"):
                frame = load_establishment_file(input, id_column, cfg.attributes)
            for code, part in by_state(frame, state):
                label = f"state {code or '—'}"
                if published is None and bls_pattern is None:
                    with progress_bar(quiet) as prog:
                        t1 = prog.add_task(f"{label}: complementary suppression", total=None)
                        t2 = prog.add_task(f"{label}: attacker's audit", total=None)
                        r = suppress_establishments(
                            part,
                            cfg,
                            progress=progress_updater(prog, t1),
                            audit_progress=progress_updater(prog, t2),
                        )
                    kind = "primary only" if primary_only else "eree's pattern"
                    runs.append((f"{kind}, {label}", r.audit, r.tables.counts()))
                    continue
                tables = qcew_tables(part, cfg.attributes, top=cfg.rules.top_needed)
                prim = primary_suppression(tables, cfg.rules, cfg.attributes)
                if bls_pattern is not None:
                    from eree.suppression.bls import bls_cells
                    from eree.suppression.bls import bls_pattern as pattern_of

                    if code is None:
                        raise ValueError("--bls-pattern needs a 'state' column in the input")
                    mask = pattern_of(
                        tables, bls_cells(read_area_files(bls_pattern, year, qtr), code), code
                    )
                    kind = "BLS's N pattern"
                else:
                    mask = _published_mask(tables, published, code)  # type: ignore[arg-type]
                    kind = f"pattern of {published}"
                with progress_bar(quiet) as prog:
                    task = prog.add_task(f"{label}: attacker's audit", total=None)
                    res = audit(
                        tables,
                        mask,
                        attributes=cfg.attributes,
                        protection=prim.protection,
                        primary=prim.primary,
                        progress=progress_updater(prog, task),
                    )
                runs.append((f"{kind}, {label}", res, tables.counts()))
    except (EreeError, OSError, ValueError) as e:
        fail(e)
    summaries = []
    for title, res, counts in runs:
        small = pinned_small(res.bounds, counts)
        console.print(audit_table(f"Attacker's LP audit — {title}", res.summary(), small))
        s = res.summary() | {"title": title, "pinned_fewer_than_3_establishments": small}
        summaries.append(s)
    console.print(f"done in {time.perf_counter() - t0:.1f} s")
    if out is not None:
        from eree.data.outdir import output_folder

        try:
            with output_folder(out, "eree audit suppression", force=force) as tmp:
                write_internal(
                    pl.concat(
                        [r.bounds.with_columns(pl.lit(t).alias("run")) for t, r, _ in runs],
                        how="diagonal_relaxed",
                    ),
                    internal_folder(tmp) / "audit.parquet",
                )
                (tmp / "summary.json").write_text(json.dumps(summaries, indent=2, default=str))
        except (EreeError, OSError) as e:
            fail(e)
        console.print(f"written to {out}")


def _published_mask(tables: Any, path: Path, state: str | None) -> np.ndarray:
    """Suppressed cells of a published table of ``eree suppress`` (matched by keys)."""
    pub = (
        pl.read_parquet(path)
        if path.suffix == ".parquet"
        else pl.read_csv(path, infer_schema_length=0)
    )
    if "area_fips" in pub.columns and state is not None:
        pub = pub.filter(
            pl.col("area_fips").cast(pl.Utf8).str.zfill(5).str.starts_with(str(state).zfill(2))
        )
    keys = tables.key_columns
    missing = [k for k in [*keys, "disclosure_code"] if k not in pub.columns]
    if missing:
        raise ValueError(f"{path}: not a published table of 'eree suppress' (missing {missing})")
    pub = pub.select([pl.col(k).cast(pl.Utf8) for k in keys] + [pl.col("disclosure_code")])
    j = tables.cells.select(["cell", *keys]).join(pub, on=keys, how="left").sort("cell")
    if j.get_column("disclosure_code").null_count():
        raise ValueError(f"{path}: its cells do not match the input's linked tables")
    return (j.get_column("disclosure_code").fill_null("") == "N").to_numpy()


def audit_claims(
    spec: Annotated[Path, typer.Argument(help="the release spec (TOML)")],
    seeds: Annotated[int, typer.Option("--seeds", help="seeded releases to measure")] = 3,
    first_seed: Annotated[int, typer.Option("--first-seed", help="the first seed")] = 1,
    quiet: Quiet = False,
) -> None:
    """Every accuracy statement of a release beside its realised value (for the data holder).

    Releases SEEDS seeded copies of SPEC (NOT FOR PUBLICATION, never charged to a ledger,
    nothing kept), and prints each figure the report, the manifest and `eree validate`
    state (median relative error, share within ±10%, interval coverage, the size below
    which noise exceeds the value) beside the value measured against the confidential
    data. The output holds confidential measurements: do not publish it.

    Example: eree audit claims examples/syn-ri-table7.toml --seeds 3
    """
    from eree.evaluate.claims import AGREE
    from eree.evaluate.claims import audit_claims as run

    if seeds < 1:
        fail(EreeError("--seeds must be at least 1"))
    policy_allows("audit claims", f"the data of {spec}")
    console.print(
        f"[bold yellow]{seeds} seeded release(s) (seeds {first_seed}…{first_seed + seeds - 1}): "
        "NOT FOR PUBLICATION, never charged to a ledger, nothing written. Realised errors "
        "are measured against the confidential data: this output is for the data holder "
        "only.[/]"
    )
    try:
        with progress_bar(quiet) as bar:
            task = bar.add_task("releasing", total=seeds)
            claims = run(spec, seeds, first_seed=first_seed,
                         progress=lambda msg: bar.update(task, advance=1,
                                                         description=escape(msg)))  # fmt: skip
    except (EreeError, OSError) as e:
        fail(e)

    def pct(v: float | None, what: str) -> str:
        if v is None:
            return "—"
        if "std / value" in what or "E|error|" in what or "relative error" in what:
            return f"{100 * v:.3g}%" if "std / value" not in what else f"{v:.3g}"
        return f"{100 * v:.3g}%"

    t = Table(title=f"stated against realised, {seeds} seeded release(s)")
    for col in ("source", "table", "statistic", "statement", "stated", "realised", "cells",
                "stated/realised"):  # fmt: skip
        t.add_column(col)
    bad = 0
    for c in claims:
        r = c.ratio
        mark = "—" if r is None else f"{r:.2f}"
        if c.agrees is False:
            bad += 1
            mark = f"[bold red]{mark}[/]"
        t.add_row(c.source, escape(c.query), escape(c.statistic), escape(c.what),
                  pct(c.stated, c.what), pct(c.realised, c.what), f"{c.cells:,}", mark)  # fmt: skip
    console.print(t)
    measured = [c for c in claims if c.agrees is not None]
    console.print(
        f"{len(measured) - bad} of {len(measured)} measurable statements within a factor "
        f"{AGREE:g} of their realised value; {len(claims) - len(measured)} not measurable "
        "(no cells of that size, or no law stated)"
    )


def audit_reconstruct(
    tables: Annotated[
        Path,
        typer.Argument(
            help="an eree release folder (manifest.json) or a table file in the "
            "documented format (docs/reconstruction-audit.md)"
        ),
    ],
    truth: Annotated[
        Path | None,
        typer.Option(help="the true job tables (workplace, worker, job parquet): rates"),
    ] = None,
    unit: Annotated[str, typer.Option(help="the key of independent units")] = "block",
    only: Annotated[
        str | None, typer.Option(help="only units whose code starts with this (e.g. a county)")
    ] = None,
    use_tables: Annotated[
        str | None, typer.Option("--tables", help="only these tables (comma-separated)")
    ] = None,
    statistic: Annotated[
        str | None, typer.Option(help="the statistic column of a release's tables")
    ] = None,
    infusion_t: Annotated[
        float, typer.Option(help="assumed outer distortion bound t of noise infusion")
    ] = 0.15,
    level: Annotated[float, typer.Option(help="probability of a noisy cell's band")] = 0.95,
    threshold: Annotated[
        float, typer.Option(help="τ: NLL margin for a certain record (default ln 20)")
    ] = math.log(20.0),
    max_candidates: Annotated[
        int, typer.Option(help="skip units with more candidate combinations")
    ] = 20_000,
    max_checks: Annotated[int, typer.Option(help="confidence checks per unit")] = 200,
    workers: Annotated[
        int, typer.Option(help="processes solving the units (the map over units)")
    ] = 1,
    no_intervals: Annotated[
        bool, typer.Option("--no-intervals", help="skip the interval audit (a)")
    ] = False,
    no_records: Annotated[
        bool, typer.Option("--no-records", help="skip the reconstruction (b, c)")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
    out: Annotated[
        Path | None, typer.Option(help="folder (new or empty): reconstruction.json")
    ] = None,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    """What a release reveals: intervals of every cell and the records rebuilt from it.

    (a) For every cell, the tightest interval all published constraints imply jointly
    (LP, HiGHS, per connected component); (b) the records of each unit (block) as an
    integer program consistent with every table — the most likely records for noisy
    tables — with the attacker's confidence per record; (c) with --truth, the share of
    records rebuilt exactly and of unique records inferred. Output: counts and rates
    only (no value of the data).

    Example: eree audit reconstruct wac-release --truth pa --only 42023
    """
    from eree.engine.unitmap import ProcessMap
    from eree.evaluate.reconstruct import ReconstructConfig, read_tables
    from eree.evaluate.reconstruct.audit import (
        reconstruction_audit,
        restrict_units,
        summary_lines,
    )
    from eree.evaluate.reconstruct.release import read_release

    if out is not None:
        check_out(out, force)
    notes: list[str] = []
    try:
        if not 0.0 < level < 1.0:
            raise ValueError("--level must be in (0, 1)")
        if threshold < 0 or max_candidates < 1 or max_checks < 0 or workers < 1:
            raise ValueError(
                "--threshold, --max-candidates, --max-checks and --workers must be positive"
            )
        if not 0.0 < infusion_t < 1.0:
            raise ValueError("--infusion-t must be in (0, 1)")
        names = tuple(x.strip() for x in use_tables.split(",")) if use_tables else None
        if tables.is_dir():
            pub, notes = read_release(tables, statistic=statistic, infusion_t=infusion_t,
                                      tables=names)  # fmt: skip
        else:
            pub = read_tables(tables)
        if only is not None:
            pub = restrict_units(pub, unit, only)
        cfg = ReconstructConfig(unit=unit, threshold=threshold, max_candidates=max_candidates,
                                max_checks=max_checks, tables=names)  # fmt: skip
        with progress_bar(quiet or as_json) as prog:
            task = prog.add_task("rebuilding units", total=None)
            res = reconstruction_audit(
                pub, cfg, truth=truth, intervals=not no_intervals, records=not no_records,
                level=level, progress=progress_updater(prog, task),
                mapper=ProcessMap(workers) if workers > 1 else None,
            )  # fmt: skip
    except (EreeError, OSError, ValueError) as e:
        fail(e)
    res["notes"] = sorted(set(notes))
    if as_json:
        console.print_json(json.dumps(res, default=str))
    else:
        for line in summary_lines(res):
            console.print(escape(line))
        for n in res["notes"]:
            console.print(f"• {escape(n)}")
    if out is not None:
        from eree.data.outdir import output_folder

        try:
            with output_folder(out, "eree audit reconstruct", force=force) as tmp:
                (tmp / "reconstruction.json").write_text(json.dumps(res, indent=2, default=str))
        except (EreeError, OSError) as e:
            fail(e)
        if not as_json:
            console.print(f"written to {out}")


#: the establishment frontier's columns printed (all are written to frontier.csv)
ESTABLISHMENT_COLUMNS = (
    "method",
    "budget_factor",
    "cells",
    "cells_published",
    "information_loss",
    "share_useful",
    "mean_abs_error",
    "sensitive_cells",
    "rule_violations",
    "cells_known_exactly",
    "cells_pinned",
    "share_lone_within_10pct",
    "seconds",
)


def audit_reconstruct_frontier(
    data: Annotated[
        Path,
        typer.Argument(
            help="job tables (workplace, worker, job parquet; eree synth lodes) or, with "
            "--establishments, an establishment file (Syn-RI schema)"
        ),
    ],
    out: Annotated[Path, typer.Option(help="folder (new or empty): frontier.csv, .png, .json")],
    establishments: Annotated[
        bool, typer.Option(help="QCEW-like establishments: suppression vs GEDP")
    ] = False,
    only: Annotated[
        str | None,
        typer.Option(help="only blocks whose code starts with one of these (comma-separated)"),
    ] = None,
    epsilons: Annotated[str, typer.Option(help="ER-EE ε per cell (comma-separated)")] = (
        "0.5,1,2,4"
    ),
    budget_factors: Annotated[
        str, typer.Option(help="GEDP: multiples of Table 7's μ (comma-separated)")
    ] = "0.5,1,2,4",
    methods: Annotated[
        str | None,
        typer.Option(
            help="baseline,exact,suppressed,coarsened,noise_infusion,er_ee "
            "(default all but coarsened)"
        ),
    ] = None,
    coarsening: Annotated[
        str,
        typer.Option(
            help="establishments: coarsening arms, deterministic,random (default both) or none"
        ),
    ] = "deterministic,random",
    state: Annotated[
        str | None,
        typer.Option(help="establishments: the state (FIPS) when the file holds several"),
    ] = None,
    attribute: Annotated[
        str, typer.Option(help="establishments: the attribute published (m1emp, m3emp, …)")
    ] = "m3emp",
    seed: Annotated[int, typer.Option(help="seed of the releases (NOT FOR PUBLICATION)")] = 1,
    workers: Annotated[int, typer.Option(help="processes solving the blocks")] = 1,
    no_intervals: Annotated[
        bool, typer.Option("--no-intervals", help="skip the interval audit (cells pinned)")
    ] = False,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    """Risk against accuracy: the same data protected by each method, then attacked.

    Job tables: the eight WAC families by block published exactly, with small-cell
    suppression, with noise infusion, and by ER-EE (Log-Laplace, post-processed) at
    each ε per cell, plus a baseline (the jobs shuffled across blocks); each release is
    attacked by `eree audit reconstruct`'s attacker and scored against the data.
    Establishments (one state): exact tables, eree's cell suppression, coarsening
    (`eree coarsen`'s optimizer under the same rules, deterministic and random rounding)
    and GEDP (Table 7 × factors), on the same cells: cells published, information loss
    (relative error of the value read, withheld = 1), and the same interval audit (cells
    known exactly, pinned, sensitive cells narrowed below the rule). Writes frontier.csv,
    frontier.json and frontier.png (rates and errors only). The releases are seeded
    experiments (NOT FOR PUBLICATION), kept under OUT/releases/.

    Example: eree audit reconstruct-frontier est.csv.gz --establishments --state 10 --out f

    Example: eree audit reconstruct-frontier pa --only 42023,42053 --out frontier-pa
    """
    from eree.data.outdir import output_folder
    from eree.evaluate.reconstruct import frontier as fr

    check_out(out, force)

    def floats(s: str, what: str) -> tuple[float, ...]:
        try:
            v = tuple(float(x) for x in s.split(",") if x.strip())
        except ValueError:
            raise ValueError(f"{what}: not a comma-separated list of numbers") from None
        if not v or any(x <= 0 for x in v):
            raise ValueError(f"{what}: give positive numbers")
        return v

    try:
        if workers < 1:
            raise ValueError("--workers must be at least 1")
        eps = floats(epsilons, "--epsilons")
        factors = floats(budget_factors, "--budget-factors")
        arms = tuple(x.strip() for x in coarsening.split(",") if x.strip() not in ("", "none"))
        if any(a not in fr.COARSENINGS for a in arms):
            raise ValueError("--coarsening: give deterministic, random (comma-separated) or none")
        with output_folder(out, "eree audit reconstruct-frontier", force=force) as tmp:
            with err_console.status("protecting and attacking…") as status:

                def say(m: str) -> None:
                    if not quiet and status is not None:  # None when not on a terminal
                        status.update(f"{escape(m)}…")

                if establishments:
                    frame = load_establishment_file(data, "primary_key", (attribute,))
                    states = by_state(frame, state)
                    if len(states) > 1:
                        raise ValueError(
                            f"the file holds {len(states)} states; choose one with --state"
                        )
                    frame = states[0][1]
                    if "state" in frame.columns:
                        frame = frame.drop("state")
                    res = fr.frontier_establishments(
                        frame, attribute=attribute, budget_factors=factors, seed=seed,
                        coarsenings=arms, progress=say, releases=tmp / "releases",
                    )  # fmt: skip
                    fr.plot_establishment_frontier(res, tmp / "frontier.png")
                else:
                    res = fr.frontier_jobs(
                        data, tmp / "releases", epsilons=eps, seed=seed, progress=say,
                        prefixes=tuple(only.split(",")) if only else None,
                        methods=tuple(methods.split(",")) if methods else None,
                        workers=workers, intervals=not no_intervals,
                    )  # fmt: skip
                    fr.plot_frontier(res, tmp / "frontier.png")
            res.write_csv(tmp / "frontier.csv")
            (tmp / "frontier.json").write_text(json.dumps(res.to_dicts(), indent=2))
    except (EreeError, OSError, ValueError) as e:
        fail(e)
    console.print(f"[bold yellow]seeded releases (seed {seed}): NOT FOR PUBLICATION[/]")
    t = Table(title="risk against accuracy")
    if establishments:  # the comparison's columns; every column is in frontier.csv
        shown = [c for c in ESTABLISHMENT_COLUMNS if c in res.columns]
    else:
        skip = ("cells", "peak_memory_mb", "units", "records", "unique_records")
        shown = [c for c in res.columns if c not in skip]
    for c in shown:
        t.add_column(c.replace("_", " "), justify="right")
    for r in res.to_dicts():
        t.add_row(*[
            "—" if r[c] is None else (f"{r[c]:.3g}" if isinstance(r[c], float) else str(r[c]))
            for c in shown
        ])  # fmt: skip
    console.print(t)
    console.print(f"written to {out}")
