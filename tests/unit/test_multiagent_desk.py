"""The triage -> billing desk (tests/unit/_multiagent_desk.py), written with the OpenAI Agents SDK and with
LangGraph, run live through each framework's real client against the model double: its per-agent and handoff
checks pass clean; with the planted bug (triage refunds itself) only the check scoped to triage fails, naming
triage; the kit's runner, DeepEval's metrics and Promptfoo's provider give the same verdicts. The runs are
committed as fixtures (tests/fixtures/multiagent/), and judging those gives the same verdicts again."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kit.case import load_suite
from kit.doubles.openai_server import ScriptedOpenAIServer
from kit.evaluate import evaluate
from kit.runner import invoke
from kit.runner.agents import load_agent
from kit.trace import parse_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "multiagent"
CASES = FIXTURES / "desk.yaml"
DESKS = ["agents_desk", "langgraph_desk"]
BUG = {"not_called:issue_refund@agent:triage": "agent triage: forbidden issue_refund was called 1 time"}


@pytest.fixture(scope="module")
def model_url() -> Any:
    import _multiagent_desk

    with ScriptedOpenAIServer(_multiagent_desk.script) as srv:
        os.environ["DESK_MODEL_URL"] = srv.base_url
        try:
            yield srv.base_url
        finally:
            del os.environ["DESK_MODEL_URL"]


@pytest.fixture(scope="module")
def case() -> Any:
    suite = load_suite(CASES)
    assert not suite.errors
    return suite.cases[0]


def _failed(results: Any) -> dict[str, str]:
    return {r.name: r.reason for r in results if not r.passed}


@pytest.mark.parametrize("bug", [False, True])
@pytest.mark.parametrize("desk", DESKS)
def test_the_desk_live_in_the_kits_runner(desk: str, bug: bool, model_url: str, case: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("DESK_BUG", "1" if bug else "0")
    run = invoke(load_agent(f"_multiagent_desk:{desk}"), case, 0, timeout=60)
    assert run.case_run.error is None, run.case_run.error
    assert _failed(run.case_run.results) == (BUG if bug else {})
    trace = parse_trace(run.trace)
    assert [(a.name, a.parent, a.via) for a in trace.agent_tree] == [
        ("triage", None, None),
        ("billing", "triage", "handoff"),
    ]
    # The committed recording is this run: same steps, agents and handoffs (ids and timings aside).
    recorded = parse_trace(json.loads((FIXTURES / f"{desk}{'-bug' if bug else ''}.json").read_text()))
    assert [(s.kind, s.name, s.agent) for s in recorded.spans] == [(s.kind, s.name, s.agent) for s in trace.spans]
    assert recorded.handoffs == trace.handoffs


@pytest.mark.parametrize("bug", [False, True])
@pytest.mark.parametrize("desk", DESKS)
def test_the_recorded_desk_judged_by_deepeval_and_the_kit(desk: str, bug: bool, case: Any) -> None:
    from deepeval_metrics.api import replay
    from deepeval_metrics.api import test_case as deepeval_case
    from deepeval_metrics.oracle import oracle_metrics

    path = FIXTURES / f"{desk}{'-bug' if bug else ''}.json"
    assert _failed(evaluate(parse_trace(json.loads(path.read_text())), case).results) == (BUG if bug else {})
    log = replay(path, case)  # judged again by DeepEval's metrics, not presented
    tc = deepeval_case(log)
    failed = {}
    for metric in oracle_metrics(case, log):
        metric.measure(tc)
        if not metric.is_successful():
            failed[metric.name] = metric.reason
    assert failed == (BUG if bug else {})


@pytest.mark.parametrize("bug", [False, True])
@pytest.mark.parametrize("desk", DESKS)
def test_the_desk_live_through_promptfoos_provider(desk: str, bug: bool, model_url: str, monkeypatch: Any) -> None:
    from kit_promptfoo import agent_provider

    monkeypatch.setenv("DESK_BUG", "1" if bug else "0")
    monkeypatch.setenv("KIT_CASES", str(CASES))
    config = {"config": {"agent": f"_multiagent_desk:{desk}"}}
    r = agent_provider.call_api(
        "Please refund order ORD-7.", config, {"vars": {"case_id": "desk", "case_file": str(CASES)}}
    )
    assert "error" not in r, r.get("error")
    kit = r["metadata"]["kit"]
    failed = {c["check"]: c["reason"] for c in kit["verdict"]["checks"] if c["outcome"] != "pass"}
    assert failed == (BUG if bug else {})


def test_kit_check_names_the_failing_agent(capsys: Any) -> None:
    from kit.cli import main as kit

    code = kit(["check", str(FIXTURES / "agents_desk-bug.json"), "--cases", str(CASES)])
    out = capsys.readouterr().out
    assert code == 1
    assert "fail: not_called:issue_refund@agent:triage: agent triage: forbidden issue_refund was called 1 time" in out
    assert kit(["check", str(FIXTURES / "langgraph_desk.json"), "--cases", str(CASES)]) == 0


def test_an_agent_called_as_a_tool_is_in_the_tree(model_url: str, monkeypatch: Any) -> None:
    """The Agents SDK's agents-as-tools: the tool call is triage's, and billing is called from it (via: tool).
    Billing's own steps run inside the call and are not among the RunResult's items (its export has them)."""
    from kit.case import parse_case

    monkeypatch.setenv("DESK_BUG", "0")
    checks = [
        {"type": "handoff", "from": "triage", "to": "billing", "via": "tool", "max": 1},
        {"type": "called", "tool": "ask_billing", "agent": "triage"},
        {"type": "handoff", "via": "handoff", "max": 0, "name": "no control passed"},
    ]
    case = parse_case(
        {"id": "desk", "input": "Please refund order ORD-7.", "checks": checks}, file=None, base_dir=None, invariants={}
    )
    run = invoke(load_agent("_multiagent_desk:agents_tool_desk"), case, 0, timeout=60)
    assert run.case_run.error is None, run.case_run.error
    assert _failed(run.case_run.results) == {}
    trace = parse_trace(run.trace)
    assert [(a.name, a.parent, a.via) for a in trace.agent_tree] == [
        ("triage", None, None),
        ("billing", "triage", "tool"),
    ]
    assert [(s.name, s.agent) for s in trace.tool_calls] == [("lookup_order", "triage"), ("ask_billing", "triage")]


def test_a_conversation_of_several_agents_keeps_each_turns_handoffs() -> None:
    from kit.case import parse_case

    checks = [
        {"type": "handoff", "max": 0, "turn": 0, "name": "no handoff before the yes"},
        {"type": "handoff", "from": "triage", "to": "billing", "turn": 1},
        {"type": "not_called", "tool": "issue_refund", "agent": "triage"},
        {"type": "called", "tool": "issue_refund", "agent": "billing", "turn": "last"},
    ]
    raw = {"id": "chat", "turns": ["Please refund ORD-7.", "Yes."], "checks": checks}
    case = parse_case(raw, file=None, base_dir=None, invariants={})
    run = invoke(load_agent("_multiagent_desk:chat_desk"), case, 0, timeout=30)
    assert run.case_run.error is None, run.case_run.error
    assert _failed(run.case_run.results) == {}
    trace = parse_trace(run.trace)
    assert [(h.from_, h.to, h.turn) for h in trace.handoffs] == [("triage", "billing", 1)]
    at = trace.handoffs[0].at
    assert (trace.spans[at - 1].name, trace.spans[at].agent) == ("transfer_to_billing", "billing")
    assert [(s.role, s.agent) for s in trace.spans if s.role == "user"] == [("user", "triage"), ("user", "triage")]


@pytest.mark.parametrize("bug", [False, True])
@pytest.mark.parametrize("desk", DESKS)
def test_the_desk_live_through_deepeval(desk: str, bug: bool, model_url: str, case: Any, monkeypatch: Any) -> None:
    from deepeval_metrics.api import run_agent
    from deepeval_metrics.api import test_case as deepeval_case
    from deepeval_metrics.oracle import oracle_metrics

    monkeypatch.setenv("DESK_BUG", "1" if bug else "0")
    log = run_agent(case, agent=f"_multiagent_desk:{desk}", timeout=60)
    assert log.error is None, log.error
    tc = deepeval_case(log)
    failed = {}
    for metric in oracle_metrics(case, log):
        metric.measure(tc)
        if not metric.is_successful():
            failed[metric.name] = metric.reason
    assert failed == (BUG if bug else {})
