"""Evaluation: every check of a case on one trace. The runner, not the check, names each result (from its
CheckSpec). A check that raises is an `error` that keeps its traceback, never a pass."""

from __future__ import annotations

import traceback

from kit.case import Case, CheckSpec
from kit.checks import REGISTRY
from kit.result import CaseRun, Result, Verdict
from kit.trace import Trace


def run_check(spec: CheckSpec, trace: Trace) -> Result:
    try:
        verdict = REGISTRY[spec.type].fn(trace, **spec.params)
    except Exception as e:  # a crashing check must be visible as an error, not a pass or a crash
        text = str(e).strip()
        first_line = text.splitlines()[0] if text else ""
        return Result(
            spec.label,
            False,
            f"check raised {type(e).__name__}: {first_line}",
            error=True,
            traceback=traceback.format_exc(),
        )
    if not isinstance(verdict, Verdict):
        return Result(spec.label, False, f"check returned {type(verdict).__name__}, not a Verdict", error=True)
    return Result(spec.label, verdict.passed, verdict.reason, score=verdict.score)


def evaluate(trace: Trace, case: Case, *, run_id: str | None = None) -> CaseRun:
    results = tuple(run_check(spec, trace) for spec in case.checks)
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
