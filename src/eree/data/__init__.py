"""Loading and validating confidential input data (DESIGN.md §2)."""
