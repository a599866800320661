"""Evaluation: every check of a case on one trace. The runner, not the check, names each result (from its
CheckSpec). A check that raises is an `error` that keeps its traceback, never a pass."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kit.checks import REGISTRY
from kit.result import CaseRun, Result, Verdict

if TYPE_CHECKING:  # judging needs neither pydantic nor YAML: the trace and the case come made
    from kit.case import Case, CheckSpec
    from kit.trace import Trace


def run_check(spec: CheckSpec, trace: Trace) -> Result:
    try:
        verdict = REGISTRY[spec.type].fn(trace, **spec.params)
    except Exception as e:  # a crashing check must be visible as an error, not a pass or a crash
        import traceback  # only a check that raises needs it

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


def _no_turn(spec: CheckSpec, trace: Trace) -> Result | None:
    """A fail when the trace has no span of the spec's turn (a trace without turns is one turn, 0)."""
    if spec.turn is None or spec.turn == "last":
        return None
    have = trace.turns or (0,)
    if spec.turn in have:
        return None
    n = len(have)
    return Result(spec.label, False, f"no turn {spec.turn} in this conversation (it has {n} turn{'s' * (n != 1)})")


def evaluate(trace: Trace, case: Case, *, run_id: str | None = None) -> CaseRun:
    """Every check of the case on the trace; a check scoped to a turn judges that turn's spans only."""
    views: dict[object, Trace] = {}
    results = []
    for spec in case.checks:
        if spec.turn is None:
            results.append(run_check(spec, trace))
            continue
        missing = _no_turn(spec, trace)
        if missing is not None:
            results.append(missing)
            continue
        view = views.get(spec.turn)
        if view is None:
            view = views[spec.turn] = trace.for_turn(spec.turn)
        results.append(run_check(spec, view))
    return CaseRun(
        case_id=case.id,
        attempt=trace.attempt,
        results=tuple(results),
        run_id=run_id or trace.run_id,
        metrics=dict(trace.totals),
    )


def error_run(case_id: str, attempt: int, message: str, *, run_id: str | None = None) -> CaseRun:
    """A run that produced no usable trace (the agent raised, hung, or returned a malformed trace)."""
    return CaseRun(case_id=case_id, attempt=attempt, results=(), run_id=run_id, error=message)
