"""A triage agent that answers alone, named by its framework (tests/unit/_triage_desk.py: the OpenAI Agents
SDK's `Agent(name="triage")`, LangGraph's `create_react_agent(name="triage")`), run live by the kit's own
`invoke` against a scripted model on 127.0.0.2: its `agent: triage` checks pass on triage's own calls, and fail
naming triage when it refunds without a lookup. An agent that names none stays unnamed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from _triage_desk import desk_model

from kit.case import load_suite
from kit.doubles.openai_server import ScriptedOpenAIServer
from kit.runner import invoke
from kit.runner.agents import load_agent
from kit.runner.frameworks import trace_dict
from kit.trace import parse_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"
SCOPED = {"guarded:issue_refund@agent:triage", "order:lookup_order<issue_refund@agent:triage"}


@pytest.fixture(scope="module")
def model_url() -> Any:
    import agents  # noqa: F401  (imported before the timed runs: a cold import is slow on a busy machine)
    import langgraph.prebuilt  # noqa: F401

    with ScriptedOpenAIServer(desk_model, host="127.0.0.2") as srv:
        os.environ["DESK_MODEL_URL"] = srv.base_url
        try:
            yield srv.base_url
        finally:
            del os.environ["DESK_MODEL_URL"]


@pytest.mark.parametrize("bug", [False, True])
@pytest.mark.parametrize("entry", ["agents_triage", "langgraph_triage"])
def test_a_named_agent_alone_passes_or_fails_its_own_checks(entry: str, bug: bool, model_url: Any, monkeypatch) -> None:
    monkeypatch.setenv("DESK_BUG", "1" if bug else "0")
    [case] = load_suite(FIXTURES / "triage.yaml").cases
    run = invoke(load_agent(f"_triage_desk:{entry}"), case, 0, timeout=60)
    assert run.case_run.error is None, run.case_run.error
    failed = {r.name: r.reason for r in run.case_run.results if not r.passed}
    assert set(failed) == (SCOPED | {"called:lookup_order@agent:triage"} if bug else set()), failed
    assert all("no such agent" not in why for why in failed.values())
    trace = parse_trace(run.trace)
    assert trace.agent_names == ("triage",) and trace.handoffs == []


def test_a_langgraph_agent_that_names_none_stays_unnamed() -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    dump = trace_dict({"messages": [HumanMessage("hi"), AIMessage("hello")]}, "c")
    assert "handoffs" not in dump and all("agent" not in s for s in dump["spans"])
