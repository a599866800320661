"""Promptfoo extension hook (beforeAll): name each attack, and let Promptfoo's LLM graders take part only
when a judge is configured.

Naming: each generated test gets `metadata.case_id` = `redteam/<attack id>/<strategy>` (the attack found
in redteam/attacks.yaml by its original text), so the store keeps one case per attack and strategy.

Every red-team plugin attaches its own LLM-graded assertion (`promptfoo:redteam:<plugin>`). With no judge
model configured (KIT_JUDGE_MODEL unset) those assertions cannot be graded offline: this hook removes them
from each test and lists them in the test's `metadata.kitNotGraded`, which the oracle assertion reports as
"not graded" - never as a pass. Pass and fail then rest on the oracle's invariants alone. With a judge
configured the graders stay: Promptfoo sends their requests to `redteam.provider` (redteam/generator.py),
which forwards them to the kit's one judge.
"""

from __future__ import annotations

import os
from typing import Any

from kit_promptfoo.redteam import corpus, multiturn

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


def name_attack(test: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    meta = dict(test.get("metadata") or {})
    text = meta.get("originalText") or (test.get("vars") or {}).get("prompt") or ""
    attack = ids.get(str(text).strip(), "unknown")
    meta.setdefault("case_id", f"redteam/{attack}/{meta.get('strategyId', 'basic')}")
    meta.setdefault("attack_id", attack)
    return {**test, "metadata": meta}


def is_attack(test: dict[str, Any]) -> bool:
    return bool((test.get("metadata") or {}).get("pluginId"))


def beforeAll(context: dict[str, Any], options: dict[str, Any] | None = None) -> dict[str, Any]:
    suite = context["suite"]
    ids = {a.text: a.id for a in corpus.load()} | {a.prompt: a.id for a in multiturn.load()}
    # Only generated attacks are named: the root config's golden tests share this hook and keep their ids.
    tests = [name_attack(t, ids) if is_attack(t) else t for t in suite.get("tests") or []]
    if not judge_configured():
        tests = [strip_graders(t) for t in tests]
    suite["tests"] = tests
    return context
