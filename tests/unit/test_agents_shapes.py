"""Agents in the shapes an agent may return without a framework: OpenAI chat messages whose assistant
messages carry `name` (who said it) are read as several agents; without names the run is one agent, as before."""

from __future__ import annotations

from kit.runner.frameworks import trace_dict
from kit.trace import parse_trace

CALL = {"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": "{}"}}


def test_named_assistant_messages_are_agents() -> None:
    msgs = [
        {"role": "user", "content": "refund"},
        {"role": "assistant", "name": "triage", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "{}"},
        {"role": "assistant", "name": "billing", "content": "done"},
    ]
    trace = parse_trace({"case_id": "c", **trace_dict(msgs, "c")})
    assert [(s.kind, s.agent) for s in trace.spans] == [
        ("message", "triage"),
        ("llm", "triage"),
        ("tool", "triage"),
        ("llm", "billing"),
        ("message", "billing"),
    ]
    assert [(h.from_, h.to, h.at) for h in trace.handoffs] == [("triage", "billing", 3)]


def test_unnamed_or_one_name_is_one_agent_as_before() -> None:
    for name in (None, "desk"):
        extra = {"name": name} if name else {}
        msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello", **extra}]
        dump = trace_dict(msgs, "c")
        assert "handoffs" not in dump and all("agent" not in s for s in dump["spans"])
