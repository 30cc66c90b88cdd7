"""Issue 39: can an estimator that uses the Laplace shape of the noise reach 1.5× on the lattice?

Smooth Laplace's noise is Laplace (heavy-tailed): a Laplace location has Fisher
information 2/Var, twice a Gaussian's, so a likelihood-based fit could in principle beat
the best linear unbiased estimator. This measures, on issue 39's lattice (county ε 1,
tract 1, tract × industry 1, tract × sex 2, tract × industry × sex × age 3; weak ER-EE
α 0.1, Smooth Laplace) of the 200,000-job synthetic state, the mean L1 per cell of each
marginal, raw / estimator, over ``--seeds`` seeded releases, for:

* ``wls``: the release's least squares (public model, two passes, non-negative);
  ``wls_int`` the same rounded (as published); ``wls_oracle`` weighted by the true
  variances (evaluation only);
* ``l1``: the Laplace maximum-likelihood fit — min Σ |x − y| / sd over every released
  cell, every released pair additive (each marginal the sum of the finest), x ≥ 0, an
  LP (HiGHS); sd from the public model at the first pass's sizes; ``l1_2pass`` with sd
  re-evaluated at the L1 fit; ``l1_int`` rounded; ``l1_oracle`` with the true sd;
* ``huberK``: Huber M-estimate (threshold K model SDs), by iteratively re-weighted
  non-negative least squares;
* a per-cell bound for tract × industry: its own Laplace measurement combined with the
  rest of the lattice's leave-one-out linear estimate (from the hat matrix' diagonal;
  a sum of many Laplace noises, treated as Gaussian) by the posterior median or mean
  under a flat prior on x ≥ 0 (``postmed_*``, ``postmean_*``; cell by cell, **not
  additive**: an upper bound on what the Laplace shape of the own measurement adds).

    eree synth lodes --jobs 200000 --seed 6 --out /tmp/synth6
    python benchmarks/bench_lattice_laplace.py --data /tmp/synth6 --seeds 20
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from eree.data.job_tables import load_job_tables
from eree.engine.polars.engine import PolarsEngine
from eree.evaluate.publication_grade import WORKLOADS, workload_plan
from eree.evaluate.publication_oracle import true_variance
from eree.mechanisms.noise import SeededNoise
from eree.postprocess.hierarchy import cell_parents, refines
from eree.postprocess.lattice import Pair, lattice_least_squares, lattice_round
from eree.release.build import build, split_by
from eree.release.counts import count_tables
from eree.release.publication import (
    establishments_per_cell,
    variance_at_size,
    variance_proxy,
    workplace_attributes,
)


def _l1_fit(names, est, sd, exact, pairs, fin):  # type: ignore[no-untyped-def]
    """min Σ |x_c − y_c| / sd_c, every marginal the sum of the finest's cells, x ≥ 0."""
    nf = est[fin].size
    blocks, ys, ws, ub = [], [], [], []
    for n in names:
        if n == fin:
            b = sp.identity(nf, format="csr")
        else:
            idx = pairs[(fin, n)]
            b = sp.csr_matrix((np.ones(nf), (idx, np.arange(nf))), shape=(est[n].size, nf))
        blocks.append(b)
        ys.append(est[n])
        ws.append(1.0 / np.where(sd[n] > 0, sd[n], 1.0))
        ub.append(np.where(exact[n], 0.0, np.inf))
    bm = sp.vstack(blocks).tocsr()
    y, w, u = np.concatenate(ys), np.concatenate(ws), np.concatenate(ub)
    m = y.size
    a_eq = sp.hstack([bm, -sp.identity(m), sp.identity(m)]).tocsr()  # B x − p + q = y
    bounds = np.c_[np.zeros(nf + 2 * m), np.r_[np.where(exact[fin], 0.0, np.inf), u, u]]
    res = linprog(np.r_[np.zeros(nf), w, w], A_eq=a_eq, b_eq=y, bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(res.message)
    xf = res.x[:nf]
    return {n: xf if n == fin else np.bincount(pairs[(fin, n)], xf, minlength=est[n].size)
            for n in names}  # fmt: skip


def _huber(names, est, v, exact, ps, k, iters=40):  # type: ignore[no-untyped-def]
    w = {n: np.ones_like(v[n]) for n in names}
    x = est
    for _ in range(iters):
        x = lattice_least_squares(
            est, {n: np.where(exact[n], 0.0, v[n] / w[n]) for n in names}, ps, nonnegative=True
        )
        new = {}
        for n in names:
            u = np.abs(x[n] - est[n]) / np.sqrt(np.maximum(v[n], 1e-12))
            new[n] = np.maximum(np.where(u <= k, 1.0, k / np.maximum(u, 1e-12)), 1e-6)
        if all(np.allclose(new[n], w[n], rtol=1e-4, atol=1e-6) for n in names):
            break
        w = new
    return x


def _posterior(y, b, z, s2):  # type: ignore[no-untyped-def]
    """Median and mean of x ≥ 0 given y ~ Laplace(x, b), z ~ N(x, s2), flat prior."""
    s = np.sqrt(s2)
    lo = np.minimum(y - 10 * b, z - 8 * s)
    hi = np.maximum(y + 10 * b, z + 8 * s)
    g = np.linspace(0, 1, 4001)[None, :] * (hi - lo)[:, None] + lo[:, None]
    lp = -np.abs(y[:, None] - g) / b[:, None] - (g - z[:, None]) ** 2 / (2 * s2[:, None])
    lp = np.where(g < 0, -np.inf, lp)
    p = np.exp(lp - lp.max(axis=1, keepdims=True))
    c = np.cumsum(p, axis=1)
    c /= c[:, -1:]
    med = g[np.arange(len(y)), np.argmax(c >= 0.5, axis=1)]
    return med, (p * g).sum(1) / p.sum(1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--seeds", type=int, default=20)
    args = ap.parse_args()
    plan = workload_plan(args.data, WORKLOADS["lattice-tract"], "smooth_laplace")
    data = load_job_tables(plan.data)  # type: ignore[arg-type]
    engine = PolarsEngine()
    built = build(plan)
    truth = {}
    for q in plan.queries:
        wp, wk = split_by(q, plan.data)  # type: ignore[arg-type]
        truth[q.name] = engine.cell_statistics(data, wp, wk).select("count", "x_v")
    frame = engine.workplace_counts(data, workplace_attributes(plan))
    marg = {q.name: list(q.by) for q in plan.queries}
    err: dict[tuple[str, str], list[float]] = {}
    t0 = time.process_time()
    for s in range(args.seeds):
        tables = list(count_tables(built, data, engine, SeededNoise(s)))
        names = [t.name for t in tables]
        est, exact, at, var0 = {}, {}, {}, {}
        for t in tables:
            m = t.measurements[0]
            mech = built.query(t.name).mechanisms[0]
            k = establishments_per_cell(t.table, marg[t.name], frame)
            zero = np.zeros(t.table.height, bool) if k is None else k == 0
            if m.std is not None:
                zero |= np.asarray(m.std) == 0
            est[t.name] = np.where(zero, 0.0, np.asarray(m.estimate, np.float64))
            var0[t.name] = np.where(zero, 0.0, variance_proxy(mech, m, k)[0])
            at[t.name] = variance_at_size(mech, m, k)[0]
            exact[t.name] = zero
        pairs = {(c, p): cell_parents(tables[names.index(c)].table.select(marg[c]),
                                      tables[names.index(p)].table.select(marg[p]), frame)
                 for c in names for p in names if refines(marg[c], marg[p])}  # fmt: skip
        fin = next(n for n in names if all((n, p) in pairs for p in names if p != n))
        ps = [Pair(c, p, i) for (c, p), i in pairs.items()]
        first = lattice_least_squares(est, var0, ps, nonnegative=False)
        v = {n: np.where(exact[n], 0.0, at[n](first[n])) for n in names}
        tv = {t.name: np.where(exact[t.name], 0.0, true_variance(built, t, truth[t.name], frame))
              for t in tables}  # fmt: skip
        sol = {"wls": lattice_least_squares(est, v, ps, nonnegative=True)}
        sol["wls_int"] = lattice_round(sol["wls"], ps, exact)[0]
        sol["wls_oracle"] = lattice_least_squares(est, tv, ps, nonnegative=True)
        sol["l1"] = _l1_fit(names, est, {n: np.sqrt(v[n]) for n in names}, exact, pairs, fin)
        sol["l1_int"] = lattice_round(sol["l1"], ps, exact)[0]
        v2 = {n: np.where(exact[n], 0.0, at[n](sol["l1"][n])) for n in names}
        sol["l1_2pass"] = _l1_fit(names, est, {n: np.sqrt(v2[n]) for n in names}, exact,
                                  pairs, fin)  # fmt: skip
        sol["l1_oracle"] = _l1_fit(names, est, {n: np.sqrt(tv[n]) for n in names}, exact,
                                   pairs, fin)  # fmt: skip
        for kk in (0.5, 1.0, 1.5):
            sol[f"huber{kk}"] = _huber(names, est, v, exact, ps, kk)
        for n in names:
            tr = truth[n]["count"].to_numpy().astype(np.float64)
            err.setdefault(("raw", n), []).append(float(np.abs(est[n] - tr).mean()))
            for key, x in sol.items():
                err.setdefault((key, n), []).append(float(np.abs(x[n] - tr).mean()))
        # the per-cell bound for tract × industry
        target = "tract_ind"
        y = est[target]
        tr = truth[target]["count"].to_numpy().astype(np.float64)
        for lab, vv in (("oracle", tv), ("public", v)):
            xh = lattice_least_squares(est, vv, ps, nonnegative=False)[target]
            h = np.empty(y.size)
            for c in range(y.size):  # the hat matrix' diagonal, column by column
                e = {n: np.zeros_like(est[n]) for n in names}
                e[target][c] = 1.0
                h[c] = lattice_least_squares(e, vv, ps, nonnegative=False, rtol=1e-8)[target][c]
            h = np.clip(h, 1e-9, 1 - 1e-9)
            z = (xh - h * y) / (1 - h)  # the rest of the lattice's estimate of the cell
            med, mean = _posterior(y, np.sqrt(vv[target] / 2), z, h * vv[target] / (1 - h))
            err.setdefault((f"postmed_{lab}", target), []).append(float(np.abs(med - tr).mean()))
            err.setdefault((f"postmean_{lab}", target), []).append(float(np.abs(mean - tr).mean()))
    names = [q.name for q in plan.queries]
    keys = list(dict.fromkeys(k for k, _ in err if k != "raw"))
    print(f"raw / estimator mean L1 per cell ± SE (delta method, paired), {args.seeds} seeds, "
          f"{time.process_time() - t0:.0f} s CPU")  # fmt: skip
    print("| estimator | " + " | ".join(names) + " |")
    print("| --- |" + " ---: |" * len(names))
    for key in keys:
        cells = []
        for n in names:
            if (key, n) not in err:
                cells.append("")
                continue
            a, b = np.array(err[("raw", n)]), np.array(err[(key, n)])
            r = a.mean() / b.mean()
            se = (a / b.mean() - r * b / b.mean()).std(ddof=1) / np.sqrt(a.size)
            cells.append(f"{r:.2f} ± {se:.2f}")
        print(f"| {key} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
