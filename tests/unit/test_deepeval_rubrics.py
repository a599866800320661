"""G-Eval rubrics end to end: DeepEval's GEval, through the kit's judge model and the real `openai` HTTP
client, against a scripted OpenAI-compatible judge on 127.0.0.1 (a double of the model only)."""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")

from deepeval import assert_test
from deepeval.test_case import LLMTestCase

from deepeval_metrics import rubric_metric
from deepeval_metrics.caselog import CaseLog
from deepeval_metrics.oracle import oracle_metrics
from deepeval_metrics.rubric_metric import RubricMetric
from deepeval_metrics.testcase import kit_test_case
from kit.case import parse_case
from kit.doubles.openai_server import ScriptedOpenAIServer
from kit.judge import JudgeConfig, judge_config
from kit.judge.rubrics import Rubric

STEPS = ["Read the reply.", "Check it is polite."]
RUBRIC = Rubric(name="polite", evaluation_steps=STEPS, threshold=0.7)
CASE_TC = LLMTestCase(input="Where is my order?", actual_output="It ships tomorrow. Thank you for waiting!")


def _judge(url: str) -> JudgeConfig:
    cfg = judge_config(
        {
            "KIT_JUDGE_MODEL": "judge-2024-01-01",
            "KIT_JUDGE_BASE_URL": url,
            "KIT_JUDGE_RETRIES": "0",
            "KIT_JUDGE_TIMEOUT": "5",
        }
    )
    assert cfg is not None
    return cfg


def _verdict(score: int, reason: str) -> str:
    return json.dumps({"reason": reason, "score": score})


def test_rubric_above_threshold_passes_and_keeps_the_judge_call() -> None:
    with ScriptedOpenAIServer([_verdict(9, "courteous and clear")]) as srv:
        metric = RubricMetric(RUBRIC, _judge(srv.base_url))
        metric.measure(CASE_TC)
    assert metric.score == pytest.approx(0.9)
    assert metric.is_successful() and metric.error is None
    v = metric.verdict
    assert v is not None and v.outcome == "pass" and v.reason == "courteous and clear"
    assert v.judge_model == "judge-2024-01-01"
    assert v.rubric_hash == RUBRIC.hash
    assert v.raw_answer == _verdict(9, "courteous and clear")
    # The judge saw the steps and the test case through the real HTTP path.
    sent = srv.requests[0]["messages"][0]["content"]
    assert "Check it is polite." in sent and "It ships tomorrow." in sent
    assert srv.requests[0]["model"] == "judge-2024-01-01" and srv.requests[0]["temperature"] == 0


def test_rubric_below_threshold_fails_without_error() -> None:
    with ScriptedOpenAIServer([_verdict(3, "curt")]) as srv:
        metric = RubricMetric(RUBRIC, _judge(srv.base_url))
        metric.measure(CASE_TC)
    assert metric.score == pytest.approx(0.3)
    assert not metric.is_successful() and metric.error is None
    assert metric.verdict is not None and metric.verdict.outcome == "fail"


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        ("I think it is quite polite.", "no JSON object"),
        (json.dumps({"verdict": "good"}), "Field required"),
        (json.dumps({"reason": "ok", "score": "high"}), "score"),
    ],
)
def test_malformed_judge_answer_is_an_error_not_a_pass(answer: str, fragment: str) -> None:
    with ScriptedOpenAIServer([answer]) as srv:
        metric = RubricMetric(RUBRIC, _judge(srv.base_url))
        metric.measure(CASE_TC)
        url = srv.base_url
    assert not metric.is_successful()
    assert metric.error is not None and fragment in metric.error
    assert f"judge judge-2024-01-01 at {url} gave a malformed answer" in metric.error
    assert metric.verdict is not None and metric.verdict.outcome == "error"
    assert metric.verdict.raw_answer == answer  # kept for the store, so the bad answer can be read later


def test_judge_down_is_an_error_naming_the_endpoint() -> None:
    with ScriptedOpenAIServer([]) as srv:
        url = srv.base_url  # the port is free again once the server stops
    metric = RubricMetric(RUBRIC, _judge(url))
    metric.measure(CASE_TC)
    assert not metric.is_successful()
    assert metric.error is not None and url in metric.error and "unreachable" in metric.error
    assert metric.verdict is not None and metric.verdict.outcome == "error" and metric.verdict.raw_answer is None


def test_judge_http_error_is_an_error_naming_the_endpoint() -> None:
    with ScriptedOpenAIServer([{"status": 503, "error": "overloaded"}]) as srv:
        metric = RubricMetric(RUBRIC, _judge(srv.base_url))
        metric.measure(CASE_TC)
        url = srv.base_url
    assert metric.error is not None and url in metric.error and "HTTP 503" in metric.error


def test_no_judge_is_skipped_never_a_pass() -> None:
    metric = RubricMetric(RUBRIC, None)
    metric.measure(CASE_TC)
    assert metric.skipped and not metric.is_successful()
    assert metric.verdict is not None and metric.verdict.outcome == "skipped"
    assert "KIT_JUDGE_MODEL" in metric.verdict.reason


def test_criteria_only_rubric_drafts_steps_once_per_session() -> None:
    rubric_metric._DRAFTED_STEPS.clear()
    rubric = Rubric(name="helpful", criteria="Does the reply answer the question?", threshold=0.5)
    script = [json.dumps({"steps": ["Find the question.", "Check the answer."]}), _verdict(8, "yes"), _verdict(6, "ok")]
    with ScriptedOpenAIServer(script) as srv:
        first = RubricMetric(rubric, _judge(srv.base_url))
        first.measure(CASE_TC)
        second = RubricMetric(rubric, _judge(srv.base_url))
        second.measure(CASE_TC)
    assert [first.score, second.score] == [pytest.approx(0.8), pytest.approx(0.6)]
    assert len(srv.requests) == 3  # steps once, then one verdict per case
    assert "Check the answer." in srv.requests[2]["messages"][0]["content"]
    rubric_metric._DRAFTED_STEPS.clear()


CASE = parse_case(
    {
        "id": "where-is-order",
        "input": "Where is my order ORD-123456?",
        "checks": [{"type": "called", "tool": "lookup_order"}, {"type": "finished"}],
    },
    file="inline.yaml",
    base_dir=None,
    invariants={},
)
TRACE = {
    "case_id": "where-is-order",
    "final_output": "It ships tomorrow.",
    "finish_reason": "finish",
    "spans": [{"kind": "tool", "name": "lookup_order", "input": {"order_id": "ORD-123456"}, "output": {}}],
}


def test_soft_failure_through_assert_test_does_not_fail_the_case() -> None:
    log = CaseLog(CASE)
    with ScriptedOpenAIServer([_verdict(1, "rude")]) as srv:
        metrics = [*oracle_metrics(CASE, log), RubricMetric(RUBRIC, _judge(srv.base_url), log)]
        assert_test(kit_test_case(TRACE, CASE), metrics)  # hard gates pass; the soft one fails: no raise
    # DeepEval measured copies of the metrics; the shared log still got every verdict.
    assert log.soft["rubric:polite"].outcome == "fail"
    assert log.case_run().passed


def test_soft_error_and_skip_through_assert_test() -> None:
    log = CaseLog(CASE)
    with ScriptedOpenAIServer(["garbage"]) as srv:
        metrics = [
            *oracle_metrics(CASE, log),
            RubricMetric(RUBRIC, _judge(srv.base_url), log),
            RubricMetric(Rubric(name="other", criteria="x"), None, log),
        ]
        assert_test(kit_test_case(TRACE, CASE), metrics)
    assert log.soft["rubric:polite"].outcome == "error"
    assert log.soft["rubric:other"].outcome == "skipped"
