"""Which agent made each step, from what the frameworks return: the OpenAI Agents SDK's run items (each
carries its agent; a handoff is its own item, an agent called as a tool has its tool's origin), LangChain /
LangGraph messages (an AI message's `name` is its agent, as `create_react_agent(name=...)` and the
supervisor set it) and pydantic-ai's messages (a delegate's run is inside a tool call; its agent is named by
the tool). Each function takes the trace dict the readers made and adds `agent` to its spans and the
`handoffs` between agents. A run of one agent the framework names (the Agents SDK's agent, LangGraph's
`create_react_agent(name=...)`) carries that name on every step, so `agent: X` checks judge X's calls; a run
of one agent that names none is left as it is."""

from __future__ import annotations

from typing import Any


def _name(agent: Any) -> str | None:
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and name else None


def _raw(item: Any) -> dict[str, Any]:
    raw = getattr(item, "raw_item", None)
    if isinstance(raw, dict):
        return raw
    dump = getattr(raw, "model_dump", None)
    return dump(mode="json", exclude_none=True) if callable(dump) else {}


def agents_sdk(trace: dict[str, Any], result: Any) -> dict[str, Any]:
    """Agents and handoffs from an Agents SDK RunResult's `new_items`."""
    items = list(getattr(result, "new_items", None) or [])
    by_call: dict[str, str] = {}
    handed: dict[str, tuple[str, str]] = {}
    as_tool: dict[str, str] = {}
    first: str | None = None
    for item in items:
        agent = _name(getattr(item, "agent", None))
        first = first or agent
        call_id = _raw(item).get("call_id")
        if getattr(item, "type", None) == "handoff_output_item":
            src, dst = _name(getattr(item, "source_agent", None)), _name(getattr(item, "target_agent", None))
            if call_id and src and dst:
                handed[call_id] = (src, dst)
            continue
        if call_id and agent:
            by_call.setdefault(call_id, agent)
        origin = getattr(item, "tool_origin", None)
        if call_id and getattr(getattr(origin, "type", None), "value", None) == "agent_as_tool":
            sub = getattr(origin, "agent_name", None)
            if isinstance(sub, str) and sub:
                as_tool[call_id] = sub
    first = first or _name(getattr(result, "last_agent", None))
    if first is None:
        return trace  # one agent that names none: nothing changes for it
    if not handed and not as_tool and len(set(by_call.values()) | {first}) == 1:
        return named_alone(trace, first)
    current = first
    handoffs: list[dict[str, Any]] = []
    for i, span in enumerate(trace.get("spans", [])):
        call_id = span.get("tool_call_id")
        if span.get("kind") == "tool" and call_id in by_call:
            current = by_call[call_id]
        span["agent"] = current
        if call_id in as_tool:
            handoffs.append({"from": current, "to": as_tool[call_id], "via": "tool", "at": i})
        if call_id in handed:
            src, dst = handed[call_id]
            span["agent"] = src
            handoffs.append({"from": src, "to": dst, "via": "handoff", "at": i + 1})
            current = dst
    trace["handoffs"] = handoffs
    return trace


def named_alone(trace: dict[str, Any], name: str) -> dict[str, Any]:
    """A run of one agent its framework names: every step is that agent's; no handoffs."""
    for span in trace.get("spans", []):
        span["agent"] = name
    return trace


def by_message_name(trace: dict[str, Any], names: list[str | None], *, one_is_named: bool = False) -> dict[str, Any]:
    """Agents and handoffs from the name of each assistant message (LangChain's AI messages, in order): a
    step takes the agent of the assistant message it belongs to or follows; when the name changes, one agent
    handed off to the next, before the first step of the new one. `one_is_named`: a run of one agent whose
    messages name it carries the name (a framework's agent name; OpenAI's `name` field is the caller's own)."""
    distinct = {n for n in names if n}
    if len(distinct) == 1 and one_is_named:
        return named_alone(trace, next(iter(distinct)))
    if len(distinct) < 2:
        return trace  # one agent (or none named): nothing changes for it
    spans = trace.get("spans", [])
    # The spans an assistant message becomes start with its llm span (the readers write one per message).
    starts = [i for i, s in enumerate(spans) if s.get("kind") == "llm"]
    if len(starts) != len(names):
        return trace  # the steps do not line up with the messages: never a wrong attribution
    owner: list[str | None] = [None] * len(spans)
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(spans)
        for i in range(start, end):
            owner[i] = names[k]
    first = next(n for n in names if n)
    current = first
    handoffs: list[dict[str, Any]] = []
    for i, span in enumerate(spans):
        who = owner[i]
        if span.get("kind") == "message" and span.get("role") == "assistant" and who is None:
            who = current
        if who and who != current:
            handoffs.append({"from": current, "to": who, "via": "handoff", "at": i})
            current = who
        span["agent"] = who or current
    trace["handoffs"] = handoffs
    return trace
