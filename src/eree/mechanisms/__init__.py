"""Mechanisms: pure functions of cell statistics, parameters and a noise source (DESIGN.md §4)."""
