"""Shared pytest fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

#: the repository's parent holds ``shared/`` (locally and in CI)
SHARED_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the repository; skips the test when it is absent."""
    path = SHARED_DATA.resolve()
    if not path.is_dir():
        pytest.skip(f"real data not available: {path} is absent (needs ../shared/data)")
    return path
