"""Plans (specs), orchestration and output writing (DESIGN.md §1, §7)."""
