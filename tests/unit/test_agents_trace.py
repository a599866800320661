"""Agents in the trace: every span may name its agent and MCP server, the trace holds the agent tree and the
handoffs, a run of one agent is unchanged, and a tree that does not hold together is a clear error."""

from __future__ import annotations

import pytest

from kit.errors import KitInputError
from kit.trace import parse_trace

DESK = {
    "case_id": "desk",
    "spans": [
        {"kind": "message", "role": "user", "content": "refund ORD-1", "agent": "triage"},
        {"kind": "llm", "name": "m", "agent": "triage", "tokens_in": 10, "tokens_out": 2},
        {"kind": "tool", "name": "lookup_order", "agent": "triage", "input": {"order_id": "ORD-1"}},
        {"kind": "llm", "name": "m", "agent": "billing", "tokens_in": 30, "tokens_out": 5},
        {"kind": "tool", "name": "issue_refund", "agent": "billing", "server": "payments", "input": {"amount": 5}},
        {"kind": "message", "role": "assistant", "content": "Refunded.", "agent": "billing"},
    ],
    "handoffs": [{"from": "triage", "to": "billing", "at": 3}],
    "final_output": "Refunded.",
}


def test_the_tree_is_read_from_spans_and_handoffs() -> None:
    t = parse_trace(DESK)
    assert [(a.name, a.parent, a.via, a.at) for a in t.agent_tree] == [
        ("triage", None, None, 0),
        ("billing", "triage", "handoff", 3),
    ]
    assert t.agent_names == ("triage", "billing")
    assert t.server_names == ("payments",)


def test_an_agent_view_holds_its_calls_messages_and_handoffs() -> None:
    t = parse_trace(DESK)
    billing = t.for_agent("billing")
    assert [s.name for s in billing.tool_calls] == ["issue_refund"]
    assert billing.final_output == "Refunded."
    assert billing.totals["tokens"] == 35
    assert [(h.from_, h.to, h.at) for h in billing.handoffs] == [("triage", "billing", 0)]
    triage = t.for_agent("triage")
    assert triage.final_output is None  # triage said nothing to the customer
    assert [s.name for s in triage.tool_calls] == ["lookup_order"]
    assert [h.at for h in triage.handoffs] == [3]  # after its three spans: user, llm, lookup_order
    assert [s.name for s in t.for_server("payments").tool_calls] == ["issue_refund"]


def test_a_run_of_one_agent_dumps_as_before() -> None:
    raw = {"case_id": "c", "spans": [{"kind": "tool", "name": "x", "input": {}}]}
    t = parse_trace(raw)
    dump = t.model_dump(mode="json")
    assert "agents" not in dump and "handoffs" not in dump
    assert "agent" not in dump["spans"][0] and "server" not in dump["spans"][0]
    assert t.agent_tree == ()


def test_handoffs_dump_under_their_contract_names() -> None:
    dump = parse_trace(DESK).model_dump(mode="json")
    assert dump["handoffs"][0]["from"] == "triage"
    assert parse_trace(dump).handoffs == parse_trace(DESK).handoffs
    assert dump["spans"][4]["server"] == "payments"


def test_declared_tree_is_kept() -> None:
    raw = {**DESK, "agents": [{"name": "triage", "id": "a1"}, {"name": "billing", "parent": "triage", "via": "tool"}]}
    t = parse_trace(raw)
    assert [(a.name, a.id, a.via) for a in t.agent_tree] == [("triage", "a1", None), ("billing", None, "tool")]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"agents": [{"name": "triage", "parent": "billing"}, {"name": "billing", "parent": "triage"}]},
            "parent links form a cycle: triage -> billing -> triage",
        ),
        ({"agents": [{"name": "triage"}, {"name": "triage"}]}, "agents.1: agent 'triage' is listed twice"),
        ({"agents": [{"name": "triage", "parent": "boss"}]}, "parent 'boss' of 'triage' is not an agent"),
        ({"agents": [{"name": "triage"}]}, "agent 'billing' is not an agent of the trace (known: triage)"),
        ({"handoffs": [{"from": "triage", "to": "billing", "at": 99}]}, "at 99 is past the end of the trace"),
        ({"handoffs": [{"from": "triage", "to": "triage", "at": 1}]}, "'triage' hands off to itself"),
        (
            {"handoffs": [{"from": "triage", "to": "billing", "at": 3}, {"from": "billing", "to": "triage", "at": 1}]},
            "handoffs.1: at 1 comes before",
        ),
        ({"spans": [{"kind": "tool", "name": "x", "agent": 5}]}, "spans.0.agent"),
    ],
)
def test_a_tree_that_does_not_hold_is_a_clear_error(change: dict, message: str) -> None:
    with pytest.raises(KitInputError, match="invalid trace") as e:
        parse_trace({**DESK, **change}, file="t.json")
    assert message in str(e.value)
    assert "t.json" in str(e.value) and "desk" in str(e.value)


def test_a_turn_view_keeps_the_handoffs_of_its_turn() -> None:
    raw = {
        "case_id": "c",
        "spans": [
            {"kind": "message", "role": "user", "content": "a", "turn": 0, "agent": "triage"},
            {"kind": "message", "role": "assistant", "content": "b", "turn": 0, "agent": "triage"},
            {"kind": "message", "role": "user", "content": "c", "turn": 1, "agent": "triage"},
            {"kind": "tool", "name": "issue_refund", "turn": 1, "agent": "billing"},
        ],
        "handoffs": [{"from": "triage", "to": "billing", "at": 3, "turn": 1}],
    }
    t = parse_trace(raw)
    assert t.for_turn(0).handoffs == []
    assert [h.at for h in t.for_turn(1).handoffs] == [1]
