"""Google ADK's default export (content capture off: its recorded desk, tests/fixtures/frameworks/otel-adk.json)
names each tool call and carries none of its arguments, so an `arg` check fails "called without amount".
`kit import` says why, once, naming the setting that turns capture on; the same desk exported with content
captured (otel-adk_content.json) imports with no such note and passes the check."""

from __future__ import annotations

import json
from pathlib import Path

from kit.cli import main as kit

FRAMEWORKS = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"


def test_an_export_without_content_says_its_calls_carry_no_arguments(tmp_path, capsys):
    out = tmp_path / "adk.json"
    assert kit(["import", "--case-id", "refund", str(FRAMEWORKS / "otel-adk.json"), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "2 tool call(s) no arguments" in err and err.count("note:") == 1, err
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only" in err
    assert [(s["name"], s["input"]) for s in json.loads(out.read_text())["spans"] if s["kind"] == "tool"] == [
        ("lookup_order", {}),
        ("issue_refund", {}),
    ]
    assert kit(["check", "--cases", str(FRAMEWORKS / "desk.yaml"), str(out)]) == 1
    assert "issue_refund called without amount" in capsys.readouterr().out


def test_the_same_desk_with_content_captured_has_no_note_and_passes(tmp_path, capsys):
    out = tmp_path / "adk.json"
    assert kit(["import", "--case-id", "refund", str(FRAMEWORKS / "otel-adk_content.json"), "-o", str(out)]) == 0
    assert "note:" not in capsys.readouterr().err
    assert kit(["check", "--cases", str(FRAMEWORKS / "desk.yaml"), str(out)]) == 0
