"""Which agent the eval runs: the one the settings name (`[tool.kit] agent`, KIT_AGENT, `make evals AGENT=`),
exactly as `kit run --agent` takes it, else the kit's reference agent (its `variant`, `agent_policy`), for
`agent_timeout` seconds a run (kit.settings)."""

from __future__ import annotations

from kit.case import Case
from kit.runner import Invocation, invoke
from kit.runner.agents import Agent, configured_agent
from kit.settings import Settings, load_settings


def settings() -> Settings:
    return load_settings()


def variant() -> str | None:
    return settings().variant


def agent_name() -> str:
    return load_agent().name


def load_agent() -> Agent:
    """The same agents, by the same rules, as the kit's runner: one plug-in interface for every front end."""
    return configured_agent(settings())


def timeout_s() -> float:
    return settings().agent_timeout


def run_case(agent: Agent, case: Case, attempt: int) -> Invocation:
    """One fresh run of the agent on the case, judged by the oracle, exactly as `kit run` does it. An agent
    that raises, returns no trace or hangs past the settings' agent_timeout is an error run: `trace` is None
    and `case_run.error` says why."""
    return invoke(agent, case, attempt, timeout=timeout_s())
