"""Promptfoo's tests from the project's cases, read at every eval: `tests: file://providers/cases.py:generate_tests`
in a promptfooconfig.yaml (what `kit init` writes) keeps Promptfoo on the same cases as `kit run` and DeepEval
with no generated file to keep current.

A case file or case that does not load is a test of its own whose provider call fails with the loading error
(naming the file, the case and the check): it shows in Promptfoo's results as an error, never as nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit.plan import current_plan
from kit_promptfoo.genconfig import suite_tests


def generate_tests(config: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One Promptfoo test per case and attempt. `config` (from the config's `tests:` entry, optional):
    `cases`, a case file or folder to read instead of the plan's cases (kit.plan.current_plan)."""
    path = Path((config or {}).get("cases") or current_plan().cases)
    return suite_tests(path)[0]
