"""Fixtures shared by tests/unit and tests/e2e. Helpers that are plain functions live in tests/helpers
(importable as `helpers.*`: pytest puts this folder on sys.path when it loads this file)."""
import pytest

from helpers.e2e import torch_threads
from helpers.paths import SHARED_DATA


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny models on one torch thread for the whole module (see helpers.e2e.torch_threads)."""
    with torch_threads(1):
        yield


@pytest.fixture(scope="session")
def shared_data():
    """The ../shared/data folder beside the checkout; the test is skipped, with the reason, without it."""
    import os
    if not os.path.isdir(SHARED_DATA):
        pytest.skip(f"no shared data at {SHARED_DATA} (a fresh clone has none)")
    return SHARED_DATA
