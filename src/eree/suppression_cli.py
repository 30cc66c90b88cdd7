"""``eree suppress`` and the cell-suppression audit (DESIGN.md §4.3, §7.1).

Typer command functions, registered by :mod:`eree.cli` as ``eree suppress`` and
``eree audit suppression``; the suppression package (:mod:`eree.suppression`) is
imported only when a command runs.

Both read an establishment file in the Syn-RI schema (CSV, CSV.gz or Parquet:
``primary_key``, ``cnty``, ``own``, ``naics`` (prefixes and ``super_sector`` are
derived when absent), optionally ``state``, and the confidential ``m1emp``, ``m2emp``,
``m3emp``, ``wage``) and work one state at a time. Screen output holds counts and rates
only, never a confidential value; the files marked *internal* below do hold true values
or values an attacker could pin down, and are not for publication: they are written to an
``internal/`` folder, owner-only (0600; DESIGN.md §4.4).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import polars as pl
import typer
from rich.progress import Progress

from eree.clikit import Force, LazyConsole, Quiet, Table, check_out, escape
from eree.errors import EreeError

__all__ = ["audit_suppression", "suppress"]

console = LazyConsole()
err_console = LazyConsole(stderr=True)

_ATTRS = "m1emp,m2emp,m3emp,wage"


def _fail(e: Exception) -> None:
    err_console.print(f"[bold red]error:[/] {escape(str(e))}")
    raise typer.Exit(code=2)


def _split(s: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in s.split(",") if x.strip())


def _config(
    attributes: str,
    threshold: int,
    dominance_k: float,
    dominance_n: int,
    p_percent: float,
    protection_percent: float | None,
    min_protection: float,
    exempt_own: str,
    keep_tables: str,
    cost: str,
    skip_secondary: bool = False,
    run_audit: bool = True,
    workers: int | None = None,
    exact_audit: bool = False,
) -> Any:
    from eree.suppression import PrimaryRules, SecondaryConfig, SuppressionConfig

    rules = PrimaryRules(
        threshold=threshold or None,
        dominance_n=dominance_n,
        dominance_k=dominance_k or None,
        p_percent=p_percent or None,
        protection_percent=protection_percent,
        min_protection=min_protection,
        exempt={"own": _split(exempt_own)} if _split(exempt_own) else {},
    )
    return SuppressionConfig(
        rules=rules,
        secondary=SecondaryConfig(cost=cost, keep_tables=_split(keep_tables), workers=workers),
        attributes=_split(attributes),
        skip_secondary=skip_secondary,
        run_audit=run_audit,
        exact_audit=exact_audit,
    )


def _load(path: Path, id_column: str, attributes: tuple[str, ...]) -> pl.DataFrame:
    from eree.data.config import EstablishmentDataConfig
    from eree.data.establishments import load_establishments
    from eree.data.io import read_header

    header = set(read_header(path))
    public = ["cnty", "own", "naics", "naics3", "naics4", "naics5", "super_sector"]
    if "state" in header:
        public.insert(0, "state")
    cfg = EstablishmentDataConfig(
        path=path, id=id_column, public=tuple(public), confidential=attributes
    )
    return load_establishments(cfg).frame


def _states(frame: pl.DataFrame, state: str | None) -> list[tuple[str | None, pl.DataFrame]]:
    if "state" not in frame.columns:
        if state is not None:
            raise ValueError("--state given but the input has no 'state' column")
        return [(None, frame)]
    codes = sorted(frame.get_column("state").unique().to_list(), key=lambda s: int(s))
    if state is not None:
        want = [c for c in codes if int(c) == int(state)]
        if not want:
            raise ValueError(f"state {state!r} is not in the input (states: {', '.join(codes)})")
        codes = want
    return [(c, frame.filter(pl.col("state") == c)) for c in codes]


def _progress(quiet: bool = False) -> Progress:
    from eree.clikit import progress_bar

    bar: Progress = progress_bar(quiet)
    return bar


def _updater(prog: Progress, task: Any) -> Callable[[int, int], None]:
    """A progress callback (done, total) moving ``task`` of ``prog``."""

    def update(done: int, total: int) -> None:
        prog.update(task, completed=done, total=total, visible=True)

    return update


def _write(df: pl.DataFrame, path: Path, csv: bool) -> None:
    df.write_parquet(path.with_suffix(".parquet"))
    if csv:
        df.write_csv(path.with_suffix(".csv"))


def _internal(folder: Path) -> Path:
    """The owner-only ``internal/`` folder of ``folder`` (DESIGN.md §4.4)."""
    d = folder / "internal"
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(d, 0o700)
    return d


def _write_internal(df: pl.DataFrame, path: Path) -> None:
    """Write a confidential parquet file, created owner-only (0600)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "wb") as f:
        df.write_parquet(f)


def _read_area(path: Path, year: int, qtr: int) -> pl.DataFrame:
    from eree.synth.qcew import read_qcew_area_files

    return read_qcew_area_files(path, year, qtr)


def _rates_table(title: str, rates: pl.DataFrame, bls: pl.DataFrame | None) -> Any:
    t = Table(title=title)
    cols = ["agglvl", "cells", "suppressed", "primary", "estabs in supp."]
    if bls is not None:
        cols += ["BLS suppressed", "BLS estabs in supp.", "agree"]
    for c in cols:
        t.add_column(c, justify="right")
    b = {r["table_code"]: r for r in bls.to_dicts()} if bls is not None else {}
    for r in rates.to_dicts():
        row = [
            r["table_code"],
            str(r["cells"]),
            f"{r['suppressed_share']:.1%}",
            f"{r['primary_share']:.1%}",
            f"{r['establishment_share_suppressed']:.1%}",
        ]
        if bls is not None:
            x = b.get(r["table_code"])
            row += (
                [
                    f"{x['bls_suppressed_share']:.1%}",
                    f"{x['bls_establishment_share_suppressed']:.1%}",
                    f"{1 - x['bls_only'] - x['eree_only']:.1%}",
                ]
                if x
                else ["—", "—", "—"]
            )
        t.add_row(*row)
    return t


def _audit_table(title: str, summary: dict[str, Any], small: dict[str, int] | None) -> Any:
    t = Table(title=title)
    for c in (
        "attribute",
        "audited",
        "pinned",
        "pinned, < 3 estabs",
        "primary narrowed",
        "within ±10%",
        "unbounded",
    ):
        t.add_column(c, justify="right")
    for a, s in summary["attributes"].items():
        pinned = s["pinned"]
        shown = f"[bold red]{pinned}[/]" if pinned else "0"
        t.add_row(
            a,
            str(s["audited"]),
            shown,
            str(small.get(a, 0)) if small is not None else "—",
            str(s["narrowed_primary"]),
            str(s["within_10_percent"]),
            str(s["unbounded_above"]),
        )
    return t


def _pinned_small(bounds: pl.DataFrame, counts: np.ndarray) -> dict[str, int]:
    if bounds.height == 0:
        return {}
    n = counts[bounds.get_column("cell").to_numpy()]
    df = bounds.with_columns(pl.Series("_n", n)).filter(pl.col("pinned"), pl.col("_n") < 3)
    return {str(r["attribute"]): int(r["len"]) for r in df.group_by("attribute").len().to_dicts()}


# --------------------------------------------------------------------------------------
# eree suppress
# --------------------------------------------------------------------------------------


def suppress(
    input: Annotated[Path, typer.Argument(help="establishment file (csv, csv.gz, parquet)")],
    out: Annotated[Path, typer.Option("--out", help="output folder (new or empty)")],
    state: Annotated[
        str | None, typer.Option(help="only this state (default: every state, one by one)")
    ] = None,
    id_column: Annotated[str, typer.Option("--id", help="establishment id column")] = (
        "primary_key"
    ),
    attributes: Annotated[
        str, typer.Option(help="confidential attributes (comma-separated)")
    ] = _ATTRS,
    threshold: Annotated[
        int, typer.Option(help="suppress cells with fewer establishments (0: off)")
    ] = 3,
    dominance_k: Annotated[
        float, typer.Option(help="(n,k) dominance: the n largest > k% of the cell (0: off)")
    ] = 80.0,
    dominance_n: Annotated[int, typer.Option(help="n of the dominance rule")] = 1,
    p_percent: Annotated[float, typer.Option(help="p of the p% rule (0: off)")] = 10.0,
    protection_percent: Annotated[
        float | None, typer.Option(help="protection of threshold cells, % of the largest")
    ] = None,
    min_protection: Annotated[
        float, typer.Option(help="smallest protection level (attribute units)")
    ] = 1.0,
    exempt_own: Annotated[
        str, typer.Option(help="ownership codes never suppressed (BLS: 1 federal)")
    ] = "1",
    keep_tables: Annotated[
        str, typer.Option(help="agglvl codes never used as complements")
    ] = "50,51,70",
    cost: Annotated[str, typer.Option(help="complement cost: value | count | unit")] = "value",
    skip_secondary: Annotated[
        bool, typer.Option(help="primary suppression only (shows the attack)")
    ] = False,
    no_audit: Annotated[bool, typer.Option("--no-audit", help="skip the LP audit")] = False,
    exact_audit: Annotated[
        bool,
        typer.Option(
            help="solve both LPs of every suppressed cell (default: only where "
            "the complements' witnesses do not already prove protection)"
        ),
    ] = False,
    workers: Annotated[
        int | None, typer.Option(help="processes for complementary suppression (default: cores)")
    ] = None,
    bls: Annotated[
        Path | None,
        typer.Option(help="QCEW by-area files: compare with BLS's actual rates (code N)"),
    ] = None,
    year: Annotated[int, typer.Option(help="year of the --bls files")] = 2016,
    qtr: Annotated[int, typer.Option(help="quarter of the --bls files")] = 1,
    gedp: Annotated[
        bool, typer.Option(help="also compare with a GEDP release (Table 7 budgets)")
    ] = False,
    trials: Annotated[int, typer.Option(help="GEDP releases for --gedp")] = 3,
    seed: Annotated[int, typer.Option(help="seed of --gedp (NOT FOR PUBLICATION)")] = 0,
    csv: Annotated[bool, typer.Option(help="also write CSV files")] = True,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    """Cell suppression, the current QCEW practice (published tables, rates, audit).

    Primary rules, complementary suppression over the linked tables (HiGHS), and the
    attacker's LP audit.

    Writes OUT/<state>/: published.parquet (the release: values withheld where
    disclosure_code is N), rates.csv, summary.json (counts, rates, timings, how many
    LPs were solved and why), and — internal, not for publication, owner-only in
    OUT/<state>/internal/ — pattern.parquet (which rule fired) and audit.parquet
    (true values next to the attacker's bounds). With --bls, also
    bls_comparison.csv; with --gedp, gedp_comparison.csv. Interrupting (Ctrl-C)
    keeps the states already finished (OUT/INTERRUPTED lists them).

    Example: eree suppress ri/establishments.csv.gz --out ri-suppressed --bls qcew_2016_by_area
    """
    from eree.data.outdir import make_temp_folder, put_in_place, write_marker
    from eree.suppression import suppress_establishments

    check_out(out, force)
    try:
        cfg = _config(
            attributes,
            threshold,
            dominance_k,
            dominance_n,
            p_percent,
            protection_percent,
            min_protection,
            exempt_own,
            keep_tables,
            cost,
            skip_secondary,
            not no_audit,
            workers,
            exact_audit,
        )
        with console.status("loading establishments…"):
            frame = _load(input, id_column, cfg.attributes)
        parts = _states(frame, state)
    except (EreeError, OSError, ValueError) as e:
        _fail(e)
        return
    tmp = make_temp_folder(out, f".{out.name}.partial-")
    finished: list[str] = []
    try:
        for code, part in parts:
            t0 = time.perf_counter()
            with _progress(quiet) as prog:
                label = f"state {code or '—'}"
                task = prog.add_task(f"{label}: complementary suppression", total=None)
                atask = prog.add_task(f"{label}: attacker's audit", total=None, visible=False)

                res = suppress_establishments(
                    part, cfg, progress=_updater(prog, task), audit_progress=_updater(prog, atask)
                )
            d = tmp / (code or "all")
            d.mkdir(parents=True)
            _write(res.published(), d / "published", csv)
            _write_internal(res.pattern(), _internal(d) / "pattern.parquet")
            rates = res.rates()
            rates.drop("employment_share_suppressed").write_csv(d / "rates.csv")
            summary = res.summary()
            comparison = None
            if bls is not None and res.state is not None:
                from eree.suppression.bls import bls_cells, compare_with_bls

                area_cells = _read_area(bls, year, qtr)
                comparison = compare_with_bls(res, bls_cells(area_cells, res.state))
                comparison.write_csv(d / "bls_comparison.csv")
                summary["bls_comparison"] = comparison.to_dicts()
            if res.audit is not None:
                _write_internal(res.audit.bounds, _internal(d) / "audit.parquet")
            if gedp:
                from eree.evaluate.suppression_compare import compare_with_gedp

                with console.status("GEDP releases…"):
                    cmp = compare_with_gedp(part, res, trials=trials, seed=seed)
                cmp.write_csv(d / "gedp_comparison.csv")
            summary["seconds"] = round(time.perf_counter() - t0, 2)
            (d / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
            console.print(
                _rates_table(
                    f"State {code or '—'}: {summary['suppressed']:,} of {summary['cells']:,} "
                    f"cells suppressed ({summary['primary']:,} primary)",
                    rates,
                    comparison,
                )
            )
            if res.audit is not None:
                small = _pinned_small(res.audit.bounds, res.tables.counts())
                console.print(_audit_table("Attacker's LP audit", res.audit.summary(), small))
            console.print(f"done in {summary['seconds']:.1f} s ({summary['timings_s']})")
            finished.append(code or "all")
        write_marker(tmp, "eree suppress")
        put_in_place(tmp, out)
    except KeyboardInterrupt:
        if finished:
            (tmp / "INTERRUPTED").write_text(
                "interrupted; states finished: " + ", ".join(finished) + "\n"
            )
            write_marker(tmp, "eree suppress")
            put_in_place(tmp, out)
            err_console.print(
                f"interrupted: kept the finished states ({', '.join(finished)}) in {out}"
            )
        else:
            shutil.rmtree(tmp, ignore_errors=True)
            err_console.print("interrupted before any state finished: nothing written")
        raise typer.Exit(code=130) from None
    except (EreeError, OSError, ValueError) as e:
        shutil.rmtree(tmp, ignore_errors=True)
        _fail(e)
        return
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    console.print(f"written to {out}")


# --------------------------------------------------------------------------------------
# eree audit (suppression)
# --------------------------------------------------------------------------------------


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
    state: Annotated[str | None, typer.Option(help="the state (FIPS)")] = None,
    id_column: Annotated[str, typer.Option("--id", help="establishment id column")] = (
        "primary_key"
    ),
    attributes: Annotated[str, typer.Option(help="attributes (comma-separated)")] = _ATTRS,
    threshold: Annotated[int, typer.Option(help="threshold rule (0: off)")] = 3,
    dominance_k: Annotated[float, typer.Option(help="dominance k% (0: off)")] = 80.0,
    dominance_n: Annotated[int, typer.Option(help="dominance n")] = 1,
    p_percent: Annotated[float, typer.Option(help="p% rule (0: off)")] = 10.0,
    protection_percent: Annotated[float | None, typer.Option(help="threshold protection %")] = (
        None
    ),
    min_protection: Annotated[float, typer.Option(help="smallest protection level")] = 1.0,
    exempt_own: Annotated[str, typer.Option(help="ownership codes never suppressed")] = "1",
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

    if out is not None:
        check_out(out, force)
    sources = [published is not None, bls_pattern is not None, bls_published is not None]
    if sum(sources) > 1:
        _fail(ValueError("give at most one of --published, --bls-pattern, --bls-published"))
        return
    try:
        cfg = _config(
            attributes,
            threshold,
            dominance_k,
            dominance_n,
            p_percent,
            protection_percent,
            min_protection,
            exempt_own,
            keep_tables,
            "value",
            primary_only,
            True,
            None,
            exact,
        )
        t0 = time.perf_counter()
        runs: list[tuple[str, Any, Any]] = []  # (title, audit result, counts)
        if bls_published is not None:
            from eree.suppression.bls import bls_linked_tables

            if state is None:
                raise ValueError("--bls-published needs --state")
            with console.status("reading BLS's publication…"):
                tables, mask = bls_linked_tables(
                    _read_area(bls_published, year, qtr), state, attributes=cfg.attributes
                )
            with _progress(quiet) as prog:
                task = prog.add_task("attacker's audit", total=None)
                res = audit(
                    tables,
                    mask,
                    attributes=cfg.attributes,
                    values_known=False,
                    progress=_updater(prog, task),
                )
            runs.append((f"BLS's publication, state {state}", res, tables.counts()))
        else:
            if input is None:
                raise ValueError("give an establishment file (or --bls-published)")
            with console.status("loading establishments…"):
                frame = _load(input, id_column, cfg.attributes)
            for code, part in _states(frame, state):
                label = f"state {code or '—'}"
                if published is None and bls_pattern is None:
                    with _progress(quiet) as prog:
                        t1 = prog.add_task(f"{label}: complementary suppression", total=None)
                        t2 = prog.add_task(f"{label}: attacker's audit", total=None)
                        r = suppress_establishments(
                            part,
                            cfg,
                            progress=_updater(prog, t1),
                            audit_progress=_updater(prog, t2),
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
                        tables, bls_cells(_read_area(bls_pattern, year, qtr), code), code
                    )
                    kind = "BLS's N pattern"
                else:
                    mask = _published_mask(tables, published, code)  # type: ignore[arg-type]
                    kind = f"pattern of {published}"
                with _progress(quiet) as prog:
                    task = prog.add_task(f"{label}: attacker's audit", total=None)
                    res = audit(
                        tables,
                        mask,
                        attributes=cfg.attributes,
                        protection=prim.protection,
                        primary=prim.primary,
                        progress=_updater(prog, task),
                    )
                runs.append((f"{kind}, {label}", res, tables.counts()))
    except (EreeError, OSError, ValueError) as e:
        _fail(e)
        return
    summaries = []
    for title, res, counts in runs:
        small = _pinned_small(res.bounds, counts)
        console.print(_audit_table(f"Attacker's LP audit — {title}", res.summary(), small))
        s = res.summary() | {"title": title, "pinned_fewer_than_3_establishments": small}
        summaries.append(s)
    console.print(f"done in {time.perf_counter() - t0:.1f} s")
    if out is not None:
        from eree.data.outdir import output_folder

        try:
            with output_folder(out, "eree audit suppression", force=force) as tmp:
                _write_internal(
                    pl.concat(
                        [r.bounds.with_columns(pl.lit(t).alias("run")) for t, r, _ in runs],
                        how="diagonal_relaxed",
                    ),
                    _internal(tmp) / "audit.parquet",
                )
                (tmp / "summary.json").write_text(json.dumps(summaries, indent=2, default=str))
        except (EreeError, OSError) as e:
            _fail(e)
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
