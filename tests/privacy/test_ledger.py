"""The budget ledger: lifetime budgets, no overspending under concurrency, crash safety."""

import threading

import pytest

from eree.errors import BudgetExceededError, PrivacyParameterError
from eree.privacy.accountant import Cost
from eree.privacy.ledger import Ledger


def test_budget_refuses_overspending(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    b = {"epsilon": 3.0}
    r1 = led.reserve("pa", "h", "eree", 0.1, Cost(2.0, 0.0), b, tmp_path / "o1")
    led.commit(r1)
    with pytest.raises(BudgetExceededError, match="past the lifetime budget epsilon=3"):
        led.reserve("pa", "h", "eree", 0.1, Cost(1.5, 0.0), b, tmp_path / "o2")
    led.reserve("pa", "h", "eree-weak", 0.1, Cost(1.0, 0.0), b, tmp_path / "o3")  # exactly 3
    assert led.spent("pa", "eree").cost.epsilon == pytest.approx(3.0)
    # other datasets are independent
    led.reserve("nj", "h", "eree", 0.1, Cost(3.0, 0.0), b, tmp_path / "o4")


def test_alpha_must_match(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.reserve("pa", "h", "eree", 0.1, Cost(1.0, 0.0), None, tmp_path / "o1")
    with pytest.raises(PrivacyParameterError, match="same alpha"):
        led.reserve("pa", "h", "eree", 0.2, Cost(1.0, 0.0), None, tmp_path / "o2")


def test_gedp_budget_composes_in_quadrature(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    b = {"mu": 5.0}
    led.reserve("ri", "h", "gedp", None, Cost(mu=3.0), b, tmp_path / "a")
    led.reserve("ri", "h", "gedp", None, Cost(mu=4.0), b, tmp_path / "b")  # sqrt(9+16) = 5
    with pytest.raises(BudgetExceededError, match="mu"):
        led.reserve("ri", "h", "gedp", None, Cost(mu=0.1), b, tmp_path / "c")


def test_concurrent_releases_never_overspend(tmp_path):
    path = tmp_path / "l.sqlite"
    Ledger(path)
    ok, refused = [], []

    def go(i):
        try:
            Ledger(path).reserve("pa", "h", "eree", 0.1, Cost(1.0, 0.0), {"epsilon": 5.0},
                                 tmp_path / f"o{i}")  # fmt: skip
            ok.append(i)
        except BudgetExceededError:
            refused.append(i)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ok) == 5 and len(refused) == 7
    assert Ledger(path).spent("pa", "eree").cost.epsilon == pytest.approx(5.0)


def test_reconcile_after_crash(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    written = tmp_path / "written"
    lost = tmp_path / "lost"
    r1 = led.reserve("pa", "h", "eree", 0.1, Cost(1.0, 0.0), None, written)
    led.reserve("pa", "h", "eree", 0.1, Cost(1.0, 0.0), None, lost)
    written.mkdir()
    (written / "manifest.json").write_text(f'{{"ledger": {{"id": "{r1}"}}}}')
    # pending charges count until settled
    assert led.spent("pa", "eree").cost.epsilon == 2.0
    assert led.reconcile() == {"committed": 1, "removed": 1}
    assert led.spent("pa", "eree").cost.epsilon == 1.0
    assert [r["status"] for r in led.history("pa")] == ["committed"]
