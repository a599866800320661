"""No reader reads fewer calls than a run made: every reader (the runner's, `kit import` by format and detected,
the GenAI and OpenInference span readers) is fed every framework's message shape of the same run, a lookup and
a refund. Each reads both calls with their arguments, or refuses the input naming what it could not read;
never an empty turn, never "issue_refund never called"."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kit.cli import main
from kit.errors import KitInputError
from kit.importers import convert
from kit.runner.frameworks import UnknownResult, trace_dict

ARGS = [("lookup_order", {"order_id": "ORD-7"}), ("issue_refund", {"order_id": "ORD-7", "amount": 42.0})]
LOOKUP = {"order_id": "ORD-7", "total": 42.0}
REFUND = {"refund_id": "R-1"}
ASK = "Please refund order ORD-7."


def _openai() -> list[dict[str, Any]]:
    def call(n: int) -> dict[str, Any]:
        name, args = ARGS[n]
        return {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}

    return [
        {"role": "user", "content": ASK},
        {"role": "assistant", "content": None, "tool_calls": [call(0)]},
        {"role": "tool", "tool_call_id": "c0", "content": json.dumps(LOOKUP)},
        {"role": "assistant", "content": None, "tool_calls": [call(1)]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps(REFUND)},
        {"role": "assistant", "content": "Refunded 42."},
    ]


def _anthropic() -> list[dict[str, Any]]:
    def use(n: int) -> dict[str, Any]:
        return {"type": "tool_use", "id": f"toolu_{n}", "name": ARGS[n][0], "input": ARGS[n][1]}

    def result(n: int, value: Any) -> dict[str, Any]:
        return {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": json.dumps(value)}

    return [
        {"role": "user", "content": ASK},
        {"role": "assistant", "content": [{"type": "text", "text": "Looking it up."}, use(0)]},
        {"role": "user", "content": [result(0, LOOKUP)]},
        {"role": "assistant", "content": [use(1)]},
        {"role": "user", "content": [result(1, REFUND)]},
        {"role": "assistant", "content": [{"type": "text", "text": "Refunded 42."}]},
    ]


def _converse() -> list[dict[str, Any]]:
    """Bedrock Converse, as Strands Agents keeps its messages."""

    def use(n: int) -> dict[str, Any]:
        return {"toolUse": {"toolUseId": f"t{n}", "name": ARGS[n][0], "input": ARGS[n][1]}}

    def result(n: int, value: Any) -> dict[str, Any]:
        return {"toolResult": {"toolUseId": f"t{n}", "status": "success", "content": [{"json": value}]}}

    return [
        {"role": "user", "content": [{"text": ASK}]},
        {"role": "assistant", "content": [use(0)]},
        {"role": "user", "content": [result(0, LOOKUP)]},
        {"role": "assistant", "content": [use(1)]},
        {"role": "user", "content": [result(1, REFUND)]},
        {"role": "assistant", "content": [{"text": "Refunded 42."}]},
    ]


def _gemini() -> list[dict[str, Any]]:
    """Google's `Content`s (ADK's events carry them), with an OpenAI-like `role` and `parts`."""

    def call(n: int) -> dict[str, Any]:
        return {"function_call": {"id": f"f{n}", "name": ARGS[n][0], "args": ARGS[n][1]}}

    def response(n: int, value: Any) -> dict[str, Any]:
        return {"function_response": {"id": f"f{n}", "name": ARGS[n][0], "response": value}}

    return [
        {"role": "user", "parts": [{"text": ASK}]},
        {"role": "model", "parts": [call(0)]},
        {"role": "user", "parts": [response(0, LOOKUP)]},
        {"role": "model", "parts": [call(1)]},
        {"role": "user", "parts": [response(1, REFUND)]},
        {"role": "model", "parts": [{"text": "Refunded 42."}]},
    ]


def _genai_parts() -> list[dict[str, Any]]:
    def call(n: int) -> dict[str, Any]:
        return {"type": "tool_call", "id": f"g{n}", "name": ARGS[n][0], "arguments": ARGS[n][1]}

    def response(n: int, value: Any) -> dict[str, Any]:
        return {"type": "tool_call_response", "id": f"g{n}", "response": value}

    return [
        {"role": "user", "parts": [{"type": "text", "content": ASK}]},
        {"role": "assistant", "parts": [call(0)]},
        {"role": "tool", "parts": [response(0, LOOKUP)]},
        {"role": "assistant", "parts": [call(1)]},
        {"role": "tool", "parts": [response(1, REFUND)]},
        {"role": "assistant", "parts": [{"type": "text", "content": "Refunded 42."}]},
    ]


def _responses() -> list[dict[str, Any]]:
    def call(n: int) -> dict[str, Any]:
        return {"type": "function_call", "call_id": f"r{n}", "name": ARGS[n][0], "arguments": json.dumps(ARGS[n][1])}

    def output(n: int, value: Any) -> dict[str, Any]:
        return {"type": "function_call_output", "call_id": f"r{n}", "output": json.dumps(value)}

    done = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Refunded 42."}]}
    return [{"role": "user", "content": ASK}, call(0), output(0, LOOKUP), call(1), output(1, REFUND), done]


def _openai_holding_tool_use() -> list[dict[str, Any]]:
    """An OpenAI list into which an Anthropic call slipped: its tool message answers a call OpenAI never made."""
    messages = _openai()
    use = {"type": "tool_use", "id": "c1", "name": "issue_refund", "input": ARGS[1][1]}
    messages[3] = {"role": "assistant", "content": [use]}
    return messages


def _anthropic_holding_mcp_call() -> list[dict[str, Any]]:
    """A call through the API's MCP connector (`mcp_tool_use`), which the reader does not read."""
    messages = _anthropic()
    use = {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "lookup_order", "server_name": "shop", "input": {}}
    messages[3]["content"].append(use)
    return messages


def _anthropic_stream() -> list[dict[str, Any]]:
    """One streamed model call (the lookup), as the raw events arrive."""
    start = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "content": []}
    use = {"type": "tool_use", "id": "toolu_0", "name": "lookup_order", "input": {}}
    return [
        {"type": "message_start", "message": {**start, "usage": {"input_tokens": 10, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": use},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"order'}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '_id": "ORD-7"}'},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]


# A refusal of a whole recorded return value (another framework's) names the place it stopped at.
PLACE = r"message \d|item \d|step \d|event \d|task \d|not an OpenAI|no known kind|keys|block|shape|not a list"
# The shapes, each with the calls it holds and what a refusal of it must name.
SHAPES: dict[str, tuple[Callable[[], Any], list[tuple[str, dict[str, Any]]], str]] = {
    "openai": (_openai, ARGS, "role|tool_calls"),
    "anthropic": (_anthropic, ARGS, "tool_use|tool_result"),
    "anthropic-in-messages": (lambda: {"messages": _anthropic(), "model": "claude-x"}, ARGS, "tool_use|tool_result"),
    "anthropic-stream": (_anthropic_stream, ARGS[:1], "message_start|content_block|role"),
    "anthropic-mcp-connector": (_anthropic_holding_mcp_call, ARGS, "tool_use"),
    "converse": (_converse, ARGS, "toolUse|toolResult|'text'"),
    "gemini": (_gemini, ARGS, "function_call|function_response|parts|'model'"),
    "genai-parts": (_genai_parts, ARGS, "parts|content|role"),
    "responses": (_responses, ARGS, "function_call|role"),
    "openai-holding-tool_use": (_openai_holding_tool_use, ARGS, "tool_use|tool_calls"),
    # The frameworks' own recordings (tests/fixtures/frameworks/): what each returned, as JSON.
    "adk-events": (lambda: _recorded("adk_desk"), ARGS, PLACE),
    "smolagents-steps": (lambda: _recorded("smolagents_desk"), ARGS, PLACE),
    "llamaindex-events": (lambda: _recorded("llamaindex_desk"), ARGS, PLACE),
    "crew-output": (lambda: _recorded("crewai_desk"), ARGS, PLACE),
    "strands-messages": (lambda: _recorded("strands_desk"), ARGS, PLACE),
    "claude-agent-messages": (lambda: _recorded("claude_agent_desk"), ARGS, PLACE),
    "agent-framework-response": (lambda: _recorded("agent_framework_desk"), ARGS, PLACE),
}
RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"


def _recorded(name: str) -> Any:
    return json.loads((RECORDED / f"{name}.json").read_text())


def _attr(key: str, v: Any) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": v if isinstance(v, str) else json.dumps(v)}}


def _otlp(attrs: dict[str, Any]) -> dict[str, Any]:
    span = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "chat",
        "startTimeUnixNano": "1000000",
        "endTimeUnixNano": "2000000",
        "attributes": [_attr(k, v) for k, v in attrs.items()],
    }
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [span]}]}]}


def _messages(data: Any) -> Any:
    return data.get("messages", data) if isinstance(data, dict) else data


READERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "runner": lambda data: trace_dict(data, "c"),
    "import-detected": lambda data: convert(data, case_id="c")[0],
    "import-openai": lambda data: convert(data, "openai", case_id="c")[0],
    "import-anthropic": lambda data: convert(data, "anthropic", case_id="c")[0],
    "import-converse": lambda data: convert(data, "converse", case_id="c")[0],
    "genai-span": lambda data: convert(
        _otlp({"gen_ai.operation.name": "chat", "gen_ai.input.messages": _messages(data)}), "genai", case_id="c"
    )[0],
    "openinference-span": lambda data: convert(
        _otlp({"openinference.span.kind": "LLM", "input.value": {"messages": _messages(data)}}),
        "openinference",
        case_id="c",
    )[0],
}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_reader_reads_every_shape_whole_or_refuses_it_by_name(shape: str, reader: str) -> None:
    make, calls, names = SHAPES[shape]
    try:
        trace = READERS[reader](make())
    except (KitInputError, UnknownResult) as e:
        said = str(e)
        assert re.search(names, said), f"{shape} refused by {reader} without naming it: {said}"
        return
    read = [(s["name"], s["input"]) for s in trace["spans"] if s["kind"] == "tool" and s["name"] != "final_answer"]
    assert read == calls, f"{reader} read {shape} as {read}"
    if shape in ("openai", "anthropic", "anthropic-in-messages", "converse", "responses", "genai-parts"):
        results = [s["output"] for s in trace["spans"] if s["kind"] == "tool"]
        assert results == [LOOKUP, REFUND], f"{reader} read {shape}'s results as {results}"


@pytest.mark.parametrize("shape", ["anthropic", "anthropic-in-messages", "anthropic-stream"])
def test_anthropic_messages_are_read_by_the_runner_and_by_kit_import(shape: str) -> None:
    make, calls, _ = SHAPES[shape]
    for trace in (trace_dict(make(), "c"), convert(make(), case_id="c")[0]):
        assert [(s["name"], s["input"]) for s in trace["spans"] if s["kind"] == "tool"] == calls
        assert trace["source_format"] == "anthropic"


def test_a_refusal_names_the_block_and_where_it_is() -> None:
    with pytest.raises(UnknownResult, match=r"message 3, content block 1: a mcp_tool_use block"):
        trace_dict(_anthropic_holding_mcp_call(), "c")
    with pytest.raises(UnknownResult, match=r"message 1, content block 0: a \{'function_call'\} block"):
        trace_dict([{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"function_call": {}}]}], "c")
    with pytest.raises(KitInputError, match=r"message 3, content block 0: a tool_use block"):
        convert(_openai_holding_tool_use(), "openai", case_id="c")
    with pytest.raises(KitInputError, match=r"span 'chat' .*message 1, part 0: a \{'function_call'\} part"):
        convert(_otlp({"gen_ai.operation.name": "chat", "gen_ai.input.messages": _gemini()}), case_id="c")


def test_kit_import_refuses_a_block_it_does_not_know_with_exit_2_and_reads_an_anthropic_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "gemini.json").write_text(json.dumps({"messages": _openai_holding_tool_use()}))
    assert main(["import", str(tmp_path / "gemini.json"), "--format", "openai", "-o", str(tmp_path / "o.json")]) == 2
    assert "content block 0: a tool_use block" in capsys.readouterr().err
    (tmp_path / "anthropic.json").write_text(json.dumps(_anthropic()))
    assert main(["import", str(tmp_path / "anthropic.json"), "-o", str(tmp_path / "out.json")]) == 0
    trace = json.loads((tmp_path / "out.json").read_text())
    assert [s["name"] for s in trace["spans"] if s["kind"] == "tool"] == ["lookup_order", "issue_refund"]
