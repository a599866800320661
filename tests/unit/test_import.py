"""Trace importers: OpenAI message lists and OTLP JSON (GenAI semconv, OpenInference) -> kit traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit.cli import main as kit
from kit.errors import KitInputError
from kit.importers import convert, detect, import_file
from kit.trace import parse_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "import"


def tools(trace: dict) -> list[tuple[str, dict]]:
    return [(s["name"], s["input"]) for s in trace["spans"] if s["kind"] == "tool"]


# --- OpenAI -----------------------------------------------------------------------------------------------


def test_openai_tool_calls_results_usage_and_final_output():
    [t] = import_file(DATA / "openai_refund.json", case_id="refund-happy-path")
    assert t["case_id"] == "refund-happy-path"
    assert t["model"] == "gpt-4o-2024-08-06"
    # JSON-string arguments are parsed (the classic bug reads them as {}).
    assert tools(t) == [
        ("lookup_order", {"order_id": "ORD-123456"}),
        ("issue_refund", {"order_id": "ORD-123456", "amount": 42.5}),
        ("send_email", {"to": "C001", "template": "refund_issued"}),
    ]
    # Results are matched by tool_call_id even when they arrive out of order.
    refund = next(s for s in t["spans"] if s.get("name") == "issue_refund")
    assert refund["output"] == {"ok": True, "refund_id": "RF-0091"}
    assert refund["error"] is None
    trace = parse_trace(t)
    assert trace.totals["steps"] == 3
    assert trace.totals["tokens"] == 812 + 22 + 880 + 61 + 990 + 24
    assert t["final_output"].startswith("Refund of $42.50 issued")
    assert t["finish_reason"] == "finish"
    roles = [s["role"] for s in t["spans"] if s["kind"] == "message"]
    assert roles == ["system", "user", "assistant", "assistant"]


def test_openai_jsonl_with_raw_completions_and_malformed_arguments():
    [t] = import_file(DATA / "openai_completions.jsonl")
    assert t["case_id"] == "openai_completions"  # the file name, when no case id is given
    first, second = (s for s in t["spans"] if s["kind"] == "tool")
    # Malformed JSON from the model is kept as a failed call, not dropped and not a load error.
    assert first["input"] == {} and "not valid JSON" in first["error"]
    assert second["input"] == {"order_id": "ORD-777001"} and second["error"] is None
    assert [s["tokens_in"] for s in t["spans"] if s["kind"] == "llm"] == [402, 451, 512]
    assert t["model"] == "gpt-4o-mini-2024-07-18"
    assert "UPS" in t["final_output"]


def test_openai_conversation_ending_on_a_pending_tool_call_did_not_finish():
    msgs = [
        {"role": "user", "content": "refund ORD-1"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "lookup_order", "arguments": '{"order_id":"ORD-1"}'},
                }
            ],
        },
    ]
    [t] = convert(msgs, case_id="c")
    assert t["finish_reason"] is None and t["final_output"] is None
    # Nothing shows that the call ran: it is kept as requested, and the checks over calls do not count it.
    assert t["spans"][-1]["executed"] is False and t["spans"][-1]["error"] is None
    trace = parse_trace(t)
    assert trace.tool_calls == () and [s.name for s in trace.requested_calls] == ["lookup_order"]


def test_openai_finish_tool_gives_the_answer_and_total_usage_is_counted_once():
    conv = {
        "usage": {"prompt_tokens": 100, "completion_tokens": 10},
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "f", "type": "function", "function": {"name": "finish", "arguments": '{"answer": "Hello!"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "f", "content": "ok"},
        ],
    }
    [t] = convert(conv, case_id="c")
    assert t["final_output"] == "Hello!" and t["finish_reason"] == "finish"
    assert parse_trace(t).totals["tokens"] == 110


def test_openai_several_conversations_become_attempts():
    conv = {
        "case_id": "greet",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello"}],
    }
    traces = convert([conv, conv, conv])
    assert [(t["case_id"], t["attempt"]) for t in traces] == [("greet", 0), ("greet", 1), ("greet", 2)]


def test_openai_bad_role_names_the_file_and_message():
    with pytest.raises(KitInputError, match=r"x\.json: message 1: role: .*unknown role 'robot'"):
        convert([{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}], "openai", file="x.json")


# --- OpenTelemetry ----------------------------------------------------------------------------------------


def test_genai_spans_ordered_by_start_with_errors_latency_and_case_id():
    [t] = import_file(DATA / "otel_genai_refund.json")
    assert t["case_id"] == "refund-damaged-retry"  # from the kit.case_id attribute
    assert t["source_format"] == "otel-genai"
    kinds = [s["kind"] if s["kind"] != "tool" else s["name"] for s in t["spans"] if s["kind"] != "message"]
    # The export lists spans out of order; the trace follows start times.
    assert kinds == ["llm", "lookup_order", "llm", "issue_refund", "llm", "issue_refund", "llm"]
    failed, ok = (s for s in t["spans"] if s.get("name") == "issue_refund")
    assert failed["error"] == "payment gateway timeout"  # from the span status
    assert failed["latency_ms"] == 500.0
    assert ok["error"] is None and ok["output"] == {"ok": True, "refund_id": "RF-0091"}
    assert ok["input"] == {"order_id": "ORD-123456", "amount": 42.5, "reason": "damaged"}
    assert t["latency_ms"] == 5120.0
    trace = parse_trace(t)
    assert trace.totals["tokens"] == 812 + 24 + 905 + 31 + 960 + 31 + 1012 + 38
    assert t["final_output"].startswith("Refund of $42.50") and t["finish_reason"] == "finish"
    assert [s["content"][:3] for s in t["spans"] if s["kind"] == "message" and s["role"] == "user"] == ["Hi,"]


def test_genai_tool_spans_without_content_take_arguments_from_the_model_calls():
    first, second = import_file(DATA / "otel_genai_two_runs.json", case_id="kb-returns")
    assert (first["attempt"], second["attempt"]) == (0, 1)
    assert tools(first) == [("search_kb", {"query": "return window opened electronics"})]
    kb = next(s for s in first["spans"] if s["kind"] == "tool")
    assert kb["output"]["results"][0]["id"] == "KB-12"
    assert first["finish_reason"] == "finish"
    assert second["finish_reason"] == "step_cap"  # finish_reasons: ["length"]


def test_openinference_llm_and_tool_spans():
    [t] = import_file(DATA / "otel_openinference_address.json", case_id="address-change")
    assert t["source_format"] == "otel-openinference"
    assert [n for n, _ in tools(t)] == ["verify_identity", "lookup_order", "update_shipping_address"]
    addr = tools(t)[2][1]
    assert addr["address"]["zip"] == "62704"
    trace = parse_trace(t)
    assert trace.totals["steps"] == 4
    assert trace.totals["tokens"] == 310 + 22 + 352 + 18 + 395 + 41 + 433 + 24
    assert trace.totals["cost_usd"] == pytest.approx(0.0000597 + 0.0000636 + 0.0000839 + 0.0000794)
    assert t["model"] == "gpt-4o-mini-2024-07-18"
    assert t["final_output"] == "Done: ORD-555001 will ship to 12 Elm Street, Springfield 62704."
    assert t["latency_ms"] == 3900.0


def test_forcing_a_convention_ignores_the_other():
    data = json.loads((DATA / "otel_openinference_address.json").read_text())
    # Nothing follows the forced convention: exit 2 saying what was found, never an empty trace.
    with pytest.raises(KitInputError, match=r"none of its 8 span\(s\) follows the GenAI semantic conventions"):
        convert(data, "genai", case_id="x", file="f.json")
    [t] = convert(data, "openinference", case_id="x")
    assert len(tools(t)) == 3


def test_chat_spans_only_tool_calls_are_synthesised_from_messages():
    mk = lambda k, v: {"key": k, "value": {"stringValue": v} if isinstance(v, str) else {"intValue": str(v)}}  # noqa: E731
    out1 = [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "t1", "name": "lookup_order", "arguments": {"order_id": "ORD-9"}}],
        }
    ]
    in2 = [
        {"role": "user", "parts": [{"type": "text", "content": "where is ORD-9"}]},
        *out1,
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "t1", "response": {"status": "lost"}}]},
    ]
    out2 = [{"role": "assistant", "parts": [{"type": "text", "content": "It is lost, sorry."}]}]
    spans = [
        {
            "traceId": "a",
            "spanId": "1",
            "name": "chat m",
            "startTimeUnixNano": "1000000",
            "endTimeUnixNano": "2000000",
            "attributes": [
                mk("gen_ai.operation.name", "chat"),
                mk("gen_ai.input.messages", json.dumps(in2[:1])),
                mk("gen_ai.output.messages", json.dumps(out1)),
                mk("gen_ai.usage.input_tokens", 50),
            ],
        },
        {
            "traceId": "a",
            "spanId": "2",
            "name": "chat m",
            "startTimeUnixNano": "3000000",
            "endTimeUnixNano": "4000000",
            "attributes": [
                mk("gen_ai.operation.name", "chat"),
                mk("gen_ai.input.messages", json.dumps(in2)),
                mk("gen_ai.output.messages", json.dumps(out2)),
            ],
        },
    ]
    [t] = convert({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}, case_id="lost")
    assert tools(t) == [("lookup_order", {"order_id": "ORD-9"})]
    assert next(s for s in t["spans"] if s["kind"] == "tool")["output"] == {"status": "lost"}
    assert [s["role"] for s in t["spans"] if s["kind"] == "message"] == ["user", "assistant"]
    assert t["final_output"] == "It is lost, sorry." and t["latency_ms"] == 3.0


def test_detection_and_unknown_format():
    assert detect(json.loads((DATA / "otel_genai_refund.json").read_text())) == "otel"
    assert detect([{"role": "user", "content": "x"}]) == "openai"
    assert detect({"case_id": "c", "spans": []}) == "trace"
    with pytest.raises(KitInputError, match="unknown trace format"):
        convert({"hello": 1}, file="f.json")


# --- the command ------------------------------------------------------------------------------------------


def test_kit_import_writes_a_trace_that_kit_check_accepts(tmp_path, capsys):
    out = tmp_path / "t.json"
    assert kit(["import", str(DATA / "openai_refund.json"), "--case-id", "refund", "-o", str(out)]) == 0
    case = tmp_path / "cases.yaml"
    case.write_text(
        "id: refund\ninput: refund ORD-123456\nchecks:\n"
        "  - {type: arg, tool: issue_refund, key: amount, expected: 42.5}\n"
        "  - {type: order, before: lookup_order, after: issue_refund}\n"
        "  - {type: finished}\n"
    )
    assert kit(["check", str(out), "--cases", str(case)]) == 0
    assert "1/1 runs passed" in capsys.readouterr().out


def test_kit_import_bad_file_exits_2_naming_it(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert kit(["import", str(bad)]) == 2
    assert f"{bad}: malformed JSON" in capsys.readouterr().err


def test_kit_import_several_files_of_one_case_numbers_attempts(tmp_path, capsys):
    out = tmp_path / "all.json"
    f = str(DATA / "openai_refund.json")
    assert kit(["import", f, f, str(DATA / "otel_genai_two_runs.json"), "--case-id", "c", "-o", str(out)]) == 0
    traces = json.loads(out.read_text())
    assert [(t["case_id"], t["attempt"]) for t in traces] == [("c", 0), ("c", 1), ("c", 2), ("c", 3)]
