"""Promptfoo extension hook (beforeAll): Promptfoo's LLM graders take part only when a judge is configured.

Every red-team plugin attaches its own LLM-graded assertion (`promptfoo:redteam:<plugin>`). With no judge
model configured (KIT_JUDGE_MODEL unset) those assertions cannot be graded offline: this hook removes them
from each test and lists them in the test's `metadata.kitNotGraded`, which the oracle assertion reports as
"not graded" - never as a pass. Pass and fail then rest on the oracle's invariants alone.
"""

from __future__ import annotations

import os
from typing import Any

PREFIX = "promptfoo:redteam:"


def judge_configured() -> bool:
    return bool(os.environ.get("KIT_JUDGE_MODEL"))


def strip_graders(test: dict[str, Any]) -> dict[str, Any]:
    kept, dropped = [], []
    for a in test.get("assert") or []:
        kind = a.get("type", "") if isinstance(a, dict) else ""
        (dropped if kind.startswith(PREFIX) else kept).append(a)
    if not dropped:
        return test
    meta = dict(test.get("metadata") or {})
    meta["kitNotGraded"] = sorted({*meta.get("kitNotGraded", []), *(a["type"] for a in dropped)})
    return {**test, "assert": kept, "metadata": meta}


def beforeAll(context: dict[str, Any], options: dict[str, Any] | None = None) -> dict[str, Any]:
    if judge_configured():
        return context
    suite = context["suite"]
    suite["tests"] = [strip_graders(t) for t in suite.get("tests") or []]
    return context
