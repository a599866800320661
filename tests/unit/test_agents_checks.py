"""Checks by agent and server: `agent:` and `server:` scope any check (once, in kit.evaluate), the reason
names the agent, the `handoff`, `allowed_tools` and `allowed_servers` checks, budgets per agent."""

from __future__ import annotations

from typing import Any

import pytest

from kit.case import parse_case
from kit.errors import KitInputError
from kit.evaluate import evaluate
from kit.trace import parse_trace


def desk(refunder: str = "billing", refunds: int = 1) -> dict[str, Any]:
    spans: list[dict[str, Any]] = [
        {"kind": "message", "role": "user", "content": "refund ORD-1", "agent": "triage"},
        {"kind": "llm", "name": "m", "agent": "triage", "tokens_in": 10, "tokens_out": 2},
        {"kind": "tool", "name": "lookup_order", "agent": "triage", "input": {"order_id": "ORD-1"}},
    ]
    refund = {"kind": "tool", "name": "issue_refund", "server": "payments", "input": {"amount": 5}}
    if refunder == "triage":
        spans += [{**refund, "agent": "triage"} for _ in range(refunds)]
    at = len(spans)
    spans.append({"kind": "llm", "name": "m", "agent": "billing", "tokens_in": 30, "tokens_out": 5})
    if refunder == "billing":
        spans += [{**refund, "agent": "billing"} for _ in range(refunds)]
    spans.append({"kind": "message", "role": "assistant", "content": "Refunded.", "agent": "billing"})
    return {"case_id": "c", "spans": spans, "handoffs": [{"from": "triage", "to": "billing", "at": at}]}


def run(trace: dict[str, Any], *checks: dict[str, Any]) -> dict[str, tuple[str, str]]:
    case = parse_case({"id": "c", "input": "x", "checks": list(checks)}, file="c.yaml", base_dir=None, invariants={})
    return {r.name: (r.outcome, r.reason) for r in evaluate(parse_trace(trace), case).results}


ONLY_BILLING = {"type": "not_called", "tool": "issue_refund", "agent": "triage"}


def test_agent_scopes_any_check_and_the_failure_names_the_agent() -> None:
    clean = run(desk(), ONLY_BILLING, {"type": "called", "tool": "issue_refund", "agent": "billing"})
    assert [o for o, _ in clean.values()] == ["pass", "pass"]
    bug = run(desk("triage"), ONLY_BILLING)
    assert bug == {
        "not_called:issue_refund@agent:triage": ("fail", "agent triage: forbidden issue_refund was called 1 time")
    }


def test_at_most_per_agent_names_the_agent() -> None:
    got = run(desk(refunds=2), {"type": "called_at_most", "tool": "issue_refund", "n": 1, "agent": "billing"})
    assert got["called_at_most:issue_refund@agent:billing"] == (
        "fail",
        "agent billing: issue_refund called 2 times, at most 1 allowed",
    )


def test_output_checks_read_the_agents_own_answer() -> None:
    got = run(
        desk(),
        {"type": "contains", "text": "refunded", "agent": "billing"},
        {"type": "contains", "text": "refunded", "agent": "triage", "name": "triage answers"},
    )
    assert got["contains@agent:billing"][0] == "pass"
    assert got["triage answers"] == ("fail", "agent triage: output lacks 'refunded'")


def test_budgets_per_agent() -> None:
    got = run(
        desk(),
        {"type": "budget", "tokens": 20, "agent": "triage"},
        {"type": "budget", "tokens": 20, "agent": "billing"},
    )
    assert got["budget@agent:triage"] == ("pass", "agent triage: tokens 12 <= 20")
    assert got["budget@agent:billing"] == ("fail", "agent billing: tokens 35, at most 20 allowed")


def test_an_agent_the_run_does_not_have_fails_naming_it() -> None:
    got = run(desk(), {"type": "not_called", "tool": "issue_refund", "agent": "biling"})
    assert got["not_called:issue_refund@agent:biling"] == (
        "fail",
        "agent biling: no such agent in this run (its agents: triage, billing)",
    )
    one = run({"case_id": "c", "spans": []}, {"type": "not_called", "tool": "x", "agent": "billing"})
    assert one["not_called:x@agent:billing"][0] == "fail"
    assert "a run of one agent that names none" in one["not_called:x@agent:billing"][1]


def test_server_scopes_tool_checks() -> None:
    got = run(
        desk(),
        {"type": "called", "tool": "issue_refund", "server": "payments"},
        {"type": "called", "tool": "lookup_order", "server": "payments"},
    )
    assert got["called:issue_refund@server:payments"][0] == "pass"
    assert got["called:lookup_order@server:payments"] == ("fail", "server payments: lookup_order never called")


def test_handoff_from_to_order_and_count() -> None:
    rule = {"type": "handoff", "from": "triage", "to": "billing", "before": "issue_refund", "max": 1}
    assert run(desk(), rule) == {"handoff:triage>billing": ("pass", "triage handed off to billing 1 time")}
    bad = run(desk("triage"), rule)
    assert bad == {
        "handoff:triage>billing": ("fail", "issue_refund (step 2) called before triage handed off to billing")
    }
    none = {**desk(), "handoffs": []}
    assert run(none, {"type": "handoff", "from": "triage", "to": "billing"})["handoff:triage>billing"] == (
        "fail",
        "triage never handed off to billing",
    )
    many = {
        **desk(),
        "handoffs": [
            {"from": "triage", "to": "billing", "at": 1},
            {"from": "billing", "to": "triage", "at": 2},
            {"from": "triage", "to": "billing", "at": 3},
        ],
    }
    assert run(many, {"type": "handoff", "max": 2}) == {"handoff": ("fail", "3 handoffs, at most 2 allowed")}
    assert run(many, {"type": "handoff", "from": "triage", "max": 1})["handoff"] == (
        "fail",
        "triage handed off 2 times, at most 1 allowed",
    )
    assert run(many, {"type": "handoff", "to": "acct"})["handoff"][1] == (
        "no agent acct in this run (its agents: triage, billing)"
    )


def test_handoff_scoped_to_an_agent_sees_its_own() -> None:
    got = run(desk(), {"type": "handoff", "max": 0, "agent": "billing", "via": "tool"})
    assert got["handoff@agent:billing"] == ("pass", "agent billing: 0 handoffs")


@pytest.mark.parametrize(
    ("check", "message"),
    [
        ({"type": "handoff", "min": 3, "max": 1}, "'min' (3) is above 'max' (1)"),
        ({"type": "handoff", "from": "a", "to": "a"}, "name the same agent"),
        ({"type": "handoff", "before": "x", "max": 0}, "'before' needs a handoff"),
        ({"type": "handoff", "form": "a"}, "unknown parameter 'form' (did you mean 'from'?)"),
        ({"type": "called", "tool": "x", "agent": ""}, "agent must be the name of an agent"),
        ({"type": "called", "tool": "x", "server": 3}, "server must be the name of an MCP server"),
        ({"type": "allowed_tools", "tools": []}, "parameter 'tools'"),
    ],
)
def test_bad_scoped_checks_are_refused_at_load(check: dict[str, Any], message: str) -> None:
    with pytest.raises(KitInputError, match=r"c\.yaml") as e:
        run(desk(), check)
    assert message in str(e.value)


def test_allowed_tools_and_servers() -> None:
    got = run(
        desk(),
        {"type": "allowed_tools", "tools": ["lookup_order"]},
        {"type": "allowed_tools", "tools": ["lookup_order", "issue_refund"], "name": "both"},
        {"type": "allowed_servers", "servers": ["files"]},
        {"type": "allowed_servers", "servers": ["payments"], "local": False, "name": "no local"},
        {"type": "allowed_tools", "tools": ["issue_refund"], "agent": "billing", "name": "billing's tools"},
    )
    assert got["allowed_tools"] == ("fail", "outside the allowed tools: issue_refund called 1 time")
    assert got["both"][0] == "pass"
    assert got["allowed_servers"] == ("fail", "calls outside the allowed servers: issue_refund on payments")
    assert got["no local"] == ("fail", "calls outside the allowed servers: lookup_order on no MCP server")
    assert got["billing's tools"][0] == "pass"


def test_scopes_combine_with_turns() -> None:
    trace = desk("triage")
    for s in trace["spans"]:
        s["turn"] = 0
    got = run(trace, {"type": "not_called", "tool": "issue_refund", "agent": "triage", "turn": 0})
    assert got["not_called:issue_refund@turn0@agent:triage"][0] == "fail"
