"""``eree validate``: the spec, its paths and its data, checked as a release would; nothing spent.

The data are read through the same family loader and engine as
:func:`eree.release.protect.protect` (every check of docs/design.md#validation, the same one-line
errors naming file, row and column), and exactly the columns it reads: every configured
column, as every release reads them (with or without a ledger), so there is one verdict
on the data: ``eree validate``, ``eree protect`` and ``eree protect --ledger`` accept
and refuse the same inputs, with the same message. Nothing is written, no ledger is opened and no
noise is drawn. What is returned holds public information only: which checks passed,
the plan's cost, semantics and accuracy preview (:mod:`eree.release.preview`), where
the number of establishments (public: the workplace frame) sharpens the warnings;
with one exception for the operator's own review: when workers may hold several jobs,
how many held more than k and how many jobs the rule dropped, by count only (no id), a
line marked confidential (docs/privacy.md#several-jobs-per-worker). No release output
carries these counts.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

from eree.data.config import JobSelection
from eree.data.location import is_uri, local_path
from eree.errors import SpecError
from eree.release.spec import Plan, check_spark_settings, load_spec

__all__ = ["check_paths", "validate_plan"]

#: the [data] keys that name input files
_PATH_KEYS = ("workplace", "worker", "job", "jobs", "path")


def check_paths(plan: Plan) -> list[str]:
    """Every local input file exists and is readable; returns the keys checked.

    A URI is left to Spark with the Spark engine; with the Polars engine a ``file://``
    URI is checked as its local path and any other scheme refused.

    Raises:
        SpecError: naming the ``[data]`` key and the path.
    """
    checked = []
    for key in _PATH_KEYS:
        p = getattr(plan.data, key, None)
        if p is None:
            continue
        if is_uri(p) and plan.engine.kind != "polars":
            continue  # read by Spark, where it is checked (docs/spark-cluster.md)
        path = local_path(p, f"[data].{key}")  # the Polars engine reads file:// URIs only
        if not path.exists():
            raise SpecError(f"[data].{key}: file not found: {path}")
        if path.is_dir():
            raise SpecError(f"[data].{key}: {path} is a directory, not a data file")
        if not os.access(path, os.R_OK):
            raise SpecError(f"[data].{key}: {path} is not readable")
        checked.append(key)
    return checked


def selection_words(sel: JobSelection) -> str:
    """The job-selection counts, by count only, marked confidential (for the operator)."""
    words = (
        f"jobs ({sel.job_type}, at most k = {sel.k} per worker) [CONFIDENTIAL counts, for "
        f"your review only: not published]: {sel.workers_over} worker"
        f"{'s' if sel.workers_over != 1 else ''} held more than {sel.k} job"
        f"{'s' if sel.k != 1 else ''}; {sel.jobs_dropped} job"
        f"{'s' if sel.jobs_dropped != 1 else ''} beyond k dropped by the rule"
    )
    if sel.job_type == "JT02":
        words += f"; {sel.jobs_not_of_type} non-private jobs not counted"
    elif sel.job_type == "JT03":
        words += f"; {sel.jobs_not_of_type} primary jobs not counted (not private)"
    return words


def validate_plan(
    spec: str | Path, *, read_data: bool = True, all_columns: bool = True
) -> dict[str, Any]:
    """Check ``spec`` as a release would, without spending or writing anything.

    Args:
        spec: the TOML spec file.
        read_data: also load and validate the data (False: the spec and its paths only).
        all_columns: kept for callers of earlier versions: every configured column is
            checked, as every release reads them (a value of False changes nothing).

    Returns:
        ``{"spec", "checks", "data_checked", "explain"}``: the checks passed (in words),
        whether the data were read, and :func:`eree.release.protect.explain` of the plan.

    Raises:
        EreeError: the first problem found (spec, parameters, paths or data), as the
            one-line message a release would give.
    """
    from eree.release.build import build
    from eree.release.cells import check_plan_cells
    from eree.release.family import family_of
    from eree.release.protect import explain

    plan = load_spec(spec)
    check_spark_settings(plan)
    checks = ["spec: keys, types and values"]
    check_plan_cells(plan)
    built = build(plan)
    budget = plan.privacy.budget
    if budget:  # the release alone must fit the spec's own budget (as protect checks)
        from eree.privacy.ledger import check_spec_budget

        p = plan.privacy
        check_spec_budget(plan.name, p.definition, p.alpha, built.report().total, budget)
    family = family_of(plan)
    family.check_before_load(plan)
    checks.append("privacy parameters and mechanisms of every query")
    keys = check_paths(plan)
    if keys:
        listed = ", ".join(f"[data].{k}" for k in keys)
        checks.append(f"input files exist and are readable ({listed})")
    n_establishments = None
    if read_data:
        from eree.engine.select import make_engine

        s = plan.spark
        engine = make_engine(
            plan.engine.kind,
            cores=s.cores,
            driver_memory=s.driver_memory,
            master=s.master,
            conf=s.conf,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            data = family.load(plan, engine, narrow=False)
        n_establishments = family.n_establishments(data, engine)
        read = "every configured column, as `eree protect` reads them (with or without --ledger)"
        checks.append(f"data: {read} (ids, links, domains, values; the checks of a release)")
        selection = getattr(data, "selection", None)
        if selection is not None:
            checks.append(selection_words(selection))
    return {
        "spec": str(spec),
        "checks": checks,
        "data_checked": read_data,
        "explain": explain(plan, n_establishments),
    }
