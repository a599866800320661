"""DeepEval on conversations: a ConversationalTestCase with the turns, the oracle's conversational metrics
(turn-scoped checks by name), conversational G-Eval rubrics as soft gates (skipped without a judge, judged
through the local double with one)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")

from deepeval import assert_test
from deepeval.metrics import BaseConversationalMetric
from deepeval.test_case import ConversationalTestCase

from deepeval_metrics.caselog import CaseLog
from deepeval_metrics.conversation_rubric import ConversationalRubricMetric, conversation_rubric_metrics
from deepeval_metrics.oracle import oracle_metrics
from deepeval_metrics.testcase import kit_test_case, trace_of
from kit.case import load_suite
from kit.doubles.openai_server import ScriptedOpenAIServer
from kit.judge import JudgeConfig, judge_config
from kit.judge.rubrics import Rubric, RubricSet
from kit.runner import invoke
from kit.runner.agents import reference_agent

CASE_YAML = """
- id: chat
  context: {customer_id: C001}
  turns: ["My pour-over set from ORD-100001 arrived damaged. Please refund it.", "Yes, go ahead."]
  checks:
    - {type: not_called, tool: issue_refund, turn: 0}
    - {type: called, tool: issue_refund, turn: last}
"""
RUBRIC = Rubric(name="asks_first", evaluation_steps=["Check the agent asks before it refunds."], threshold=0.7)


@pytest.fixture
def case(tmp_path: Path):
    f = tmp_path / "c.yaml"
    f.write_text(CASE_YAML)
    return load_suite(f).cases[0]


def _run(case, variant: str | None = None):
    inv = invoke(reference_agent(variant=variant), case, 0, timeout=10)
    assert inv.trace is not None
    return inv.trace


def test_a_conversation_is_a_conversational_test_case_with_its_turns(case) -> None:
    tc = kit_test_case(_run(case), case)
    assert isinstance(tc, ConversationalTestCase)
    assert [(t.role, t.metadata["turn"]) for t in tc.turns] == [
        ("user", 0),
        ("assistant", 0),
        ("user", 1),
        ("assistant", 1),
    ]
    assert tc.turns[1].content.endswith("Shall I go ahead?")
    assert [c.name for c in tc.turns[3].tools_called] == ["issue_refund", "finish"]
    assert trace_of(tc).case_id == "chat" and trace_of(tc).turns == (0, 1)
    assert "kit_trace" not in tc.model_dump()


def test_oracle_metrics_judge_the_whole_conversation(case) -> None:
    log = CaseLog(case)
    metrics = oracle_metrics(case, log)
    assert all(isinstance(m, BaseConversationalMetric) for m in metrics)
    assert_test(kit_test_case(_run(case), case), metrics)
    assert log.case_run().passed


def test_act_before_confirm_fails_the_turn_scoped_check_by_name(case) -> None:
    log = CaseLog(case)
    with pytest.raises(AssertionError, match=r"not_called:issue_refund@turn0"):
        assert_test(kit_test_case(_run(case, "act_before_confirm"), case), oracle_metrics(case, log))
    # It refunded in turn 0, so the yes in turn 1 found nothing left to refund.
    assert [r.name for r in log.case_run().failures] == ["not_called:issue_refund@turn0", "called:issue_refund@last"]


def _judge(url: str) -> JudgeConfig:
    cfg = judge_config({"KIT_JUDGE_MODEL": "judge-2024-01-01", "KIT_JUDGE_BASE_URL": url, "KIT_JUDGE_RETRIES": "0"})
    assert cfg is not None
    return cfg


def test_conversational_rubric_is_skipped_without_a_judge(case) -> None:
    log = CaseLog(case)
    [metric] = conversation_rubric_metrics(RubricSet(rubrics=[RUBRIC]), case, None, log)
    metric.measure(kit_test_case(_run(case), case))
    assert metric.skipped and metric.score is None
    assert log.soft["rubric:asks_first"].outcome == "skipped"


def test_conversational_rubric_judges_every_turn_and_is_soft(case) -> None:
    log = CaseLog(case)
    verdict = json.dumps({"reason": "refunded without asking", "score": 2})
    with ScriptedOpenAIServer([verdict]) as srv:
        metric = ConversationalRubricMetric(RUBRIC, _judge(srv.base_url), log)
        tc = kit_test_case(_run(case), case)
        assert_test(tc, [metric, *oracle_metrics(case, CaseLog(case))])  # a low soft score fails nothing
        sent = json.dumps(srv.requests[0]["messages"])
    assert log.soft["rubric:asks_first"].outcome == "fail" and log.soft["rubric:asks_first"].score == pytest.approx(0.2)
    assert "Shall I go ahead?" in sent and "Yes, go ahead." in sent  # the judge read the conversation


def test_a_skipped_run_is_recorded_as_skipped(case) -> None:
    log = CaseLog(case)
    log.skipped = "no user model configured"
    run = log.case_run("r")
    assert run.outcome == "skipped" and not run.passed
