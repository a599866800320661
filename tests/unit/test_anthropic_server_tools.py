"""A server tool that Anthropic runs within the model call (web search here) is a call of the run, read as it
comes from the `anthropic` SDK: the desk of tests/unit/_anthropic_desk.py against a scripted Messages server
on 127.0.0.2, through the SDK's real client, whatever the desk returns (its kept blocks, dumped, its Message
objects, streamed). The call's result is its output, an error result its error; it is one model call, one
step. Its committed recording (tests/fixtures/frameworks/, record.py's `anthropic_server_tool`: the real SDK and
OpenInference's instrumentation) gives the same verdicts and calls from its return value and from its OTLP JSON
export. A block of a kind the reader does not know is still refused by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kit.case import load_suite
from kit.doubles.anthropic_server import ScriptedAnthropicServer
from kit.errors import KitInputError
from kit.evaluate import evaluate
from kit.importers import convert, import_file
from kit.runner import invoke
from kit.runner.agents import load_agent
from kit.runner.frameworks import UnknownResult, trace_dict
from kit.trace import parse_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"
QUERY = {"query": "ORD-7 refund policy"}
FOUND = [
    {
        "type": "web_search_result",
        "url": "https://shop.example/refunds",
        "title": "Refunds",
        "encrypted_content": "EqgfCioIARgBIiQ",
        "page_age": "2026-11-02",
    }
]
ERROR = {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}
CASES = """\
- id: policy
  input: "What is the refund policy for ORD-7?"
  checks:
    - {type: called, tool: web_search}
    - {type: arg, tool: web_search, key: query, expected: "ORD-7 refund policy"}
    - {type: not_called, tool: issue_refund}
    - {type: contains, text: "30 days"}
    - {type: no_tool_errors}
    - {type: budget, steps: 1}
"""


def _model(result: Any) -> Any:
    def answer(body: dict[str, Any]) -> Any:
        tool = {"name": "web_search", "input": QUERY, "result": result}
        return {"server_tools": [tool], "content": "Refunds are taken within 30 days of delivery."}

    return answer


@pytest.fixture
def case(tmp_path: Any) -> Any:
    (tmp_path / "cases.yaml").write_text(CASES)
    loaded = load_suite(tmp_path / "cases.yaml")
    assert not loaded.errors
    return loaded.cases[0]


def _run(entry: str, case: Any, result: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    with ScriptedAnthropicServer(_model(result), host="127.0.0.2") as srv:
        monkeypatch.setenv("DESK_MODEL_URL", srv.base_url)
        monkeypatch.delenv("DESK_BUG", raising=False)
        return invoke(load_agent(f"_anthropic_desk:{entry}"), case, 0, timeout=60)


@pytest.mark.parametrize("entry", ["kept", "dumped", "messages", "streamed"])
def test_a_server_tools_call_is_a_call_of_the_run(entry: str, case: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _run(entry, case, FOUND, monkeypatch)
    assert run.case_run.error is None, run.case_run.error
    assert [f"{r.name}: {r.reason}" for r in run.case_run.results if not r.passed] == []
    trace = parse_trace(run.trace)
    [call] = trace.tool_calls
    assert (call.name, call.input, call.output, call.error) == ("web_search", QUERY, FOUND, None)
    assert [s.kind for s in trace.spans].count("llm") == 1  # the search ran within the one model call
    assert trace.final_output == "Refunds are taken within 30 days of delivery."


def test_a_server_tools_error_is_the_calls_error(case: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _run("dumped", case, ERROR, monkeypatch)
    failed = {r.name: r.reason for r in run.case_run.results if not r.passed}
    assert list(failed) == ["no_tool_errors"], failed
    assert "web_search_tool_result_error: max_uses_exceeded" in failed["no_tool_errors"]
    [call] = parse_trace(run.trace).tool_calls
    assert call.error == "web_search_tool_result_error: max_uses_exceeded"


def test_kit_import_reads_the_dumped_run_as_the_runner_does(case: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from _anthropic_desk import dumped

    with ScriptedAnthropicServer(_model(FOUND), host="127.0.0.2") as srv:
        monkeypatch.setenv("DESK_MODEL_URL", srv.base_url)
        monkeypatch.delenv("DESK_BUG", raising=False)
        returned = json.loads(json.dumps(dumped(case.input)))  # as a JSON file holds it
    [imported] = convert(returned, case_id="policy")
    assert [(s["name"], s["input"], s["output"]) for s in imported["spans"] if s["kind"] == "tool"] == [
        ("web_search", QUERY, FOUND)
    ]
    assert imported["source_format"] == "anthropic"


def test_a_result_block_of_an_unknown_kind_or_answering_no_call_is_refused_by_name() -> None:
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": QUERY}
    future = {"type": "memory_tool_result", "tool_use_id": "srvtoolu_1", "content": {}}
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [use, future]}]
    with pytest.raises(UnknownResult, match=r"message 1, content block 1: a memory_tool_result block"):
        trace_dict(messages, "c")
    with pytest.raises(UnknownResult, match=r"content block 0: a web_search_tool_result block with no tool_use_id"):
        trace_dict([messages[0], {"role": "assistant", "content": [{"type": "web_search_tool_result"}]}], "c")
    orphan = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_9", "content": FOUND}
    with pytest.raises(UnknownResult, match=r"call id 'srvtoolu_9' answers no open call"):
        trace_dict([messages[0], {"role": "assistant", "content": [orphan]}], "c")


def test_the_sdks_objects_kept_inside_a_result_block_are_read_as_the_sdk_dumps_them() -> None:
    """An agent that builds its own dict block around the SDK's content objects: the results are the SDK's
    dump, and an error object is still the call's error."""
    from anthropic.types import WebSearchResultBlock, WebSearchToolResultError

    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": QUERY}
    found = [WebSearchResultBlock.model_validate(FOUND[0])]
    failed = WebSearchToolResultError.model_validate(ERROR)
    for content, output, error in ((found, FOUND, None), (failed, ERROR, f"{ERROR['type']}: max_uses_exceeded")):
        result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": content}
        messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [use, result]}]
        [call] = [s for s in trace_dict(messages, "c")["spans"] if s["kind"] == "tool"]
        assert (call["output"], call.get("error")) == (output, error)


@pytest.mark.parametrize("recording", ["anthropic_server_tool", "anthropic_server_tool_error"])
def test_the_recorded_return_value_and_its_export_give_the_same_verdicts_and_calls(recording: str, case: Any) -> None:
    returned = parse_trace(
        {**trace_dict(json.loads((FIXTURES / f"{recording}_desk.json").read_text()), "policy"), "case_id": "policy"}
    )
    [exported_dict] = import_file(FIXTURES / f"otel-{recording}.json")
    exported = parse_trace(exported_dict)
    want = {"no_tool_errors"} if recording.endswith("_error") else set()
    for trace in (returned, exported):
        assert {r.name for r in evaluate(trace, case).results if not r.passed} == want, trace.source_format
    assert [(c.name, c.input, c.output, c.error) for c in exported.tool_calls] == [
        (c.name, c.input, c.output, c.error) for c in returned.tool_calls
    ]
    assert [s.kind for s in exported.spans].count("llm") == 1  # OpenInference's span and the SDK's: one call
    assert exported.final_output == returned.final_output and exported.finish_reason == "finish"


def test_an_exported_result_that_answers_no_call_of_its_message_is_refused_by_name(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "otel-anthropic_server_tool.json").read_text())
    key = "llm.output_messages.0.message.contents.1.message_content.text"
    for span in (s for r in doc["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]):
        for a in span["attributes"]:
            if a["key"] == key:
                a["value"]["stringValue"] = a["value"]["stringValue"].replace("srvtoolu_", "other_")
    (tmp_path / "export.json").write_text(json.dumps(doc))
    with pytest.raises(KitInputError, match=r"content 1: a 'web_search_tool_result' content that answers no call"):
        import_file(tmp_path / "export.json")
