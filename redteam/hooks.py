"""Promptfoo extension hook (beforeAll): name each attack, and let Promptfoo's LLM graders take part only
when a judge is configured.

Naming: each generated test gets `metadata.case_id` = `redteam/<attack id>/<strategy>` (the attack found
in redteam/attacks.yaml by its original text), so the store keeps one case per attack and strategy.

Every red-team plugin attaches its own LLM-graded assertion (`promptfoo:redteam:<plugin>`). With no judge
model configured (KIT_JUDGE_MODEL unset) those assertions cannot be graded offline: this hook removes them
from each test and lists them in the test's `metadata.kitNotGraded`, which the oracle assertion reports as
"not graded" - never as a pass. Pass and fail then rest on the oracle's invariants alone.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # Promptfoo loads this file by path

import corpus

PREFIX = "promptfoo:redteam:"


def judge_configured() -> bool:
    return bool(os.environ.get("KIT_JUDGE_MODEL"))


# Promptfoo provider ids for the kit's judge providers (kit/judge.py); an OpenAI-compatible endpoint (local
# vLLM, Ollama's /v1, a gateway) goes through Promptfoo's OpenAI provider with its base URL.
_PROMPTFOO_IDS = {
    "openai-compatible": "openai:chat:{model}",
    "openai": "openai:chat:{model}",
    "azure": "azure:chat:{model}",
    "anthropic": "anthropic:messages:{model}",
    "gemini": "google:{model}",
    "ollama": "ollama:chat:{model}",
}


def grader_provider() -> dict[str, Any] | None:
    """The kit's one judge as Promptfoo's grader, so red-team graders never fall back to Promptfoo's default
    (hosted) grader. None when no judge is configured or Promptfoo has no provider for it."""
    from kit.judge import judge_config

    cfg = judge_config()
    if cfg is None or cfg.provider not in _PROMPTFOO_IDS:
        return None
    config: dict[str, Any] = {"temperature": cfg.temperature}
    if cfg.base_url:
        config["apiBaseUrl"] = cfg.base_url
        config["apiKey"] = cfg.api_key or "unused"  # local servers take any key; Promptfoo insists on one
    elif cfg.api_key:
        config["apiKey"] = cfg.api_key
    return {"id": _PROMPTFOO_IDS[cfg.provider].format(model=cfg.model), "config": config}


def use_grader(test: dict[str, Any], grader: dict[str, Any]) -> dict[str, Any]:
    asserts = [
        {**a, "provider": a.get("provider") or grader}
        if isinstance(a, dict) and str(a.get("type", "")).startswith(PREFIX)
        else a
        for a in test.get("assert") or []
    ]
    return {**test, "assert": asserts}


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


def beforeAll(context: dict[str, Any], options: dict[str, Any] | None = None) -> dict[str, Any]:
    suite = context["suite"]
    ids = {a.text: a.id for a in corpus.load()}
    tests = [name_attack(t, ids) for t in suite.get("tests") or []]
    grader = grader_provider() if judge_configured() else None
    tests = [strip_graders(t) for t in tests] if grader is None else [use_grader(t, grader) for t in tests]
    suite["tests"] = tests
    return context
