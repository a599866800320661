"""No importer drops a known attribute silently: the deprecated object form of `gen_ai.completion` is read, and
an attribute the importer knows by name in a shape it cannot read is a warning naming the span and the
attribute (exit 2 under --strict)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kit.cli import main
from kit.importers import convert


def _attr(key: str, v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"key": key, "value": {"boolValue": v}}
    if isinstance(v, int):
        return {"key": key, "value": {"intValue": str(v)}}
    if isinstance(v, dict):
        return {"key": key, "value": {"kvlistValue": {"values": [_attr(k, x) for k, x in v.items()]}}}
    return {"key": key, "value": {"stringValue": v if isinstance(v, str) else json.dumps(v)}}


def _otlp(
    attrs: dict[str, Any], name: str = "chat gpt-4o", trace_id: str = "ab" * 16, resource: dict[str, Any] | None = None
) -> dict[str, Any]:
    span = {
        "traceId": trace_id,
        "spanId": "cd" * 8,
        "name": name,
        "startTimeUnixNano": "1000000",
        "endTimeUnixNano": "2000000",
        "attributes": [_attr(k, v) for k, v in attrs.items()],
    }
    res = {"attributes": [_attr(k, v) for k, v in (resource or {}).items()]}
    return {"resourceSpans": [{"resource": res, "scopeSpans": [{"spans": [span]}]}]}


DEPRECATED = {
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "gpt-4o",
    "gen_ai.prompt": "What is 2+2?",
}


@pytest.mark.parametrize("as_kvlist", [False, True])
def test_the_object_form_of_gen_ai_completion_is_read(as_kvlist):
    completion = {"text": "4", "finish_reason": "stop"}
    attrs = {**DEPRECATED, "gen_ai.completion": completion if as_kvlist else json.dumps(completion)}
    notes: list[str] = []
    [t] = convert(_otlp(attrs), case_id="c", notes=notes)
    assert t["final_output"] == "4" and t["finish_reason"] == "finish" and notes == []
    said = [(s["role"], s["content"]) for s in t["spans"] if s["kind"] == "message"]
    assert said == [("user", "What is 2+2?"), ("assistant", "4")]


def test_a_cut_off_object_completion_did_not_finish():
    attrs = {**DEPRECATED, "gen_ai.completion": json.dumps({"text": "The answer is", "finish_reason": "length"})}
    [t] = convert(_otlp(attrs), case_id="c")
    assert t["finish_reason"] == "step_cap"


@pytest.mark.parametrize(
    ("key", "value", "shape"),
    [
        ("gen_ai.completion", {"answer": "4"}, "an object with keys 'answer'"),
        ("gen_ai.completion", json.dumps([1, 2]), "a list of int"),
        ("gen_ai.output.messages", json.dumps([{"role": "assistant", "content": "4"}, "stray"]), "items that are not"),
    ],
)
def test_known_content_in_an_unknown_shape_is_a_warning_and_strict_refuses(tmp_path, capsys, key, value, shape):
    (tmp_path / "t.json").write_text(json.dumps(_otlp({**DEPRECATED, key: value})))
    assert main(["import", str(tmp_path / "t.json"), "-o", str(tmp_path / "out.json")]) == 0
    err = capsys.readouterr().err
    assert f"warning: {tmp_path / 't.json'}: span 'chat gpt-4o' ({'cd' * 8}): attribute {key} holds {shape}" in err
    assert main(["import", str(tmp_path / "t.json"), "--strict", "-o", str(tmp_path / "strict.json")]) == 2
    err = capsys.readouterr().err
    assert f"error: {tmp_path / 't.json'}: span 'chat gpt-4o'" in err and "--strict" in err
    assert not (tmp_path / "strict.json").exists()


def test_a_token_count_that_is_not_a_number_is_a_warning_not_a_traceback(tmp_path, capsys):
    attrs = {**DEPRECATED, "gen_ai.completion": "4", "gen_ai.usage.input_tokens": "many"}
    (tmp_path / "t.json").write_text(json.dumps(_otlp(attrs)))
    assert main(["import", str(tmp_path / "t.json"), "-o", str(tmp_path / "out.json")]) == 0
    err = capsys.readouterr().err
    assert "attribute gen_ai.usage.input_tokens is a str ('many'), not a number: counted as 0" in err
    t = json.loads((tmp_path / "out.json").read_text())
    assert t["spans"][1]["tokens_in"] == 0 and t["final_output"] == "4"


def test_case_attr_maps_the_runs_of_one_file_to_their_cases(tmp_path, capsys):
    answer = {**DEPRECATED, "gen_ai.completion": "4"}
    runs = [
        _otlp({**answer, "app.case": "sums"}, trace_id="01" * 16),  # on the span
        _otlp(answer, trace_id="02" * 16, resource={"app.case": "sums"}),  # on the resource
        _otlp(answer, trace_id="03" * 16, resource={"app.case": "other"}),
        _otlp(answer, trace_id="04" * 16),  # names none
    ]
    export = {"resourceSpans": [rs for r in runs for rs in r["resourceSpans"]]}
    (tmp_path / "day.json").write_text(json.dumps(export))
    out = tmp_path / "t.json"
    assert main(["import", str(tmp_path / "day.json"), "--case-attr", "app.case", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    got = [(t["case_id"], t["attempt"]) for t in json.loads(out.read_text())]
    assert got == [("sums", 0), ("sums", 1), ("other", 0), ("day", 0)]
    assert f"warning: {tmp_path / 'day.json'}: trace {'04' * 16}: no span or resource has attribute app.case" in err
    assert main(["import", str(tmp_path / "day.json"), "--case-attr", "app.case", "--strict", "-o", str(out)]) == 2


def test_a_choice_event_with_an_unreadable_message_is_a_warning_and_a_text_message_is_read(tmp_path, capsys):
    def export(message: Any) -> dict[str, Any]:
        doc = _otlp({**DEPRECATED})
        event = {"name": "gen_ai.choice", "attributes": [_attr("message", message), _attr("finish_reason", "stop")]}
        doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["events"] = [event]
        return doc

    notes: list[str] = []
    [t] = convert(export("Four."), case_id="c", notes=notes)
    assert t["final_output"] == "Four." and t["finish_reason"] == "finish" and notes == []
    [t] = convert(export(json.dumps([4])), case_id="c", notes=notes)
    assert t["final_output"] is None
    assert notes == [
        f"span 'chat gpt-4o' ({'cd' * 8}): event gen_ai.choice holds a message that is a list of int, a shape the "
        "importer does not read: that content is not in the trace"
    ]
