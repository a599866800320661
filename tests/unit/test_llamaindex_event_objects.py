"""LlamaIndex's events as `handler.stream_events()` yields them live are objects, and the run's last one, the
`StopEvent`, comes from llama-index-workflows' own package (`workflows.events`), not from `llama_index`: a live
run's list was refused as "items of no known kind (AgentInput, ..., StopEvent, ...)" while its recording (each
event dumped) was read. The recorded desk's events are given back as objects of the classes and modules the
live run yields (llama-index-core 0.14.25, llama-index-workflows 2.26.1; llama_index is not in the kit's venv):
read as their dumps are; an unknown `workflows` event is refused by name, never dropped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kit.runner.frameworks import UnknownResult, trace_dict

FRAMEWORKS = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"
EVENTS = "llama_index.core.agent.workflow.workflow_events"


def _event_class(name: str, module: str) -> type:
    def model_dump(self: Any, **_: Any) -> dict[str, Any]:
        return self.fields

    return type(
        name,
        (),
        {"__module__": module, "__init__": lambda self, f: setattr(self, "fields", f), "model_dump": model_dump},
    )


def _objects(dumps: list[dict[str, Any]]) -> list[Any]:
    names = ["AgentInput", "AgentOutput", "ToolCall", "ToolCallResult"]
    out = []
    for d in dumps:
        if set(d) == {"result"}:
            out.append(_event_class("StopEvent", "workflows.events")(d))
            continue
        name = next(n for n, keys in zip(names, _KEYS, strict=True) if set(d) == keys)
        out.append(_event_class(name, EVENTS)(d))
    return out


_KEYS = [
    {"input", "current_agent_name"},
    {"response", "structured_response", "current_agent_name", "tool_calls", "retry_messages"},
    {"tool_name", "tool_kwargs", "tool_id"},
    {"tool_name", "tool_kwargs", "tool_id", "tool_output", "return_direct"},
]


@pytest.mark.parametrize("desk", ["llamaindex_desk", "llamaindex_desk-bug"])
def test_the_live_event_objects_with_their_stop_event_read_as_the_recording(desk: str) -> None:
    dumps = json.loads((FRAMEWORKS / f"{desk}.json").read_text())
    assert type(_objects(dumps)[-1]).__module__ == "workflows.events"
    live, recorded = trace_dict(_objects(dumps), "refund"), trace_dict(dumps, "refund")
    calls = [(s["name"], s["input"]) for s in live["spans"] if s["kind"] == "tool"]
    assert calls == [(s["name"], s["input"]) for s in recorded["spans"] if s["kind"] == "tool"]
    want = [("issue_refund", {"order_id": "ORD-7", "amount": 42.0})]
    assert calls == ([] if desk.endswith("-bug") else [("lookup_order", {"order_id": "ORD-7"})]) + want
    assert live["final_output"] == recorded["final_output"] == "Refunded 42 on order ORD-7."


def test_a_workflows_event_the_reader_does_not_know_is_refused_by_name() -> None:
    dumps = json.loads((FRAMEWORKS / "llamaindex_desk.json").read_text())
    odd = _event_class("HumanResponseEvent", "workflows.events")({"response": "yes"})
    with pytest.raises(UnknownResult, match="HumanResponseEvent, which the LlamaIndex reader does not read"):
        trace_dict([*_objects(dumps)[:-1], odd], "refund")
