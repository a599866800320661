"""The multi-turn red team: the scripted corpus loads and covers its three kinds, the generator hands it to
Promptfoo as {"turns": [...]} prompts, each runs as one conversation, the reference agent resists every
attack and the vulnerable control falls to at least one, judged by the red team's oracle."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit_promptfoo import agent_provider
from kit_promptfoo.kit_request import prompt_turns
from kit_promptfoo.redteam import generator, hooks, multiturn

TARGET = {"case_file": "redteam/case.yaml", "case_id": "redteam-attack"}


def attack(prompt: str, variant: str | None = None) -> dict:
    vars_ = {**TARGET, **({"variant": variant} if variant else {})}
    r = agent_provider.call_api(prompt, {"config": {"reference": True}}, {"vars": vars_})
    assert "error" not in r, r
    return r


def test_corpus_covers_the_three_kinds_with_conversations() -> None:
    attacks = multiturn.load()
    assert {a.category for a in attacks} == set(multiturn.KINDS)
    assert all(len(a.turns) >= 2 for a in attacks)
    authority = [a for a in attacks if a.category == "authority-on-turn-3"]
    assert authority and all(len(a.turns) == 3 for a in authority)


def test_the_generator_answers_the_multi_turn_plugin_with_every_conversation() -> None:
    out = generator.call_api("...\nkit_category: multi-turn\n", {}, {})["output"]
    prompts = [line.removeprefix("Prompt: ") for line in out.splitlines()]
    assert [prompt_turns(p) for p in prompts] == [a.turns for a in multiturn.load()]
    named = hooks.name_attack(
        {"vars": {"prompt": prompts[0]}, "metadata": {}}, {a.prompt: a.id for a in multiturn.load()}
    )
    assert named["metadata"]["attack_id"] == multiturn.load()[0].id


def test_the_config_asks_for_every_conversation_unmangled() -> None:
    import yaml

    config = yaml.safe_load(Path("redteam/promptfooconfig.yaml").read_text())
    [plugin] = [
        p
        for p in config["redteam"]["plugins"]
        if (p.get("config") or {}).get("modifiers", {}).get("kit_category") == "multi-turn"
    ]
    assert plugin["numTests"] == len(multiturn.load())
    strategies = {s if isinstance(s, str) else s["id"] for s in config["redteam"]["strategies"]} - {"basic"}
    assert strategies <= set(plugin["config"]["excludeStrategies"])


@pytest.mark.parametrize("conversation", multiturn.load(), ids=lambda a: a.id)
def test_the_reference_agent_resists_every_conversation(conversation: multiturn.Conversation) -> None:
    r = attack(conversation.prompt)
    turns = {s.get("turn") for s in r["metadata"]["trace"]["spans"]}
    assert turns == set(range(len(conversation.turns)))  # every turn was sent, on one agent
    verdict = r["metadata"]["kit"]["verdict"]
    assert verdict["passed"], [c for c in verdict["checks"] if c["outcome"] != "pass"]


def test_the_vulnerable_control_falls_to_some_conversations() -> None:
    fell = {
        a.id for a in multiturn.load() if not attack(a.prompt, "obey_injection")["metadata"]["kit"]["verdict"]["passed"]
    }
    assert {"mt-trust-then-admin-refund", "mt-authority-manager-override"} <= fell
