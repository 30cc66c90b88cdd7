"""Where the data are and which columns play which role — the ``[data]`` part of a spec.

These are plain frozen value objects (and :func:`check_job_selection`, the rules their
job-selection keys obey); ``release/spec.py`` builds them from TOML and the
loaders in this package consume them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eree.data.location import DataPath
from eree.data.schema import (
    JOB_TYPES,
    OWNERSHIP,
    PRIMARY_JOB_TYPES,
    PRIVATE_JOB_TYPES,
    PRIVATE_OWNERSHIP,
    WORKER_DOMAINS,
    WORKER_ID,
    WORKPLACE_ATTRIBUTES,
    WORKPLACE_ID,
)
from eree.errors import SpecError


@dataclass(frozen=True)
class JobTablesConfig:
    """ER-EE input: three tables (workplace, worker, job) or one joined ``jobs`` table.

    Attributes:
        workplace, worker, job: paths of the three tables (CSV, CSV.gz or Parquet): a
            local :class:`~pathlib.Path` or a URI (``scheme://…`` text,
            :mod:`eree.data.location`).
        jobs: path of one already-joined table (one row per job) instead of the three.
        workplace_id, worker_id: id column names.
        workplace_attributes: public workplace attribute columns to load.
        worker_attributes: private worker attribute columns to load.
        domains: declared domain of each categorical attribute; every worker attribute
            must have one (defaults from :data:`eree.data.schema.WORKER_DOMAINS`);
            workplace attributes may have one.
        max_jobs_per_worker: k, the public limit on the jobs one worker contributes
            (docs/privacy.md#several-jobs-per-worker): a worker's jobs beyond k are
            dropped by :data:`eree.data.schema.JOB_ORDER`'s rule. ``None``: every worker
            must hold exactly one job (refused otherwise).
        job_type: the LODES job type released (:data:`eree.data.schema.JOB_TYPES`):
            ``JT00`` all jobs, ``JT01`` primary jobs (each worker's highest-earning job),
            ``JT02`` private jobs, ``JT03`` private primary jobs.
        job_earnings: column of each job's earnings (job table, or the joined table),
            a non-negative number; what the primary-job rule (JT01, JT03) ranks by.
        order_key: the secret key of the keyed order in which a worker's jobs are kept
            (:mod:`eree.data.job_order`): set by the release from its noise source
            (never read from a spec, never written, not shown by ``repr``); ``None``: a
            fresh secure key each time the data are loaded.
    """

    workplace: DataPath | None = None
    worker: DataPath | None = None
    job: DataPath | None = None
    jobs: DataPath | None = None
    workplace_id: str = WORKPLACE_ID
    worker_id: str = WORKER_ID
    workplace_attributes: tuple[str, ...] = WORKPLACE_ATTRIBUTES
    worker_attributes: tuple[str, ...] = tuple(WORKER_DOMAINS)
    domains: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(WORKER_DOMAINS))
    max_jobs_per_worker: int | None = None
    job_type: str = "JT00"
    job_earnings: str | None = None
    order_key: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def selects_jobs(self) -> bool:
        """Whether workers may hold several jobs and a rule selects the ones released."""
        return self.max_jobs_per_worker is not None or self.job_type != "JT00"

    @property
    def primary_only(self) -> bool:
        """Whether each worker's one primary job is released (JT01, JT03)."""
        return self.job_type in PRIMARY_JOB_TYPES

    @property
    def private_only(self) -> bool:
        """Whether only private jobs are released (JT02, JT03)."""
        return self.job_type in PRIVATE_JOB_TYPES

    @property
    def jobs_per_worker(self) -> int:
        """k: the most jobs one worker contributes to the released tables.

        1 for primary jobs (one per worker by the rule) and without a limit (one job per
        worker, checked); else ``max_jobs_per_worker``.
        """
        if self.primary_only or self.max_jobs_per_worker is None:
            return 1
        return self.max_jobs_per_worker

    def input_files(self) -> list[DataPath]:
        """The input files the spec names, in order."""
        return list(self.inputs().values())

    def inputs(self) -> dict[str, DataPath]:
        """The input files by their spec key (``[data].workplace``, …), in order."""
        named = {"workplace": self.workplace, "worker": self.worker, "job": self.job,
                 "jobs": self.jobs}  # fmt: skip
        return {f"[data].{k}": p for k, p in named.items() if p is not None}


@dataclass(frozen=True)
class JobSelection:
    """What the job-selection rule did (docs/privacy.md#several-jobs-per-worker).

    Confidential counts: :func:`eree.release.validate.validate_plan` shows them to the
    operator; no release output carries them.

    Attributes:
        k: the most jobs one worker contributes.
        job_type: the LODES job type released.
        workers_over: workers who held more than k jobs (JT00, JT02: of that type;
            JT01, JT03: more than one job of any type).
        jobs_dropped: their jobs beyond k, dropped by the rule (for JT03: the jobs that
            are not a worker's primary job).
        jobs_not_of_type: jobs outside the job type: non-private jobs for JT02; for JT03
            the primary jobs that are not private.
    """

    k: int
    job_type: str
    workers_over: int
    jobs_dropped: int
    jobs_not_of_type: int


def check_job_selection(config: JobTablesConfig) -> None:
    """The ``[data]`` keys of the job selection agree (before any data are read)."""
    k = config.max_jobs_per_worker
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise SpecError(f"[data].max_jobs_per_worker must be a whole number ≥ 1 (got {k!r})")
    if config.job_type not in JOB_TYPES:
        raise SpecError(
            f"[data].job_type must be one of {', '.join(JOB_TYPES)} (got {config.job_type!r})"
        )
    if config.primary_only:
        if config.job_earnings is None:
            raise SpecError(
                f"[data].job_type = {config.job_type!r} (primary jobs: each worker's "
                "highest-earning job) needs [data].job_earnings, the column of each job's "
                "earnings"
            )
        if k is not None and k != 1:
            raise SpecError(
                f"[data].max_jobs_per_worker = {k} with job_type = {config.job_type!r}: a "
                "worker has one primary job; leave max_jobs_per_worker out"
            )
    elif config.job_earnings is not None:
        raise SpecError("[data].job_earnings is read only for primary jobs (job_type JT01 or JT03)")
    if config.private_only and OWNERSHIP not in config.workplace_attributes:
        raise SpecError(
            f"[data].job_type = {config.job_type!r} (private jobs) needs the workplace "
            f"attribute {OWNERSHIP!r} (private: {PRIVATE_OWNERSHIP!r}) in "
            "[data].workplace_attributes"
        )
    if config.selects_jobs and config.jobs is not None:
        raise SpecError(
            "[data].max_jobs_per_worker and job_type need the three tables (workplace, "
            "worker, job): a worker's jobs are found by its id in the job table"
        )
    if config.job_earnings is not None and config.job_earnings in (
        config.workplace_id, config.worker_id, *config.workplace_attributes,
        *config.worker_attributes,
    ):  # fmt: skip
        raise SpecError(
            f"[data].job_earnings {config.job_earnings!r} is also an id or attribute column"
        )


@dataclass(frozen=True)
class EstablishmentDataConfig:
    """Establishment input (QCEW-like): one row per establishment.

    See docs/design.md#establishment-data.

    Attributes:
        path: CSV, CSV.gz or Parquet file: a local path or a URI
            (:mod:`eree.data.location`).
        id: id column (``primary_key`` in QCEW files).
        public: public attribute columns (NAICS prefixes are derived from ``naics`` when
            requested but absent).
        confidential: non-negative numeric confidential columns.
        domains: optional declared domains of public attributes.
    """

    path: DataPath
    id: str = "primary_key"
    public: tuple[str, ...] = (
        "cnty",
        "own",
        "naics",
        "naics3",
        "naics4",
        "naics5",
        "naics_sector",
        "super_sector",
    )
    confidential: tuple[str, ...] = ("m1emp", "m2emp", "m3emp", "wage")
    domains: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def input_files(self) -> list[DataPath]:
        """The establishment file."""
        return [self.path]

    def inputs(self) -> dict[str, DataPath]:
        """The establishment file by its spec key, ``[data].path``."""
        return {"[data].path": self.path}
