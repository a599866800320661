"""The agent a team has, returning what its framework returns: the same help desk written with LangGraph,
pydantic-ai and the OpenAI Agents SDK (tests/unit/_desk_frameworks.py), each through its real client against
a scripted model on 127.0.0.1, run by the kit's own `invoke` with no glue. Clean, every case passes; with a
planted bug, the case fails on the one check the bug breaks, by name."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kit.case import load_suite
from kit.doubles.openai_server import ScriptedOpenAIServer
from kit.runner import invoke
from kit.runner.agents import load_agent
from kit.runner.frameworks import UnknownResult, trace_dict
from kit.trace import parse_trace

ENTRY_POINTS = [
    "langgraph_state",
    "langchain_messages",
    "pydantic_ai_messages",
    "pydantic_ai_json",
    "pydantic_ai_result",
    "agents_result",
    "agents_items",
]
CASES = """\
- id: refund
  input: "Please refund order ORD-7."
  checks:
    - {type: order, before: lookup_order, after: issue_refund}
    - {type: arg, tool: issue_refund, key: amount, expected: 42.0}
    - {type: called_at_most, tool: issue_refund, n: 1}
    - {type: contains, text: "Refunded 42"}
    - {type: no_tool_errors}
    - {type: finished}
- id: status
  input: "Where is my order ORD-8?"
  checks:
    - {type: called, tool: lookup_order}
    - {type: not_called, tool: issue_refund}
    - {type: contains, text: "ORD-8 is shipped"}
"""


def _value(content: Any) -> Any:
    """A tool result as the frameworks send it back: JSON text, or (the Agents SDK) a Python literal."""
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    try:
        return json.loads(content)
    except (TypeError, json.JSONDecodeError):
        return ast.literal_eval(content)


def desk_model(body: dict[str, Any]) -> Any:
    """The scripted model: look the order up, refund its total when asked, then answer from the results."""
    messages = body["messages"]
    text = " ".join(str(m["content"]) for m in messages if m["role"] == "user")
    order_id = re.search(r"ORD-\d+", text).group()  # type: ignore[union-attr]
    results = [_value(m["content"]) for m in messages if m["role"] == "tool"]
    if not results:
        return {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": order_id}}]}
    order = results[0]
    if "refund" not in text.lower():
        return f"Order {order_id} is {order['status']}."
    if len(results) == 1:
        args = {"order_id": order_id, "amount": order["total"]}
        return {"tool_calls": [{"name": "issue_refund", "arguments": args}]}
    return f"Refunded {results[1]['amount']:g} on order {order_id}."


@pytest.fixture(scope="module")
def model_url() -> Any:
    # Imported before the timed runs: a cold import of these SDKs took 30 s of the agent's timeout under load.
    import agents  # noqa: F401
    import langgraph.prebuilt  # noqa: F401
    import pydantic_ai  # noqa: F401

    with ScriptedOpenAIServer(desk_model) as srv:
        os.environ["DESK_MODEL_URL"] = srv.base_url
        try:
            yield srv.base_url
        finally:
            del os.environ["DESK_MODEL_URL"]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("desk") / "cases.yaml"
    path.write_text(CASES)
    loaded = load_suite(path)
    assert not loaded.errors
    return {c.id: c for c in loaded.cases}


def _run(entry: str, case: Any) -> Any:
    return invoke(load_agent(f"_desk_frameworks:{entry}"), case, 0, timeout=60)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_the_desk_passes_its_cases_as_its_framework_returns_it(entry, model_url, suite, monkeypatch):
    monkeypatch.delenv("DESK_BUG", raising=False)
    for case in suite.values():
        run = _run(entry, case)
        assert run.case_run.error is None, run.case_run.error
        failed = [f"{r.name}: {r.reason}" for r in run.case_run.results if not r.passed]
        assert failed == [], f"{entry} {case.id}"
        trace = parse_trace(run.trace)
        assert trace.model == "desk-model"
        assert trace.finish_reason == "finish"
        calls = trace.tool_calls
        assert [c.name for c in calls] == (
            ["lookup_order", "issue_refund"] if case.id == "refund" else ["lookup_order"]
        )
        assert all(str(c.model_extra.get("tool_call_id", "")).startswith("call_") for c in calls)
        assert calls[0].output["order_id"] in ("ORD-7", "ORD-8")  # the result, as a value
        llm = [s for s in trace.spans if s.kind == "llm"]
        assert len(llm) == len(calls) + 1
        if entry != "agents_items":  # Responses items carry no usage; every other shape keeps each call's
            assert all(s.tokens_in > 0 and s.tokens_out > 0 for s in llm)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_planted_bug_fails_the_check_it_breaks_by_name(entry, model_url, suite, monkeypatch):
    monkeypatch.setenv("DESK_BUG", "1")
    run = _run(entry, suite["refund"])
    failed = {r.name: r.reason for r in run.case_run.results if not r.passed}
    assert run.case_run.error is None
    assert failed == {"arg:issue_refund.amount": "arg issue_refund.amount: got 4200.0, want 42.0"}
    assert all(r.passed for r in _run(entry, suite["status"]).case_run.results)


# --- Shapes, without a model ----------------------------------------------------------------------------


def test_a_langgraph_state_of_langchain_messages_is_never_an_empty_trace():
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    state = {
        "messages": [
            HumanMessage("refund ORD-7"),
            AIMessage("", tool_calls=[{"name": "lookup_order", "args": {"order_id": "ORD-7"}, "id": "c1"}]),
            ToolMessage("no such order", tool_call_id="c1", status="error"),
            AIMessage("Sorry, I cannot find it."),
        ],
        "remaining_steps": 20,
    }
    data = trace_dict(state, "x")
    [call] = [s for s in data["spans"] if s["kind"] == "tool"]
    assert call["input"] == {"order_id": "ORD-7"}
    assert call["error"] == "no such order"  # LangChain's own failure mark
    assert data["final_output"] == "Sorry, I cannot find it."


def test_a_pydantic_ai_retried_call_is_the_calls_error_and_structured_output_the_answer():
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart
    from pydantic_ai.messages import UserPromptPart as User

    messages = [
        ModelRequest(parts=[User("refund ORD-7")]),
        ModelResponse(parts=[ToolCallPart("issue_refund", {"order_id": "ORD-7"}, tool_call_id="c1")]),
        ModelRequest(
            parts=[ToolReturnPart("issue_refund", "amount: Field required", tool_call_id="c1", outcome="retried")]
        ),
        ModelResponse(parts=[ToolCallPart("final_result", {"refunded": False}, tool_call_id="c2")]),
        ModelRequest(parts=[ToolReturnPart("final_result", "Final result processed.", tool_call_id="c2")]),
    ]
    data = trace_dict(messages, "x")
    calls = [s for s in data["spans"] if s["kind"] == "tool"]
    assert calls[0]["name"] == "issue_refund" and calls[0]["error"] == "amount: Field required"
    assert json.loads(data["final_output"]) == {"refunded": False}


def test_responses_items_with_a_message_and_parallel_calls_are_one_model_call():
    items = [
        {"role": "user", "content": "refund ORD-7 and ORD-8"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "On it."}]},
        {"type": "function_call", "call_id": "a", "name": "issue_refund", "arguments": '{"order_id": "ORD-7"}'},
        {"type": "function_call", "call_id": "b", "name": "issue_refund", "arguments": '{"order_id": "ORD-8"}'},
        {"type": "function_call_output", "call_id": "b", "output": "{'ok': True}"},
        {"type": "function_call_output", "call_id": "a", "output": '{"ok": false}'},
        {"type": "reasoning", "summary": []},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
    ]
    trace = parse_trace({**trace_dict(items, "x"), "case_id": "x"})
    assert [s.kind for s in trace.spans] == ["message", "llm", "message", "tool", "tool", "llm", "message"]
    assert [(c.input["order_id"], c.output) for c in trace.tool_calls] == [
        ("ORD-7", {"ok": False}),
        ("ORD-8", {"ok": True}),
    ]
    assert trace.final_output == "Done."


def test_openai_messages_under_messages_keep_their_model_and_usage():
    conv = {
        "model": "m-1",
        "usage": {"prompt_tokens": 7, "completion_tokens": 3},
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    }
    data = trace_dict(conv, "x")
    [llm] = [s for s in data["spans"] if s["kind"] == "llm"]
    assert (data["model"], llm["tokens_in"], llm["tokens_out"], data["final_output"]) == ("m-1", 7, 3, "hello")


@pytest.mark.parametrize(
    ("result", "message"),
    [
        (
            {"output": "done", "steps": 3},
            "returned a dict with 'output', 'steps': neither a trace (spans, final_output) nor a conversation "
            "(messages: OpenAI, LangChain or pydantic-ai messages)",
        ),
        (
            {"messages": ["hi", 3]},
            "returned a message list holding items of no known kind (int, str), expected a trace dict, a Trace or "
            "an OpenAI message list",
        ),
        ([{"type": "web_search_call"}], "returned a message list holding items of no known kind (dict with 'type')"),
        ("all done", "returned str, expected a trace dict, a Trace or an OpenAI message list"),
        (b"\x00", "returned bytes, expected a trace dict, a Trace or an OpenAI message list"),
    ],
)
def test_a_result_of_no_known_shape_is_an_error_saying_what_it_was(result, message):
    with pytest.raises(UnknownResult) as e:
        trace_dict(result, "x")
    assert str(e.value).startswith(message)


def test_a_trace_dict_passes_through_unchanged():
    trace = {"final_output": "ok", "spans": [{"kind": "tool", "name": "t", "input": {}}], "run_tag": "mine"}
    assert trace_dict(trace, "x") == trace


def test_plain_results_import_no_framework():
    code = (
        "import sys\n"
        "from kit.runner.frameworks import trace_dict\n"
        "trace_dict({'messages': [{'role': 'user', 'content': 'hi'}]}, 'x')\n"
        "trace_dict([{'type': 'function_call', 'call_id': 'a', 'name': 't', 'arguments': '{}'}], 'x')\n"
        'trace_dict(b\'[{"kind": "request", "parts": []}]\', \'x\')\n'
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langchain_core', 'langgraph', 'pydantic_ai', 'agents', 'openai')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
