"""Promptfoo provider: the reference agent, fresh for every call, judged by the kit's oracle.

Promptfoo keeps this module loaded in a persistent Python worker and calls `call_api` again and again,
so nothing a run can change lives at module level: `run_agent` builds a new agent and a new in-memory
sandbox on every call (the only module-level data are the parsed, frozen cases and the read-only seed).

The response carries the whole trace in `metadata.trace` and the oracle's verdict in `metadata.kit`.
The verdict is computed here, in the warm worker, because Promptfoo starts a new Python process for every
Python assertion: the assertion (`oracle_assert.py`) then only presents it, and re-runs the oracle itself
only when the verdict is missing or does not match the trace.
"""

from __future__ import annotations

import os
import time
from typing import Any

from kit_promptfoo.digest import seal
from kit_promptfoo.kit_request import agent_input, load_case, merged


def _token_usage(trace: dict[str, Any]) -> dict[str, int]:
    llm = [s for s in trace.get("spans", []) if s.get("kind") == "llm"]
    prompt = sum(int(s.get("tokens_in") or 0) for s in llm)
    completion = sum(int(s.get("tokens_out") or 0) for s in llm)
    return {"prompt": prompt, "completion": completion, "total": prompt + completion, "numRequests": len(llm)}


def _cost(trace: dict[str, Any]) -> float:
    return float(sum(float(s.get("cost_usd") or 0) for s in trace.get("spans", [])))


def verdict(trace: dict[str, Any], case: Any) -> dict[str, Any]:
    from kit.evaluate import evaluate
    from kit.trace import parse_trace

    run = evaluate(parse_trace(trace), case)
    out = run.to_dict()
    out["outcome"] = run.outcome
    return out


def _user_agent_trace(
    spec: str, case: Any, case_id: str, user_input: Any, context: dict[str, Any], attempt: int
) -> dict[str, Any]:
    """KIT_AGENT: the user's agent, plugged in exactly as `kit run --agent` and the DeepEval stage take it."""
    import dataclasses

    from kit.case import Case
    from kit.runner.agents import load_agent, to_trace

    base = case if case is not None else Case(id=case_id, input=user_input)
    run_case = dataclasses.replace(base, input=user_input, context=context)
    _, trace = to_trace(load_agent(spec).call(run_case, attempt), run_case, attempt, None)
    return trace


def call_api(prompt: str, options: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    from kit.agent import run_agent

    started = time.perf_counter()
    vars_ = (context or {}).get("vars") or {}
    try:
        req = merged((options or {}).get("config"), vars_)
        case = load_case(req.case_file, req.case_id) if req.case_file and req.case_id else None
    except ValueError as e:
        return {"error": str(e)}
    case_id = req.case_id or "promptfoo"
    # The target's own variant (the red team's control) wins; else KIT_VARIANT (`make evals VARIANT=...`)
    # puts every other call on that fault, as the kit's runner and the DeepEval stage do.
    variant = req.variant if req.variant is not None else (os.environ.get("KIT_VARIANT") or None)
    if variant is None and case is not None:
        variant = case.variant
    run_context = {**(case.context if case else {}), **req.context}
    attempt = int(vars_.get("__repeatIndex") or 0)
    try:
        if os.environ.get("KIT_AGENT"):
            trace = _user_agent_trace(os.environ["KIT_AGENT"], case, case_id, agent_input(prompt), run_context, attempt)
        else:
            trace = run_agent(
                agent_input(prompt),
                case_id=case_id,
                attempt=attempt,
                context=run_context,
                variant=variant,
                policy=req.policy,
            )
    except Exception as e:  # the agent crashing is an infrastructure error, shown as such
        return {"error": f"case '{case_id}': agent raised {type(e).__name__}: {e}"}
    kit: dict[str, Any] = {"case_id": case_id, "case_file": req.case_file, "variant": variant}
    if case is not None:
        kit["verdict"] = verdict(trace, case)
        kit["seal"] = seal(case_id, trace, kit["verdict"])
    kit["provider_ms"] = round((time.perf_counter() - started) * 1000, 3)
    return {
        "output": trace.get("final_output") or "",
        "tokenUsage": _token_usage(trace),
        "cost": _cost(trace),
        "latencyMs": trace.get("latency_ms"),
        "metadata": {"trace": trace, "kit": kit},
    }
