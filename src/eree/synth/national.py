"""National-size synthetic data, written streaming and partitioned (docs/design.md#synthetic-data).

Two generators, each holding one *chunk* in memory at a time and writing it as one
Parquet file before making the next, so that memory is bounded by the chunk size, not
by the national size:

* :func:`national_lodes` — LODES-like ER-EE tables for the 50 states and DC. Each state
  is the LODES-like generator (:func:`eree.synth.lodes.generate_establishments`, the core of
  :func:`~eree.synth.lodes.synth_from_wac`) run on a real WAC block table (by default
  Pennsylvania's) with its state code replaced, sized to the state's share of ``jobs``
  (:data:`STATE_JOBS_WEIGHT`), in chunks of at most ``max_chunk_jobs`` jobs (a large
  state is several chunks of the same block table, each with its own seed and
  establishments). A chunk smaller than the template is a random share of its blocks
  at their real size (each block kept with probability = the share), so that blocks
  keep their real job counts and establishment sizes; a larger one scales every block
  (the generator's ``scale``). Peak memory ≈ that of
  ``synth_from_wac`` on ``max_chunk_jobs`` jobs (≈ 1.3 GB for 6M).
* :func:`national_qcew` — QCEW-like establishments: the real county × ownership ×
  NAICS-6 cells of one state's QCEW by-area files (by default New York's, a large and
  varied state), imputed (:func:`~eree.synth.qcew_impute.impute_suppressed_cells`), are the
  template of every state: each cell's establishment count is scaled to the state's
  share of ``establishments`` (stochastic rounding, unbiased), its employment and wages
  in proportion (same per-establishment averages), and the cells are split into
  establishments by Algorithm 7 (:func:`~eree.synth.qcew_split.establishments_from_cells`).
  One state per chunk; peak memory ≈ that of the largest state.

Layout (directories of Parquet files, read by both engines as one table each; file
names sort in generation order, and ids increase in that order)::

    OUT/workplace/part-SS-CC.parquet   OUT/worker/part-SS-CC.parquet   OUT/job/...
    OUT/establishments/part-SS.parquet

``SS`` is the state FIPS code, ``CC`` the chunk. Ids are unique nationally:
``w``/``p`` + state + chunk + a running number for LODES-like data, a running
``primary_key`` for QCEW-like data.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import polars as pl

from eree.data.config import EstablishmentDataConfig, JobTablesConfig
from eree.data.qcew import CELL_VALUES

__all__ = [
    "STATE_JOBS_WEIGHT",
    "NationalSummary",
    "national_lodes",
    "national_qcew",
]

#: relative size of each state's employment (state FIPS → approximate jobs in millions,
#: rounded, mid-2010s). Used only as weights that split a national total over states.
STATE_JOBS_WEIGHT: dict[str, float] = {
    "01": 1.9, "02": 0.3, "04": 2.7, "05": 1.2, "06": 16.5, "08": 2.5, "09": 1.7,
    "10": 0.4, "11": 0.7, "12": 8.2, "13": 4.3, "15": 0.6, "16": 0.7, "17": 6.0,
    "18": 3.0, "19": 1.5, "20": 1.4, "21": 1.9, "22": 1.9, "23": 0.6, "24": 2.6,
    "25": 3.5, "26": 4.2, "27": 2.8, "28": 1.1, "29": 2.8, "30": 0.4, "31": 1.0,
    "32": 1.3, "33": 0.6, "34": 4.0, "35": 0.8, "36": 9.2, "37": 4.3, "38": 0.4,
    "39": 5.4, "40": 1.6, "41": 1.8, "42": 5.8, "44": 0.5, "45": 2.0, "46": 0.4,
    "47": 2.9, "48": 12.0, "49": 1.4, "50": 0.3, "51": 3.8, "53": 3.2, "54": 0.7,
    "55": 2.9, "56": 0.3,
}  # fmt: skip


@dataclass(frozen=True)
class NationalSummary:
    """What a national generator wrote (public facts about synthetic data only).

    Attributes:
        out_dir: the output directory.
        rows: rows written per table.
        chunks: number of chunks (files per table).
        seconds: wall time of the generation, including writing.
        bytes: size on disk of everything written.
    """

    out_dir: str
    rows: dict[str, int]
    chunks: int
    seconds: float
    bytes: int

    def to_json(self) -> str:
        """The summary as indented JSON."""
        return json.dumps(asdict(self), indent=2)


def _shares(total: int, states: list[str]) -> dict[str, int]:
    """``total`` split over ``states`` by :data:`STATE_JOBS_WEIGHT` (largest remainder)."""
    w = np.array([STATE_JOBS_WEIGHT[s] for s in states])
    x = total * w / w.sum()
    n = np.floor(x).astype(np.int64)
    n[np.argsort(-(x - n), kind="stable")[: total - int(n.sum())]] += 1
    return dict(zip(states, n.tolist(), strict=True))


def _write(df: pl.DataFrame, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    df.write_parquet(tmp)
    tmp.replace(path)


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _check_states(states: list[str] | None) -> list[str]:
    out = sorted(STATE_JOBS_WEIGHT) if states is None else sorted(set(states))
    unknown = [s for s in out if s not in STATE_JOBS_WEIGHT]
    if unknown or not out:
        raise ValueError(f"unknown state FIPS code(s): {unknown}")
    return out


def national_lodes(
    out_dir: str | Path,
    wac_path: str | Path,
    seed: int,
    *,
    jobs: int = 130_000_000,
    max_chunk_jobs: int = 6_000_000,
    states: list[str] | None = None,
) -> tuple[JobTablesConfig, NationalSummary]:
    """Write LODES-like workplace, worker and job tables for the nation (module doc).

    Args:
        out_dir: output directory (created; must not hold a previous dataset).
        wac_path: a LODES WAC file, the block-table template of every state.
        seed: master seed; chunk seeds derive from it, the state and the chunk.
        jobs: national number of jobs (the scale knob; each state's total is met up to
            the generator's stochastic rounding).
        max_chunk_jobs: largest number of jobs generated in memory at once.
        states: state FIPS codes to generate (default: all 51).

    Returns:
        A ``[data]`` configuration pointing at the three table directories, and a
        summary.
    """
    from eree.synth.lodes import generate_establishments, read_wac

    if jobs < 1 or max_chunk_jobs < 1:
        raise ValueError("jobs and max_chunk_jobs must be positive")
    todo = _check_states(states)
    out = Path(out_dir)
    dirs = {t: out / t for t in ("workplace", "worker", "job")}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=False)
    t0 = time.perf_counter()
    geocodes, sectors, margins = read_wac(wac_path)
    block_jobs = sectors.sum(axis=1)
    base = int(block_jobs.sum())
    rows = dict.fromkeys(dirs, 0)
    chunks = 0
    for state, n_state in _shares(jobs, todo).items():
        k = max(1, math.ceil(n_state / max_chunk_jobs))
        codes = pl.select((pl.lit(state) + geocodes.str.slice(2)).alias("block")).to_series()
        for c in range(k):
            rng = np.random.default_rng([seed, int(state), c])
            scale = n_state / k / base
            if scale < 1.0:
                # a random share of the blocks at full size, not every block scaled down
                # (which would cut cells into many one-job establishments)
                keep = rng.random(block_jobs.size) < scale
                keep_s = pl.Series(keep)
                s = generate_establishments(
                    codes.filter(keep_s), sectors[keep],
                    {a: m[keep] for a, m in margins.items()}, rng, 1.0, 35.0, 0.8,
                )  # fmt: skip
            else:
                s = generate_establishments(codes, sectors, margins, rng, scale, 35.0, 0.8)
            tag = f"{state}{c:02d}"
            wid = (pl.lit("w" + tag) + pl.col("workplace_id").str.slice(1)).alias("workplace_id")
            kid = (pl.lit("p" + tag) + pl.col("worker_id").str.slice(1)).alias("worker_id")
            wp = s.workplace.with_columns(wid)
            wk = s.worker.with_columns(kid)
            jb = s.job.with_columns(kid, wid)
            del s
            name = f"part-{state}-{c:02d}.parquet"
            for t, df in (("workplace", wp), ("worker", wk), ("job", jb)):
                _write(df, dirs[t] / name)
                rows[t] += df.height
            del wp, wk, jb
            chunks += 1
    summary = NationalSummary(str(out), rows, chunks, time.perf_counter() - t0, _du(out))
    (out / "summary.json").write_text(summary.to_json())
    cfg = JobTablesConfig(workplace=dirs["workplace"], worker=dirs["worker"], job=dirs["job"])
    return cfg, summary


def _scale_cells(cells: pl.DataFrame, f: float, rng: np.random.Generator) -> pl.DataFrame:
    """Cells with establishment counts scaled by ``f``.

    Establishment counts × ``f`` (unbiased stochastic rounding) and their employment and
    wages in proportion (same per-establishment averages).
    """
    est = cells.get_column("establishments").to_numpy().astype(np.float64)
    x = est * f
    new = np.floor(x).astype(np.int64)
    new += rng.random(new.size) < (x - new)
    ratio = np.divide(new, est, out=np.zeros_like(est), where=est > 0)
    return cells.with_columns(
        pl.Series("establishments", new),
        *[
            pl.Series(v, np.rint(cells.get_column(v).to_numpy() * ratio).astype(np.int64))
            for v in CELL_VALUES
        ],
    ).filter(pl.col("establishments") > 0)


def national_qcew(
    out_dir: str | Path,
    area_path: str | Path,
    seed: int,
    *,
    establishments: int = 10_000_000,
    states: list[str] | None = None,
    year: int = 2016,
    qtr: int = 1,
) -> tuple[EstablishmentDataConfig, NationalSummary]:
    """Write QCEW-like establishments for the nation from one state's by-area files.

    Args:
        out_dir: output directory (created; must not hold a previous dataset).
        area_path: QCEW by-area files of the template state (e.g. New York's).
        seed: master seed; per-state seeds derive from it and the state.
        establishments: national number of establishments (the scale knob; met up to
            stochastic rounding).
        states: state FIPS codes to generate (default: all 51).
        year, qtr: the quarter of the template files.

    Returns:
        A ``[data]`` configuration pointing at the establishment directory, and a
        summary.
    """
    from eree.data.qcew import aggregation_level, read_qcew_area_files
    from eree.synth.qcew_impute import impute_suppressed_cells
    from eree.synth.qcew_split import establishments_from_cells

    if establishments < 1:
        raise ValueError("establishments must be positive")
    todo = _check_states(states)
    out = Path(out_dir) / "establishments"
    out.mkdir(parents=True, exist_ok=False)
    t0 = time.perf_counter()
    cells = impute_suppressed_cells(read_qcew_area_files(area_path, year, qtr))
    leaves = cells.filter(pl.col("agglvl_code") == aggregation_level("county", "naics6"))
    del cells
    base = int(leaves.get_column("establishments").sum())
    rows, offset = 0, 0
    for state, n_state in _shares(establishments, todo).items():
        rng = np.random.default_rng([seed, int(state)])
        c = _scale_cells(leaves, n_state / base, rng).with_columns(
            (pl.lit(state) + pl.col("area_fips").str.slice(2)).alias("area_fips")
        )
        est = establishments_from_cells(c, rng, year=year, qtr=qtr)
        est = est.with_columns(pl.col("primary_key") + offset)
        _write(est, out / f"part-{state}.parquet")
        rows += est.height
        offset += est.height
        del est, c
    summary = NationalSummary(
        str(out.parent), {"establishments": rows}, len(todo), time.perf_counter() - t0, _du(out)
    )
    (out.parent / "summary.json").write_text(summary.to_json())
    return EstablishmentDataConfig(path=out), summary
