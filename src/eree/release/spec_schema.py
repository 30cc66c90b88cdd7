"""The release spec's keys, declared once: the parser and the reference page both read them.

Every section of a spec (TOML) is a :class:`Section` of :class:`Key` descriptors. The
parser (:mod:`eree.release.spec`) takes from here the keys it accepts in each section (any
other key is an error with a "did you mean") and the defaults of optional keys;
:mod:`eree.release.spec_doc` writes ``docs/spec-reference.md`` from the same table, so
the reference cannot drift from the parser. Which ``[[query]]`` settings apply to which
mechanism comes from the mechanism registry (:mod:`eree.mechanisms.registry`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eree.data.config import EstablishmentDataConfig
from eree.data.schema import WORKER_DOMAINS, WORKPLACE_ATTRIBUTES
from eree.engine.select import ENGINES
from eree.mechanisms import registry
from eree.privacy.definitions import DEFINITION_NAMES

__all__ = [
    "DEFAULT_MAX_CELLS",
    "REQUIRED",
    "SECTIONS",
    "Key",
    "Section",
    "default",
    "key",
    "keys",
    "section",
    "top_level_keys",
]

#: default refusal limit on the number of cells of one query
DEFAULT_MAX_CELLS = 5_000_000


class _Required:
    """Marker of a key without a default (it must be given, or its section says when)."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Key:
    """One key of a spec section.

    Attributes:
        name: the TOML key.
        type: its TOML type, in words.
        default: the value when the key is absent; :data:`REQUIRED` when there is none;
            ``None`` when absence has a meaning of its own (given in ``meaning``).
        meaning: what it does.
        allowed: the values it may take (empty: any value of its type within the rules
            given in ``meaning``).
        units: the units of a number ("" when it has none).
    """

    name: str
    type: str
    default: Any
    meaning: str
    allowed: tuple[str, ...] = ()
    units: str = ""


@dataclass(frozen=True)
class Section:
    """One section of a spec.

    Attributes:
        name: how the section is written (``[privacy]``, ``[[query]]``, ...).
        family: which spec family uses it: ``both``, ``eree`` (ER-EE counts),
            ``establishments`` (GEDP sums) or ``coarsening`` (the protection mode of
            :mod:`eree.release.coarsening`: no privacy definition).
        meaning: one paragraph on the section.
        keys: its keys, in the order the reference lists them.
    """

    name: str
    family: str
    meaning: str
    keys: tuple[Key, ...]


def _mechanism_default(key: str) -> Any:
    """The default of a mechanism setting, read from the classes of the mechanisms it applies to."""
    fields = [
        e.cls.__dataclass_fields__[key]
        for e in registry.REGISTRY
        if key in e.settings and key in e.cls.__dataclass_fields__
    ]
    values = {repr(f.default): f.default for f in fields}
    if len(values) != 1:
        raise AssertionError(f"mechanisms disagree on the default of {key!r}: {list(values)}")
    value = next(iter(values.values()))
    return REQUIRED if value is None else value


SECTIONS: tuple[Section, ...] = (
    Section(
        "top level",
        "both",
        "Keys outside any table. The sections below are the spec's other top-level keys.",
        (
            Key(
                "name",
                "string",
                REQUIRED,
                "The dataset's name: its identity in the budget ledger and the manifest "
                "(a ledger identifies the data by name; releases of one dataset share one "
                "lifetime budget).",
            ),
        ),
    ),
    Section(
        "[data]",
        "eree",
        "ER-EE data (LODES/QWI-like): a workplace table, a worker table and a job table, "
        "or one joined jobs table. Paths are relative to the spec file; CSV (UTF-8, with "
        "a header), CSV.gz or Parquet. A path written as a URI (`file:///…`, `hdfs://…`, "
        "`s3a://…`, `gs://…`, `abfss://…`) is kept as given: the Spark engine reads it "
        "(spark-cluster.md), the Polars engine reads only `file://` URIs.",
        (
            Key("kind", "string", "eree", "The data family.", ("eree", "establishments")),
            Key(
                "workplace",
                "path",
                None,
                "The workplace table (one row per establishment: its id and public "
                "attributes). Give workplace, worker and job together, or jobs alone.",
            ),
            Key(
                "worker",
                "path",
                None,
                "The worker table (one row per worker: its id and private attributes).",
            ),
            Key("job", "path", None, "The job table (one row per job: workplace id, worker id)."),
            Key(
                "jobs",
                "path",
                None,
                "One joined table (one row per job with the workplace and worker "
                "attributes), instead of workplace, worker and job.",
            ),
            Key("workplace_id", "string", "workplace_id", "Column of the workplace id."),
            Key("worker_id", "string", "worker_id", "Column of the worker id."),
            Key(
                "workplace_attributes",
                "list of strings",
                list(WORKPLACE_ATTRIBUTES),
                "The public workplace attributes (columns of the workplace table); "
                "geography nests block → tract → county → state.",
            ),
            Key(
                "worker_attributes",
                "list of strings",
                list(WORKER_DOMAINS),
                "The private worker attributes; each needs a declared domain (the "
                "defaults' domains are the LODES codes, see [data.domains]).",
            ),
            Key(
                "domains",
                "table: attribute = list of strings",
                None,
                'Declared domains, `[data.domains] age = ["A01", "A02", "A03"]`: '
                "every value an attribute may take, listed once each. Defaults: the "
                "LODES codes of the worker attributes ([spec.md](spec.md)). May only name "
                "attributes the data declares.",
            ),
            Key(
                "max_jobs_per_worker",
                "whole number ≥ 1",
                None,
                "k: workers may hold several jobs, and each contributes at most k of them "
                "(LODES JT00 counts every job; about 5% of workers hold two or more). A "
                "worker's jobs beyond k are dropped by a data-independent rule: the first k "
                "in a keyed random order (a secret per-release key, never written) are kept. "
                "Every mechanism's noise is calibrated so "
                "that the query's epsilon (delta) covers a worker with k jobs as well as an "
                "establishment's α-change ([privacy.md](privacy.md#several-jobs-per-worker)). "
                "Absent: every worker must hold exactly one job (refused otherwise). Needs "
                "the three tables (workplace, worker, job).",
                units="jobs",
            ),
            Key(
                "job_type",
                "string",
                "JT00",
                "The LODES job type released: JT00 all jobs; JT01 primary jobs (each "
                "worker's highest-earning job, by job_earnings; ties in the keyed random "
                "order); JT02 all private jobs (workplace `ownership` = A05); JT03 private "
                "primary jobs (each worker's primary job, counted when it is private, as "
                "LEHD defines it). Primary jobs are "
                "one per worker (k = 1). Other than JT00 needs the three tables.",
                ("JT00", "JT01", "JT02", "JT03"),
            ),
            Key(
                "job_earnings",
                "string",
                None,
                "Column of the job table holding each job's earnings (a number ≥ 0, any "
                "unit): what the primary-job rule of JT01 and JT03 ranks by; required for "
                "them, refused otherwise. Read only to choose the primary job; never "
                "published.",
            ),
        ),
    ),
    Section(
        "[data]",
        "establishments",
        "Establishment data (QCEW-like): one table, one row per establishment. The path "
        "is relative to the spec file; CSV (UTF-8, with a header), CSV.gz or Parquet. A "
        "URI (`file:///…`, `hdfs://…`, `s3a://…`, …) is kept as given: the Spark engine "
        "reads it (spark-cluster.md), the Polars engine reads only `file://` URIs.",
        (
            Key(
                "kind",
                "string",
                REQUIRED,
                'The data family; `"establishments"` selects this form.',
                ("eree", "establishments"),
            ),
            Key("path", "path", REQUIRED, "The establishment file."),
            Key("id", "string", EstablishmentDataConfig.id, "Column of the establishment id."),
            Key(
                "public",
                "list of strings",
                list(EstablishmentDataConfig.public),
                "Public attributes (place, industry, ownership): the only columns a query "
                "may group by.",
            ),
            Key(
                "confidential",
                "list of strings",
                list(EstablishmentDataConfig.confidential),
                "Confidential numeric attributes (employment per month, quarterly wages); "
                "each needs a distance in [privacy].distance. Non-negative numbers in the "
                "data's own units ([units](choosing-parameters.md#units)).",
            ),
            Key(
                "units",
                "table: attribute = string",
                None,
                "The unit of each confidential attribute, in words (e.g. `wage = "
                '"dollars"`, `wage = "thousands of dollars"`, `m3emp = "persons"`), '
                "written next to every number of the release report. Only `confidential` "
                "columns may be named. Without it, a known column name gives the unit "
                "(`m1emp`–`m3emp`, `month1_emplvl`…: persons; `wage`: thousands of "
                "dollars; `total_qtrly_wages`: dollars); any other attribute is reported "
                'as "unit not stated". It changes no number: eree never converts units.',
            ),
            Key(
                "domains",
                "table: attribute = list of strings",
                None,
                "Declared domains of public attributes (values as text); only `public` "
                "columns may be named. Without one, an attribute's domain is the values "
                "in the data (public).",
            ),
        ),
    ),
    Section(
        "[privacy]",
        "both",
        "The privacy definition and its parameters.",
        (
            Key(
                "definition",
                "string",
                REQUIRED,
                "The privacy definition: eree (strong ER-EE), eree-weak, blowfish (the "
                "workshop's policy graph), edge-dp and node-dp (the DP baselines), gedp "
                "(Gaussian Establishment DP, establishment data), none (input noise "
                "infusion: no formal guarantee).",
                DEFINITION_NAMES,
            ),
            Key(
                "alpha",
                "number > 0",
                None,
                "ER-EE: the relative size change α an establishment is protected within "
                "(sizes x and y ≤ (1+α)x are indistinguishable up to e^ε). Required for "
                "eree, eree-weak and blowfish.",
                units="relative (0.1 = 10%)",
            ),
            Key(
                "neighbor",
                "string or table",
                "sqrt",
                'GEDP: the neighbor function ψ: "sqrt", "dp", { kind = "sqrt_shift", '
                'a = 1.0 }, { kind = "log_shift", a = 1.0 } (a > 0), { kind = "dp", '
                'd = 1.0 }, { kind = "combine" | "heterogeneous", parts = [...] }, or a '
                "table attribute = one of these (one ψ per attribute).",
                ("sqrt", "sqrt_shift", "log_shift", "dp", "combine", "heterogeneous"),
            ),
            Key(
                "distance",
                "table: attribute = number > 0",
                None,
                "GEDP: the distance parameter γ of each confidential attribute: records "
                "with |ψ(x) − ψ(y)| ≤ γ are neighbors (Webb et al. Def 5.1). Required "
                "for gedp.",
                units="ψ of the attribute's unit (√employees, √thousands of dollars)",
            ),
            Key(
                "budget",
                "table",
                None,
                "A lifetime budget for this spec: { epsilon = ..., delta = ..., mu = ... } "
                "(keys epsilon, delta, mu). It may only lower the budget registered in a "
                "ledger; without a ledger the release alone must fit in it.",
                ("epsilon", "delta", "mu"),
            ),
        ),
    ),
    Section(
        "[protection]",
        "coarsening",
        "A protection mode instead of a privacy definition: a spec with [protection] has no "
        "[privacy], [[query]], [pnc], [postprocess] or [plan]. Establishment data "
        '(`[data] kind = "establishments"`, public `cnty`, `own`, `naics`) publish the QCEW '
        "linked tables (state and county totals, every industry level by ownership); job "
        'records (`[data] kind = "eree"`, workplace attributes `block` and `naics_sector`, '
        "worker attributes `age`, `earnings`, `race`, `ethnicity`, `education`, `sex`) "
        "publish the eight LODES WAC families by block, zero cells included. Both are "
        "coarsened: rounded to a base, suppression as the last resort, audited by the "
        "attacker's linear program over all published tables together against the "
        "disclosure rules below. For job tables the rule is the small-cell rule on jobs and "
        "only `mode`, `rounding`, `threshold` and `min_protection` apply (any other key is "
        "refused, naming it). NO FORMAL GUARANTEE: the manifest and report say so and state "
        "the audited risk; nothing is charged to a ledger (docs/coarsening.md).",
        (
            Key(
                "mode",
                "string",
                REQUIRED,
                "The protection mode: coarsening (rounding, suppression as last resort; no "
                "formal guarantee).",
                ("coarsening",),
            ),
            Key(
                "rounding",
                "string",
                "deterministic",
                "How cells are coarsened to their base: deterministic (the range of the "
                "base that holds the value, [k·base, (k+1)·base), on the nested ladder 5, "
                "10, 20, 40, …; cells the tables already pin may be published finer: exact, "
                "rounded to the nearest multiple, a size class) or random (unbiased random "
                "rounding, up or down with the probabilities that keep the expected value; "
                "bases 5, 10, 25, 50, 100, …). Which kind an agency may use is its own "
                "policy choice; the bases are chosen per cell by the optimizer. Job tables: "
                "rounding to the nearest multiple of 2, 3, 5, 10, 25, … (deterministic) or "
                "its unbiased random rounding.",
                ("deterministic", "random"),
            ),
            Key(
                "attributes",
                "list of strings",
                None,
                "The confidential attributes published (each a [data] confidential "
                "column). Absent: every confidential column. Establishments only.",
            ),
            Key(
                "threshold",
                "integer ≥ 0",
                3,
                "Threshold rule: a cell with fewer establishments than this is sensitive (0: "
                "off). Job tables: every job is a contributor, a cell with 1 to threshold − 1 "
                "jobs is sensitive (0 or 1: off, no cell is sensitive, and as the threshold is "
                "their only rule every cell is published exactly).",
                units="establishments (job tables: jobs)",
            ),
            Key(
                "dominance_k",
                "number in [0, 100]",
                80.0,
                "(n, k) dominance rule: a cell whose n largest contributions exceed k% of "
                "its total is sensitive (0: off; otherwise at least 1). Establishments only.",
                units="percent",
            ),
            Key(
                "dominance_n",
                "positive integer ≤ 20",
                1,
                "n of the dominance rule. Establishments only.",
                units="establishments",
            ),
            Key(
                "p_percent",
                "number in [0, 100]",
                10.0,
                "p% rule: a cell is sensitive when the others' total would let the second "
                "largest contributor estimate the largest within p% (0: off). Establishments "
                "only.",
                units="percent",
            ),
            Key(
                "min_protection",
                "number in [0, 1e12]",
                1.0,
                "The smallest protection interval of a sensitive cell. Job tables: the "
                "rule's protection p, a whole number of jobs ≥ 1: the attacker's interval "
                "for a sensitive cell with T jobs must cover [max(T − p, P), T + p], P the "
                "least the cell can hold given which cells are non-zero (1 for a cell "
                "with a job; the exact zeros disclose presence).",
                units="the attribute's unit (job tables: jobs)",
            ),
            Key(
                "exempt_own",
                "list of strings",
                ["1"],
                "Ownership codes whose cells are never sensitive (BLS publishes federal "
                "government, own 1). Establishments only.",
            ),
            Key(
                "merge_areas",
                "list of lists of strings",
                [],
                "Groups of counties published as one area each (a category merge): each "
                "group at least two county codes as the data's `cnty` column writes them, "
                "a code in one group at most; the group's cells are tabulated from its "
                "members' establishments together and published under the code of its "
                "members joined by '+' (e.g. 003+005); the members' own cells are not "
                "published. Data of one state only (county codes are a state's). Not with "
                "[output].format (the QCEW by-area layout has no code for a merged area). "
                "Establishments only.",
            ),
            Key(
                "merge_industries",
                "list of lists of strings",
                [],
                "Groups of six-digit NAICS industries published as one industry each (a "
                "category merge at the six-digit level): each group at least two codes "
                "with the same five-digit parent, a code in one group at most; published "
                "under the codes joined by '+' (e.g. 311111+311119); every coarser level "
                "is unchanged. Not with [output].format (the QCEW by-area layout has no "
                "code for a merged industry). Establishments only.",
            ),
        ),
    ),
    Section(
        "[[query]]",
        "both",
        "One released table per [[query]] (at least one). `name`, `by`, `mechanism` and "
        "`complete` apply to every mechanism; every other key must apply to the query's "
        "mechanism (see the table of mechanisms below) or the spec is refused.",
        (
            Key(
                "name",
                "string",
                REQUIRED,
                "The table's name (unique; letters, digits, '_' and '-'; at most 100 "
                "characters): the file tables/<name>.parquet.",
            ),
            Key(
                "by",
                'list of strings or "identity"',
                REQUIRED,
                'The grouping attributes; [] for one total cell; "identity" for the GEDP '
                "identity query (one cell per establishment). ER-EE: workplace and worker "
                "attributes; establishments: `public` attributes.",
            ),
            Key(
                "mechanism",
                "string",
                REQUIRED,
                "The mechanism; it must be allowed under [privacy].definition (see the "
                "table of mechanisms).",
                registry.mechanism_names(),
            ),
            Key(
                "epsilon",
                "number > 0",
                REQUIRED,
                "The query's whole ε. For a marginal with worker attributes under "
                "eree-weak or blowfish, each of the d worker-attribute combinations gets "
                "ε/d. `eree plan` chooses it from a `target` or `[plan]` (docs/planning.md).",
            ),
            Key(
                "delta",
                "number in (0, 1)",
                None,
                "smooth_laplace: the query's whole δ (d·δ per cell as for ε). Default: "
                "d·δ_min with δ_min = exp(−ε_cell / (2 ln(1+α))), the smallest δ "
                "Algorithm 3 allows.",
            ),
            Key(
                "mu",
                "table: attribute = number > 0",
                REQUIRED,
                "GEDP: μ per measured confidential attribute; the query costs "
                "√(Σ μ_a²) and the release √(Σ over queries). `eree plan` chooses it from "
                "a `target` or `[plan]` (docs/planning.md).",
            ),
            Key(
                "target",
                "table",
                None,
                "An accuracy target `eree plan` meets with the smallest ε (ER-EE) or μ "
                "(GEDP): exactly one of `relative_error` (a fraction, with `confidence`, "
                "default 0.9), `cv` (a fraction) or `ci_half_width` (the statistic's unit), "
                "and `at`, the representative cell size (jobs, or the attribute's unit); "
                "`largest_share` (default 1): the share of the cell in its largest "
                "establishment the promise is made for (smooth-sensitivity mechanisms). "
                "GEDP: one such table per confidential attribute, e.g. target = { wage = "
                "{ relative_error = 0.1, at = 5000 } }. `eree protect` reads the ε or μ, "
                "never the target; `eree validate` says whether it is met.",
            ),
            Key(
                "at",
                "number > 0, or table: attribute = number > 0",
                "[plan].at",
                "The query's representative cell size when `eree plan` splits [plan]'s total "
                "(a query with a target uses the target's): jobs (ER-EE) or per confidential "
                "attribute in its unit (GEDP). E.g. the table's mean cell size from public "
                "totals.",
            ),
            Key(
                "weight",
                "number ≥ 0",
                1.0,
                "The query's weight when `eree plan` splits [plan]'s total: the plan "
                "minimises the weighted sum of the queries' relative E|error| at their "
                "representative cells.",
            ),
            Key(
                "theta",
                "number > 0",
                _mechanism_default("theta"),
                "truncated_laplace: the truncation threshold θ: establishments with θ or "
                "more jobs are dropped; the noise is Lap(θ/ε).",
                units="jobs",
            ),
            Key(
                "grid",
                "power of two > 0",
                "1 on a value's own scale; 2^-20 in log/ψ space",
                "The public grid the published values are rounded to, in the space the "
                "noise is added in: every published noisy value is the exact mechanism's "
                "output rounded to the nearest multiple of the grid (docs/privacy.md, "
                "float-safe noise). Default 1 (jobs, or the attribute's unit) where the "
                "noise is added to counts or sums; 2^-20 in log space (log_laplace) and in "
                "ψ space for ψ other than dp (psi, and the ψ branch of adaptive). Not for "
                "noise_infusion (its factors are on the grid 2^-24). Between 2^-64 and 2^64 "
                "(a grid outside is refused naming this key).",
                units="the statistic's unit",
            ),
            Key(
                "force",
                "boolean",
                _mechanism_default("force"),
                "log_laplace: run even when λ = ln(1+α)/ε ≥ 1 (the estimator then has "
                "no finite variance).",
            ),
            Key(
                "complete",
                "boolean",
                False,
                "ER-EE: also list workplace combinations with no establishment (their "
                "cells are exact zeros) — the cells become the product of the declared "
                "domains.",
            ),
            Key(
                "publish",
                "boolean",
                True,
                "false: the query is answered and charged but its table is not written "
                "(no file, no report section; the manifest lists it with file = null). Only "
                "for the identity query named by [pnc] bounds_from, whose per-establishment "
                "answers pnc reads for its bounds: without it they are published as "
                "tables/<name>.parquet, noisy values per establishment id.",
            ),
            Key(
                "variant",
                "string",
                "sigmod",
                "ER-EE mechanisms under blowfish: the SIGMOD algorithm or the workshop's.",
                ("sigmod", "workshop"),
            ),
            Key(
                "s",
                "number in (0, t)",
                _mechanism_default("s"),
                "noise_infusion: inner edge of the distortion: each establishment's factor "
                "f lies in [1−t, 1−s] ∪ [1+s, 1+t] (confidential: withheld from the "
                "manifest).",
                units="relative",
            ),
            Key(
                "t",
                "number in (s, 1)",
                _mechanism_default("t"),
                "noise_infusion: outer edge of the distortion (confidential: withheld "
                "from the manifest).",
                units="relative",
            ),
            Key(
                "small_cell",
                "number ≥ 1",
                _mechanism_default("small_cell"),
                "noise_infusion: the small-cell limit S: true counts in (0, S) are "
                "replaced by a uniform draw from {1, …, ⌊S⌋} (Haney et al. §5.1).",
                units="jobs",
            ),
            Key(
                "additive",
                "number > 0",
                _mechanism_default("additive"),
                "log_laplace, workshop variant: the additive shift Δ (γ = Δ/α).",
                units="jobs",
            ),
        ),
    ),
    Section(
        "[pnc]",
        "establishments",
        "Settings of the probably-no-clipping (pnc) and adaptive mechanisms.",
        (
            Key(
                "zeta",
                "number in (0, 1)",
                0.01,
                "The probability that any establishment is clipped (the upper bounds hold "
                "simultaneously with probability 1 − ζ).",
                units="probability",
            ),
            Key(
                "bounds_from",
                "string",
                None,
                'The psi query with by = "identity" whose published answers give the '
                "upper bounds; required when a query uses pnc or adaptive.",
            ),
        ),
    ),
    Section(
        "[postprocess]",
        "both",
        "Post-processing of the published values: costs no privacy, reads no "
        "confidential value ([spec.md](spec.md) explains each option).",
        (
            Key(
                "microdata",
                "boolean",
                False,
                "Establishments: write WLS establishment microdata (microdata.parquet, "
                "Webb et al. Eq. 1). Refused for ER-EE data.",
            ),
            Key(
                "nonnegative",
                "boolean",
                False,
                "No published value is negative (ER-EE: the counts; establishments: the "
                "WLS microdata, hence every table tabulated from it).",
            ),
            Key(
                "integer",
                "boolean",
                False,
                "ER-EE: every published count is a whole number (controlled rounding). "
                "Refused for establishment sums.",
            ),
            Key(
                "consistent",
                "boolean",
                False,
                "Every table adds up to every coarser released table (ER-EE: on the tree "
                "of marginals; establishments: needs microdata = true, tables are "
                "tabulations of the microdata).",
            ),
            Key(
                "microdata_fit",
                "string",
                "eq1",
                'Establishments, with microdata = true: how the microdata is fitted. "eq1": '
                'Webb et al. Eq. 1 on every published estimate; "sqrt-space" (beyond the '
                "paper): the cells answered by the √-ψ-mechanism are fitted in √-space with "
                "the total anchored ([spec.md](spec.md)). Refused for ER-EE data.",
                ("eq1", "sqrt-space"),
            ),
        ),
    ),
    Section(
        "[output]",
        "both",
        "Publication settings.",
        (
            Key(
                "confidence",
                "number in (0, 1)",
                0.95,
                "Level of the published confidence intervals (s_ci_low, s_ci_high).",
                units="probability",
            ),
            Key("csv", "boolean", True, "Also write each table as CSV next to its Parquet."),
            Key(
                "max_cells",
                "positive integer",
                DEFAULT_MAX_CELLS,
                "Refuse a query with more cells than this, before any cell is allocated "
                "(by `eree explain` where the spec alone shows it).",
                units="cells",
            ),
            Key(
                "format",
                "string",
                None,
                "Also write the release in an agency's file layout under agency/ (next to "
                "the tables and the manifest, never instead): lodes-wac (LODES Workplace "
                "Area Characteristics, one row per block), lodes-rac (residence; refused: "
                "the job tables carry no residence geography), qcew-by-area (one QCEW "
                "open-data file per county), qcew-singlefile (one file). Each with a "
                "companion *_moe file of 90% margins of error in the same layout. The "
                "spec must release every column family (docs/product-lodes-wac.md, "
                "docs/product-qcew.md; `eree spec preset` writes such a spec).",
                ("lodes-wac", "lodes-rac", "qcew-by-area", "qcew-singlefile"),
            ),
            Key(
                "year",
                "integer",
                None,
                "With format: the reference year written in the files and their names "
                "(LODES [year], QCEW year). Required with format.",
            ),
            Key(
                "quarter",
                "integer 1–4",
                None,
                "With a QCEW format: the reference quarter (QCEW qtr). Required there.",
            ),
            Key(
                "job_type",
                "string",
                "JT00",
                "With lodes-wac: the LODES job type of the file name (JT00 all jobs … "
                "JT05 federal primary jobs); it names what the input holds, it filters "
                "nothing.",
                ("JT00", "JT01", "JT02", "JT03", "JT04", "JT05"),
            ),
            Key(
                "levels",
                "list of integers",
                [70, 71, 72, 73, 74, 75, 76, 77, 78],
                "With a QCEW format: the county aggregation levels written (each of 70–78 "
                "once), e.g. [70, 71, 72, 73, 74] for totals, ownership, domain, supersector "
                "and sector only. Each needs its group-by query, except 72 (summed from "
                "73's published cells) and 73 (summed from 74's sector cells when no query "
                "is by supersector).",
            ),
            Key(
                "columns",
                "table: layout field = data column",
                None,
                "With an agency format: the data's column for each layout field, when not "
                "eree's name: `area` (5-digit county FIPS, instead of `state` + `county`), "
                "`state`, `county`, `ownership` (QCEW own codes), `supersector`, `sector` "
                "(2-digit NAICS or QCEW's 31-33 ranges), `naics3`–`naics6`, "
                "`month1_emplvl`–`month3_emplvl`, `total_qtrly_wages` (a money unit in "
                '[data].units). E.g. { area = "fips", ownership = "own_code", sector = '
                '"ind2", total_qtrly_wages = "qtr_wages" }. Each level\'s query is found '
                "by these columns. With lodes-wac: `block` (the 15-digit census block), "
                "`age`, `earnings`, `naics_sector`, `race`, `ethnicity`, `education`, `sex`, "
                'e.g. { block = "geo", age = "agegrp" }; each WAC family\'s query is found by '
                "these columns. Checked before any data are read.",
            ),
            Key(
                "codes",
                "table: field = { data code = layout code }",
                None,
                "With a QCEW format: the data's codes of `area`, `ownership`, `supersector` "
                'or `sector` written as the layout\'s, e.g. ownership = { P = "5", L = '
                '"3" }; codes not listed are written as they are. With lodes-wac: the codes '
                "of `age`, `earnings`, `naics_sector`, `race`, `ethnicity`, `education`, "
                '`sex` as LODES\'s (eree\'s), e.g. age = { young = "A01", mid = "A02", old '
                '= "A03" }; a declared code ([data.domains]) that maps outside them is '
                "refused before any data are read, a workplace code without a declared "
                "domain once the data are loaded.",
            ),
            Key(
                "cells_from",
                "path",
                None,
                "With a QCEW format: earlier QCEW by-area files (a file or a folder, e.g. "
                "the last published release) whose county cells (keys only, levels 70–78, "
                "for the areas released) are also listed: a cell with no establishment in "
                'the frame this quarter is written with disclosure_code "-" and zeros, as '
                "BLS writes it. Only the keys are read.",
            ),
        ),
    ),
    Section(
        "[plan]",
        "both",
        "A total budget for `eree plan` to split over the queries (docs/planning.md); "
        "`eree protect` ignores it and spends the ε or μ the queries state.",
        (
            Key(
                "epsilon",
                "number > 0",
                None,
                "ER-EE family: the release's total ε, split over the queries (sequential "
                "composition: the queries' ε add up to it), each query's target a floor.",
            ),
            Key(
                "mu",
                "number > 0",
                None,
                "GEDP: the release's total μ = √(Σ μ²) over every (query, attribute), split "
                "the same way.",
            ),
            Key(
                "at",
                "number > 0, or table: attribute = number > 0",
                "100 jobs (ER-EE); required for GEDP queries without a target",
                "The representative cell size of a query without a target: jobs (ER-EE) or "
                "per confidential attribute in its unit (GEDP).",
            ),
            Key(
                "largest_share",
                "number in (0, 1]",
                "the public variance model's share",
                "ER-EE: the share of a representative cell held by its largest establishment, "
                "for queries without a target (smooth-sensitivity mechanisms' noise grows "
                "with it); 1 plans for cells held by one establishment. Absent: the public "
                "variance model's share min(5.05·k^−0.585, 1) of a cell held by k = at / "
                "jobs_per_establishment establishments (docs/planning.md).",
            ),
            Key(
                "jobs_per_establishment",
                "number > 0",
                16.0,
                "ER-EE: the mean establishment size that share model assumes (a public "
                "figure: 16.1 in Pennsylvania's LODES WAC 2015).",
                units="jobs",
            ),
        ),
    ),
    Section(
        "[engine]",
        "both",
        "Which engine scans the microdata, and what applies to every engine; "
        "`eree protect --engine` overrides kind. The Spark engine's own settings are in "
        "[spark].",
        (
            Key(
                "kind",
                "string",
                "polars",
                "polars: in-process; spark: Spark reads, validates and aggregates (for "
                "data that outgrow one machine; its settings in [spark]).",
                ENGINES,
            ),
            Key(
                "memory",
                "string",
                None,
                "The memory a query's cell table may take (a size like [spark] "
                "driver_memory, e.g. 8g). A query whose estimated cell table (from its cell "
                "count) exceeds it is refused before any cell is allocated, naming the query "
                "and this key. Absent: the least of the memory available when the release "
                "starts (MemAvailable in /proc/meminfo), what the process's address-space "
                "limit leaves (RLIMIT_AS, ulimit -v) and what its control group's memory "
                "limit leaves; no check where the system says none of them).",
                units="bytes (k, m, g, t: powers of 1024)",
            ),
        ),
    ),
    Section(
        "[spark]",
        "both",
        "The Spark engine's settings (docs/spark-cluster.md), read only when the engine is "
        'Spark: a spec that gives any of them with [engine] kind = "polars" is refused '
        "unless the command line says `--engine spark` (a setting that would do nothing "
        "is an error, not a silence); `--engine polars` sets them aside, with a note.",
        (
            Key(
                "cores",
                "positive integer",
                2,
                "Local worker threads when eree starts the session (local[cores]); at most "
                "8 per CPU of the machine (as is N of a local[N] master).",
                units="threads",
            ),
            Key(
                "driver_memory",
                "string",
                "4g",
                "Driver heap when eree starts the session (a JVM size, e.g. 4g): at least "
                "512m (Spark needs 450 MiB) and at most the machine's memory (the driver "
                "runs on it whatever the master).",
            ),
            Key(
                "master",
                "string",
                None,
                "The master URL of the session eree starts: local[N], spark://host:port, "
                "yarn or k8s://https://host:port; absent: local[cores]. Under spark-submit "
                "the submitted session is used (a different master is refused). "
                "`eree protect --master` overrides it.",
            ),
            Key(
                "conf",
                "table",
                None,
                "Further Spark settings for the session eree starts, "
                '`"spark.key" = value` (text, number or boolean); sizes such as '
                '`"spark.executor.memory" = "2g"` are checked, as are core, partition and '
                "task counts (spark.executor.memory at least 450m, Spark's least); the "
                "master and driver heap have keys of their own (no -Xmx or -Xms in an "
                "extraJavaOptions). Values of "
                "keys Spark treats as secret are withheld from the manifest. "
                "`eree protect --conf KEY=VALUE` adds to it.",
            ),
        ),
    ),
)


def section(name: str, family: str = "both") -> Section:
    """The section ``name``; for ``[data]``, ``family`` picks ``eree`` or ``establishments``."""
    for s in SECTIONS:
        if s.name == name and (s.family == family or family == "both" or s.family == "both"):
            return s
    raise KeyError((name, family))


def top_level_keys() -> tuple[str, ...]:
    """The keys a spec accepts at its top level: its keys there, then one per section."""
    tables = (s.name.strip("[]") for s in SECTIONS if s.name.startswith("["))
    return tuple(dict.fromkeys((*keys("top level"), *tables)))


def keys(name: str, family: str = "both") -> tuple[str, ...]:
    """The keys section ``name`` accepts (the parser's unknown-key check)."""
    return tuple(k.name for k in section(name, family).keys)


def key(name: str, key: str, family: str = "both") -> Key:
    """The descriptor of ``key`` in section ``name``."""
    for k in section(name, family).keys:
        if k.name == key:
            return k
    raise KeyError((name, key))


def default(name: str, key_name: str, family: str = "both") -> Any:
    """The default of ``key_name`` in section ``name``."""
    return key(name, key_name, family).default
