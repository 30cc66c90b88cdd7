"""A worker with k > 1 jobs: the guarantee states what a change of their attributes costs.

Expectations from the derivation in docs/privacy.md#several-jobs-per-worker: with d
worker-attribute combinations and ε_cell = ε / max(d, k·share), a worker's presence costs
k·share·ε_cell; a change of their attributes moves each of the k counted jobs out of one
cell and into another, twice that. With k = 1, or without worker attributes, the guarantee
says nothing more (the change moves no job, or the statement for one job already holds).
"""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from eree.mechanisms.er_ee import LogLaplace, SmoothGamma


def _stated(text: str, what: str) -> float:
    m = re.search(re.escape(what) + r": ε=([0-9.e+-]+)", text)
    assert m, text
    return float(m.group(1))


@pytest.mark.parametrize(
    ("cls", "share"), [(SmoothGamma, Fraction(1)), (LogLaplace, Fraction(1, 2))]
)
@pytest.mark.parametrize("k", [2, 3])
def test_a_change_of_attributes_is_stated_at_twice_the_presence_cost(cls, share, k):
    eps, d = 6.0, 3
    m = cls(
        "q", epsilon=eps, alpha=0.1, worker_cells=d, worker_attributes=("age",), jobs_per_worker=k
    )
    eps_cell = Fraction(eps) / max(Fraction(d), k * share)
    presence = k * share * eps_cell
    text = m.guarantee()
    assert _stated(text, f"a worker with up to k = {k} jobs") == pytest.approx(float(presence))
    assert _stated(text, "a change of such a worker's attributes") == pytest.approx(
        float(2 * presence)
    )


def test_no_attribute_words_with_one_job_or_no_worker_attributes():
    one = SmoothGamma("q", epsilon=6.0, alpha=0.1, worker_cells=3, worker_attributes=("age",))
    assert "attributes: ε" not in one.guarantee()
    total = SmoothGamma("q", epsilon=6.0, alpha=0.1, jobs_per_worker=3)
    assert "a worker with up to k = 3 jobs" in total.guarantee()
    assert "attributes: ε" not in total.guarantee()
