"""Mutation check: each change below breaks one formula; the suite must go red for each.

Usage (from the repository root):

    python benchmarks/mutations.py            # all mutations, prints a table
    python benchmarks/mutations.py --list     # the mutations only

Each mutation is applied to a copy of ``src/`` in a temporary directory (the working
tree is never touched), then the named test files run against that copy with
``PYTHONPATH`` pointing at it. A mutation "fails the suite" when pytest exits non-zero.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = "tests/mechanisms/test_contract.py"


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...] = (CONTRACT,)


MUTATIONS = (
    # the three the issue names
    Mutation("Smooth Gamma split returns eps1 = eps", "src/eree/privacy/er_ee_conditions.py",
             "    eps1 = epsilon - eps2\n", "    eps1 = epsilon\n"),
    Mutation("S = alpha*x_v without max(., 1)", "src/eree/mechanisms/er_ee.py",
             "return np.maximum(alpha * np.asarray(x_v, dtype=np.float64), 1.0)",
             "return alpha * np.asarray(x_v, dtype=np.float64)"),
    Mutation("worker-attribute marginal drawn with the query's eps, not eps/d",
             "src/eree/mechanisms/er_ee.py",
             "return float_down(Fraction(epsilon) / worker_cells)", "return float(epsilon)"),
    # one per mechanism's scale
    Mutation("Log-Laplace lambda = ln(1+a)/eps", "src/eree/privacy/er_ee_conditions.py",
             "return 2.0 * math.log1p(alpha) / epsilon", "return math.log1p(alpha) / epsilon"),
    Mutation("Smooth Gamma scale 4S/eps1", "src/eree/mechanisms/er_ee.py",
             "scale = 5.0 * smooth_sensitivity", "scale = 4.0 * smooth_sensitivity"),
    Mutation("Smooth Laplace scale S/eps", "src/eree/mechanisms/er_ee.py",
             "scale = 2.0 * smooth_sensitivity", "scale = 1.0 * smooth_sensitivity"),
    Mutation("workshop Smooth Laplace without eta'", "src/eree/mechanisms/workshop.py",
             "with_eta_prime = source.add_laplace(cells[\"count\"], 1.0 / eps)\n        noisy",
             "with_eta_prime = cells[\"count\"]\n        noisy"),
    Mutation("workshop Smooth Gamma scale 8ax/eps", "src/eree/mechanisms/workshop.py",
             "/ (epsilon / 16.0)", "/ (epsilon / 8.0)"),
    Mutation("edge-DP Laplace scale 1/(2 eps)", "src/eree/mechanisms/baselines.py",
             'object.__setattr__(self, "scale", 1.0 / self.epsilon_cell)',
             'object.__setattr__(self, "scale", 0.5 / self.epsilon_cell)'),
    Mutation("truncated Laplace scale theta/(2 eps)", "src/eree/mechanisms/baselines.py",
             'object.__setattr__(self, "scale", self.theta / self.epsilon_cell)',
             'object.__setattr__(self, "scale", self.theta / self.epsilon_cell / 2)'),
    Mutation("noise infusion factors [1-t/2, 1+t/2]", "src/eree/mechanisms/noise_infusion.py",
             "return (1.0 + sign * delta).reshape(shape)",
             "return (1.0 + sign * delta / 2).reshape(shape)"),
    Mutation("psi sigma = gamma/(2 mu)", "src/eree/mechanisms/gedp.py",
             'object.__setattr__(self, "sigma", self.gamma / self.mu)',
             'object.__setattr__(self, "sigma", self.gamma / self.mu / 2)'),
    Mutation("Estab-Gaussian sd = Delta/(1.5 mu)", "src/eree/mechanisms/gedp.py",
             'object.__setattr__(self, "sd", float(sens) / self.mu)',
             'object.__setattr__(self, "sd", float(sens) / self.mu / 1.5)'),
    Mutation("pnc sd = Delta/(2 mu)", "src/eree/mechanisms/gedp.py",
             "    sd = d / mu\n    noisy = source.add_gaussian(clipped_sums, sd)",
             "    sd = d / mu / 2\n    noisy = source.add_gaussian(clipped_sums, sd)"),
    Mutation("pnc tau without the 1/(k_c n) root", "src/eree/mechanisms/gedp.py",
             "tail = -math.expm1(math.log1p(-zeta) / (k_c * n))",
             "tail = -math.expm1(math.log1p(-zeta))"),
    # one per composition rule
    Mutation("eps-delta composition: max instead of sum", "src/eree/privacy/composition.py",
             "            eps += c.exact_epsilon or 0\n",
             "            eps = max(eps, c.exact_epsilon or 0)\n",
             (CONTRACT, "tests/privacy/test_composition.py")),
    Mutation("mu composition: max of mu instead of root of sum of squares",
             "src/eree/privacy/composition.py",
             "            m2 += c.exact_mu_squared or 0\n",
             "            m2 = max(m2, c.exact_mu_squared or 0)\n",
             (CONTRACT, "tests/privacy/test_composition.py")),
    Mutation("marginal cost: d x eps instead of eps", "src/eree/mechanisms/er_ee.py",
             "        return Cost(epsilon=self.epsilon, delta=delta)\n",
             "        return Cost(epsilon=self.epsilon * d, delta=delta)\n",
             (CONTRACT, "tests/privacy/test_accountant.py")),
    Mutation("delta of a marginal: delta_cell instead of d x delta_cell",
             "src/eree/mechanisms/er_ee.py",
             "d_delta = Fraction(self.delta_cell) * self.worker_cells",
             "d_delta = Fraction(self.delta_cell)",
             (CONTRACT, "tests/privacy/test_accountant.py")),
    # the leak detector
    Mutation("release publishes the true count in a column", "src/eree/release/counts.py",
             "table = pl.DataFrame({**keys.to_dict(), **statistic_columns(COUNT_STATISTIC, m)})",
             "table = pl.DataFrame({**keys.to_dict(), **statistic_columns(COUNT_STATISTIC, m),"
             " 'n_check': cells['count']})",
             ("tests/release/test_protect.py::test_no_confidential_value_in_any_written_file",)),
)  # fmt: skip


def run(m: Mutation, python: str) -> tuple[bool, float, str]:
    """Apply ``m`` to a copy of src/ and run its tests; (suite failed?, seconds, last line)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(ROOT / "src", src)
        target = Path(tmp) / m.file
        text = target.read_text()
        if text.count(m.old) != 1:
            return False, 0.0, f"mutation does not apply (matches: {text.count(m.old)})"
        target.write_text(text.replace(m.old, m.new))
        env = dict(os.environ, PYTHONPATH=str(src))
        t0 = time.perf_counter()
        r = subprocess.run(
            [python, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *m.tests],
            cwd=ROOT, env=env, capture_output=True, text=True,
        )  # fmt: skip
        lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
        failed = [ln.split(" - ")[0].removeprefix("FAILED ") for ln in lines
                  if ln.startswith("FAILED")]  # fmt: skip
        return r.returncode != 0, time.perf_counter() - t0, (failed or lines[-1:] or [""])[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--only", help="run the mutations whose name contains this text")
    args = ap.parse_args()
    todo = [m for m in MUTATIONS if not args.only or args.only in m.name]
    if args.list:
        for m in todo:
            print(f"{m.name}  ({m.file}; tests: {', '.join(m.tests)})")
        return 0
    survived = 0
    print(f"{'mutation':60} {'suite':7} {'s':>6}  the test that fails")
    for m in todo:
        failed, secs, last = run(m, sys.executable)
        survived += not failed
        print(f"{m.name:60} {'RED' if failed else 'GREEN!':7} {secs:6.1f}  {last}")
    print(f"{len(todo) - survived}/{len(todo)} mutations make the suite fail")
    return 1 if survived else 0


if __name__ == "__main__":
    raise SystemExit(main())
