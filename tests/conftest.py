"""Shared pytest fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

# Tests do not time things: hypothesis's per-example deadline (200 ms) is a timing check
# that fails on a loaded machine (seen: test_mu_is_root_sum_of_squares), so it is off for
# every property test; each test's own max_examples still bounds its work.
settings.register_profile("eree", deadline=None)
settings.load_profile("eree")

#: the repository's parent holds ``shared/`` (locally and in CI)
SHARED_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the repository; skips the test when it is absent."""
    path = SHARED_DATA.resolve()
    if not path.is_dir():
        pytest.skip(f"real data not available: {path} is absent (needs ../shared/data)")
    return path


@pytest.fixture(scope="session", autouse=True)
def _output_key(tmp_path_factory):
    """One output key for the session (eree.data.outdir.output_key), never the user's own.

    Set in the process environment, so that commands run in subprocesses use it too.
    """
    import os

    key_env = "EREE_OUTPUT_KEY"  # (eree.data.outdir.KEY_ENV)
    before = os.environ.get(key_env)
    os.environ[key_env] = str(tmp_path_factory.mktemp("eree-config") / "output.key")
    yield
    if before is None:
        os.environ.pop(key_env, None)
    else:
        os.environ[key_env] = before
