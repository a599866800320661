"""Oracle metrics: DeepEval's score, reason and success are the kit oracle's, per check or per invariant."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")

from deepeval import assert_test
from deepeval.test_case import LLMTestCase

from deepeval_metrics.caselog import CaseLog
from deepeval_metrics.oracle import oracle_metrics
from deepeval_metrics.testcase import kit_test_case, trace_of
from kit.case import CheckSpec, parse_case, parse_check
from kit.evaluate import evaluate
from kit.trace import parse_trace

INVARIANTS = {
    "lean": [
        parse_check({"type": "no_repeat"}, file="inv.yaml", case=None, index=0, base_dir=None, invariant="lean"),
        parse_check(
            {"type": "budget", "tool_calls": 2}, file="inv.yaml", case=None, index=1, base_dir=None, invariant="lean"
        ),
    ]
}
CASE = parse_case(
    {
        "id": "refund",
        "input": [{"role": "user", "content": "Refund ORD-1"}],
        "reference": "Refunded.",
        "tags": ["refund"],
        "invariants": ["lean"],
        "checks": [
            {"type": "called", "tool": "lookup_order"},
            {"type": "order", "before": "lookup_order", "after": "issue_refund"},
            {"type": "arg", "tool": "issue_refund", "key": "amount", "expected": 42.5},
        ],
    },
    file="cases.yaml",
    base_dir=None,
    invariants=INVARIANTS,
)


def _trace(*tools: tuple[str, dict], case_id: str = "refund") -> dict:
    return {
        "case_id": case_id,
        "attempt": 1,
        "final_output": "Refunded.",
        "finish_reason": "finish",
        "spans": [{"kind": "tool", "name": n, "input": a, "output": {"ok": True}} for n, a in tools],
    }


GOOD = _trace(("lookup_order", {"order_id": "ORD-1"}), ("issue_refund", {"order_id": "ORD-1", "amount": 42.5}))
BAD = _trace(
    ("issue_refund", {"order_id": "ORD-1", "amount": 50}),
    ("issue_refund", {"order_id": "ORD-1", "amount": 50}),
    ("issue_refund", {"order_id": "ORD-1", "amount": 50}),
)


def test_one_metric_per_own_check_and_one_per_invariant() -> None:
    names = [m.__name__ for m in oracle_metrics(CASE)]
    own = [s.label for s in CASE.checks if s.invariant is None]
    assert names == [*own, "invariant:lean"]


def test_test_case_carries_the_trace_and_the_dataset_view() -> None:
    tc = kit_test_case(GOOD, CASE)
    assert tc.name == "refund#1"
    assert tc.input == "user: Refund ORD-1"
    assert tc.actual_output == "Refunded." and tc.expected_output == "Refunded."
    assert [t.name for t in tc.tools_called] == ["lookup_order", "issue_refund"]
    assert tc.tools_called[1].input_parameters == {"order_id": "ORD-1", "amount": 42.5}
    assert tc.metadata == {"case_id": "refund", "attempt": 1, "variant": None}
    assert trace_of(tc).tool_names == ("lookup_order", "issue_refund")
    # The trace stays out of what DeepEval writes to disk after every test.
    assert "kit_trace" not in tc.model_dump()


@pytest.mark.parametrize("raw", [GOOD, BAD])
def test_metric_verdicts_are_the_oracles(raw: dict) -> None:
    expected = {r.name: r for r in evaluate(parse_trace(raw), CASE).results}
    tc = kit_test_case(raw, CASE)
    for metric in oracle_metrics(CASE):
        metric.measure(tc)
        mine = [expected[s.label] for s in (CASE.checks[i] for i in metric.indices)]
        assert metric.is_successful() == all(r.passed for r in mine)
        assert metric.score == pytest.approx(sum(r.passed for r in mine) / len(mine))
        for r in mine:
            if not r.passed:
                assert (r.reason if len(mine) == 1 else f"{r.name}: fail: {r.reason}") in metric.reason


def test_plain_llm_test_case_with_trace_in_metadata() -> None:
    tc = LLMTestCase(input="x", actual_output="Refunded.", metadata={"kit_trace": BAD})
    metric = oracle_metrics(CASE)[0]
    metric.measure(tc)
    assert metric.__name__ == "called:lookup_order" and not metric.is_successful()


def test_missing_or_foreign_trace_is_an_error_never_a_pass() -> None:
    metric = oracle_metrics(CASE)[0]
    metric.measure(LLMTestCase(input="x", actual_output="y"))
    assert not metric.is_successful() and metric.error is not None and "no usable trace" in metric.error
    metric.measure(kit_test_case(_trace(("lookup_order", {}), case_id="other"), CASE))
    assert not metric.is_successful() and "trace is for case 'other'" in (metric.error or "")


def test_a_crashing_check_is_an_error() -> None:
    spec = CASE.checks[0]
    broken = CheckSpec(spec.type, {"tool": None, "min": "x"}, "called:broken")
    case = parse_case({"id": "refund", "input": "x"}, file=None, base_dir=None, invariants={})
    case = type(case)(**{**{f: getattr(case, f) for f in case.__dataclass_fields__}, "checks": (broken,)})
    metric = oracle_metrics(case)[0]
    metric.measure(kit_test_case(GOOD, case))
    assert not metric.is_successful() and metric.error is not None and "check raised" in metric.error


def test_assert_test_fails_naming_the_failed_checks_and_logs_every_verdict() -> None:
    log = CaseLog(CASE, attempt=1, trace=parse_trace(BAD))
    with pytest.raises(AssertionError) as err:
        assert_test(kit_test_case(BAD, CASE), oracle_metrics(CASE, log))
    message = str(err.value)
    assert "called:lookup_order" in message and "invariant:lean" in message
    run = log.case_run("r1")
    assert not run.passed and run.error is None
    assert [r.name for r in run.results] == [s.label for s in CASE.checks]
    assert run.metrics["tool_calls"] == 3


def test_unmeasured_checks_make_the_logged_run_an_error() -> None:
    log = CaseLog(CASE)
    log.add_hard((0,), evaluate(parse_trace(GOOD), CASE).results[:1])
    run = log.case_run()
    assert run.outcome == "error" and "not measured" in (run.error or "")
