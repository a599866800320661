"""Rubrics declare the test-case fields they need: they apply only to cases (and runs) that have them, `kit
lint` names a rubric attached by id to a case without them, and a missing field is never a run-time error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")

from deepeval import assert_test

from deepeval_metrics.caselog import CaseLog
from deepeval_metrics.oracle import oracle_metrics
from deepeval_metrics.rubric_metric import RubricMetric, rubric_metrics
from deepeval_metrics.testcase import kit_test_case
from kit.case import load_suite, parse_case
from kit.doubles.judge import JudgeDouble, judge_env, kind
from kit.doubles.openai_server import ScriptedOpenAIServer
from kit.judge import judge_config
from kit.judge.rubrics import Rubric, RubricSet, load_rubrics
from kit.trace import parse_trace

ROOT = Path(__file__).resolve().parents[2]
NEEDS_REFERENCE = Rubric(name="ref", evaluation_steps=["Compare with the Expected Output."], params=["expected_output"])
NEEDS_CONTEXT = Rubric(name="ctx", evaluation_steps=["Use the Context."], params=["actual_output", "context"])
NEEDS_RETRIEVAL = Rubric(name="rag", evaluation_steps=["Grounded?"], params=["actual_output", "retrieval_context"])
ANY_CASE = Rubric(name="any", evaluation_steps=["Polite?"], params=["actual_output", "tools_called"])
TRACE = {
    "case_id": "c",
    "attempt": 0,
    "final_output": "Order ORD-1 ships tomorrow.",
    "spans": [{"kind": "tool", "name": "lookup_order", "input": {"order_id": "ORD-1"}, "output": {"status": "paid"}}],
}
NO_TOOLS = {**TRACE, "spans": []}


def _case(id_: str = "c", **kw: object):
    raw = {"id": id_, "input": "Where is ORD-1?", "checks": [{"type": "no_tool_errors"}], **kw}
    return parse_case(raw, file="cases.yaml", base_dir=None, invariants={})


def test_a_rubric_applies_only_to_cases_and_runs_that_have_what_it_needs() -> None:
    rs = RubricSet(rubrics=[NEEDS_REFERENCE, NEEDS_CONTEXT, NEEDS_RETRIEVAL, ANY_CASE])
    bare, full = _case(), _case(reference="ORD-1 ships tomorrow", context={"customer": "C001"})
    assert [r.name for r in rs.for_case(bare)] == ["rag", "any"]  # retrieval is known per run only
    assert [r.name for r in rs.for_case(full)] == ["ref", "ctx", "rag", "any"]
    assert [r.name for r in rs.for_case(full, parse_trace(NO_TOOLS))] == ["ref", "ctx", "any"]
    assert [r.name for r in rs.for_case(bare, parse_trace(TRACE))] == ["rag", "any"]
    assert NEEDS_REFERENCE.missing(_case(reference="  ")) == ["expected_output"]


def test_golden_refund_rubric_skips_refund_cases_without_a_reference() -> None:
    suite = load_suite(ROOT / "golden")
    rubrics = load_rubrics(ROOT / "golden" / "rubrics.yaml")
    refund = next(r for r in rubrics.rubrics if r.name == "refund_explained")
    tagged = [c for c in suite.cases if refund.applies_to.matches(c)]
    judged = [c for c in tagged if refund in rubrics.for_case(c)]
    assert tagged and len(judged) < len(tagged)
    assert all(c.reference for c in judged) and not any(c.reference for c in tagged if c not in judged)
    assert rubrics.lint(suite.cases) == []  # selected by tag: a filter, not an attachment


def test_lint_names_file_case_and_rubric_attached_by_id(tmp_path: Path) -> None:
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        "- {id: no-ref, input: hi, checks: [{type: no_tool_errors}]}\n"
        "- {id: has-ref, input: hi, reference: hello, checks: [{type: no_tool_errors}]}\n"
        "- {id: glob-me, input: hi, checks: [{type: no_tool_errors}]}\n"
    )
    rubrics = tmp_path / "rubrics.yaml"
    rubrics.write_text(
        "rubrics:\n"
        "  - {name: matches_reference, evaluation_steps: [s], params: [actual_output, expected_output],\n"
        "     applies_to: {cases: [no-ref, has-ref, 'glob-*']}}\n"
    )
    kit = [sys.executable, "-m", "kit.cli", "lint", str(cases), "--rubrics", str(rubrics)]
    proc = subprocess.run(kit, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 2, proc.stderr
    problems = [ln for ln in proc.stderr.splitlines() if ln.startswith("kit lint:")]
    assert len(problems) == 1, proc.stderr  # has-ref has it; glob-me is selected by a glob, not named
    line = problems[0]
    assert str(cases) in line and "no-ref" in line and "rubric:matches_reference" in line
    assert "expected_output" in line and "reference" in line and "Traceback" not in proc.stderr
    assert "judges 1 of the 3 cases it selects" in proc.stdout


def test_lint_reports_a_broken_rubric_file_and_passes_the_golden_set(tmp_path: Path) -> None:
    bad = tmp_path / "rubrics.yaml"
    bad.write_text("rubrics:\n  - {name: x, criteria: c, params: [nope]}\n")
    kit = [sys.executable, "-m", "kit.cli", "lint", "golden"]
    proc = subprocess.run([*kit, "--rubrics", str(bad)], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 2 and str(bad) in proc.stderr and "rubric:x" in proc.stderr
    proc = subprocess.run(kit, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "rubric:refund_explained judges" in proc.stdout


def _judge(url: str):
    cfg = judge_config({**judge_env(url), "KIT_JUDGE_RETRIES": "0", "KIT_JUDGE_TIMEOUT": "5"})
    assert cfg is not None
    return cfg


def test_a_missing_field_is_never_a_run_time_error_nor_a_row() -> None:
    case = _case()  # no reference, no context
    log = CaseLog(case)
    log.trace = parse_trace(NO_TOOLS)
    double = JudgeDouble("good")
    with ScriptedOpenAIServer(double) as srv:
        judge = _judge(srv.base_url)
        # Built by hand, past rubric_metrics' filter: measure still declines, without asking the judge.
        metrics = [RubricMetric(r, judge, log) for r in (NEEDS_REFERENCE, NEEDS_CONTEXT, NEEDS_RETRIEVAL, ANY_CASE)]
        assert_test(kit_test_case(log.trace, case), [*oracle_metrics(case, log), *metrics])
        assert [
            m.__name__ for m in rubric_metrics(RubricSet(rubrics=[NEEDS_REFERENCE, ANY_CASE]), case, judge, log)
        ] == ["rubric:any"]
    assert set(log.soft) == {"rubric:any"} and log.soft["rubric:any"].outcome == "pass"
    assert len(double.calls) == 1


def test_context_and_retrieval_context_reach_the_judge() -> None:
    case = _case(context={"customer": "C001"})
    log = CaseLog(case)
    log.trace = parse_trace(TRACE)
    double = JudgeDouble("good")
    with ScriptedOpenAIServer(double) as srv:
        metrics = rubric_metrics(RubricSet(rubrics=[NEEDS_CONTEXT, NEEDS_RETRIEVAL]), case, _judge(srv.base_url), log)
        assert_test(kit_test_case(log.trace, case), [*oracle_metrics(case, log), *metrics])
        prompts = [m["content"] for body in srv.requests for m in body["messages"]]
    assert {v.outcome for v in log.soft.values()} == {"pass"} and len(log.soft) == 2
    assert any("customer: C001" in p for p in prompts)
    assert any(json.dumps({"status": "paid"}) in p for p in prompts)


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([{"role": "user", "content": 'Evaluation Steps: ... return JSON with "score" and "reason"'}], "geval"),
        (
            [{"role": "system", "content": "grade"}, {"role": "user", "content": "<Output>x</Output>"}],
            "promptfoo-grader",
        ),
    ],
)
def test_the_judge_double_tells_its_callers_apart(messages: list[dict[str, str]], expected: str) -> None:
    assert kind({"messages": messages}) == expected
