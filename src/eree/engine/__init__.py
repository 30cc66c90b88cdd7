"""Engines: the only code that scans microdata (DESIGN.md §1).

An engine turns input tables and a query into a table of cell statistics; mechanisms
never see rows. :class:`~eree.engine.polars.engine.PolarsEngine` is the default.
"""
