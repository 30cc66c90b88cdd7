"""Privacy definitions, conditions, neighbor functions, accounting, semantics (DESIGN.md §3)."""
