"""The establishment microdata of the QCEW-like generators: its schema, container and writer.

One row per establishment, integer columns (:data:`ESTABLISHMENT_SCHEMA`, the Syn-RI
file's columns): ``primary_key, state, cnty, own, naics, naics3, naics4, naics5,
naics_sector, super_sector, m1emp, m2emp, m3emp, wage, year, qtr``. Both generators
(:func:`eree.synth.qcew.synth_qcew_from_area`, :func:`eree.synth.qcew.synth_qcew_parametric`)
build their frames with :func:`establishment_frame` and return a :class:`SynthQcew`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from eree.data.qcew import SUPERSECTOR_OF_SECTOR

__all__ = [
    "ESTABLISHMENT_COLUMNS",
    "ESTABLISHMENT_SCHEMA",
    "SynthQcew",
    "establishment_frame",
    "naics_columns",
    "write_establishments",
]

#: output schema of the establishment microdata (docs/design.md#establishment-data; Syn-RI column
#: names)
ESTABLISHMENT_SCHEMA: dict[str, type[pl.DataType]] = {
    "primary_key": pl.Int64,
    "state": pl.Int16,
    "cnty": pl.Int16,
    "own": pl.Int8,
    "naics": pl.Int32,
    "naics3": pl.Int16,
    "naics4": pl.Int16,
    "naics5": pl.Int32,
    "naics_sector": pl.Int8,
    "super_sector": pl.Int16,
    "m1emp": pl.Int32,
    "m2emp": pl.Int32,
    "m3emp": pl.Int32,
    "wage": pl.Int64,
    "year": pl.Int16,
    "qtr": pl.Int8,
}
ESTABLISHMENT_COLUMNS: tuple[str, ...] = tuple(ESTABLISHMENT_SCHEMA)


def naics_columns(naics: np.ndarray) -> dict[str, np.ndarray]:
    """naics3/4/5, the 2-digit naics_sector (as in Syn-RI) and the supersector."""
    sector = naics // 10_000
    lut = np.zeros(100, dtype=np.int16)
    for s, ss in SUPERSECTOR_OF_SECTOR.items():
        lut[int(s)] = int(ss)
    return {
        "naics": naics.astype(np.int32),
        "naics3": (naics // 1000).astype(np.int16),
        "naics4": (naics // 100).astype(np.int16),
        "naics5": (naics // 10).astype(np.int32),
        "naics_sector": sector.astype(np.int8),
        "super_sector": lut[sector],
    }


def establishment_frame(cols: dict[str, np.ndarray]) -> pl.DataFrame:
    """The columns as a frame of the :data:`ESTABLISHMENT_SCHEMA` (its order and dtypes)."""
    return pl.DataFrame([pl.Series(c, cols[c]).cast(t) for c, t in ESTABLISHMENT_SCHEMA.items()])


def write_establishments(frame: pl.DataFrame, path: str | Path) -> Path:
    """Write establishment microdata to ``.csv``, ``.csv.gz`` or ``.parquet`` atomically."""
    p = Path(path)
    name = p.name.lower()
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    try:
        if name.endswith((".parquet", ".pq")):
            frame.write_parquet(tmp)
        elif name.endswith(".csv.gz"):
            frame.write_csv(tmp, compression="gzip", check_extension=False)
        elif name.endswith(".csv"):
            frame.write_csv(tmp)
        else:
            raise ValueError(f"unsupported output type {p.name!r}: use .csv, .csv.gz or .parquet")
        tmp.replace(p)
    finally:
        if tmp.exists():
            tmp.unlink()
    return p


@dataclass(frozen=True)
class SynthQcew:
    """Synthetic QCEW-like establishment microdata.

    Attributes:
        establishments: one row per establishment (:data:`ESTABLISHMENT_SCHEMA`).
        cells: the QCEW cells after imputation
            (:func:`~eree.synth.qcew_impute.impute_suppressed_cells`), for
            data made from by-area files; None for parametric data.
    """

    establishments: pl.DataFrame
    cells: pl.DataFrame | None = None

    @property
    def n(self) -> int:
        """Number of establishments."""
        return self.establishments.height

    def write(self, path: str | Path) -> Path:
        """Write the establishments (``.csv``, ``.csv.gz`` or ``.parquet``)."""
        return write_establishments(self.establishments, path)
