"""The golden suite under DeepEval: every case, every attempt, a fresh agent run, the oracle's checks as
hard-gate metrics and the rubrics that apply as soft gates.

    deepeval test run tests/evals                      # or: make deepeval-evals
    KIT_VARIANT=skip_lookup deepeval test run tests/evals
    KIT_CASES=path/to/cases KIT_RUBRICS=path/to/rubrics.yaml ...

Agent, cases, invariants, rubrics and timeout come from the one plan (kit.plan) every front end runs from.
"""

from __future__ import annotations

import pytest
from deepeval import assert_test

from deepeval_metrics.caselog import CaseLog
from deepeval_metrics.conversation_rubric import conversation_rubric_metrics
from deepeval_metrics.oracle import oracle_metrics
from deepeval_metrics.rubric_metric import rubric_metrics
from deepeval_metrics.runner import cost, plan, run_case
from deepeval_metrics.session import EvalSession
from deepeval_metrics.testcase import kit_test_case
from kit.case import Case
from kit.judge.rubrics import load_rubrics
from kit.trace import parse_trace

SUITE = plan().suite
RUBRICS = load_rubrics(plan().rubrics)
JUDGE = plan().judge
RUNS = [pytest.param(c, a, id=f"{c.id}#{a}") for c in SUITE.cases for a in range(c.runs)]


if SUITE.errors:  # one broken case fails here, by name; the other cases still run below

    @pytest.mark.parametrize("error", [pytest.param(e, id=str(e)[:80]) for e in SUITE.errors])
    def test_golden_file_loads(error: Exception) -> None:
        pytest.fail(str(error), pytrace=False)


@pytest.mark.parametrize(("case", "attempt"), RUNS)
def test_golden_case(case: Case, attempt: int, kit_session: EvalSession) -> None:
    log = CaseLog(case, attempt)
    run = run_case(case, attempt)
    log.cost = cost(run)
    if run.case_run.skipped is not None:  # e.g. a simulated user with no user model: recorded, never a pass
        log.skipped = run.case_run.skipped
        kit_session.record(log)
        pytest.skip(f"case {case.id}: {log.skipped}")
    if run.trace is None:  # the agent raised, hung or returned a malformed trace: an error, recorded
        log.error = run.case_run.error
        kit_session.record(log)
        pytest.fail(f"case {case.id} attempt {attempt}: no trace: {log.error}", pytrace=False)
    log.trace = parse_trace(run.trace)
    log.judged = run.case_run  # the oracle's verdict on this trace: the metrics present it, not judge again
    # A multi-turn case is a ConversationalTestCase: conversational oracle metrics and G-Eval rubrics.
    soft = conversation_rubric_metrics if case.is_multi_turn else rubric_metrics
    metrics = [*oracle_metrics(case, log), *soft(RUBRICS, case, JUDGE, log)]
    try:
        assert_test(kit_test_case(log.trace, case), metrics)
    finally:
        kit_session.record(log)
