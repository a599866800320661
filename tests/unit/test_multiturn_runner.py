"""The runner on multi-turn cases: one call per turn with the history, one joined trace with turns, errors
that name the case, a simulated user from a user model (the local double), skipped without one."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from kit.case import load_suite
from kit.doubles.openai_server import ScriptedOpenAIServer
from kit.runner import invoke
from kit.runner.agents import load_agent, reference_agent
from kit.runner.usersim import NO_USER_REASON, PROMPT, STOP, prompt_hash
from kit.store.rows import case_rows
from kit.trace import parse_trace

CALLS: list[dict[str, Any]] = []
MODULE = "tests.unit.test_multiturn_runner"


def _case(tmp_path: Path, body: str) -> Any:
    f = tmp_path / "cases.yaml"
    f.write_text(body)
    suite = load_suite(f)
    assert not suite.errors, [str(e) for e in suite.errors]
    return suite.cases[0]


TWO_TURNS = """
- id: chat
  turns: ["Refund ORD-100001 please", "Yes, go ahead."]
  checks:
    - {type: not_called, tool: issue_refund, turn: 0}
    - {type: called, tool: issue_refund, turn: 1}
    - {type: contains, text: "refunded", turn: last}
"""


# --- agents a user would write (importable as tests.unit.test_multiturn_runner:<name>) ---
def messages_agent(text: str, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stateless: decides from the history alone, answers with OpenAI messages."""
    CALLS.append({"text": text, "history": json.loads(json.dumps(history))})
    if text.lower().startswith("yes"):
        call = {"id": "c1", "type": "function", "function": {"name": "issue_refund", "arguments": '{"order_id": "x"}'}}
        return [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'},
            {"role": "assistant", "content": "Done: refunded."},
        ]
    return [{"role": "user", "content": text}, {"role": "assistant", "content": "Shall I refund it?"}]


def trace_agent(text: str, history: list[dict[str, Any]], case: Any) -> dict[str, Any]:
    CALLS.append({"text": text, "case": case.id})
    tool = (
        [{"kind": "tool", "name": "issue_refund", "input": {}, "output": {"ok": True}}] if "yes" in text.lower() else []
    )
    answer = "refunded" if tool else "Shall I?"
    return {
        "case_id": "ignored",
        "final_output": answer,
        "spans": [*tool, {"kind": "message", "role": "assistant", "content": answer}],
    }


def single_turn_agent(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}, {"role": "assistant", "content": "hi"}]


def broken_second_turn(text: str, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if history:
        raise RuntimeError("lost the thread")
    return [{"role": "assistant", "content": "Shall I?"}]


def _agent(name: str) -> Any:
    return load_agent(f"{MODULE}:{name}")


def _calls() -> list[dict[str, Any]]:
    """The calls the loaded agents saw (load_agent imports this file under its dotted name, which may be
    another module object than the one pytest runs)."""
    return importlib.import_module(MODULE).CALLS


def test_called_once_per_turn_with_the_history_and_joined_into_one_trace(tmp_path: Path) -> None:
    _calls().clear()
    case = _case(tmp_path, TWO_TURNS)
    inv = invoke(_agent("messages_agent"), case, 0, timeout=10)
    assert inv.case_run.passed, inv.case_run.failures
    assert [c["text"] for c in _calls()] == ["Refund ORD-100001 please", "Yes, go ahead."]
    assert _calls()[0]["history"] == []
    assert _calls()[1]["history"] == [
        {"role": "user", "content": "Refund ORD-100001 please"},
        {"role": "assistant", "content": "Shall I refund it?"},
    ]
    trace = parse_trace(inv.trace)
    assert trace.final_output == "Done: refunded."
    assert all(s.turn is not None for s in trace.spans)
    users = [(s.turn, s.content) for s in trace.spans if s.kind == "message" and s.role == "user"]
    assert users == [(0, "Refund ORD-100001 please"), (1, "Yes, go ahead.")]  # the echoed user message once
    assert [(s.turn, s.name) for s in trace.tool_calls] == [(1, "issue_refund")]


def test_trace_dict_turns_and_the_case_keyword(tmp_path: Path) -> None:
    _calls().clear()
    case = _case(tmp_path, TWO_TURNS)
    inv = invoke(_agent("trace_agent"), case, 2, timeout=10)
    assert inv.case_run.passed, inv.case_run.failures
    assert _calls() == [
        {"text": "Refund ORD-100001 please", "case": "chat"},
        {"text": "Yes, go ahead.", "case": "chat"},
    ]
    assert inv.trace["case_id"] == "chat" and inv.trace["attempt"] == 2


def test_a_turn_scoped_check_fails_on_the_wrong_turn(tmp_path: Path) -> None:
    case = _case(tmp_path, TWO_TURNS.replace("turn: 0}", "turn: 1}", 1))
    run = invoke(_agent("messages_agent"), case, 0, timeout=10).case_run
    assert [f.name for f in run.failures] == ["not_called:issue_refund@turn1"]


def test_a_multi_turn_case_on_an_agent_without_history_is_an_error_naming_the_case(tmp_path: Path) -> None:
    case = _case(tmp_path, TWO_TURNS)
    run = invoke(_agent("single_turn_agent"), case, 0, timeout=10).case_run
    assert run.outcome == "error" and not run.passed
    assert "case 'chat'" in run.error and "history" in run.error


def test_a_single_turn_case_is_one_turn_for_a_history_agent(tmp_path: Path) -> None:
    _calls().clear()
    case = _case(tmp_path, '- id: one\n  input: "Refund it"\n  checks: [{type: contains, text: "refund it?"}]\n')
    run = invoke(_agent("messages_agent"), case, 0, timeout=10).case_run
    assert run.passed and _calls() == [{"text": "Refund it", "history": []}]


def test_an_agent_that_breaks_in_a_later_turn_is_an_error_naming_the_turn(tmp_path: Path) -> None:
    case = _case(tmp_path, TWO_TURNS)
    inv = invoke(_agent("broken_second_turn"), case, 0, timeout=10)
    assert inv.trace is None and inv.case_run.outcome == "error"
    assert "RuntimeError: lost the thread" in inv.case_run.error and "in turn 1" in inv.case_run.error


def test_the_reference_agent_holds_a_conversation(tmp_path: Path) -> None:
    case = _case(
        tmp_path,
        TWO_TURNS.replace("turns:", "context: {customer_id: C001}\n  turns:").replace(
            '"refunded"', '"refund of $42.50"'
        ),
    )
    inv = invoke(reference_agent(), case, 0, timeout=10)
    assert inv.case_run.passed, inv.case_run.failures
    trace = parse_trace(inv.trace)
    assert trace.turns == (0, 1) and trace.end_state["refunds"][-1]["order_id"] == "ORD-100001"
    faulty = invoke(reference_agent(variant="act_before_confirm"), case, 0, timeout=10).case_run
    assert "not_called:issue_refund@turn0" in [f.name for f in faulty.failures]


USER_CASE = """
- id: sim
  context: {customer_id: C001}
  user: {instruction: "You want a refund for ORD-100001 (damaged). Say yes when asked.", max_turns: 4}
  checks:
    - {type: called, tool: issue_refund}
    - {type: not_called, tool: issue_refund, turn: 0}
"""


def test_a_simulated_user_without_a_user_model_is_skipped_never_a_pass(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("KIT_USER_MODEL", raising=False)
    case = _case(tmp_path, USER_CASE)
    run = invoke(reference_agent(), case, 0, timeout=10).case_run
    assert run.outcome == "skipped" and not run.passed and run.skipped == NO_USER_REASON
    rows = case_rows("r1", run, None)
    assert [(r["passed"], r["outcome"]) for r in rows["case_results"]] == [(False, "skipped")]
    assert [(r["check"], r["outcome"], r["reason"]) for r in rows["check_results"]] == [
        ("simulated_user", "skipped", NO_USER_REASON)
    ]


def test_a_simulated_user_talks_through_the_user_model(tmp_path: Path, monkeypatch) -> None:
    script = ["Hi, my pour-over set from ORD-100001 arrived damaged, please refund it.", "Yes, go ahead.", STOP]
    with ScriptedOpenAIServer(script) as srv:
        monkeypatch.setenv("KIT_USER_MODEL", "user-double-2024-01-01")
        monkeypatch.setenv("KIT_USER_BASE_URL", srv.base_url)
        inv = invoke(reference_agent(), _case(tmp_path, USER_CASE), 0, timeout=10)
        requests = srv.requests
    assert inv.case_run.passed, (inv.case_run.error, inv.case_run.failures)
    trace = parse_trace(inv.trace)
    assert trace.turns == (0, 1)
    instruction = "You want a refund for ORD-100001 (damaged). Say yes when asked."
    assert inv.trace["user_simulator"] == {
        "model": "user-double-2024-01-01",
        "configured_model": "user-double-2024-01-01",
        "prompt_hash": prompt_hash(instruction),
        "calls": 3,
    }
    assert all(r["temperature"] == 0 and r["model"] == "user-double-2024-01-01" for r in requests)
    assert requests[0]["messages"][0] == {"role": "system", "content": PROMPT.format(instruction=instruction)}
    # The user model sees the agent's answer as the other party's message, its own as its own.
    second = requests[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": script[0]}
    assert second[-1]["role"] == "user" and second[-1]["content"].endswith("Shall I go ahead?")


def test_a_failing_user_model_is_an_error_naming_it(tmp_path: Path, monkeypatch) -> None:
    with ScriptedOpenAIServer([503]) as srv:
        monkeypatch.setenv("KIT_USER_MODEL", "user-double-2024-01-01")
        monkeypatch.setenv("KIT_USER_BASE_URL", srv.base_url)
        run = invoke(reference_agent(), _case(tmp_path, USER_CASE), 0, timeout=10).case_run
    assert run.outcome == "error" and "user model user-double-2024-01-01" in run.error and "503" in run.error


def test_a_floating_user_model_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("KIT_USER_MODEL", "gpt-4o")
    monkeypatch.setenv("KIT_USER_BASE_URL", "http://127.0.0.1:9/v1")
    run = invoke(reference_agent(), _case(tmp_path, USER_CASE), 0, timeout=10).case_run
    assert run.outcome == "error" and "floating alias" in run.error


@pytest.mark.parametrize("timeout", [0.5])
def test_the_timeout_covers_the_whole_conversation(tmp_path: Path, timeout: float) -> None:
    case = _case(tmp_path, TWO_TURNS.replace('"Yes, go ahead."', '"Yes, go ahead.", "slow"'))
    run = invoke(_agent("slow_agent"), case, 0, timeout=timeout).case_run
    assert run.outcome == "error" and "timeout" in run.error


def slow_agent(text: str, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    import time

    time.sleep(0.3)  # three turns of 0.3 s overrun a 0.5 s budget only together
    return [{"role": "assistant", "content": "ok"}]
