"""The QCEW paper's experiment settings (Webb et al. §8, Table 7) and each workflow's plan."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from eree.data.config import EstablishmentDataConfig
from eree.data.establishments import EstablishmentData, load_establishments
from eree.mechanisms.adaptive import AdaptiveGroupBy
from eree.mechanisms.gedp import Pnc, PsiMechanism
from eree.release.spec import Plan, parse_spec

EXPERIMENTS: dict[str, str] = {
    "webb-table11": "Table 11 (Appendix H): WLS with estimated vs true variances",
    "webb-table3": "Table 3: quartiles of signed differences, protected microdata vs truth",
    "webb-figures": "Figures 2, 3, 8: absolute and relative error by grouping",
    "webb-figure9": "Figure 9: relative error as the overall budget varies",
    "webb-all": "all of the above",
}

#: the default dataset, relative to the working directory or to the repository
SYN_RI = Path("../shared/data/syn_ri/ri44_qbp_2016_1.csv.gz")

EMPLOYMENT = ("m1emp", "m2emp", "m3emp")
WAGE = "wage"
ATTRIBUTES = (*EMPLOYMENT, WAGE)
#: the attributes of the figures: month-3 employment (as in Appendix C) and wages
FIGURE_ATTRIBUTES = ("m3emp", WAGE)
#: the two workflows of §8, named after the mechanism answering the group-by queries, and
#: the adaptive choice per group between them (docs/design.md#gedp-mechanisms; beyond the paper)
PNC = Pnc.name
SQRT = "sqrt"
ADAPTIVE = AdaptiveGroupBy.name
WORKFLOWS = (PNC, SQRT, ADAPTIVE)
#: the workflows' short names in sentences and legends
SHORT = {PNC: PNC, SQRT: "√", ADAPTIVE: ADAPTIVE}
GAMMA_EMP = 0.5
GAMMA_WAGE = 50.0
ZETA = 0.01
TRIALS = 34
TABLE11_TRIALS = 200_000
TABLE11_CHUNK = 50_000

#: the measurement queries of §8 (name → group-by columns)
QUERY_BY: dict[str, str | tuple[str, ...]] = {
    "identity": "identity",
    "state": (),
    "naics5": ("naics5",),
    "county": ("cnty",),
    "county_naics5": ("cnty", "naics5"),
}
#: Table 7: query → (μ per month of employment, μ of wages); μ_total ≈ 2.31
TABLE7: dict[str, tuple[float, float]] = {
    "identity": (0.70, 0.15),
    "state": (0.20, 0.10),
    "naics5": (0.60, 0.15),
    "county": (0.60, 0.15),
    "county_naics5": (0.70, 0.15),
}
#: the budgets stated in the text of §8.2 (the same μ for each month and for wages;
#: μ_total ≈ 2.31 too) — they differ from Table 7; kept to explain differences
SECTION_8_2: dict[str, tuple[float, float]] = {
    "identity": (0.611, 0.611),
    "state": (0.179, 0.179),
    "naics5": (0.525, 0.525),
    "county": (0.525, 0.525),
    "county_naics5": (0.611, 0.611),
}
BUDGETS: dict[str, dict[str, tuple[float, float]]] = {
    "table7": TABLE7,
    "section8.2": SECTION_8_2,
}

#: evaluation groupings (QCEW aggregation levels, ownership ignored; one state):
#: name → columns
GROUPINGS: dict[str, tuple[str, ...]] = {
    "state": (),
    "supersector": ("super_sector",),
    "sector": ("naics_sector",),
    "naics3": ("naics3",),
    "naics4": ("naics4",),
    "naics5": ("naics5",),
    "naics6": ("naics",),
    "county": ("cnty",),
    "county_supersector": ("cnty", "super_sector"),
    "county_sector": ("cnty", "naics_sector"),
    "county_naics3": ("cnty", "naics3"),
    "county_naics4": ("cnty", "naics4"),
    "county_naics5": ("cnty", "naics5"),
    "county_naics6": ("cnty", "naics"),
}
#: the QCEW aggregation level code of each grouping (Tables 8 and 9 of the paper)
LEVEL_OF = {
    "state": 50,
    "supersector": 53,
    "sector": 54,
    "naics3": 55,
    "naics4": 56,
    "naics5": 57,
    "naics6": 58,
    "county": 70,
    "county_supersector": 73,
    "county_sector": 74,
    "county_naics3": 75,
    "county_naics4": 76,
    "county_naics5": 77,
    "county_naics6": 78,
}
#: Table 3's evaluation groupings, with the paper's values (employment, confidential QCEW
#: data): grouping → workflow → (1st quartile, median, mean, 3rd quartile)
PAPER_TABLE3: dict[str, dict[str, tuple[float, float, float, float]]] = {
    "state": {"sqrt": (-6198, -6198, -6198, -6198), PNC: (-118, -118, -118, -118)},
    "supersector": {"sqrt": (-1083, -293, -563, -233), PNC: (-100, -48, -11, 24)},
    "naics5": {"sqrt": (-32, -9, -9, 8), PNC: (-14, -1, -0, 12)},
    "county": {"sqrt": (-420, -252, -4604, -143), PNC: (-64, -11, -4331, 27)},
    "county_supersector": {"sqrt": (-69, -18, -419, 16), PNC: (-43, -4, -394, 30)},
    "county_naics5": {"sqrt": (-7, -1, -10, 4), PNC: (-6, -1, -9, 5)},
}
FIGURE2_GROUPINGS = ("county", "naics3", "naics5")
FIGURE8_GROUPINGS = ("naics3", "naics5", "county_naics5")
FIGURE9_GROUPINGS = ("state", "county", "naics3", "naics5", "county_naics5")
#: Figure 9's overall budgets μ (every query's μ scaled by μ / μ_Table7)
FIGURE9_MU = (0.5, 1.0, 2.0, 4.0, 8.0)

Progress = Callable[[str], None]


def noop(_: str) -> None:
    """A progress callback that reports nothing."""
    return None


# --------------------------------------------------------------------------------------
# plans and data
# --------------------------------------------------------------------------------------


def total_mu(
    budget: Mapping[str, tuple[float, float]], attributes: Sequence[str] = ATTRIBUTES
) -> float:
    """μ_total = sqrt(Σ μ²) over every (query, attribute) measurement (Thm 5.7)."""
    s = 0.0
    for emp, wage in budget.values():
        for a in attributes:
            s += (wage if a == WAGE else emp) ** 2
    return math.sqrt(s)


def webb_plan(
    config: EstablishmentDataConfig,
    workflow: str,
    *,
    budget: Mapping[str, tuple[float, float]] = TABLE7,
    scale: float = 1.0,
    attributes: Sequence[str] = ATTRIBUTES,
    gamma_emp: float = GAMMA_EMP,
    gamma_wage: float = GAMMA_WAGE,
    zeta: float = ZETA,
) -> Plan:
    """The release plan of one workflow (``pnc``, ``sqrt``, ``adaptive``) with the §8 queries.

    Args:
        config: the establishment data configuration (path, id, public, confidential).
        workflow: ``pnc`` (identity by the √-mechanism, group-bys by pnc) or ``sqrt``
            (every query by the √-mechanism) or ``adaptive`` (identity by the √-mechanism,
            group-bys by the per-group choice of docs/design.md#gedp-mechanisms).
        budget: query → (μ per month of employment, μ of wages).
        scale: multiplies every μ (Figure 9).
        attributes: the confidential attributes released.
    """
    if workflow not in WORKFLOWS:
        raise ValueError(f"workflow must be one of {WORKFLOWS}, not {workflow!r}")
    if not scale > 0:
        raise ValueError("scale must be > 0")
    queries = []
    for name, by in QUERY_BY.items():
        emp, wage = budget[name]
        mu = {a: scale * (wage if a == WAGE else emp) for a in attributes}
        mech = PsiMechanism.name if (workflow == SQRT or by == "identity") else workflow
        queries.append(
            {
                "name": name,
                "by": by if isinstance(by, str) else list(by),
                "mechanism": mech,
                "mu": mu,
            }
        )
    raw: dict[str, Any] = {
        "name": f"webb-{workflow}",
        "data": {
            "kind": "establishments",
            "path": str(Path(config.path).resolve()),
            "id": config.id,
            "public": list(config.public),
            "confidential": list(attributes),
        },
        "privacy": {
            "definition": "gedp",
            "neighbor": "sqrt",
            "distance": {a: (gamma_wage if a == WAGE else gamma_emp) for a in attributes},
        },
        "query": queries,
        "postprocess": {
            "microdata": True,
            "nonnegative": False,
            # the paper's workflows fit Eq. 1; the adaptive one fits its √-ψ answers in
            # √-space (eree.postprocess.sqrt_space; beyond the paper)
            "microdata_fit": "sqrt-space" if workflow == ADAPTIVE else "eq1",
        },
    }
    if workflow in (PNC, ADAPTIVE):
        raw[Pnc.name] = {  # the [pnc] section of the spec
            "zeta": zeta,
            "bounds_from": "identity",
        }
    return parse_spec(raw, Path("."))


def _default_data() -> Path:
    for base in (Path.cwd(), Path(__file__).resolve().parents[3]):
        p = (base / SYN_RI).resolve()
        if p.exists():
            return p
    raise FileNotFoundError(
        f"Syn-RI not found at {SYN_RI} (relative to the working directory or the "
        "repository); pass --data FILE"
    )


def load_webb_data(
    path: str | Path | None = None, attributes: Sequence[str] = ATTRIBUTES
) -> EstablishmentData:
    """Load an establishment file in the Syn-RI schema (default: Syn-RI)."""
    p = Path(path) if path is not None else _default_data()
    return load_establishments(EstablishmentDataConfig(p, confidential=tuple(attributes)))
