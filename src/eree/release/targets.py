"""Accuracy targets and the budget to split: the spec's words for what a table must achieve.

A target says, in a statistician's terms, how accurate one published statistic must be at
a representative cell (docs/planning.md):

* ``relative_error = 0.10, at = 50, confidence = 0.9``: a cell of 50 (jobs, or the
  attribute's unit) is published within 10% of its true value at least 90% of the time —
  and, since every registered mechanism's relative error falls as cells grow, so is every
  larger cell;
* ``cv = 0.05, at = 100``: the error's standard deviation is at most 5% of 100;
* ``ci_half_width = 20, at = 100``: the published confidence interval of a cell of 100
  has an expected half-width of at most 20 (only mechanisms that publish an interval).

For the smooth-sensitivity mechanisms the noise grows with x_v, the cell's jobs in its
largest establishment: ``largest_share`` (default 1, a cell held by one establishment: the
most noise) states the share the promise is made for. GEDP targets are per confidential
attribute: ``target = { wage = { relative_error = 0.1, at = 5000 } }``.

``[plan]`` gives a total (``epsilon`` for the ER-EE family, ``mu`` for GEDP) that ``eree
plan`` splits over the queries in proportion to need (per-query ``weight``), with the
targets as floors; ``at`` is the representative size of queries without a target.
Nothing here reads data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from eree.errors import SpecError
from eree.mechanisms.base import ExpectedError
from eree.postprocess.variance_model import largest_share

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_JOBS_PER_ESTABLISHMENT",
    "DEFAULT_PLAN_AT",
    "TARGET_KINDS",
    "BudgetPlan",
    "Target",
    "parse_at",
    "parse_plan_section",
    "parse_targets",
    "parse_weight",
    "relative_error",
    "representative_at",
    "representative_cell",
    "split_share",
    "target_met",
]

#: the kinds of target, each the name of its key
TARGET_KINDS = ("relative_error", "cv", "ci_half_width")
#: the confidence of a relative_error target when none is given
DEFAULT_CONFIDENCE = 0.9
#: the representative cell size of an ER-EE query without a target (jobs)
DEFAULT_PLAN_AT = 100.0
#: jobs per establishment of the split's share model: Pennsylvania's LODES WAC 2015 has
#: 5,649,077 jobs in 351,007 workplaces (16.1); the US QCEW about 15 (public totals)
DEFAULT_JOBS_PER_ESTABLISHMENT = 16.0
_TARGET_KEYS = (*TARGET_KINDS, "at", "confidence", "largest_share")
#: the largest representative size and error a target may state: every integer up to it
#: is a float (2^53 ≈ 9.0e15), so the error laws count grid steps exactly
LARGEST_TARGET = 1e15


@dataclass(frozen=True)
class Target:
    """One statistic's accuracy target.

    Attributes:
        kind: ``relative_error``, ``cv`` or ``ci_half_width``.
        value: the bound (a fraction for relative_error and cv; the statistic's unit for
            ci_half_width).
        at: the representative cell size (jobs, or the attribute's unit).
        confidence: relative_error: the least probability of being within the bound.
        largest_share: x_v / at for the smooth-sensitivity mechanisms (0 < share ≤ 1).
    """

    kind: str
    value: float
    at: float
    confidence: float = DEFAULT_CONFIDENCE
    largest_share: float = 1.0

    def words(self, unit: str = "") -> str:
        """The target in words, e.g. 'within 10% at 50 jobs, 90% of the time'."""
        u = f" {unit}" if unit else ""
        at = f"{self.at:,.10g}{u}"
        if self.kind == "relative_error":
            return f"within {100 * self.value:.4g}% at {at}, {self.confidence:.0%} of the time"
        if self.kind == "cv":
            return f"coefficient of variation ≤ {self.value:.4g} at {at}"
        return f"confidence-interval half-width ≤ {self.value:,.6g}{u} at {at}"

    def to_dict(self) -> dict[str, float]:
        """The target as the spec writes it."""
        d = {self.kind: self.value, "at": self.at}
        if self.kind == "relative_error":
            d["confidence"] = self.confidence
        if self.largest_share != 1.0:
            d["largest_share"] = self.largest_share
        return d


@dataclass(frozen=True)
class BudgetPlan:
    """``[plan]``: a total to split over the queries, and the default representative size.

    Attributes:
        epsilon: the ER-EE family's total ε (sequential composition), or None.
        mu: GEDP's total μ (√Σμ²), or None.
        at: the representative size of a query without a target: one number (ER-EE, jobs)
            or a table per confidential attribute (GEDP, the attribute's unit).
        largest_share: x_v / at of a count query without a target (smooth-sensitivity
            mechanisms); None: the public variance model's share of a cell of ``at`` jobs
            held by at / ``jobs_per_establishment`` establishments (:func:`split_share`).
        jobs_per_establishment: the mean establishment size that model assumes.
    """

    epsilon: float | None = None
    mu: float | None = None
    at: float | dict[str, float] | None = None
    largest_share: float | None = None
    jobs_per_establishment: float = DEFAULT_JOBS_PER_ESTABLISHMENT


def _positive(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise SpecError(f"{where} must be a number > 0 (got {value!r})")
    if value == float("inf"):
        raise SpecError(f"{where} must be finite")
    return float(value)


def _fraction(value: Any, where: str, *, closed: bool) -> float:
    v = _positive(value, where)
    if not (v <= 1 if closed else v < 1):
        raise SpecError(f"{where} must lie in (0, 1{']' if closed else ')'} (got {value!r})")
    return v


def _one_target(d: Any, where: str) -> Target:
    if not isinstance(d, dict):
        raise SpecError(
            f"{where} must be a table, e.g. {{ relative_error = 0.1, at = 50, confidence = 0.9 }}"
        )
    unknown = [k for k in d if k not in _TARGET_KEYS]
    if unknown:
        raise SpecError(
            f"{where}: unknown key {unknown[0]!r}; a target has one of "
            f"{', '.join(TARGET_KINDS)}, then at, confidence, largest_share"
        )
    kinds = [k for k in TARGET_KINDS if k in d]
    if len(kinds) != 1:
        raise SpecError(
            f"{where} must give exactly one of {', '.join(TARGET_KINDS)} (got "
            f"{', '.join(kinds) or 'none'})"
        )
    kind = kinds[0]
    if "at" not in d:
        raise SpecError(f"{where}: at (the representative cell size) is required")
    value = _positive(d[kind], f"{where}.{kind}")
    at = _positive(d["at"], f"{where}.at")
    if "confidence" in d and kind != "relative_error":
        raise SpecError(f"{where}: confidence applies to a relative_error target only")
    conf = _fraction(d.get("confidence", DEFAULT_CONFIDENCE), f"{where}.confidence", closed=False)
    share = _fraction(d.get("largest_share", 1.0), f"{where}.largest_share", closed=True)
    if at > LARGEST_TARGET:
        raise SpecError(f"{where}.at must be at most {LARGEST_TARGET:.0e} (got {d['at']!r})")
    bound = value if kind == "ci_half_width" else value * at  # the error, in the unit of at
    if not bound <= LARGEST_TARGET:
        what = kind if kind == "ci_half_width" else f"{kind} × at"
        raise SpecError(
            f"{where}.{kind}: {what} (the error allowed, in the unit of at) must be at "
            f"most {LARGEST_TARGET:.0e} (got {d[kind]!r})"
        )
    return Target(kind, value, at, conf, share)


def parse_targets(
    value: Any, where: str, confidential: tuple[str, ...] | None
) -> dict[str, Target]:
    """A query's ``target``: ``{"jobs": Target}`` for ER-EE, one per attribute for GEDP.

    Args:
        value: the spec's ``target`` value.
        where: the query, for messages.
        confidential: the GEDP data's confidential attributes; None for ER-EE data.
    """
    if confidential is None:
        return {"jobs": _one_target(value, f"{where}: target")}
    return _per_attribute(
        value, f"{where}: target", confidential, _one_target,
        "is per confidential attribute, e.g. "
        "target = { wage = { relative_error = 0.1, at = 5000 } }",
    )  # fmt: skip


def _per_attribute(
    value: Any, where: str, confidential: tuple[str, ...], parse: Any, example: str
) -> dict[str, Any]:
    """A GEDP table ``attribute = …`` whose keys are confidential columns, each parsed."""
    if not isinstance(value, dict) or not value:
        raise SpecError(f"{where} {example}")
    out = {}
    for attr, v in value.items():
        if attr not in confidential:
            raise SpecError(
                f"{where} names {attr!r}, which is not a confidential column "
                f"([data].confidential = {list(confidential)})"
            )
        out[str(attr)] = parse(v, f"{where}.{attr}")
    return out


def parse_weight(value: Any, where: str) -> float:
    """A query's ``weight`` in the split of ``[plan]``'s total (a number ≥ 0)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise SpecError(f"{where}: weight must be a number >= 0 (got {value!r})")
    if value == float("inf"):
        raise SpecError(f"{where}: weight must be finite")
    return float(value)


def parse_at(
    value: Any, where: str, confidential: tuple[str, ...] | None
) -> float | dict[str, float]:
    """A representative cell size: jobs (ER-EE), or a table per confidential attribute (GEDP)."""
    if confidential is None:
        return _positive(value, where)
    return _per_attribute(value, where, confidential, _positive,
                          "is per confidential attribute for GEDP, e.g. "
                          "at = { wage = 5000, m1emp = 50 }")  # fmt: skip


def parse_plan_section(raw: Any, family: str, confidential: tuple[str, ...] | None) -> BudgetPlan:
    """``[plan]``: ``epsilon`` (ER-EE family) or ``mu`` (GEDP), and ``at``.

    Args:
        raw: the section's table.
        family: ``eree`` or ``establishments`` (the data kind).
        confidential: the GEDP data's confidential attributes (None for ER-EE data).
    """
    if not isinstance(raw, dict):
        raise SpecError("[plan] must be a table, e.g. [plan] epsilon = 12")
    total_key = "mu" if family == "establishments" else "epsilon"
    other = "epsilon" if total_key == "mu" else "mu"
    for k in raw:
        if k not in ("epsilon", "mu", "at", "largest_share", "jobs_per_establishment"):
            raise SpecError(
                f"[plan]: unknown key {k!r}; [plan] has {total_key}, at, largest_share and "
                "jobs_per_establishment"
            )
    share = None
    for k in ("largest_share", "jobs_per_establishment"):
        if k in raw and confidential is not None:
            raise SpecError(f"[plan].{k} applies to ER-EE count queries only")
    if "largest_share" in raw:
        share = _fraction(raw["largest_share"], "[plan].largest_share", closed=True)
    jpe = DEFAULT_JOBS_PER_ESTABLISHMENT
    if "jobs_per_establishment" in raw:
        jpe = _positive(raw["jobs_per_establishment"], "[plan].jobs_per_establishment")
    if other in raw:
        fam = "GEDP" if family == "establishments" else "the ER-EE family"
        raise SpecError(f"[plan].{other} does not apply to {fam}: give [plan].{total_key}")
    total = _positive(raw[total_key], f"[plan].{total_key}") if total_key in raw else None
    at = parse_at(raw["at"], "[plan].at", confidential) if "at" in raw else None
    if total_key == "mu":
        return BudgetPlan(mu=total, at=at)
    return BudgetPlan(epsilon=total, at=at, largest_share=share, jobs_per_establishment=jpe)


def target_met(target: Target, e: ExpectedError | None) -> tuple[bool, float | None]:
    """Whether an error meets a target, and what the target measures (None: not measurable)."""
    if e is None:
        return False, None
    if target.kind == "relative_error":
        if e.within is None:
            return False, None
        p = e.within(target.value * target.at)
        return p >= target.confidence, p
    if target.kind == "cv":
        if e.std is None or not math.isfinite(e.std):
            return False, None if e.std is None else math.inf
        cv = e.std / target.at
        return cv <= target.value, cv
    if e.ci_width is None or not math.isfinite(e.ci_width):
        return False, None if e.ci_width is None else math.inf
    half = e.ci_width / 2.0
    return half <= target.value, half


def representative_at(query: Any, stat: str, plan: BudgetPlan | None, gedp: bool) -> float:
    """The cell size a statistic is planned at.

    Its target's, else the query's ``at``, else ``[plan].at``, else 100 jobs (ER-EE) or
    NaN (GEDP: no default unit).
    """
    t = (query.target or {}).get(stat)
    if t is not None:
        return float(t.at)
    for at in (query.at, None if plan is None else plan.at):
        if isinstance(at, dict) and stat in at:
            return float(at[stat])
        if isinstance(at, float):
            return at
    return math.nan if gedp else DEFAULT_PLAN_AT


def split_share(at: float, plan: BudgetPlan | None) -> float:
    """x_v / at of a count query without a target, when a total is split or its curve drawn.

    ``[plan].largest_share`` when given; otherwise the public variance model's share
    min(c·k^(−β), 1) (:func:`eree.postprocess.variance_model.largest_share`, fitted on
    synthetic LODES-like data) of a cell of ``at`` jobs held by k = at /
    ``jobs_per_establishment`` establishments: 1 up to about 16 establishments, 0.13 at
    500. A target's promise uses the target's own share (default 1) instead.
    """
    if plan is not None and plan.largest_share is not None:
        return plan.largest_share
    jpe = plan.jobs_per_establishment if plan is not None else DEFAULT_JOBS_PER_ESTABLISHMENT
    return float(largest_share(np.array([at / jpe]))[0])


def representative_cell(
    query: Any, stat: str, plan: BudgetPlan | None, gedp: bool
) -> tuple[float, float]:
    """(at, largest share) of the cell a statistic is planned and previewed at.

    The size from :func:`representative_at`; the share the target's (a promise, default
    1) or, without a target, :func:`split_share`.
    """
    at = representative_at(query, stat, plan, gedp)
    t = (query.target or {}).get(stat)
    return at, t.largest_share if t is not None else split_share(at, plan)


def relative_error(e: ExpectedError | None, at: float) -> float:
    """E|error| / at — the std where E|error| has no closed form; NaN where neither is known."""
    if e is None:
        return math.nan
    v = e.mean_abs if e.mean_abs is not None else e.std
    return math.nan if v is None else v / at
