"""Which agent the eval runs: the kit's reference agent, unless KIT_AGENT names yours.

KIT_AGENT=mypkg.agent:run     your agent, exactly as `kit run --agent` takes it: a callable of `(input)` or
                              `(input, case)` returning a trace dict, a Trace, or an OpenAI message list
KIT_AGENT_POLICY=model        the reference agent's policy (default `deterministic`: no model, no key)
KIT_VARIANT=skip_lookup       a fault variant of the reference agent, for every case
KIT_AGENT_TIMEOUT=60          seconds one run may take before it is an error (not a hung suite)
"""

from __future__ import annotations

import os

from kit.case import Case
from kit.runner import Invocation, invoke
from kit.runner.agents import Agent, reference_agent
from kit.runner.agents import load_agent as load_user_agent


def variant() -> str | None:
    return (os.environ.get("KIT_VARIANT") or "").strip() or None


def agent_name() -> str:
    return load_agent().name


def load_agent() -> Agent:
    """The same agents, by the same rules, as the kit's runner: one plug-in interface for every front end."""
    spec = (os.environ.get("KIT_AGENT") or "").strip()
    if spec:
        return load_user_agent(spec)
    policy = (os.environ.get("KIT_AGENT_POLICY") or "").strip() or "deterministic"
    return reference_agent(variant=variant(), policy=policy)


def timeout_s() -> float:
    return float(os.environ.get("KIT_AGENT_TIMEOUT") or 60)


def run_case(agent: Agent, case: Case, attempt: int) -> Invocation:
    """One fresh run of the agent on the case, judged by the oracle, exactly as `kit run` does it. An agent
    that raises, returns no trace or hangs past KIT_AGENT_TIMEOUT seconds (default 60, as `kit run
    --timeout`) is an error run: `trace` is None and `case_run.error` says why."""
    return invoke(agent, case, attempt, timeout=timeout_s())
