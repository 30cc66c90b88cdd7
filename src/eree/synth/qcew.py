"""QCEW-like synthetic establishment microdata (Webb et al., Appendix A).

See docs/design.md#synthetic-data.

Two entry points, one output schema (docs/design.md#establishment-data, the Syn-RI file's columns):
``primary_key, state, cnty, own, naics, naics3, naics4, naics5, naics_sector,
super_sector, m1emp, m2emp, m3emp, wage, year, qtr`` — one row per establishment,
integer columns (see :data:`~eree.synth.qcew_microdata.ESTABLISHMENT_SCHEMA`).

* :func:`synth_qcew_from_area` — from real BLS QCEW open-data "by area" files
  (:func:`~eree.data.qcew.read_qcew_area_files`): the suppressed cells are imputed
  consistently with their published parents
  (:func:`~eree.synth.qcew_impute.impute_suppressed_cells`) and every county × ownership
  × NAICS-6 cell is split into its establishments with the Dirichlet divider
  (:func:`~eree.synth.qcew_split.establishments_from_cells`, Appendix A.4, Algorithms 6,
  7 and 2).
* :func:`~eree.synth.qcew_parametric.synth_qcew_parametric` — no file: heavy-tailed
  establishment sizes over a realistic geography (states → counties) and the real 2017
  NAICS-6 codes, vectorised and memory-lean (10M establishments in ≈ 7 s and ≈ 1 GB).

Both return a :class:`~eree.synth.qcew_microdata.SynthQcew`. The jobs live in their own
modules: reading the files and the QCEW codes in :mod:`eree.data.qcew`, the imputation in
:mod:`eree.synth.qcew_impute`, Algorithms 2, 6 and 7 in :mod:`eree.synth.qcew_split`,
the parametric model in :mod:`eree.synth.qcew_parametric`, the schema, container and
writer in :mod:`eree.synth.qcew_microdata`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl

from eree.data.qcew import aggregation_level, read_qcew_area_files
from eree.synth.qcew_impute import impute_suppressed_cells
from eree.synth.qcew_microdata import SynthQcew
from eree.synth.qcew_parametric import synth_qcew_parametric
from eree.synth.qcew_split import establishments_from_cells

__all__ = ["SynthQcew", "synth_qcew_from_area", "synth_qcew_parametric"]


def synth_qcew_from_area(
    path: str | Path,
    seed: int,
    *,
    year: int = 2016,
    qtr: int = 1,
    ownerships: Sequence[int] | None = None,
    prior: Literal["state", "establishments"] = "state",
    shape: float = 10.0,
    scale: float = 200.0,
    eta: float = 0.5,
    wage_unit: float = 1000.0,
) -> SynthQcew:
    """QCEW-like establishments from real QCEW by-area files (docs/design.md#synthetic-data).

    Reads the cells (:func:`~eree.data.qcew.read_qcew_area_files`), imputes the
    suppressed ones (:func:`~eree.synth.qcew_impute.impute_suppressed_cells`) and splits
    every county × ownership × NAICS-6 cell into its establishments
    (:func:`~eree.synth.qcew_split.establishments_from_cells`). Every published
    county × NAICS-6 cell's establishment count, month-1 and month-3 employment (and
    wages when ``wage_unit=1``) are reproduced exactly by the microdata.

    Args:
        path: directory of by-area files (or one file).
        seed: seed of ``numpy.random.Generator``; the same seed gives identical output.
        year, qtr: the quarter to use.
        ownerships: own codes to keep (e.g. ``(5,)`` for private only, like the paper's
            Syn-RI); None keeps all (1 federal, 2 state, 3 local government, 5 private).
        prior: imputation weights (:func:`~eree.synth.qcew_impute.impute_suppressed_cells`).
        shape, scale, eta, wage_unit: see
            :func:`~eree.synth.qcew_split.establishments_from_cells`.
    """
    cells = impute_suppressed_cells(read_qcew_area_files(path, year, qtr), prior=prior)
    leaves = cells.filter(pl.col("agglvl_code") == aggregation_level("county", "naics6"))
    if ownerships is not None:
        leaves = leaves.filter(pl.col("own_code").is_in([int(o) for o in ownerships]))
    rng = np.random.default_rng(seed)
    est = establishments_from_cells(
        leaves, rng, year=year, qtr=qtr, shape=shape, scale=scale, eta=eta, wage_unit=wage_unit
    )
    return SynthQcew(est, cells)
