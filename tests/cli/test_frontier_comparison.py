"""``eree audit reconstruct-frontier --establishments``: the comparison on the same cells.

Exact tables, cell suppression, coarsening (deterministic and random rounding) and GEDP,
each read by the same reader, scored by the same information loss and attacked by the
same interval audit. Expectations from the mathematics, checked on the releases the
command writes (OUT/releases/) against the true cell values:

* exact tables: loss 0, every cell known exactly, every sensitive cell disclosed;
* suppression: every published cell is exact, so the loss is the share withheld;
  the package protects every sensitive cell against the LP attacker (0 violations);
* coarsening: the true value lies in every cell's published interval, so the value read
  (the midpoint) is within b/2 of it for a cell rounded to base b (b − 1 for random
  rounding); the loss and the share useful it states are those of its file; 0 violations;
* GEDP: a cell answered by one pnc query is N(T, σ²) with σ its published std, so
  E|v − T|/σ = √(2/π) per cell, and the stated mean absolute error is √(2/π) × mean σ.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from eree.suppression import qcew_tables
from tests.cli.inputs import run_cli
from tests.suppression.helpers import random_qcew

KEYS = ["table_code", "area", "own", "industry"]


def _truth(frame: pl.DataFrame) -> pl.DataFrame:
    """True value of every cell of the linked tables, by the format's keys."""
    t = qcew_tables(frame, ["m3emp"])
    return t.cells.select([pl.col(k).cast(pl.Utf8) for k in KEYS]).with_columns(
        pl.Series("true", t.values("m3emp").astype(np.float64))
    )


def _release(out: Path, name: str, truth: pl.DataFrame) -> pl.DataFrame:
    """A written release joined to the true values (every cell present once)."""
    cells = pl.read_csv(out / "releases" / f"{name}.csv", infer_schema_length=0)
    cells = cells.with_columns(
        [pl.col(c).cast(pl.Float64) for c in ("value", "base", "lower", "upper", "scale")]
    )
    j = cells.join(truth, on=KEYS, how="inner")
    assert j.height == cells.height == truth.height
    return j


def _frontier(out: Path) -> dict[str, dict]:
    rows = pl.read_csv(out / "frontier.csv").to_dicts()
    return {
        r["method"] + (f"_x{r['budget_factor']:g}" if r["budget_factor"] is not None else ""): r
        for r in rows
    }


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pl.DataFrame, dict]:
    d = tmp_path_factory.mktemp("cmp")
    frame = random_qcew(5, 200).with_columns(pl.col("m1emp").alias("m3emp"))
    f = d / "est.csv"
    frame.write_csv(f)
    out = d / "fr"
    args = ["audit", "reconstruct-frontier", str(f), "--establishments", "--out", str(out)]
    r = run_cli([*args, "--budget-factors", "1,4", "--seed", "3"])
    assert r.exit_code == 0, r.output
    truth = _truth(frame)
    # the oracle's anchor: the state total is the sum of every establishment's value
    total = truth.filter(pl.col("table_code") == "50").get_column("true")
    assert total.to_list() == [frame.get_column("m3emp").sum()]
    return out, truth, _frontier(out)


def test_every_arm_on_the_same_cells_in_one_command(small) -> None:
    out, truth, row = small
    assert list(row) == [
        "exact",
        "suppressed",
        "coarsened_deterministic",
        "coarsened_random",
        "gedp_x1",
        "gedp_x4",
    ]
    assert {r["cells"] for r in row.values()} == {truth.height}
    assert len({r["sensitive_cells"] for r in row.values()}) == 1
    assert (out / "frontier.png").stat().st_size > 1000


def test_exact_tables_lose_nothing_and_disclose_everything(small) -> None:
    _, truth, row = small
    e = row["exact"]
    assert e["information_loss"] == 0.0 and e["mean_abs_error"] == 0.0
    assert e["share_useful"] == 1.0 and e["cells_published"] == truth.height
    assert e["cells_known_exactly"] == truth.height
    assert e["sensitive_cells"] > 0 and e["rule_violations"] == e["sensitive_cells"]


def test_suppression_publishes_exact_values_and_protects_every_sensitive_cell(small) -> None:
    out, truth, row = small
    s = row["suppressed"]
    j = _release(out, "suppressed", truth)
    pub = j.filter(pl.col("status") == "exact")
    assert (pub.get_column("value") == pub.get_column("true")).all()
    assert set(j.get_column("status").unique()) == {"exact", "suppressed"}
    assert s["cells_published"] == pub.height < truth.height
    # published cells: error 0; withheld: 1
    assert s["information_loss"] == pytest.approx(1.0 - pub.height / truth.height, abs=1e-12)
    assert s["mean_abs_error_published"] == 0.0
    assert s["rule_violations"] == 0


def _read_coarsened(j: pl.DataFrame) -> np.ndarray:
    """The published interval of each coarsened cell, from the file alone (whole numbers)."""
    st = j.get_column("status").to_numpy()
    v = j.get_column("value").to_numpy()
    b = j.get_column("base").to_numpy()
    lo = np.where(st == "range", j.get_column("lower").to_numpy(), v)
    hi = np.where(st == "range", j.get_column("upper").to_numpy(), v)
    r = st == "rounded"
    lo = np.where(r, np.maximum(0.0, np.ceil(v - b / 2.0 - 1e-9)), lo)
    hi = np.where(r, np.floor(v + b / 2.0 + 1e-9), hi)
    return np.stack([lo, hi])


@pytest.mark.parametrize("rounding", ["deterministic", "random"])
def test_coarsening_reads_within_its_base_and_states_its_own_loss(small, rounding: str) -> None:
    out, truth, row = small
    c = row[f"coarsened_{rounding}"]
    j = _release(out, f"coarsened_{rounding}", truth)
    t = j.get_column("true").to_numpy()
    st = j.get_column("status").to_numpy()
    lo, hi = _read_coarsened(j)
    pub = st != "suppressed"
    assert ((lo[pub] <= t[pub]) & (t[pub] <= hi[pub])).all()  # the truth in every interval
    read = np.where(pub, (lo + hi) / 2.0, 0.0)
    if rounding == "deterministic":
        r = st == "rounded"
        assert r.sum() > 0 and (st == "exact").sum() > 0
        b = j.get_column("base").to_numpy()
        assert (np.abs(read[r] - t[r]) <= b[r] / 2.0 + 1e-9).all()
    else:
        # random rounding to b: |T − v| < b, published as the range v ± (b − 1)
        assert (st == "range").sum() > 0
        assert "rounded" not in set(st)
    err = np.abs(read - t)
    loss = np.where(pub, np.minimum(1.0, err / np.maximum(t, 1.0)), 1.0)
    assert c["information_loss"] == pytest.approx(loss.mean(), abs=1e-12)
    useful = pub & (err <= 0.1 * np.maximum(t, 1.0) + 1e-9)
    assert c["share_useful"] == pytest.approx(useful.mean(), abs=1e-12)
    assert c["mean_abs_error"] == pytest.approx(err.mean(), abs=1e-9)
    assert c["cells_published"] == int(pub.sum())
    assert 0.0 < c["information_loss"] < row["suppressed"]["information_loss"]
    # the same audit as suppression: no sensitive cell narrowed below the rule
    assert c["optimizer_violations"] == 0 and c["rule_violations"] == 0


def _many_cells(n: int = 1400, seed: int = 7) -> pl.DataFrame:
    """Establishments in 10 counties × 18 industries × 2 ownerships (many pnc cells)."""
    rng = np.random.default_rng(seed)
    codes = ["236115", "236220", "237310", "238110", "238210", "311811", "423430",
             "441110", "445110", "511210", "522110", "541110", "541211", "541330",
             "561320", "611110", "621111", "722511"]  # fmt: skip
    emp = rng.integers(1, 80, n).astype(float)
    return pl.DataFrame(
        {
            "primary_key": [str(i) for i in range(n)],
            "cnty": rng.choice([str(c) for c in range(1, 20, 2)], n).tolist(),
            "own": rng.choice(["5", "5", "3"], n).tolist(),
            "naics": rng.choice(codes, n).tolist(),
            "m3emp": emp,
        }
    )


def test_gedp_loss_agrees_with_its_stated_std(tmp_path: Path) -> None:
    frame = _many_cells()
    f = tmp_path / "est.csv"
    frame.write_csv(f)
    out = tmp_path / "fr"
    r = run_cli(
        ["audit", "reconstruct-frontier", str(f), "--establishments", "--out", str(out),
         "--budget-factors", "1", "--coarsening", "none"]
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    row = _frontier(out)
    assert list(row) == ["exact", "suppressed", "gedp_x1"]
    g = row["gedp_x1"]
    j = _release(out, "gedp_x1", _truth(frame))
    v, t, sd = (j.get_column(c).to_numpy() for c in ("value", "true", "scale"))
    # the numbers the frontier states, from its file
    assert g["stated_mean_abs_error"] == pytest.approx(np.sqrt(2 / np.pi) * sd.mean(), rel=1e-9)
    assert g["mean_abs_error_published"] == pytest.approx(np.abs(v - t).mean(), rel=1e-9)
    # cells answered by one pnc query each (state and county totals, × ownership ×
    # NAICS-5): independent N(T, σ²), so E|v − T|/σ = √(2/π), Var = 1 − 2/π
    pnc = j.get_column("table_code").is_in(["50", "70", "57", "77"]).to_numpy()
    z = np.abs(v[pnc] - t[pnc]) / sd[pnc]
    n = z.size
    assert n >= 300
    tol = 4 * np.sqrt((1 - 2 / np.pi) / n)
    assert abs(z.mean() - np.sqrt(2 / np.pi)) < tol
    # power: stated stds 30% off in either direction would be seen
    for k in (0.7, 1.3):
        assert abs(z.mean() / k - np.sqrt(2 / np.pi)) > tol


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--coarsening", "exactish"], "--coarsening: give deterministic, random"),
        (["--state", "99"], "state '99' is not in the input"),
        ([], "the file holds 2 states; choose one with --state"),
        (["--state", "44", "--attribute", "m9emp"], "m9emp"),
    ],
)
def test_bad_options_exit_2_in_one_line(tmp_path: Path, extra: list[str], message: str) -> None:
    f = tmp_path / "est.csv"
    two = random_qcew(1, 40).with_columns(pl.col("m1emp").alias("m3emp"))
    state = pl.Series("state", ["44"] * 20 + ["10"] * 20)
    two.with_columns(state).write_csv(f)
    out = tmp_path / "x"
    r = run_cli(
        ["audit", "reconstruct-frontier", str(f), "--establishments", "--out", str(out), *extra]
    )
    assert r.exit_code == 2 and message in r.stderr, r.output
    assert len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_state_selects_one_states_establishments(tmp_path: Path) -> None:
    frame = random_qcew(2, 60).with_columns(pl.col("m1emp").alias("m3emp"))
    state = pl.Series("state", ["44"] * 25 + ["10"] * 35)
    f = tmp_path / "est.csv"
    frame.with_columns(state).write_csv(f)
    out = tmp_path / "fr"
    r = run_cli(
        ["audit", "reconstruct-frontier", str(f), "--establishments", "--out", str(out),
         "--state", "10", "--coarsening", "none", "--budget-factors", "1"]
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    truth = _truth(frame.tail(35))
    j = _release(out, "suppressed", truth)  # every cell of state 10's tables, once
    assert j.height == truth.height == _frontier(out)["exact"]["cells"]
