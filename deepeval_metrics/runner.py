"""What the DeepEval eval runs: the one plan (kit.plan) every front end runs from. The settings' agent
(`[tool.kit] agent`, KIT_AGENT, `make evals AGENT=`), exactly as `kit run --agent` takes it, else the kit's
reference agent; the settings' cases, invariants, rubrics, timeout and model id; and, when `make evals`
hands over its kit stage's runs (the plan's `replay_runs`), those runs judged instead of calling the agent again.
Under `make evals` the plan is the document the pipeline wrote (kit.plan.current_plan): its variant, policy and
cassettes too."""

from __future__ import annotations

import functools
from dataclasses import replace

from kit.case import Case
from kit.plan import Plan, current_plan
from kit.runner import Invocation
from kit.runner.agents import Agent

_HANDED: list[str] = []  # the plan document an xdist controller handed this worker (`adopt`)


@functools.cache
def plan() -> Plan:
    """The plan of this process, read once (a DeepEval session is one run): the one its xdist controller
    handed it, else the plan document `make evals` hands over (KIT_PLAN), else the settings'."""
    return current_plan(document=_HANDED[0]) if _HANDED else current_plan()


def adopt(document: str) -> Plan:
    """This process runs the plan document its controller wrote (an xdist worker joins its controller's run,
    whose id the document carries)."""
    _HANDED[:] = [document]
    plan.cache_clear()
    return plan()


def plan_for(agent: Agent | str | None = None, timeout: float | None = None) -> Plan:
    """The plan a call names: this process's, for `agent` (an Agent, or `module:callable` resolved as the
    settings' agent is) and under `timeout` seconds when given."""
    chosen = plan()
    if isinstance(agent, Agent):
        chosen = replace(chosen, chosen=agent)
    elif agent:
        chosen = current_plan(agent=agent, document=_HANDED[0] if _HANDED else None)
    return chosen.derive(agent_timeout=timeout) if timeout is not None else chosen


def cost(run: Invocation) -> dict[str, float | int]:
    """What a run cost, as the store keeps it: no agent call for a recorded run, else one plus its retries."""
    calls = 0 if plan().replaying else 1 + run.retries
    return {"agent_calls": calls, "retries": run.retries, "agent_s": run.agent_s, "kit_s": run.kit_s}


def run_case(case: Case, attempt: int) -> Invocation:
    """One run of the case, judged by the oracle exactly as `kit run` judges it: a fresh agent call, or the
    recorded run when replaying. An agent that raises, returns no trace or hangs past the settings'
    agent_timeout is an error run: `trace` is None and `case_run.error` says why."""
    return plan().run(case, attempt)
