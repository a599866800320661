"""MCP tool calls in the trace, from what the agent exports and what it returns: real spans of the OpenAI
Agents SDK desk using the shop MCP server (scripts/mcp_exports.py: OpenInference's Agents SDK and MCP
instrumentations, and the `mcp` SDK's own spans from the agent's process and the server's), OpenLLMetry's MCP
span shape, and the Agents SDK's RunResult run live against the model double (its shop server one process for
the module, over streamable HTTP: the runs only read from it)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from kit.importers import import_file
from kit.trace import parse_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "mcp"
HERE = Path(__file__).resolve().parent
CALLS = [
    (
        "lookup_order",
        {"order_id": "ORD-7"},
        {"order_id": "ORD-7", "status": "delivered", "total": 42.0, "email": "ann@example.com"},
    ),
    (
        "issue_refund",
        {"order_id": "ORD-7", "amount": 42.0},
        {"refund_id": "R-ORD-7", "order_id": "ORD-7", "amount": 42.0},
    ),
]


def tools(t: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in t["spans"] if s["kind"] == "tool"]


def test_openinference_export_has_each_mcp_call_once_with_its_server() -> None:
    [t] = import_file(str(DATA / "agents_openinference.json"))
    # The framework's tool span, the SDK's client span and the server's span are one call; the handshake and
    # the tool listings are no steps.
    assert [(s["name"], s["input"], s["output"]) for s in tools(t)] == CALLS
    assert {s.get("server") for s in tools(t)} == {"shop"}
    assert t["final_output"] == "Refunded 42 on order ORD-7."
    trace = parse_trace(t)
    assert trace.server_names == ("shop",)
    assert [s.name for s in trace.for_server("shop").spans] == ["lookup_order", "issue_refund"]


def test_sdk_spans_alone_give_the_calls_and_their_server() -> None:
    # Only the `mcp` SDK's spans: no agent span joins the calls (one trace each), and the SDK records no
    # arguments or results; the tool's name and its server are there.
    traces = import_file(str(DATA / "agents_genai.json"))
    assert [(s["name"], s.get("server")) for t in traces for s in tools(t)] == [
        ("lookup_order", "shop"),
        ("issue_refund", "shop"),
    ]


def _span(span_id: str, name: str, attrs: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "context": {"trace_id": "0x" + "ab" * 16, "span_id": "0x" + span_id.rjust(16, "0")},
        "parent_id": ("0x" + parent.rjust(16, "0")) if parent else None,
        "start_time": "2026-01-01T00:00:00.000000Z",
        "end_time": "2026-01-01T00:00:00.100000Z",
        "attributes": attrs,
        "status": {"status_code": "UNSET"},
        "resource": {"attributes": {"service.name": "agent"}},
        "kind": "SpanKind.CLIENT",
    }


def test_openllmetry_mcp_tool_spans(tmp_path: Path) -> None:
    # OpenLLMetry 0.62.4's shape (opentelemetry/instrumentation/mcp/instrumentation.py, _handle_tool_call):
    # it cannot instrument mcp 2.x (it wraps mcp.shared.session.BaseSession, gone in mcp 2), so these spans
    # are written as its source writes them.
    result = {"content": [{"type": "text", "text": json.dumps(CALLS[0][2])}], "isError": False}
    spans = [
        _span(
            "1", "mcp.client.session", {"traceloop.span.kind": "session", "traceloop.entity.name": "mcp.client.session"}
        ),
        _span("2", "tools/list.mcp", {"traceloop.entity.input": "{}"}, "1"),
        _span(
            "3",
            "lookup_order.tool",
            {
                "traceloop.span.kind": "tool",
                "traceloop.entity.name": "lookup_order",
                "traceloop.entity.input": json.dumps({"tool_name": "lookup_order", "arguments": CALLS[0][1]}),
                "traceloop.entity.output": json.dumps(result),
                "mcp.server.name": "shop",
            },
            "1",
        ),
    ]
    path = tmp_path / "traceloop.json"
    path.write_text(json.dumps(spans))
    [t] = import_file(str(path))
    assert [(s["name"], s["input"], s["output"], s.get("server")) for s in tools(t)] == [(*CALLS[0], "shop")]


def _live_shop(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.delenv("MCP_SHOP_COMMAND", raising=False)
    monkeypatch.setenv("MCP_SHOP_URL", url)


def test_agents_sdk_result_names_the_server(monkeypatch: pytest.MonkeyPatch, shop_url: str) -> None:
    from kit.doubles.openai_server import ScriptedOpenAIServer
    from kit.runner.frameworks import trace_dict

    sys.path.insert(0, str(HERE))
    import _mcp_desk
    from _mcp_desk import desk_model

    _live_shop(monkeypatch, shop_url)
    with ScriptedOpenAIServer(desk_model) as srv:
        monkeypatch.setenv("DESK_MODEL_URL", srv.base_url)
        result = _mcp_desk.run("Please refund order ORD-7.")
    t = trace_dict(result, "refund")
    assert [(s["name"], s["input"], s["output"], s.get("server")) for s in tools(t)] == [(*c, "shop") for c in CALLS]
    assert os.environ.get("MCP_EXTRA_COMMAND") is None


def test_the_export_gets_the_live_runs_verdicts(monkeypatch: pytest.MonkeyPatch, shop_url: str) -> None:
    """The refund case of the desk's suite (server-scoped checks) judged on the live run and on its export."""
    from kit.case import load_suite
    from kit.doubles.openai_server import ScriptedOpenAIServer
    from kit.evaluate import evaluate
    from kit.runner import invoke
    from kit.runner.agents import load_agent

    sys.path.insert(0, str(HERE))
    from _mcp_desk import desk_model

    suite = load_suite(DATA / "desk_cases.yaml")
    [case] = [c for c in suite.cases if c.id == "refund"]
    _live_shop(monkeypatch, shop_url)
    with ScriptedOpenAIServer(desk_model) as srv:
        monkeypatch.setenv("DESK_MODEL_URL", srv.base_url)
        live = invoke(load_agent("_mcp_desk:run"), case, 0, timeout=60).case_run
    [exported] = import_file(str(DATA / "agents_openinference.json"))
    imported = evaluate(parse_trace({**exported, "case_id": "refund"}), case)
    verdicts = [(r.name, r.passed, r.reason) for r in live.results]
    assert verdicts == [(r.name, r.passed, r.reason) for r in imported.results]
    assert all(passed for _, passed, _ in verdicts)
    assert "arg:issue_refund.amount@server:shop" in [name for name, _, _ in verdicts]


def test_hosted_mcp_calls_in_responses_items() -> None:
    """A hosted MCP tool's items (the OpenAI Agents SDK's HostedMCPTool: the provider calls the server): each
    `mcp_call` is a call with its output or error, and MCP's listing and approval items are no steps."""
    from openai.types.responses.response_output_item import McpCall, McpListTools

    from kit.runner.frameworks import trace_dict

    items = [
        {"role": "user", "content": "Please refund order ORD-7."},
        McpListTools(id="l1", server_label="shop", tools=[], type="mcp_list_tools"),
        McpCall(
            id="m1",
            name="lookup_order",
            arguments='{"order_id": "ORD-7"}',
            server_label="shop",
            type="mcp_call",
            output=json.dumps(CALLS[0][2]),
        ),
        McpCall(
            id="m2",
            name="issue_refund",
            arguments='{"order_id": "ORD-7", "amount": 42.0}',
            server_label="shop",
            type="mcp_call",
            error={"type": "mcp_protocol_error", "code": -32603, "message": "refunds are closed"},
        ),
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sorry."}]},
    ]
    t = trace_dict(items, "refund")
    assert [(s["name"], s["input"], s["output"], s["error"]) for s in tools(t)] == [
        (*CALLS[0], None),
        ("issue_refund", CALLS[1][1], {"error": "refunds are closed"}, "refunds are closed"),
    ]
    assert t["final_output"] == "Sorry."
