"""Every test case DeepEval evaluates in this process, with every metric's verdict, handed to the CaseLog of its
run: a metric the kit's own code did not record (one of yours, given to a bare `deepeval.assert_test` or
`deepeval.evaluate` rather than to `assert_run`) is recorded there too, so the store holds every metric a test
used: a soft gate `metric:<name>`, or a hard one when declared with `deepeval_metrics.hard`.

Where DeepEval tells: DeepEval 4.3 has no public per-test-case hook (`on_test_run_end` fires once per run).
Every one of its executors (assert_test and evaluate, sync and async, end-to-end and trace-scoped) hands each
finished test case, with its MetricData, to `deepeval.test_run.global_test_run_manager.update_test_run(
api_test_case, test_case)`: a public method of a public object. `observe()` wraps that one method on that one
instance, records what it is given, then calls DeepEval's own unchanged (tests/unit/test_deepeval_bare_assert.py
holds it to the installed DeepEval).

Which run: the CaseLog of the running test whose trace is the test case's (`kit_test_case` attaches it), else
whose case id and attempt its metadata names; a test case built from a trace with no CaseLog (`kit_test_case(
trace, case)` by hand) gets one, judged by the oracle as `replay` judges it. A test case that names no kit case
is not stored, and is listed (`unlinked()`), never dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deepeval_metrics import caselog
from deepeval_metrics.caselog import CaseLog, SoftVerdict
from deepeval_metrics.own_metric import declared_hard
from deepeval_metrics.testcase import trace_of
from kit.evaluate import evaluate
from kit.result import Result

ORACLE_MODEL = "kit oracle"  # the evaluation model of the kit's oracle metrics (deepeval_metrics.oracle)
_MARK = "_kit_observer"

_unlinked: list[str] = []


def unlinked() -> list[str]:
    """The test cases DeepEval evaluated that name no kit case (their metrics are not in the store), and any
    that could not be read, each as one line."""
    return list(_unlinked)


def observe(store_now: Callable[[CaseLog], None]) -> None:
    """From now on, every test case DeepEval evaluates in this process reaches its CaseLog (once installed,
    a second call changes nothing). `store_now`: stores a log made here outside any test (the plugin stores
    the logs a test makes when it ends)."""
    from deepeval.test_run import global_test_run_manager as manager

    deepevals = manager.update_test_run
    if getattr(deepevals, _MARK, False):
        return

    def update_test_run(api_test_case: Any, test_case: Any) -> Any:
        try:
            seen(api_test_case, test_case, store_now)
        except Exception as e:  # DeepEval's own bookkeeping must go on; the loss is named at session end
            _unlinked.append(f"{_name(test_case)}: not stored: {type(e).__name__}: {e}")
        return deepevals(api_test_case, test_case)

    setattr(update_test_run, _MARK, True)
    manager.update_test_run = update_test_run


def seen(api_test_case: Any, test_case: Any, store_now: Callable[[CaseLog], None] | None = None) -> None:
    """Record every metric of one evaluated test case that the kit's own metrics did not record themselves."""
    results = list(getattr(api_test_case, "metrics_data", None) or [])
    if not results:
        return
    log, made = _log_of(test_case)
    if log is None:
        _unlinked.append(f"{_name(test_case)}: names no kit case (build it with deepeval_metrics.test_case)")
        return
    for md in results:
        record(log, md)
    if made and not caselog.is_collecting() and store_now is not None:
        store_now(log)


def record(log: CaseLog, md: Any) -> None:
    """One MetricData into the log, unless the kit's own code recorded it: the oracle's (hard, by check), a
    rubric's, or your metric through `assert_run` (its wrapper records `metric:<name>`)."""
    name = str(md.name)
    own = name if name.startswith("rubric:") else f"metric:{name}"
    if md.evaluation_model == ORACLE_MODEL or name in log.soft or own in log.soft or own in log.own_hard:
        return
    outcome = "error" if md.error else "skipped" if md.success is None else "pass" if md.success else "fail"
    reason = md.error or md.reason or outcome
    score = float(md.score) if isinstance(md.score, int | float) else None
    if declared_hard(name):
        log.add_own_hard(Result(own, outcome == "pass", reason, error=outcome == "error", score=score))
    else:
        log.add_soft(
            SoftVerdict(
                own,
                outcome,  # type: ignore[arg-type]
                reason,
                score=score,
                threshold=md.threshold,
                judge_model=md.evaluation_model,
            )
        )


def _log_of(test_case: Any) -> tuple[CaseLog | None, bool]:
    """(the test case's CaseLog, whether it was made here)."""
    attached = getattr(test_case, "kit_trace", None)
    meta = getattr(test_case, "metadata", None) or {}
    logs = caselog.current()
    if attached is not None:
        found = next((log for log in reversed(logs) if log.trace is attached), None)
        if found is not None:
            return found, False
    case_id, attempt = meta.get("case_id"), meta.get("attempt")
    found = next((log for log in reversed(logs) if (log.case.id, log.attempt) == (case_id, attempt)), None)
    if found is not None:
        return found, False
    try:
        trace = trace_of(test_case)
    except ValueError:
        return None, False
    from deepeval_metrics.runner import plan

    wanted = case_id or trace.case_id
    case = next((c for c in plan().suite.cases if c.id == wanted), None)
    if case is None:
        return None, False
    log = CaseLog(case, trace.attempt, cost={"agent_calls": 0})  # judged here, the agent not called
    log.trace = trace
    log.judged = evaluate(trace, case)
    log.error = log.judged.error
    log.add_hard(tuple(range(len(log.judged.results))), log.judged.results)
    return log, True


def _name(test_case: Any) -> str:
    return str(getattr(test_case, "name", None) or getattr(test_case, "input", None) or "a test case")[:80]
