"""Loading and validating confidential input data (docs/design.md#input-data)."""
