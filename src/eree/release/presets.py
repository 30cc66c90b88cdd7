"""Product presets: the release spec of a whole agency product, in one file.

See docs/product-lodes-wac.md and docs/product-qcew.md. ``eree spec preset NAME`` prints
one; ``eree synth lodes|qcew`` writes one (``product.toml``) next to the synthetic data.
Each is a valid spec that ``eree protect`` runs as is; the budgets are starting points
to edit, not recommendations.

* ``lodes-wac``: every WAC column family as a marginal by block under one weak ER-EE
  budget (Log-Laplace, ε = 1 per cell: d·1 per marginal of d worker-attribute
  combinations, 30 in all), publication-grade (consistent, non-negative, integer) so that
  every family adds up to C000, written as a LODES WAC file (``[output] format``).
* ``qcew-county``: the QCEW county product — levels 70, 71, 73, 74 and 75–78 by ownership
  as GEDP group-by sums of the three months' employment and the wages (pnc, bounds from a
  ψ identity query), 72 and the merged sectors of 74 by the BLS aggregation rules, written
  as QCEW by-area files.
"""

from __future__ import annotations

from eree.release.agency import qcew_levels, wac_families

__all__ = ["PRESETS", "PRODUCT_SPEC", "preset"]

#: the file name of a product spec in a synthetic-data folder
PRODUCT_SPEC = "product.toml"
#: the presets ``eree spec preset`` knows
PRESETS: tuple[str, ...] = ("lodes-wac", "qcew-county")

_WAC_HEAD = """\
# The LODES WAC product ({year}): every WAC column family as a marginal by block, under one
# weak ER-EE budget (Haney et al., SIGMOD 2017), post-processed (free in privacy) so that
# every family adds up to C000, written as {st}_wac_S000_{job_type}_{year}.csv.gz under
# agency/ (docs/product-lodes-wac.md). Paths are relative to this file.
#   eree explain {shown}
#   eree protect {shown} --out wac-release
name = "{name}"

[data]
kind = "eree"
workplace = "{workplace}"
worker = "{worker}"
job = "{job}"

[privacy]
definition = "eree-weak"
alpha = 0.1
"""

_WAC_QUERIES = {
    # family: (query name, epsilon = d x 1.0 per cell, comment)
    "C000": ("wac_c000", 1.0, "C000: jobs per block"),
    "CA": ("wac_ca", 3.0, "CA01-CA03: d = 3 ages, 1.0 per cell"),
    "CE": ("wac_ce", 3.0, "CE01-CE03: d = 3 earnings classes"),
    "CNS": ("wac_cns", 1.0, "CNS01-CNS20: a workplace attribute, d = 1"),
    "CR": ("wac_cr", 6.0, "CR01-CR07: d = 6 races"),
    "CT": ("wac_ct", 2.0, "CT01-CT02: d = 2"),
    "CD": ("wac_cd", 12.0, "CD01-CD04 (workers aged 30+): d = 3 ages x 4 levels"),
    "CS": ("wac_cs", 2.0, "CS01-CS02: d = 2"),
}

_QCEW_HEAD = """\
# The QCEW county product ({year} Q{quarter}): levels 70-78 by ownership (county total,
# ownership, domain, supersector, sector, NAICS 3- to 6-digit) as GEDP group-by sums of
# the three months' employment and the quarterly wages (Webb et al.), written as QCEW
# open-data files, one per county, under agency/ (docs/product-qcew.md). Levels 72 and
# 74's merged sectors follow from 73 and the 2-digit sectors by the BLS aggregation
# rules. Wages are in thousands of dollars per quarter in the data, dollars in the files.
#   eree explain {shown}
#   eree protect {shown} --out qcew-release
name = "{name}"

[data]
kind = "establishments"
path = "{path}"
id = "primary_key"
public = ["state", "cnty", "own", "naics", "naics3", "naics4", "naics5",
          "naics_sector", "super_sector"]
confidential = ["m1emp", "m2emp", "m3emp", "wage"]
units = {{ m1emp = "persons", m2emp = "persons", m3emp = "persons", wage = "thousands of dollars" }}

[privacy]
definition = "gedp"
neighbor = "sqrt"
distance = {{ m1emp = 0.5, m2emp = 0.5, m3emp = 0.5, wage = 1.58 }}

[[query]]
name = "identity"
by = "identity"
mechanism = "psi"
mu = {{ m1emp = 0.7, m2emp = 0.7, m3emp = 0.7, wage = 0.7 }}
"""
_QCEW_MU = "{ m1emp = 0.3, m2emp = 0.3, m3emp = 0.3, wage = 0.3 }"


def _toml_list(items: tuple[str, ...]) -> str:
    return "[" + ", ".join(f'"{i}"' for i in items) + "]"


def preset(
    name: str,
    *,
    dataset: str,
    year: int,
    quarter: int = 1,
    data: tuple[str, ...] = (),
    state: str = "st",
    job_type: str = "JT00",
    shown: str = "product.toml",
) -> str:
    """The text of preset ``name`` (:data:`PRESETS`).

    Args:
        dataset: the spec's ``name`` (the dataset's identity in a ledger).
        year, quarter: the reference period written in the files.
        data: lodes-wac: workplace, worker and job paths; qcew-county: the establishment
            file. Relative to the spec. Default: the files ``eree synth`` writes.
        state: lodes-wac: the state's postal code, for the comment only.
        job_type: lodes-wac: the LODES job type of the file name.
        shown: the spec's path as the user will type it, for the comment's commands.

    Raises:
        KeyError: an unknown preset.
    """
    if name == "lodes-wac":
        work, worker, job = data or ("workplace.parquet", "worker.parquet", "job.parquet")
        text = _WAC_HEAD.format(
            year=year, st=state, job_type=job_type, shown=shown, name=dataset,
            workplace=work, worker=worker, job=job,
        )  # fmt: skip
        for fam, by in wac_families().items():
            qname, eps, comment = _WAC_QUERIES[fam]
            text += (
                f'\n[[query]]\n# {comment}\nname = "{qname}"\nby = {_toml_list(by)}\n'
                f'mechanism = "log_laplace"\nepsilon = {eps}\n'
            )
        text += (
            "\n[postprocess]\nconsistent = true\nnonnegative = true\ninteger = true\n"
            f'\n[output]\nformat = "lodes-wac"\nyear = {year}\njob_type = "{job_type}"\n'
        )
        return text
    if name == "qcew-county":
        (path,) = data or ("establishments.csv.gz",)
        text = _QCEW_HEAD.format(year=year, quarter=quarter, shown=shown, name=dataset,
                                 path=path)  # fmt: skip
        for lv, by in qcew_levels().items():
            text += (
                f'\n[[query]]\nname = "agglvl_{lv}"\nby = {_toml_list(by)}\n'
                f'mechanism = "pnc"\nmu = {_QCEW_MU}\n'
            )
        text += (
            '\n[pnc]\nzeta = 0.01\nbounds_from = "identity"\n'
            f'\n[output]\nformat = "qcew-by-area"\nyear = {year}\nquarter = {quarter}\n'
        )
        return text
    raise KeyError(name)
