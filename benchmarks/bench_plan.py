"""The budget planner against hand-written specs, its targets against released tables, its speed.

    python benchmarks/bench_plan.py allocation --seeds 20
    python benchmarks/bench_plan.py targets --seeds 20
    python benchmarks/bench_plan.py speed --queries 40 --runs 7

* ``allocation``: the demo's two specs (``eree demo``: LODES-like counts, QCEW-like sums)
  and ``examples/qcew-table7.toml`` (on ``eree synth qcew`` data from the DE/DC/RI by-area
  files in ``../shared/data``). Each is released as written and as ``eree plan`` splits the
  same total (``[plan] epsilon`` or ``mu`` = the spec's own total; weights 1; ``at`` 100
  jobs, or 100 employees and 1,000 of the wage unit for GEDP). Both are released with the
  same seeds (experiments: NOT FOR PUBLICATION). The measure is the planner's objective,
  realised over the released cells: for each query and statistic, the mean over cells of
  the relative error |published − true| / max(true, at) (a cell smaller than ``at`` is
  measured against ``at``), and their sum (the weighted error, weights 1).
* ``targets``: a spec of targets on a synthetic state (``eree synth lodes``-like
  parametric data, 50,000 jobs): the share of released cells within their target among
  the cells the promise covers (cells of at least ``at`` jobs whose largest establishment
  holds at most ``largest_share`` of them), against the promised confidence.
* ``speed``: ``eree plan`` as a whole process on a 40-query national-style spec (targets
  on every query), median of ``--runs``.

The truth is tabulated here with Polars from the synthetic microdata, independently of
eree's engine.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
#: [plan] largest_share of the ER-EE splits (``--largest-share``; None: the default, 1)
SHARE: float | None = None
#: each query's at = its mean cell size from public totals (``--at-from-cells``)
AT_FROM_CELLS = False


# ------------------------------------------------------------------ truth


def _count_truth(data: Path, by: list[str]) -> pl.DataFrame:
    wp = pl.read_parquet(data / "workplace.parquet")
    wk = pl.read_parquet(data / "worker.parquet")
    jobs = (
        pl.read_parquet(data / "job.parquet").join(wp, on="workplace_id").join(wk, on="worker_id")
    )
    return jobs.group_by(by).agg(pl.len().cast(pl.Float64).alias("true"))


def _sum_truth(est: pl.DataFrame, id_col: str, by: list[str] | str, attr: str) -> pl.DataFrame:
    if by == "identity":
        return est.select(
            pl.col(id_col).cast(pl.String), pl.col(attr).cast(pl.Float64).alias("true")
        )
    if not by:
        return pl.DataFrame({"true": [float(est[attr].sum())]})
    return est.group_by(by).agg(pl.col(attr).cast(pl.Float64).sum().alias("true"))


def _relative_errors(
    table: pl.DataFrame, truth: pl.DataFrame, keys: list[str], stat: str, at: float
) -> np.ndarray:
    """|published − true| / max(true, at) per cell: the relative error, small cells at ``at``."""
    if keys:
        t = truth.with_columns(pl.col(k).cast(table.schema[k]) for k in keys)
        table = table.join(t, on=keys, how="left").with_columns(pl.col("true").fill_null(0.0))
    else:
        table = table.with_columns(true=truth["true"])
    true = table["true"].to_numpy()
    return np.abs(table[stat].to_numpy() - true) / np.maximum(true, at)


# ------------------------------------------------------------------ allocation


def _specs(tmp: Path, only: str | None = None) -> list[tuple[str, Path, dict]]:
    from eree.cli.demo import GEDP_SPEC, LODES_SPEC
    from eree.synth.lodes import synth_parametric
    from eree.synth.qcew import synth_qcew_from_area, synth_qcew_parametric

    (tmp / "specs").mkdir(parents=True)
    synth_parametric(seed=2017).write(tmp / "data" / "lodes")
    q = tmp / "data" / "qcew" / "establishments.parquet"
    q.parent.mkdir(parents=True)
    synth_qcew_parametric(seed=2016, n_establishments=20_000).write(q)
    lodes = tmp / "specs" / "lodes.toml"
    lodes.write_text(LODES_SPEC, encoding="utf-8")
    gedp = tmp / "specs" / "qcew.toml"
    gedp.write_text(GEDP_SPEC, encoding="utf-8")
    out = [("demo-lodes", lodes, {"at": 100}), ("demo-qcew", gedp, {})]
    area = SHARED / "qcew_2016_by_area"
    if area.is_dir() and only in (None, "qcew-table7"):
        t7 = tmp / "t7"
        synth = synth_qcew_from_area(area, seed=1)
        synth.write(t7 / "qcew" / "establishments.csv.gz")
        text = (ROOT / "examples" / "qcew-table7.toml").read_text(encoding="utf-8")
        (t7 / "table7.toml").write_text(text, encoding="utf-8")
        out.append(("qcew-table7", t7 / "table7.toml", {}))
    return [o for o in out if only in (None, o[0])]


def _with_split(spec: Path, extra: dict, gedp: bool, total: float) -> Path:
    text = spec.read_text(encoding="utf-8")
    if gedp:
        at = "{ m1emp = 100, m2emp = 100, m3emp = 100, wage = 1000 }"
        plan = f"\n[plan]\nmu = {total!r}\nat = {at}\n"
    else:
        plan = f"\n[plan]\nepsilon = {total!r}\nat = {extra.get('at', 100)}\n"
        if SHARE is not None:
            plan += f"largest_share = {SHARE}\n"
    head, sep, tail = text.partition("[[query]]")
    text = head + plan + "\n" + sep + tail
    if AT_FROM_CELLS:
        import tomlkit

        doc = tomlkit.parse(text)
        for q in doc["query"]:
            q["at"] = _mean_cell(spec, q, gedp)
        text = tomlkit.dumps(doc)
    p = spec.with_name(spec.stem + "-split.toml")
    p.write_text(text, encoding="utf-8")
    return p


def _mean_cell(spec: Path, q, gedp: bool):
    """A query's mean cell size from public information: the total (published by the
    agency anyway, e.g. QCEW employment; here the synthetic data's own) over the number of
    cells its table publishes (from a seeded release of the hand-written spec)."""
    from eree.mechanisms.noise import make_noise_source
    from eree.release.protect import protect
    from eree.release.spec import load_spec

    plan = load_spec(spec)
    out = spec.parent / f"cells-{spec.stem}"
    if not out.exists():
        protect(plan, out, make_noise_source(seed=999))
    cells = pl.read_parquet(out / "tables" / f"{q['name']}.parquet").height
    if gedp:
        d = plan.data
        est = pl.read_parquet(d.path) if str(d.path).endswith(".parquet") else pl.read_csv(d.path)
        return {a: max(float(est[a].sum()) / cells, 1.0) for a in q["mu"]}
    jobs = pl.read_parquet(Path(plan.data.workplace).parent / "job.parquet").height
    return max(jobs / cells, 1.0)


def _measure(plan, seeds: int, tmp: Path, at_of) -> dict[tuple[str, str], float]:
    from eree.mechanisms.noise import make_noise_source
    from eree.release.protect import protect

    gedp = plan.kind == "establishments"
    sums: dict[tuple[str, str], list[float]] = {}
    if gedp:
        d = plan.data
        est = pl.read_parquet(d.path) if str(d.path).endswith(".parquet") else pl.read_csv(d.path)
    for seed in range(1, seeds + 1):
        out = protect(plan, tmp / f"r{seed}", make_noise_source(seed=seed)).out_dir
        for q in plan.queries:
            table = pl.read_parquet(out / "tables" / f"{q.name}.parquet")
            if gedp:
                keys = [plan.data.id] if q.by == "identity" else list(q.by)
                for a in q.mu or {}:
                    truth = _sum_truth(est, plan.data.id, q.by, a)
                    if q.by == "identity":
                        table = table.with_columns(pl.col(plan.data.id).cast(pl.String))
                    e = _relative_errors(table, truth, keys, a, at_of(a))
                    sums.setdefault((q.name, a), []).append(float(e.mean()))
            else:
                truth = _count_truth(Path(plan.data.workplace).parent, list(q.by))
                e = _relative_errors(table, truth, list(q.by), "jobs", at_of("jobs"))
                sums.setdefault((q.name, "jobs"), []).append(float(e.mean()))
    return {k: float(np.mean(v)) for k, v in sums.items()}


def allocation(seeds: int, only: str | None = None) -> None:
    from eree.release.build import build
    from eree.release.planner import plan_budget
    from eree.release.spec import load_spec

    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for name, spec, extra in _specs(tmp, only):
            hand = load_spec(spec)
            gedp = hand.kind == "establishments"
            total = build(hand).report().total
            tot = float(total.mu if gedp else total.epsilon)
            planned = plan_budget(
                load_spec(_with_split(spec, extra, gedp, tot)), alternatives=False
            )

            def at_of(stat: str) -> float:
                return {"wage": 1000.0}.get(stat, 100.0)

            a = _measure(hand, seeds, tmp / f"{name}-hand", at_of)
            b = _measure(dataclasses.replace(planned.plan, budget_plan=None), seeds,
                         tmp / f"{name}-plan", at_of)  # fmt: skip
            unit = "μ" if gedp else "ε"
            print(f"\n### {name} (total {unit} = {tot:g}; {seeds} seeded releases each)\n")
            print(
                f"| query | statistic | {unit} hand | {unit} planned | mean relative error, hand "
                "| planned | planned / hand |"
            )
            print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
            chosen = {(s.query, s.statistic): s.chosen for s in planned.statistics}
            for q in hand.queries:
                for stat in q.mu or {"jobs": q.epsilon}:
                    k = (q.name, stat)
                    given = (q.mu or {}).get(stat) if gedp else q.epsilon
                    print(
                        f"| {q.name} | {stat} | {given:g} | {chosen[k]:g} | {a[k]:.4g} | "
                        f"{b[k]:.4g} | {b[k] / a[k]:.3f} |"
                    )
            print(
                f"| **sum** | | {tot:g} | {planned.total:g} | {sum(a.values()):.4g} | "
                f"{sum(b.values()):.4g} | **{sum(b.values()) / sum(a.values()):.3f}** |"
            )


# ------------------------------------------------------------------ targets


TARGET_SPEC = """name = "targets"
[data]
kind = "eree"
workplace = "data/workplace.parquet"
worker = "data/worker.parquet"
job = "data/job.parquet"
[privacy]
definition = "eree-weak"
alpha = 0.1
"""

TARGETS = [
    ("county_industry", ["county", "naics_sector"], "smooth_laplace",
     "{ relative_error = 0.1, at = 100, confidence = 0.9, largest_share = 0.3 }"),
    ("tract_industry", ["tract", "naics_sector"], "smooth_gamma",
     "{ relative_error = 0.2, at = 50, confidence = 0.8, largest_share = 0.5 }"),
    ("county_sex", ["county", "sex"], "log_laplace",
     "{ relative_error = 0.05, at = 200, confidence = 0.95 }"),
    ("tract_age", ["tract", "age"], "log_laplace",
     "{ relative_error = 0.25, at = 20, confidence = 0.9 }"),
]  # fmt: skip


def targets(seeds: int) -> None:
    from eree.mechanisms.noise import make_noise_source
    from eree.release.planner import plan_budget
    from eree.release.protect import protect
    from eree.release.spec import load_spec
    from eree.synth.lodes import synth_parametric

    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        s = synth_parametric(seed=5, n_jobs=50_000)
        s.write(tmp / "data")
        jobs = s.job.join(s.workplace, on="workplace_id").join(s.worker, on="worker_id")
        text = TARGET_SPEC + "".join(
            f'[[query]]\nname = "{n}"\nby = {json.dumps(by)}\nmechanism = "{m}"\ntarget = {tg}\n'
            for n, by, m, tg in TARGETS
        )
        (tmp / "spec.toml").write_text(text, encoding="utf-8")
        result = plan_budget(load_spec(tmp / "spec.toml"), alternatives=False)
        print(f"\nplanned total ε = {result.total:g}; {seeds} seeded releases\n")
        print(
            "| query | mechanism | target | ε planned | cells covered (per release) | "
            "share within target | promised |"
        )
        print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
        hits: dict[str, list[np.ndarray]] = {n: [] for n, *_ in TARGETS}
        for seed in range(1, seeds + 1):
            out = protect(result.plan, tmp / f"r{seed}", make_noise_source(seed=seed)).out_dir
            for n, by, _m, _tg in TARGETS:
                per = jobs.group_by([*by, "workplace_id"]).agg(pl.len().alias("k"))
                truth = per.group_by(by).agg(
                    pl.col("k").sum().alias("n"), pl.col("k").max().alias("x_v")
                )
                tab = pl.read_parquet(out / "tables" / f"{n}.parquet").join(truth, on=by)
                st = next(x for x in result.statistics if x.query == n)
                tg = st.target
                covered = (tab["n"] >= tg.at) & (tab["x_v"] <= tg.largest_share * tab["n"])
                sub = tab.filter(covered)
                err = np.abs(sub["jobs"].to_numpy() - sub["n"].to_numpy())
                hits[n].append(err <= tg.value * sub["n"].to_numpy())
        for st in result.statistics:
            h = np.concatenate(hits[st.query])
            print(
                f"| {st.query} | {st.mechanism} | {st.target.words('jobs')} | {st.chosen:g} | "
                f"{h.size // seeds} | {h.mean():.3f} | {st.target.confidence:.2f} |"
            )


# ------------------------------------------------------------------ speed


def speed(queries: int, runs: int) -> None:
    geos = ["state", "county", "tract"]
    attrs = ["naics_sector", "ownership", "sex", "age", "race", "ethnicity", "education"]
    mechs = ["smooth_laplace", "smooth_gamma", "log_laplace"]
    lines = [TARGET_SPEC.replace('"targets"', '"national-40"')]
    k = 0
    for g in geos:
        for i, a in enumerate(attrs):
            for b in [None, *attrs[i + 1 :]]:
                if k == queries:
                    break
                by = [g, a] + ([b] if b else [])
                m = mechs[k % 3]
                lines.append(
                    f'[[query]]\nname = "q{k}"\nby = {json.dumps(by)}\nmechanism = "{m}"\n'
                    f"target = {{ relative_error = 0.1, at = {50 + 10 * k}, confidence = 0.9"
                    f"{', largest_share = 0.3' if m != 'log_laplace' else ''} }}\n"
                )
                k += 1
    with tempfile.TemporaryDirectory() as t:
        spec = Path(t) / "national.toml"
        spec.write_text("".join(lines), encoding="utf-8")
        for f in ("workplace", "worker", "job"):
            (Path(t) / "data").mkdir(exist_ok=True)
            (Path(t) / "data" / f"{f}.parquet").touch()
        times, cpus = [], []
        for _ in range(runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "eree.cli", "plan", str(spec)], check=True,
                           capture_output=True)  # fmt: skip
            times.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        print(
            f"eree plan, {k} queries with targets (whole process): median wall "
            f"{statistics.median(times):.2f} s, median CPU {statistics.median(cpus):.2f} s "
            f"over {runs} runs (wall min {min(times):.2f}, max {max(times):.2f}; load "
            f"average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["allocation", "targets", "speed"])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--largest-share", type=float, help="allocation: [plan] largest_share")
    ap.add_argument(
        "--at-from-cells",
        action="store_true",
        help="allocation: each query's at = public total / its number of cells",
    )
    ap.add_argument("--only", help="allocation: one spec (demo-lodes, demo-qcew, qcew-table7)")
    a = ap.parse_args()
    global SHARE, AT_FROM_CELLS
    SHARE = a.largest_share
    AT_FROM_CELLS = a.at_from_cells
    if a.what == "allocation":
        allocation(a.seeds, a.only)
    elif a.what == "targets":
        targets(a.seeds)
    else:
        speed(a.queries, a.runs)


if __name__ == "__main__":
    main()
