"""The Polars engine: in-process and lazy, the default (:mod:`eree.engine.polars.engine`)."""
