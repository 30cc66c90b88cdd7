"""The coarsening protection mode's spec: ``[protection]`` instead of ``[privacy]``.

A spec with a ``[protection]`` table (``mode = "coarsening"``) releases its data coarsened
(rounded to a base, suppression as the last resort) and audited by the attacker's linear
program (docs/coarsening.md, docs/spec-reference.md): establishment data
(``[data] kind = "establishments"``) as the QCEW linked tables, job records
(``[data] kind = "eree"``, the LODES-like tables) as the eight LODES WAC families by block.
It has no privacy definition and no queries: ``[privacy]``, ``[[query]]``, ``[pnc]``,
``[postprocess]`` and ``[plan]`` are refused, as is any ``[output]`` or ``[protection]``
key it would not read for its data. Its keys are declared in
:mod:`eree.release.spec_schema` (section ``[protection]``, family ``coarsening``); the
rest of the parser is :mod:`eree.release.spec`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eree.data.config import EstablishmentDataConfig, JobTablesConfig
from eree.errors import SpecError
from eree.release import spec_schema as schema
from eree.release.spec import (
    EngineSpec,
    OutputSpec,
    Plan,
    SparkSpec,
    agency_keys,
    check_keys,
    dataset_name,
    domain_values,
    engine_and_spark,
    number,
    parse_estab_data,
    parse_job_tables,
    parse_spec,
    read_spec,
    str_list,
    unknown_attribute,
)

if TYPE_CHECKING:  # the suppression package imports scipy: only a coarsening spec needs it
    from eree.suppression.merges import CategoryMerges

__all__ = [
    "COARSENING_FORMATS",
    "JOB_FORMATS",
    "JOB_PROTECTION_KEYS",
    "QCEW_ATTRIBUTES",
    "WAC_WORKER",
    "WAC_WORKPLACE",
    "CoarseningPlan",
    "ProtectionSpec",
    "load_release_spec",
    "parse_coarsening_spec",
]


_PROTECTION_KEYS = schema.keys("[protection]")
#: the top-level keys of a coarsening spec (no privacy definition, no queries)
_COARSENING_TOP = ("name", "data", "protection", "output", "engine", "spark")
#: the ``[output]`` keys a coarsening release reads
_COARSENING_OUTPUT = ("csv", "format", "year", "quarter")
#: the agency layouts a coarsening release of establishments writes
COARSENING_FORMATS = ("qcew-by-area",)
#: the agency layouts a coarsening release of job tables writes
JOB_FORMATS = ("lodes-wac",)
#: the ``[output]`` keys a coarsening release of job tables reads
_JOB_OUTPUT = ("csv", "format", "year")
#: the ``[protection]`` keys that apply to job tables (the small-cell rule on jobs)
JOB_PROTECTION_KEYS = ("mode", "rounding", "threshold", "min_protection")
#: the workplace and worker attributes the WAC families are tabulated by
WAC_WORKPLACE = ("block", "naics_sector")
WAC_WORKER = ("age", "earnings", "race", "ethnicity", "education", "sex")
#: the public columns the QCEW linked tables are built from
QCEW_PUBLIC = ("cnty", "own", "naics")
#: the largest n of the (n, k) dominance rule (the linked tables keep each cell's n largest)
MAX_DOMINANCE_N = 20
#: the attributes a QCEW layout publishes (month1–3 employment, quarterly wages)
QCEW_ATTRIBUTES = ("m1emp", "m2emp", "m3emp", "wage")


@dataclass(frozen=True)
class ProtectionSpec:
    """``[protection]`` of a coarsening release: the rounding kind and the disclosure rules.

    Attributes:
        mode: ``"coarsening"``.
        rounding: ``"deterministic"`` or ``"random"`` (unbiased random rounding).
        attributes: the confidential attributes published.
        threshold, dominance_k, dominance_n, p_percent, min_protection: the primary
            rules (:class:`eree.suppression.PrimaryRules`; 0 turns a rule off).
        exempt_own: ownership codes never sensitive.
        merges: groups of counties and of six-digit industries published as one
            category each (:mod:`eree.suppression.merges`); None for job tables.
    """

    mode: str
    rounding: str
    attributes: tuple[str, ...]
    threshold: int
    dominance_k: float
    dominance_n: int
    p_percent: float
    min_protection: float
    exempt_own: tuple[str, ...]
    merges: CategoryMerges | None = None


def _merge_groups(value: Any, key: str, *, industry: bool) -> tuple[tuple[str, ...], ...]:
    """A ``merge_*`` key: a list of groups, each a list of codes (strings), checked."""
    from eree.suppression.merges import merge_problem

    where = f"[protection].{key}"
    if not isinstance(value, list) or not all(
        isinstance(g, list) and all(isinstance(c, str) for c in g) for g in value
    ):
        raise SpecError(
            f'{where} must be a list of lists of codes (strings), e.g. [["003", "005"]]'
        )
    problem = merge_problem(value, industry=industry)
    if problem is not None:
        raise SpecError(f"{where}: {problem}")
    return tuple(tuple(g) for g in value)


@dataclass(frozen=True)
class CoarseningPlan:
    """A validated coarsening release: no privacy definition, no queries, no cost."""

    name: str
    data: EstablishmentDataConfig | JobTablesConfig
    protection: ProtectionSpec
    output: OutputSpec = field(default_factory=OutputSpec)
    engine: EngineSpec = field(default_factory=EngineSpec)
    spark: SparkSpec = field(default_factory=SparkSpec)
    source: Path | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """``"jobs"`` (the WAC families of job records) or ``"establishments"`` (QCEW)."""
        return "jobs" if isinstance(self.data, JobTablesConfig) else "establishments"


def _whole(value: Any, where: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise SpecError(f"{where} must be an integer ≥ {least}")
    return value


def _with_defaults(p: dict[str, Any]) -> dict[str, Any]:
    """``[protection]`` over its declared defaults; ``mode`` and ``rounding`` checked."""
    d = {k.name: k.default for k in schema.section("[protection]").keys}
    d.update(p)
    for k in ("mode", "rounding"):
        allowed = schema.key("[protection]", k).allowed
        if d[k] is schema.REQUIRED:
            raise SpecError(f"[protection].{k} is required (one of {', '.join(allowed)})")
        if d[k] not in allowed:
            raise SpecError(f"[protection].{k} must be one of {', '.join(allowed)}")
    return d


def _protection(p: Any, confidential: tuple[str, ...]) -> ProtectionSpec:
    """``[protection]``, each key checked against its declared type and range."""
    if not isinstance(p, dict):
        raise SpecError("[protection] must be a table")
    check_keys(p, _PROTECTION_KEYS, "[protection]")
    d = _with_defaults(p)
    attrs = confidential
    if d["attributes"] is not None:
        attrs = domain_values(d["attributes"], "[protection].attributes")
        for a in attrs:
            if a not in confidential:
                raise unknown_attribute(a, confidential, "[protection].attributes")
    dom_k = number(d["dominance_k"], "[protection].dominance_k", positive=False)
    if not (dom_k == 0 or 1 <= dom_k <= 100):
        raise SpecError("[protection].dominance_k must be 0 (off) or a percentage in [1, 100]")
    limits = {"p_percent": 100.0, "min_protection": 1e12}
    numbers = {n: number(d[n], f"[protection].{n}", positive=False) for n in limits}
    for n, v in numbers.items():
        if not 0 <= v <= limits[n]:
            raise SpecError(f"[protection].{n} must lie in [0, {limits[n]:g}]")
    dom_n = _whole(d["dominance_n"], "[protection].dominance_n", 1)
    if dom_n > MAX_DOMINANCE_N:
        raise SpecError(f"[protection].dominance_n must be at most {MAX_DOMINANCE_N}")
    from eree.suppression.merges import CategoryMerges

    return ProtectionSpec(
        mode=str(d["mode"]),
        rounding=str(d["rounding"]),
        attributes=tuple(attrs),
        threshold=_whole(d["threshold"], "[protection].threshold", 0),
        dominance_k=dom_k,
        dominance_n=dom_n,
        p_percent=numbers["p_percent"],
        min_protection=numbers["min_protection"],
        exempt_own=str_list(d["exempt_own"], "[protection].exempt_own"),
        merges=CategoryMerges(
            areas=_merge_groups(d["merge_areas"], "merge_areas", industry=False),
            industries=_merge_groups(d["merge_industries"], "merge_industries", industry=True),
        ),
    )


def _job_protection(p: Any) -> ProtectionSpec:
    """``[protection]`` of job tables: the small-cell rule on jobs (threshold, protection)."""
    if not isinstance(p, dict):
        raise SpecError("[protection] must be a table")
    check_keys(p, _PROTECTION_KEYS, "[protection]")
    for k in p:
        if k not in JOB_PROTECTION_KEYS:
            raise SpecError(
                f'[protection].{k} does not apply to job tables ([data] kind = "eree"): their '
                "rule is the small-cell rule on jobs (threshold, min_protection): remove it"
            )
    d = _with_defaults(p)
    # 0: the rule off, as for establishments (for jobs the same as 1: no cell with 1 to 0
    # jobs); the job-table rule has no other part, so then no cell is sensitive
    threshold = _whole(d["threshold"], "[protection].threshold", 0)
    prot = number(d["min_protection"], "[protection].min_protection", positive=False)
    if not (1 <= prot <= 1e12 and prot == int(prot)):
        raise SpecError(
            "[protection].min_protection must be a whole number of jobs ≥ 1 for job tables "
            "(the attacker's interval for a sensitive cell must cover T ± that many jobs)"
        )
    return ProtectionSpec(
        mode=str(d["mode"]),
        rounding=str(d["rounding"]),
        attributes=("jobs",),
        threshold=threshold,
        dominance_k=0.0,
        dominance_n=1,
        p_percent=0.0,
        min_protection=float(prot),
        exempt_own=(),
    )


def _job_data(data: dict[str, Any], base_dir: Path, fmt: str | None) -> JobTablesConfig:
    """``[data]`` of job records: the WAC families' attributes, declared codes checked."""
    from dataclasses import replace

    from eree.data.schema import NAICS_SECTORS, WORKER_DOMAINS

    cfg = parse_job_tables(data, base_dir)
    for key, need, have in (
        ("workplace_attributes", WAC_WORKPLACE, cfg.workplace_attributes),
        ("worker_attributes", WAC_WORKER, cfg.worker_attributes),
    ):
        missing = [a for a in need if a not in have]
        if missing:
            raise SpecError(
                f"[data].{key} must list {', '.join(need)}: a coarsening release of job "
                f"tables publishes the LODES WAC families (missing: {', '.join(missing)})"
            )
    domains = dict(cfg.domains)
    # the CNS family's codes: LODES's NAICS sectors unless declared (checked on loading)
    domains.setdefault("naics_sector", tuple(NAICS_SECTORS))
    if fmt is not None:
        lodes = {**WORKER_DOMAINS, "naics_sector": tuple(NAICS_SECTORS)}
        for a in (*WAC_WORKER, "naics_sector"):
            if not set(domains[a]) <= set(lodes[a]):
                raise SpecError(
                    f"[data.domains].{a}: [output].format {fmt!r} writes LODES codes "
                    f"({', '.join(lodes[a])}); the declared codes are not all among them"
                )
    return replace(cfg, domains=domains)


def _output_keys(
    out_raw: dict[str, Any],
    base_dir: Path,
    allowed: Sequence[str],
    formats: Sequence[str],
    applies: str,
    must: str,
    why: str,
) -> tuple[bool, str | None, int | None, int | None]:
    """``[output]``'s keys a coarsening release reads: ``csv``, ``format``, ``year``, ``quarter``.

    A key outside ``allowed`` or a format outside ``formats`` is refused, naming it
    (``applies``, ``must`` and ``why`` word the errors).
    """
    for k in out_raw:
        if k not in allowed:
            raise SpecError(
                f"[output].{k} does not apply {applies} (it reads {', '.join(allowed)}): remove it"
            )
    csv = out_raw.get("csv", OutputSpec.csv)
    if not isinstance(csv, bool):
        raise SpecError("[output].csv must be true or false")
    fmt, year, quarter, _, _ = agency_keys(out_raw, base_dir)
    if fmt is not None and fmt not in formats:
        raise SpecError(
            f"[output].format must be {' or '.join(map(repr, formats))} {must} (got {fmt!r}): {why}"
        )
    return csv, fmt, year, quarter


def _job_output(out_raw: dict[str, Any], base_dir: Path, data: JobTablesConfig) -> OutputSpec:
    """``[output]`` of job tables: ``csv``, and ``format = "lodes-wac"`` with ``year``."""
    csv, fmt, year, _ = _output_keys(
        out_raw, base_dir, _JOB_OUTPUT, JOB_FORMATS, "to a coarsening release of job tables",
        "for a coarsening release of job tables", "it publishes the WAC families by block",
    )  # fmt: skip
    if fmt is not None and year is None:
        raise SpecError(f"[output].year is required with format {fmt!r} (the file's year)")
    return OutputSpec(csv=csv, format=fmt, year=year, job_type=data.job_type)


def _parse_jobs(
    raw: dict[str, Any], name: str, data: dict[str, Any], base_dir: Path, source: Path | None
) -> CoarseningPlan:
    out_raw = raw.get("output", {})
    if not isinstance(out_raw, dict):
        raise SpecError("[output] must be a table")
    check_keys(out_raw, schema.keys("[output]"), "[output]")
    fmt = out_raw.get("format")
    cfg = _job_data(data, base_dir, fmt if isinstance(fmt, str) else None)
    protection = _job_protection(raw.get("protection"))
    output = _job_output(out_raw, base_dir, cfg)
    engine, spark = engine_and_spark(raw)
    return CoarseningPlan(name, cfg, protection, output, engine, spark, source, raw)


def parse_coarsening_spec(
    raw: dict[str, Any], base_dir: Path, source: Path | None = None
) -> CoarseningPlan:
    """Build a :class:`CoarseningPlan` from a parsed TOML document with ``[protection]``."""
    check_keys(raw, schema.top_level_keys(), "the spec")
    for k in raw:
        if k not in _COARSENING_TOP:
            where = "[[query]]" if k == "query" else f"[{k}]"
            raise SpecError(
                f'{where} does not apply with [protection] mode = "coarsening" (no privacy '
                "definition, no queries: it publishes the QCEW linked tables or the LODES "
                "WAC tables): remove it"
            )
    name = dataset_name(raw)
    data = raw.get("data")
    if not isinstance(data, dict):
        raise SpecError("the spec needs a [data] section")
    kind = data.get("kind", schema.default("[data]", "kind", "eree"))
    if kind == "eree":
        return _parse_jobs(raw, name, data, base_dir, source)
    if kind != "establishments":
        raise SpecError(
            '[data].kind must be "establishments" (the QCEW linked tables) or "eree" (job '
            f'records: the LODES WAC tables) with [protection] mode = "coarsening" (got {kind!r})'
        )
    cfg = parse_estab_data(data, base_dir)
    missing = [c for c in QCEW_PUBLIC if c not in cfg.public]
    if missing:
        raise SpecError(
            f"[data].public must list {', '.join(QCEW_PUBLIC)}: a coarsening release "
            f"tabulates the QCEW linked tables (missing: {', '.join(missing)})"
        )
    if not cfg.confidential:
        raise SpecError(
            "[data].confidential must list the attributes a coarsening release publishes"
        )
    protection = _protection(raw.get("protection"), tuple(cfg.confidential))
    out_raw = raw.get("output", {})
    if not isinstance(out_raw, dict):
        raise SpecError("[output] must be a table")
    check_keys(out_raw, schema.keys("[output]"), "[output]")
    csv, fmt, year, quarter = _output_keys(
        out_raw, base_dir, _COARSENING_OUTPUT, COARSENING_FORMATS,
        'with [protection] mode = "coarsening"', 'with [protection] mode = "coarsening"',
        "the coarsened tables are QCEW establishment tables",
    )  # fmt: skip
    if fmt is not None:
        if year is None or quarter is None:
            raise SpecError(f"[output].year and [output].quarter are required with format {fmt!r}")
        if "state" not in cfg.public:
            raise SpecError(
                f"[output].format {fmt!r} names each file by its area (state + county FIPS): "
                "[data].public must list state"
            )
        merges = protection.merges
        for key, groups in (
            ("merge_areas", merges.areas if merges else ()),
            ("merge_industries", merges.industries if merges else ()),
        ):
            if groups:
                raise SpecError(
                    f"[protection].{key} does not go with [output].format {fmt!r}: the QCEW "
                    "by-area layout has no code for a merged category (publish the table "
                    "format, or remove the merge)"
                )
        lacking = [a for a in QCEW_ATTRIBUTES if a not in protection.attributes]
        if lacking:
            raise SpecError(
                f"[output].format {fmt!r} writes month1–3 employment and quarterly wages: "
                f"[protection].attributes must include {', '.join(lacking)}"
            )
    output = OutputSpec(csv=csv, format=fmt, year=year, quarter=quarter)
    engine, spark = engine_and_spark(raw)
    return CoarseningPlan(name, cfg, protection, output, engine, spark, source, raw)


def load_release_spec(path: str | Path) -> Plan | CoarseningPlan:
    """Read and validate a release's spec: a privacy release's, or a coarsening release's.

    A spec with ``[protection]`` is a coarsening release (:class:`CoarseningPlan`); any
    other is a privacy release (:class:`Plan`).
    """
    raw, p = read_spec(path)
    if "protection" in raw:
        return parse_coarsening_spec(raw, p.parent, source=p)
    return parse_spec(raw, p.parent, source=p)
