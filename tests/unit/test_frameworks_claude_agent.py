"""The Claude Agent SDK read as it comes: the messages `query()` yields (the SDK's objects, made here by its own
parser from the recorded CLI JSON) and that JSON itself (tests/fixtures/frameworks/claude_agent_desk*.json,
recorded with the real SDK and its bundled Claude Code CLI against the Anthropic double). The clean desk passes,
the one that refunds without a lookup fails `guarded` and `order`; `mcp__desk__lookup_order` is judged as
`lookup_order` on server desk, never merged with another server's tool of that name; anything the reader does
not know is refused by name and place. One live run through the real CLI is marked e2e."""

from __future__ import annotations

import copy
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from kit.case import load_suite
from kit.errors import KitInputError
from kit.evaluate import evaluate
from kit.importers import convert
from kit.runner.frameworks import UnknownResult, trace_dict
from kit.trace import Trace, parse_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"
BUG = {"guarded:issue_refund", "order:lookup_order<issue_refund"}


def _recorded(tail: str = "") -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((FIXTURES / f"claude_agent_desk{tail}.json").read_text())
    return data


def _objects(raw: list[dict[str, Any]]) -> list[Any]:
    """The messages as `query()` yields them: the SDK's own parser on the CLI's JSON."""
    parser = pytest.importorskip("claude_agent_sdk._internal.message_parser")
    return [m for m in (parser.parse_message(copy.deepcopy(r)) for r in raw) if m is not None]


def _exported(tail: str = "", *, logs: bool = True) -> Trace:
    """The CLI's export of the run: its traces and, unless left out, its log events (one OTLP file of both)."""
    data = json.loads((FIXTURES / f"otel-claude_agent{tail}.json").read_text())
    [trace] = convert([d for d in data if logs or "resourceSpans" in d], case_id="refund")
    return parse_trace(trace)


def _trace(data: Any) -> Trace:
    return parse_trace({**trace_dict(data, "refund"), "case_id": "refund"})


@pytest.fixture(scope="module")
def case() -> Any:
    return load_suite(FIXTURES / "desk.yaml").cases[0]


@pytest.mark.parametrize("bug", [False, True])
@pytest.mark.parametrize("shape", ["objects", "asdict", "cli_json", "imported", "exported"])
def test_the_desk_is_judged_alike_as_objects_as_the_clis_json_and_imported(shape: str, bug: bool, case: Any) -> None:
    raw = _recorded("-bug" if bug else "")
    if shape == "imported":
        [data] = convert(raw, case_id="refund")
        trace = parse_trace(data)
    elif shape == "exported":
        trace = _exported("-bug" if bug else "")
    else:
        objects = _objects(raw) if shape in ("objects", "asdict") else []
        trace = _trace(objects if shape == "objects" else [asdict(m) for m in objects] if objects else raw)
    assert trace.source_format == ("otel-genai" if shape == "exported" else "claude_agent")
    failed = {r.name for r in evaluate(trace, case).results if not r.passed}
    assert failed == (BUG if bug else set())
    calls = [(c.name, c.__dict__.get("server")) for c in trace.tool_calls]
    assert calls == ([] if bug else [("lookup_order", "desk")]) + [("issue_refund", "desk")]
    assert trace.model == "claude-desk" and trace.final_output == "Refunded 42 on order ORD-7."


def test_tokens_and_cost_are_the_results_total_on_the_first_call() -> None:
    """Each AssistantMessage holds its stream's start (1 output token): the ResultMessage's total stands for the
    run, once."""
    raw = _recorded()
    [result] = [m for m in raw if m["type"] == "result"]
    llm = [s for s in _trace(raw).spans if s.kind == "llm"]
    assert len(llm) == 3 == result["num_turns"]
    assert (llm[0].tokens_in, llm[0].tokens_out) == (result["usage"]["input_tokens"], result["usage"]["output_tokens"])
    assert [s.tokens_in + s.tokens_out for s in llm[1:]] == [0, 0]
    assert llm[0].cost_usd == result["total_cost_usd"] > 0


@pytest.mark.parametrize("bug", [False, True])
def test_the_export_holds_the_same_calls_steps_and_tokens_each_call_its_own(bug: bool) -> None:
    """The CLI's spans count each call's tokens (the return value only the run's total) and hold the calls'
    arguments in its log events, joined to them by call id."""
    tail = "-bug" if bug else ""
    returned, exported = _trace(_recorded(tail)), _exported(tail)

    def calls(t: Trace) -> list[Any]:
        return [(c.name, c.input, c.output, c.__dict__.get("server"), c.tool_call_id) for c in t.tool_calls]

    assert calls(exported) == calls(returned)
    steps = [[s for s in t.spans if s.kind == "llm"] for t in (returned, exported)]
    assert len(steps[0]) == len(steps[1]) and all(s.tokens_in > 0 for s in steps[1])
    assert [sum(s.tokens_in for s in x) for x in steps] == [steps[0][0].tokens_in] * 2
    assert [sum(s.tokens_out for s in x) for x in steps] == [steps[0][0].tokens_out] * 2


def test_the_export_without_its_log_events_keeps_the_calls_and_never_passes_an_arg_check(case: Any) -> None:
    """Its spans alone carry no arguments: the calls and their order are judged, an argument check fails."""
    trace = _exported(logs=False)
    assert [(c.name, c.input) for c in trace.tool_calls] == [("lookup_order", {}), ("issue_refund", {})]
    failed = {r.name for r in evaluate(trace, case).results if not r.passed}
    assert failed == {"arg:issue_refund.amount", "contains"}


def test_the_blocks_of_one_model_call_yielded_apart_are_one_step() -> None:
    """The CLI yields a call's text and its tool_use as two AssistantMessages of one message id: one step."""
    raw = _recorded()
    first = next(m for m in raw if m["type"] == "assistant")
    said = copy.deepcopy(first)
    said["message"]["content"] = [{"type": "text", "text": "Looking it up."}]
    at = raw.index(first)
    trace = _trace([*raw[:at], said, *raw[at:]])
    assert [s.kind for s in trace.spans].count("llm") == 3 and len(trace.tool_calls) == 2


def _renamed(raw: list[dict[str, Any]], old: str, new: str) -> list[dict[str, Any]]:
    text = json.dumps(raw).replace(f'"name": "{old}"', f'"name": "{new}"')
    return json.loads(text)  # type: ignore[no-any-return]


def test_a_tool_name_two_servers_share_keeps_each_full_name() -> None:
    """`mcp__a__lookup_order` and `mcp__b__lookup_order` are two tools: neither is read as `lookup_order`."""
    raw = _renamed(_recorded(), "mcp__desk__lookup_order", "mcp__a__lookup_order")
    raw = _renamed(raw, "mcp__desk__issue_refund", "mcp__b__lookup_order")
    names = [(c.name, c.__dict__.get("server")) for c in _trace(raw).tool_calls]
    assert names == [("mcp__a__lookup_order", None), ("mcp__b__lookup_order", None)]
    raw = _renamed(_recorded(), "mcp__desk__issue_refund", "lookup_order")  # a built-in tool of the same name
    assert [c.name for c in _trace(raw).tool_calls] == ["mcp__desk__lookup_order", "lookup_order"]


def test_a_tool_result_marked_is_error_is_the_calls_error() -> None:
    raw = _recorded()
    result = next(m for m in raw if m["type"] == "user")
    result["message"]["content"][0]["is_error"] = True
    assert _trace(raw).tool_calls[0].error


def _refused(raw: list[dict[str, Any]], said: str) -> None:
    with pytest.raises(UnknownResult, match=said):
        trace_dict(raw, "c")
    with pytest.raises(KitInputError, match=said):
        convert(raw, case_id="c")


def test_what_the_reader_does_not_know_is_refused_by_name_and_place() -> None:
    raw = _recorded()
    at = next(n for n, m in enumerate(raw) if m["type"] == "assistant")
    server_tool = copy.deepcopy(raw)
    use = {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}
    server_tool[at]["message"]["content"].append(use)
    _refused(server_tool, rf"message {at}, content block 1: a server_tool_use block")
    subagent = copy.deepcopy(raw)
    subagent[at]["parent_tool_use_id"] = "toolu_task"
    _refused(subagent, rf"message {at}: a subagent's assistant message \(parent_tool_use_id toolu_task\)")
    task = copy.deepcopy(raw)
    task.insert(1, {"type": "system", "subtype": "task_started", "session_id": "s", "uuid": "u", "task_id": "t"})
    _refused(task, r"message 1: a system message of subtype 'task_started'")


def test_an_unknown_object_is_refused_naming_its_class_and_place() -> None:
    sdk = pytest.importorskip("claude_agent_sdk")
    objects = _objects(_recorded())
    objects[1].content.append(sdk.ServerToolUseBlock(id="srv_1", name="web_search", input={}))
    with pytest.raises(UnknownResult, match=r"message 1, content block 1: a server_tool_use block"):
        trace_dict(objects, "c")
    reset = sdk.ConversationResetMessage(new_conversation_id="n", uuid="u", session_id="s")
    with pytest.raises(UnknownResult, match=r"message 7: a ConversationResetMessage"):
        trace_dict([*objects[:1], *_objects(_recorded())[1:], reset], "c")


def test_a_server_tools_call_dumped_without_its_type_is_refused_not_read_as_a_tool_call() -> None:
    """`dataclasses.asdict()` drops the block's class: a ServerToolUseBlock is then a ToolUseBlock's twin."""
    sdk = pytest.importorskip("claude_agent_sdk")
    objects = _objects(_recorded())
    objects[1].content.append(sdk.ServerToolUseBlock(id="srv_1", name="web_search", input={}))
    with pytest.raises(
        UnknownResult, match=r"message 1, content block 1: a block dumped without its type .*web_search"
    ):
        trace_dict([asdict(m) for m in objects], "c")


def test_a_result_message_alone_is_refused_naming_what_to_return() -> None:
    result = _recorded()[-1]
    with pytest.raises(UnknownResult, match=r"no model call: return every message query\(\) yields"):
        trace_dict([result], "c")
    with pytest.raises(UnknownResult, match=r"no model call"):
        trace_dict(_objects([result])[0], "c")


@pytest.mark.e2e
def test_the_desk_through_the_real_cli_passes_and_the_faulty_one_fails(case: Any, monkeypatch: Any) -> None:
    """`kit run`'s invoke on the desk (tests/unit/_claude_agent_desk.py): the bundled Claude Code CLI against the
    Anthropic double on 127.0.0.2, its MCP tools in process."""
    pytest.importorskip("claude_agent_sdk")
    from _claude_agent_desk import desk_model
    from _desk_live import failed_checks

    from kit.doubles.anthropic_server import ScriptedAnthropicServer

    failed = failed_checks(
        monkeypatch, ScriptedAnthropicServer, desk_model, "_claude_agent_desk:messages", case, timeout=120
    )
    assert failed == {False: set(), True: BUG}, failed


def test_a_tool_that_raised_fails_no_tool_errors_alike_returned_and_exported(case: Any) -> None:
    """The SDK answers the model with an is_error result; the CLI's export marks the call's execution span and its
    tool_result event failed, never the tool span itself: both read as the call's error."""
    raw = json.loads((FIXTURES / "claude_agent_tool_error_desk.json").read_text())
    data = json.loads((FIXTURES / "otel-claude_agent_tool_error.json").read_text())
    [exported] = convert(data, case_id="refund")
    for trace in (_trace(raw), parse_trace(exported)):
        assert [c.error for c in trace.tool_calls] == ["database down", None]
        assert {r.name for r in evaluate(trace, case).results if not r.passed} == {"no_tool_errors"}


def test_each_turns_tokens_and_cost_go_on_its_first_call() -> None:
    """ClaudeSDKClient's session of two queries: each ResultMessage counts its own turn's tokens, and its
    total_cost_usd is the session's so far (as recorded by hand with the real SDK: 0.005584, then 0.00784)."""
    raw = _recorded()
    first_result = copy.deepcopy(raw[-1])
    answer = copy.deepcopy(raw[-2])
    answer["message"]["id"] = "msg_turn_2"
    second = {**copy.deepcopy(first_result), "num_turns": 1, "total_cost_usd": first_result["total_cost_usd"] + 0.002}
    second["usage"] = {**second["usage"], "input_tokens": 469, "output_tokens": 19}
    llm = [s for s in _trace([*raw, answer, second]).spans if s.kind == "llm"]
    assert [(s.tokens_in, s.tokens_out) for s in llm] == [(1007, 79), (0, 0), (0, 0), (469, 19)]
    assert [round(s.cost_usd, 6) for s in llm] == [first_result["total_cost_usd"], 0, 0, 0.002]
