"""The CLI imports experiment code only when an experiment runs (docs/design.md#data-flow, cli)."""

from __future__ import annotations

import subprocess
import sys


def _modules_after(args: list[str]) -> set[str]:
    code = (
        "import sys\n"
        "from eree.cli import app\n"
        "try:\n"
        f"    app({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stderr.split())


def test_top_level_help_imports_no_experiment_or_data_library() -> None:
    mods = _modules_after(["--help"])
    assert not any(m.startswith(("eree.evaluate", "eree.suppression")) for m in mods)
    assert not {"eree.cli.audit", "eree.cli.evaluate", "eree.cli.suppress"} & mods
    assert "polars" not in mods
    assert "scipy" not in mods
    # Rich (console, help boxes) costs --help ~0.3 s: it is imported on first output only
    assert not any(m == "rich" or m.startswith("rich.") for m in mods)
    assert "typer.rich_utils" not in mods


def test_experiment_group_help_loads_the_experiments() -> None:
    mods = _modules_after(["audit", "--help"])
    assert {"eree.cli.audit", "eree.cli.evaluate", "eree.cli.suppress"} <= mods
