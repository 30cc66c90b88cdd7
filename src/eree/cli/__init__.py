"""The ``eree`` command: thin over the library (docs/design.md#command-line).

The command tree is assembled here; each command lives in the module of its group:

================  ============================================================
module            commands
================  ============================================================
``release``       ``explain``, ``validate``, ``protect``
``demo``          ``demo``
``synth``         ``synth lodes``, ``synth qcew``
``formats``       ``check-format``, ``spec preset``
``plan``          ``plan``
``ledger``        ``ledger budget``, ``ledger show``, ``ledger verify``
``evaluate``      ``evaluate haney-…``, ``webb-…``, ``workshop-figure1``, ``publication-grade``
``audit``         ``audit privacy``, ``audit noise-infusion``, ``audit suppression``,
                  ``audit reconstruct``, ``audit reconstruct-frontier``
``suppress``      ``suppress``
``coarsen``       ``coarsen``
``common``        the options, consoles, progress bars and the one error exit they share
``_program``      the machinery: lazy imports, a fast start, plain output, a fast exit
================  ============================================================

``evaluate``, ``audit``, ``suppress`` and ``coarsen`` are imported only when their group is used
(:func:`register_lazy_commands`); the other modules import Typer and the standard
library only, until a command runs.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from eree.cli import demo, formats, ledger, plan, release, synth
from eree.cli._program import lazy_typer, plain_call, run_and_exit

__all__ = ["app", "main", "register_lazy_commands", "run"]

_registered = False


def register_lazy_commands() -> None:
    """Register the experiment, audit and suppression commands (imports them; once)."""
    global _registered
    if _registered:
        return
    _registered = True
    from eree.cli import audit, coarsen, evaluate, suppress

    for name, help_text, command in evaluate.experiment_commands():
        evaluate_app.command(name, help=help_text)(command)
    audit_app.command("privacy")(audit.audit_privacy)
    audit_app.command("claims", help=audit.audit_claims.__doc__)(audit.audit_claims)
    audit_app.command("noise-infusion", help=audit.audit_noise_infusion.__doc__)(
        audit.audit_noise_infusion
    )
    audit_app.command("suppression", help=audit.audit_suppression.__doc__)(audit.audit_suppression)
    audit_app.command("reconstruct", help=audit.audit_reconstruct.__doc__)(audit.audit_reconstruct)
    audit_app.command("reconstruct-frontier", help=audit.audit_reconstruct_frontier.__doc__)(
        audit.audit_reconstruct_frontier
    )
    app.command("suppress", help=suppress.suppress.__doc__)(suppress.suppress)
    app.command("coarsen", help=coarsen.coarsen.__doc__)(coarsen.coarsen)


app = lazy_typer(
    {
        "suppress": "Cell suppression, the current QCEW practice: primary rules, complementary "
        "suppression over the linked tables (HiGHS), and the attacker's LP audit.",
        "coarsen": "Coarsening: round to a base, suppress only as last resort, audited by "
        "the attacker's LP over all published tables. No formal guarantee.",
    },
    register_lazy_commands,
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
evaluate_app = lazy_typer(
    register=register_lazy_commands,
    help="Reproduce the papers' experiments (tidy CSV, figures, HTML report).",
    no_args_is_help=True,
)
app.add_typer(evaluate_app, name="evaluate")
audit_app = lazy_typer(
    register=register_lazy_commands,
    help="Privacy audits: attacks on today's methods.",
    no_args_is_help=True,
)
app.add_typer(audit_app, name="audit")
ledger_app = typer.Typer(
    help="The privacy-budget ledger: register budgets, show spending, verify the chain.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(ledger_app, name="ledger")
spec_app = typer.Typer(
    help="Release specs of whole agency products.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(spec_app, name="spec")

app.command()(release.explain)
app.command()(release.validate)
app.command()(plan.plan)
app.command()(release.protect)
app.command()(demo.demo)
app.command("check-format")(formats.check_format)
spec_app.command("preset")(formats.spec_preset)
synth_app.command("lodes")(synth.synth_lodes)
synth_app.command("qcew")(synth.synth_qcew)
ledger_app.command("budget")(ledger.ledger_budget)
ledger_app.command("show")(ledger.ledger_show)
ledger_app.command("verify")(ledger.ledger_verify)


def main() -> None:
    """Run the ``eree`` command-line application (exit status 130 on Ctrl-C).

    A command line with plain parameters only (``eree protect SPEC --out DIR``) runs
    without Typer's parameter conversion (:func:`eree.cli._program.plain_call`; the root
    callback only prints the version); anything else goes through Typer.
    """
    try:
        if not plain_call(app, sys.argv[1:]):
            app()
    except KeyboardInterrupt:  # pragma: no cover
        sys.exit(130)


def run() -> None:
    """The ``eree`` program: :func:`main`, then an exit without the interpreter's teardown.

    See :func:`eree.cli._program.run_and_exit`.
    """
    run_and_exit(main)
