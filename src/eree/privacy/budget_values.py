"""Budget values as the ledger stores them: exact fractions, never through a float.

``eree ledger budget --epsilon 0.3`` registers 3/10; a positive value no float holds
(``1e-400``) is refused rather than registered as 0 (docs/privacy.md, "Budgets are exact
decimals").
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from eree.errors import PrivacyParameterError

__all__ = ["budget_value", "exact_budget", "float_budget"]


def exact_budget(budget: Mapping[str, Any]) -> dict[str, str]:
    """A budget as the decimals written (``--epsilon 0.3`` is 3/10, not the float below it).

    A float is read as its shortest decimal; a text or a fraction exactly as given.
    """
    return {k: str(v if isinstance(v, Fraction) else Fraction(repr(float(v))))
            for k, v in budget.items() if v is not None}  # fmt: skip


def budget_value(name: str, key: str, value: float | str | Fraction) -> Fraction:
    """One budget value, exactly: a decimal text (``"1e-400"``), a fraction or a float.

    Never through a float that changes it: a positive value a float would round to 0
    (``1e-400``), or to infinity, is refused rather than registered as 0 or ∞.

    Raises:
        PrivacyParameterError: not a number, not finite, negative, or not representable.
    """
    where = f"budget of {name!r}: {key}"
    if isinstance(value, float | int) and not isinstance(value, bool):
        if value != value or value in (float("inf"), float("-inf")):
            raise PrivacyParameterError(f"{where} must be finite")
        exact = Fraction(repr(float(value)))
    else:
        try:
            exact = Fraction(str(value).strip())
        except (ValueError, ZeroDivisionError):
            raise PrivacyParameterError(f"{where} must be a number (got {value!r})") from None
    if exact < 0:
        raise PrivacyParameterError(f"{where} must be >= 0")
    try:
        as_float = float(exact)
    except OverflowError:
        as_float = float("inf")
    if as_float == float("inf"):
        raise PrivacyParameterError(f"{where} is too large (no finite float holds it)")
    if exact > 0 and as_float == 0.0:
        raise PrivacyParameterError(
            f"{where} is positive but below the smallest float ({value}): it would be "
            "registered as 0; give a budget of at least 1e-300"
        )
    return exact


def float_budget(b: Mapping[str, str]) -> dict[str, float]:
    """A stored budget as floats (for the checks' limits and what is shown)."""
    return {k: float(Fraction(v)) for k, v in b.items()}
