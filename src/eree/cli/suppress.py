"""``eree suppress``: cell suppression, the current QCEW practice.

See docs/design.md#cell-suppression, #command-line.

Also what ``eree audit suppression`` (:mod:`eree.cli.audit`) shares with it: reading the
establishment file, the suppression rules from the options, one state at a time, the
audit table and the owner-only ``internal/`` folder. The suppression package
(:mod:`eree.suppression`) is imported only when a command runs.

Both commands read an establishment file in the Syn-RI schema (CSV, CSV.gz or Parquet:
``primary_key``, ``cnty``, ``own``, ``naics`` (prefixes and ``super_sector`` are
derived when absent), optionally ``state``, and the confidential ``m1emp``, ``m2emp``,
``m3emp``, ``wage``) and work one state at a time. Screen output holds counts and rates
only, never a confidential value; the files marked *internal* below do hold true values
or values an attacker could pin down, and are not for publication: they are written to an
``internal/`` folder, owner-only (0600; docs/design.md#what-may-be-published).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
import polars as pl
import typer

from eree.cli.common import (
    DEFAULT_ATTRIBUTES,
    Attributes,
    DominanceK,
    DominanceN,
    EstablishmentFile,
    ExemptOwn,
    Force,
    IdColumn,
    MinProtection,
    Out,
    PPercent,
    ProtectionPercent,
    Quiet,
    State,
    Table,
    Threshold,
    WriteCsv,
    check_out,
    console,
    err_console,
    fail,
    policy_allows,
    progress_bar,
)
from eree.errors import EreeError

if TYPE_CHECKING:  # pragma: no cover
    from rich.progress import Progress


def _split(s: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in s.split(",") if x.strip())


def suppression_config(
    *,
    attributes: str,
    threshold: int,
    dominance_k: float,
    dominance_n: int,
    p_percent: float,
    protection_percent: float | None,
    min_protection: float,
    exempt_own: str,
    keep_tables: str,
    cost: str = "value",
    skip_secondary: bool = False,
    run_audit: bool = True,
    workers: int | None = None,
    exact_audit: bool = False,
) -> Any:
    """The :class:`~eree.suppression.SuppressionConfig` the options describe.

    Comma-separated lists are split; a rule set to 0 (``threshold``, ``dominance_k``,
    ``p_percent``) is off.
    """
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


def load_establishment_file(
    path: Path, id_column: str, attributes: tuple[str, ...]
) -> pl.DataFrame:
    """The establishments of a file in the Syn-RI schema (``state`` kept when present)."""
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


def by_state(frame: pl.DataFrame, state: str | None) -> list[tuple[str | None, pl.DataFrame]]:
    """``(state code, its establishments)`` for each state (``--state``: that one only)."""
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


def progress_updater(prog: Progress, task: Any) -> Callable[[int, int], None]:
    """A progress callback (done, total) moving ``task`` of ``prog``."""

    def update(done: int, total: int) -> None:
        prog.update(task, completed=done, total=total, visible=True)

    return update


def _write(df: pl.DataFrame, path: Path, csv: bool) -> None:
    df.write_parquet(path.with_suffix(".parquet"))
    if csv:
        df.write_csv(path.with_suffix(".csv"))


def internal_folder(folder: Path) -> Path:
    """The owner-only ``internal/`` folder of ``folder`` (docs/design.md#what-may-be-published)."""
    d = folder / "internal"
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(d, 0o700)
    return d


def write_internal(df: pl.DataFrame, path: Path) -> None:
    """Write a confidential parquet file, created owner-only (0600)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "wb") as f:
        df.write_parquet(f)


def read_area_files(path: Path, year: int, qtr: int) -> pl.DataFrame:
    """The QCEW by-area files of a quarter (``--bls``)."""
    from eree.data.qcew import read_qcew_area_files

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


def audit_table(title: str, summary: dict[str, Any], small: dict[str, int] | None) -> Any:
    """The attacker's LP audit per attribute: cells audited, pinned, narrowed, unbounded."""
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


def pinned_small(bounds: pl.DataFrame, counts: np.ndarray) -> dict[str, int]:
    """Per attribute, the pinned cells with fewer than 3 establishments."""
    if bounds.height == 0:
        return {}
    n = counts[bounds.get_column("cell").to_numpy()]
    df = bounds.with_columns(pl.Series("_n", n)).filter(pl.col("pinned"), pl.col("_n") < 3)
    return {str(r["attribute"]): int(r["len"]) for r in df.group_by("attribute").len().to_dicts()}


def suppress(
    input: EstablishmentFile,
    out: Out,
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
    csv: WriteCsv = True,
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

    policy_allows("suppress", input)
    check_out(out, force)
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
            cost=cost,
            skip_secondary=skip_secondary,
            run_audit=not no_audit,
            workers=workers,
            exact_audit=exact_audit,
        )
        with console.status("loading establishments…"):
            frame = load_establishment_file(input, id_column, cfg.attributes)
        parts = by_state(frame, state)
    except (EreeError, OSError, ValueError) as e:
        fail(e)
    tmp = make_temp_folder(out, f".{out.name}.partial-")
    finished: list[str] = []
    try:
        for code, part in parts:
            t0 = time.perf_counter()
            with progress_bar(quiet) as prog:
                label = f"state {code or '—'}"
                task = prog.add_task(f"{label}: complementary suppression", total=None)
                atask = prog.add_task(f"{label}: attacker's audit", total=None, visible=False)

                res = suppress_establishments(
                    part,
                    cfg,
                    progress=progress_updater(prog, task),
                    audit_progress=progress_updater(prog, atask),
                )
            d = tmp / (code or "all")
            d.mkdir(parents=True)
            _write(res.published(), d / "published", csv)
            write_internal(res.pattern(), internal_folder(d) / "pattern.parquet")
            rates = res.rates()
            rates.drop("employment_share_suppressed").write_csv(d / "rates.csv")
            summary = res.summary()
            comparison = None
            if bls is not None and res.state is not None:
                from eree.suppression.bls import bls_cells, compare_with_bls

                area_cells = read_area_files(bls, year, qtr)
                comparison = compare_with_bls(res, bls_cells(area_cells, res.state))
                comparison.write_csv(d / "bls_comparison.csv")
                summary["bls_comparison"] = comparison.to_dicts()
            if res.audit is not None:
                write_internal(res.audit.bounds, internal_folder(d) / "audit.parquet")
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
                small = pinned_small(res.audit.bounds, res.tables.counts())
                console.print(audit_table("Attacker's LP audit", res.audit.summary(), small))
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
        fail(e)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    console.print(f"written to {out}")
