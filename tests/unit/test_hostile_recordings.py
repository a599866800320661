"""Recordings, round three (items 12 and 13): a conversation id reused by other cases or days later is not
one run; a log line after ConsoleSpanExporter output is named by its own line. Spans come from the real
OpenTelemetry SDK and its real exporters."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from kit.errors import KitInputError
from kit.importers import import_file

DAY_NS = 86400 * 10**9


def _record(case: str, conversation: str, start_ns: int, exporter: Any) -> None:
    """One request of a chat app: an agent span with a model call and a tool call under it."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    common = {"gen_ai.conversation.id": conversation, "kit.case_id": case}
    # Each span is ended at its own time (end_on_exit off: the context manager would end it again).
    with tracer.start_as_current_span(
        "invoke_agent desk", start_time=start_ns, attributes=common, end_on_exit=False
    ) as root:
        with tracer.start_as_current_span(
            "chat m",
            start_time=start_ns + 1000,
            attributes={**common, "gen_ai.operation.name": "chat", "gen_ai.request.model": "m"},
            end_on_exit=False,
        ) as s:
            s.end(start_ns + 2000)
        with tracer.start_as_current_span(
            f"execute_tool {case}_tool",
            start_time=start_ns + 3000,
            attributes={**common, "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"{case}_tool"},
            end_on_exit=False,
        ) as t:
            t.end(start_ns + 4000)
        root.end(start_ns + 5000)


def _console(tmp_path: Path, runs: list[tuple[str, str, int]], tail: str = "") -> Path:
    out = io.StringIO()
    for case, conversation, start in runs:
        _record(case, conversation, start, ConsoleSpanExporter(out=out))
    path = tmp_path / "spans.txt"
    path.write_text(out.getvalue() + tail)
    return path


START = 1_764_000_000 * 10**9


def test_a_conversation_id_reused_by_another_case_days_later_is_two_runs(tmp_path: Path) -> None:
    path = _console(tmp_path, [("refund", "conv-1", START), ("status", "conv-1", START + 2 * DAY_NS)])
    notes: list[str] = []
    traces = import_file(path, notes=notes)
    got = {t["case_id"]: [s["name"] for s in t["spans"] if s["kind"] == "tool"] for t in traces}
    assert got == {"refund": ["refund_tool"], "status": ["status_tool"]}
    assert any("conversation 'conv-1' is reused by the runs of several cases ('refund', 'status')" in n for n in notes)


def test_the_same_case_and_conversation_two_days_apart_is_two_runs(tmp_path: Path) -> None:
    path = _console(tmp_path, [("refund", "conv-1", START), ("refund", "conv-1", START + 2 * DAY_NS)])
    notes: list[str] = []
    traces = import_file(path, notes=notes)
    assert [(t["case_id"], t["attempt"]) for t in traces] == [("refund", 0), ("refund", 1)]
    assert any("starts 2.0 days after the one before it" in n for n in notes)


def test_turns_of_one_conversation_minutes_apart_are_still_one_run(tmp_path: Path) -> None:
    path = _console(tmp_path, [("refund", "conv-1", START), ("refund", "conv-1", START + 60 * 10**9)])
    notes: list[str] = []
    [trace] = import_file(path, notes=notes)
    assert [s["name"] for s in trace["spans"] if s["kind"] == "tool"] == ["refund_tool", "refund_tool"]
    assert notes == []


def test_a_log_line_after_console_spans_is_named_by_its_own_line(tmp_path: Path) -> None:
    path = _console(
        tmp_path, [("refund", f"conv-{i}", START + i * 10**9) for i in range(3)], "INFO:app:shutting down\n"
    )
    culprit = path.read_text().split("\n").index("INFO:app:shutting down") + 1
    assert culprit > 100  # the spans fill a few hundred lines
    with pytest.raises(KitInputError) as e:
        import_file(path)
    assert f"malformed JSON on line {culprit}: not a JSON object: 'INFO:app:shutting down'" in str(e.value)
    assert "spans.txt" in str(e.value)


def test_json_lines_errors_count_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "conv.jsonl"
    good = json.dumps({"messages": [{"role": "user", "content": "hi"}]})
    path.write_text(f"{good}\n\n\n{good}\n{{broken\n")
    with pytest.raises(KitInputError, match="malformed JSON on line 5"):
        import_file(path)


def test_in_memory_spans_are_real(tmp_path: Path) -> None:
    """The helper records what the SDK records: three spans per request, the conversation on each."""
    exporter = InMemorySpanExporter()
    _record("refund", "conv-1", START, exporter)
    spans = exporter.get_finished_spans()
    assert len(spans) == 3 and {s.attributes["gen_ai.conversation.id"] for s in spans} == {"conv-1"}
