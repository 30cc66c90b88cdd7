"""Plans (specs), orchestration and output writing (docs/design.md#data-flow, #interfaces)."""
