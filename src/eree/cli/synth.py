"""``eree synth lodes|qcew``: synthetic input data and a starter release spec for it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from eree.cli.common import Force, Out, check_out, console, err_console, fail
from eree.errors import EreeError


def synth_lodes(
    out: Out,
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
                product = _write_wac_product(tmp, wac, out)
    except (EreeError, OSError) as e:
        fail(e)
    console.print(
        f"wrote {s.workplace.height:,} workplaces, {s.worker.height:,} workers, "
        f"{s.job.height:,} jobs to {out}"
    )
    console.print(f"starter spec: {out / 'release.toml'} (eree explain {out / 'release.toml'})")
    if product:
        console.print(f"WAC product spec: {out / product} (docs/product-lodes-wac.md)")


def _write_wac_product(folder: Path, wac: Path | None, shown: Path) -> str | None:
    """Write ``product.toml``, the LODES WAC product spec, if the WAC file's name allows.

    The name gives the state, job type and year (``[st]_wac_S000_[JT]_[year].csv.gz``);
    otherwise nothing is written.
    """
    import re

    from eree.release.presets import PRODUCT_SPEC, preset

    m = None if wac is None else re.match(
        r"^([a-z]{2})_wac_S000_(JT0[0-5])_(\d{4})\.csv(\.gz)?$", wac.name
    )  # fmt: skip
    if m is None:
        return None
    text = preset(
        "lodes-wac", dataset=f"{m[1]}-wac-{m[3]}", year=int(m[3]), state=m[1],
        job_type=m[2], shown=(shown / PRODUCT_SPEC).as_posix(),
    )  # fmt: skip
    (folder / PRODUCT_SPEC).write_text(text, encoding="utf-8")
    return PRODUCT_SPEC


def synth_qcew(
    out: Out,
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
        fail(EreeError(f"--format must be csv.gz, csv or parquet, not {file_format!r}"))
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
                if qcew_area is not None:
                    _write_qcew_product(tmp, name, out)
    except (EreeError, OSError, ValueError) as e:
        fail(e)
    console.print(f"wrote {s.establishments.height:,} establishments to {out / name}")
    console.print(f"starter spec: {out / 'release.toml'} (eree explain {out / 'release.toml'})")
    if qcew_area is not None:
        console.print(f"QCEW county product spec: {out / 'product.toml'} (docs/product-qcew.md)")


def _write_qcew_product(folder: Path, data_file: str, shown: Path) -> None:
    """``product.toml``, the QCEW county product spec (2016 Q1: the quarter synthesised)."""
    from eree.release.presets import PRODUCT_SPEC, preset

    text = preset(
        "qcew-county", dataset=f"{shown.name or 'qcew'}-county", year=2016, quarter=1,
        data=(data_file,), shown=(shown / PRODUCT_SPEC).as_posix(),
    )  # fmt: skip
    (folder / PRODUCT_SPEC).write_text(text, encoding="utf-8")
