"""A check is `fn(trace, **params) -> Verdict`; the runner names its result, once per spec, uniquely within
a case; a check that raises keeps its exception type and traceback; `kit.checks` does not import `kit.case`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from _oracle import make_case, make_trace, run1, tool

from kit.case import load_suite
from kit.checks import REGISTRY
from kit.checks.registry import CheckDef, check
from kit.cli import main
from kit.evaluate import evaluate
from kit.result import Verdict

TRACE = make_trace(
    tool("lookup_order", {"order_id": "ORD-1"}, error="timeout"),
    tool("issue_refund", {"order_id": "ORD-1"}, error="declined"),
    tool("send_email", {"to": "a@b.c"}),
)


def names(case_checks: list[dict]) -> list[str]:
    return [r.name for r in evaluate(TRACE, make_case(*case_checks)).results]


def test_a_check_function_takes_the_trace_and_its_parameters_and_returns_an_unnamed_verdict():
    verdict = REGISTRY["called_at_most"].fn(TRACE, tool="issue_refund", n=0)
    assert verdict == Verdict(False, "issue_refund called 1 time, at most 0 allowed")
    assert not hasattr(verdict, "name")
    assert set(REGISTRY["finished"].params.model_fields) == set()  # only the trace is skipped


def test_a_check_whose_parameter_is_positional_is_refused_at_registration():
    with pytest.raises(TypeError, match="parameter case must be keyword-only"):
        check("positional_case_param")(lambda trace, case: Verdict(True))
    assert "positional_case_param" not in REGISTRY


def test_a_list_not_called_is_named_with_commas():
    r = run1(TRACE, {"type": "not_called", "tool": ["issue_refund", "send_email"]})
    assert r.name == "not_called:issue_refund,send_email"
    assert r.reason == "forbidden issue_refund was called 1 time; forbidden send_email was called 1 time"


def test_scoped_no_tool_errors_have_distinct_names_and_verdicts():
    run = evaluate(
        TRACE,
        make_case(
            {"type": "no_tool_errors", "tool": "lookup_order"},
            {"type": "no_tool_errors", "tool": "send_email"},
            {"type": "no_tool_errors"},
        ),
    )
    got = [(r.name, r.outcome, r.reason) for r in run.results]
    assert got == [
        ("no_tool_errors:lookup_order", "fail", "lookup_order (call 1) failed: timeout"),
        ("no_tool_errors:send_email", "pass", ""),
        ("no_tool_errors", "fail", "lookup_order (call 1) failed: timeout"),
    ]


def test_equal_computed_names_get_numbered_suffixes_and_a_given_name_wins():
    assert names(
        [
            {"type": "called", "tool": "lookup_order"},
            {"type": "called", "tool": "lookup_order", "min": 2},
            {"type": "budget", "steps": 10},
            {"type": "called", "tool": "lookup_order", "min": 3},
            {"type": "budget", "tokens": 10},
        ]
    ) == ["called:lookup_order", "called:lookup_order#2", "budget", "called:lookup_order#3", "budget#2"]
    # A name the case gives is kept as given; the computed name it collides with moves aside.
    assert names(
        [{"type": "finished"}, {"type": "no_repeat", "name": "finished"}, {"type": "finished", "name": "finished#2"}]
    ) == ["finished#3", "finished", "finished#2"]


def test_names_are_unique_across_the_case_checks_and_its_invariants(tmp_path):
    (tmp_path / "invariants.yaml").write_text("safe: [{type: called_at_most, tool: issue_refund}, {type: finished}]\n")
    (tmp_path / "c.yaml").write_text(
        "id: a\ninput: hi\ninvariants: [safe]\nchecks: [{type: finished}, {type: called_at_most, tool: issue_refund}]\n"
    )
    (tmp_path / "d.yaml").write_text("id: b\ninput: hi\ninvariants: [safe]\n")
    suite = load_suite(tmp_path)
    assert not suite.errors
    a, b = suite.cases
    assert [s.label for s in a.checks] == [
        "finished",
        "called_at_most:issue_refund",
        "called_at_most:issue_refund#2",
        "finished#2",
    ]
    # The invariant's specs are shared by every case: renaming them in one case leaves the others alone.
    assert [s.label for s in b.checks] == ["called_at_most:issue_refund", "finished"]


def test_two_equal_given_names_are_a_load_error_naming_file_case_and_check(tmp_path, capsys):
    cases = tmp_path / "c.yaml"
    cases.write_text(
        textwrap.dedent(
            """
            id: dup
            input: hi
            checks:
              - {type: finished, name: ok}
              - {type: called, tool: lookup_order}
              - {type: no_repeat, name: ok}
            """
        )
    )
    suite = load_suite(cases)
    assert suite.cases == []
    assert [str(e) for e in suite.errors] == [
        f"{cases}: case 'dup': check #3 (no_repeat): duplicate check name 'ok' (also check #1 (finished))"
    ]
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"case_id": "dup", "final_output": "", "spans": []}))
    assert main(["check", str(trace), "--cases", str(cases)]) == 2
    assert "duplicate check name 'ok'" in capsys.readouterr().err


def test_a_check_that_raises_keeps_its_type_first_line_and_traceback(monkeypatch):
    original = REGISTRY["finished"]

    def exploding_check(trace):
        raise ValueError("first line\nsecond line")

    monkeypatch.setitem(REGISTRY, "finished", CheckDef("finished", exploding_check, original.params, "finished", None))
    (r, ok) = evaluate(make_trace(), make_case({"type": "finished"}, {"type": "no_repeat"})).results
    assert (r.outcome, r.reason) == ("error", "check raised ValueError: first line")
    assert r.traceback is not None
    assert "in exploding_check" in r.traceback and r.traceback.rstrip().endswith("second line")
    assert r.to_dict() == {"check": "finished", "outcome": "error", "reason": "check raised ValueError: first line"}
    assert ok.outcome == "pass" and ok.traceback is None


def test_a_check_that_returns_no_verdict_is_an_error(monkeypatch):
    original = REGISTRY["finished"]
    monkeypatch.setitem(REGISTRY, "finished", CheckDef("finished", lambda trace: True, original.params, "x", None))
    r = run1(make_trace(), {"type": "finished"})
    assert (r.outcome, r.reason) == ("error", "check returned bool, not a Verdict")


def test_importing_the_checks_does_not_import_the_case_module():
    code = "import sys, kit.checks; print('kit.case' in sys.modules, 'kit.evaluate' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "False"]
