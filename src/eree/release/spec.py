"""The release spec (TOML) and the plan built from it (docs/spec.md, docs/spec-reference.md).

A plan is validated structurally here (unknown keys, types, paths); its privacy cost is
computed by the accountant from the plan alone, before any confidential data is read.
"""

from __future__ import annotations

import difflib
import math
import re
import tomllib
import unicodedata
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from eree.data.config import EstablishmentDataConfig, JobTablesConfig, check_job_selection
from eree.data.location import DataPath, is_uri, uri_has_password
from eree.data.schema import WORKER_DOMAINS
from eree.engine.select import ENGINES
from eree.engine.spark.settings import check_conf, check_master
from eree.errors import SpecError
from eree.mechanisms import registry
from eree.privacy.composition import float_down
from eree.privacy.definitions import ALPHA_DEFINITIONS, DEFINITION_NAMES
from eree.release import spec_schema as schema
from eree.release.spec_schema import DEFAULT_MAX_CELLS as DEFAULT_MAX_CELLS
from eree.release.targets import (
    BudgetPlan,
    Target,
    parse_at,
    parse_plan_section,
    parse_targets,
    parse_weight,
)

# every section's keys and defaults are declared once, in spec_schema (docs/spec-reference.md
# is generated from the same table)
_TOP_KEYS = schema.top_level_keys()
_ENGINE_KEYS = schema.keys("[engine]")
_SPARK_KEYS = schema.keys("[spark]")
#: a JVM heap size as ``-Xmx`` takes it: a whole number of bytes, or of k, m, g, t
_JVM_SIZE = re.compile(r"[1-9][0-9]{0,9}[kKmMgGtT]?")
_JOB_TABLES_KEYS = schema.keys("[data]", "eree")
_ESTAB_DATA_KEYS = schema.keys("[data]", "establishments")
_PRIVACY_KEYS = schema.keys("[privacy]")
_BUDGET_KEYS = schema.key("[privacy]", "budget").allowed
_QUERY_KEYS = schema.keys("[[query]]")
_PNC_KEYS = schema.keys("[pnc]")
_POSTPROCESS_KEYS = schema.keys("[postprocess]")
_OUTPUT_KEYS = schema.keys("[output]")
#: how the GEDP microdata is fitted: Eq. 1 of the QCEW paper, or in √-space where the
#: answers are √-ψ answers (eree.postprocess.sqrt_space; docs/spec.md)
MICRODATA_FITS = schema.key("[postprocess]", "microdata_fit").allowed

#: longest query name: it becomes a file name (``tables/<name>.parquet``)
MAX_QUERY_NAME = 100
#: the longest dataset name (the spec's ``name``: its identity in the ledger and reports)
MAX_DATASET_NAME = 200
#: the largest spec file read (a spec is a few KiB; a larger file is not one)
MAX_SPEC_BYTES = 4 * 1024 * 1024


def _check_keys(section: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in section:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; allowed: {', '.join(allowed)}"
            raise SpecError(f"unknown key {key!r} in {where}{hint}")


def _spark_spec(sp_raw: Any) -> SparkSpec:
    """``[spark]``, each setting checked (the master and conf by the Spark settings' rules)."""
    if not isinstance(sp_raw, dict):
        raise SpecError("[spark] must be a table")
    _check_keys(sp_raw, _SPARK_KEYS, "[spark]")
    sp = dict(sp_raw)
    if sp.get("master") is not None:
        check_master(sp["master"])
    sp["conf"] = check_conf(sp.get("conf", {}))
    given = tuple("[spark.conf]" if k == "conf" else f"[spark] {k}" for k in sp_raw)
    spark = SparkSpec(**sp, given=given)
    if isinstance(spark.cores, bool) or not isinstance(spark.cores, int) or spark.cores < 1:
        raise SpecError("[spark].cores must be a positive integer")
    if not (isinstance(spark.driver_memory, str) and _JVM_SIZE.fullmatch(spark.driver_memory)):
        raise SpecError(
            "[spark].driver_memory must be a JVM heap size in quotes, a whole number with "
            'an optional unit k, m, g or t (e.g. "4g" or "512m")'
        )
    return spark


def _number(value: Any, where: str, *, positive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(f"{where} must be a number (got {type(value).__name__})")
    v = float(value)
    if not math.isfinite(v):
        raise SpecError(f"{where} must be a finite number")
    if positive and not v > 0:
        raise SpecError(f"{where} must be > 0")
    return v


def _privacy_number(value: Any, where: str) -> float:
    """A privacy parameter (ε, δ, μ) as the decimal the spec writes, rounded down to a float.

    TOML reads ``0.1`` as the nearest float, 0.1000000000000000055…, a hair above the
    decimal: ten releases of it would pass a budget of exactly 1. The decimal written
    (the shortest one that reads back as the same float) is taken as meant, and the
    mechanism runs with the largest float not above it: it spends at most what was written,
    its cost is that float exactly, and ten such costs fit in a budget of 1.
    """
    v = _number(value, where)
    return float_down(Fraction(repr(v)))


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise SpecError(f"{where} must be a list of strings")
    return tuple(value)


def _domain(value: Any, where: str) -> tuple[str, ...]:
    """A declared domain: a non-empty list of distinct strings."""
    values = _str_list(value, where)
    if not values:
        raise SpecError(f"{where} must list at least one value")
    seen: set[str] = set()
    for v in values:
        if v in seen:
            raise SpecError(f"{where} lists the value {v!r} more than once")
        seen.add(v)
    return values


def _unknown_attribute(attr: str, known: tuple[str, ...], where: str) -> SpecError:
    close = difflib.get_close_matches(attr, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(known)}"
    return SpecError(f"{where}: {attr!r} is not an attribute of the data{hint}")


@dataclass(frozen=True)
class QuerySpec:
    """One ``[[query]]``.

    Attributes:
        name: table name (unique in the spec).
        by: grouping attributes; ``()`` for one total cell; ``"identity"`` for the
            establishment identity query (GEDP).
        mechanism: mechanism name.
        epsilon, delta: the query's whole ER-EE/DP cost (ER-EE and DP definitions).
        mu: per-attribute μ (GEDP).
        params: other mechanism parameters (theta, force, variant, s, t, small_cell,
            additive).
        complete: list workplace combinations with no establishment as exact zeros.
        target: accuracy targets per statistic (``jobs`` for a count marginal, the
            attribute for GEDP), read by ``eree plan`` (:mod:`eree.release.targets`).
        weight: the query's weight when ``eree plan`` splits ``[plan]``'s total.
        at: the query's representative cell size in that split (default ``[plan].at``).
        publish: whether the table is written; ``False`` only for the ``[pnc]
            bounds_from`` identity query, whose answers pnc reads (charged, not written).
    """

    name: str
    by: tuple[str, ...] | str
    mechanism: str
    epsilon: float | None = None
    delta: float | None = None
    mu: dict[str, float] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    complete: bool = False
    target: dict[str, Target] | None = None
    weight: float = 1.0
    at: float | dict[str, float] | None = None
    publish: bool = True

    @property
    def is_identity(self) -> bool:
        """Whether the query is the identity query (``by = "identity"``)."""
        return self.by == "identity"

    def to_dict(self) -> dict[str, Any]:
        """The query as a plain dictionary: unset optional fields left out, ``params`` inlined."""
        d: dict[str, Any] = {
            "name": self.name,
            "by": self.by if isinstance(self.by, str) else list(self.by),
            "mechanism": self.mechanism,
        }
        for k in ("epsilon", "delta", "mu"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        if self.complete:
            d["complete"] = True
        d.update(self.params)
        if self.target is not None:
            t = {s: x.to_dict() for s, x in self.target.items()}
            d["target"] = t["jobs"] if list(t) == ["jobs"] else t
        if self.weight != 1.0:
            d["weight"] = self.weight
        if self.at is not None:
            d["at"] = self.at
        if not self.publish:
            d["publish"] = False
        return d


@dataclass(frozen=True)
class PrivacySpec:
    """``[privacy]``: the definition and its parameters, plus an optional lifetime budget."""

    definition: str
    alpha: float | None = None
    neighbor: str | dict[str, Any] | None = None
    distance: dict[str, float] | None = None
    budget: dict[str, float] | None = None


@dataclass(frozen=True)
class PncSpec:
    """``[pnc]``: settings of the probably-no-clipping mechanism.

    See docs/design.md#gedp-mechanisms.
    """

    zeta: float = schema.default("[pnc]", "zeta")
    bounds_from: str | None = None


@dataclass(frozen=True)
class PostprocessSpec:
    """``[postprocess]``: post-processing of published values (never costs privacy).

    Attributes:
        microdata: GEDP: reconstruct establishment microdata by weighted least squares.
        nonnegative: every published value is ≥ 0 (GEDP: the WLS microdata; ER-EE: the
            counts).
        integer: ER-EE: every published count is an integer.
        consistent: ER-EE: every released marginal's cell equals the sum of its cells in
            each finer released marginal (geography and worker attributes).
        microdata_fit: GEDP microdata: ``"eq1"`` (Eq. 1 of the QCEW paper, the default)
            or ``"sqrt-space"`` (√-ψ answers fitted in √-space, the total anchored;
            :mod:`eree.postprocess.sqrt_space`).
        variance_calibration: not a spec key: an experiment of ``eree evaluate
            publication-grade --variance-calibration`` (ER-EE with ``consistent``): the
            public variance model's level fitted per marginal to the release's own
            parent/child discrepancies (:mod:`eree.postprocess.variance_calibration`).
            Not offered to releases: measured, it made some marginals worse than their
            raw values, which the never-worse guard (simulating under the calibrated
            model) did not prevent (docs/publication-grade.md).
        without_guard: not a spec key: True only in ``eree evaluate publication-grade``'s
            "no guard" column, where every marginal publishes the consistent solution
            without the never-worse guard — to show what the guard protects against.
            Releases always run the guard.
        variance_check_report_only: not a spec key: True only in an evaluation's
            comparison, where the check of the variance model against the published
            parent/child gaps (:mod:`eree.postprocess.variance_check`) is run and
            reported but its action (rescaling the model) is not taken. Releases act.
    """

    microdata: bool = schema.default("[postprocess]", "microdata")
    nonnegative: bool = schema.default("[postprocess]", "nonnegative")
    integer: bool = schema.default("[postprocess]", "integer")
    consistent: bool = schema.default("[postprocess]", "consistent")
    microdata_fit: str = schema.default("[postprocess]", "microdata_fit")
    variance_calibration: bool = False
    without_guard: bool = False
    variance_check_report_only: bool = False


@dataclass(frozen=True)
class EngineSpec:
    """``[engine]``: which engine scans the microdata (docs/design.md#core-objects).

    Attributes:
        kind: ``"polars"`` (default: in-process) or ``"spark"`` (Spark reads and
            validates the data; for data that outgrow one machine; settings in
            :class:`SparkSpec`).
        memory: the memory a query's cell table may take (a JVM-style size), or None
            for the memory available when the release starts (release/cells.py).
    """

    kind: str = schema.default("[engine]", "kind")
    memory: str | None = schema.default("[engine]", "memory")


@dataclass(frozen=True)
class SparkSpec:
    """``[spark]``: the Spark engine's settings (read only when the engine is Spark).

    Attributes:
        cores: local worker threads when eree starts the session.
        driver_memory: driver heap when eree starts the session.
        master: master URL of the session eree starts (``None``: ``local[cores]``).
        conf: further Spark settings, as text (checked).
        given: where each setting the user gave was written (``[spark] master``,
            ``--conf``), for :func:`check_spark_settings`; empty when none was given.
    """

    cores: int = schema.default("[spark]", "cores")
    driver_memory: str = schema.default("[spark]", "driver_memory")
    master: str | None = schema.default("[spark]", "master")
    conf: dict[str, str] = field(default_factory=dict)
    given: tuple[str, ...] = ()


#: the keys that moved from ``[engine]`` to ``[spark]`` (they apply to Spark only)
_MOVED_TO_SPARK = ("cores", "driver_memory", "master", "conf")


def check_spark_settings(plan: Plan) -> None:
    """Refuse ``[spark]`` settings that the chosen engine would not read.

    Raises:
        SpecError: the engine is not Spark but the spec (or ``--master``/``--conf``)
            gives Spark settings: a setting that silently does nothing is an error; or
            a setting this machine cannot run (:func:`~eree.engine.spark.settings.
            check_machine`: the driver's heap, local worker threads).
    """
    if plan.engine.kind != "spark" and plan.spark.given:
        raise SpecError(
            f"{plan.spark.given[0]} is a Spark setting, and the engine is "
            f'{plan.engine.kind!r}: set [engine] kind = "spark" (or run with --engine '
            "spark), or remove it"
        )
    if plan.engine.kind == "spark":
        from eree.engine.spark.settings import check_machine

        check_machine(plan.spark.cores, plan.spark.driver_memory, plan.spark.master)


@dataclass(frozen=True)
class OutputSpec:
    """``[output]``: publication settings.

    Attributes:
        confidence: level of the published confidence intervals.
        csv: also write each table as CSV.
        max_cells: refuse a query with more cells than this, before allocating them
            (docs/design.md#validation).
    """

    confidence: float = schema.default("[output]", "confidence")
    csv: bool = schema.default("[output]", "csv")
    max_cells: int = schema.default("[output]", "max_cells")
    format: str | None = schema.default("[output]", "format")
    year: int | None = schema.default("[output]", "year")
    quarter: int | None = schema.default("[output]", "quarter")
    job_type: str = schema.default("[output]", "job_type")
    cells_from: str | None = schema.default("[output]", "cells_from")


def _agency_keys(
    out_raw: dict[str, Any], base: Path
) -> tuple[str | None, int | None, int | None, str, str | None]:
    """``[output] format, year, quarter, job_type``: the agency layout (docs/spec.md)."""
    from eree.release.layouts import FORMATS

    fmt = out_raw.get("format", OutputSpec.format)
    if fmt is not None and fmt not in FORMATS:
        allowed = ", ".join(f'"{f}"' for f in FORMATS)
        raise SpecError(f"[output].format must be one of {allowed} (got {fmt!r})")
    year = out_raw.get("year", OutputSpec.year)
    if year is not None and (
        isinstance(year, bool) or not isinstance(year, int) or not 1000 <= year <= 9999
    ):
        raise SpecError("[output].year must be a 4-digit year")
    quarter = out_raw.get("quarter", OutputSpec.quarter)
    if quarter is not None and (isinstance(quarter, bool) or quarter not in (1, 2, 3, 4)):
        raise SpecError("[output].quarter must be 1, 2, 3 or 4")
    job_type = out_raw.get("job_type", OutputSpec.job_type)
    allowed_jt = schema.key("[output]", "job_type").allowed
    if job_type not in allowed_jt:
        raise SpecError(f"[output].job_type must be one of {', '.join(allowed_jt)}")
    for k in ("year", "quarter", "job_type", "cells_from", "levels", "columns", "codes"):
        if k in out_raw and fmt is None:
            raise SpecError(f"[output].{k} applies only with [output].format")
    if fmt is not None and not fmt.startswith("qcew"):
        for k in ("levels",) if fmt == "lodes-wac" else ("levels", "columns", "codes"):
            if k in out_raw:
                raise SpecError(f"[output].{k} applies only with a QCEW format")
    cells_from = out_raw.get("cells_from")
    if cells_from is not None:
        if not isinstance(cells_from, str) or not cells_from:
            raise SpecError("[output].cells_from must be a path (a file or a folder)")
        cells_from = str(_resolved(base / cells_from, "[output].cells_from"))
    return fmt, year, quarter, job_type, cells_from


@dataclass(frozen=True)
class Plan:
    """A validated, serialisable description of one release."""

    name: str
    data: JobTablesConfig | EstablishmentDataConfig
    privacy: PrivacySpec
    queries: tuple[QuerySpec, ...]
    pnc: PncSpec = field(default_factory=PncSpec)
    postprocess: PostprocessSpec = field(default_factory=PostprocessSpec)
    output: OutputSpec = field(default_factory=OutputSpec)
    engine: EngineSpec = field(default_factory=EngineSpec)
    spark: SparkSpec = field(default_factory=SparkSpec)
    source: Path | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    budget_plan: BudgetPlan | None = None

    @property
    def kind(self) -> str:
        """The data kind: ``eree`` (ER-EE data) or ``establishments``."""
        return "eree" if isinstance(self.data, JobTablesConfig) else "establishments"

    @property
    def establishment_data(self) -> EstablishmentDataConfig:
        """The establishment data of a GEDP plan (refused for ER-EE data)."""
        if not isinstance(self.data, EstablishmentDataConfig):
            raise SpecError('GEDP needs establishment data: [data] kind = "establishments"')
        return self.data

    def query(self, name: str) -> QuerySpec:
        """The query named ``name`` (a :class:`SpecError` if there is none)."""
        for q in self.queries:
            if q.name == name:
                return q
        raise SpecError(f"no query named {name!r}")


def _resolved(p: Path, key: str) -> Path:
    """``p`` made absolute, symbolic links followed; a link loop is one line naming the key."""
    if "\x00" in str(p):  # no file system takes it (Python raises ValueError)
        raise SpecError(f"{key}: a path must not contain a NUL character")
    try:
        return p.resolve()
    except (RuntimeError, OSError):  # Python raises RuntimeError for a symlink loop
        raise SpecError(f"{key}: {p} is a loop of symbolic links") from None


def _data_path(v: str, base: Path, key: str) -> DataPath:
    """A ``[data]`` path: a URI kept as given, else resolved against the spec's folder.

    See docs/design.md#input-locations (:mod:`eree.data.location`).
    """
    if "\x00" in v:
        raise SpecError(f"{key}: a path must not contain a NUL character")
    if is_uri(v):
        if uri_has_password(v):  # the manifest records the URI as given
            raise SpecError(
                f"{key}: a URI must not carry a password (it would be recorded in the "
                "manifest): give credentials to the cluster's configuration (docs/spark-cluster.md)"
            )
        return v
    return _resolved(base / v, key)


def _parse_job_tables(d: dict[str, Any], base: Path) -> JobTablesConfig:
    _check_keys(d, _JOB_TABLES_KEYS, "[data]")

    def path(key: str) -> DataPath | None:
        v = d.get(key)
        if v is None:
            return None
        if not isinstance(v, str):
            raise SpecError(f"[data].{key} must be a path string")
        return _data_path(v, base, f"[data].{key}")

    has_three = any(k in d for k in ("workplace", "worker", "job"))
    if "jobs" in d and has_three:
        raise SpecError("[data]: give either jobs = ... or workplace/worker/job, not both")
    if "jobs" not in d and not all(k in d for k in ("workplace", "worker", "job")):
        raise SpecError("[data]: give workplace, worker and job (or one joined jobs table)")
    kwargs: dict[str, Any] = {
        "workplace": path("workplace"),
        "worker": path("worker"),
        "job": path("job"),
        "jobs": path("jobs"),
    }
    for key in ("workplace_id", "worker_id"):
        if key in d:
            if not isinstance(d[key], str):
                raise SpecError(f"[data].{key} must be a string")
            kwargs[key] = d[key]
    if "workplace_attributes" in d:
        kwargs["workplace_attributes"] = _str_list(
            d["workplace_attributes"], "[data].workplace_attributes"
        )
    domains = dict(WORKER_DOMAINS)
    if "domains" in d:
        if not isinstance(d["domains"], dict):
            raise SpecError("[data.domains] must be a table of attribute = [values]")
        for attr, values in d["domains"].items():
            domains[attr] = _domain(values, f"[data.domains].{attr}")
    if "worker_attributes" in d:
        wa = _str_list(d["worker_attributes"], "[data].worker_attributes")
        missing = [a for a in wa if a not in domains]
        if missing:
            raise SpecError(
                f"worker attributes {missing} have no declared domain; add them to [data.domains]"
            )
        kwargs["worker_attributes"] = wa
    kwargs["domains"] = domains
    if "max_jobs_per_worker" in d:
        k = d["max_jobs_per_worker"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise SpecError(f"[data].max_jobs_per_worker must be a whole number ≥ 1 (got {k!r})")
        kwargs["max_jobs_per_worker"] = k
    for key in ("job_type", "job_earnings"):
        if key in d:
            if not isinstance(d[key], str):
                raise SpecError(f"[data].{key} must be a string")
            kwargs[key] = d[key]
    cfg = JobTablesConfig(**kwargs)
    check_job_selection(cfg)
    attributes = (*cfg.workplace_attributes, *cfg.worker_attributes)
    for attr in d.get("domains", {}):
        if attr not in attributes:
            raise _unknown_attribute(attr, attributes, f"[data.domains].{attr}")
    return cfg


def _parse_estab_data(d: dict[str, Any], base: Path) -> EstablishmentDataConfig:
    _check_keys(d, _ESTAB_DATA_KEYS, "[data]")
    if not isinstance(d.get("path"), str):
        raise SpecError("[data].path (the establishment file) is required")
    kwargs: dict[str, Any] = {"path": _data_path(d["path"], base, "[data].path")}
    if "id" in d:
        if not isinstance(d["id"], str):
            raise SpecError("[data].id must be a string")
        kwargs["id"] = d["id"]
    for key in ("public", "confidential"):
        if key in d:
            kwargs[key] = _str_list(d[key], f"[data].{key}")
    if "domains" in d:
        if not isinstance(d["domains"], dict):
            raise SpecError("[data.domains] must be a table of attribute = [values]")
        kwargs["domains"] = {a: _domain(v, f"[data.domains].{a}") for a, v in d["domains"].items()}
    cfg = EstablishmentDataConfig(**kwargs)
    units = d.get("units", {})
    if not isinstance(units, dict) or not all(
        isinstance(u, str) and u.strip() for u in units.values()
    ):
        raise SpecError('[data.units] must be a table of attribute = "unit in words"')
    for attr in units:
        if attr not in cfg.confidential:
            raise _unknown_attribute(
                attr, cfg.confidential, f"[data.units].{attr} (not in [data].confidential)"
            )
    for attr in cfg.domains:
        if attr not in cfg.public:
            raise _unknown_attribute(
                attr, cfg.public, f"[data.domains].{attr} (not in [data].public)"
            )
    return cfg


def _parse_mu(value: Any, where: str) -> dict[str, float]:
    if not isinstance(value, dict):
        raise SpecError(f"{where} must be a table attribute = mu")
    return {str(k): _privacy_number(v, f"{where}.{k}") for k, v in value.items()}


#: [[query]] keys every mechanism accepts
_COMMON_QUERY_KEYS = ("name", "by", "mechanism", "complete", "target", "weight", "at", "publish")


def _check_settings(q: dict[str, Any], mech: str, where: str) -> None:
    """Refuse settings that do not apply to the mechanism (from the registry)."""
    variants = [v for v in registry.variants(mech) if v]
    if "variant" in q:
        if not variants:
            raise SpecError(f"{where}: variant does not apply to {mech}")
        if q["variant"] not in variants:
            raise SpecError(
                f"{where}: variant must be one of {', '.join(map(repr, variants))} "
                f"(got {q['variant']!r})"
            )
    e = registry.entry(mech, q.get("variant") if variants else None)
    for key in q:
        if key in _COMMON_QUERY_KEYS or key in e.settings:
            continue
        users = [
            f"{x.name}" + (f' (variant = "{x.variant}")' if x.variant == "workshop" else "")
            for x in registry.REGISTRY
            if key in x.settings
        ]
        raise SpecError(
            f"{where}: {key} does not apply to {mech}"
            + (f' (variant = "{e.variant}")' if e.variant == "workshop" else "")
            + (f"; it applies to: {', '.join(dict.fromkeys(users))}" if users else "")
        )


def _parse_query(q: dict[str, Any], i: int, confidential: tuple[str, ...] | None) -> QuerySpec:
    where = f"[[query]] #{i + 1}"
    _check_keys(q, _QUERY_KEYS, where)
    name = q.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError(f"{where}: name is required")
    if len(name) > MAX_QUERY_NAME:
        raise SpecError(f"{where}: name is longer than {MAX_QUERY_NAME} characters")
    if not name.replace("_", "").replace("-", "").isalnum() or not name.isascii():
        raise SpecError(f"{where}: name {name!r} may only use letters, digits, '_' and '-'")
    where = f"query {name!r}"
    by_raw = q.get("by")
    by: tuple[str, ...] | str
    if by_raw == "identity":
        by = "identity"
    elif isinstance(by_raw, list):
        by = _str_list(by_raw, f"{where}: by")
        if len(set(by)) != len(by):
            raise SpecError(f"{where}: by lists an attribute twice")
    else:
        raise SpecError(f'{where}: by must be a list of attributes ([] for a total) or "identity"')
    mech = q.get("mechanism")
    if mech not in registry.mechanism_names():
        raise SpecError(f"{where}: unknown mechanism {mech!r}{registry.suggest(str(mech))}")
    _check_settings(q, str(mech), where)
    epsilon = _privacy_number(q["epsilon"], f"{where}: epsilon") if "epsilon" in q else None
    delta = _privacy_number(q["delta"], f"{where}: delta") if "delta" in q else None
    mu = _parse_mu(q["mu"], f"{where}: mu") if "mu" in q else None
    params: dict[str, Any] = {}
    for key in ("theta", "s", "t", "small_cell", "additive", "grid"):
        if key in q:
            params[key] = _number(q[key], f"{where}: {key}")
    if "grid" in params:
        from eree.mechanisms.sampling import check_grid

        try:
            check_grid(params["grid"], f"{where}: grid")
        except ValueError as e:
            raise SpecError(str(e)) from None
    if "force" in q:
        if not isinstance(q["force"], bool):
            raise SpecError(f"{where}: force must be true or false")
        params["force"] = q["force"]
    if "variant" in q:
        params["variant"] = q["variant"]
    complete = q.get("complete", False)
    if not isinstance(complete, bool):
        raise SpecError(f"{where}: complete must be true or false")
    target = parse_targets(q["target"], where, confidential) if "target" in q else None
    weight = parse_weight(q["weight"], where) if "weight" in q else 1.0
    at = parse_at(q["at"], f"{where}: at", confidential) if "at" in q else None
    publish = q.get("publish", True)
    if not isinstance(publish, bool):
        raise SpecError(f"{where}: publish must be true or false")
    return QuerySpec(
        name, by, str(mech), epsilon, delta, mu, params, complete, target, weight, at, publish
    )


def _engine_and_spark(raw: dict[str, Any]) -> tuple[EngineSpec, SparkSpec]:
    """``[engine]`` and ``[spark]``, each checked."""
    eng_raw = raw.get("engine", {})
    for key in _MOVED_TO_SPARK:
        if isinstance(eng_raw, dict) and key in eng_raw:
            old = "[engine.conf]" if key == "conf" else f"[engine] {key}"
            new = "[spark.conf]" if key == "conf" else f"[spark] {key}"
            raise SpecError(f"{old} moved to {new}: it applies to the Spark engine only")
    _check_keys(eng_raw, _ENGINE_KEYS, "[engine]")
    engine = EngineSpec(**eng_raw)
    if engine.kind not in ENGINES:
        kinds = " or ".join(f'"{k}"' for k in ENGINES)
        raise SpecError(f"[engine].kind must be {kinds} (got {engine.kind!r})")
    spark = _spark_spec(raw.get("spark", {}))
    if engine.memory is not None and not (
        isinstance(engine.memory, str) and _JVM_SIZE.fullmatch(engine.memory)
    ):
        raise SpecError(
            "[engine].memory must be a size in quotes, a whole number with an optional unit "
            'k, m, g or t (e.g. "8g" or "512m")'
        )
    return engine, spark


def _dataset_name(raw: dict[str, Any]) -> str:
    """The spec's ``name``: present, not too long, printable."""
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError("the spec needs a name (the dataset identity), e.g. name = 'pa-2015'")
    if len(name) > MAX_DATASET_NAME:
        raise SpecError(f"the spec's name is longer than {MAX_DATASET_NAME} characters")
    bad = [c for c in name if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")]
    if bad:
        raise SpecError(
            f"the spec's name contains a control or formatting character "
            f"(U+{ord(bad[0]):04X}); it is shown in reports and the ledger: use printable "
            "characters"
        )
    return name


def parse_spec(raw: dict[str, Any], base_dir: Path, source: Path | None = None) -> Plan:
    """Build a :class:`Plan` from a parsed TOML document; paths are relative to ``base_dir``."""
    _check_keys(raw, _TOP_KEYS, "the spec")
    if "protection" in raw:
        raise SpecError(
            '[protection] makes this a coarsening spec (mode = "coarsening": no privacy '
            "definition): `eree protect` releases it; this command reads a privacy "
            "release's spec"
        )
    name = _dataset_name(raw)
    data = raw.get("data")
    if not isinstance(data, dict):
        raise SpecError("the spec needs a [data] section")
    kind = data.get("kind", schema.default("[data]", "kind", "eree"))
    if kind == "eree":
        data_cfg: JobTablesConfig | EstablishmentDataConfig = _parse_job_tables(data, base_dir)
    elif kind == "establishments":
        data_cfg = _parse_estab_data(data, base_dir)
    else:
        raise SpecError(f'[data].kind must be "eree" or "establishments" (got {kind!r})')

    p = raw.get("privacy")
    if not isinstance(p, dict):
        raise SpecError("the spec needs a [privacy] section")
    _check_keys(p, _PRIVACY_KEYS, "[privacy]")
    definition = p.get("definition")
    if definition not in DEFINITION_NAMES:
        close = difflib.get_close_matches(str(definition), DEFINITION_NAMES, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise SpecError(
            f"[privacy].definition must be one of {', '.join(DEFINITION_NAMES)} "
            f"(got {definition!r}){hint}"
        )
    alpha = _number(p["alpha"], "[privacy].alpha") if "alpha" in p else None
    if definition in ALPHA_DEFINITIONS and alpha is None:
        raise SpecError(f"[privacy].alpha is required for definition {definition!r}")
    if definition != "gedp":  # a setting that silently does nothing is an error
        for k in ("neighbor", "distance"):
            if k in p:
                raise SpecError(
                    f'[privacy].{k} applies to GEDP (definition = "gedp"), not to '
                    f"definition {definition!r}: remove it"
                )
    distance = _parse_mu(p["distance"], "[privacy].distance") if "distance" in p else None
    neighbor = p.get("neighbor")
    if neighbor is not None and not isinstance(neighbor, str | dict):
        raise SpecError("[privacy].neighbor must be a name or a table { kind = ..., a = ... }")
    budget = None
    if "budget" in p:
        if not isinstance(p["budget"], dict):
            raise SpecError("[privacy].budget must be a table, e.g. { epsilon = 4.0 }")
        budget = {k: _number(v, f"[privacy].budget.{k}") for k, v in p["budget"].items()}
        _check_keys(budget, _BUDGET_KEYS, "[privacy].budget")
    privacy = PrivacySpec(str(definition), alpha, neighbor, distance, budget)

    qs = raw.get("query")
    if not isinstance(qs, list) or not qs:
        raise SpecError("the spec needs at least one [[query]]")
    conf = None if isinstance(data_cfg, JobTablesConfig) else tuple(data_cfg.confidential)
    queries = tuple(_parse_query(q, i, conf) for i, q in enumerate(qs))
    names = [q.name for q in queries]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SpecError(f"query names must be unique; repeated: {sorted(dup)}")

    pnc_raw = raw.get("pnc", {})
    _check_keys(pnc_raw, _PNC_KEYS, "[pnc]")
    zeta = _number(pnc_raw.get("zeta", PncSpec.zeta), "[pnc].zeta")
    if not zeta < 1:
        raise SpecError("[pnc].zeta must lie in (0, 1)")
    bounds_from = pnc_raw.get("bounds_from")
    if bounds_from is not None and bounds_from not in names:
        raise SpecError(f"[pnc].bounds_from names no query ({bounds_from!r})")
    for q in queries:
        if not q.publish and q.name != bounds_from:
            raise SpecError(
                f"query {q.name!r}: publish = false is only for the identity query named by "
                "[pnc] bounds_from (its answers give pnc's bounds); any other query would be "
                "charged for a table nobody sees: leave it out instead"
            )
    pp_raw = raw.get("postprocess", {})
    _check_keys(pp_raw, _POSTPROCESS_KEYS, "[postprocess]")
    for key in _POSTPROCESS_KEYS:
        if key == "microdata_fit":
            if key in pp_raw and pp_raw[key] not in MICRODATA_FITS:
                raise SpecError(
                    f"[postprocess].microdata_fit must be one of {', '.join(MICRODATA_FITS)}"
                )
        elif key in pp_raw and not isinstance(pp_raw[key], bool):
            raise SpecError(f"[postprocess].{key} must be true or false")
    postprocess = PostprocessSpec(**pp_raw)
    _check_postprocess(postprocess, data_cfg, queries)
    out_raw = raw.get("output", {})
    _check_keys(out_raw, _OUTPUT_KEYS, "[output]")
    confidence = _number(out_raw.get("confidence", OutputSpec.confidence), "[output].confidence")
    if not confidence < 1:
        raise SpecError("[output].confidence must lie in (0, 1)")
    engine, spark = _engine_and_spark(raw)
    csv = out_raw.get("csv", OutputSpec.csv)
    if not isinstance(csv, bool):
        raise SpecError("[output].csv must be true or false")
    max_cells = out_raw.get("max_cells", OutputSpec.max_cells)
    if isinstance(max_cells, bool) or not isinstance(max_cells, int) or max_cells < 1:
        raise SpecError("[output].max_cells must be a positive integer")
    plan = Plan(
        name=name,
        data=data_cfg,
        privacy=privacy,
        queries=queries,
        pnc=PncSpec(zeta, bounds_from),
        postprocess=postprocess,
        output=OutputSpec(confidence, csv, max_cells, *_agency_keys(out_raw, base_dir)),
        engine=engine,
        spark=spark,
        source=source,
        raw=raw,
        budget_plan=parse_plan_section(raw["plan"], kind, conf) if "plan" in raw else None,
    )
    from eree.release.agency import check_agency_plan

    check_agency_plan(plan)
    return plan


def _check_postprocess(
    pp: PostprocessSpec,
    data: JobTablesConfig | EstablishmentDataConfig,
    queries: tuple[QuerySpec, ...],
) -> None:
    """Refuse post-processing options that do not apply, before any data is read."""
    if pp.microdata_fit != "eq1" and not pp.microdata:
        raise SpecError(
            "[postprocess] microdata_fit says how the GEDP microdata is fitted: it needs "
            "microdata = true"
        )
    if not isinstance(data, JobTablesConfig):
        if pp.integer:
            raise SpecError(
                "[postprocess] integer applies to ER-EE count releases (establishment sums "
                "are not counts)"
            )
        if pp.consistent and not pp.microdata:
            raise SpecError(
                "[postprocess] consistent = true on establishment data publishes every table "
                "as a tabulation of the WLS microdata: it needs microdata = true"
            )
        return
    if pp.consistent:
        from eree.postprocess.hierarchy import HierarchyError, check_distinct

        try:  # any set of distinct marginals (a tree or a lattice) is accepted
            check_distinct({q.name: tuple(q.by) for q in queries if not isinstance(q.by, str)})
        except HierarchyError as e:
            raise SpecError(str(e)) from None


def _read_spec(path: str | Path) -> tuple[dict[str, Any], Path]:
    """The parsed TOML of a spec file and its resolved path."""
    p = Path(path)
    if p.is_dir():
        raise SpecError(f"spec {p} is a directory, not a TOML file")
    if p.exists() and not p.is_file():  # a FIFO or device would block or never end
        raise SpecError(f"spec {p} is not a regular file")
    try:
        if p.stat().st_size > MAX_SPEC_BYTES:
            raise SpecError(f"spec {p} is larger than {MAX_SPEC_BYTES // 1024} KiB")
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"spec file not found: {p}") from None
    except UnicodeDecodeError:
        raise SpecError(f"spec {p} is not UTF-8 text (TOML files are UTF-8)") from None
    except OSError as e:
        raise SpecError(f"spec {p} cannot be read ({e.strerror or type(e).__name__})") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{p}: not valid TOML: {e}") from None
    except RecursionError:
        raise SpecError(f"{p}: not valid TOML for a spec: nested too deeply") from None
    return raw, p.resolve()


def load_spec(path: str | Path) -> Plan:
    """Read and validate a TOML spec file (a privacy release's)."""
    raw, p = _read_spec(path)
    return parse_spec(raw, p.parent, source=p)


def read_spec(path: str | Path) -> tuple[dict[str, Any], Path]:
    """The parsed TOML of a spec file and its resolved path (checked as :func:`load_spec`)."""
    return _read_spec(path)


# the parts of the parser a coarsening spec shares (eree.release.spec_coarsening)
check_keys = _check_keys
dataset_name = _dataset_name
engine_and_spark = _engine_and_spark
agency_keys = _agency_keys
parse_estab_data = _parse_estab_data
parse_job_tables = _parse_job_tables
number = _number
str_list = _str_list
domain_values = _domain
unknown_attribute = _unknown_attribute
