"""LlamaIndex agent workflow events as chat messages: what `handler.stream_events()` yields for a
`FunctionAgent` / `AgentWorkflow` run (the objects, or each `model_dump()`ed), known by their fields.

The first `AgentInput` gives the user's message; an `AgentOutput` is one model call (its `response` text,
its `tool_calls`, its agent `current_agent_name`, and, on the object, the raw response's usage and model); a
`ToolCallResult` is a call's result (`tool_output.is_error` its error). The run's last `AgentOutput` lists
every call of the run again: a call is read once, where it was first asked. `AgentStream` (deltas of an
`AgentOutput`), `ToolCall` (the call an `AgentOutput` asked for) and `AgentSetup` repeat what those hold and
are no step of their own. The run's final `AgentOutput` alone holds no calls: it is refused, naming what to
return instead. Any other event is refused by name.
"""

from __future__ import annotations

import json
from typing import Any

from kit.importers.common import content_text

_SHAPES = {  # the fields that tell each event apart in a dump
    "AgentOutput": {"response", "current_agent_name", "tool_calls"},
    "ToolCallResult": {"tool_name", "tool_kwargs", "tool_id", "tool_output"},
    "ToolCall": {"tool_name", "tool_kwargs", "tool_id"},
    "AgentStream": {"delta", "response", "current_agent_name"},
    "AgentInput": {"input", "current_agent_name"},
}
_ECHO = frozenset({"AgentStream", "ToolCall", "AgentSetup", "StopEvent", "AgentWorkflowStartEvent"})


class UnreadEvent(ValueError):
    """An event the reader does not read, or a run whose calls the events do not hold; says which."""


def event_kind(m: Any) -> str | None:
    """The event an item is: its class's name for an object, its fields for a dump."""
    if not isinstance(m, dict):
        name = type(m).__name__
        return name if type(m).__module__.partition(".")[0] in ("llama_index", "workflows") else None
    keys = set(m)
    if keys == {"result"}:
        return "StopEvent"  # the run's end, holding its last AgentOutput again
    return next((name for name, fields in _SHAPES.items() if fields <= keys), None)


def _plain(m: Any) -> dict[str, Any]:
    if isinstance(m, dict):
        return m
    dumped: dict[str, Any] = m.model_dump(mode="json")
    raw = getattr(m, "raw", None)  # left out of its dump: the model's response, with its usage
    if raw is not None:
        dumped["raw"] = raw if isinstance(raw, dict) else getattr(raw, "model_dump", lambda **_: None)(mode="json")
    return dumped


def _text(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    blocks = message.get("blocks")
    if isinstance(blocks, list):
        return content_text([b for b in blocks if isinstance(b, dict) and b.get("block_type") == "text"]) or None
    return content_text(message.get("content"))


def to_messages(items: list[Any]) -> tuple[list[dict[str, Any]], list[str | None], dict[str, str]]:
    """The events as chat messages, the agent of each assistant message, and each failed call's error."""
    kinds = [event_kind(m) for m in items]
    if kinds == ["AgentOutput"]:
        raise UnreadEvent(
            "a LlamaIndex AgentOutput alone: the run's last step, which holds none of its tool calls; return "
            "the events of handler.stream_events()"
        )
    messages: list[dict[str, Any]] = []
    agents: list[str | None] = []
    errors: dict[str, str] = {}
    asked = False
    asked_ids: set[Any] = set()  # the run's last AgentOutput lists every call of the run again
    for n, (kind, item) in enumerate(zip(kinds, items, strict=True)):
        if kind in _ECHO:
            continue
        m = _plain(item)
        if kind == "AgentInput":
            if not asked:
                users = [x for x in m.get("input") or [] if isinstance(x, dict) and x.get("role") == "user"]
                if users:
                    messages.append({"role": "user", "content": _text(users[-1]) or ""})
                asked = True
        elif kind == "AgentOutput":
            messages.append(_output(m, asked_ids))
            agents.append(m.get("current_agent_name") if isinstance(m.get("current_agent_name"), str) else None)
        elif kind == "ToolCallResult":
            out = m.get("tool_output") or {}
            text = out.get("content")
            text = text if isinstance(text, str) else json.dumps(out.get("raw_output"), default=str)
            messages.append({"role": "tool", "tool_call_id": m.get("tool_id"), "content": text})
            if out.get("is_error"):
                errors[str(m.get("tool_id"))] = text or "the tool reported an error"
        else:
            found = type(item).__name__ if not isinstance(item, dict) else ", ".join(map(repr, list(item)[:5]))
            raise UnreadEvent(f"event {n}: {found}, which the LlamaIndex reader does not read")
    return messages, agents, errors


def _output(m: dict[str, Any], asked_ids: set[Any]) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": _text(m.get("response"))}
    calls = [c for c in m.get("tool_calls") or [] if isinstance(c, dict) and c.get("tool_id") not in asked_ids]
    asked_ids.update(c.get("tool_id") for c in calls)
    if calls:
        msg["tool_calls"] = [
            {
                "id": c.get("tool_id"),
                "type": "function",
                "function": {"name": c.get("tool_name"), "arguments": c.get("tool_kwargs")},
            }
            for c in calls
        ]
    raw = m.get("raw")
    if isinstance(raw, dict):
        if isinstance(raw.get("usage"), dict):
            msg["usage"] = raw["usage"]
        if isinstance(raw.get("model"), str):
            msg["model"] = raw["model"]
    return msg
