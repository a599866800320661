"""Promptfoo's tests from the project's cases, read at every eval: `tests: file://providers/cases.py:generate_tests`
in a promptfooconfig.yaml (what `kit init` writes) keeps Promptfoo on the same cases as `kit run` and DeepEval
with no generated file to keep current.

A case file or case that does not load is a test of its own whose provider call fails with the loading error
(naming the file, the case and the check): it shows in Promptfoo's results as an error, never as nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit_promptfoo.genconfig import case_tests

from kit.case import load_suite
from kit.settings import load_settings, project_root


def generate_tests(config: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One Promptfoo test per case and attempt. `config` (from the config's `tests:` entry, optional):
    `cases`, a case file or folder to read instead of the settings' `cases`."""
    settings = load_settings()
    path = Path((config or {}).get("cases") or settings.cases)
    suite = load_suite(path)
    tests = [t for case in sorted(suite.cases, key=lambda c: (str(c.file), c.id)) for t in case_tests(case)]
    root = project_root(settings)
    for error in suite.errors:
        where = Path(error.file) if getattr(error, "file", None) else path
        try:
            shown = where.resolve().relative_to(root).as_posix()
        except ValueError:
            shown = str(where)
        # The provider reports the case file's loading error for this test (kit_promptfoo.kit_request).
        tests.append(
            {
                "description": f"does not load: {error}"[:200],
                "vars": {"case_id": getattr(error, "case", None) or "(file)", "case_file": shown, "input": ""},
            }
        )
    return tests
