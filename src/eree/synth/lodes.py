"""LODES-like synthetic ER-EE data (docs/design.md#synthetic-data).

Two entry points share one vectorised core:

* :func:`synth_from_wac` reads a real LODES Workplace Area Characteristics (WAC) file —
  one row per census block with published job counts by NAICS sector (CNS01–CNS20) and
  margins of the worker attributes (CA age, CE earnings, CR race, CT ethnicity, CD
  education, CS sex) — and builds establishments, workers and jobs that reproduce every
  block's published counts exactly (at ``scale=1``).
* :func:`synth_parametric` draws a WAC-like block table from a parametric model (no file)
  and feeds it to the same core.

Model (per block ``b`` and NAICS sector ``s`` with ``n`` jobs):

**Establishments.** The cell is split into ``k = min(n, 1 + Poisson((n-1)/m))``
establishments (``m = jobs_per_establishment``, default 35: one more establishment per
about 35 jobs). Each establishment gets one job; the other ``n - k`` jobs are spread over
the ``k`` establishments multinomially with weights ``w ~ Pareto(size_tail)``
(``w = U^{-1/size_tail}``, default tail index 0.8). Heavy-tailed weights within
heavy-tailed cells give a Zipf-like size distribution: on the Pennsylvania 2015 WAC
(5.65M jobs in 195K non-empty block × sector cells, seed 1) it yields 351K
establishments (mean 16.1 jobs, close to QCEW's ≈ 16 for PA), 62% with fewer than 10
jobs, 99% with fewer than 150, 112 with 1,000 or more (the largest 11,206). At
``scale=2`` (11.3M jobs) it gives 514K establishments, the size of the ER-EE paper's
data (10.9M jobs / 527K establishments).

**Ownership** (:data:`eree.data.schema.OWNERSHIP_CODES`: A01 federal, A00 state & local
government, A05 private) is drawn per establishment from its sector
(:data:`OWNERSHIP_BY_SECTOR`): public administration (92) is 80% A00 / 20% A01;
educational services (61) 45% A00 (public schools and universities); health care (62)
8% A00 and 2% A01 (public and VA hospitals); utilities (22) 15% A00; transportation
and warehousing (48-49) 10% A01 (postal service) and 5% A00 (transit); every other
sector is private (A05).

**Workers.** Each job has its own worker (every worker holds exactly one job). Within a
block, each attribute's published margin is expanded into a vector of codes and
randomly permuted over the block's jobs, independently per attribute: the block's
margins are reproduced exactly and attributes are independent within a block (their
dependence across blocks comes from the data). LODES publishes education (CD01–CD04)
only for workers aged 30 or older (CD sums to CA02 + CA03): those workers get the CD
margin exactly; workers aged 29 or younger get an education drawn from their block's
30+ distribution (the state's where the block has none).

**Geography.** From the 15-digit block code: ``state`` = first 2 digits, ``county`` =
first 5, ``tract`` = first 11, ``block`` = all 15.

**Scale.** ``scale`` multiplies every block's job count (stochastic rounding) and every
margin and sector count is re-allocated to the new block total by unbiased systematic
rounding of the proportional shares, so that margins stay consistent; at ``scale=1`` the
input counts are used as they are.

Everything is numpy arrays (``np.repeat``, ``argsort``, ``searchsorted``); nothing loops
per block or per job. The same seed gives identical output.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl

from eree.data.config import JobTablesConfig
from eree.data.io import check_nonnegative_finite, check_not_missing, check_unique, read_table
from eree.data.schema import (
    NAICS_SECTORS,
    OWNERSHIP_CODES,
    WORKER_DOMAINS,
    WORKER_ID,
    WORKPLACE_ATTRIBUTES,
    WORKPLACE_ID,
)
from eree.errors import DataValidationError

__all__ = [
    "OWNERSHIP_BY_SECTOR",
    "WAC_ATTRIBUTE_COLUMNS",
    "WAC_SECTOR_COLUMNS",
    "SynthLodes",
    "synth_from_wac",
    "synth_parametric",
]

#: WAC columns of each worker attribute, in the order of the attribute's domain codes
#: (:data:`eree.data.schema.WORKER_DOMAINS`)
WAC_ATTRIBUTE_COLUMNS: dict[str, tuple[str, ...]] = {
    "age": ("CA01", "CA02", "CA03"),
    "sex": ("CS01", "CS02"),
    "race": ("CR01", "CR02", "CR03", "CR04", "CR05", "CR07"),
    "ethnicity": ("CT01", "CT02"),
    "education": ("CD01", "CD02", "CD03", "CD04"),
    "earnings": ("CE01", "CE02", "CE03"),
}

#: WAC sector columns, aligned with :data:`eree.data.schema.NAICS_SECTORS`
WAC_SECTOR_COLUMNS: tuple[str, ...] = tuple(f"CNS{i:02d}" for i in range(1, 21))

#: P(ownership) per NAICS sector as (A01 federal, A00 state & local, A05 private);
#: sectors not listed are private.
OWNERSHIP_BY_SECTOR: dict[str, tuple[float, float, float]] = {
    "22": (0.0, 0.15, 0.85),
    "48-49": (0.10, 0.05, 0.85),
    "61": (0.0, 0.45, 0.55),
    "62": (0.02, 0.08, 0.90),
    "92": (0.20, 0.80, 0.0),
}

_GEOCODE = "w_geocode"
_TOTAL = "C000"
_EDU = "education"
_AGE = "age"


@dataclass(frozen=True)
class SynthLodes:
    """Synthetic ER-EE tables with the default column names of :mod:`eree.data.schema`.

    Attributes:
        workplace: ``workplace_id``, ``state``, ``county``, ``tract``, ``block``,
            ``naics_sector``, ``ownership`` (all Utf8); one row per establishment.
        worker: ``worker_id`` + ``age``, ``sex``, ``race``, ``ethnicity``, ``education``,
            ``earnings`` (Utf8 codes); one row per worker.
        job: ``worker_id``, ``workplace_id``; one row per job (= per worker).
    """

    workplace: pl.DataFrame
    worker: pl.DataFrame
    job: pl.DataFrame

    @property
    def n_jobs(self) -> int:
        """Number of jobs."""
        return self.job.height

    @property
    def n_workplaces(self) -> int:
        """Number of workplaces."""
        return self.workplace.height

    def joined(self) -> pl.DataFrame:
        """The one-table form: one row per job with workplace and worker attributes."""
        return (
            self.job.join(self.worker, on=WORKER_ID, how="left", maintain_order="left")
            .join(self.workplace, on=WORKPLACE_ID, how="left", maintain_order="left")
            .select(WORKPLACE_ID, *WORKPLACE_ATTRIBUTES, WORKER_ID, *WORKER_DOMAINS)
        )

    def write(
        self, out_dir: str | Path, format: Literal["parquet", "csv"] = "parquet"
    ) -> JobTablesConfig:
        """Write ``workplace``, ``worker`` and ``job`` tables to ``out_dir``.

        Args:
            out_dir: directory (created if needed).
            format: ``"parquet"`` (``workplace.parquet`` …) or ``"csv"``
                (``workplace.csv`` …).

        Returns:
            An :class:`~eree.data.config.JobTablesConfig` pointing at the written files.
        """
        if format not in ("parquet", "csv"):
            raise ValueError(f"format must be 'parquet' or 'csv', not {format!r}")
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {}
        for name, df in (("workplace", self.workplace), ("worker", self.worker), ("job", self.job)):
            p = out / f"{name}.{format}"
            tmp = p.with_name(p.name + ".tmp")
            if format == "parquet":
                df.write_parquet(tmp)
            else:
                df.write_csv(tmp)
            tmp.replace(p)
            paths[name] = p
        return JobTablesConfig(
            workplace=paths["workplace"], worker=paths["worker"], job=paths["job"]
        )


# --------------------------------------------------------------------------------------
# public entry points
# --------------------------------------------------------------------------------------


def synth_from_wac(
    wac_path: str | Path,
    seed: int,
    scale: float = 1.0,
    *,
    jobs_per_establishment: float = 35.0,
    size_tail: float = 0.8,
) -> SynthLodes:
    """LODES-like tables from a LODES WAC file (docs/design.md#synthetic-data).

    Args:
        wac_path: LODES WAC CSV(.gz) or Parquet (``w_geocode``, ``C000``, CA, CE, CNS,
            CR, CT, CD, CS columns; others are ignored).
        seed: seed of ``numpy.random.Generator``; the same seed gives identical output.
        scale: multiplies every block's jobs (2 ≈ the ER-EE paper's size, ≈ 23 ≈
            national); 1 reproduces the file's counts exactly.
        jobs_per_establishment: about one more establishment per this many jobs of a
            block × sector cell (see the module docstring).
        size_tail: Pareto tail index of the establishment weights within a cell.

    Returns:
        The synthetic tables.

    Raises:
        DataValidationError: the file is missing a column, has a value that does not
            parse, a negative count, a duplicated or malformed block code, or margins
            that do not add up to ``C000`` (CD to ``CA02 + CA03``).
        ValueError: ``scale`` or a model parameter is not positive.
    """
    _check_params(scale, jobs_per_establishment, size_tail)
    geocodes, sectors, margins = read_wac(wac_path)
    rng = np.random.default_rng(seed)
    return generate_establishments(
        geocodes, sectors, margins, rng, scale, jobs_per_establishment, size_tail
    )


def read_wac(
    wac_path: str | Path,
) -> tuple[pl.Series, np.ndarray, dict[str, np.ndarray]]:
    """Read and check a LODES WAC file: block codes, sector counts, attribute margins.

    The block table that :func:`synth_from_wac` generates from (read once when many
    datasets are made from one file, e.g. by :mod:`eree.synth.national`).

    Raises:
        DataValidationError: as :func:`synth_from_wac`.
    """
    path = Path(wac_path)
    count_cols = [
        _TOTAL,
        *WAC_SECTOR_COLUMNS,
        *(c for cols in WAC_ATTRIBUTE_COLUMNS.values() for c in cols),
    ]
    wac = read_table(path, {_GEOCODE: pl.Utf8, **dict.fromkeys(count_cols, pl.Int64)})
    check_not_missing(wac, [_GEOCODE], path, rule="missing-id")
    check_unique(wac, _GEOCODE, path)
    bad = ~wac.get_column(_GEOCODE).str.contains(r"^[0-9]{15}$")
    if bad.any():
        i = int(bad.arg_max())  # type: ignore[arg-type]
        raise DataValidationError(
            "block code must be 15 digits", file=str(path), row=i + 1, column=_GEOCODE,
            rule="domain",
        )  # fmt: skip
    check_nonnegative_finite(wac, count_cols, path)

    total = wac.get_column(_TOTAL).to_numpy().astype(np.int64)
    sectors = wac.select(WAC_SECTOR_COLUMNS).to_numpy().astype(np.int64)
    margins = {
        a: wac.select(list(cols)).to_numpy().astype(np.int64)
        for a, cols in WAC_ATTRIBUTE_COLUMNS.items()
    }
    _check_sum(path, sectors, total, WAC_SECTOR_COLUMNS, _TOTAL)
    for a, cols in WAC_ATTRIBUTE_COLUMNS.items():
        if a == _EDU:
            _check_sum(path, margins[a], margins[_AGE][:, 1:].sum(axis=1), cols, "CA02 + CA03")
        else:
            _check_sum(path, margins[a], total, cols, _TOTAL)
    return wac.get_column(_GEOCODE), sectors, margins


#: national-ish shares used by :func:`synth_parametric`
_PARAM_SECTOR_SHARES = np.array(
    [0.01, 0.005, 0.004, 0.045, 0.085, 0.04, 0.11, 0.035, 0.02, 0.04,
     0.015, 0.06, 0.015, 0.065, 0.09, 0.15, 0.017, 0.09, 0.035, 0.05]
)  # fmt: skip
_PARAM_ATTRIBUTE_SHARES: dict[str, tuple[float, ...]] = {
    "age": (0.23, 0.55, 0.22),
    "sex": (0.51, 0.49),
    "race": (0.79, 0.12, 0.01, 0.06, 0.002, 0.018),
    "ethnicity": (0.83, 0.17),
    "education": (0.10, 0.25, 0.31, 0.34),
    "earnings": (0.22, 0.30, 0.48),
}


def synth_parametric(
    seed: int,
    n_jobs: int = 50_000,
    *,
    n_counties: int = 4,
    tracts_per_county: int = 8,
    blocks_per_tract: int = 10,
    state: str = "99",
    jobs_per_establishment: float = 35.0,
    size_tail: float = 0.8,
) -> SynthLodes:
    """LODES-like tables without a file: same shape as :func:`synth_from_wac`.

    A WAC-like block table is drawn first: block job counts are multinomial with
    log-normal(0, 2) block weights (heavy-tailed, many empty or tiny blocks), exactly
    ``n_jobs`` in total; each block's sector mix is Dirichlet(20 × national shares) (a few
    dominant sectors per block); each worker attribute's block margin is multinomial
    with Dirichlet(40 × national shares) probabilities (neighbourhood variation around
    realistic national skews, e.g. 79% White, 17% Hispanic, 23% aged 29 or younger).
    The block table then goes through the same core as :func:`synth_from_wac`. With the
    defaults (50K jobs, 4 counties, 32 tracts, 320 blocks) this gives ≈ 4–4.5K
    establishments, mean ≈ 12 jobs, ≈ 70% with fewer than 10, the largest 500–1,400.

    Args:
        seed: seed of ``numpy.random.Generator``.
        n_jobs: total number of jobs (exact).
        n_counties, tracts_per_county, blocks_per_tract: geography of the fictitious
            state (block codes ``state + county(3) + tract(6) + block(4)``).
        state: the 2-digit state code (default ``"99"``, not a real state).
        jobs_per_establishment, size_tail: establishment size model (module docstring).

    Returns:
        The synthetic tables.
    """
    _check_params(1.0, jobs_per_establishment, size_tail)
    if n_jobs < 1 or min(n_counties, tracts_per_county, blocks_per_tract) < 1:
        raise ValueError("n_jobs and the geography sizes must be positive")
    if len(state) != 2 or not state.isdigit():
        raise ValueError("state must be a 2-digit code")
    rng = np.random.default_rng(seed)
    n_blocks = n_counties * tracts_per_county * blocks_per_tract
    county = np.repeat(np.arange(n_counties), tracts_per_county * blocks_per_tract)
    tract = np.tile(np.repeat(np.arange(tracts_per_county), blocks_per_tract), n_counties)
    block = np.tile(np.arange(blocks_per_tract), n_counties * tracts_per_county)
    geocodes = pl.select(
        pl.concat_str(
            pl.lit(state),
            pl.Series(2 * county + 1).cast(pl.Utf8).str.zfill(3),
            pl.Series(100 * (tract + 1)).cast(pl.Utf8).str.zfill(6),
            pl.Series(1000 + block).cast(pl.Utf8).str.zfill(4),
        )
    ).to_series()

    weights = rng.lognormal(0.0, 2.0, n_blocks)
    total = rng.multinomial(n_jobs, weights / weights.sum()).astype(np.int64)
    shares = _PARAM_SECTOR_SHARES / _PARAM_SECTOR_SHARES.sum()
    sectors = _multinomial_rows(rng, total, rng.dirichlet(20.0 * shares, n_blocks))
    margins: dict[str, np.ndarray] = {}
    for a, p in _PARAM_ATTRIBUTE_SHARES.items():
        base = np.asarray(p) / sum(p)
        probs = rng.dirichlet(40.0 * base, n_blocks)
        n = margins[_AGE][:, 1:].sum(axis=1) if a == _EDU else total
        margins[a] = _multinomial_rows(rng, n, probs)
    keep = total > 0
    margins = {a: m[keep] for a, m in margins.items()}
    return generate_establishments(
        geocodes.filter(pl.Series(keep)),
        sectors[keep],
        margins,
        rng,
        1.0,
        jobs_per_establishment,
        size_tail,
    )


# --------------------------------------------------------------------------------------
# core
# --------------------------------------------------------------------------------------


def _check_params(scale: float, jobs_per_establishment: float, size_tail: float) -> None:
    for name, v in (
        ("scale", scale),
        ("jobs_per_establishment", jobs_per_establishment),
        ("size_tail", size_tail),
    ):
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a positive finite number")


def _check_sum(
    path: Path, parts: np.ndarray, total: np.ndarray, cols: tuple[str, ...], what: str
) -> None:
    bad = parts.sum(axis=1) != total
    if bad.any():
        i = int(np.argmax(bad))
        raise DataValidationError(
            f"{cols[0]}–{cols[-1]} do not sum to {what}",
            file=str(path),
            row=i + 1,
            column=cols[0],
            rule="inconsistent-margins",
        )


def _multinomial_rows(rng: np.random.Generator, n: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Row-wise multinomial draws (``n[i]`` trials with ``probs[i]``)."""
    probs = np.clip(probs, 0.0, None)
    s = probs.sum(axis=1, keepdims=True)
    probs = np.where(s > 0, probs / np.where(s > 0, s, 1.0), 1.0 / probs.shape[1])
    return rng.multinomial(n, probs).astype(np.int64)


def _allocate(rng: np.random.Generator, weights: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Integer rows proportional to ``weights`` with row sums exactly ``targets``.

    Unbiased systematic rounding of the proportional shares: each entry is the floor of
    its share plus 0 or 1, with E[entry] = share; zero weights stay zero. Rows whose sum
    already equals the target are returned unchanged.
    """
    rows = weights.sum(axis=1)
    out = weights.copy()
    todo = rows != targets
    if not todo.any():
        return out
    w = weights[todo].astype(np.float64)
    t = targets[todo].astype(np.float64)
    r = rows[todo].astype(np.float64)
    if np.any((r == 0) & (t > 0)):
        raise ValueError("cannot allocate a positive total to an all-zero row")
    x = w * (t / np.where(r > 0, r, 1.0))[:, None]
    fl = np.floor(x)
    frac = x - fl
    u = 1.0 - rng.random(len(t))[:, None]  # (0, 1]
    c = np.cumsum(frac, axis=1)
    hits = np.floor(c - u + 1.0)
    add = np.diff(np.concatenate([np.zeros((len(t), 1)), hits], axis=1), axis=1)
    res = (fl + add).astype(np.int64)
    # floating-point guard: fix any off-by-one row total on its largest entry
    diff = targets[todo] - res.sum(axis=1)
    if np.any(diff != 0):
        j = np.argmax(w, axis=1)
        res[np.arange(len(t)), j] += diff
    out[todo] = res
    return out


def _permute_within(groups: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A permutation that shuffles positions only within runs of equal (sorted) groups."""
    return np.argsort(groups.astype(np.float64) + rng.random(groups.size), kind="stable")


def _split_cells(
    n: np.ndarray, rng: np.random.Generator, jobs_per_establishment: float, size_tail: float
) -> tuple[np.ndarray, np.ndarray]:
    """Split each cell's ``n`` jobs into establishments; returns (est_cell, est_size)."""
    ncell = n.size
    k = np.minimum(1 + rng.poisson((n - 1) / jobs_per_establishment), n)
    est_cell = np.repeat(np.arange(ncell), k)
    est_first = np.cumsum(k) - k
    last = est_first + k - 1
    # Pareto(size_tail) weights, normalised per cell; keys in (c, c+1] per cell c
    w = (1.0 - rng.random(est_cell.size)) ** (-1.0 / size_tail)
    w = w / np.add.reduceat(w, est_first)[est_cell]
    cs = np.cumsum(w)
    before = (cs - w)[est_first]
    key = est_cell + np.clip(cs - before[est_cell], 0.0, 1.0)
    key[last] = est_cell[last] + 1.0
    extra = n - k
    job_cell = np.repeat(np.arange(ncell), extra)
    pos = np.searchsorted(key, job_cell + rng.random(job_cell.size), side="right")
    size = 1 + np.bincount(pos, minlength=est_cell.size)
    return est_cell, size.astype(np.int64)


def _codes_to_series(name: str, domain: tuple[str, ...], codes: np.ndarray) -> pl.Series:
    return pl.Series(name, list(domain), dtype=pl.Utf8).gather(codes)


def _ids(prefix: str, n: int) -> pl.Series:
    width = max(7, len(str(max(n - 1, 0))))
    return pl.select(
        pl.concat_str(pl.lit(prefix), pl.int_range(n, eager=False).cast(pl.Utf8).str.zfill(width))
    ).to_series()


def generate_establishments(
    geocodes: pl.Series,
    sectors: np.ndarray,
    margins: Mapping[str, np.ndarray],
    rng: np.random.Generator,
    scale: float,
    jobs_per_establishment: float,
    size_tail: float,
) -> SynthLodes:
    """Core: block table (sector counts + attribute margins per block) → tables."""
    total = sectors.sum(axis=1)
    margins = dict(margins)
    if scale != 1.0:
        x = total * scale
        new_total = np.floor(x).astype(np.int64)
        new_total += rng.random(total.size) < (x - new_total)
        sectors = _allocate(rng, sectors, new_total)
        for a in WORKER_DOMAINS:
            if a != _EDU:
                margins[a] = _allocate(rng, margins[a], new_total)
        margins[_EDU] = _allocate(rng, margins[_EDU], margins[_AGE][:, 1:].sum(axis=1))
        total = new_total
    keep = total > 0
    if not keep.all():
        geocodes = geocodes.filter(pl.Series(keep))
        sectors, total = sectors[keep], total[keep]
        margins = {a: m[keep] for a, m in margins.items()}
    n_blocks = total.size

    # establishments per block x sector cell (block-major)
    n_cell = sectors.ravel()
    nonempty = np.flatnonzero(n_cell)
    est_cell, est_size = _split_cells(n_cell[nonempty], rng, jobs_per_establishment, size_tail)
    cell = nonempty[est_cell]
    est_block = cell // len(NAICS_SECTORS)
    est_sector = cell % len(NAICS_SECTORS)
    n_est = est_size.size

    # ownership per establishment from its sector
    own_p = np.tile(np.array([0.0, 0.0, 1.0]), (len(NAICS_SECTORS), 1))
    for s, p in OWNERSHIP_BY_SECTOR.items():
        own_p[NAICS_SECTORS.index(s)] = p
    own_cum = np.cumsum(own_p, axis=1)
    own_cum[:, -1] = 1.0
    own = (rng.random(n_est)[:, None] >= own_cum[est_sector]).sum(axis=1)

    # jobs, ordered by establishment, hence by block
    job_est = np.repeat(np.arange(n_est, dtype=np.int64), est_size)
    job_block = est_block[job_est]
    n_jobs = job_est.size

    # worker attributes: each block's margin, permuted within the block
    codes: dict[str, np.ndarray] = {}
    for a, domain in WORKER_DOMAINS.items():
        if a == _EDU:
            continue
        sorted_codes = np.repeat(
            np.tile(np.arange(len(domain), dtype=np.int8), n_blocks), margins[a].ravel()
        )
        codes[a] = sorted_codes[_permute_within(job_block, rng)]
    edu = np.empty(n_jobs, dtype=np.int8)
    older = np.flatnonzero(codes[_AGE] >= 1)
    edu_m = margins[_EDU]
    edu_sorted = np.repeat(np.tile(np.arange(4, dtype=np.int8), n_blocks), edu_m.ravel())
    edu[older] = edu_sorted[_permute_within(job_block[older], rng)]
    younger = np.flatnonzero(codes[_AGE] == 0)
    state_p = edu_m.sum(axis=0) + 1.0
    rows = edu_m.sum(axis=1, keepdims=True)
    probs = np.where(rows > 0, edu_m / np.where(rows > 0, rows, 1), state_p / state_p.sum())
    cum = np.cumsum(probs, axis=1)
    cum[:, -1] = 1.0
    edu[younger] = (rng.random(younger.size)[:, None] >= cum[job_block[younger]]).sum(axis=1)
    codes[_EDU] = edu

    # frames
    wp_ids = _ids("w", n_est)
    block_codes = geocodes.gather(est_block)
    workplace = pl.DataFrame(
        {
            WORKPLACE_ID: wp_ids,
            "state": block_codes.str.slice(0, 2),
            "county": block_codes.str.slice(0, 5),
            "tract": block_codes.str.slice(0, 11),
            "block": block_codes,
            "naics_sector": _codes_to_series("naics_sector", NAICS_SECTORS, est_sector),
            "ownership": _codes_to_series("ownership", OWNERSHIP_CODES, own),
        }
    )
    worker_ids = _ids("p", n_jobs)
    worker = pl.DataFrame(
        [worker_ids.alias(WORKER_ID)]
        + [_codes_to_series(a, WORKER_DOMAINS[a], codes[a]) for a in WORKER_DOMAINS]
    )
    job = pl.DataFrame({WORKER_ID: worker_ids, WORKPLACE_ID: wp_ids.gather(job_est)})
    return SynthLodes(workplace=workplace, worker=worker, job=job)
