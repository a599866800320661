"""Each framework's committed recording (tests/fixtures/frameworks/, written by its record.py with the real
package and its real instrumentation against the model double): the agent's return value, read as the runner
reads it, and the OTLP JSON export of the same run, imported, give the same verdict on every check (the clean
desk passes; the one that refunds without a lookup fails `guarded` and `order`) and the same steps: one model
call is one step, however many instrumentations wrote a span for it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kit.case import load_suite
from kit.evaluate import evaluate
from kit.importers import convert, import_file
from kit.runner.frameworks import UnknownResult, trace_dict
from kit.trace import Trace, parse_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"
FRAMEWORKS = [
    "anthropic",
    "agents_triage",
    "langgraph_triage",
    "otel_genai",
    "smolagents",
    "strands",
    "strands_latest",
    "adk_content",
]
BUG = {"guarded:issue_refund", "order:lookup_order<issue_refund"}
# CrewAI's export has no model spans of its own; the Agent Framework's AgentResponse and the Claude Agent SDK's
# ResultMessage hold the run's tokens only (their own tests compare the totals)
TOTALS_ONLY = ["crewai", "agent_framework", "agent_framework_default", "claude_agent"]


@pytest.fixture(scope="module")
def case() -> Any:
    return load_suite(FIXTURES / "desk.yaml").cases[0]


def _returned(framework: str, tail: str) -> Trace:
    data = trace_dict(json.loads((FIXTURES / f"{framework}_desk{tail}.json").read_text()), "refund")
    return parse_trace({**data, "case_id": "refund"})


def _exported(framework: str, tail: str) -> Trace:
    [trace] = import_file(FIXTURES / f"otel-{framework}{tail}.json")
    return parse_trace(trace)


@pytest.mark.parametrize("bug", [False, True])
@pytest.mark.parametrize("framework", [*FRAMEWORKS, *TOTALS_ONLY])
def test_the_return_value_and_the_export_give_the_same_verdicts(framework: str, bug: bool, case: Any) -> None:
    tail = "-bug" if bug else ""
    for trace in (_returned(framework, tail), _exported(framework, tail)):
        failed = {r.name for r in evaluate(trace, case).results if not r.passed}
        assert failed == (BUG if bug else set()), trace.source_format


@pytest.mark.parametrize("bug", [False, True])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_one_model_call_is_one_step_in_the_export(framework: str, bug: bool) -> None:
    tail = "-bug" if bug else ""
    returned, exported = _returned(framework, tail), _exported(framework, tail)

    def calls(t: Trace) -> list[tuple[str | None, Any, Any]]:
        return [(s.name, s.input, s.output) for s in t.tool_calls]

    def llm(t: Trace) -> list[tuple[int, int]]:
        return [(s.tokens_in, s.tokens_out) for s in t.spans if s.kind == "llm"]

    assert calls(exported) == calls(returned)
    assert len(llm(exported)) == len(llm(returned))  # not each call twice: steps, tokens and cost counted once
    if any(t for pair in llm(returned) for t in pair):  # Responses items carry no tokens
        assert llm(exported) == llm(returned)
    assert exported.final_output == returned.final_output


def test_the_anthropic_exports_cache_tokens_are_kept_beside_the_prompt_it_counts() -> None:
    last = [s for s in _exported("anthropic", "").spans if s.kind == "llm"][-1]
    assert (last.tokens_in, last.model_extra["tokens_cache_read"]) == (130, 100)


@pytest.mark.parametrize("bug", [False, True])
@pytest.mark.parametrize("source", ["otel-agents_triage", "otel-langgraph_triage", "langgraph_triage_desk"])
def test_a_named_agent_that_answers_alone_is_judged_by_its_own_checks(source: str, bug: bool) -> None:
    """`agent: triage` checks on a run of triage alone: its export (the Agents SDK's and LangGraph's agent
    spans) and LangGraph's messages (their `name`) name it, so they pass, or fail naming triage."""
    [case] = load_suite(FIXTURES / "triage.yaml").cases
    tail = "-bug" if bug else ""
    path = FIXTURES / f"{source}{tail}.json"
    if source.startswith("otel-"):
        [data] = import_file(path)
    else:
        data = {**trace_dict(json.loads(path.read_text()), "refund"), "case_id": "refund"}
    trace = parse_trace(data)
    assert trace.agent_names == ("triage",) and trace.handoffs == []
    failed = {r.name for r in evaluate(trace, case).results if not r.passed}
    scoped = {"guarded:issue_refund@agent:triage", "order:lookup_order<issue_refund@agent:triage"}
    assert failed == (scoped | {"called:lookup_order@agent:triage"} if bug else set())


def _span(span_id: str, parent: str | None, name: str, attrs: dict[str, Any]) -> dict[str, Any]:
    values = [
        {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
        for k, v in attrs.items()
    ]
    span = {"traceId": "ab" * 16, "spanId": span_id, "name": name, "attributes": values}
    span |= {"startTimeUnixNano": "1000", "endTimeUnixNano": "2000"}
    return span | ({"parentSpanId": parent} if parent else {})


@pytest.mark.parametrize(
    ("read", "write"),
    [
        ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_write.input_tokens"),  # 2026
        ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_creation.input_tokens"),  # 2025
        ("gen_ai.usage.cache_read_input_tokens", "gen_ai.usage.cache_creation_input_tokens"),  # OpenLLMetry
    ],
)
def test_genai_agent_spans_and_cache_tokens_old_and_new_names(read: str, write: str) -> None:
    """The 2026 conventions' internal `invoke_agent {name}` span (with `gen_ai.agent.invocation.id`, one per
    invocation, no agent identity) names the agent of its calls; cache tokens are read by every name."""
    answer = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Done."}]}])
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.output.messages": answer}
    usage = {"gen_ai.usage.input_tokens": 130, "gen_ai.usage.output_tokens": 7, read: 100, write: 20}
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "desk"}
    spans = [
        _span("01" * 8, None, "invoke_agent desk", {**agent, "gen_ai.agent.invocation.id": "inv-1"}),
        _span("02" * 8, "01" * 8, "chat m", {**chat, **usage}),
        _span("03" * 8, None, "invoke_agent desk", {**agent, "gen_ai.agent.invocation.id": "inv-2"}),
    ]
    [trace] = convert({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}, case_id="c")
    [llm] = [s for s in trace["spans"] if s["kind"] == "llm"]
    assert (llm["tokens_in"], llm["tokens_cache_read"], llm["tokens_cache_write"]) == (130, 100, 20)
    assert {s["agent"] for s in trace["spans"]} == {"desk"} and trace["final_output"] == "Done."


def test_smolagents_steps_it_cannot_split_are_refused_by_name() -> None:
    """A CodeAgent's step (its code calls the tools, no step records them) and a step of parallel calls (one
    observations text for all) are refused naming the step, never read as fewer calls or as the wrong result."""
    [task, step, *_] = json.loads((FIXTURES / "smolagents_desk.json").read_text())
    code = {**step, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "python_interpreter"}}]}
    both = {**step, "tool_calls": step["tool_calls"] * 2}
    for bad, why in ((code, "a CodeAgent's action"), (both, "2 tool calls .* share one observations text")):
        with pytest.raises(UnknownResult, match=f"step 1: {why}"):
            trace_dict([task, bad], "c")


def test_an_export_without_message_content_keeps_the_calls_and_never_passes_an_arg_check(case: Any) -> None:
    """ADK's default export records no content: its calls and their order are judged (guarded, order), and a
    check on an argument it did not record fails, never passes on arguments it never saw."""
    clean, bug = _exported("adk", ""), _exported("adk", "-bug")
    assert [s.name for s in clean.tool_calls] == ["lookup_order", "issue_refund"]
    failed = {r.name for r in evaluate(clean, case).results if not r.passed}
    assert failed == {"arg:issue_refund.amount", "contains"}
    assert {r.name for r in evaluate(bug, case).results if not r.passed} >= BUG


def test_a_llamaindex_agentoutput_alone_is_refused_naming_what_to_return() -> None:
    """The run's final AgentOutput (what `await handler` gives) holds no step of the run: refused, never read as
    a run of no calls."""
    events = json.loads((FIXTURES / "llamaindex_desk.json").read_text())
    final = next(e for e in reversed(events) if "response" in e)
    with pytest.raises(UnknownResult, match=r"AgentOutput alone.*stream_events"):
        trace_dict([final], "c")
