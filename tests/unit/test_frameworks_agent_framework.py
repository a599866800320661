"""The Microsoft Agent Framework read as it comes: the AgentResponse `agent.run()` returns (made here by the
framework's own `from_dict` from the recording, when it is installed), its `to_dict()` and its Messages
(tests/fixtures/frameworks/agent_framework_desk*.json, recorded with the real package on its OpenAI
chat-completions client against the model double) and its built-in OpenTelemetry export of the same run. The
clean desk passes, the one that refunds without a lookup fails `guarded` and `order`, alike returned and
exported; the agent is named; a content type the reader does not know is refused by name and place. One live
run through the real client is marked e2e."""

from __future__ import annotations

import copy
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
BUG = {"guarded:issue_refund", "order:lookup_order<issue_refund"}


def _recorded(tail: str = "") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"agent_framework_desk{tail}.json").read_text())
    return data


def _trace(data: Any) -> Trace:
    return parse_trace({**trace_dict(data, "refund"), "case_id": "refund"})


def _exported(tail: str = "", *, default: bool = False) -> Trace:
    """Its export in the newest conventions (content on the spans), or its default ones (the GenAI baseline: the
    messages as log events, in the same file)."""
    [trace] = import_file(FIXTURES / f"otel-agent_framework{'_default' if default else ''}{tail}.json")
    return parse_trace(trace)


@pytest.fixture(scope="module")
def case() -> Any:
    return load_suite(FIXTURES / "desk.yaml").cases[0]


@pytest.mark.parametrize("bug", [False, True])
@pytest.mark.parametrize("shape", ["to_dict", "messages", "objects", "imported", "exported", "exported_default"])
def test_the_desk_is_judged_alike_returned_and_exported(shape: str, bug: bool, case: Any) -> None:
    tail = "-bug" if bug else ""
    data = _recorded(tail)
    if shape.startswith("exported"):
        trace = _exported(tail, default=shape == "exported_default")
    elif shape == "imported":  # `kit import` of the dumped AgentResponse (format agent_framework, detected)
        [imported] = convert(data, case_id="refund")
        trace = parse_trace(imported)
        assert trace.source_format == "agent_framework"
    elif shape == "objects":
        types = pytest.importorskip("agent_framework")
        response = types.AgentResponse.from_dict(copy.deepcopy(data))
        trace = _trace(response)
        assert _trace(response.messages).tool_calls == trace.tool_calls  # its Message objects alone
    else:
        trace = _trace(data if shape == "to_dict" else data["messages"])
    failed = {r.name for r in evaluate(trace, case).results if not r.passed}
    assert failed == (BUG if bug else set())
    assert trace.agent_names == ("support_desk",)
    assert trace.final_output == "Refunded 42 on order ORD-7."


@pytest.mark.parametrize("default", [False, True])
@pytest.mark.parametrize("bug", [False, True])
def test_the_return_value_and_the_export_hold_the_same_calls_steps_and_tokens(bug: bool, default: bool) -> None:
    """The export splits the tokens per call; the AgentResponse holds the run's total, put on its first call."""
    tail = "-bug" if bug else ""
    returned, exported = _trace(_recorded(tail)), _exported(tail, default=default)
    assert [(c.name, c.input, c.output) for c in returned.tool_calls] == [
        (c.name, c.input, c.output) for c in exported.tool_calls
    ]
    steps = [[s for s in t.spans if s.kind == "llm"] for t in (returned, exported)]
    assert len(steps[0]) == len(steps[1])
    assert [sum(s.tokens_in for s in x) for x in steps] == [_recorded(tail)["usage_details"]["input_token_count"]] * 2
    assert [sum(s.tokens_out for s in x) for x in steps] == [_recorded(tail)["usage_details"]["output_token_count"]] * 2


def test_a_result_that_raised_is_the_calls_error_and_a_cut_off_run_did_not_finish() -> None:
    data = _recorded()
    data["messages"][1]["contents"][0]["exception"] = "FunctionInvocationError"  # as to_dict() redacts it
    data["finish_reason"] = "length"
    trace = _trace(data)
    assert trace.tool_calls[0].error and trace.finish_reason == "step_cap"


def test_a_content_the_reader_does_not_know_is_refused_by_name_and_place() -> None:
    data = _recorded()
    hosted = {"type": "mcp_server_tool_call", "call_id": "m1", "tool_name": "web_search", "server_name": "x"}
    data["messages"][2]["contents"].append(hosted)
    with pytest.raises(UnknownResult, match=r"message 2, content 1: a mcp_server_tool_call content"):
        trace_dict(data, "c")
    approval = copy.deepcopy(_recorded())
    approval["messages"][0]["contents"] = [{"type": "function_approval_request", "id": "a1"}]
    with pytest.raises(UnknownResult, match=r"message 0, content 0: a function_approval_request content"):
        trace_dict(approval["messages"], "c")


@pytest.mark.e2e
def test_the_desk_through_the_real_client_passes_and_the_faulty_one_fails(case: Any, monkeypatch: Any) -> None:
    """`kit run`'s invoke on the desk (tests/unit/_agent_framework_desk.py) against the OpenAI double."""
    pytest.importorskip("agent_framework_openai")
    from _desk_live import failed_checks
    from _triage_desk import desk_model

    from kit.doubles.openai_server import ScriptedOpenAIServer

    failed = failed_checks(
        monkeypatch, ScriptedOpenAIServer, desk_model, "_agent_framework_desk:response", case, timeout=60
    )
    assert failed == {False: set(), True: BUG}, failed


def test_kit_import_of_a_response_of_several_agents_is_refused_naming_them() -> None:
    """Who handed off to whom is read from the returned response (the runner), never guessed by kit import."""
    from kit.errors import KitInputError

    data = _recorded()
    data["messages"][2]["author_name"] = "refunds"
    with pytest.raises(KitInputError, match=r"several agents \(refunds, support_desk\)"):
        convert(data, case_id="c")
    assert {s.agent for s in _trace(data).spans if s.kind == "tool"} == {"support_desk", "refunds"}


def test_a_tool_that_raised_fails_no_tool_errors_alike_returned_and_exported(case: Any) -> None:
    """The framework answers the model "Error: Function failed." and marks the result with its exception (to_dict()
    redacts it to a marker); its export marks the execute_tool span failed: both read as the call's error."""
    returned = _trace(json.loads((FIXTURES / "agent_framework_tool_error_desk.json").read_text()))
    [exported] = import_file(FIXTURES / "otel-agent_framework_tool_error.json")
    for trace in (returned, parse_trace(exported)):
        assert [bool(c.error) for c in trace.tool_calls] == [True, False]
        assert {r.name for r in evaluate(trace, case).results if not r.passed} == {"no_tool_errors"}


def test_a_streamed_runs_updates_are_refused_naming_what_to_return() -> None:
    update = {"type": "agent_response_update", "contents": [{"type": "text", "text": "Refunded"}], "role": "assistant"}
    with pytest.raises(UnknownResult, match=r"message 0: an agent_response_update.*AgentResponse.from_updates"):
        trace_dict([update], "c")
