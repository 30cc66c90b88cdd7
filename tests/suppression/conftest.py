"""Fixtures of the cell-suppression tests."""

from __future__ import annotations

import pytest

from eree.suppression import marginals_layout, tabulate
from tests.suppression.helpers import appendix_e


@pytest.fixture
def e_tables():
    return tabulate(appendix_e(), marginals_layout(["county", "sector"]), ["wage"])
