"""Privacy definitions, conditions, neighbor functions, accounting, semantics.

See docs/design.md#privacy-definitions.
"""
