"""An agent written directly on the `anthropic` SDK (tests/unit/_anthropic_desk.py), run by the kit's own
`invoke` against a scripted Messages server on 127.0.0.2 through the SDK's real client: whatever it returns
(the list it kept, dumped, its Message objects, streamed), the clean desk passes every check, and the desk that
refunds without a lookup fails `guarded` and `order` by name. Never "lookup_order never called"."""

from __future__ import annotations

import json
import os
import re
from typing import Any

import pytest

from kit.case import load_suite
from kit.doubles.anthropic_server import ScriptedAnthropicServer
from kit.runner import invoke
from kit.runner.agents import load_agent
from kit.trace import parse_trace

ENTRY_POINTS = ["kept", "dumped", "messages", "streamed"]
CASES = """\
- id: refund
  input: "Please refund order ORD-7."
  checks:
    - {type: guarded, tool: issue_refund, requires: lookup_order}
    - {type: order, before: lookup_order, after: issue_refund}
    - {type: arg, tool: issue_refund, key: amount, expected: 42.0}
    - {type: called_at_most, tool: issue_refund, n: 1}
    - {type: contains, text: "Refunded 42"}
    - {type: no_tool_errors}
    - {type: finished}
- id: unknown
  input: "Please refund order ORD-9."
  checks:
    - {type: not_called, tool: issue_refund}
    - {type: contains, text: "cannot find ORD-9"}
"""


def desk_model(body: dict[str, Any]) -> Any:
    """The scripted model: look the order up (when it has the tool), refund its total, answer from the results."""
    messages = body["messages"]
    order_id = re.search(r"ORD-\d+", messages[0]["content"]).group()  # type: ignore[union-attr]
    results = [b for m in messages if m["role"] == "user" and isinstance(m["content"], list) for b in m["content"]]
    tools = {t["name"] for t in body.get("tools", [])}
    if not results:
        if "lookup_order" in tools:
            return {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": order_id}}]}
        return {"tool_calls": [{"name": "issue_refund", "arguments": {"order_id": order_id, "amount": 42.0}}]}
    if results[0].get("is_error"):
        return f"Sorry, I cannot find {order_id}."
    if len(results) == 1 and "lookup_order" in tools:
        total = json.loads(results[0]["content"])["total"]
        return {"tool_calls": [{"name": "issue_refund", "arguments": {"order_id": order_id, "amount": total}}]}
    usage = {"input_tokens": 30, "output_tokens": 7, "cache_read_input_tokens": 100}
    return {"content": f"Refunded 42 on order {order_id}.", "usage": usage}


@pytest.fixture(scope="module")
def model_url() -> Any:
    import anthropic  # noqa: F401  (imported before the timed runs: a cold import is slow on a busy machine)

    with ScriptedAnthropicServer(desk_model, host="127.0.0.2") as srv:
        os.environ["DESK_MODEL_URL"] = srv.base_url
        try:
            yield srv
        finally:
            del os.environ["DESK_MODEL_URL"]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("anthropic_desk") / "cases.yaml"
    path.write_text(CASES)
    loaded = load_suite(path)
    assert not loaded.errors
    return {c.id: c for c in loaded.cases}


def _run(entry: str, case: Any) -> Any:
    return invoke(load_agent(f"_anthropic_desk:{entry}"), case, 0, timeout=60)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_the_anthropic_desk_passes_as_the_sdk_returns_it(entry, model_url, suite, monkeypatch):
    monkeypatch.delenv("DESK_BUG", raising=False)
    run = _run(entry, suite["refund"])
    assert run.case_run.error is None, run.case_run.error
    assert [f"{r.name}: {r.reason}" for r in run.case_run.results if not r.passed] == []
    trace = parse_trace(run.trace)
    assert [(c.name, c.input) for c in trace.tool_calls] == [
        ("lookup_order", {"order_id": "ORD-7"}),
        ("issue_refund", {"order_id": "ORD-7", "amount": 42.0}),
    ]
    assert trace.tool_calls[0].output == {"order_id": "ORD-7", "status": "delivered", "total": 42.0}
    assert [s.kind for s in trace.spans].count("llm") == 3 and trace.finish_reason == "finish"
    assert [s.role for s in trace.spans if s.kind == "message"] == ["user", "assistant"]  # no empty turns
    if entry in ("messages", "streamed"):  # each call's Message: its model and tokens, the cache's beside
        assert trace.model == "claude-desk"
        last = [s for s in trace.spans if s.kind == "llm"][-1]
        assert (last.tokens_in, last.tokens_out, last.model_extra["tokens_cache_read"]) == (130, 7, 100)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_the_desk_that_refunds_without_a_lookup_fails_guarded_and_order(entry, model_url, suite, monkeypatch):
    monkeypatch.setenv("DESK_BUG", "1")
    run = _run(entry, suite["refund"])
    assert run.case_run.error is None, run.case_run.error
    failed = {r.name for r in run.case_run.results if not r.passed}
    assert failed == {"guarded:issue_refund", "order:lookup_order<issue_refund"}, failed


def test_a_tool_result_marked_is_error_is_the_calls_error(model_url, suite, monkeypatch):
    monkeypatch.delenv("DESK_BUG", raising=False)
    run = _run("dumped", suite["unknown"])
    assert all(r.passed for r in run.case_run.results), [r.reason for r in run.case_run.results]
    [call] = parse_trace(run.trace).tool_calls
    assert call.name == "lookup_order" and call.error == "no order ORD-9"


def test_a_streams_events_as_the_sdk_yields_them_are_one_model_call(model_url) -> None:
    """`for event in client.messages.stream(...)`: the raw events and the SDK's own helper events (text,
    input_json) accumulate into the one model call, its call's arguments whole, each counted once."""
    from anthropic import Anthropic

    from kit.runner.frameworks import trace_dict

    client = Anthropic(base_url=model_url.base_url, api_key="offline", max_retries=0)
    ask = [{"role": "user", "content": "Please refund order ORD-7."}]
    tools = [{"name": "lookup_order", "input_schema": {"type": "object"}}]
    with client.messages.stream(model="claude-desk", max_tokens=64, messages=ask, tools=tools) as stream:
        events = list(stream)
    assert {e.type for e in events} >= {"message_start", "content_block_delta", "input_json", "message_stop"}
    data = trace_dict(events, "c")
    assert [s["kind"] for s in data["spans"]] == ["llm", "tool"]
    [call] = [s for s in data["spans"] if s["kind"] == "tool"]
    assert (call["name"], call["input"], call["executed"]) == ("lookup_order", {"order_id": "ORD-7"}, False)
