"""Promptfoo extension hook (beforeAll): name each attack, and let Promptfoo's LLM graders take part only
when a judge is configured.

Naming: each generated test gets `metadata.case_id` = `redteam/<attack id>/<strategy>` (the attack found by
its original text in any corpus the generator may have answered from: the settings', the generic one, the
scripted conversations), so the store keeps one case per attack and strategy. An attack no corpus holds (a
model wrote it) is `redteam/<plugin>-<digest of its text>/<strategy>`: its real plugin, never "unknown".

Every red-team plugin attaches its own LLM-graded assertion (`promptfoo:redteam:<plugin>`). With no judge
model configured (KIT_JUDGE_MODEL unset) those assertions cannot be graded offline: this hook removes them
from each test and lists them in the test's `metadata.kitNotGraded`, which the oracle assertion reports as
"not graded" - never as a pass. Pass and fail then rest on the oracle's invariants alone. With a judge
configured the graders stay: Promptfoo sends their requests to `redteam.provider` (redteam/generator.py),
which forwards them to the kit's one judge.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
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


def _texts(test: dict[str, Any]) -> list[str]:
    """What the attack said before a strategy changed it: Promptfoo's `originalText`, else the var it was
    injected into (the config's `injectVar`: `prompt`, `input`, ...)."""
    meta = test.get("metadata") or {}
    vars_ = test.get("vars") or {}
    found = [meta.get("originalText"), *vars_.values()]
    return [str(t).strip() for t in found if isinstance(t, str) and t.strip()]


def attack_name(test: dict[str, Any], ids: dict[str, str]) -> str:
    """The attack's id in a corpus, else `<plugin>-<digest>` of its text."""
    texts = _texts(test)
    for text in texts:
        if text in ids:
            return ids[text]
    plugin = str((test.get("metadata") or {}).get("pluginId") or "attack").replace("/", "-")
    digest = hashlib.sha256((texts[0] if texts else "").encode("utf-8")).hexdigest()[:8]
    return f"{plugin}-{digest}"


def name_attack(test: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    meta = dict(test.get("metadata") or {})
    attack = attack_name(test, ids)
    meta.setdefault("case_id", f"redteam/{attack}/{meta.get('strategyId') or 'basic'}")
    meta.setdefault("attack_id", attack)
    return {**test, "metadata": meta}


def known_attacks() -> dict[str, str]:
    """Attack text -> id over every corpus the generator may have answered from: the configured one (when
    it loads), the generic one and the scripted conversations."""
    ids: dict[str, str] = {}
    paths: list[Path] = [corpus.GENERIC]
    # A broken setting is the generator's error to report, at generation.
    with contextlib.suppress(Exception):
        paths.append(corpus.configured())
    for path in paths:
        try:
            ids |= {a.text: a.id for a in corpus.load(path)}
        except (OSError, ValueError):
            continue
    return ids | {a.prompt: a.id for a in multiturn.load()}


def is_attack(test: dict[str, Any]) -> bool:
    return bool((test.get("metadata") or {}).get("pluginId"))


def beforeAll(context: dict[str, Any], options: dict[str, Any] | None = None) -> dict[str, Any]:
    suite = context["suite"]
    ids = known_attacks()
    # Only generated attacks are named: the root config's golden tests share this hook and keep their ids.
    tests = [name_attack(t, ids) if is_attack(t) else t for t in suite.get("tests") or []]
    if not judge_configured():
        tests = [strip_graders(t) for t in tests]
    suite["tests"] = tests
    return context
