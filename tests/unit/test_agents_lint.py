"""`kit lint` knows the agents and MCP servers a case names when a tools file or a trace declares them."""

from __future__ import annotations

import json
from pathlib import Path

from kit.commands import lint as kit_lint
from kit.settings import load_settings

CASES = """
- id: desk
  input: refund ORD-1
  checks:
    - {type: not_called, tool: issue_refund, agent: triage}
    - {type: handoff, from: triage, to: biling}
    - {type: called, tool: issue_refund, server: paymnts}
"""


def lint(root, **options):
    """`kit lint` on `root` with the settings of the working directory, as its command line reads them."""
    return kit_lint.lint(root, settings=load_settings(), **options)


def _setup(tmp_path: Path, tools: dict) -> Path:
    (tmp_path / "cases.yaml").write_text(CASES)
    (tmp_path / "tools.json").write_text(json.dumps(tools))
    return tmp_path / "cases.yaml"


def test_an_agent_or_server_no_trace_has_is_a_warning(tmp_path: Path) -> None:
    cases = _setup(tmp_path, {"issue_refund": {"type": "object"}})
    trace = {
        "case_id": "desk",
        "spans": [
            {"kind": "tool", "name": "lookup", "agent": "triage"},
            {"kind": "tool", "name": "issue_refund", "agent": "billing", "server": "payments"},
        ],
    }
    (tmp_path / "t.json").write_text(json.dumps(trace))
    report = lint(cases, traces=[str(tmp_path / "t.json")])
    assert report.code == 0
    text = "\n".join(report.warnings)
    assert "agent 'biling' is in no trace or tools file (declared: billing, triage)" in text
    assert "MCP server 'paymnts' is in no trace or tools file" in text
    assert "'triage' is in no" not in text


def test_the_tools_file_declares_agents_and_servers(tmp_path: Path) -> None:
    tools = {
        "lookup": {"type": "object", "x-kit-agents": ["triage"]},
        "issue_refund": {"type": "object", "x-kit-agents": ["billing"], "x-kit-server": "payments"},
    }
    report = lint(_setup(tmp_path, tools))
    text = "\n".join(report.warnings)
    assert "case 'desk': check handoff:triage>biling: agent 'biling'" in text
    assert "(declared: billing, triage)" in text
    assert "MCP server 'paymnts' is in no trace or tools file (declared: payments)" in text


def test_nothing_declared_is_said_once(tmp_path: Path) -> None:
    report = lint(_setup(tmp_path, {"issue_refund": {"type": "object"}}))
    assert [w for w in report.warnings if "no tools file (x-kit-agents, x-kit-server) or trace" in w]


def test_a_bad_trace_given_to_lint_is_a_problem(tmp_path: Path) -> None:
    cases = _setup(tmp_path, {"issue_refund": {"type": "object"}})
    (tmp_path / "t.json").write_text('{"case_id": "desk", "agents": [{"name": "a", "parent": "a"}]}')
    report = lint(cases, traces=[str(tmp_path / "t.json")])
    assert report.code == 2
    assert "parent links form a cycle: a -> a" in str(report.problems[-1])


def test_allowed_tools_names_are_held_against_the_tools_file(tmp_path: Path) -> None:
    (tmp_path / "cases.yaml").write_text(
        "- id: c\n  input: x\n  checks:\n    - {type: allowed_tools, tools: [lookup_order, isue_refund]}\n"
    )
    (tmp_path / "tools.json").write_text(json.dumps({"lookup_order": {}, "issue_refund": {}}))
    report = lint(tmp_path / "cases.yaml")
    assert report.code == 2
    assert "tool 'isue_refund' is not in" in str(report.problems[0])
