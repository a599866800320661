"""Which agent the eval runs: the kit's reference agent, unless KIT_AGENT names yours.

KIT_AGENT=mypkg.agent:run     a callable with run_agent's signature, returning a contract trace dict
KIT_AGENT_POLICY=model        the reference agent's policy (default `deterministic`: no model, no key)
KIT_VARIANT=skip_lookup       a fault variant of the reference agent, for every case
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

from kit.case import Case

Agent = Callable[..., dict[str, Any]]


def variant() -> str | None:
    return (os.environ.get("KIT_VARIANT") or "").strip() or None


def agent_name() -> str:
    return os.environ.get("KIT_AGENT") or "kit.agent:run_agent"


def load_agent() -> Agent:
    target = agent_name()
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise ValueError(f"KIT_AGENT must be 'module:callable', got {target!r}")
    agent = getattr(importlib.import_module(module_name), attr, None)
    if not callable(agent):
        raise ValueError(f"KIT_AGENT {target!r} is not a callable")
    return agent


def run_case(agent: Agent, case: Case, attempt: int) -> dict[str, Any]:
    """One fresh run of the agent on the case (the reference agent builds a new sandbox every call)."""
    kwargs: dict[str, Any] = {"case_id": case.id, "attempt": attempt, "context": dict(case.context)}
    chosen = variant() or case.variant
    if chosen:
        kwargs["variant"] = chosen
    policy = (os.environ.get("KIT_AGENT_POLICY") or "").strip()
    if policy:
        kwargs["policy"] = policy
    trace = agent(case.input, **kwargs)
    if not isinstance(trace, dict):
        raise TypeError(f"agent {agent_name()} returned {type(trace).__name__}, not a trace dict")
    trace.setdefault("case_id", case.id)
    trace.setdefault("attempt", attempt)
    return trace
