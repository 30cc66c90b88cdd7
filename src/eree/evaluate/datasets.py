"""Datasets for experiments and audits.

LODES-like tables from disk, from a WAC file, or from the parametric generator.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eree.data.config import JobTablesConfig
from eree.data.job_tables import JobTables, load_job_tables
from eree.data.schema import WORKER_DOMAINS, WORKPLACE_ID
from eree.errors import SpecError
from eree.synth.lodes import SynthLodes, synth_from_wac, synth_parametric

#: jobs of the default parametric dataset (small: for tests and quick runs)
DEFAULT_PARAMETRIC_JOBS = 50_000


@dataclass(frozen=True)
class Dataset:
    """Validated ER-EE data plus a description of where it came from (for run records)."""

    data: JobTables
    description: dict[str, Any] = field(default_factory=dict)


def from_synth(s: SynthLodes, description: dict[str, Any]) -> Dataset:
    """Wrap generator output (already consistent) without a round trip through disk."""
    jobs = s.job.join(s.worker, on="worker_id", how="left", maintain_order="left").select(
        WORKPLACE_ID, *WORKER_DOMAINS
    )
    data = JobTables(workplaces=s.workplace, jobs=jobs, domains=dict(WORKER_DOMAINS))
    desc = dict(description)
    desc.update(jobs=data.n_jobs, establishments=data.n_workplaces)
    return Dataset(data, desc)


def _find(directory: Path, stem: str) -> Path:
    for ext in ("parquet", "csv", "csv.gz"):
        p = directory / f"{stem}.{ext}"
        if p.exists():
            return p
    raise SpecError(
        f"{directory} has no {stem}.parquet or {stem}.csv (write it with eree synth lodes)"
    )


def load_dataset(
    data_dir: Path | None = None,
    wac: Path | None = None,
    *,
    seed: int = 1,
    scale: float = 1.0,
    jobs: int = DEFAULT_PARAMETRIC_JOBS,
) -> Dataset:
    """The dataset of an experiment.

    Args:
        data_dir: a directory of ``workplace``, ``worker`` and ``job`` tables as written by
            ``eree synth lodes`` (validated on load).
        wac: a LODES WAC file to synthesise from (:func:`~eree.synth.lodes.synth_from_wac`
            with ``seed`` and ``scale``).
        seed: seed of the generator (``wac`` or parametric).
        scale: scale of the WAC generator.
        jobs: size of the parametric generator (used when neither ``data_dir`` nor
            ``wac`` is given).
    """
    if data_dir is not None and wac is not None:
        raise SpecError("give either a data directory or a WAC file, not both")
    if data_dir is not None:
        d = Path(data_dir)
        cfg = JobTablesConfig(
            workplace=_find(d, "workplace"), worker=_find(d, "worker"), job=_find(d, "job")
        )
        data = load_job_tables(cfg)
        return Dataset(
            data,
            {
                "source": "tables",
                "path": str(d),
                "jobs": data.n_jobs,
                "establishments": data.n_workplaces,
            },
        )
    if wac is not None:
        s = synth_from_wac(wac, seed=seed, scale=scale)
        return from_synth(
            s, {"source": "synth_from_wac", "wac": Path(wac).name, "seed": seed, "scale": scale}
        )
    s = synth_parametric(seed=seed, n_jobs=jobs)
    return from_synth(s, {"source": "synth_parametric", "seed": seed, "n_jobs": jobs})
