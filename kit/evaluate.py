"""Evaluation: every check of a case on one trace. The runner, not the check, names each result (from its
CheckSpec). A check that raises is an `error` that keeps its traceback, never a pass."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kit.checks import REGISTRY, limits
from kit.checks.limits import timed
from kit.result import CaseRun, Result, Verdict

if TYPE_CHECKING:  # judging needs neither pydantic nor YAML: the trace and the case come made
    from kit.case import Case, CheckSpec
    from kit.checks.limits import _Watch
    from kit.trace import Trace


def run_check(spec: CheckSpec, trace: Trace) -> Result:
    return _run(spec, trace, limits.timer())


def _run(spec: CheckSpec, trace: Trace, watch: _Watch | None) -> Result:
    """The check's result. With `watch` (limits.timer()), the check runs under its time limit through
    `limits.timed`, as its `bounded` wrapper runs it, without deciding again per check whether this thread
    times checks."""
    try:
        fn = REGISTRY[spec.type].fn
        inner = None if watch is None else getattr(fn, "unbounded", None)
        if watch is None or inner is None:
            verdict = fn(trace, **spec.params)
        else:
            verdict = timed(watch, inner, trace, spec.params)
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
    return Result(spec.label, verdict.passed, verdict.reason, False, verdict.score)


def _no_turn(spec: CheckSpec, trace: Trace) -> Result | None:
    """A fail when the trace has no span of the spec's turn (a trace without turns is one turn, 0)."""
    if spec.turn is None or spec.turn == "last":
        return None
    have = trace.turns or (0,)
    if spec.turn in have:
        return None
    n = len(have)
    return Result(spec.label, False, f"no turn {spec.turn} in this conversation (it has {n} turn{'s' * (n != 1)})")


def _no_agent(spec: CheckSpec, trace: Trace) -> Result | None:
    """A fail naming the agent when the run has no agent of the spec's name."""
    if spec.agent is None or spec.agent in trace.agent_names:
        return None
    have = trace.agent_names
    known = f"its agents: {', '.join(have)}" if have else "a run of one agent that names none"
    return Result(spec.label, False, f"agent {spec.agent}: no such agent in this run ({known})")


def _scoped(spec: CheckSpec, trace: Trace, views: dict[object, Trace]) -> Trace:
    """The part of the trace the spec judges: one turn, then one agent's or one server's spans."""
    key = (spec.turn, spec.agent, spec.server)
    view = views.get(key)
    if view is None:
        view = trace if spec.turn is None else trace.for_turn(spec.turn)
        if spec.agent is not None:
            view = view.for_agent(spec.agent)
        if spec.server is not None:
            view = view.for_server(spec.server)
        views[key] = view
    return view


def _named(result: Result, spec: CheckSpec) -> Result:
    """The result with the scope its reason is about in front: `agent billing: ...`, `server files: ...`."""
    scope = "".join(
        f"{what} {name}: " for what, name in (("agent", spec.agent), ("server", spec.server)) if name is not None
    )
    return result._replace(reason=scope + result.reason) if scope and result.reason else result


def evaluate(trace: Trace, case: Case, *, run_id: str | None = None) -> CaseRun:
    """Every check of the case on the trace; a check scoped to a turn, an agent or an MCP server judges that
    part's spans only, and its reason names the agent or server."""
    views: dict[object, Trace] = {}
    results = []
    watch = limits.timer()  # one thread judges the whole trace: decided once
    for spec in case.checks:
        if spec.turn is None and spec.agent is None and spec.server is None:
            results.append(_run(spec, trace, watch))
            continue
        missing = _no_turn(spec, trace) or _no_agent(spec, trace)
        if missing is not None:
            results.append(missing)
            continue
        result = _run(spec, _scoped(spec, trace, views), watch)
        results.append(_named(result, spec) if spec.agent is not None or spec.server is not None else result)
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
