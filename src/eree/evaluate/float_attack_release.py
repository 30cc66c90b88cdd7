r"""The floating-point attack on whole releases: the same attack, through ``protect``.

:mod:`eree.evaluate.float_attack` attacks each mechanism on cell statistics; this module
runs it on what a release publishes: it writes small ER-EE and GEDP datasets that differ
in one establishment, releases each through :func:`eree.release.protect.protect` with the
float-safe sampler (and, for comparison, re-computes what the legacy float sampler would
have published), and counts the published cells whose truth the attacker learns for
certain (:func:`run_release_attack`).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from eree.errors import ReleaseWarning
from eree.evaluate.float_attack import (
    ALPHA,
    CELLS_FULL,
    COUNT_A,
    COUNT_B,
    DP_A,
    DP_B,
    EPSILON,
    GAMMA,
    MU,
    SQRT_A,
    SQRT_B,
    THETA,
    AttackResult,
    attack,
    attack_result,
    definition_of,
    describe,
    legacy_release,
    not_applicable,
    psi_publish,
    psi_space,
    scenario,
    selected_entries,
)
from eree.mechanisms.adaptive import AdaptiveGroupBy
from eree.mechanisms.gedp import (
    EstabGaussian,
    Pnc,
    PsiMechanism,
)
from eree.mechanisms.noise import FloatArray, SeededNoise
from eree.mechanisms.registry import REGISTRY, Entry

__all__ = ["run_release_attack"]


def _write_job_tables(root: Path, n: int) -> None:
    """Workplaces alone in their blocks: n with 10 matching workers, n with 11."""
    import polars as pl

    sizes = np.concatenate([np.full(n, int(COUNT_A)), np.full(n, int(COUNT_B))])
    m = sizes.size
    ids = np.array([f"w{i:06d}" for i in range(m)])
    pl.DataFrame({
        "workplace_id": ids, "state": ["44"] * m, "county": ["44001"] * m,
        "tract": [f"t{i // 10}" for i in range(m)], "block": [f"b{i:06d}" for i in range(m)],
        "naics_sector": ["62"] * m, "ownership": ["A05"] * m,
    }).write_parquet(root / "workplace.parquet")  # fmt: skip
    wid = np.repeat(ids, sizes)
    k = wid.size
    workers = [f"p{i}" for i in range(k)]
    pl.DataFrame({"worker_id": workers, "age": ["A01"] * k, "sex": ["M"] * k, "race": ["A1"] * k,
                  "ethnicity": ["A1"] * k, "education": ["E1"] * k, "earnings": ["E01"] * k}
                 ).write_parquet(root / "worker.parquet")  # fmt: skip
    pl.DataFrame({"worker_id": workers, "workplace_id": wid}).write_parquet(root / "job.parquet")


def _job_tables_spec(e: Entry) -> str:
    q = ['name = "q"', 'by = ["block"]', f'mechanism = "{e.name}"']
    if e.variant == "workshop":
        q.append('variant = "workshop"')
    if "epsilon" in e.settings:
        q.append(f"epsilon = {EPSILON}")
    if "theta" in e.settings:
        q.append(f"theta = {THETA}")
    d = definition_of(e)
    priv = [f'definition = "{d}"'] + ([f"alpha = {ALPHA}"] if d in ("eree", "blowfish") else [])
    return "\n".join(['name = "float-attack"', "[data]", 'kind = "eree"',
                      'workplace = "data/workplace.parquet"', 'worker = "data/worker.parquet"',
                      'job = "data/job.parquet"', "[privacy]", *priv, "[[query]]", *q])  # fmt: skip


def _write_gedp(path: Path, n: int, a: float, b: float) -> None:
    import polars as pl

    m = 2 * n
    pl.DataFrame({"primary_key": [f"e{i:06d}" for i in range(m)],
                  "grp": [f"g{i:06d}" for i in range(m)],
                  "m1emp": np.concatenate([np.full(n, a), np.full(n, b)])}
                 ).write_csv(path)  # fmt: skip


def _gedp_spec(e: Entry, csv: str) -> str:
    neighbor = '{ kind = "dp", d = 1.0 }' if e.cls is EstabGaussian else '"sqrt"'
    spec = f"""name = "float-attack"
[data]
kind = "establishments"
path = "{csv}"
id = "primary_key"
public = ["grp"]
confidential = ["m1emp"]
[privacy]
definition = "gedp"
neighbor = {neighbor}
distance = {{ m1emp = {GAMMA} }}
"""
    if e.cls in (Pnc, AdaptiveGroupBy):
        spec += f"""[[query]]
name = "identity"
by = "identity"
mechanism = "psi"
mu = {{ m1emp = {MU} }}
[pnc]
zeta = 0.01
bounds_from = "identity"
"""
    return (
        spec
        + f"""[[query]]
name = "q"
by = ["grp"]
mechanism = "{e.name}"
mu = {{ m1emp = {MU} }}
"""
    )


def _release_cells(
    e: Entry, built: Any, out: Path, n: int
) -> tuple[FloatArray, dict[str, FloatArray], dict[str, FloatArray], NDArray[np.bool_]]:
    """(published y, cells under truth a, under truth b, drawn under b) of one release."""
    import polars as pl

    if "gedp" not in e.definitions:
        t = pl.read_parquet(out / "tables" / "q.parquet").sort("block")
        y = t["jobs"].to_numpy().astype(np.float64)
        truth_b = np.arange(y.size) >= n  # blocks b000000… hold 10 workers, then 11
        full = lambda v: np.full(y.size, v)  # noqa: E731
        ca = {"count": full(COUNT_A), "x_v": full(COUNT_A), "count_truncated": full(COUNT_A)}
        cb = {"count": full(COUNT_B), "x_v": full(COUNT_B), "count_truncated": full(COUNT_B)}
        return y, ca, cb, truth_b
    t = pl.read_parquet(out / "tables" / "q.parquet").sort("grp")
    y = t["m1emp"].to_numpy().astype(np.float64)
    truth_b = np.arange(y.size) >= n
    a, b = (DP_A, DP_B) if e.cls is EstabGaussian else (SQRT_A, SQRT_B)
    full = lambda v: np.full(y.size, v)  # noqa: E731
    if e.cls in (EstabGaussian, PsiMechanism):
        return y, {"value": full(a)}, {"value": full(b)}, truth_b
    # pnc, adaptive: the public bound u* from the published identity answers (Thm 6.7)
    ident = pl.read_parquet(out / "tables" / "identity.parquet").sort("primary_key")
    idm: PsiMechanism = built.query("identity").mechanisms[0]
    mech = built.query("q").mechanisms[0]
    omega = None
    for w in psi_space(idm.neighbor, idm.sigma, ident["m1emp"].to_numpy()):
        r = float(idm.grid)  # type: ignore[arg-type]
        cand = np.rint(w / r) * r  # the identity answers are grid values in ψ space
        ok = psi_publish(idm.neighbor, idm.sigma, cand) == ident["m1emp"].to_numpy()
        if omega is None:
            omega = np.full(ok.size, np.nan)
        omega = np.where(ok & np.isnan(omega), cand, omega)  # the positive root first
    assert omega is not None and np.isfinite(omega).all()
    bound = mech.upper_bounds(omega, y.size)  # one establishment per group
    cells_a = {"clipped": np.minimum(full(a), bound), "bound": bound}
    cells_b = {"clipped": np.minimum(full(b), bound), "bound": bound}
    if e.cls is AdaptiveGroupBy:  # condition on the published choice
        pnc = (t["m1emp_mechanism"] == "pnc").to_numpy()
        pub = {"identity_sum": np.where(pnc, 1e12, 0.0), "identity_variance": full(0.0)}
        cells_a.update(value=full(a), **pub)
        cells_b.update(value=full(b), **pub)
    return y, cells_a, cells_b, truth_b


def run_release_attack(
    root: Path,
    *,
    n: int = CELLS_FULL,
    seed: int = 0,
    mechanisms: Sequence[str] | None = None,
    legacy: bool = True,
    witnesses: bool = True,
) -> list[AttackResult]:
    """The attack on values published by real releases, and on the legacy sampler's.

    The legacy sampler draws the same cells and truths.

    For every registered mechanism: write data with ``n`` cells under each truth (ER-EE:
    workplaces alone in their blocks; GEDP: establishments alone in their groups), run
    :func:`eree.release.protect.protect` (seeded), read the published table back, take the
    mechanism object from the release's built plan and attack every published cell.
    """
    from eree.release.build import build
    from eree.release.protect import protect
    from eree.release.spec import load_spec

    root = Path(root)
    (root / "data").mkdir(parents=True, exist_ok=True)
    results: list[AttackResult] = []
    wrote: set[str] = set()
    for i in selected_entries(mechanisms):
        e = REGISTRY[i]
        layers = ["current"] + (["legacy"] if legacy else [])
        if definition_of(e) == "none":
            results.extend(not_applicable(e, layer) for layer in layers)
            continue
        t0 = time.perf_counter()
        tag = f"{e.name}-{e.variant}" if e.variant else e.name
        if "gedp" in e.definitions:
            csv = "dp.csv" if e.cls is EstabGaussian else "sqrt.csv"
            if csv not in wrote:
                a, b = (DP_A, DP_B) if e.cls is EstabGaussian else (SQRT_A, SQRT_B)
                _write_gedp(root / "data" / csv, n, a, b)
                wrote.add(csv)
            text = _gedp_spec(e, f"data/{csv}")
        else:
            if "eree" not in wrote:
                _write_job_tables(root / "data", n)
                wrote.add("eree")
            text = _job_tables_spec(e)
        spec_path = root / f"{tag}.toml"
        spec_path.write_text(text)
        spec = load_spec(spec_path)
        out = root / f"release-{tag}"
        with warnings.catch_warnings():  # the attack reads values, not the plan's advice
            warnings.simplefilter("ignore", ReleaseWarning)
            protect(spec, out, SeededNoise(seed + 7919 * i))
        built = build(spec)
        mech = built.query("q").mechanisms[0]
        model = describe(mech)
        assert model is not None
        y, ca, cb, truth_b = _release_cells(e, built, out, n)
        got = attack(model, y, truth_b, ca, cb, "current", witnesses=witnesses, seed=seed + i)
        sc = scenario(i, 1)
        assert sc is not None
        pair = sc.pair.split(", public")[0].split(", half")[0]
        if e.cls in (Pnc, AdaptiveGroupBy):
            pair += ", u* from the release's identity answers"
        results.append(attack_result(e, definition_of(e), "current", pair, y.size, got, t0))
        if legacy:  # the legacy sampler on the same cells and truths
            t0 = time.perf_counter()
            src = SeededNoise(seed + 7919 * i + 1)
            truth = {k: np.where(truth_b, cb[k], ca[k]) for k in ca}
            y_old = legacy_release(model, truth, src)
            got = attack(model, y_old, truth_b, ca, cb, "legacy")
            results.append(attack_result(e, definition_of(e), "legacy", pair, y.size, got, t0))
    return results
