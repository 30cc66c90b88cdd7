"""Where the data are and which columns play which role — the ``[data]`` part of a spec.

These are plain frozen value objects; ``release/spec.py`` builds them from TOML and the
loaders in this package consume them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eree.data.location import DataPath
from eree.data.schema import WORKER_DOMAINS, WORKER_ID, WORKPLACE_ATTRIBUTES, WORKPLACE_ID


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

    def input_files(self) -> list[DataPath]:
        """The input files the spec names, in order."""
        return list(self.inputs().values())

    def inputs(self) -> dict[str, DataPath]:
        """The input files by their spec key (``[data].workplace``, …), in order."""
        named = {"workplace": self.workplace, "worker": self.worker, "job": self.job,
                 "jobs": self.jobs}  # fmt: skip
        return {f"[data].{k}": p for k, p in named.items() if p is not None}


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
