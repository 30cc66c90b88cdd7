"""``eree check-format`` and ``eree spec preset``: the agencies' file layouts and products.

See docs/product-lodes-wac.md and docs/product-qcew.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from eree.cli.common import console, fail
from eree.errors import EreeError

_FORMATS = "lodes-wac | lodes-rac | qcew-by-area | qcew-singlefile"


def check_format(
    file: Annotated[Path, typer.Argument(help="the file to check (csv or csv.gz)")],
    file_format: Annotated[str, typer.Option("--format", help=_FORMATS)],
    moe: Annotated[
        bool,
        typer.Option(
            "--moe",
            help="a margin-of-error companion: the sums are not checked; a margin may be "
            "empty (withheld by its mechanism)",
        ),
    ] = False,
    bounds: Annotated[
        bool,
        typer.Option(
            "--bounds",
            help="LODES: a coarsened publication's _lower/_upper companion: the sums are "
            "not checked; an upper bound may be empty (withheld)",
        ),
    ] = False,
    for_publication: Annotated[
        bool,
        typer.Option(
            "--for-publication",
            help="refuse (exit 2) a file marked NOT-FOR-PUBLICATION (from a seeded release)",
        ),
    ] = False,
) -> None:
    """Read a file back against an agency's public layout (LODES WAC/RAC, QCEW open data).

    Checks the file name (LODES), the header and column order, quoting (QCEW: codes
    quoted, numbers bare), codes, that counts are non-negative integers, that each LODES
    family adds up to C000 (education to CA02 + CA03) and QCEW's average weekly wage.
    Prints no value of the file: only whether it passed, or the file, row and column of
    the first problem (exit code 2). A file of a seeded release (``NOT-FOR-PUBLICATION``
    in its name, before the extension) is checked as the name without the mark and said
    to be not for publication; with --for-publication it is refused.

    Example: eree check-format pa_wac_S000_JT00_2015.csv.gz --format lodes-wac
    """
    from eree.release.layouts import FORMATS
    from eree.release.layouts import check_format as check

    if file_format not in FORMATS:
        fail(EreeError(f"--format must be one of {', '.join(FORMATS)}, not {file_format!r}"))
    if bounds and not file_format.startswith("lodes"):
        fail(EreeError("--bounds is for the LODES layouts (a coarsened WAC's companions)"))
    if bounds and moe:
        fail(EreeError("--bounds and --moe name different companions; give one"))
    try:
        result = check(file, file_format, companion=moe, bounds=bounds)
    except EreeError as e:
        fail(e)
    if result.seeded and for_publication:
        fail(
            EreeError(
                f"{file}: passes the {file_format} layout, but it is marked NOT FOR "
                "PUBLICATION (a seeded release: anyone who knows the seed can subtract the "
                "noise)"
            )
        )
    console.print(
        f"{file}: passes the {file_format} layout ({result.rows:,} rows, "
        f"{len(result.columns)} columns)"
    )
    if result.seeded:
        console.print(
            "  NOT FOR PUBLICATION: the file name carries the mark of a seeded release "
            "(reproducible noise: anyone who knows the seed can subtract it)"
        )
    for note in result.notes:
        console.print(f"  note: {note}")


def spec_preset(
    name: Annotated[str, typer.Argument(help="lodes-wac | qcew-county")],
    year: Annotated[int, typer.Option(help="the reference year written in the files")],
    quarter: Annotated[int, typer.Option(help="qcew-county: the reference quarter")] = 1,
    dataset: Annotated[str, typer.Option(help="the spec's name (its identity in a ledger)")] = (
        "product"
    ),
) -> None:
    """Print the release spec of a whole agency product (redirect it to a file).

    lodes-wac: every LODES WAC column family as a marginal by block under one ER-EE
    budget, publication-grade, written as a WAC file. qcew-county: the QCEW county levels
    70–78 by ownership under GEDP, written as QCEW by-area files. Data paths are the
    files `eree synth lodes|qcew` writes, relative to the spec; edit them for other data.

    Example: eree spec preset lodes-wac --year 2015 > pa/product.toml
    """
    from eree.release.presets import PRESETS, preset

    if name not in PRESETS:
        fail(EreeError(f"unknown preset {name!r}; one of {', '.join(PRESETS)}"))
    if not 1 <= quarter <= 4 or not 1000 <= year <= 9999:
        fail(EreeError("--year must be a 4-digit year and --quarter 1, 2, 3 or 4"))
    text = preset(name, dataset=dataset, year=year, quarter=quarter, shown="product.toml")
    typer.echo(text, nl=False)
