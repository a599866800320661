"""The triage -> billing desk's OpenTelemetry exports, recorded through the frameworks' real instrumentation
(tests/fixtures/multiagent/record_otel.py): OpenInference's for the OpenAI Agents SDK and for LangGraph, and
pydantic-ai's own GenAI spans (invoke_agent, gen_ai.agent.name) for its delegation. Imported, each names the
agent of every step and the handoffs, and gives the verdicts the live runs give: clean passes, and with the
planted bug only the check scoped to triage fails, naming triage. Bad exports are clear errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kit.case import load_suite
from kit.errors import KitInputError
from kit.evaluate import evaluate
from kit.importers import import_file
from kit.trace import parse_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "multiagent"
BUG = {"not_called:issue_refund@agent:triage": "agent triage: forbidden issue_refund was called 1 time"}
VARIANTS = ["agents", "langgraph", "pydantic_ai"]


@pytest.fixture(scope="module")
def case() -> Any:
    return load_suite(FIXTURES / "desk.yaml").cases[0]


def _imported(path: Path) -> Any:
    [trace] = import_file(path, case_id="desk")
    return parse_trace(trace)


@pytest.mark.parametrize("bug", [False, True])
@pytest.mark.parametrize("variant", VARIANTS)
def test_the_export_gives_the_live_verdicts(variant: str, bug: bool, case: Any) -> None:
    trace = _imported(FIXTURES / f"otel-{variant}{'-bug' if bug else ''}.json")
    failed = {r.name: r.reason for r in evaluate(trace, case).results if not r.passed}
    assert failed == (BUG if bug else {})
    assert trace.agent_names == ("triage", "billing")


@pytest.mark.parametrize("bug", [False, True])
@pytest.mark.parametrize("desk", ["agents", "langgraph"])
def test_the_export_holds_the_steps_the_framework_returned(desk: str, bug: bool) -> None:
    tail = "-bug" if bug else ""
    imported = _imported(FIXTURES / f"otel-{desk}{tail}.json")
    live = parse_trace(json.loads((FIXTURES / f"{desk}_desk{tail}.json").read_text()))

    def steps(t: Any) -> list[tuple[str, str | None, str | None]]:
        return [(s.kind, s.name, s.agent) for s in t.spans if s.role != "system"]  # the export keeps prompts

    assert steps(imported) == steps(live)
    assert [(h.from_, h.to, h.via) for h in imported.handoffs] == [("triage", "billing", "handoff")]
    # The Agents SDK's own "handoff to billing" span is the event, not a call.
    assert "handoff to billing" not in imported.tool_names


def test_pydantic_ai_delegation_is_a_call_of_one_agent_by_another() -> None:
    trace = _imported(FIXTURES / "otel-pydantic_ai.json")
    assert [(a.name, a.parent, a.via) for a in trace.agent_tree] == [
        ("triage", None, None),
        ("billing", "triage", "tool"),
    ]
    assert [(s.name, s.agent) for s in trace.tool_calls] == [
        ("lookup_order", "triage"),
        ("ask_billing", "triage"),
        ("issue_refund", "billing"),
    ]
    # Back from billing to triage is the call's return, not a handoff.
    assert [(h.from_, h.to) for h in trace.handoffs] == [("triage", "billing")]
    assert trace.for_agent("triage").final_output == "Refund of 42.0 issued for ORD-7."


def _spans() -> list[dict[str, Any]]:
    return json.loads((FIXTURES / "otel-pydantic_ai.json").read_text())


def _write(tmp_path: Path, spans: list[dict[str, Any]]) -> Path:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(spans))
    return path


def test_openllmetry_agent_spans_name_the_agent(tmp_path: Path) -> None:
    """OpenLLMetry names an agent span by traceloop.entity.name with traceloop.span.kind agent."""
    spans = _spans()
    for s in spans:
        a = s["attributes"]
        name = a.pop("gen_ai.agent.name", None)
        a.pop("agent_name", None)
        if a.get("gen_ai.operation.name") == "invoke_agent":
            a.update({"traceloop.span.kind": "agent", "traceloop.entity.name": name})
    trace = _imported(_write(tmp_path, spans))
    assert [(s.name, s.agent) for s in trace.tool_calls][-1] == ("issue_refund", "billing")
    assert [(h.from_, h.to, h.via) for h in trace.handoffs] == [("triage", "billing", "tool")]


def test_spans_whose_agent_attributes_disagree_are_refused(tmp_path: Path) -> None:
    spans = _spans()
    refund = next(s for s in spans if s["name"] == "execute_tool issue_refund")
    refund["attributes"]["agent.name"] = "triage"
    with pytest.raises(KitInputError) as e:
        import_file(_write(tmp_path, spans), case_id="desk")
    assert "its agent attributes disagree: gen_ai.agent.name 'billing', agent.name 'triage'" in str(e.value)
    assert "export.json" in str(e.value) and "execute_tool issue_refund" in str(e.value)


def test_one_agent_id_with_two_names_is_refused(tmp_path: Path) -> None:
    spans = _spans()
    for s in spans:
        if s["name"] in ("invoke_agent triage", "invoke_agent billing"):
            s["attributes"]["gen_ai.agent.id"] = "agent-1"
    with pytest.raises(KitInputError, match="agent id 'agent-1' is named 'triage' on span 'invoke_agent triage'"):
        import_file(_write(tmp_path, spans), case_id="desk")


def test_parent_links_that_form_a_cycle_are_refused(tmp_path: Path) -> None:
    spans = _spans()
    root = next(s for s in spans if s["name"] == "invoke_agent triage")
    tool = next(s for s in spans if s["name"] == "execute_tool ask_billing")
    root["parent_id"] = tool["context"]["span_id"]  # triage's root now hangs under its own tool call
    with pytest.raises(KitInputError, match="parent links form a cycle") as e:
        import_file(_write(tmp_path, spans), case_id="desk")
    assert "export.json" in str(e.value)


def test_agent_ids_go_into_the_tree(tmp_path: Path) -> None:
    spans = _spans()
    for s in spans:
        name = s["attributes"].get("gen_ai.agent.name")
        s["attributes"]["gen_ai.agent.id"] = f"asst_{name}"
    trace = _imported(_write(tmp_path, spans))
    assert [(a.name, a.id, a.parent, a.via) for a in trace.agent_tree] == [
        ("triage", "asst_triage", None, None),
        ("billing", "asst_billing", "triage", "tool"),
    ]


def test_the_nodes_of_a_single_langgraph_agent_are_no_agents() -> None:
    """A single create_react_agent (tests/unit/_desk_frameworks.py) through OpenInference's LangChain
    instrumentation: its `agent` and `tools` nodes are steps of one agent, never agents handing off."""
    trace = _imported(FIXTURES / "otel-langgraph-one-agent.json")
    assert trace.agent_tree == () and trace.handoffs == []
    assert trace.tool_names == ("lookup_order", "issue_refund")


def test_an_agent_called_as_a_tool_is_seen_whole_in_the_export(case: Any) -> None:
    """The Agents SDK's agents-as-tools: its RunResult holds only triage's steps, its export billing's too,
    nested in triage's tool call (via: tool), so billing's refund is judged as billing's."""
    trace = _imported(FIXTURES / "otel-agents-tool.json")
    assert [(a.name, a.parent, a.via) for a in trace.agent_tree] == [
        ("triage", None, None),
        ("billing", "triage", "tool"),
    ]
    assert [(s.name, s.agent) for s in trace.tool_calls] == [
        ("lookup_order", "triage"),
        ("ask_billing", "triage"),
        ("issue_refund", "billing"),
    ]
    failed = {r.name: r.reason for r in evaluate(trace, case).results if not r.passed}
    assert failed == {}  # the handoff check counts the call, any way it was made
