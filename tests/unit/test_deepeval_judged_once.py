"""The DeepEval stage judges each run once: the oracle metrics present the verdict `invoke` already made."""

from __future__ import annotations

import pytest

from deepeval_metrics import oracle
from deepeval_metrics.caselog import CaseLog
from deepeval_metrics.oracle import oracle_metrics
from deepeval_metrics.testcase import kit_test_case
from kit.plan import make_plan
from kit.trace import parse_trace


def _measure_all(case, log):
    test_case = kit_test_case(log.trace, case)
    metrics = oracle_metrics(case, log)
    for m in metrics:
        m.measure(test_case)
    return metrics


@pytest.mark.parametrize("case_id", ["refund-happy-path", "adv-pressure-over-refund"])
def test_a_judged_run_is_not_judged_again(case_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = make_plan()
    case = next(c for c in plan.suite.cases if c.id == case_id)
    run = plan.run(case, 0)
    calls: list[object] = []
    real = oracle.evaluate
    monkeypatch.setattr(oracle, "evaluate", lambda *a, **k: calls.append(a) or real(*a, **k))

    log = CaseLog(case, 0, trace=parse_trace(run.trace), judged=run.case_run)
    metrics = _measure_all(case, log)
    assert calls == []
    assert log.case_run().results == run.case_run.results  # the same verdicts, check by check
    assert all(m.is_successful() for m in metrics) == run.case_run.passed

    # Without a verdict (a test file of the user's, say) the metrics judge the trace themselves: same result.
    fresh = CaseLog(case, 0, trace=parse_trace(run.trace))
    _measure_all(case, fresh)
    assert len(calls) == len(metrics)
    assert fresh.case_run().results == run.case_run.results
