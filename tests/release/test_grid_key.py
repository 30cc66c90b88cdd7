"""The `grid` key of a query: the public grid every published noisy value lies on.

Through the CLI, for every mechanism that takes it (both families), a chosen grid is
honoured (every published value is a multiple of it and the manifest records it), the
default is the documented one, and a grid that is not a power of two — or a grid on a
mechanism without one — is refused with a one-line error naming the query, exit 2,
nothing written.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from eree.mechanisms.registry import REGISTRY
from tests.cli.inputs import assert_clean_failure, run_cli, write_eree_case, write_estab_case


def _protect(spec: Path, out: Path):
    return run_cli(["protect", str(spec), "--out", str(out), "--seed", "5"])


def _on_grid(values: np.ndarray, grid: float) -> bool:
    v = values[np.isfinite(values)]
    return bool(np.all(v / grid == np.round(v / grid)))


@pytest.mark.parametrize("grid", [1.0, 4.0, 0.25, 2.0**-10])
def test_eree_grid_is_honoured_and_recorded(tmp_path, grid):
    spec = write_eree_case(tmp_path)
    text = spec.read_text().replace(
        'mechanism = "smooth_laplace"', f'mechanism = "smooth_laplace"\ngrid = {grid!r}'
    )
    spec.write_text(text)
    out = tmp_path / "rel"
    r = _protect(spec, out)
    assert r.exit_code == 0, r.output
    jobs = pl.read_parquet(out / "tables" / "county_sex.parquet")["jobs"].to_numpy()
    assert _on_grid(jobs, grid)
    assert not _on_grid(jobs, 2 * grid)  # and on no coarser grid: the key took effect
    m = json.loads((out / "manifest.json").read_text())
    params = {q["name"]: q["params"] for q in m["queries"]}
    assert params["county_sex"]["grid"] == grid
    assert params["county"]["grid"] == 2.0**-20  # Log-Laplace: the log-space default
    # Log-Laplace publishes exp(ω) − γ for ω on the log-space grid: ln(ñ + γ) on the grid
    ll = pl.read_parquet(out / "tables" / "county.parquet")["jobs"].to_numpy()
    omega = np.log(ll + 1 / 0.1)
    assert np.allclose(omega / 2.0**-20, np.round(omega / 2.0**-20), atol=1e-6)


@pytest.mark.parametrize("grid", [1.0, 0.5])
def test_gedp_grid_is_honoured_per_attribute(tmp_path, grid):
    spec = write_estab_case(tmp_path)
    text = spec.read_text().replace('mechanism = "pnc"', f'mechanism = "pnc"\ngrid = {grid!r}')
    spec.write_text(text)
    out = tmp_path / "rel"
    r = _protect(spec, out)
    assert r.exit_code == 0, r.output
    county = pl.read_parquet(out / "tables" / "county.parquet")
    m = json.loads((out / "manifest.json").read_text())
    params = {q["name"]: q["params"] for q in m["queries"]}
    for a in ("m1emp", "m2emp", "m3emp", "wage"):
        assert params["county"]["grid"][a] == grid
        assert params["identity"]["grid"][a] == 2.0**-20  # ψ = √: ψ-space default
        # pnc publishes the rounded noisy clipped sum itself (clamped at 0 with its CI)
        v = county[a].to_numpy()
        assert _on_grid(v[v > 0], grid)
        # its public std includes the rounding: √(sd² + grid²/12) > grid/√12
        assert np.all(county[f"{a}_std"].to_numpy() > grid / math.sqrt(12))


@pytest.mark.parametrize("bad", ["3", "0.3", "0", "-1", "inf", '"one"'])
def test_a_grid_that_is_not_a_power_of_two_is_refused(tmp_path, bad):
    spec = write_eree_case(tmp_path)
    text = spec.read_text().replace(
        'mechanism = "smooth_laplace"', f'mechanism = "smooth_laplace"\ngrid = {bad}'
    )
    spec.write_text(text)
    out = tmp_path / "rel"
    msg = assert_clean_failure(_protect(spec, out), out, "county_sex", "grid")
    assert len(msg.strip().splitlines()) == 1


def test_noise_infusion_takes_no_grid(tmp_path):
    spec = write_eree_case(tmp_path)
    text = spec.read_text().replace('definition = "eree-weak"', 'definition = "none"')
    head, _, _ = text.partition("[[query]]")
    text = head + '[[query]]\nname = "c"\nby = ["county"]\nmechanism = "noise_infusion"\ngrid = 1\n'
    spec.write_text(text)
    out = tmp_path / "rel"
    assert_clean_failure(_protect(spec, out), out, "grid does not apply to noise_infusion")


def test_every_mechanism_with_noise_takes_a_grid():
    for e in REGISTRY:
        assert ("grid" in e.settings) == (e.name != "noise_infusion"), e.name


@pytest.mark.parametrize("family", ["eree", "gedp"])
def test_a_grid_with_a_ledger(tmp_path, family):
    """A charged release honours the grid and records it; the grid changes nothing charged."""
    spec = write_eree_case(tmp_path) if family == "eree" else write_estab_case(tmp_path)
    mech = "smooth_laplace" if family == "eree" else "pnc"
    text = spec.read_text().replace(f'mechanism = "{mech}"', f'mechanism = "{mech}"\ngrid = 0.5')
    spec.write_text(text)
    name = "fuzz-eree" if family == "eree" else "fuzz-estab"
    led = tmp_path / "budget.sqlite"
    budget = ["--epsilon", "50", "--delta", "0.5", "--alpha", "0.1"]
    if family == "gedp":
        budget = ["--mu", "50"]
    assert run_cli(["ledger", "budget", str(led), name, *budget]).exit_code == 0
    out = tmp_path / "rel"
    r = run_cli(["protect", str(spec), "--out", str(out), "--ledger", str(led)])
    assert r.exit_code == 0, r.output
    m = json.loads((out / "manifest.json").read_text())
    q = next(q for q in m["queries"] if q["mechanism"] == mech)
    grid = q["params"]["grid"]
    assert (grid == 0.5) if family == "eree" else set(grid.values()) == {0.5}
    table = "county_sex" if family == "eree" else "county"
    col = "jobs" if family == "eree" else "m1emp"
    v = pl.read_parquet(out / "tables" / f"{table}.parquet")[col].to_numpy()
    assert _on_grid(v, 0.5)  # (secure noise: whether all are also on 1 is chance)


@pytest.mark.parametrize("mech", ["smooth_laplace", "log_laplace"])
@pytest.mark.parametrize("grid", [2.0**-1074, 2.0**-1030, 2.0**-65, 2.0**65])
def test_a_grid_beyond_the_float_range_is_refused_naming_the_grid(tmp_path, mech, grid):
    """A subnormal grid made every published value non-finite, and the error blamed a
    noise scale or a sum ('check epsilon, alpha, mu'); a grid is a power of two within
    2^-64..2^64, the error names the query's grid key."""
    spec = write_eree_case(tmp_path)
    text = spec.read_text().replace(
        f'mechanism = "{mech}"', f'mechanism = "{mech}"\ngrid = {grid!r}'
    )
    spec.write_text(text)
    out = tmp_path / "rel"
    query = "county_sex" if mech == "smooth_laplace" else "county"
    msg = assert_clean_failure(_protect(spec, out), out, f"query '{query}'", "grid", "2**-64")
    assert "scale" not in msg and "epsilon" not in msg, msg


@pytest.mark.parametrize("grid", [2.0**-64, 2.0**-40])
def test_a_fine_grid_within_the_range_is_honoured(tmp_path, grid):
    spec = write_eree_case(tmp_path)
    text = spec.read_text().replace(
        'mechanism = "smooth_laplace"', f'mechanism = "smooth_laplace"\ngrid = {grid!r}'
    )
    spec.write_text(text)
    out = tmp_path / "rel"
    r = _protect(spec, out)
    assert r.exit_code == 0, r.output
    values = pl.read_parquet(out / "tables" / "county_sex.parquet")["jobs"].to_numpy()
    assert _on_grid(values.astype(float), grid)
