"""Starter release specs written next to synthetic data by ``eree synth lodes|qcew``.

Each is a valid release spec whose data paths are relative to the spec itself, so
``eree explain DIR/release.toml`` and ``eree protect DIR/release.toml --out REL`` work on
the folder as written. The budgets are starting points to edit, not recommendations.
"""

from __future__ import annotations

from pathlib import Path

#: the file name of the starter spec in a synthetic-data folder
STARTER_SPEC = "release.toml"

LODES_STARTER = """\
# Starter release spec for the LODES-like tables in this folder (written by eree synth lodes).
# Job counts under weak (alpha, epsilon)-ER-EE privacy (Haney et al., SIGMOD 2017).
# Paths are relative to this file. Edit the queries and budgets, then:
#   eree explain {folder}/release.toml
#   eree protect {folder}/release.toml --out release
name = "{name}"

[data]
kind = "eree"
workplace = "workplace.parquet"
worker = "worker.parquet"
job = "job.parquet"

[privacy]
definition = "eree-weak"
alpha = 0.1

[[query]]
name = "county_industry"
by = ["county", "naics_sector"]
mechanism = "log_laplace"
epsilon = 1.0

[[query]]
name = "county_sex"
by = ["county", "sex"]
mechanism = "smooth_gamma"
epsilon = 2.0                 # whole cost: d = 2 sexes, so 1.0 per cell
"""

QCEW_STARTER = """\
# Starter release spec for the QCEW-like establishments in this folder (written by
# eree synth qcew). Employment and wage sums under mu-Gaussian Establishment DP (Webb et
# al.): a psi identity query and pnc group-by sums, the structure of their Table 7.
# Wages are in thousands of dollars per quarter (docs/choosing-parameters.md, "Units").
# gamma_wage = 1.58 on sqrt(thousands) is gamma = 50 on sqrt(dollars): a $63K wage bill is
# protected within $40K-$91K. The paper's Table 7 uses 50 on sqrt(thousands)
# (examples/qcew-table7.toml), a far wider protection with far more noise.
# Paths are relative to this file. Edit the queries and budgets, then:
#   eree explain {folder}/release.toml
#   eree protect {folder}/release.toml --out release
name = "{name}"

[data]
kind = "establishments"
path = "{data}"
id = "primary_key"
public = ["state", "cnty", "own", "naics", "naics3", "naics4", "naics5",
          "naics_sector", "super_sector"]

[privacy]
definition = "gedp"
neighbor = "sqrt"
distance = {{ m1emp = 0.5, m2emp = 0.5, m3emp = 0.5, wage = 1.58 }}

[[query]]
name = "identity"
by = "identity"
mechanism = "psi"
mu = {{ m1emp = 0.7, m2emp = 0.7, m3emp = 0.7, wage = 0.15 }}

[[query]]
name = "state"
by = ["state"]
mechanism = "pnc"
mu = {{ m1emp = 0.2, m2emp = 0.2, m3emp = 0.2, wage = 0.10 }}

[[query]]
name = "county"
by = ["state", "cnty"]          # county codes repeat across states
mechanism = "pnc"
mu = {{ m1emp = 0.6, m2emp = 0.6, m3emp = 0.6, wage = 0.15 }}

[[query]]
name = "county_sector"
by = ["state", "cnty", "naics_sector"]
mechanism = "pnc"
mu = {{ m1emp = 0.7, m2emp = 0.7, m3emp = 0.7, wage = 0.15 }}

[pnc]
zeta = 0.01
bounds_from = "identity"
"""


def _name(folder: Path, kind: str) -> str:
    stem = "".join(c if c.isalnum() or c in "-_." else "-" for c in folder.resolve().name)
    return f"{stem or 'synthetic'}-{kind}"


def write_lodes_starter(folder: str | Path, shown_as: str | Path | None = None) -> Path:
    """Write ``release.toml`` for the LODES-like tables in ``folder``; return its path.

    Args:
        shown_as: the folder as the user named it (for the comment's commands).
    """
    folder = Path(folder)
    shown = Path(shown_as) if shown_as is not None else folder
    p = folder / STARTER_SPEC
    text = LODES_STARTER.format(folder=shown.as_posix(), name=_name(shown, "lodes"))
    p.write_text(text, encoding="utf-8")
    return p


def write_qcew_starter(
    folder: str | Path, data_file: str, shown_as: str | Path | None = None
) -> Path:
    """Write ``release.toml`` for the establishment file ``data_file`` in ``folder``.

    Args:
        data_file: the file's name inside ``folder``.
        shown_as: the folder as the user named it (for the comment's commands).
    """
    folder = Path(folder)
    shown = Path(shown_as) if shown_as is not None else folder
    p = folder / STARTER_SPEC
    text = QCEW_STARTER.format(folder=shown.as_posix(), name=_name(shown, "qcew"), data=data_file)
    p.write_text(text, encoding="utf-8")
    return p
