"""Engines: the only code that scans microdata (docs/design.md#data-flow).

An engine turns input tables and a query into a table of cell statistics; mechanisms
never see rows. :class:`~eree.engine.polars.engine.PolarsEngine` is the default.

* :mod:`eree.engine.base` — the contract every engine meets (a table, then a Protocol);
* :mod:`eree.engine.select` — an engine by name;
* :mod:`eree.engine.exact_sums`, :mod:`eree.engine.cell_frame` — what both engines
  share: exact order-free sums, the keys of the full cell frame;
* :mod:`eree.engine.unitmap` — where independent units of work run: this process,
  worker processes or Spark (the reconstruction audit's blocks, the WAC coarsening's chunks);
* :mod:`eree.engine.polars` — the Polars engine, its loader and establishment queries;
* :mod:`eree.engine.spark` — the Spark engine (PySpark imported lazily).
"""
