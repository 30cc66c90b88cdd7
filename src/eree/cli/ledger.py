"""``eree ledger budget|show|verify``: the privacy-budget ledger of an agency."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from eree.cli.common import AsJson, Table, console, err_console, escape, fail, table_value
from eree.errors import EreeError


def _open_ledger(path: Path, must_exist: bool = True) -> Any:
    from eree.privacy.ledger import Ledger

    try:
        exists = path.is_file()
    except OSError as e:  # a name over the file system's limit, a loop of links, …
        fail(EreeError(f"ledger {path}: {e.strerror or type(e).__name__}"))
    if must_exist and not exists:
        fail(EreeError(f"no ledger at {path}"))
    # an auditor's read-only copy is read as it is (nothing reconciled, nothing written)
    folder = path.parent if str(path.parent) else Path(".")
    read_only = must_exist and not (os.access(path, os.W_OK) and os.access(folder, os.W_OK))
    try:
        return Ledger(path, read_only=read_only)
    except EreeError as e:
        fail(e)


def ledger_budget(
    ledger: Annotated[Path, typer.Argument(help="the ledger (SQLite; created if absent)")],
    name: Annotated[str, typer.Argument(help="dataset name (the spec's `name`)")],
    # budgets are read as the decimals written, never through a float (1e-400 is not 0)
    epsilon: Annotated[str | None, typer.Option(help="ER-EE family: lifetime ε")] = None,
    delta: Annotated[str | None, typer.Option(help="ER-EE family: lifetime δ (default 0)")] = None,
    alpha: Annotated[
        str | None,
        typer.Option(help="ER-EE family: the dataset's one α (default: the first release's)"),
    ] = None,
    mu: Annotated[str | None, typer.Option(help="GEDP family: lifetime μ")] = None,
    below_spent: Annotated[
        bool,
        typer.Option(
            "--below-spent",
            help="set a budget below what the dataset already spent (closes it to releases)",
        ),
    ] = False,
) -> None:
    """Register a dataset and its lifetime budget (administrators).

    A release with --ledger on an unregistered dataset is refused. Give --epsilon
    [--delta] [--alpha] for ER-EE data, --mu for establishment (GEDP) data. Running it
    again changes the budget (recorded in the ledger); a budget below what the dataset's
    releases already spent is refused unless --below-spent.

    Example: eree ledger budget budget.sqlite pa-2015 --epsilon 4 --delta 1e-6 --alpha 0.1
    """
    from eree.privacy.budget_values import budget_value

    try:  # before the ledger is opened: a refused value creates no ledger and no key
        for key, v in {"epsilon": epsilon, "delta": delta, "alpha": alpha, "mu": mu}.items():
            if v is not None:
                budget_value(name, key, v)
    except EreeError as e:
        fail(e)
    book = _open_ledger(ledger, must_exist=False)
    try:
        b = book.set_budget(
            name, epsilon=epsilon, delta=delta, alpha=alpha, mu=mu, below_spent=below_spent
        )
    except EreeError as e:
        fail(e)
    from fractions import Fraction

    shown = ", ".join(f"{k}={float(Fraction(v)):g}" for k, v in b.items())
    console.print(f"dataset {name!r}: lifetime budget {shown} (ledger {ledger})")


def ledger_show(
    ledger: Annotated[Path, typer.Argument(help="the ledger (SQLite)")],
    as_json: AsJson = False,
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
        spent = ", ".join(f"{k}={table_value(v)}" for k, v in e["spent"].items() if v is not None)
        budget = ", ".join(f"{k}={v:g}" for k, v in e["budget"].items())
        versions = " → ".join(f"v{v['version']}" for v in e["versions"]) or "—"
        rel = ", ".join(f"{n} {s}" for s, n in e["releases"].items() if n)
        t.add_row(e["dataset"], e["family"], table_value(e["alpha"]), budget, spent or "—",
                  versions, rel or "—")  # fmt: skip
    console.print(t)


def ledger_verify(
    ledger: Annotated[Path, typer.Argument(help="the ledger (SQLite)")],
    release: Annotated[
        list[Path] | None,
        typer.Option("--release", help="a release directory to check against the ledger"),
    ] = None,
) -> None:
    """Check the ledger's hash chain (an edited or deleted row is detected).

    With --release, also check each release: a charged one's manifest must name a row of
    the ledger with its hash; a seeded one (not for publication) is never charged, and is
    reported as such. Exit code 1 when a problem is found.

    Example: eree ledger verify budget.sqlite --release release-2026q1
    """
    book = _open_ledger(ledger)
    try:
        res = book.verify(list(release or []))
    except EreeError as e:
        fail(e)
    for line in res.releases:
        console.print(escape(line))
    if res.ok:
        console.print(f"[bold green]ok[/]: {res.events} rows, chain intact")
        return
    for p in res.problems:
        err_console.print(f"[bold red]tampered:[/] {escape(p)}")
    raise typer.Exit(code=1)
