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


def test_a_plain_count_release_imports_no_scipy(tmp_path) -> None:
    # SciPy (~0.2 s) is for the lattice solver and the variance calibration only; an
    # ER-EE release without post-processing and without a smooth-sensitivity table nested
    # in another (whose stated accuracy calibrates the variance model's level on the
    # release) reaches the publication module (its spec check) but none of them
    from tests.cli.inputs import write_eree_case

    spec = write_eree_case(tmp_path)
    text = spec.read_text()
    spec.write_text(text.replace('mechanism = "smooth_laplace"', 'mechanism = "log_laplace"'))
    mods = _modules_after(["protect", str(spec), "--out", str(tmp_path / "rel"), "--seed", "1"])
    assert (tmp_path / "rel" / "manifest.json").exists()
    assert "eree.release.publication" in mods  # not vacuous: the module was imported
    assert "scipy" not in mods
    # power: with the nested smooth table, the stated accuracy's calibration runs SciPy
    spec.write_text(text)
    mods = _modules_after(["protect", str(spec), "--out", str(tmp_path / "rel2"), "--seed", "1"])
    assert "scipy" in mods
