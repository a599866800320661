"""Recorded conversations come in as conversations: a user message starts a turn, and a tool call counts as
a call only when it ran. The acceptance: a two-turn conversation with a confirmation guard, recorded as a
message list and as real spans of OpenInference (OTLP, and as the SDK's ConsoleSpanExporter prints them),
the GenAI conventions (opentelemetry-instrumentation-openai-v2) and OpenLLMetry (tests/data/import/library/,
made by
scripts/otel_exports/generate.py), gives on import the same `kit check` verdicts as the live run of the
same agent against the same model double; the buggy agent fails naming the turn-0 check."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kit.case import load_suite
from kit.cli import main
from kit.doubles.openai_server import ScriptedOpenAIServer
from kit.importers import convert
from kit.runner.agents import load_agent
from kit.runner.invoke import invoke
from kit.trace import parse_trace

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "tests" / "data" / "import" / "library"
AGENTS = ROOT / "scripts" / "otel_exports"


def _kit(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _verdicts(results: list[dict[str, Any]]) -> dict[str, str]:
    return {r["check"]: r["outcome"] for r in results}


@pytest.fixture(scope="module")
def live() -> dict[str, dict[str, str]]:
    """The live runs (what `kit run` does per run: the agent called once per turn, joined, judged)."""
    sys.path.insert(0, str(AGENTS))
    import library_agent

    case = load_suite(LIBRARY / "cases.yaml").cases[0]
    out = {}
    mp = pytest.MonkeyPatch()
    try:
        for which in ("guarded", "buggy"):
            with ScriptedOpenAIServer(library_agent.script(which == "guarded")) as srv:
                mp.setenv("LIBRARY_MODEL_URL", srv.base_url)
                inv = invoke(load_agent(f"library_agent:{which}"), case, 0, timeout=60)
                assert srv.remaining == 0
            assert inv.case_run.error is None, inv.case_run.error
            out[which] = {r.name: r.outcome for r in inv.case_run.results}
    finally:
        mp.undo()
        sys.path.remove(str(AGENTS))
    return out


@pytest.mark.parametrize("which", ["guarded", "buggy"])
@pytest.mark.parametrize("recording", ["messages", "openinference", "console", "genai", "traceloop"])
def test_an_imported_recording_gets_the_live_runs_verdicts(tmp_path, capsys, live, recording, which):
    imported = tmp_path / "t.json"
    code, _, err = _kit(
        capsys,
        "import",
        str(LIBRARY / f"{recording}_{which}.json"),
        "--case-id",
        "return-confirmed",
        "-o",
        str(imported),
    )
    assert code == 0, err
    code, out, err = _kit(capsys, "check", str(imported), "--cases", str(LIBRARY / "cases.yaml"), "--json")
    [run] = json.loads(out)["results"]
    assert _verdicts(run["checks"]) == live[which]
    if which == "guarded":
        assert code == 0 and run["passed"], err
    else:
        failed = [r["check"] for r in run["checks"] if r["outcome"] != "pass"]
        assert code == 1 and failed == [
            "not_called:return_book@turn0",
            "contains@turn0",
            "called:return_book@turn1",
            "args:return_book@turn1",
        ]
        reason = next(r["reason"] for r in run["checks"] if r["check"] == "not_called:return_book@turn0")
        assert reason == "forbidden return_book was called 1 time"


def test_the_held_request_is_kept_as_requested_and_shown(tmp_path, capsys):
    imported = tmp_path / "t.json"
    _kit(
        capsys,
        "import",
        str(LIBRARY / "openinference_guarded.json"),
        "--case-id",
        "return-confirmed",
        "-o",
        str(imported),
    )
    trace = parse_trace(json.loads(imported.read_text()))
    assert [(s.name, s.turn) for s in trace.requested_calls] == [
        ("list_loans", 0),
        ("return_book", 0),
        ("return_book", 1),
    ]
    assert [(s.name, s.turn) for s in trace.tool_calls] == [("list_loans", 0), ("return_book", 1)]
    assert [(s.name, s.turn) for s in trace.held_calls] == [("return_book", 0)]
    code, out, _ = _kit(capsys, "check", str(imported), "--cases", str(LIBRARY / "cases.yaml"))
    assert code == 0 and "requested, never ran (not counted as calls): return_book (turn 0)" in out
    code, out, _ = _kit(capsys, "check", str(imported), "--cases", str(LIBRARY / "cases.yaml"), "--json")
    assert json.loads(out)["results"][0]["requested_not_run"] == [{"tool": "return_book", "turn": 0}]


def test_calls_requested_counts_what_the_model_asked_for(tmp_path, capsys):
    imported = tmp_path / "t.json"
    _kit(capsys, "import", str(LIBRARY / "openinference_guarded.json"), "--case-id", "c", "-o", str(imported))
    cases = tmp_path / "c.yaml"
    cases.write_text(
        "id: c\ninput: x\nchecks:\n"
        "  - {type: called_at_most, tool: return_book, n: 1, calls: requested}\n"
        "  - {type: not_called, tool: return_book, turn: 0, calls: requested}\n"
        "  - {type: called_at_most, tool: return_book, n: 1}\n"
    )
    code, out, _ = _kit(capsys, "check", str(imported), "--cases", str(cases), "--json")
    assert code == 1
    reasons = {r["check"]: (r["outcome"], r["reason"]) for r in json.loads(out)["results"][0]["checks"]}
    assert reasons == {
        "called_at_most:return_book": ("fail", "return_book called or requested 2 times, at most 1 allowed"),
        "not_called:return_book@turn0": ("fail", "forbidden return_book was called or requested 1 time"),
        "called_at_most:return_book#2": ("pass", "return_book called 1 time"),
    }


def test_the_message_list_imported_as_one_turn_before_is_two_turns_now():
    [t] = convert(json.loads((LIBRARY / "messages_guarded.json").read_text()), case_id="c")
    trace = parse_trace(t)
    assert trace.turns == (0, 1)
    users = [(s.turn, s.content) for s in trace.spans if s.kind == "message" and s.role == "user"]
    assert [u[0] for u in users] == [0, 1]
    assert trace.for_turn(0).final_output.startswith("Shall I return Dune")
    assert [s.name for s in trace.for_turn(1).tool_calls] == ["return_book"]


def _tc(call_id: str, name: str, args: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def test_a_call_answered_in_a_later_turn_belongs_to_the_turn_it_ran_in():
    msgs = [
        {"role": "user", "content": "return Dune"},
        {"role": "assistant", "content": None, "tool_calls": [_tc("c1", "return_book", '{"loan_id": "L42"}')]},
        {"role": "assistant", "content": "Shall I?"},
        {"role": "user", "content": "yes"},
        {"role": "tool", "tool_call_id": "c1", "content": '{"returned": true}'},
        {"role": "assistant", "content": "Returned."},
    ]
    trace = parse_trace(convert(msgs, case_id="c")[0])
    assert [(s.name, s.turn) for s in trace.tool_calls] == [("return_book", 1)]
    assert trace.for_turn(0).tool_calls == ()


def test_one_user_message_is_one_turn_and_consecutive_user_messages_share_a_turn():
    one = [{"role": "system", "content": "s"}, {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert all("turn" not in s for s in convert(one, case_id="c")[0]["spans"])
    two = [*one[:2], {"role": "user", "content": "more"}, {"role": "assistant", "content": "b"}]
    assert all("turn" not in s for s in convert(two, case_id="c")[0]["spans"])


def test_a_turn_count_other_than_the_cases_is_a_clear_failure(tmp_path, capsys):
    one_turn = [{"role": "user", "content": "return Dune"}, {"role": "assistant", "content": "Done."}]
    (tmp_path / "m.json").write_text(json.dumps(one_turn))
    _kit(capsys, "import", str(tmp_path / "m.json"), "--case-id", "return-confirmed", "-o", str(tmp_path / "t.json"))
    code, out, _ = _kit(capsys, "check", str(tmp_path / "t.json"), "--cases", str(LIBRARY / "cases.yaml"), "--json")
    checks = json.loads(out)["results"][0]["checks"]
    assert code == 1 and checks[0]["check"] == "turns" and checks[0]["outcome"] == "fail"
    assert checks[0]["reason"].startswith("the conversation has 1 turn, the case scripts 2 (its `turns:`)")


def test_the_console_exporters_spans_as_a_json_list_import_as_the_otlp_export_does(tmp_path, capsys):
    from kit.importers import read_json

    spans = read_json(LIBRARY / "console_guarded.json")  # printed one object after another
    assert isinstance(spans, list) and len(spans) == 5
    (tmp_path / "list.json").write_text(json.dumps(spans))
    got = {}
    for name, path in (("list", tmp_path / "list.json"), ("otlp", LIBRARY / "openinference_guarded.json")):
        code, out, err = _kit(capsys, "import", str(path), "--case-id", "c")
        assert code == 0, err
        got[name] = json.loads(out)
        for key in ("otel_trace_id", "latency_ms"):
            got[name].pop(key)
        for s in got[name]["spans"]:
            s.pop("latency_ms", None)
    assert got["list"] == got["otlp"]


def test_a_conversation_traced_call_by_call_is_joined_by_its_session(tmp_path, capsys, live):
    """No span around the conversation: each model call is a trace of its own, tagged with OpenInference's
    session.id (`using_session`). The import joins them into one run of two turns."""
    path = LIBRARY / "openinference_session_guarded.json"
    imported = tmp_path / "t.json"
    assert _kit(capsys, "import", str(path), "--case-id", "return-confirmed", "-o", str(imported))[0] == 0
    t = json.loads(imported.read_text())
    assert t["otel_session_id"] == "library-guarded-session" and len(t["otel_trace_ids"]) == 4
    code, out, _ = _kit(capsys, "check", str(imported), "--cases", str(LIBRARY / "cases.yaml"), "--json")
    assert code == 0 and _verdicts(json.loads(out)["results"][0]["checks"]) == live["guarded"]
