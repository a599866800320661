"""Promptfoo provider: the agent, fresh for every call, judged by the kit oracle.

Which agent: the provider config's `agent: module:callable`, else the settings' (KIT_AGENT, `[tool.kit]
agent`); the kit's reference agent only for a config that says it is the reference one (`reference: true`,
as the kit's own configs do) or names a fault variant. A config that names no agent anywhere is an error
for every test, never the reference agent under another name. All of it through the one plan (kit.plan)
that `kit run` and DeepEval run from, so the same settings give the same agent, invariants and model id.
With recorded runs (the plan's `replay_runs`, set by `make evals`), a golden test judges the kit stage's run of its
case and attempt instead of calling the agent again.

Promptfoo keeps this module loaded in a persistent Python worker and calls `call_api` again and again,
so nothing a run can change lives at module level: every call runs a fresh agent on a new in-memory
sandbox; a multi-turn test (`{"turns": [...]}` as its prompt, or a case with turns) is one call that
runs the whole conversation, turn by turn, on one fresh agent (the only module-level data are the
parsed, frozen cases and the read-only seed). The run is `kit.runner.invoke`, as in `kit run` and the
DeepEval stage: same agents, same timeout, same error runs.

The response carries the whole trace in `metadata.trace` and the oracle's verdict in `metadata.kit`.
The verdict is computed here, in the warm worker, because Promptfoo starts a new Python process for every
Python assertion: the assertion (`oracle_assert.py`) then only presents it, and re-runs the oracle itself
only when the verdict is missing or does not match the trace.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from kit.errors import KitInputError
from kit.plan import Plan, current_plan
from kit.result import CaseRun
from kit_promptfoo.digest import seal
from kit_promptfoo.kit_request import KitVars, load_case, merged, request_case


def _token_usage(trace: dict[str, Any]) -> dict[str, int]:
    llm = [s for s in trace.get("spans", []) if s.get("kind") == "llm"]
    prompt = sum(int(s.get("tokens_in") or 0) for s in llm)
    completion = sum(int(s.get("tokens_out") or 0) for s in llm)
    return {"prompt": prompt, "completion": completion, "total": prompt + completion, "numRequests": len(llm)}


def _cost(trace: dict[str, Any]) -> float | None:
    """The run's cost in USD where a span gives one (the agent's own figure, or its model's price from
    kit.pricing), else None: an unknown model's cost is left out of the response, never reported as 0. The
    store's rule: a 0 counts only on a model call."""
    given = [
        float(s["cost_usd"])
        for s in trace.get("spans", [])
        if isinstance(s, Mapping)
        and s.get("cost_usd") is not None
        and (s.get("cost_usd") != 0 or s.get("kind") == "llm")
    ]
    return sum(given) if given else None


def _plan(req: KitVars) -> Plan:
    """The plan for this call: the plan document `make evals` hands over (KIT_PLAN), else the settings'; the
    config's agent over it, and the target's own variant (the red team's control) over its variant."""
    return current_plan(agent=req.agent, variant=req.variant, policy=req.policy, reference_ok=req.reference)


def verdict(case_run: CaseRun) -> dict[str, Any]:
    out = case_run.to_dict()
    out["outcome"] = case_run.outcome
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return copy.deepcopy(value)


def _own_copy(case: Any) -> Any:
    """The case with its own deep copy of the input and context: the cached case outlives this call, so
    an agent that appends to `context['history']` must not change what the next call is given."""
    return dataclasses.replace(case, input=_plain(case.input), context=_plain(case.context))


def call_api(prompt: str, options: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    vars_ = (context or {}).get("vars") or {}
    try:
        # Once per call: the worker outlives edits to pyproject.toml, and the plan can differ per call.
        req = merged((options or {}).get("config"), vars_)
        plan = _plan(req)
        case = load_case(req.case_file, req.case_id, plan) if req.case_file and req.case_id else None
    except (ValueError, KitInputError) as e:
        return {"error": str(e)}
    run_case = _own_copy(request_case(req, case, prompt))
    try:
        attempt = req.attempt if req.attempt is not None else int(vars_.get("__repeatIndex") or 0)
    except (TypeError, ValueError):
        return {"error": f"__repeatIndex: {vars_.get('__repeatIndex')!r} is not a whole number"}
    replayed = plan.replaying and case is not None and run_case.input == case.input
    # Replaying: the kit stage's run of this case and attempt, judged here; no second agent call.
    if replayed:
        run = plan.run(case, attempt)
    else:
        try:  # a user's agent is imported on its first call (kit.plan): one that cannot be is this call's error
            run = plan.run_live(run_case, attempt)
        except KitInputError as e:
            return {"error": str(e)}
    if run.case_run.skipped is not None:  # Promptfoo has no "skipped": an error, never a pass
        return {"error": f"case '{run_case.id}': skipped: {run.case_run.skipped}"}
    if run.trace is None:  # the agent raised, hung or gave no trace: an infrastructure error, shown as such
        return {"error": f"case '{run_case.id}': {run.case_run.error}"}
    trace = run.trace
    variant = plan.variant or run_case.variant
    kit: dict[str, Any] = {
        "case_id": run_case.id,
        "case_file": req.case_file,
        "variant": variant,
        # What the store records for this run: the plan's agent label and model id.
        "agent": plan.agent_name,
        "model": plan.model_of(trace),
        "replayed": replayed,
    }
    if case is not None:
        kit["verdict"] = verdict(run.case_run)
        kit["seal"] = seal(run_case.id, trace, kit["verdict"])
    kit["provider_ms"] = round((time.perf_counter() - started) * 1000, 3)
    out: dict[str, Any] = {
        "output": trace.get("final_output") or "",
        "tokenUsage": _token_usage(trace),
        "latencyMs": trace.get("latency_ms"),
        "metadata": {"trace": trace, "kit": kit},
    }
    cost = _cost(trace)
    if cost is not None:  # Promptfoo sums `cost`: an unpriced run gives none rather than a 0 nobody measured
        out["cost"] = cost
    return out
