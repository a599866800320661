"""End-to-end tests: each drives a real tool (Promptfoo, DeepEval, make, Chromium) in a subprocess.

The slow runs are shared and start with the session (shared_runs.py, tests/conftest.py): the tests that
wait for them are collected last, so that the unit tests and the quick e2e tests run meanwhile.
"""

from __future__ import annotations

import pytest
from shared_runs import needed


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/tests/e2e/" in str(item.path):
            item.add_marker(pytest.mark.e2e)

    def rank(item: pytest.Item) -> int:
        return 2 if "/tests/e2e/" in str(item.path) and needed([item]) else 1

    items.sort(key=rank)  # stable: the order within each rank is the collection's
