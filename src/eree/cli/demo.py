"""``eree demo``: the main job end to end on built-in synthetic data (docs/design.md#command-line).

ER-EE half: a small LODES-like dataset, four marginals under weak ER-EE privacy.
GEDP half: a QCEW-like synthetic state, the Table 7 query structure (ψ identity query,
pnc group-by sums) under μ-GEDP. For both: the error against the (synthetic, hence
shareable) truth, and one HTML report.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from eree.cli.common import Force, Out, Table, check_out, console, fail
from eree.cli.release import print_release
from eree.errors import EreeError, ReleaseWarning

LODES_SPEC = """\
# Demo release of LODES-like job counts under weak (alpha, epsilon)-ER-EE privacy.
name = "demo-lodes"

[data]
kind = "eree"
workplace = "../data/lodes/workplace.parquet"
worker = "../data/lodes/worker.parquet"
job = "../data/lodes/job.parquet"

[privacy]
definition = "eree-weak"
alpha = 0.1

[[query]]
name = "tract_industry_ownership"
by = ["tract", "naics_sector", "ownership"]
mechanism = "smooth_gamma"
epsilon = 2.0

[[query]]
name = "county_industry"
by = ["county", "naics_sector"]
mechanism = "smooth_laplace"
epsilon = 2.0
delta = 1e-4                  # below 1/(number of establishments); delta_min(0.1, 2) = 2.8e-5

[[query]]
name = "county_sex"
by = ["county", "sex"]
mechanism = "log_laplace"
epsilon = 2.0                 # whole cost: d = 2 sexes, so 1.0 per cell

[[query]]
name = "county_age_sex"
by = ["county", "age", "sex"]
mechanism = "smooth_gamma"
epsilon = 6.0                 # whole cost: d = 6 age x sex combinations, so 1.0 per cell
"""


def _lodes_half(out: Path, seed: int | None, console: Any) -> dict[str, Any]:
    import numpy as np

    from eree.data.job_tables import load_job_tables
    from eree.engine.polars.engine import PolarsEngine
    from eree.mechanisms.noise import make_noise_source
    from eree.release.build import split_by
    from eree.release.output import UnwrittenTable
    from eree.release.protect import protect
    from eree.release.spec import load_spec
    from eree.synth.lodes import synth_parametric

    data_dir = out / "data" / "lodes"
    synth = synth_parametric(seed=2017)
    synth.write(data_dir)
    console.print(
        f"synthesised {synth.workplace.height:,} workplaces and {synth.job.height:,} jobs "
        f"→ {data_dir}"
    )
    spec_path = out / "specs" / "lodes.toml"
    spec_path.parent.mkdir(parents=True, exist_ok=True)
    spec_path.write_text(LODES_SPEC, encoding="utf-8")
    plan = load_spec(spec_path)
    with warnings.catch_warnings():  # the demo prints the release's warnings itself
        warnings.simplefilter("ignore", ReleaseWarning)
        result = protect(plan, out / "releases" / "lodes", make_noise_source(seed=seed))
    # accuracy against the synthetic truth (shareable only because the data are synthetic)
    data = load_job_tables(plan.data)  # type: ignore[arg-type]
    engine = PolarsEngine()
    accuracy = []
    for qt in result.tables:
        if isinstance(qt, UnwrittenTable):  # publish = false: nothing to compare
            continue
        q = plan.query(qt.name)
        wp, wk = split_by(q, plan.data)  # type: ignore[arg-type]
        truth = engine.cell_statistics(data, wp, wk)["count"].to_numpy()
        err = np.abs(qt.table["jobs"].to_numpy() - truth)
        accuracy.append(
            {"query": qt.name, "cells": qt.cells, "mean_abs_error": float(err.mean()),
             "median_abs_error": float(np.median(err))}
        )  # fmt: skip
    return {"spec": spec_path, "result": result, "accuracy": accuracy}


GEDP_SPEC = """\
# Demo release of QCEW-like establishment sums under mu-Gaussian Establishment DP
# (Webb et al.): the Table 7 structure on a synthetic state.
name = "demo-qcew"

[data]
kind = "establishments"
path = "../data/qcew/establishments.parquet"
id = "primary_key"

[privacy]
definition = "gedp"
neighbor = "sqrt"
# wages are in thousands of dollars per quarter (docs/choosing-parameters.md, "Units").
# gamma_wage = 1.58 on sqrt(thousands) is gamma = 50 on sqrt(dollars): a $63K wage bill is
# protected within $40K-$91K. The paper's Table 7 uses 50 on sqrt(thousands) (examples/),
# a far wider protection with far more noise.
distance = { m1emp = 0.5, m2emp = 0.5, m3emp = 0.5, wage = 1.58 }

[[query]]
name = "identity"
by = "identity"
mechanism = "psi"
mu = { m1emp = 0.7, m2emp = 0.7, m3emp = 0.7, wage = 0.3 }

[[query]]
name = "state"
by = []
mechanism = "pnc"
mu = { m1emp = 0.2, m2emp = 0.2, m3emp = 0.2, wage = 0.2 }

[[query]]
name = "county"
by = ["cnty"]
mechanism = "pnc"
mu = { m1emp = 0.6, m2emp = 0.6, m3emp = 0.6, wage = 0.3 }

[[query]]
name = "county_sector"
by = ["cnty", "naics_sector"]
mechanism = "pnc"
mu = { m1emp = 0.7, m2emp = 0.7, m3emp = 0.7, wage = 0.3 }

[pnc]
zeta = 0.01
bounds_from = "identity"
"""


def _gedp_half(out: Path, seed: int | None, console: Any) -> dict[str, Any]:
    import numpy as np

    from eree.data.establishments import load_establishments
    from eree.engine.polars.establishments import group_sums
    from eree.mechanisms.noise import make_noise_source
    from eree.release.output import UnwrittenTable
    from eree.release.protect import protect
    from eree.release.spec import load_spec
    from eree.synth.qcew import synth_qcew_parametric

    data_path = out / "data" / "qcew" / "establishments.parquet"
    data_path.parent.mkdir(parents=True, exist_ok=True)
    synth = synth_qcew_parametric(seed=2016, n_establishments=20_000)
    synth.write(data_path)
    console.print(f"synthesised {synth.establishments.height:,} establishments → {data_path}")
    spec_path = out / "specs" / "qcew.toml"
    spec_path.parent.mkdir(parents=True, exist_ok=True)
    spec_path.write_text(GEDP_SPEC, encoding="utf-8")
    plan = load_spec(spec_path)
    src = make_noise_source(seed=None if seed is None else seed + 1)
    with warnings.catch_warnings():  # the demo prints the release's warnings itself
        warnings.simplefilter("ignore", ReleaseWarning)
        result = protect(plan, out / "releases" / "qcew", src)
    frame = load_establishments(plan.data).frame  # type: ignore[arg-type]
    accuracy = []
    for qt in result.tables:
        q = plan.query(qt.name)
        if q.is_identity or isinstance(qt, UnwrittenTable):
            continue
        truth = group_sums(frame, list(q.by), ["m3emp", "wage"])
        for a in ("m3emp", "wage"):
            err = np.abs(qt.table[a].to_numpy() - truth[a].to_numpy())
            rel = err / (truth[a].to_numpy() + 1)
            accuracy.append(
                {"query": qt.name, "attribute": a, "cells": qt.cells,
                 "mean_abs_error": float(err.mean()),
                 "median_relative_error": float(np.median(rel))}
            )  # fmt: skip
    return {"spec": spec_path, "result": result, "accuracy": accuracy}


#: columns of the accuracy tables: key → (title, kind)
_ACCURACY_COLUMNS = {
    "query": "query",
    "attribute": "attribute",
    "cells": "cells",
    "mean_abs_error": "mean |error|",
    "median_abs_error": "median |error|",
    "median_relative_error": "median relative error",
}


def _accuracy_rows(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    keys = [k for k in _ACCURACY_COLUMNS if rows and k in rows[0]]
    body = [[f"{r[k]:.2%}" if k == "median_relative_error" else r[k] for k in keys] for r in rows]
    return [_ACCURACY_COLUMNS[k] for k in keys], body


def _accuracy_table(title: str, rows: list[dict[str, Any]]) -> Any:
    from eree.htmlpage import num

    headers, body = _accuracy_rows(rows)
    t = Table(title=f"{title} against the synthetic truth")
    for h in headers:
        t.add_column(h, justify="left" if h in ("query", "attribute") else "right")
    for r in body:
        t.add_row(*(v if isinstance(v, str) else num(v) for v in r))
    return t


def _accuracy_html(rows: list[dict[str, Any]], what: str) -> str:
    from eree.htmlpage import table

    headers, body = _accuracy_rows(rows)
    left = sum(1 for h in headers if h in ("query", "attribute"))
    return (
        "<h3>Accuracy against the truth (synthetic data only)</h3>"
        '<p class="info">Only possible because these data are synthetic: the error of each '
        "published value against the true value it protects. A real release cannot show this "
        f"(the truth is confidential); its report shows only the published uncertainty. {what}</p>"
        + table(headers, body, left=left)
    )


def demo_report(lodes: dict[str, Any], gedp: dict[str, Any]) -> str:
    """The demo's page: both releases (as their own reports show them) and their accuracy."""
    from eree.htmlpage import page
    from eree.release.report import Footnotes, release_section
    from eree.release.report_words import READING

    notes = Footnotes()
    sections = [
        '<p class="info">Two releases of synthetic data: LODES-like job counts under weak '
        "ER-EE privacy (Haney et al. 2017) and QCEW-like establishment sums under μ-Gaussian "
        "Establishment DP (Webb et al.). Each release folder holds its own "
        "<code>report.html</code> with the same content; this page puts both side by side "
        "and adds their error against the synthetic truth.</p>"
    ]
    for half, prefix, title, what in (
        (lodes, "eree-", "ER-EE release: job counts", "Error = |published jobs − true jobs|."),
        (gedp, "gedp-", "GEDP release: establishment sums",
         "Error = |published sum − true sum| for employment (m3emp) and wages (wage, "
         "thousands of dollars); relative error = error / (true sum + 1)."),
    ):  # fmt: skip
        res = half["result"]
        frames = {t.name: t.table for t in res.tables}
        sections.append(release_section(res.manifest, frames, notes=notes, prefix=prefix,
                                        title=title))  # fmt: skip
        sections.append(_accuracy_html(half["accuracy"], what))
    sections += ['<h2 id="reading">How to read the tables</h2>' + READING, notes.html()]
    return page("eree demo", sections, toc=True,
                subtitle="Synthetic data, protected end to end: what was released, the "
                "privacy spent and what it means, every warning, and the uncertainty of the "
                "published values.")  # fmt: skip


def run_demo(
    out: str | Path,
    *,
    seed: int | None = None,
    console: Any = console,
    on_release: Callable[[dict[str, Any], Path], None] | None = None,
) -> dict:
    """Run the demo into ``out`` (must not exist or be empty); return a summary.

    Args:
        out: the demo's output directory.
        seed: seeded randomness (NOT FOR PUBLICATION); None for the secure source.
        console: where progress is printed (default: standard output).
        on_release: called with each release's manifest and directory (the CLI prints
            the cost table there).
    """
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise EreeError(f"{out} exists and is not empty; choose another --out")
    t0 = time.perf_counter()
    lodes = _lodes_half(out, seed, console)
    res = lodes["result"]
    if on_release is not None:
        on_release(res.manifest, res.out_dir)
    outputs: dict[str, Any] = {
        "ER-EE spec": lodes["spec"],
        "ER-EE release": res.out_dir,
    }
    gedp = _gedp_half(out, seed, console)
    gres = gedp["result"]
    if on_release is not None:
        on_release(gres.manifest, gres.out_dir)
    outputs["GEDP spec"] = gedp["spec"]
    outputs["GEDP release"] = gres.out_dir
    report = out / "report.html"
    report.write_text(demo_report(lodes, gedp), encoding="utf-8")
    outputs["report"] = report
    for title, rows in (("ER-EE accuracy", lodes["accuracy"]), ("GEDP accuracy", gedp["accuracy"])):
        console.print(_accuracy_table(title, rows))
    return {"seconds": time.perf_counter() - t0, "outputs": outputs}


def demo(
    out: Out = Path("eree-demo"),
    seed: Annotated[
        int | None, typer.Option(help="seed the release noise (NOT FOR PUBLICATION)")
    ] = None,
    force: Force = False,
) -> None:
    """The main job on built-in synthetic data: synthesise, release, report.

    Example: eree demo --out eree-demo
    """
    from eree.data.outdir import folder_in_place

    check_out(out, force)
    try:
        with folder_in_place(out, "eree demo", force=force) as folder:
            summary = run_demo(folder, seed=seed, console=console, on_release=print_release)
    except EreeError as e:
        fail(e)
    console.print(f"[bold green]demo finished[/] in {summary['seconds']:.1f} s")
    for k, v in summary["outputs"].items():
        console.print(f"  {k}: {v}")
