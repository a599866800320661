"""`run_agent`: one run of the reference agent on a fresh sandbox, returned as a contract trace dict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit.agent.cassette import Cassette
from kit.agent.conversation import POLICIES, VARIANTS, Conversation

__all__ = ["POLICIES", "VARIANTS", "run_agent"]


def _messages(case_input: Any) -> list[dict[str, str]]:
    if isinstance(case_input, str):
        return [{"role": "user", "content": case_input}]
    if isinstance(case_input, list) and all(
        isinstance(m, dict) and isinstance(m.get("content"), str) and m.get("role") in ("user", "assistant")
        for m in case_input
    ):
        return [{"role": m["role"], "content": m["content"]} for m in case_input]
    raise ValueError("case input must be a string or a list of {role: user|assistant, content} messages")


def run_agent(
    case_input: Any,
    *,
    case_id: str,
    attempt: int = 0,
    context: dict[str, Any] | None = None,
    variant: str | None = None,
    policy: str = "deterministic",
    cassette: str | Path | Cassette | None = None,
    record: bool = False,
) -> dict[str, Any]:
    """Run the support-desk agent once on a message (or a message list, answered in one go). With
    `cassette` and not `record`, tools (and the model) replay from the cassette and no database is opened;
    with `record`, the live run is written to it.

    The fault variants change the deterministic policy's decisions; with the model policy a variant only
    switches off the guard rules (and, for ignore_step_cap, the step cap) that its fault needs."""
    messages = _messages(case_input)
    conversation = Conversation(
        case_id=case_id,
        attempt=attempt,
        context=context,
        variant=variant,
        policy=policy,
        cassette=cassette,
        record=record,
    )
    with conversation:
        return conversation.respond(messages)
