"""End-to-end tests: each drives a real tool (Promptfoo, DeepEval, make, Chromium) in a subprocess.

The slow runs are shared and start with the session (shared_runs.py, tests/conftest.py): the tests that
wait for them are collected last, so that the unit tests and the quick e2e tests run meanwhile; the long
modules below, whose runs are their own, are collected first.
"""

from __future__ import annotations

import pytest
from shared_runs import needed

LONG_MODULES = {"test_user_repo.py"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/tests/e2e/" in str(item.path):
            item.add_marker(pytest.mark.e2e)

    def rank(item: pytest.Item) -> int:
        if "/tests/e2e/" not in str(item.path):
            return 1
        return 0 if item.path.name in LONG_MODULES else 2 if needed([item]) else 1

    items.sort(key=rank)  # stable: the order within each rank is the collection's
