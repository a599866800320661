"""Evaluation: every check of a case on one trace. A check that raises is an `error`, never a pass."""

from __future__ import annotations

from kit.case import Case, CheckSpec
from kit.checks import REGISTRY
from kit.result import CaseRun, Result
from kit.trace import Trace


def run_check(spec: CheckSpec, trace: Trace, case: Case) -> Result:
    try:
        result = REGISTRY[spec.type].fn(trace, case, **spec.params)
    except Exception as e:  # a crashing check must be visible as an error, not a pass or a crash
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return Result(spec.label, False, f"check raised {type(e).__name__}: {first_line}", error=True)
    if result.name != spec.label:  # a `name:` given in the case wins
        result = Result(spec.label, result.passed, result.reason, result.error, result.score)
    return result


def evaluate(trace: Trace, case: Case, *, run_id: str | None = None) -> CaseRun:
    results = tuple(run_check(spec, trace, case) for spec in case.checks)
    return CaseRun(
        case_id=case.id,
        attempt=trace.attempt,
        results=results,
        run_id=run_id or trace.run_id,
        metrics=dict(trace.totals),
    )


def error_run(case_id: str, attempt: int, message: str, *, run_id: str | None = None) -> CaseRun:
    """A run that produced no usable trace (the agent raised, hung, or returned a malformed trace)."""
    return CaseRun(case_id=case_id, attempt=attempt, results=(), run_id=run_id, error=message)
