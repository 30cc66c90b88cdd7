"""What a release reveals: interval audit and record reconstruction from published tables.

See docs/reconstruction-audit.md.

* :mod:`.tables` — the documented table-input format (cells with a status) and its reader.
* :mod:`.release` — eree release folders (the manifest states each table's law) and
  ``eree suppress`` output, read into the format.
* :mod:`.intervals` — (a) the tightest interval of every cell from all published
  constraints jointly (LP, HiGHS), per connected component.
* :mod:`.records` — (b) the records per unit as an integer program (HiGHS), most likely
  records for noisy tables, and the attacker's confidence per record.
* :mod:`.measure` — (c) rates against the true data (aggregate only).
* :mod:`.frontier` — one dataset protected by each method, attacked, against table error.
"""

from eree.evaluate.reconstruct.intervals import IntervalResult, interval_audit, linked_bounds
from eree.evaluate.reconstruct.measure import job_truth, measure
from eree.evaluate.reconstruct.records import ReconstructConfig, Reconstruction, reconstruct
from eree.evaluate.reconstruct.tables import (
    STATUSES,
    PublishedTables,
    band_halfwidth,
    from_frame,
    read_tables,
)

__all__ = [
    "STATUSES",
    "IntervalResult",
    "PublishedTables",
    "ReconstructConfig",
    "Reconstruction",
    "band_halfwidth",
    "from_frame",
    "interval_audit",
    "job_truth",
    "linked_bounds",
    "measure",
    "read_tables",
    "reconstruct",
]
